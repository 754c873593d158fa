"""Rescaled Rodrigues parameters (RRP) (Baker & Gonzalez, paper 003):

* (3)  ``α = tan(|θ|/2) / (|θ|/2) · θ`` for the rotation vector ``θ``; equivalently
  ``α = 2 q_vec / q0`` for a unit quaternion, invariant under ``q → -q``.
* (4)  ``R(α) = I + 4/(4 + |α|²) [S(α) + ½ S(α)²]``.
* (5)  ``α1 ⊕ α2 = 4/(4 - α1·α2) [α1 + α2 - ½ α1 × α2]``, which is the rotation
  ``R(α2) R(α1)`` (``α1`` applied first), see ``docs/physics.md``.

RRP are singular at a rotation angle of π (``|α| → ∞``); the engine keeps total
orientations as unit quaternions and uses RRP only for increments (see
:mod:`granular.rotations`). Arrays as there: vectors ``(..., 3)``, quaternions ``(..., 4)``.
"""

from __future__ import annotations

from .algebra import array_module, cross, dot, skew

__all__ = [
    "rrp_to_matrix",
    "rrp_compose",
    "rrp_inverse",
    "rrp_relative",
    "rrp_angle",
    "rrp_from_quat",
    "rrp_from_rotvec",
    "rrp_log",
    "quat_from_rrp",
    "rotvec_from_rrp",
]


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
