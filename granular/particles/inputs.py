"""Checks of the inputs of :class:`granular.particles.builder.ModelBuilder`: each names the
argument, the particle or bond, and what is allowed."""

from __future__ import annotations


import numpy as np

from .. import rotations

#: Tolerance on ``| |q| - 1 |`` for a quaternion given as orientation.
UNIT_QUATERNION_TOL = 1e-8


def _vectors(name, value, n, width=3, allow_broadcast=True):
    """``value`` as a finite float64 ``(n, width)`` array, or a ``ValueError`` naming ``name``."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {value!r} ({exc})") from None
    if a.ndim == 1 and allow_broadcast and a.shape == (width,):
        a = np.broadcast_to(a, (n, width)).copy()
    if a.shape != (n, width):
        raise ValueError(f"{name}: expected shape ({n}, {width}) or ({width},), got {a.shape}")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        if n == 1 and np.ndim(value) == 1:  # one vector, not a per-particle array
            raise ValueError(f"{name}: must be {width} finite numbers, got {a[0].tolist()}")
        raise ValueError(f"{name}: non-finite value for particle {int(np.argmax(bad))} of this call: {a[bad][0]}")
    return a


def _per_item(name, value, n):
    """``value`` (a scalar, or one number per item) as a float array of shape (n,)."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {value!r} ({exc})") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected a scalar or shape ({n},), got {a.shape}")
    return a


def _scalars(name, value, n, positive=True, what="particle"):
    a = _per_item(name, value, n)
    bad = ~np.isfinite(a) | ((a <= 0) if positive else False)
    if np.any(bad):
        k = int(np.argmax(bad))
        rule = "finite and > 0" if positive else "finite"
        raise ValueError(f"{name}: must be {rule}; {what} {k} of this call has {float(a[k])!r}")
    return a


def _nonnegative(name, value, n, what="bond", allow_inf=False):
    a = _per_item(name, value, n)
    ok = (a >= 0) & (np.isfinite(a) | (allow_inf & (a == np.inf)))
    if not ok.all():
        k = int(np.argmax(~ok))
        rule = "> 0 (inf: never)" if allow_inf else "finite and >= 0"
        raise ValueError(f"{name}: must be {rule}; {what} {k} of this call has {float(a[k])!r}")
    return a


def _check_duplicate_bonds(keys, first) -> None:
    """``ValueError`` naming the first repeated pair among ``keys`` (``(a << 32) | b``)."""
    uniq, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        dup_key = uniq[np.argmax(counts > 1)]
        where = np.flatnonzero(keys == dup_key)
        i, j = int(dup_key) >> 32, int(dup_key) & 0xFFFFFFFF
        raise ValueError(f"bonds: bond {first + int(where[1])} duplicates bond {first + int(where[0])} "
                         f"(particles {i}, {j})")  # fmt: skip


def _orientations(n, orientation, alpha, rotvec):
    given = [(k, v) for k, v in (("orientation", orientation), ("alpha", alpha), ("rotvec", rotvec)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give at most one of orientation (quaternion), alpha (RRP), rotvec; got {[k for k, _ in given]}")
    if not given:
        q = np.zeros((n, 4))
        q[:, 0] = 1.0
        return q
    key, value = given[0]
    if key == "orientation":
        q = _vectors("orientation", value, n, width=4)
        norm = np.linalg.norm(q, axis=1)
        bad = np.abs(norm - 1.0) > UNIT_QUATERNION_TOL
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(
                f"orientation: must be a unit quaternion (q0, q1, q2, q3) with | |q| - 1 | <= "
                f"{UNIT_QUATERNION_TOL}; particle {k} of this call has |q| = {float(norm[k])!r}"
            )
        return q / norm[:, None]
    if key == "alpha":
        return rotations.quat_from_rrp(_vectors("alpha", value, n))
    return rotations.quat_from_rotvec(_vectors("rotvec", value, n))
