"""Rotation algebra: rescaled Rodrigues parameters (RRP), unit quaternions, SO(3) and SE(3).

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

The maps live in submodules by topic; every name is imported here, so
``from granular.rotations import quat_rotate`` (or ``granular.rotations.quat_rotate``)
is the import path to use:

==================  ======================================================================
``algebra``         the array module of an input, ``dot``, ``cross``, ``skew``, ``matvec``,
                    ``matvec_t`` (each row computed alike, whatever the batch)
``rrp``             rescaled Rodrigues parameters: (3), (4), (5), their inverses and logs
``quaternions``     unit quaternions: products, matrices, rotation vectors, Shepperd's method
``so3``             ``exp``/``log`` of SO(3), the tangent operators (15), (16) and their
                    Taylor-series coefficients
``se3``             SE(3) (paper 001, (7), (13)-(17)): hat and ad maps, ``exp``, the tangent
                    operator and its inverse
==================  ======================================================================
"""

from __future__ import annotations

from .algebra import array_module, cross, dot, matvec, matvec_t, skew
from .quaternions import (
    quat_angle_between,
    quat_canonical,
    quat_conjugate,
    quat_from_matrix,
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_to_matrix,
    quat_to_rotvec,
)
from .rrp import (
    quat_from_rrp,
    rotvec_from_rrp,
    rrp_angle,
    rrp_compose,
    rrp_from_quat,
    rrp_from_rotvec,
    rrp_inverse,
    rrp_log,
    rrp_relative,
    rrp_to_matrix,
)
from .se3 import se3_ad, se3_exp, se3_exp_parts, se3_hat, se3_tangent, se3_tangent_inv, se3_tangent_inv_apply
from .so3 import so3_exp, so3_log, so3_tangent, so3_tangent_inv

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
