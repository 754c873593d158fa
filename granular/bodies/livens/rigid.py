"""Rigid bodies in unit quaternions with Livens' principle: EML (86)-(93) and its size-reduced
variants REML (101)-(103) and Null-EML (104)-(105), batched over N independent bodies.

Paper 002 (Kinon & Betsch), Sects. 3 and 4.3-4.5, eqs. (30)-(67), (86)-(105); Sects. 5.3
(free body) and 5.4 (heavy top). Comparators (MPL, EMH, MPH; Table 1) are in
:mod:`granular.bodies.livens.comparators`, several bodies with joints in
:mod:`granular.bodies.livens.multibody`, the general scheme (72) in
:mod:`granular.bodies.livens`.

Quaternions (27)-(36), (43)-(51)
--------------------------------
``q = (q0, q⃗)`` scalar first, Hamilton product, ``R(q)`` maps body to spatial vectors
(as everywhere in the engine). With the 3 × 4 matrices (35) (signs from the authors' code,
``docs/physics.md``)::

    G(q) = [-q⃗, q0 I - q̂],   E(q) = [-q⃗, q0 I + q̂],   R(q) = E(q) G(q)ᵀ   (35), (50)

``R`` is evaluated as the homogeneous quadratic (51) ``E Gᵀ`` (also off the unit sphere,
where the discrete gradients evaluate it). Body and spatial angular velocity (43)
``Ω = 2 G(q) v``, ``ω = 2 E(q) v``, inverse (44) ``v = ½ G(q)ᵀ Ω = ½ E(q)ᵀ ω`` on
``S³``; kinetic energy (45)-(46) ``T = ½ Ωᵀ J Ω = ½ vᵀ M4(q) v`` with the singular
``M4(q) = 4 G(q)ᵀ J G(q)`` (rank 3); ``∂_q T = 4 G(v)ᵀ J G(v) q = -2 G(v)ᵀ J Ω`` (48a)
(``G(q) v = -G(v) q``); spatial angular momentum (64) ``L = ½ E(q) p``; unity constraint
(30) ``g = ½(qᵀq - 1)``.

Potential: gravity on the centre of mass at the body point ``X_c`` (from the fixed point),
``V(q) = -m g·R(q) X_c`` (115). It is a homogeneous quadratic ``V = ½ qᵀ H_V q`` with
``H_V = 2 X̄_cᵀ Ē(-m g)`` (bar matrices below), so its Gonzalez gradient (71) is exactly
the midpoint gradient ``H_V q_{n+½}``.

EML (86)-(93)
-------------
Unknowns ``(q_{n+1}, p_{n+1}, v_{n+1}, λ)`` (13 per body)::

    q_{n+1} - q_n = h v_{n+½}                                                 (86a)
    p_{n+1} - p_n = h ∂̄_q T - h ∇̄V - h λ q_{n+½}                              (86b), (93)
    p_{n+½}       = ∂̄_v T                                                     (86c)
    ½(q_{n+1}·q_{n+1} - 1) = 0                                                (86d)

with the G-equivariant discrete derivatives (87)-(88), ``Ω̄ = G(q_n) v_n + G(q_{n+1}) v_{n+1}``
(the average of the nodal body rates)::

    ∂̄_q T = -2 G(v_{n+½})ᵀ J Ω̄,     ∂̄_v T = 2 G(q_{n+½})ᵀ J Ω̄                   (87)

(87) is garbled in our copy; this is the form that satisfies the directionality (89)
(``Ω`` is bilinear in ``(q, v)``) and reduces to (48) at equal arguments. The scheme
conserves the generalized energy (74) ``E = p·v - ½ vᵀ M4(q) v + V(q)`` (Prop. 4.9), the
unit length ``|q| = 1`` at the nodes, and the spatial angular momentum ``L = ½ E(q) p``
about every symmetry axis of V (Prop. 4.10): all three components for the free body, the
vertical one for the heavy top.

Size reduction
--------------
REML (101)-(103): ``v_{n+1} = (2/h)(q_{n+1} - q_n) - v_n`` and
``p_{n+1} = 2 ∂̄_v T - p_n`` are eliminated; unknowns ``(q_{n+1}, λ)`` (5 per body).
Null-EML (104)-(105): ``q_{n+1} = exp_{S³}((0, ½ ϑ)) ⊗ q_n`` (40) (an incremental rotation
applied in the spatial frame; ``|q_{n+1}| = 1`` by construction) and (86b) premultiplied by
the null-space matrix ``G(q_{n+½})`` (``G(q̄) q̄ = 0`` removes λ); unknowns ``ϑ`` (3 per
body). Both have the same solution as EML (every unit quaternion near ``q_n`` is
``exp(ϑ) q_n`` for one small ϑ, and ``G(q̄)ᵀ`` spans the complement of ``q̄``), so they
reproduce its trajectory to the Newton tolerance; λ is recovered afterwards as
``λ = -q̄·R/(h q̄·q̄)`` with R the λ-free residual of (86b).

Parasitic node velocities (measured; not discussed in the paper)
-----------------------------------------------------------------
(86a) fixes only ``v_{n+½}``: a component of the node velocities that alternates in sign
from step to step is invisible in ``q_n``, in (74) and in L, and EML does not damp it. The
velocity constraint (41) holds at the midpoints (94) but at the nodes ``q_n·v_n``
alternates and grows (free body 5.3, ``|q·v|`` after 1, 2, 3 s: 2.0, 5.1, 15 at h = 0.05;
0.35, 0.76, 1.5 at h = 0.01; 0.09, 0.17, 0.26 at h = 0.005, against ``|v| ≈ 15``). The
node kinetic energy ``½ Ωᵀ J Ω`` then oscillates about E; at h = 0.05 the motion itself
degrades and Newton fails near t = 8.2. The trajectory still converges with order 2 on
a fixed interval (the mode is seeded at O(h²) and grows more slowly for smaller h).

Implementation: each scheme's step is a per-body law of :mod:`kernels.bodies_livens`
(compiled for the CPU and the GPU; Newton with a dense LU of the body's own Jacobian, each
body stopping on its own tolerance). The multiplier enters as ``λ̃ = hλ``; residuals of
(86b) carry units of momentum; analytic Jacobians. Predictor: ``q_n + h v̄``
(``ϑ = 2h E(q_n) v̄`` for Null-EML), ``p_n``, ``2 v̄ - v_n``, ``hλ_n``, with
``v̄ = (q_n - q_{n-1})/h`` the last step's midpoint velocity (free of the parasitic mode).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ... import rotations as rot
from ..core import Scheme, host, inertia_tensors
from .schemes import LivensState, as_rows

__all__ = [
    "quat_G",
    "quat_E",
    "quat_bar",
    "quat_ebar",
    "quat_right",
    "rotation_matrix",
    "point_position",
    "point_jacobian",
    "point_hessian",
    "quat_mass_matrix",
    "body_angular_velocity",
    "spatial_angular_velocity",
    "spatial_angular_momentum",
    "velocity_from_body_rate",
    "velocity_from_spatial_rate",
    "exp_increment",
    "exp_increment_jacobian",
    "QuaternionBodies",
    "EML",
    "REML",
    "NullEML",
]

# index and sign tables of the 3×4 and 4×4 quaternion matrices (gathers, no loops)
_G_IDX = ((1, 0, 3, 2), (2, 3, 0, 1), (3, 2, 1, 0))
_G_SGN = ((-1, 1, 1, -1), (-1, -1, 1, 1), (-1, 1, -1, 1))
_E_SGN = ((-1, 1, -1, 1), (-1, 1, 1, -1), (-1, -1, 1, 1))
_B_IDX = ((0, 1, 2, 3), (1, 0, 3, 2), (2, 3, 0, 1), (3, 2, 1, 0))
_BAR_SGN = ((0, -1, -1, -1), (1, 0, 1, -1), (1, -1, 0, 1), (1, 1, -1, 0))
_EBAR_SGN = ((0, -1, -1, -1), (1, 0, -1, 1), (1, 1, 0, -1), (1, -1, 1, 0))
_QR_SGN = ((1, -1, -1, -1), (1, 1, 1, -1), (1, -1, 1, 1), (1, 1, -1, 1))


@lru_cache(maxsize=None)
def _tables(xp_name):
    xp = np if xp_name == "numpy" else __import__(xp_name)
    f = lambda a: xp.asarray(np.asarray(a, dtype=np.float64))  # noqa: E731
    i = lambda a: xp.asarray(np.asarray(a, dtype=np.int64))  # noqa: E731
    return {"gi": i(_G_IDX), "gs": f(_G_SGN), "es": f(_E_SGN), "bi": i(_B_IDX), "bar": f(_BAR_SGN),
            "ebar": f(_EBAR_SGN), "qr": f(_QR_SGN), "eye4": f(np.eye(4))}  # fmt: skip


def _t(a):
    return _tables(rot.array_module(a).__name__)


def _pad(w):
    """``(0, w)``: (..., 3) → (..., 4)."""
    xp = rot.array_module(w)
    return xp.concatenate([xp.zeros_like(w[..., :1]), w], axis=-1)


def quat_G(a):
    """``G(a) = [-a⃗, a0 I - â]`` (35a): (..., 4) → (..., 3, 4); ``Ω = 2 G(q) q̇``."""
    t = _t(a)
    return a[..., t["gi"]] * t["gs"]


def quat_E(a):
    """``E(a) = [-a⃗, a0 I + â]`` (35b): (..., 4) → (..., 3, 4); ``ω = 2 E(q) q̇``."""
    t = _t(a)
    return a[..., t["gi"]] * t["es"]


def quat_bar(w):
    """``w̄ = [[0, -wᵀ], [w, -ŵ]]`` (137): (..., 3) → (..., 4, 4), with ``G(a)ᵀ w = w̄ a``."""
    t = _t(w)
    return _pad(w)[..., t["bi"]] * t["bar"]


def quat_ebar(w):
    """``[[0, -wᵀ], [w, ŵ]]``: (..., 3) → (..., 4, 4), with ``E(a)ᵀ w = ebar(w) a``."""
    t = _t(w)
    return _pad(w)[..., t["bi"]] * t["ebar"]


def quat_right(b):
    """``Q_r(b)`` (33b): (..., 4) → (..., 4, 4), with ``a ⊗ b = Q_r(b) a``."""
    t = _t(b)
    return b[..., t["bi"]] * t["qr"]


def rotation_matrix(q):
    """``R(q) = E(q) G(q)ᵀ`` (50)-(51), homogeneous quadratic in q: (..., 4) → (..., 3, 3)."""
    return quat_E(q) @ quat_G(q).swapaxes(-1, -2)


def point_position(q, X):
    """``R(q) X`` (49): q (..., 4), X (..., 3) body vector → (..., 3) spatial."""
    return rot.matvec(rotation_matrix(q), X)


def point_jacobian(q, X):
    """``∂(R(q) X)/∂q = 2 E(q) X̄`` (126), (137): (..., 4), (..., 3) → (..., 3, 4)."""
    return 2.0 * quat_E(q) @ quat_bar(X)


def point_hessian(lam, X):
    """``∂²(λ·R(q) X)/∂q² = 2 X̄ᵀ Ē(λ)`` (constant in q): (..., 3), (..., 3) → (..., 4, 4)."""
    return 2.0 * quat_bar(X).swapaxes(-1, -2) @ quat_ebar(lam)


def quat_mass_matrix(q, J):
    """``M4(q) = 4 G(q)ᵀ J G(q)`` (46), singular: q (..., 4), J (..., 3, 3) → (..., 4, 4)."""
    G = quat_G(q)
    return 4.0 * G.swapaxes(-1, -2) @ J @ G


def body_angular_velocity(q, v):
    """``Ω = 2 G(q) v`` (43): (..., 4), (..., 4) → (..., 3) [1/T]."""
    return 2.0 * rot.matvec(quat_G(q), v)


def spatial_angular_velocity(q, v):
    """``ω = 2 E(q) v`` (43): (..., 4), (..., 4) → (..., 3) [1/T]."""
    return 2.0 * rot.matvec(quat_E(q), v)


def spatial_angular_momentum(q, p):
    """``L = ½ E(q) p`` (64): (..., 4), (..., 4) → (..., 3) [M L²/T]."""
    return 0.5 * rot.matvec(quat_E(q), p)


def velocity_from_body_rate(q, Omega):
    """``v = ½ G(q)ᵀ Ω`` (44), tangent to S³: (..., 4), (..., 3) → (..., 4)."""
    return 0.5 * rot.matvec_t(quat_G(q), Omega)


def velocity_from_spatial_rate(q, omega):
    """``v = ½ E(q)ᵀ ω`` (44): (..., 4), (..., 3) → (..., 4)."""
    return 0.5 * rot.matvec_t(quat_E(q), omega)


def exp_increment(theta):
    """``exp_{S³}((0, ½ ϑ)) = (cos(|ϑ|/2), sin(|ϑ|/2) ϑ/|ϑ|)`` (40): (..., 3) → (..., 4)."""
    return rot.quat_from_rotvec(theta)


def exp_increment_jacobian(theta):
    """``∂ exp_{S³}((0, ½ ϑ))/∂ϑ``: (..., 3) → (..., 4, 3), exact as ``|ϑ| → 0``.

    ``[-½ s ϑᵀ; s I + c ϑ ϑᵀ]`` with ``s = sin(a/2)/a``, ``c = (½ a cos(a/2) - sin(a/2))/a³``,
    ``a = |ϑ|``; ``c = -1/24 + a²/960 - a⁴/107520 + O(a⁶)`` below ``a = 0.05``.
    """
    xp = rot.array_module(theta)
    a2 = (theta * theta).sum(axis=-1)
    a = xp.sqrt(a2)
    s = 0.5 * xp.sinc(a / (2.0 * np.pi))
    small = a < 0.05
    aa = xp.where(small, 1.0, a)
    c_big = (0.5 * aa * xp.cos(0.5 * aa) - xp.sin(0.5 * aa)) / aa**3
    c = xp.where(small, -1.0 / 24.0 + a2 / 960.0 - a2 * a2 / 107520.0, c_big)
    top = -0.5 * s[..., None] * theta
    low = s[..., None, None] * xp.eye(3) + c[..., None, None] * theta[..., :, None] * theta[..., None, :]
    return xp.concatenate([top[..., None, :], low], axis=-2)


# --------------------------------------------------------------------- the model


class QuaternionBodies(Scheme):
    """N rigid bodies rotating about a fixed point, in unit quaternions; base of the schemes.

    Parameters
    ----------
    inertia: convected inertia tensor J about the fixed point (body frame) [M L²], symmetric
        positive definite: (3,) principal moments, (3, 3), or per body (N, 3) or (N, 3, 3)
        (:func:`~granular.bodies.core.inertia_tensors`).
    n: number of bodies N; needed when ``inertia`` is shared ((3,) or (3, 3)).
    mass: scalar or (N,) float64 [M], for the gravity potential (default 0: no potential).
    center_of_mass: (3,) or (N, 3) float64, body vector from the fixed point to the centre of
        mass ``X_c`` [L] (default 0).
    gravity: (3,) or (N, 3) float64, spatial acceleration of gravity [L/T²] (default 0).
    backend: ``"cpu"``, ``"gpu"``, ``"auto"`` or a :class:`~granular.backend.Backend`.
    rtol: Newton relative tolerance, > 0. max_iter: Newton iteration cap.
    """

    scheme_name = "quaternion body"
    state_type = LivensState
    implicit = True
    energy_key = "generalized_energy"
    quantities = ("newton residual",)
    n_dof = 4
    n_constraints = 1
    k = 13  #: Newton unknowns per body

    def __init__(self, inertia, *, n=None, mass=0.0, center_of_mass=(0.0, 0.0, 0.0), gravity=(0.0, 0.0, 0.0),
                 backend="cpu", rtol=1e-10, max_iter=25):  # fmt: skip
        self._init_backend(backend)
        if not (isinstance(rtol, (int, float, np.floating)) and rtol > 0.0):
            raise ValueError(f"rtol: the Newton tolerance must be a number > 0, got {rtol!r}")
        if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
            raise ValueError(f"max_iter: the Newton iteration cap must be an integer >= 1, got {max_iter!r}")
        self.rtol, self.max_iter = float(rtol), int(max_iter)
        # The parameters are checked and set up on the host with NumPy (per matrix), then
        # copied to the backend: a body's parameters are the same bits alone and in any
        # batch (a GPU library's batched products may round by batch size).
        arr, per_body = inertia_tensors(inertia)  # shape, finite, symmetric, positive definite
        if per_body:
            n = arr.shape[0] if n is None else n
        if n is None or isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n: the number of bodies must be a positive integer, got {n!r}")
        self.n = n = int(n)
        J = as_rows(np, arr if per_body else arr[0], n, "inertia", (3, 3))
        J = 0.5 * (J + J.swapaxes(1, 2))
        mass = as_rows(np, host(mass), n, "mass")
        if not bool((mass >= 0.0).all()):
            raise ValueError("mass must be >= 0")
        com = as_rows(np, host(center_of_mass), n, "center_of_mass", (3,))
        gravity = as_rows(np, host(gravity), n, "gravity", (3,))
        # V = -m g·R(q) X_c = ½ qᵀ H_V q (115)
        H_V = np.ascontiguousarray(point_hessian(-mass[:, None] * gravity, com))
        self._J_host = J
        be = self.backend
        self.J, self.mass, self.center_of_mass = be.asarray(J), be.asarray(mass), be.asarray(com)
        self.gravity, self.H_V = be.asarray(gravity), be.asarray(H_V)

    # ---------------------------------------------------------------- state
    def state(self, q, *, Omega=None, omega=None, t=0.0, tol=1e-10) -> LivensState:
        """Initial state from unit quaternions and one of the angular velocities.

        q: (4,) or (N, 4) float64, unit quaternions (|q| = 1 to ``tol``) [1].
        Omega: (3,) or (N, 3) float64, body angular velocity Ω [1/T]; or
        omega: (3,) or (N, 3) float64, spatial angular velocity ω [1/T].
        ``v_0 = ½ G(q)ᵀ Ω`` (44), ``p_0 = M4(q_0) v_0``, ``λ = 0``.
        """
        xp, n = self.xp, self.n
        q = as_rows(xp, q, n, "q", (4,))
        dev = abs(xp.sqrt((q * q).sum(axis=1)) - 1.0)
        if not bool((dev <= tol).all()):
            b = int(xp.nonzero(dev > tol)[0][0])
            raise ValueError(f"q: body {b} is not a unit quaternion, ||q| - 1| = {float(dev[b]):.3e} > tol {tol:g}")
        if (Omega is None) == (omega is None):
            raise ValueError("give exactly one of Omega (body angular velocity) and omega (spatial)")
        if Omega is not None:
            v = velocity_from_body_rate(q, as_rows(xp, Omega, n, "Omega", (3,)))
        else:
            v = velocity_from_spatial_rate(q, as_rows(xp, omega, n, "omega", (3,)))
        # p_0 = M4(q) v = 4 G(q)ᵀ J G(q) v, as matrix-vector sums only (:func:`rot.matvec`
        # computes every row alike, whatever the batch)
        G = quat_G(q)
        p = 2.0 * rot.matvec_t(G, rot.matvec(self.J, 2.0 * rot.matvec(G, v)))
        z = xp.zeros(n, dtype=xp.int64)
        return LivensState(q.copy(), v, p, xp.zeros((n, 1)), v.copy(), z, z.copy(), t=float(t))

    def _check_state(self, state):
        if not isinstance(state, LivensState) or tuple(state.q.shape) != (self.n, 4):
            shape = getattr(getattr(state, "q", None), "shape", None)
            raise ValueError(f"state: q has shape {shape}, the scheme expects ({self.n}, 4)")

    # ---------------------------------------------------------- diagnostics
    def potential(self, q):
        """``V = ½ qᵀ H_V q = -m g·R(q) X_c`` (115): (N,) [M L²/T²]."""
        return 0.5 * (q * rot.matvec(self.H_V, q)).sum(axis=-1)

    def kinetic_energy(self, state):
        """``T = ½ Ωᵀ J Ω`` with ``Ω = 2 G(q) v`` (38), (45): (N,) [M L²/T²]."""
        W = body_angular_velocity(state.q, state.v)
        return 0.5 * (W * rot.matvec(self.J, W)).sum(axis=-1)

    def generalized_energy(self, state):
        """``E = p·v - ½ vᵀ M4(q) v + V(q)`` (74): (N,) [M L²/T²]; conserved by EML (96)."""
        return (state.p * state.v).sum(axis=-1) - self.kinetic_energy(state) + self.potential(state.q)

    def total_energy(self, state):
        """``E_tot = ½ vᵀ M4(q) v + V(q)`` (80): (N,) [M L²/T²]; not conserved by EML (Fig. 7)."""
        return self.kinetic_energy(state) + self.potential(state.q)

    def scheme_energy(self, state):
        """The energy function of this scheme (Table 1): (74) for the Livens schemes."""
        return self.generalized_energy(state)

    def angular_momentum(self, state):
        """Spatial angular momentum ``L = ½ E(q) p`` (64): (N, 3) [M L²/T]."""
        return spatial_angular_momentum(state.q, state.p)

    def unity_residual(self, state):
        """``|q| - 1`` (30): (N,) [1]."""
        return self.xp.sqrt((state.q * state.q).sum(axis=-1)) - 1.0

    def hidden_constraint_residual(self, state):
        """``q·v`` (41) at the nodes: (N,) [1/s]; EML enforces it only at the midpoints (94)."""
        return (state.q * state.v).sum(axis=-1)

    def rotation(self, state):
        """``R(q)`` (50): (N, 3, 3)."""
        return rotation_matrix(state.q)

    def center_of_mass_position(self, state):
        """``φ = R(q) X_c`` [L]: (N, 3) (the heavy top's (120))."""
        return point_position(state.q, self.center_of_mass)

    def body_angular_velocity(self, state):
        """``Ω = 2 G(q) v`` (43): (N, 3) [1/T]."""
        return body_angular_velocity(state.q, state.v)

    def invariants(self, state):
        """``generalized_energy`` (74), ``total_energy`` (80), ``kinetic_energy``,
        ``potential`` (N,) [M L²/T²]; ``angular_momentum`` (N, 3) [M L²/T] (64);
        ``unity_residual`` ``|q| - 1`` and ``hidden_constraint`` ``q·v`` (N,)."""
        out = {"generalized_energy": self.generalized_energy(state), "total_energy": self.total_energy(state),
               "kinetic_energy": self.kinetic_energy(state), "potential": self.potential(state.q),
               "angular_momentum": self.angular_momentum(state), "unity_residual": self.unity_residual(state),
               "hidden_constraint": self.hidden_constraint_residual(state)}  # fmt: skip
        if self.energy_key not in out:
            out[self.energy_key] = self.scheme_energy(state)
        return out

    def _state_args(self, state, out):
        return (state.q, state.v, state.p, state.lam, state.v_half, state.iterations_total, out.q, out.v, out.p,
                out.lam, out.v_half, out.iterations, out.iterations_total)  # fmt: skip


class EML(QuaternionBodies):
    """Livens energy-momentum scheme for rigid-body rotation in quaternions (86)-(93).

    13 unknowns per body ``(q_{n+1}, p_{n+1}, v_{n+1}, hλ)``. Conserves (74), ``|q| = 1`` and
    the spatial angular momentum about symmetry axes of V exactly. Per-body law
    ``eml_body`` of :mod:`kernels.bodies_livens`. Example (Sect. 5.3)::

        em = EML([[6, 0, 0], [0, 8, 0], [0, 0, 3]], n=1)
        s = em.state([1.0, 0, 0, 0], Omega=[10.0, 20.0, 20.0])
        em.run(s, 0.05, 40)
    """

    name = "livens eml"
    scheme_name = "EML"
    _midpoint = 0

    def _launch(self, state, out, h, k, status, value):
        self.kernels.livens_eml(self._midpoint, k, h, self.rtol, self.max_iter, self.J, self.H_V,
                                *self._state_args(state, out), status, value)  # fmt: skip


class REML(QuaternionBodies):
    """EML with ``v_{n+1}``, ``p_{n+1}`` eliminated, (101)-(103): 5 unknowns ``(q_{n+1}, hλ)``
    per body. Same solution as :class:`EML` (to the Newton tolerance)."""

    name = "livens reml"
    scheme_name = "REML"
    k = 5

    def _launch(self, state, out, h, k, status, value):
        self.kernels.livens_reml(k, h, self.rtol, self.max_iter, self.J, self.H_V, *self._state_args(state, out),
                                 status, value)  # fmt: skip


class NullEML(QuaternionBodies):
    """EML by the discrete null-space method (104)-(105): 3 unknowns ``ϑ`` per body,
    ``q_{n+1} = exp_{S³}((0, ½ϑ)) ⊗ q_n``. Same solution as :class:`EML` (to the Newton
    tolerance); ``|q| = 1`` holds by construction (to round-off)."""

    name = "livens null-eml"
    scheme_name = "Null-EML"
    k = 3

    def _launch(self, state, out, h, k, status, value):
        self.kernels.livens_null_eml(k, h, self.rtol, self.max_iter, self.J, self.H_V, *self._state_args(state, out),
                                     status, value)  # fmt: skip
