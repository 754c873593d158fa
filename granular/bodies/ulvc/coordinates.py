"""Unified local velocity coordinates (Holzinger, Gerstmayr & Schöberl, paper 001), Sect. 3-5.

Six scalar velocities ``w̄_i = b̄_iᵀ v̄(ȳ_i)`` (18) of six body points ``ȳ_i`` along six
directions ``b̄_i`` replace the body velocity ``v̄_L = [Ū, Ω̄]`` (10). Everything here is
batched over leading axes and written on the array module of its inputs (NumPy or
CuPy); a leading axis of length 1 broadcasts against one of length N (shared
parameters). Units: lengths [L], time [T], mass [M]; ``w`` has units [L/T].

Conventions and choices (where the paper is ambiguous or has misprints)
-----------------------------------------------------------------------
* The body-frame origin is the centre of mass; ``Ū`` is its body-frame velocity and
  ``J̄`` the inertia about it (the paper assumes this from Sect. 4.2 on).
* ``D̄`` (54) maps ``v̄_L = [Ū, Ω̄] → w̄``; its rows are ``[b̄_iᵀ, (ȳ_i × b̄_i)ᵀ]``.
  For ``l1 = l2 = l3 = 1`` it is orthogonal and the paper writes ``D̄⁻¹ = D̄ᵀ`` (55),
  (71), (72) and ``M̄ = D̄ M D̄ᵀ`` (56). For general ``l`` the correct forms, used here,
  have ``D̄⁻¹`` (and ``D̄⁻ᵀ``) in place of ``D̄ᵀ`` (and ``D̄``):
  ``v̄_L = D̄⁻¹ w̄``, ``M̄ = D̄⁻ᵀ diag(m I, J̄) D̄⁻¹``, ``Γ̄ = D̄⁻ᵀ diag(m Ẽ, Ẽ J̄) D̄⁻¹``,
  ``T̄⁻¹_SE3(n) = T⁻¹_SE3(n) D̄⁻¹``. They reduce to the paper's for ``l = 1``.
* ``Γ̄`` is taken in the factored form (56). The literal integral (49),
  ``∫ρ N̄ᵀ Ẽ N̄ dV``, is a different matrix (its rotation block is ``-∫ρ ỹ Ẽ ỹ dV``
  instead of ``Ẽ J̄``) with the same product ``Γ̄ w̄``, which is all the equations of
  motion (51) use; ``tests/test_ulvc.py`` checks both by quadrature over a box.
* (61), the vector ``Γ̄ w̄`` for ``l = 1`` and diagonal ``J̄``, has sign misprints in rows
  1 (``-J̄11 - J̄22`` for ``J̄22 - J̄11``) and 6 (``m(w̄3² - w̄4² + …)`` for
  ``-m(w̄3² - w̄4² - …)``); :func:`gamma_times_w` follows (56), which the tests check
  against the corrected (61) and against (49) by quadrature.
* The closed form (73)-(78) of ``T̄⁻¹_SE3`` has misprints in (78); the corrected form is
  ``T̄⁻¹ = D̄⁻¹ + ½ T1 + K T2`` with ``T1 = ad_n D̄⁻¹`` (74),
  ``T2 = ad_n² D̄⁻¹ = [[ñ_R², ñ_T ñ_R + ñ_R ñ_T], [0, ñ_R²]] D̄⁻¹`` and ``K`` of (75)-(77).
* Tetrahedral projection (Fig. 4b, whose geometry the text does not give): the six
  edges of a tetrahedron with vertices ``P1..P4``, in the order 12, 34, 13, 24, 14, 23
  (opposite edges adjacent, as the hexahedron's opposite faces); ``ȳ_i`` is the edge
  midpoint and ``b̄_i`` the edge direction scaled to length ``1/√2``, as in (19)-(24).
  ``D̄`` then holds the Plücker coordinates of the six edge lines, which are linearly
  independent for any non-degenerate tetrahedron (a classical result of line geometry),
  so the map is one-to-one. For the regular tetrahedron with vertices at
  ``(±1, ±1, ±1)`` (alternate corners of the cube ``l = 1``) ``D̄`` is orthogonal.
"""

from __future__ import annotations

import math

import numpy as np

from ... import rotations as rot
from ...rotations import array_module, skew
from ...rotations.so3 import _coefficients
from ..core import inertia_tensors

__all__ = [
    "hexahedral_projection",
    "regular_tetrahedron",
    "tetrahedral_projection",
    "projection_matrix",
    "invert_projection",
    "w_from_velocities",
    "velocities_from_w",
    "interpolation_matrix",
    "point_velocity",
    "omega_matrix",
    "lie_algebra_matrix",
    "mass_matrix",
    "gamma_matrix",
    "gamma_times_w",
    "generalized_force",
    "inverse_tangent_w",
    "inverse_tangent_w_closed_form",
    "check_mass",
    "check_inertia",
]

_S2 = 1.0 / math.sqrt(2.0)
TETRA_EDGES = ((0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2))


def _as_array(a, xp, name, last):
    a = xp.asarray(a, dtype=xp.float64)
    if a.ndim == 0 or a.shape[-len(last):] != last:
        raise ValueError(f"{name} must have shape (..., {', '.join(map(str, last))}), got {tuple(a.shape)}")
    if not bool(xp.isfinite(a).all()):
        raise ValueError(f"{name} must be finite")
    return a


def check_mass(mass, xp=np):
    """``mass``: scalar or (N,) float64 [M], finite and > 0. Returns it as an xp array (≥ 1-d)."""
    m = xp.atleast_1d(xp.asarray(mass, dtype=xp.float64))
    if m.ndim != 1:
        raise ValueError(f"mass must be a scalar or shape (N,), got {tuple(m.shape)}")
    if not bool(xp.isfinite(m).all()) or not bool((m > 0).all()):
        raise ValueError("mass must be finite and > 0 for every body")
    return m


def check_inertia(inertia, xp=np):
    """``inertia`` [M L²] about the centre of mass in the body frame, in the body schemes'
    convention (:func:`~granular.bodies.core.inertia_tensors`): (3,) principal moments,
    (3, 3), (N, 3) or (N, 3, 3); symmetric positive definite. Returns (B, 3, 3), B = 1
    for a shared tensor."""
    return xp.asarray(inertia_tensors(inertia)[0])


# ------------------------------------------------------------------- projections


def hexahedral_projection(l):
    """Hexahedral projection (19)-(24) for the box with half side lengths ``l = (l1, l2, l3)``.

    ``l``: (..., 3) float64 [L], each > 0. Returns ``b``: (..., 6, 3) directions [-] and
    ``y``: (..., 6, 3) projection points [L] (centres of the box's faces):
    ``b̄_1,2 = ±e1/√2`` at ``ȳ = ∓l2 e2``; ``b̄_3,4 = ±e2/√2`` at ``∓l3 e3``;
    ``b̄_5,6 = ±e3/√2`` at ``∓l1 e1``.
    """
    xp = array_module(l)
    l = _as_array(l, xp, "l", (3,))
    if not bool((l > 0).all()):
        raise ValueError("l: the hexahedron half side lengths l1, l2, l3 must all be > 0")
    e = xp.eye(3)
    b = _S2 * xp.stack([e[0], -e[0], e[1], -e[1], e[2], -e[2]])
    b = xp.broadcast_to(b, l.shape[:-1] + (6, 3)).copy()
    l1, l2, l3 = l[..., 0, None], l[..., 1, None], l[..., 2, None]
    y = xp.stack([-l2 * e[1], l2 * e[1], -l3 * e[2], l3 * e[2], -l1 * e[0], l1 * e[0]], axis=-2)
    return b, y


def regular_tetrahedron(a=1.0):
    """Vertices (4, 3) of the regular tetrahedron ``a (1,1,1), a (1,-1,-1), a (-1,1,-1),
    a (-1,-1,1)`` [L] (centroid at the origin, edge length ``2√2 a``); ``a > 0``."""
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"a: the tetrahedron size must be finite and > 0, got {a!r}")
    return a * np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]])


def tetrahedral_projection(vertices):
    """Tetrahedral projection (Fig. 4b): the six edges of the tetrahedron ``vertices``.

    ``vertices``: (..., 4, 3) float64 [L], body frame. Edge ``(i, j)`` in the order
    :data:`TETRA_EDGES` gives ``ȳ = (P_i + P_j)/2`` and ``b̄ = (P_j - P_i)/(√2 |P_j - P_i|)``.
    Returns ``b``, ``y``: (..., 6, 3). A degenerate tetrahedron raises ``ValueError``.
    """
    xp = array_module(vertices)
    P = _as_array(vertices, xp, "vertices", (4, 3))
    i = [e[0] for e in TETRA_EDGES]
    j = [e[1] for e in TETRA_EDGES]
    d = P[..., j, :] - P[..., i, :]
    length = xp.sqrt((d * d).sum(axis=-1))
    vol6 = xp.abs(xp.linalg.det(P[..., 1:, :] - P[..., :1, :]))
    if not bool((vol6 > 1e-9 * length.max(axis=-1) ** 3).all()):
        raise ValueError("vertices: the tetrahedron is degenerate (coplanar or coincident vertices)")
    b = _S2 * d / length[..., None]
    y = 0.5 * (P[..., i, :] + P[..., j, :])
    return b, y


def projection_matrix(b, y):
    """``D̄`` of (54): row ``i`` is ``[b̄_iᵀ, (ỹ_i b̄_i)ᵀ] = [b̄_iᵀ, (ȳ_i × b̄_i)ᵀ]``, so ``w̄ = D̄ v̄_L``.

    ``b``: (..., 6, 3) directions [-]; ``y``: (..., 6, 3) points [L]. Returns (..., 6, 6).
    """
    xp = array_module(b, y)
    return xp.concatenate([b, rot.cross(y, b)], axis=-1)


def invert_projection(D):
    """``D̄⁻¹`` (..., 6, 6), after checking that the projection maps one-to-one.

    Raises ``ValueError`` when ``D̄`` is singular or its condition number exceeds 1e12
    (the six lines ``(b̄_i, ȳ_i)`` do not determine ``[Ū, Ω̄]``).
    """
    xp = array_module(D)
    try:
        Dinv = xp.linalg.inv(D)
    except np.linalg.LinAlgError as exc:
        raise ValueError(f"the projection is not one-to-one: D is singular ({exc})") from None
    cond = xp.sqrt((D * D).sum(axis=(-2, -1)) * (Dinv * Dinv).sum(axis=(-2, -1)))
    if not bool(xp.isfinite(cond).all()) or not bool((cond < 1e12).all()):
        raise ValueError("the projection is not one-to-one: D is singular or near-singular (condition > 1e12)")
    return Dinv


# -------------------------------------------------------------- velocity mapping


def w_from_velocities(D, U, Omega):
    """(54): ``w̄ = D̄ [Ū, Ω̄]``.

    ``D``: (..., 6, 6); ``U``: (..., 3) body-frame velocity of the centre of mass [L/T];
    ``Omega``: (..., 3) body-frame angular velocity [1/T]. Returns ``w``: (..., 6) [L/T].
    """
    xp = array_module(D, U, Omega)
    v = xp.concatenate(xp.broadcast_arrays(U, Omega), axis=-1)
    return rot.matvec(D, v)


def velocities_from_w(D_inv, w):
    """(68)-(71) for any projection: ``[Ū, Ω̄] = D̄⁻¹ w̄`` (``D̄ᵀ w̄`` when ``l = 1``).

    ``D_inv``: (..., 6, 6); ``w``: (..., 6) [L/T]. Returns ``U`` (..., 3) [L/T] and
    ``Omega`` (..., 3) [1/T].
    """
    v = rot.matvec(D_inv, w)
    return v[..., :3], v[..., 3:]


def interpolation_matrix(y, D_inv):
    """Interpolation matrix ``N̄(ȳ)`` of (26)-(27): ``v̄(ȳ) = N̄(ȳ) w̄ = Ū + Ω̄ × ȳ``,
    ``N̄(ȳ) = [I, -ỹ] D̄⁻¹``; for the hexahedron this is (27) entry by entry.

    ``y``: (..., 3) body point [L]; ``D_inv``: (..., 6, 6). Returns (..., 3, 6) [-, 1/L].
    """
    xp = array_module(y, D_inv)
    eye = xp.broadcast_to(xp.eye(3), y.shape[:-1] + (3, 3))
    return xp.concatenate([eye, -skew(y)], axis=-1) @ D_inv


def point_velocity(y, D_inv, w):
    """(26): body-frame velocity ``v̄(ȳ) = N̄(ȳ) w̄`` [L/T] of the body point ``y`` (..., 3) [L]."""
    U, Om = velocities_from_w(D_inv, w)
    return U + rot.cross(Om, y)


def omega_matrix(w, D_inv):
    """``Ē(w̄)`` of (40), (69): ``[ė̄_1, ė̄_2, ė̄_3] = Ω̃`` with ``Ω̄`` from :func:`velocities_from_w`.

    ``w``: (..., 6) [L/T]; ``D_inv``: (..., 6, 6). Returns (..., 3, 3) [1/T].
    """
    return skew(velocities_from_w(D_inv, w)[1])


def lie_algebra_matrix(w, D_inv):
    """(70): the ``se(3)`` matrix ``ṽ_L(w̄) = [[Ē(w̄), N̄(0) w̄], [0, 0]]`` (..., 4, 4), i.e.
    ``Ḣ = H ṽ_L(w̄)`` (6); ``w``: (..., 6) [L/T], ``D_inv``: (..., 6, 6)."""
    return rot.se3_hat(rot.matvec(D_inv, w))


# --------------------------------------------------------------- mass and Γ


def _block_diag(A, B):
    xp = array_module(A, B)
    A, B = xp.broadcast_arrays(A, B)
    Z = xp.zeros_like(A)
    return xp.concatenate([xp.concatenate([A, Z], axis=-1), xp.concatenate([Z, B], axis=-1)], axis=-2)


def mass_matrix(mass, J, D_inv):
    """Mass matrix (48), (56)-(60): ``M̄ = D̄⁻ᵀ diag(m I, J̄) D̄⁻¹`` (``D̄ diag(m I, J̄) D̄ᵀ``
    for ``l = 1``, which for diagonal ``J̄`` is (60)).

    ``mass``: (...,) [M]; ``J``: (..., 3, 3) [M L²]; ``D_inv``: (..., 6, 6).
    Returns (..., 6, 6), symmetric positive definite; ``½ w̄ᵀ M̄ w̄ = ½ m Ū·Ū + ½ Ω̄·J̄ Ω̄``.
    """
    xp = array_module(mass, J, D_inv)
    mass = xp.asarray(mass, dtype=xp.float64)
    Mne = _block_diag(mass[..., None, None] * xp.eye(3), J)
    return xp.swapaxes(D_inv, -1, -2) @ Mne @ D_inv


def gamma_matrix(w, mass, J, D_inv):
    """Velocity-dependent matrix (49), (56): ``Γ̄(w̄) = D̄⁻ᵀ diag(m Ē, Ē J̄) D̄⁻¹``, ``Ē = Ω̃``.

    ``w``: (..., 6) [L/T]; ``mass``: (...,) [M]; ``J``: (..., 3, 3) [M L²];
    ``D_inv``: (..., 6, 6). Returns (..., 6, 6) [M/T]. ``Γ̄ w̄ = D̄⁻ᵀ [m Ω̄ × Ū, Ω̄ × J̄ Ω̄]``
    (61); with (51) this is the Newton-Euler system (66)-(67).
    """
    xp = array_module(w, mass, J, D_inv)
    mass = xp.asarray(mass, dtype=xp.float64)
    E = omega_matrix(w, D_inv)
    return xp.swapaxes(D_inv, -1, -2) @ _block_diag(mass[..., None, None] * E, E @ J) @ D_inv


def gamma_times_w(w, mass, J, D_inv):
    """``Γ̄(w̄) w̄ = D̄⁻ᵀ [m Ω̄ × Ū, Ω̄ × (J̄ Ω̄)]`` (61) without forming ``Γ̄``.

    ``w``: (..., 6) [L/T]; ``mass``: (...,) [M]; ``J``: (..., 3, 3) [M L²];
    ``D_inv``: (..., 6, 6). Returns (..., 6) [M L/T²].
    """
    xp = array_module(w, mass, J, D_inv)
    U, Om = velocities_from_w(D_inv, w)
    g = xp.concatenate([mass[..., None] * rot.cross(Om, U), rot.cross(Om, rot.matvec(J, Om))], axis=-1)
    return rot.matvec_t(D_inv, g)


def generalized_force(points, forces, D_inv, torque=None):
    """Generalized forces (52)-(53): ``Q̄ = Σ_k N̄ᵀ(ȳ_k) f̄_k + D̄⁻ᵀ [0, τ̄]``.

    ``points``: (..., K, 3) body-frame application points [L] (relative to the centre of
    mass); ``forces``: (..., K, 3) body-frame forces [M L/T²]; ``D_inv``: (..., 6, 6);
    ``torque``: optional (..., 3) body-frame pure torque [M L²/T²] (virtual power
    ``τ̄·δΩ̄``, ``δΩ̄ = [0 I] D̄⁻¹ δw̄``). Returns (..., 6) [M L/T²].
    """
    xp = array_module(points, forces, D_inv)
    if points.shape[-1:] != (3,) or forces.shape[-1:] != (3,) or points.ndim < 2:
        raise ValueError(f"points and forces must have shape (..., K, 3), got {points.shape} and {forces.shape}")
    N = interpolation_matrix(points, D_inv[..., None, :, :])  # (..., K, 3, 6)
    Q = (xp.swapaxes(N, -1, -2) @ forces[..., None])[..., 0].sum(axis=-2)
    if torque is not None:
        Q = Q + rot.matvec_t(D_inv, xp.concatenate([xp.zeros_like(torque), torque], axis=-1))
    return Q


# ------------------------------------------------------- inverse tangent in w


def inverse_tangent_w(n, D_inv):
    """Inverse tangent operator in w-coordinates (72): ``T̄⁻¹_SE3(n) = T⁻¹_SE3(n) D̄⁻¹``,
    so that ``ṅ = T̄⁻¹_SE3(n) w̄`` (80).

    ``n``: (..., 6) incremental motion vector ``[n_T, n_R]`` [L, rad], ``|n_R| < 2π``;
    ``D_inv``: (..., 6, 6). Returns (..., 6, 6).
    """
    return rot.se3_tangent_inv(n) @ D_inv


def inverse_tangent_w_closed_form(n, D_inv):
    """The closed form (73)-(77) with (78) corrected: ``T̄⁻¹ = D̄⁻¹ + ½ T1 + K T2``,
    ``T1 = ad_n D̄⁻¹`` (74), ``T2 = ad_n² D̄⁻¹``, ``K = [[k1 I, k2 I], [0, k1 I]]`` (75),
    ``k1 = (1 - (θ/2) cot(θ/2))/θ²`` (76), ``k2 = (n_R·n_T)/(2θ⁴)(θ²/(1-cos θ) + θ cot(θ/2) - 4)``
    (77), ``θ = |n_R|``. Equal to :func:`inverse_tangent_w`; kept as the paper's route.

    ``n``: (..., 6) [L, rad]; ``D_inv``: (..., 6, 6). Returns (..., 6, 6).
    """
    xp = array_module(n, D_inv)
    nR = n[..., 3:]
    _, (k1, dk1) = _coefficients(nR, "k1", "dk1")
    k1 = k1[..., None, None]
    k2 = (rot.dot(nR, n[..., :3]) * dk1)[..., None, None]
    eye = xp.eye(3)
    K = _block_diag(k1 * eye, k1 * eye)
    K = K + xp.concatenate(
        [xp.concatenate([0 * k1 * eye, k2 * eye], axis=-1), xp.zeros(K.shape[:-2] + (3, 6))], axis=-2
    )
    ad = rot.se3_ad(n)
    T1 = ad @ D_inv
    T2 = ad @ T1
    return D_inv + 0.5 * T1 + K @ T2
