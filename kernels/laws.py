"""Scalar laws: plain Python functions on floats, no arrays, no allocation.

Each function here is compiled twice, by ``numba.njit`` for the CPU loops
(:mod:`kernels.cpu`) and by ``numba.cuda.jit(device=True)`` for the GPU kernels
(:mod:`kernels.cuda`), through the factory in :mod:`kernels.particles`. Vectors travel as
separate components and come back as tuples. Only ``math`` is used, so a law also runs
as plain Python (the CUDA simulator relies on that). A law calls no other law (plain
functions cannot be called from compiled code); the bodies in :mod:`kernels.particles`
compose them.

Conventions: quaternions ``(q0, q1, q2, q3)`` scalar first, Hamilton product; RRP as in
paper 003, eqs. (3)-(5).
"""

import math

# Integrator identifiers shared by the host code and the kernels.
SCHEME_EXACT = 0  # map (23): closed-form RRP increment
SCHEME_VERLET = 1  # map (25): velocity-Verlet ("explicit Newmark") increment
SCHEME_CAMPELLO = 2  # map (27): Campello's symplectic Euler

# Status codes written per particle by the step kernels (0 = fine).
STATUS_OK = 0
STATUS_ROTATION_DOMAIN = 1  # incremental rotation >= pi/2 (outside the closed form)
STATUS_NOT_FINITE = 2  # a NaN or infinity in the new state or forces


def quat_multiply(p0, p1, p2, p3, q0, q1, q2, q3):
    """Hamilton product ``p ⊗ q`` (so ``R(p ⊗ q) = R(p) R(q)``)."""
    return (
        p0 * q0 - p1 * q1 - p2 * q2 - p3 * q3,
        p0 * q1 + q0 * p1 + p2 * q3 - p3 * q2,
        p0 * q2 + q0 * p2 + p3 * q1 - p1 * q3,
        p0 * q3 + q0 * p3 + p1 * q2 - p2 * q1,
    )


def quat_from_rrp(a1, a2, a3):
    """Unit quaternion ``(2, α)/sqrt(4 + |α|²)`` of RRP ``α`` (inverse of ``α = 2 q_vec/q0``)."""
    inv = 1.0 / math.sqrt(4.0 + a1 * a1 + a2 * a2 + a3 * a3)
    return 2.0 * inv, a1 * inv, a2 * inv, a3 * inv


def quat_rotate(q0, q1, q2, q3, v1, v2, v3):
    """``R(q) v`` for a unit quaternion: ``v + q0 t + q_vec × t`` with ``t = 2 q_vec × v``."""
    t1 = 2.0 * (q2 * v3 - q3 * v2)
    t2 = 2.0 * (q3 * v1 - q1 * v3)
    t3 = 2.0 * (q1 * v2 - q2 * v1)
    return (
        v1 + q0 * t1 + (q2 * t3 - q3 * t2),
        v2 + q0 * t2 + (q3 * t1 - q1 * t3),
        v3 + q0 * t3 + (q1 * t2 - q2 * t1),
    )


def rrp_increment(scheme, h, w1, w2, w3):
    """RRP increment ``Δα`` of one step and the step-size measure ``ρ`` (must be < 1).

    ``w`` is the spatial angular velocity the increment integrates:
    ``w = Ω_k + h RM_k / 2J`` for maps (23) and (25), ``w = Ω_{k+1}`` for map (27).

    * (23b) exact:  ``Δα = 2h / (1 + sqrt(1 - h²|w|²)) w``, real only for ``ρ = h|w| < 1``.
    * (25b), (27b): ``Δα = h w``, ``ρ = |Δα|/2``.

    In all three cases ``ρ < 1`` is the same condition, an incremental rotation
    ``2 atan(|Δα|/2)`` below π/2; at ``ρ ≥ 1`` (or a non-finite ``ρ``) the returned
    increment is meaningless and the caller flags the particle.
    """
    ww = w1 * w1 + w2 * w2 + w3 * w3
    if scheme == SCHEME_EXACT:
        rho = h * math.sqrt(ww)
        disc = 1.0 - rho * rho
        if disc > 0.0:
            c = 2.0 * h / (1.0 + math.sqrt(disc))
        else:
            c = 0.0
    else:
        c = h
        rho = 0.5 * h * math.sqrt(ww)
    return c * w1, c * w2, c * w3, rho


def pendulum_moment(p1, p2, p3, mg, e1, e2, e3):
    """3D pendulum, eq. (39): ``U = -m g e·p`` with ``p = Rρ0``; spatial moment ``RM = m g p × e``.

    ``ρ0`` is the body-frame vector from the pivot to the centre of mass, ``e`` the unit
    vertical of (39) and ``mg = m g``. Returns ``(RM1, RM2, RM3, U)``. The printed (40)
    is garbled; this moment is ``-∂U/∂θ`` for ``R → exp(S(θ)) R`` (``PAPER_NOTES.md``).
    """
    U = -mg * (e1 * p1 + e2 * p2 + e3 * p3)
    return (
        mg * (p2 * e3 - p3 * e2),
        mg * (p3 * e1 - p1 * e3),
        mg * (p1 * e2 - p2 * e1),
        U,
    )


def is_finite(a):
    """``True`` unless ``a`` is NaN or infinite (``a - a`` is 0 only for finite ``a``)."""
    return a - a == 0.0
