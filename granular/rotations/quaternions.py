"""Unit quaternions ``q = (q0, q1, q2, q3)``, scalar first, Hamilton product; ``R(q)``
maps body-frame vectors to spatial ones (see :mod:`granular.rotations`). Angles come from
``atan2``, never from ``arccos`` near 1, and every ``f(x)/x`` factor has its limit at 0
written out.
"""

from __future__ import annotations

import numpy as np

from .algebra import array_module, cross, dot

__all__ = [
    "quat_multiply",
    "quat_conjugate",
    "quat_normalize",
    "quat_to_matrix",
    "quat_rotate",
    "quat_from_rotvec",
    "quat_to_rotvec",
    "quat_from_matrix",
    "quat_canonical",
    "quat_angle_between",
]


def quat_multiply(p, q):
    """Hamilton product ``p ⊗ q``; ``R(p ⊗ q) = R(p) R(q)``.

    Parameters
    ----------
    p, q : array, (..., 4) float
        Quaternions ``(q0, q1, q2, q3)`` [-] (broadcasting the leading axes).

    Returns
    -------
    array, (..., 4) float
        The products [-].
    """
    xp = array_module(p, q)
    p0, pv = p[..., :1], p[..., 1:]
    q0, qv = q[..., :1], q[..., 1:]
    s = p0 * q0 - dot(pv, qv)[..., None]
    v = p0 * qv + q0 * pv + cross(pv, qv)
    return xp.concatenate([s, v], axis=-1)


def quat_conjugate(q):
    """Conjugate ``q* = (q0, -q_vec)``: the inverse rotation of a unit quaternion.

    Parameters
    ----------
    q : array, (..., 4) float
        Quaternions ``(q0, q1, q2, q3)`` [-].

    Returns
    -------
    array, (..., 4) float
        The conjugates [-].
    """
    xp = array_module(q)
    return xp.concatenate([q[..., :1], -q[..., 1:]], axis=-1)


def quat_normalize(q):
    """Normalise quaternions: ``q / |q|``.

    Parameters
    ----------
    q : array, (..., 4) float
        Quaternions ``(q0, q1, q2, q3)`` [-], non-zero.

    Returns
    -------
    array, (..., 4) float
        Unit quaternions [-] (NaN for a zero ``q``).
    """
    xp = array_module(q)
    return q / xp.sqrt(dot(q, q))[..., None]


def quat_canonical(q):
    """The representative of ``±q`` with ``q0 ≥ 0``.

    Parameters
    ----------
    q : array, (..., 4) float
        Quaternions ``(q0, q1, q2, q3)`` [-].

    Returns
    -------
    array, (..., 4) float
        ``-q`` where ``q0 < 0``, else ``q`` [-].
    """
    xp = array_module(q)
    return xp.where(q[..., :1] < 0, -q, q)


def quat_to_matrix(q):
    """Rotation matrix of a unit quaternion.

    Parameters
    ----------
    q : array, (..., 4) float
        Unit quaternions ``(q0, q1, q2, q3)`` [-] (not normalised here).

    Returns
    -------
    array, (..., 3, 3) float
        Rotation matrices ``R(q)`` [-].
    """
    xp = array_module(q)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return xp.stack(
        [
            xp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
            xp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
            xp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
        ],
        axis=-2,
    )


def quat_rotate(q, v):
    """``R(q) v`` for a unit quaternion, without forming the matrix.

    Parameters
    ----------
    q : array, (..., 4) float
        Unit quaternions ``(q0, q1, q2, q3)`` [-].
    v : array, (..., 3) float
        Vectors (broadcasting the leading axes with ``q``).

    Returns
    -------
    array, (..., 3) float
        The rotated vectors, in the units of ``v``.
    """
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * cross(u, v)
    return v + w * t + cross(u, t)


def quat_from_rotvec(theta):
    """Unit quaternion of a rotation vector (exponential map): ``q = (cos(|θ|/2), sin(|θ|/2) θ/|θ|)``.

    Exact as ``θ → 0``.

    Parameters
    ----------
    theta : array, (..., 3) float
        Rotation vectors [rad] (any angle).

    Returns
    -------
    array, (..., 4) float
        Unit quaternions [-] (``q0 = cos(|θ|/2)`` is negative for an angle above π).
    """
    xp = array_module(theta)
    angle = xp.sqrt(dot(theta, theta))
    half = 0.5 * angle
    # sin(|θ|/2)/|θ| = ½ sinc(|θ|/(2π)) with NumPy's normalised sinc, exact at 0.
    k = 0.5 * xp.sinc(half / np.pi)
    return xp.concatenate([xp.cos(half)[..., None], k[..., None] * theta], axis=-1)


def quat_to_rotvec(q):
    """Log map of a unit quaternion: the rotation vector with angle in ``[0, π]``.

    ``θ = 2 atan2(|q_vec|, q0) q_vec/|q_vec|`` after choosing ``q0 ≥ 0``; the factor
    tends to ``2/q0`` as ``|q_vec| → 0``, so the result is exact at any small angle.

    Parameters
    ----------
    q : array, (..., 4) float
        Unit quaternions ``(q0, q1, q2, q3)`` [-].

    Returns
    -------
    array, (..., 3) float
        Rotation vectors [rad].
    """
    xp = array_module(q)
    q = quat_canonical(q)
    n = xp.sqrt(dot(q[..., 1:], q[..., 1:]))
    safe = xp.where(n > 0, n, 1.0)
    q0 = q[..., 0]
    factor = xp.where(n > 0, 2.0 * xp.arctan2(n, q0) / safe, 2.0 / xp.where(q0 != 0, q0, 1.0))
    return factor[..., None] * q[..., 1:]


def quat_angle_between(p, q):
    """Angle in ``[0, π]`` of the rotation ``R(p)ᵀ R(q)``, by ``atan2`` (no ``arccos``).

    Parameters
    ----------
    p, q : array, (..., 4) float
        Unit quaternions [-] (broadcasting the leading axes).

    Returns
    -------
    array, (...) float
        The angles [rad].
    """
    xp = array_module(p, q)
    r = quat_multiply(quat_conjugate(p), q)
    n = xp.sqrt(dot(r[..., 1:], r[..., 1:]))
    return 2.0 * xp.arctan2(n, xp.abs(r[..., 0]))


def quat_from_matrix(R):
    """Unit quaternion (``q0 ≥ 0``) of a rotation matrix, by Shepperd's method.

    Uses, per matrix, the largest of ``4q0², 4q1², 4q2², 4q3²`` as pivot so no division
    by a small number occurs.

    Parameters
    ----------
    R : array, (..., 3, 3) float
        Rotation matrices [-].

    Returns
    -------
    array, (..., 4) float
        Unit quaternions with ``q0 ≥ 0`` [-].
    """
    xp = array_module(R)
    m00, m11, m22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = m00 + m11 + m22
    cand = xp.stack([tr, m00, m11, m22], axis=-1)
    k = xp.argmax(cand, axis=-1)
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s21, s02, s10 = R[..., 2, 1] + R[..., 1, 2], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 0] + R[..., 0, 1]
    # unnormalised quaternions for each pivot choice (each proportional to q)
    q_w = xp.stack([1 + tr, d21, d02, d10], axis=-1)
    q_x = xp.stack([d21, 1 + 2 * m00 - tr, s10, s02], axis=-1)
    q_y = xp.stack([d02, s10, 1 + 2 * m11 - tr, s21], axis=-1)
    q_z = xp.stack([d10, s02, s21, 1 + 2 * m22 - tr], axis=-1)
    allq = xp.stack([q_w, q_x, q_y, q_z], axis=-2)
    q = xp.take_along_axis(allq, k[..., None, None], axis=-2)[..., 0, :]
    return quat_canonical(quat_normalize(q))
