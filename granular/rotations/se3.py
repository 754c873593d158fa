"""SE(3) maps: the hat and adjoint matrices, the exponential map and the tangent operators.

Holzinger, Gerstmayr & Schöberl (paper 001), eqs. (13)-(17). A twist or incremental
motion vector is ``n = [n_T, n_R]`` (..., 6): translation part first, rotation part
second, as ``v_L = [U, Ω]`` in (10). ``H = [[R, x], [0, 1]]`` and body-frame
increments act from the right, ``H(t+h) = H(t) exp(n)`` (12). With ``θ = |n_R|``:

* ``T_SO3(n_R) = I - a ñ_R + b ñ_R²`` (15), ``a = (1-cos θ)/θ²``, ``b = (θ-sin θ)/θ³``:
  the right-trivialised tangent operator, ``Ω = T_SO3(n_R) ṅ_R`` for ``R = exp(ñ_R)``.
* ``T_SO3⁻¹(n_R) = I + ½ ñ_R + k1 ñ_R²`` with ``k1 = (1 - (θ/2) cot(θ/2))/θ²``; this is
  (16) with its garbled coefficient replaced by the paper's own (76).
* ``T_SE3`` and ``T_SE3⁻¹`` are block upper-triangular, ``[[T(n_R), T_TR], [0, T(n_R)]]``;
  the off-diagonal block is the derivative of the diagonal block in the direction
  ``n_T`` (a function of ``ad_n = [[ñ_R, ñ_T], [0, ñ_R]]`` has that form), so for the
  inverse (17) it reads ``½ ñ_T + k1 (ñ_T ñ_R + ñ_R ñ_T) + k2 ñ_R²`` with
  ``k2 = (n_R·n_T) k1'(θ)/θ``, which is the paper's (77). The printed (17) has a
  commutator ``[ñ_T, ñ_R]`` and a garbled ``k2``; the finite-difference tests in
  ``tests/test_rotations_se3.py`` confirm the anticommutator form used here.

Every coefficient below 0.5 rad is its Taylor polynomial in θ² (8 terms, truncation
below 1e-18 relative), so the operators are exact to round-off at any small angle and
at θ = 0; the closed forms are used above 0.5 rad. ``T_SO3⁻¹`` and ``T_SE3⁻¹`` are
singular at θ = 2π (cot(θ/2) → ∞), where ``exp`` stops being invertible.

The coefficients are those of :mod:`granular.rotations.so3`.
"""

from __future__ import annotations

from .algebra import _check_last, array_module, cross, dot, skew
from .so3 import _coef_a, _coefficients, so3_exp

__all__ = [
    "se3_hat",
    "se3_ad",
    "se3_exp",
    "se3_exp_parts",
    "se3_tangent",
    "se3_tangent_inv",
    "se3_tangent_inv_apply",
]


def _cross_many(pairs):
    """Several cross products in one batched call: ``[(a1, b1), (a2, b2), ...] → [a1×b1, ...]``."""
    xp = array_module(pairs[0][0])
    a = xp.stack(xp.broadcast_arrays(*[p[0] for p in pairs]), axis=-2)
    b = xp.stack(xp.broadcast_arrays(*[p[1] for p in pairs]), axis=-2)
    c = cross(a, b)
    return [c[..., i, :] for i in range(len(pairs))]


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
