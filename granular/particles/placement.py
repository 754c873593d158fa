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

from .neighbors import box_coordinates, min_image

#: Two particles closer than this fraction of their radii sum are at the same position.
COINCIDENT = 1e-9

__all__ = ["COINCIDENT", "overlap_problem", "wall_problem"]


def near_pairs(x, cutoff, period=None):
    """Pairs ``i < j`` (P, 2) int64 of the particles at ``x`` (N, 3) at most ``cutoff``
    apart, sorted, and their separations ``x_i - x_j`` (P, 3): in a periodic box
    (``period``, host rows ``(lo, L, 1/L)``, :attr:`Model.period
    <granular.particles.model.Model.period>`) by the minimum image, across the faces too
    (a k-d tree with a toroidal topology along the periodic axes)."""
    from scipy.spatial import cKDTree  # SciPy loads when pairs are asked for, not on import

    x = np.asarray(x, dtype=np.float64)
    if len(x) < 2:
        return np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3))
    if period is not None and len(period):
        p = np.asarray(period, dtype=np.float64).reshape(3, 3)
        tree = cKDTree(box_coordinates(x, p), boxsize=p[:, 1])
    else:
        p = None
        tree = cKDTree(x)
    pairs = tree.query_pairs(cutoff, output_type="ndarray").astype(np.int64).reshape(-1, 2)
    pairs.sort(axis=1)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs, min_image(x[pairs[:, 0]] - x[pairs[:, 1]], p)


def overlap_problem(x, radius, allowed=False, switch="allow_initial_overlap = true", period=None):
    """Coincident pairs (always) and, unless ``allowed``, overlapping pairs among the
    particles at ``x`` (N, 3) [L] with radii ``radius`` (N,) [L]; in a periodic box
    (``period``, host rows ``(lo, L, 1/L)``) by the minimum image, across the boundary
    too."""
    x = np.asarray(x, dtype=np.float64)
    r = np.asarray(radius, dtype=np.float64)
    if len(x) < 2:
        return None
    pairs, d = near_pairs(x, 2 * r.max(), period)
    if not len(pairs):
        return None
    d = np.linalg.norm(d, axis=1)
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
