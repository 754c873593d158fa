"""Rotation algebra: rescaled Rodrigues parameters (RRP), unit quaternions, SO(3).

Everything here is batched over leading axes and works on NumPy or CuPy arrays alike
(the array module is taken from the input). Vectors are ``(..., 3)``, quaternions
``(..., 4)`` in scalar-first Hamilton convention ``q = (q0, q1, q2, q3)``, matrices
``(..., 3, 3)``. A rotation ``R`` maps body-frame vectors to spatial (inertial) ones.

Rescaled Rodrigues parameters (Baker & Gonzalez, paper 003):

* (3)  ``α = tan(|θ|/2) / (|θ|/2) · θ`` for the rotation vector ``θ``; equivalently
  ``α = 2 q_vec / q0`` for a unit quaternion, invariant under ``q → -q``.
* (4)  ``R(α) = I + 4/(4 + |α|²) [S(α) + ½ S(α)²]``.
* (5)  ``α1 ⊕ α2 = 4/(4 - α1·α2) [α1 + α2 - ½ α1 × α2]``, which is the rotation
  ``R(α2) R(α1)`` (``α1`` applied first), see ``PAPER_NOTES.md``.

RRP are singular at a rotation angle of π (``|α| → ∞``). The engine therefore keeps
the *total* orientation of a particle as a unit quaternion and uses RRP only for
increments, which stay far from π (see ``granular.integrators``).

No function here takes ``arccos`` of a value near 1: angles come from ``atan2`` of a
sine-like and a cosine-like quantity, and every ``f(x)/x`` factor has its limit at 0
written out, so the results are exact to round-off at any small angle.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "array_module",
    "skew",
    "rrp_to_matrix",
    "rrp_compose",
    "rrp_inverse",
    "rrp_relative",
    "rrp_angle",
    "rrp_from_quat",
    "rrp_from_rotvec",
    "rrp_log",
    "quat_from_rrp",
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
    "rotvec_from_rrp",
    "so3_exp",
    "so3_log",
]


def array_module(*arrays):
    """Return ``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
    return np


def _dot(a, b):
    return (a * b).sum(axis=-1)


def _cross(a, b):
    xp = array_module(a, b)
    return xp.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        axis=-1,
    )


def skew(v):
    """``S(v)``: ``(..., 3) → (..., 3, 3)`` with ``S(v) w = v × w``."""
    xp = array_module(v)
    z = xp.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return xp.stack(
        [
            xp.stack([z, -w, y], axis=-1),
            xp.stack([w, z, -x], axis=-1),
            xp.stack([-y, x, z], axis=-1),
        ],
        axis=-2,
    )


# ----------------------------------------------------------------------------- RRP


def rrp_to_matrix(alpha):
    """Rotation matrix of RRP, eq. (4): ``R = I + 4/(4+|α|²) [S(α) + ½ S(α)²]``."""
    xp = array_module(alpha)
    S = skew(alpha)
    c = 4.0 / (4.0 + _dot(alpha, alpha))
    eye = xp.eye(3, dtype=alpha.dtype)
    return eye + c[..., None, None] * (S + 0.5 * (S @ S))


def rrp_compose(alpha1, alpha2):
    """Composition (5): ``α1 ⊕ α2``, the RRP of ``R(α2) R(α1)`` (``α1`` first).

    Undefined (division by zero) when the composed rotation is a half turn.
    """
    c = 4.0 / (4.0 - _dot(alpha1, alpha2))
    return c[..., None] * (alpha1 + alpha2 - 0.5 * _cross(alpha1, alpha2))


def rrp_inverse(alpha):
    """RRP of ``R(α)ᵀ``: ``-α``."""
    return -alpha


def rrp_relative(alpha_from, alpha_to):
    """Spatial relative rotation ``r`` with ``R(r) = R(α_to) R(α_from)ᵀ``.

    Computed as ``(-α_from) ⊕ α_to`` by (5); then ``α_from ⊕ r = α_to``. (Paper (45)
    writes the same pair with the factors swapped; the angle ``|θ|`` is the same.)
    """
    return rrp_compose(-alpha_from, alpha_to)


def rrp_angle(alpha):
    """Rotation angle ``|θ| = 2 atan(|α|/2)`` in ``[0, π)``, below eq. (35)."""
    xp = array_module(alpha)
    return 2.0 * xp.arctan(0.5 * xp.sqrt(_dot(alpha, alpha)))


def rotvec_from_rrp(alpha):
    """Rotation vector ``θ = 2 atan(|α|/2) α/|α|`` (inverse of (3)); exact as ``α → 0``."""
    xp = array_module(alpha)
    s = 0.5 * xp.sqrt(_dot(alpha, alpha))
    safe = xp.where(s > 0, s, 1.0)
    factor = xp.where(s > 0, xp.arctan(safe) / safe, 1.0)  # atan(s)/s → 1
    return factor[..., None] * alpha


rrp_log = rotvec_from_rrp
rrp_log.__doc__ = "Log map of ``R(α)``: the rotation vector (same as :func:`rotvec_from_rrp`)."


def rrp_from_rotvec(theta):
    """Eq. (3): ``α = tan(|θ|/2)/(|θ|/2) θ``; exact as ``θ → 0``, infinite at ``|θ| = π``."""
    xp = array_module(theta)
    s = 0.5 * xp.sqrt(_dot(theta, theta))
    safe = xp.where(s > 0, s, 1.0)
    factor = xp.where(s > 0, xp.tan(safe) / safe, 1.0)
    return factor[..., None] * theta


def rrp_from_quat(q):
    """``α = 2 q_vec / q0``; invariant under ``q → -q``, infinite for a half turn."""
    return 2.0 * q[..., 1:] / q[..., :1]


def quat_from_rrp(alpha):
    """Unit quaternion of RRP: ``q = (2, α) / sqrt(4 + |α|²)`` (algebraic, no trigonometry)."""
    xp = array_module(alpha)
    inv = 1.0 / xp.sqrt(4.0 + _dot(alpha, alpha))
    return xp.concatenate([2.0 * inv[..., None], alpha * inv[..., None]], axis=-1)


# ----------------------------------------------------------------------- quaternions


def quat_multiply(p, q):
    """Hamilton product ``p ⊗ q``; ``R(p ⊗ q) = R(p) R(q)``."""
    xp = array_module(p, q)
    p0, pv = p[..., :1], p[..., 1:]
    q0, qv = q[..., :1], q[..., 1:]
    s = p0 * q0 - _dot(pv, qv)[..., None]
    v = p0 * qv + q0 * pv + _cross(pv, qv)
    return xp.concatenate([s, v], axis=-1)


def quat_conjugate(q):
    """``q*``: the inverse rotation of a unit quaternion."""
    xp = array_module(q)
    return xp.concatenate([q[..., :1], -q[..., 1:]], axis=-1)


def quat_normalize(q):
    """``q / |q|``."""
    xp = array_module(q)
    return q / xp.sqrt(_dot(q, q))[..., None]


def quat_canonical(q):
    """The representative of ``±q`` with ``q0 ≥ 0``."""
    xp = array_module(q)
    return xp.where(q[..., :1] < 0, -q, q)


def quat_to_matrix(q):
    """Rotation matrix of a unit quaternion."""
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
    """``R(q) v`` for a unit quaternion, without forming the matrix."""
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * _cross(u, v)
    return v + w * t + _cross(u, t)


def quat_from_rotvec(theta):
    """Exponential map: ``q = (cos(|θ|/2), sin(|θ|/2) θ/|θ|)``; exact as ``θ → 0``."""
    xp = array_module(theta)
    angle = xp.sqrt(_dot(theta, theta))
    half = 0.5 * angle
    # sin(|θ|/2)/|θ| = ½ sinc(|θ|/(2π)) with NumPy's normalised sinc, exact at 0.
    k = 0.5 * xp.sinc(half / np.pi)
    return xp.concatenate([xp.cos(half)[..., None], k[..., None] * theta], axis=-1)


def quat_to_rotvec(q):
    """Log map of a unit quaternion: the rotation vector with angle in ``[0, π]``.

    ``θ = 2 atan2(|q_vec|, q0) q_vec/|q_vec|`` after choosing ``q0 ≥ 0``; the factor
    tends to ``2/q0`` as ``|q_vec| → 0``, so the result is exact at any small angle.
    """
    xp = array_module(q)
    q = quat_canonical(q)
    n = xp.sqrt(_dot(q[..., 1:], q[..., 1:]))
    safe = xp.where(n > 0, n, 1.0)
    factor = xp.where(n > 0, 2.0 * xp.arctan2(n, q[..., 0]) / safe, 2.0 / q[..., 0])
    return factor[..., None] * q[..., 1:]


def quat_angle_between(p, q):
    """Angle in ``[0, π]`` of the rotation ``R(p)ᵀ R(q)``, by ``atan2`` (no ``arccos``)."""
    xp = array_module(p, q)
    r = quat_multiply(quat_conjugate(p), q)
    n = xp.sqrt(_dot(r[..., 1:], r[..., 1:]))
    return 2.0 * xp.arctan2(n, xp.abs(r[..., 0]))


def quat_from_matrix(R):
    """Unit quaternion (``q0 ≥ 0``) of a rotation matrix, by Shepperd's method.

    Uses, per matrix, the largest of ``4q0², 4q1², 4q2², 4q3²`` as pivot so no division
    by a small number occurs.
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


# ----------------------------------------------------------------------------- SO(3)


def so3_exp(theta):
    """``exp(S(θ))`` by the Euler-Rodrigues formula, exact as ``θ → 0``."""
    xp = array_module(theta)
    angle = xp.sqrt(_dot(theta, theta))
    a = xp.sinc(angle / np.pi)  # sin x / x
    b = 0.5 * xp.sinc(angle / (2 * np.pi)) ** 2  # (1 - cos x)/x²
    S = skew(theta)
    eye = xp.eye(3, dtype=theta.dtype)
    return eye + a[..., None, None] * S + b[..., None, None] * (S @ S)


def so3_log(R):
    """Rotation vector of a rotation matrix (angle in ``[0, π]``), through its quaternion."""
    return quat_to_rotvec(quat_from_matrix(R))
