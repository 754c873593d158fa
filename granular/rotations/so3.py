"""SO(3): the exponential and log maps and the tangent operators of Holzinger, Gerstmayr &
Schöberl (paper 001), (15) and (16) (see :mod:`granular.rotations.se3` for the notation
and the SE(3) operators built on them).

Every coefficient of the tangent operators below 0.5 rad is its Taylor polynomial in θ²
(8 terms, truncation below 1e-18 relative), so the operators are exact to round-off at
any small angle and at θ = 0; the closed forms are used above 0.5 rad. ``T_SO3⁻¹`` is
singular at θ = 2π (cot(θ/2) → ∞), where ``exp`` stops being invertible.
"""

from __future__ import annotations

import numpy as np

from .algebra import _check_last, array_module, dot, skew
from .quaternions import quat_from_matrix, quat_to_rotvec

__all__ = ["so3_exp", "so3_log", "so3_tangent", "so3_tangent_inv"]


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
