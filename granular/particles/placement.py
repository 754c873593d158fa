"""Checks of where particles start: overlapping or coincident pairs, particles inside walls.

:meth:`~granular.particles.builder.ModelBuilder.finalize` and scene files make the same
checks, each refusable by an ``allow_initial_overlap`` switch (of
:meth:`~granular.particles.builder.ModelBuilder.set_contacts`, of
:meth:`~granular.particles.builder.ModelBuilder.add_wall`, or of the scene's
``[contacts]`` and ``[[walls]]`` tables). A pair at the same position is refused
always: the contact force between coincident particles has no direction.

Each function returns ``None`` when the placement is fine, else ``(what, message)``:
``what`` is ``"coincident"``, ``"overlap"`` or ``"wall"``, the message names the
particles, the distances and the switch.
"""

from __future__ import annotations

import numpy as np

#: Two particles closer than this fraction of their radii sum are at the same position.
COINCIDENT = 1e-9

__all__ = ["COINCIDENT", "overlap_problem", "wall_problem"]


def overlap_problem(x, radius, allowed=False, switch="allow_initial_overlap = true"):
    """Coincident pairs (always) and, unless ``allowed``, overlapping pairs among the
    particles at ``x`` (N, 3) [L] with radii ``radius`` (N,) [L]."""
    from scipy.spatial import cKDTree  # SciPy loads when a model is checked, not on import

    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64)
    if len(x) < 2:
        return None
    pairs = cKDTree(x).query_pairs(2 * r.max(), output_type="ndarray")
    if not len(pairs):
        return None
    d = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    reach = r[pairs[:, 0]] + r[pairs[:, 1]]
    same = d <= COINCIDENT * reach
    if same.any():
        k = int(np.argmax(same))
        i, j = sorted(int(p) for p in pairs[k])
        return ("coincident", f"particles {i} and {j} start at the same position (distance {d[k]:.3g}, radii sum "
                f"{reach[k]:.6g}), {int(same.sum())} pair(s) in all: the contact force between coincident "
                "particles has no direction (allow_initial_overlap does not cover this); move them apart")  # fmt: skip
    bad = d < reach * (1 - 1e-9)
    if allowed or not bad.any():
        return None
    k = int(np.argmax(bad))
    i, j = sorted(int(p) for p in pairs[k])
    return ("overlap", f"particles {i} and {j} overlap at the start (distance {d[k]:.6g} < radii sum "
            f"{reach[k]:.6g}) and {int(bad.sum())} pair(s) in all; move them or set {switch}")  # fmt: skip


def wall_problem(normal, offset, x, radius, switch="allow_initial_overlap = true"):
    """Particles that start inside the wall ``normal · x = offset`` (centre closer to the
    plane than the radius, or behind it)."""
    n = np.asarray(normal, dtype=np.float64)
    n = n / np.linalg.norm(n)
    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64)
    s = x @ n - float(offset)
    bad = s < r * (1 - 1e-9)
    if not bad.any():
        return None
    i = int(np.argmin(s - r))
    where = "behind the wall" if s[i] < 0 else "inside the wall"
    return ("wall", f"particle {i} starts {where}: its centre is {s[i]:.6g} from the plane (radius {r[i]:.6g}), "
            f"{int(bad.sum())} particle(s) in all; move them or set {switch}")  # fmt: skip
