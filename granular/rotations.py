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
  ``R(α2) R(α1)`` (``α1`` applied first), see ``docs/physics.md``.

RRP are singular at a rotation angle of π (``|α| → ∞``). The engine therefore keeps
the *total* orientation of a particle as a unit quaternion and uses RRP only for
increments, which stay far from π (see ``granular.particles.integrators``).

No function here takes ``arccos`` of a value near 1: angles come from ``atan2`` of a
sine-like and a cosine-like quantity, and every ``f(x)/x`` factor has its limit at 0
written out, so the results are exact to round-off at any small angle.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "array_module",
    "cross",
    "dot",
    "matvec",
    "matvec_t",
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
    "so3_tangent",
    "so3_tangent_inv",
    "se3_hat",
    "se3_ad",
    "se3_exp",
    "se3_exp_parts",
    "se3_tangent",
    "se3_tangent_inv",
    "se3_tangent_inv_apply",
]


def array_module(*arrays):
    """Return ``cupy`` if any argument is a CuPy array, else ``numpy``.

    Parameters
    ----------
    *arrays : object
        Arrays (or anything else; only CuPy arrays count).

    Returns
    -------
    module
        :mod:`cupy` or :mod:`numpy`.
    """
    for a in arrays:
        if type(a).__module__.split(".")[0] == "cupy":
            import cupy

            return cupy
    return np


def dot(a, b):
    """``a · b`` over the last axis (NumPy or CuPy arrays, broadcasting the leading axes).

    Parameters
    ----------
    a, b : array, (..., k) float
        Vectors.

    Returns
    -------
    array, (...) float
        The dot products (units: the product of the inputs').
    """
    return (a * b).sum(axis=-1)


def matvec(A, v):
    """``A v`` over the last two axes, broadcasting the leading ones (NumPy or CuPy).

    Each entry is the explicit sum ``(A v)_i = A_i0 v_0 + A_i1 v_1 + ...``, added from the
    left, one elementwise product and sum per column: every row of the result is computed
    with the same operations whatever the stacking of ``A`` and ``v`` (one matrix for all
    rows, one per row, a batch of one or of a million), on NumPy and on CuPy alike. A
    matrix product (BLAS or cuBLAS) may round a row differently depending on the batch
    around it, so a body alone and the same body in a batch would part in the last bit.

    Parameters
    ----------
    A : array, (..., m, k) float
        Matrices.
    v : array, (..., k) float
        Vectors.

    Returns
    -------
    array, (..., m) float
        The products.
    """
    k = A.shape[-1]
    if v.shape[-1:] != (k,):
        raise ValueError(f"matvec: A has {k} columns, v has shape {tuple(v.shape)}")
    if k == 0:
        xp = array_module(A, v)
        shape = np.broadcast_shapes(A.shape[:-1], v.shape[:-1] + (1,))
        return xp.zeros(shape, dtype=xp.result_type(A, v))
    out = A[..., :, 0] * v[..., None, 0]
    for j in range(1, k):
        out = out + A[..., :, j] * v[..., None, j]
    return out


def matvec_t(A, v):
    """``Aᵀ v`` over the last two axes, broadcasting the leading ones: the explicit sum
    ``(Aᵀ v)_j = A_0j v_0 + A_1j v_1 + ...`` from the left, the same operations for every
    row whatever the stacking (see :func:`matvec`).

    Parameters
    ----------
    A : array, (..., m, k) float
        Matrices.
    v : array, (..., m) float
        Vectors.

    Returns
    -------
    array, (..., k) float
        The products.
    """
    m = A.shape[-2]
    if v.shape[-1:] != (m,):
        raise ValueError(f"matvec_t: A has {m} rows, v has shape {tuple(v.shape)}")
    if m == 0:
        xp = array_module(A, v)
        shape = np.broadcast_shapes(A.shape[:-2] + A.shape[-1:], v.shape[:-1] + (1,))
        return xp.zeros(shape, dtype=xp.result_type(A, v))
    out = A[..., 0, :] * v[..., 0, None]
    for i in range(1, m):
        out = out + A[..., i, :] * v[..., i, None]
    return out


def cross(a, b):
    """``a × b`` over the last axis, broadcasting the leading axes (NumPy or CuPy).

    Parameters
    ----------
    a, b : array, (..., 3) float
        Vectors.

    Returns
    -------
    array, (..., 3) float
        The cross products.
    """
    xp = array_module(a, b)
    a, b = xp.broadcast_arrays(a, b)
    return xp.stack(
        [
            a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
            a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
            a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0],
        ],
        axis=-1,
    )


def skew(v):
    """The skew-symmetric matrix ``S(v)`` with ``S(v) w = v × w``.

    Parameters
    ----------
    v : array, (..., 3) float
        Vectors.

    Returns
    -------
    array, (..., 3, 3) float
        ``S(v)``, in the units of ``v``.
    """
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
    """Rotation matrix of RRP, eq. (4): ``R = I + 4/(4+|α|²) [S(α) + ½ S(α)²]``.

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (..., 3, 3) float
        Rotation matrices ``R(α)`` [-].
    """
    xp = array_module(alpha)
    S = skew(alpha)
    c = 4.0 / (4.0 + dot(alpha, alpha))
    eye = xp.eye(3, dtype=alpha.dtype)
    return eye + c[..., None, None] * (S + 0.5 * (S @ S))


def rrp_compose(alpha1, alpha2):
    """Composition (5): ``α1 ⊕ α2``, the RRP of ``R(α2) R(α1)`` (``α1`` first).

    ``α1 ⊕ α2 = 4/(4 - α1·α2) [α1 + α2 - ½ α1 × α2]``. Undefined (division by zero) when
    the composed rotation is a half turn.

    Parameters
    ----------
    alpha1, alpha2 : array, (..., 3) float
        Rescaled Rodrigues parameters [-] of the first and the second rotation
        (broadcasting the leading axes).

    Returns
    -------
    array, (..., 3) float
        The RRP of the composed rotation [-].
    """
    c = 4.0 / (4.0 - dot(alpha1, alpha2))
    return c[..., None] * (alpha1 + alpha2 - 0.5 * cross(alpha1, alpha2))


def rrp_inverse(alpha):
    """RRP of the inverse rotation ``R(α)ᵀ``: ``-α``.

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (..., 3) float
        ``-α`` [-].
    """
    return -alpha


def rrp_relative(alpha_from, alpha_to):
    """Spatial relative rotation ``r`` with ``R(r) = R(α_to) R(α_from)ᵀ``.

    Computed as ``(-α_from) ⊕ α_to`` by (5); then ``α_from ⊕ r = α_to``. (Paper (45)
    writes the same pair with the factors swapped; the angle ``|θ|`` is the same.)

    Parameters
    ----------
    alpha_from, alpha_to : array, (..., 3) float
        Rescaled Rodrigues parameters [-] of the two rotations.

    Returns
    -------
    array, (..., 3) float
        The RRP ``r`` of the relative rotation [-] (undefined for a half turn).
    """
    return rrp_compose(-alpha_from, alpha_to)


def rrp_angle(alpha):
    """Rotation angle ``|θ| = 2 atan(|α|/2)`` in ``[0, π)``, below eq. (35).

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (...) float
        The angles [rad].
    """
    xp = array_module(alpha)
    return 2.0 * xp.arctan(0.5 * xp.sqrt(dot(alpha, alpha)))


def rotvec_from_rrp(alpha):
    """Rotation vector ``θ = 2 atan(|α|/2) α/|α|`` of RRP (inverse of (3)); exact as ``α → 0``.

    The log map of ``R(α)`` (also :func:`rrp_log`).

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (..., 3) float
        Rotation vectors, angle in ``[0, π)`` [rad].
    """
    xp = array_module(alpha)
    s = 0.5 * xp.sqrt(dot(alpha, alpha))
    safe = xp.where(s > 0, s, 1.0)
    factor = xp.where(s > 0, xp.arctan(safe) / safe, 1.0)  # atan(s)/s → 1
    return factor[..., None] * alpha


def rrp_log(alpha):
    """Log map of ``R(α)``: the rotation vector of RRP, :func:`rotvec_from_rrp` (inverse of (3)).

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (..., 3) float
        Rotation vectors, angle in ``[0, π)`` [rad].
    """
    return rotvec_from_rrp(alpha)


def rrp_from_rotvec(theta):
    """RRP of a rotation vector, eq. (3): ``α = tan(|θ|/2)/(|θ|/2) θ``.

    Exact as ``θ → 0``, infinite at ``|θ| = π``.

    Parameters
    ----------
    theta : array, (..., 3) float
        Rotation vectors [rad], ``|θ| < π``.

    Returns
    -------
    array, (..., 3) float
        Rescaled Rodrigues parameters [-].
    """
    xp = array_module(theta)
    s = 0.5 * xp.sqrt(dot(theta, theta))
    safe = xp.where(s > 0, s, 1.0)
    factor = xp.where(s > 0, xp.tan(safe) / safe, 1.0)
    return factor[..., None] * theta


def rrp_from_quat(q):
    """RRP of a unit quaternion: ``α = 2 q_vec / q0``; invariant under ``q → -q``, infinite for a half turn.

    Parameters
    ----------
    q : array, (..., 4) float
        Unit quaternions ``(q0, q1, q2, q3)`` [-].

    Returns
    -------
    array, (..., 3) float
        Rescaled Rodrigues parameters [-].
    """
    return 2.0 * q[..., 1:] / q[..., :1]


def quat_from_rrp(alpha):
    """Unit quaternion of RRP: ``q = (2, α) / sqrt(4 + |α|²)`` (algebraic, no trigonometry).

    Parameters
    ----------
    alpha : array, (..., 3) float
        Rescaled Rodrigues parameters [-].

    Returns
    -------
    array, (..., 4) float
        Unit quaternions with ``q0 > 0`` [-].
    """
    xp = array_module(alpha)
    inv = 1.0 / xp.sqrt(4.0 + dot(alpha, alpha))
    return xp.concatenate([2.0 * inv[..., None], alpha * inv[..., None]], axis=-1)


# ----------------------------------------------------------------------- quaternions


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


# ----------------------------------------------------------------------------- SO(3)


def so3_exp(theta):
    """Rotation matrix ``exp(S(θ))`` of a rotation vector, by the Euler-Rodrigues formula.

    ``exp(S(θ)) = I + sin|θ|/|θ| S(θ) + (1 - cos|θ|)/|θ|² S(θ)²``, exact as ``θ → 0``.

    Parameters
    ----------
    theta : array, (..., 3) float
        Rotation vectors [rad].

    Returns
    -------
    array, (..., 3, 3) float
        Rotation matrices [-].
    """
    xp = array_module(theta)
    angle = xp.sqrt(dot(theta, theta))
    a = xp.sinc(angle / np.pi)  # sin x / x
    b = 0.5 * xp.sinc(angle / (2 * np.pi)) ** 2  # (1 - cos x)/x²
    S = skew(theta)
    eye = xp.eye(3, dtype=theta.dtype)
    return eye + a[..., None, None] * S + b[..., None, None] * (S @ S)


def so3_log(R):
    """Rotation vector of a rotation matrix (angle in ``[0, π]``), through its quaternion.

    Parameters
    ----------
    R : array, (..., 3, 3) float
        Rotation matrices [-].

    Returns
    -------
    array, (..., 3) float
        Rotation vectors [rad].
    """
    return quat_to_rotvec(quat_from_matrix(R))


# ----------------------------------------------------------------------------- SE(3)
#
# Holzinger, Gerstmayr & Schöberl (paper 001), eqs. (13)-(17). A twist or incremental
# motion vector is ``n = [n_T, n_R]`` (..., 6): translation part first, rotation part
# second, as ``v_L = [U, Ω]`` in (10). ``H = [[R, x], [0, 1]]`` and body-frame
# increments act from the right, ``H(t+h) = H(t) exp(n)`` (12). With ``θ = |n_R|``:
#
# * ``T_SO3(n_R) = I - a ñ_R + b ñ_R²`` (15), ``a = (1-cos θ)/θ²``, ``b = (θ-sin θ)/θ³``:
#   the right-trivialised tangent operator, ``Ω = T_SO3(n_R) ṅ_R`` for ``R = exp(ñ_R)``.
# * ``T_SO3⁻¹(n_R) = I + ½ ñ_R + k1 ñ_R²`` with ``k1 = (1 - (θ/2) cot(θ/2))/θ²``; this is
#   (16) with its garbled coefficient replaced by the paper's own (76).
# * ``T_SE3`` and ``T_SE3⁻¹`` are block upper-triangular, ``[[T(n_R), T_TR], [0, T(n_R)]]``;
#   the off-diagonal block is the derivative of the diagonal block in the direction
#   ``n_T`` (a function of ``ad_n = [[ñ_R, ñ_T], [0, ñ_R]]`` has that form), so for the
#   inverse (17) it reads ``½ ñ_T + k1 (ñ_T ñ_R + ñ_R ñ_T) + k2 ñ_R²`` with
#   ``k2 = (n_R·n_T) k1'(θ)/θ``, which is the paper's (77). The printed (17) has a
#   commutator ``[ñ_T, ñ_R]`` and a garbled ``k2``; the finite-difference tests in
#   ``tests/test_rotations_se3.py`` confirm the anticommutator form used here.
#
# Every coefficient below 0.5 rad is its Taylor polynomial in θ² (8 terms, truncation
# below 1e-18 relative), so the operators are exact to round-off at any small angle and
# at θ = 0; the closed forms are used above 0.5 rad. ``T_SO3⁻¹`` and ``T_SE3⁻¹`` are
# singular at θ = 2π (cot(θ/2) → ∞), where ``exp`` stops being invertible.

_SERIES_THRESHOLD = 0.5

# Taylor coefficients in powers of θ² (exact rationals, computed with fractions.Fraction),
# one column per coefficient function; 8 terms leave a truncation error below 1e-18
# relative for θ < 0.5.
_SERIES = {
    "b": (1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800, -1 / 6227020800, 1 / 1307674368000,
          -1 / 355687428096000),  # (θ - sin θ)/θ³
    "da": (-1 / 12, 1 / 180, -1 / 6720, 1 / 453600, -1 / 47900160, 1 / 7264857600, -1 / 1494484992000,
           1 / 400148356608000),  # a'(θ)/θ = (θ sin θ - 2(1 - cos θ))/θ⁴
    "db": (-1 / 60, 1 / 1260, -1 / 60480, 1 / 4989600, -1 / 622702080, 1 / 108972864000, -1 / 25406244864000,
           1 / 7602818775552000),  # b'(θ)/θ = ((1 - cos θ)θ - 3(θ - sin θ))/θ⁵
    "k1": (1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160, 691 / 1307674368000, 1 / 74724249600,
           3617 / 10670622842880000),  # (1 - (θ/2) cot(θ/2))/θ²
    "dk1": (1 / 360, 1 / 7560, 1 / 201600, 1 / 5987520, 691 / 130767436800, 1 / 6227020800,
            3617 / 762187345920000, 43867 / 319318388573184000),  # k1'(θ)/θ
}  # fmt: skip


def _closed_forms(ts, names):
    """The closed forms of the coefficients ``names`` at angles ``ts`` (all ≥ 0.5)."""
    xp = array_module(ts)
    out = []
    if {"b", "da", "db"} & set(names):
        s, c = xp.sin(ts), xp.cos(ts)
    if {"k1", "dk1"} & set(names):
        half = 0.5 * ts
        sh = xp.sin(half)
        tcot = ts * xp.cos(half) / sh  # θ cot(θ/2)
    t2 = ts * ts
    for name in names:
        if name == "b":
            out.append((ts - s) / (t2 * ts))
        elif name == "da":
            out.append((ts * s - 2.0 * (1.0 - c)) / (t2 * t2))
        elif name == "db":
            out.append(((1.0 - c) * ts - 3.0 * (ts - s)) / (t2 * t2 * ts))
        elif name == "k1":
            out.append((1.0 - 0.5 * tcot) / t2)
        else:  # "dk1": (θ²/(1 - cos θ) + θ cot(θ/2) - 4)/(2θ⁴), with 1 - cos θ = 2 sin²(θ/2)
            out.append((0.5 * t2 / (sh * sh) + tcot - 4.0) / (2.0 * t2 * t2))
    return out


def _coefficients(theta, *names):
    """``θ = |theta|`` and the coefficients ``names`` (each (...,)) of the rotation vectors
    ``theta`` (..., 3): Taylor series below 0.5 rad, closed form above."""
    xp = array_module(theta)
    t2 = dot(theta, theta)
    t = xp.sqrt(t2)
    small = t < _SERIES_THRESHOLD
    ts = xp.where(small, 1.0, t)
    C = np.array([_SERIES[k] for k in names]).T  # (8, k)
    t2s = xp.where(small, t2, 0.0)  # the series is only used below the threshold
    powers = xp.cumprod(xp.broadcast_to(t2s[..., None], t2.shape + (C.shape[0] - 1,)), axis=-1)
    series = xp.asarray(C[0]) + powers @ xp.asarray(C[1:])
    closed = xp.stack(_closed_forms(ts, names), axis=-1)
    both = xp.where(small[..., None], series, closed)
    return t, [both[..., i] for i in range(len(names))]


def _coef_a(t):
    """``a = (1 - cos θ)/θ²`` = ``½ sinc²(θ/2)``, exact at 0."""
    xp = array_module(t)
    return 0.5 * xp.sinc(t / (2 * np.pi)) ** 2


def _cross_many(pairs):
    """Several cross products in one batched call: ``[(a1, b1), (a2, b2), ...] → [a1×b1, ...]``."""
    xp = array_module(pairs[0][0])
    a = xp.stack(xp.broadcast_arrays(*[p[0] for p in pairs]), axis=-2)
    b = xp.stack(xp.broadcast_arrays(*[p[1] for p in pairs]), axis=-2)
    c = cross(a, b)
    return [c[..., i, :] for i in range(len(pairs))]


def _check_last(arr, k, name):
    if arr.shape[-1:] != (k,):
        raise ValueError(f"{name} must have shape (..., {k}), got {tuple(arr.shape)}")


def so3_tangent(theta):
    """Tangent operator (15): ``T_SO3(θ) = I - (1-cos|θ|)/|θ|² S(θ) + (|θ|-sin|θ|)/|θ|³ S(θ)²``.

    For ``R(t) = exp(S(θ(t)))`` the body angular velocity is ``Ω = T_SO3(θ) θ̇`` (right
    trivialisation, ``Ṙ = R S(Ω)``). Exact at ``θ → 0`` (limits ½ and 1/6).

    Parameters
    ----------
    theta : array, (..., 3) float
        Rotation vectors [rad].

    Returns
    -------
    array, (..., 3, 3) float
        ``T_SO3(θ)`` [-].

    Raises
    ------
    ValueError
        ``theta``'s last axis is not of length 3.
    """
    _check_last(theta, 3, "theta")
    xp = array_module(theta)
    t, (b,) = _coefficients(theta, "b")
    a = _coef_a(t)
    S = skew(theta)
    return xp.eye(3, dtype=theta.dtype) - a[..., None, None] * S + b[..., None, None] * (S @ S)


def so3_tangent_inv(theta):
    """Inverse tangent operator (16): ``T_SO3⁻¹(θ) = I + ½ S(θ) + k1 S(θ)²``.

    ``k1 = (1 - (|θ|/2) cot(|θ|/2))/|θ|²`` (the coefficient (76); → 1/12 at 0);
    ``θ̇ = T_SO3⁻¹(θ) Ω``.

    Parameters
    ----------
    theta : array, (..., 3) float
        Rotation vectors [rad], ``|θ| < 2π``.

    Returns
    -------
    array, (..., 3, 3) float
        ``T_SO3⁻¹(θ)`` [-].

    Raises
    ------
    ValueError
        ``theta``'s last axis is not of length 3.
    """
    _check_last(theta, 3, "theta")
    xp = array_module(theta)
    _, (k1,) = _coefficients(theta, "k1")
    S = skew(theta)
    return xp.eye(3, dtype=theta.dtype) + 0.5 * S + k1[..., None, None] * (S @ S)


def se3_hat(n):
    """The 4×4 Lie-algebra matrix (7) of ``n = [n_T, n_R]``: ``[[S(n_R), n_T], [0, 0]]``.

    Parameters
    ----------
    n : array, (..., 6) float
        ``[n_T, n_R]`` [L, rad] (or a velocity ``[U, Ω]`` [L/T, 1/T]).

    Returns
    -------
    array, (..., 4, 4) float
        The matrices ``n̂``.

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    xp = array_module(n)
    top = xp.concatenate([skew(n[..., 3:]), n[..., :3, None]], axis=-1)
    bottom = xp.zeros(n.shape[:-1] + (1, 4), dtype=n.dtype)
    return xp.concatenate([top, bottom], axis=-2)


def se3_ad(n):
    """Adjoint matrix ``ad_n = [[S(n_R), S(n_T)], [0, S(n_R)]]`` (6×6), ``ad_n m = [n, m]``.

    This is the block matrix of (74) before the factor ``D̄⁻¹``.

    Parameters
    ----------
    n : array, (..., 6) float
        ``[n_T, n_R]`` [L, rad] (or a velocity [L/T, 1/T]).

    Returns
    -------
    array, (..., 6, 6) float
        The matrices ``ad_n``.

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    xp = array_module(n)
    SR, ST = skew(n[..., 3:]), skew(n[..., :3])
    Z = xp.zeros_like(SR)
    return xp.concatenate([xp.concatenate([SR, ST], axis=-1), xp.concatenate([Z, SR], axis=-1)], axis=-2)


def se3_exp(n):
    """Exponential map (13): ``exp_SE3(n) = [[exp_SO3(n_R), T_SO3ᵀ(n_R) n_T], [0, 1]]``.

    ``T_SO3ᵀ(n_R) n_T = n_T + a n_R × n_T + b n_R × (n_R × n_T)`` with ``a``, ``b`` of
    (15); exact as ``n_R → 0`` (then ``H = [[I, n_T], [0, 1]]``).

    Parameters
    ----------
    n : array, (..., 6) float
        Incremental motion vectors ``[n_T, n_R]`` [L, rad].

    Returns
    -------
    H : array, (..., 4, 4) float
        Homogeneous matrices ``[[R, x], [0, 1]]`` (``x`` [L]).

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    xp = array_module(n)
    R, x = se3_exp_parts(n)
    top = xp.concatenate([R, x[..., None]], axis=-1)
    bottom = xp.zeros(n.shape[:-1] + (1, 4), dtype=n.dtype)
    bottom[..., 0, 3] = 1.0
    return xp.concatenate([top, bottom], axis=-2)


def se3_exp_parts(n):
    """The exponential map (13) as ``(R, x)``: ``R = exp_SO3(n_R)`` and ``x = T_SO3ᵀ(n_R) n_T``.

    Cheaper than :func:`se3_exp` when only the rotation and translation are needed
    (``H exp(n)`` is ``(R_H R, x_H + R_H x)``).

    Parameters
    ----------
    n : array, (..., 6) float
        Incremental motion vectors ``[n_T, n_R]`` [L, rad].

    Returns
    -------
    R : array, (..., 3, 3) float
        Rotation matrices [-].
    x : array, (..., 3) float
        Translations [L].

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    nT, nR = n[..., :3], n[..., 3:]
    t, (b,) = _coefficients(nR, "b")
    a = _coef_a(t)
    c = cross(nR, nT)
    x = nT + a[..., None] * c + b[..., None] * cross(nR, c)
    return so3_exp(nR), x


def se3_tangent(n):
    """Tangent operator of SE(3): ``v = T_SE3(n) ṅ`` for ``H(t) = exp_SE3(n(t))``, ``Ḣ = H v̂``.

    ``T_SE3(n) = [[T_SO3(n_R), T_TR], [0, T_SO3(n_R)]]`` with
    ``T_TR = -a S(n_T) + b (S(n_T) S(n_R) + S(n_R) S(n_T)) + (n_R·n_T)(-a'/θ S(n_R) + b'/θ S(n_R)²)``,
    ``a``, ``b`` of (15), ``θ = |n_R|`` (the directional derivative of (15) along ``n_T``).

    The inverse is :func:`se3_tangent_inv`.

    Parameters
    ----------
    n : array, (..., 6) float
        ``[n_T, n_R]`` [L, rad].

    Returns
    -------
    array, (..., 6, 6) float
        ``T_SE3(n)`` (the off-diagonal block [L]).

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    xp = array_module(n)
    nT, nR = n[..., :3], n[..., 3:]
    t, (b, da, db) = _coefficients(nR, "b", "da", "db")
    a = _coef_a(t)
    SR, ST = skew(nR), skew(nT)
    SR2 = SR @ SR
    e = lambda c: c[..., None, None]  # noqa: E731
    TR = xp.eye(3, dtype=n.dtype) - e(a) * SR + e(b) * SR2
    p = dot(nR, nT)
    TTR = -e(a) * ST + e(b) * (ST @ SR + SR @ ST) + e(p) * (-e(da) * SR + e(db) * SR2)
    Z = xp.zeros_like(TR)
    return xp.concatenate([xp.concatenate([TR, TTR], axis=-1), xp.concatenate([Z, TR], axis=-1)], axis=-2)


def se3_tangent_inv(n):
    """Inverse tangent operator (13), (16), (17): ``ṅ = T_SE3⁻¹(n) v``.

    ``T_SE3⁻¹(n) = [[T_SO3⁻¹(n_R), T_nTnR], [0, T_SO3⁻¹(n_R)]]``,
    ``T_SO3⁻¹ = I + ½ S(n_R) + k1 S(n_R)²``,
    ``T_nTnR = ½ S(n_T) + k1 (S(n_T) S(n_R) + S(n_R) S(n_T)) + k2 S(n_R)²``,
    ``k1 = (1 - (θ/2) cot(θ/2))/θ²`` (76),
    ``k2 = (n_R·n_T)/(2θ⁴) (θ²/(1 - cos θ) + θ cot(θ/2) - 4)`` (77), ``θ = |n_R| < 2π``.
    Equivalently ``I + ½ ad_n + K(n) ad_n²`` with ``K`` of (75) (see (73)).

    Parameters
    ----------
    n : array, (..., 6) float
        ``[n_T, n_R]`` [L, rad], ``|n_R| < 2π``.

    Returns
    -------
    array, (..., 6, 6) float
        ``T_SE3⁻¹(n)`` (the off-diagonal block [L]).

    Raises
    ------
    ValueError
        ``n``'s last axis is not of length 6.
    """
    _check_last(n, 6, "n")
    xp = array_module(n)
    nT, nR = n[..., :3], n[..., 3:]
    _, (k1, dk1) = _coefficients(nR, "k1", "dk1")
    k2 = dot(nR, nT) * dk1
    SR, ST = skew(nR), skew(nT)
    SR2 = SR @ SR
    e = lambda c: c[..., None, None]  # noqa: E731
    TR = xp.eye(3, dtype=n.dtype) + 0.5 * SR + e(k1) * SR2
    TTR = 0.5 * ST + e(k1) * (ST @ SR + SR @ ST) + e(k2) * SR2
    Z = xp.zeros_like(TR)
    return xp.concatenate([xp.concatenate([TR, TTR], axis=-1), xp.concatenate([Z, TR], axis=-1)], axis=-2)


def se3_tangent_inv_apply(n, v):
    """``T_SE3⁻¹(n) v`` without forming the 6×6 matrix (same formula as :func:`se3_tangent_inv`).

    With ``u × (u × ·)`` for ``S(u)²``: ``ṅ_R = Ω + ½ n_R × Ω + k1 n_R × (n_R × Ω)``,
    ``ṅ_T = U + ½ n_R × U + k1 n_R × (n_R × U) + ½ n_T × Ω
    + k1 (n_T × (n_R × Ω) + n_R × (n_T × Ω)) + k2 n_R × (n_R × Ω)``, with ``k1`` (76)
    and ``k2`` (77).

    Parameters
    ----------
    n : array, (..., 6) float
        ``[n_T, n_R]`` [L, rad], ``|n_R| < 2π``.
    v : array, (..., 6) float
        Velocities ``[U, Ω]`` [L/T, 1/T] (broadcasting the leading axes with ``n``).

    Returns
    -------
    array, (..., 6) float
        ``ṅ = [ṅ_T, ṅ_R]`` [L/T, 1/T].

    Raises
    ------
    ValueError
        The last axis of ``n`` or ``v`` is not of length 6.
    """
    _check_last(n, 6, "n")
    _check_last(v, 6, "v")
    xp = array_module(n, v)
    nT, nR = n[..., :3], n[..., 3:]
    U, Om = v[..., :3], v[..., 3:]
    _, (k1, dk1) = _coefficients(nR, "k1", "dk1")
    k1 = k1[..., None]
    k2 = (dot(nR, nT) * dk1)[..., None]
    rO, rU, tO = _cross_many([(nR, Om), (nR, U), (nT, Om)])
    rrO, rrU, trO, rtO = _cross_many([(nR, rO), (nR, rU), (nT, rO), (nR, tO)])
    dR = Om + 0.5 * rO + k1 * rrO
    dT = U + 0.5 * (rU + tO) + k1 * (rrU + trO + rtO) + k2 * rrO
    return xp.concatenate([dT, dR], axis=-1)
