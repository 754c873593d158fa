"""Rigid bodies in unified local velocity coordinates with a Lie-group RK4, batched (paper 001).

Holzinger, Gerstmayr & Schöberl describe a rigid body by six translational velocities
``w̄`` (18)-(25) instead of ``[Ū, Ω̄]``; the equations of motion ``M̄ ẇ̄ + Γ̄ w̄ = Q̄`` (51)
are integrated together with the incremental motion vector ODE ``ṅ = T̄⁻¹_SE3(n) w̄``
(80) by the RK4 Lie-group scheme (82)-(87), and the configuration is updated on SE(3) by
``H ← H exp_SE3(n)`` (81), (87). This module holds the batched model, state, loads and
integrators; the coordinate maps are in :mod:`granular.bodies.ulvc.coordinates` (their
names are re-exported here).

One row per body on the backend's array module ``xp`` (NumPy or CuPy). Fixed
parameters have a leading axis ``B`` that is either ``N`` (one row per body) or 1
(shared by all bodies, broadcast without copies).

==========================  ===========  ===============================================
:class:`ULVCBodies`         fixed        ``mass`` (B,) [M], ``J`` (B, 3, 3) [M L²] about the
                                         centre of mass, body frame; ``b``, ``y`` (B, 6, 3)
                                         projection directions [-] and points [L];
                                         ``D``, ``D_inv``, ``M``, ``M_inv`` (B, 6, 6)
:class:`ULVCState`          changing     ``R`` (N, 3, 3) body → spatial [-]; ``x`` (N, 3)
                                         centre of mass [L]; ``w`` (N, 6) [L/T]; ``t`` [T]
:class:`NewtonEulerState`   changing     ``R``, ``x`` as above; ``v`` (N, 3) spatial velocity of
                                         the centre of mass [L/T]; ``Omega`` (N, 3) body
                                         angular velocity [1/T]
==========================  ===========  ===============================================

Choices where the paper is silent or ambiguous (see also ``ulvc_coordinates``):

* Stage configurations. (82)-(85) evaluate ``f`` at ``H_i`` in every stage, which is
  exact only when the loads do not depend on the configuration (the paper's example has
  none). With :class:`PointLoads` that include spatial (dead) forces or torques, the
  stages here use the Munthe-Kaas stage configurations ``H_i exp(½K1)``,
  ``H_i exp(½K2)``, ``H_i exp(K3)``; this keeps order 4 for configuration-dependent
  loads and coincides with the paper's scheme when there are no loads.
* The reference integrator in standard coordinates (:class:`NewtonEulerRK4`) is RK4 on
  the Newton-Euler equations in ``(x, v, Ω̄)`` with the rotation on SO(3) (the
  rotation-vector ODE ``θ̇ = T⁻¹_SO3(θ) Ω̄``, ``R ← R exp(θ)``), in the manner of Terze
  et al. (the paper's "f1"): a different Lie group (SO(3) × R³ rather than SE(3)) and
  different coordinates, so translation and rotation errors differ from ulvc's. Without
  torques Euler's equations for ``Ω̄`` do not involve the configuration, and RK4 commutes
  with the linear map ``w̄ = D̄ v̄_L``, so both schemes give the same ``Ω̄`` to round-off.
* Increments with ``|n_R| = h |Ω̄| ≥ 2π`` (the paper's ``h = 1/10`` with ``|Ω̄| = 100``)
  leave the domain where ``exp`` is invertible; the formulas are still evaluated (as in
  the paper's study) and the result is merely inaccurate. ``T⁻¹`` is singular at
  exactly ``2π``; a non-finite state raises
  :class:`~granular.bodies.core.NonFiniteBodyError` naming the body, the step and the
  quantity, and leaves the state as it was before that step.

The schemes are :class:`~granular.bodies.core.Scheme` objects built on the bodies
(``LieGroupRK4(bodies, loads)``, ``step(state, h)``); each step is the per-body law of
:mod:`kernels.bodies_ulvc`, compiled for the CPU and the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import rotations as rot
from ...backend import resolve_backend
from ..core import BodyState, Scheme, check_step
from ..core import host as _host
from .coordinates import (
    check_inertia,
    check_mass,
    gamma_matrix,
    gamma_times_w,
    generalized_force,
    hexahedral_projection,
    interpolation_matrix,
    inverse_tangent_w,
    inverse_tangent_w_closed_form,
    invert_projection,
    lie_algebra_matrix,
    mass_matrix,
    omega_matrix,
    point_velocity,
    projection_matrix,
    regular_tetrahedron,
    tetrahedral_projection,
    velocities_from_w,
    w_from_velocities,
)

__all__ = [
    "ULVCBodies",
    "ULVCState",
    "NewtonEulerState",
    "PointLoads",
    "LieGroupRK4",
    "NewtonEulerRK4",
    "to_newton_euler",
    "from_newton_euler",
    "kinetic_energy",
    "linear_momentum",
    "angular_momentum",
    "check_step",
    # re-exported from ulvc_coordinates
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
]

PROJECTIONS = ("hexahedral", "tetrahedral")


class ULVCBodies:
    """Fixed parameters of ``n`` rigid bodies in unified local velocity coordinates.

    Parameters
    ----------
    mass: scalar or (N,) float64 [M], > 0.
    inertia: (3,) principal moments, (3, 3), (N, 3) or (N, 3, 3) [M L²]: the inertia
        tensor ``J̄`` (58) about the centre of mass in the body frame, symmetric positive
        definite.
    n: number of bodies; needed only when every parameter is shared.
    projection: ``"hexahedral"`` (19)-(24) or ``"tetrahedral"`` (Fig. 4b).
    l: (3,) or (N, 3) float64 [L], hexahedron half side lengths ``(l1, l2, l3)``, > 0.
    vertices: (4, 3) or (N, 4, 3) [L], tetrahedron vertices (default
        :func:`regular_tetrahedron`, for which ``D̄`` is orthogonal).
    backend: a :class:`~granular.backend.Backend` or its name.

    Attributes (``B`` is ``N`` or 1): ``mass`` (B,), ``J``, ``J_inv`` (B, 3, 3), ``b``,
    ``y`` (B, 6, 3), ``D``, ``D_inv`` (B, 6, 6) of (54), ``M`` (B, 6, 6) of (56)-(60) and
    ``M_inv = D̄ diag(I/m, J̄⁻¹) D̄ᵀ`` (B, 6, 6).
    """

    def __init__(self, mass, inertia, n=None, projection="hexahedral", l=(1.0, 1.0, 1.0), vertices=None,
                 backend="cpu"):  # fmt: skip
        self.backend = resolve_backend(backend)
        # The parameters are computed on the host with NumPy and then copied to the
        # backend: a GPU library's batched 6x6 products and inverses can round differently
        # for different batch sizes (seen on an H200: a body alone and the same body in a
        # batch of five parted in the last bit of x), while NumPy's are per matrix. So a
        # body's parameters are the same bits alone, in any batch, and on either backend.
        xp = np
        m = check_mass(_host(mass), xp)
        J = check_inertia(_host(inertia), xp)
        if projection == "hexahedral":
            b, y = hexahedral_projection(xp.asarray(_host(l), dtype=xp.float64))
        elif projection == "tetrahedral":
            verts = regular_tetrahedron() if vertices is None else _host(vertices)
            b, y = tetrahedral_projection(xp.asarray(verts, dtype=xp.float64))
        else:
            raise ValueError(f"projection must be one of {PROJECTIONS}, got {projection!r}")
        if b.ndim == 2:
            b, y = b[None], y[None]
        if b.ndim != 3:
            raise ValueError("l must have shape (3,) or (N, 3); vertices (4, 3) or (N, 4, 3)")
        counts = {m.shape[0], J.shape[0], b.shape[0]} - {1}
        if len(counts) > 1:
            raise ValueError(
                f"mass, inertia and the projection give different numbers of bodies: {m.shape[0]}, "
                f"{J.shape[0]}, {b.shape[0]}"
            )
        found = counts.pop() if counts else None
        if n is None:
            n = found if found is not None else 1
        if not isinstance(n, int) or n < 1 or (found is not None and n != found):
            raise ValueError(f"n must be a positive int matching the per-body parameters ({found}), got {n!r}")
        B = max(m.shape[0], J.shape[0], b.shape[0])
        if B not in (1, n):
            raise ValueError(f"per-body parameters must have {n} rows, got {B}")
        self.n, self.projection = n, projection
        self.mass = xp.broadcast_to(m, (B,)).copy()
        self.J = xp.broadcast_to(J, (B, 3, 3)).copy()
        self.J_inv = xp.linalg.inv(self.J)
        self.b = xp.broadcast_to(b, (B, 6, 3)).copy()
        self.y = xp.broadcast_to(y, (B, 6, 3)).copy()
        self.D = projection_matrix(self.b, self.y)
        self.D_inv = invert_projection(self.D)
        self.M = mass_matrix(self.mass, self.J, self.D_inv)
        eye = xp.eye(3)
        Z = xp.zeros((B, 3, 3))
        Minv_ne = xp.concatenate(
            [xp.concatenate([eye / self.mass[:, None, None], Z], axis=-1), xp.concatenate([Z, self.J_inv], axis=-1)],
            axis=-2,
        )
        self.M_inv = self.D @ Minv_ne @ xp.swapaxes(self.D, -1, -2)
        self._D_host, self._D_inv_host = self.D, self.D_inv
        for name in ("mass", "J", "J_inv", "b", "y", "D", "D_inv", "M", "M_inv"):
            setattr(self, name, self.backend.asarray(getattr(self, name)))

    @property
    def xp(self):
        return self.backend.xp

    # ------------------------------------------------------------- velocities

    def w_from_velocities(self, U, Omega):
        """(54): ``w̄ = D̄ [Ū, Ω̄]``; ``U``, ``Omega``: (N, 3) [L/T], [1/T] → (N, 6) [L/T].
        Computed on the host, like the parameters (the same bits alone and in a batch)."""
        return self.backend.asarray(w_from_velocities(self._D_host, _host(U), _host(Omega)))

    def velocities(self, w):
        """(71): ``[Ū, Ω̄] = D̄⁻¹ w̄``; ``w``: (N, 6) → ``U`` (N, 3) [L/T], ``Omega`` (N, 3) [1/T].
        Computed on the host, like the parameters (the same bits alone and in a batch)."""
        U, Om = velocities_from_w(self._D_inv_host, _host(w))
        return self.backend.asarray(U), self.backend.asarray(Om)

    def state(self, R=None, x=None, U=None, Omega=None):
        """A :class:`ULVCState` from ``R`` (N, 3, 3) [-] (default I), ``x`` (N, 3) [L]
        (default 0), ``U`` (N, 3) [L/T] and ``Omega`` (N, 3) [1/T] (default 0), body frame.
        Each may also be given for one body and is then broadcast."""
        xp, n = self.xp, self.n
        R = xp.broadcast_to(xp.eye(3) if R is None else xp.asarray(R, dtype=xp.float64), (n, 3, 3)).copy()
        x = self._vec(x, "x")
        w = self.w_from_velocities(self._vec(U, "U"), self._vec(Omega, "Omega"))
        if not (bool(xp.isfinite(R).all()) and bool(xp.isfinite(w).all())):
            raise ValueError("R, U and Omega must be finite")
        return ULVCState(R=R, x=x, w=w)

    def _vec(self, a, name):
        xp = self.xp
        if a is None:
            return xp.zeros((self.n, 3))
        a = xp.asarray(a, dtype=xp.float64)
        if a.shape not in ((3,), (self.n, 3)) or not bool(xp.isfinite(a).all()):
            raise ValueError(f"{name} must be finite with shape (3,) or ({self.n}, 3), got {tuple(a.shape)}")
        return xp.broadcast_to(a, (self.n, 3)).copy()

    # ------------------------------------------------------ equations of motion

    def gamma(self, w):
        """``Γ̄(w̄)`` (56): (N, 6, 6) [M/T] for ``w`` (N, 6) [L/T]."""
        return gamma_matrix(w, self.mass, self.J, self.D_inv)

    def gamma_times_w(self, w):
        """``Γ̄(w̄) w̄`` (61): (N, 6) [M L/T²]."""
        return gamma_times_w(w, self.mass, self.J, self.D_inv)

    def generalized_force(self, points, forces, torque=None):
        """(53): ``Q̄ = Σ_k N̄ᵀ(ȳ_k) f̄_k + D̄⁻ᵀ [0, τ̄]``; ``points`` (B or N, K, 3) [L],
        ``forces`` (N, K, 3) body frame [M L/T²], ``torque`` (N, 3) body frame [M L²/T²]."""
        return generalized_force(points, forces, self.D_inv, torque)

    def acceleration(self, w, Q=None):
        """(79): ``ẇ̄ = M̄⁻¹ (Q̄ - Γ̄ w̄)``; ``w`` (N, 6) [L/T], ``Q`` (N, 6) [M L/T²] → (N, 6) [L/T²]."""
        rhs = -self.gamma_times_w(w)
        if Q is not None:
            rhs = rhs + Q
        return rot.matvec(self.M_inv, rhs)

    def inverse_tangent(self, n):
        """(72): ``T̄⁻¹_SE3(n) = T⁻¹_SE3(n) D̄⁻¹``; ``n`` (N, 6) [L, rad] → (N, 6, 6)."""
        return inverse_tangent_w(n, self.D_inv)

    def kinetic_energy(self, w):
        """``½ w̄ᵀ M̄ w̄`` (46) [M L²/T²], (N,); equals ``½ m Ū·Ū + ½ Ω̄·J̄ Ω̄``."""
        return 0.5 * (w * rot.matvec(self.M, w)).sum(axis=-1)


@dataclass
class ULVCState(BodyState):
    """Changing arrays of the ulvc scheme: ``R`` (N, 3, 3) [-], ``x`` (N, 3) [L] (so
    ``H = [[R, x], [0, 1]]`` (4)), ``w`` (N, 6) [L/T]; clock ``t`` [T] and ``step``."""

    R: object
    x: object
    w: object

    @property
    def H(self):
        """The SE(3) element (4): (N, 4, 4)."""
        xp = rot.array_module(self.R)
        top = xp.concatenate([self.R, self.x[..., None]], axis=-1)
        bottom = xp.zeros((self.R.shape[0], 1, 4))
        bottom[..., 0, 3] = 1.0
        return xp.concatenate([top, bottom], axis=-2)

    def velocities(self, bodies):
        """``(Ū, Ω̄)``, body frame, each (N, 3)."""
        return bodies.velocities(self.w)


@dataclass
class NewtonEulerState(BodyState):
    """Changing arrays of the reference scheme: ``R`` (N, 3, 3) [-], ``x`` (N, 3) [L],
    ``v`` (N, 3) spatial velocity of the centre of mass [L/T], ``Omega`` (N, 3) body
    angular velocity [1/T]; clock ``t`` [T] and ``step``."""

    R: object
    x: object
    v: object
    Omega: object

    def velocities(self, bodies):
        """``(Ū = Rᵀ v, Ω̄)``, body frame, each (N, 3)."""
        return rot.matvec_t(self.R, self.v), self.Omega


def to_newton_euler(bodies, state):
    """The :class:`NewtonEulerState` of a :class:`ULVCState` (``v = R D̄⁻¹ w̄`` part)."""
    U, Om = bodies.velocities(state.w)
    v = bodies.backend.asarray(rot.matvec(_host(state.R), _host(U)))  # on the host, as ULVCBodies.velocities
    return NewtonEulerState(R=state.R.copy(), x=state.x.copy(), v=v, Omega=Om.copy(), t=state.t,
                            step=state.step)  # fmt: skip


def from_newton_euler(bodies, state):
    """The :class:`ULVCState` of a :class:`NewtonEulerState` (``w̄ = D̄ [Rᵀ v, Ω̄]``)."""
    U, Om = state.velocities(bodies)
    return ULVCState(R=state.R.copy(), x=state.x.copy(), w=bodies.w_from_velocities(U, Om), t=state.t,
                     step=state.step)  # fmt: skip


# ------------------------------------------------------------------ diagnostics


def kinetic_energy(bodies, state):
    """``½ m Ū·Ū + ½ Ω̄·J̄ Ω̄`` [M L²/T²], (N,), for either state type."""
    U, Om = state.velocities(bodies)
    return 0.5 * bodies.mass * (U * U).sum(axis=-1) + 0.5 * (Om * rot.matvec(bodies.J, Om)).sum(axis=-1)


def linear_momentum(bodies, state):
    """Spatial linear momentum ``m R Ū`` [M L/T], (N, 3)."""
    U, _ = state.velocities(bodies)
    return bodies.mass[:, None] * rot.matvec(state.R, U)


def angular_momentum(bodies, state):
    """Spatial angular momentum about the origin, ``x × m R Ū + R J̄ Ω̄`` [M L²/T], (N, 3)."""
    _, Om = state.velocities(bodies)
    return rot.cross(state.x, linear_momentum(bodies, state)) + rot.matvec(state.R, rot.matvec(bodies.J, Om))


# ------------------------------------------------------------------------ loads


class PointLoads:
    """Forces at body points and pure torques, constant or scaled by ``scale(t)``.

    ``points``: (B, K, 3) body-frame application points relative to the centre of mass
    [L]; ``force_body``: (B, K, 3) follower forces, fixed in the body frame
    [M L/T²]; ``force_spatial``: (B, K, 3) dead loads, fixed in the spatial frame
    (gravity: ``m g`` at the point 0); ``torque_body``, ``torque_spatial``: (B, 3)
    [M L²/T²]; ``scale``: optional callable ``t → float`` multiplying every load.
    ``B`` is N or 1. Give at least one load.
    """

    def __init__(self, points=None, force_body=None, force_spatial=None, torque_body=None, torque_spatial=None,
                 scale=None, backend="cpu"):  # fmt: skip
        xp = resolve_backend(backend).xp
        self.xp = xp

        def arr(a, name, ndim):
            if a is None:
                return None
            a = xp.asarray(a, dtype=xp.float64)
            if a.ndim == ndim - 1:
                a = a[None]
            if a.ndim != ndim or a.shape[-1] != 3 or not bool(xp.isfinite(a).all()):
                shape = "(B, K, 3) or (K, 3)" if ndim == 3 else "(B, 3) or (3,)"
                raise ValueError(f"{name} must be finite with shape {shape}, got {tuple(a.shape)}")
            return a

        self.points = arr(points, "points", 3)
        self.force_body = arr(force_body, "force_body", 3)
        self.force_spatial = arr(force_spatial, "force_spatial", 3)
        self.torque_body = arr(torque_body, "torque_body", 2)
        self.torque_spatial = arr(torque_spatial, "torque_spatial", 2)
        if (self.force_body is not None or self.force_spatial is not None) and self.points is None:
            raise ValueError("points: forces need their application points")
        for name in ("force_body", "force_spatial"):
            f = getattr(self, name)
            if f is not None and f.shape[-2] != self.points.shape[-2]:
                raise ValueError(f"{name} must have one force per point ({self.points.shape[-2]}), got {f.shape[-2]}")
        if all(getattr(self, k) is None for k in ("force_body", "force_spatial", "torque_body", "torque_spatial")):
            raise ValueError("PointLoads needs at least one of force_body, force_spatial, torque_body, torque_spatial")
        if scale is not None and not callable(scale):
            raise ValueError("scale must be a callable t -> float")
        self.scale = scale

    def body_forces(self, t, R, x):
        """Loads at time ``t`` [T] for orientations ``R`` (N, 3, 3), positions ``x`` (N, 3):
        ``points`` (B, K, 3) [L] or ``None``, body-frame point forces (N, K, 3) or ``None``,
        body-frame torque (N, 3) or ``None``."""
        s = 1.0 if self.scale is None else float(self.scale(t))
        f = None
        if self.force_body is not None:
            f = s * self.force_body
        if self.force_spatial is not None:
            fs = s * (self.force_spatial[..., None, :] @ R[:, None])[..., 0, :]  # Rᵀ f per point
            f = fs if f is None else f + fs
        tau = None
        if self.torque_body is not None:
            tau = s * self.torque_body
        if self.torque_spatial is not None:
            ts = s * rot.matvec_t(R, self.torque_spatial)
            tau = ts if tau is None else tau + ts
        return self.points, f, tau


# --------------------------------------------------------------------- schemes


def _load_arrays(scheme, loads):
    """Kernel arrays of ``loads`` (:class:`PointLoads` or None): ``flags`` and
    ``points, fbody, fspat, tbody, tspat`` (dummies where a load is absent)."""
    xp, dt = scheme.xp, np.float64
    dummy3, dummy2 = xp.zeros((1, 1, 3), dtype=dt), xp.zeros((1, 3), dtype=dt)
    if loads is None:
        return 0, dummy3, dummy3, dummy3, dummy2, dummy2
    flags = 0
    arrays = []
    for bit, name, dummy in ((1, "force_body", dummy3), (2, "force_spatial", dummy3), (4, "torque_body", dummy2),
                             (8, "torque_spatial", dummy2)):  # fmt: skip
        a = getattr(loads, name)
        if a is not None:
            flags |= bit
            if a.shape[0] not in (1, scheme.n):
                raise ValueError(f"loads.{name}: has {a.shape[0]} rows, expected 1 or {scheme.n}")
            a = xp.ascontiguousarray(xp.asarray(a, dtype=dt))
        arrays.append(dummy if a is None else a)
    points = dummy3 if loads.points is None else xp.ascontiguousarray(xp.asarray(loads.points, dtype=dt))
    if points.shape[0] not in (1, scheme.n):
        raise ValueError(f"loads.points: has {points.shape[0]} rows, expected 1 or {scheme.n}")
    return (flags, points, *arrays)


class _ULVCScheme(Scheme):
    """Shared parts of :class:`LieGroupRK4` and :class:`NewtonEulerRK4`."""

    def __init__(self, bodies, loads=None):
        if not isinstance(bodies, ULVCBodies):
            raise ValueError(f"bodies must be a ULVCBodies, got {type(bodies).__name__}")
        if loads is not None and not isinstance(loads, PointLoads):
            raise ValueError("loads must be None or a PointLoads")
        self.bodies, self.loads, self.n = bodies, loads, bodies.n
        self._init_backend(bodies.backend)
        self._flags, *self._load_arrays = _load_arrays(self, loads)
        self._ones = self.backend.asarray(np.ones((self.max_block, 3)))

    def _scales(self, state, h, k):
        """(k, 3) load factors at ``t``, ``t + h/2``, ``t + h`` of each step (host-evaluated)."""
        if self.loads is None or self.loads.scale is None:
            return self._ones[:k]
        times = self._times(state, h, k, (0.0, 0.5, 1.0))
        return self.backend.asarray(np.array([[float(self.loads.scale(t)) for t in row] for row in times]))

    def _point_potential(self, state):
        """``-s(t) Σ_k f_k·(x + R y_k)`` of the spatial point forces (dead loads) [M L²/T²]."""
        xp = self.xp
        if self.loads is None or self.loads.force_spatial is None:
            return xp.zeros(self.n)
        s = 1.0 if self.loads.scale is None else float(self.loads.scale(state.t))
        pos = state.x[:, None, :] + (state.R[:, None] @ self.loads.points[..., None])[..., 0]
        return -s * (self.loads.force_spatial * pos).sum(axis=(-2, -1))

    def invariants(self, state):
        """``kinetic_energy`` (N,), ``energy`` = kinetic + potential of the dead point
        forces (conserved for constant dead loads) (N,) [M L²/T²], ``linear_momentum``,
        ``angular_momentum`` (N, 3) spatial, ``det_R_minus_1`` (N,)."""
        K = kinetic_energy(self.bodies, state)
        return {"kinetic_energy": K, "energy": K + self._point_potential(state),
                "linear_momentum": linear_momentum(self.bodies, state),
                "angular_momentum": angular_momentum(self.bodies, state),
                "det_R_minus_1": self.xp.linalg.det(state.R) - 1.0}  # fmt: skip

    def body_angular_velocity(self, state):
        return state.velocities(self.bodies)[1]


class LieGroupRK4(_ULVCScheme):
    """The RK4 Lie-group scheme (79)-(87) on SE(3) in unified local velocity coordinates.

    With ``f(H, w̄, t) = M̄⁻¹ (Q̄ - Γ̄ w̄)`` (79) and ``T̄⁻¹(n) = T⁻¹_SE3(n) D̄⁻¹`` (72)::

        K1 = h T̄⁻¹(0) w̄_i,                 k1 = h f(H_i, w̄_i, t_i)                       (82)
        K2 = h T̄⁻¹(½K1)(w̄_i + ½k1),        k2 = h f(H_i exp(½K1), w̄_i + ½k1, t_i + h/2)  (83)
        K3 = h T̄⁻¹(½K2)(w̄_i + ½k2),        k3 = h f(H_i exp(½K2), w̄_i + ½k2, t_i + h/2)  (84)
        K4 = h T̄⁻¹(K3)(w̄_i + k3),          k4 = h f(H_i exp(K3), w̄_i + k3, t_i + h)      (85)
        w̄_{i+1} = w̄_i + (k1 + 2k2 + 2k3 + k4)/6                                          (86)
        H_{i+1} = H_i exp_SE3((K1 + 2K2 + 2K3 + K4)/6)                                     (87)

    ``bodies``: the :class:`ULVCBodies`; ``loads``: ``None`` or a :class:`PointLoads`
    (body-frame point forces enter through (53)). ``stages``: ``"munthe-kaas"``
    (default) evaluates dead loads at the stage configurations shown; ``"paper"``
    evaluates them at ``H_i`` in every stage as (82)-(85) are printed, which is
    first-order accurate once the loads depend on the configuration (kept to show that).
    Without loads the two are identical. The per-body law is
    :func:`kernels.bodies_ulvc.build` (``ulvc_rk4_body``).

    Example::

        bodies = ULVCBodies(1.0, (5.2988, 1.1775, 4.3568), n=1000)
        rk4 = LieGroupRK4(bodies)
        s = rk4.state(Omega=[0.01, 0.0, 100.0])
        rk4.advance(s, 1e-4, 1000)
    """

    name = "ulvc rk4"
    state_type = ULVCState
    quantities = ("w", "R", "x")
    STAGES = ("munthe-kaas", "paper")

    def __init__(self, bodies, loads=None, stages="munthe-kaas"):
        if stages not in self.STAGES:
            raise ValueError(f"stages must be one of {self.STAGES}, got {stages!r}")
        super().__init__(bodies, loads)
        self.stages = stages

    def state(self, R=None, x=None, U=None, Omega=None):
        """A :class:`ULVCState` (see :meth:`ULVCBodies.state`)."""
        return self.bodies.state(R=R, x=x, U=U, Omega=Omega)

    def _launch(self, state, out, h, k, status, value):
        b = self.bodies
        self.kernels.ulvc_rk4(k, h, int(self.stages == "paper"), self._flags, self._scales(state, h, k), b.D,
                              b.D_inv, b.mass, b.J, b.J_inv, *self._load_arrays, state.R, state.x, state.w, out.R,
                              out.x, out.w, status, value)  # fmt: skip


class NewtonEulerRK4(_ULVCScheme):
    """Reference in standard coordinates: RK4 on the Newton-Euler equations with a
    Lie-group update of the rotation (the paper's comparison, Terze et al.'s "f1").

    ODE on ``(θ, x, v, Ω̄)`` with ``θ(t_i) = 0`` and ``R = R_i exp(θ)``::

        θ̇ = T⁻¹_SO3(θ) Ω̄,   ẋ = v,   m v̇ = R F̄,   J̄ Ω̇̄ = τ̄ - Ω̄ × J̄ Ω̄   (66)-(67)

    with ``F̄ = Σ f̄_k`` and ``τ̄ = Σ ȳ_k × f̄_k + τ̄_pure`` from the loads; classical RK4
    on it, then ``R_{i+1} = R_i exp(θ_{i+1})``. State: :class:`NewtonEulerState`.
    """

    name = "ulvc reference"
    state_type = NewtonEulerState
    quantities = ("Omega", "v", "R", "x")

    def state(self, R=None, x=None, U=None, Omega=None):
        """A :class:`NewtonEulerState` from the arguments of :meth:`ULVCBodies.state`."""
        return to_newton_euler(self.bodies, self.bodies.state(R=R, x=x, U=U, Omega=Omega))

    def _launch(self, state, out, h, k, status, value):
        b = self.bodies
        self.kernels.newton_euler_rk4(k, h, self._flags, self._scales(state, h, k), b.mass, b.J, b.J_inv,
                                      *self._load_arrays, state.R, state.x, state.v, state.Omega, out.R, out.x, out.v,
                                      out.Omega, status, value)  # fmt: skip
