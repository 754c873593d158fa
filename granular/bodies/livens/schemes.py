"""Livens-principle energy-momentum scheme (72) for constrained mechanical systems with
singular and configuration-dependent mass matrices, batched over N independent systems.

Paper 002 (Kinon & Betsch, Livens' principle, unit quaternions), Sects. 2.3, 4.1, 4.2,
5.1 and 5.2, eqs. (8), (17)-(23), (69)-(85), (106)-(112). The quaternion rigid body
(86)-(105) is in :mod:`granular.bodies.livens.rigid`, the comparators of Table 1 in
:mod:`granular.bodies.livens.comparators`, multibody systems (122)-(128) in
:mod:`granular.bodies.livens.multibody`.

Model (8), (19), (20)
---------------------
``n`` coordinates ``q``, ``m`` holonomic constraints ``g(q) = 0``, Lagrangian
``L(q, v) = T(q, v) - V(q)`` with ``T = ½ vᵀ M(q) v``; the mass matrix ``M`` is symmetric
positive semi-definite and may be singular and depend on ``q``. Livens' equations (19)::

    q̇ = v,   ṗ = ∂_q L(q, v) - ∇g(q)ᵀ λ,   p = ∂_v L(q, v) = M(q) v,   g(q) = 0

conserve the generalized energy (20) ``E(q, v, p) = p·v - T(q, v) + V(q)``.

Scheme (72), (74)
-----------------
With ``h`` the step, ``□_{n+½} = ½(□_n + □_{n+1})``, unknowns ``q_{n+1}, p_{n+1}, v_{n+1}, λ``::

    q_{n+1} - q_n = h v_{n+½}                                                (72a)
    p_{n+1} - p_n = h ∂̄_q L - h Σ_k λ_k ∇̄g_k                                 (72b)
    p_{n+½}       = ∂̄_v L                                                    (72c)
    g(q_{n+1})    = 0                                                        (72d)

conserves ``E^n = p_n·v_n - ½ v_n·M(q_n) v_n + V(q_n)`` (74) exactly (Proposition 4.4).
The Gonzalez discrete gradient (71) of ``f`` between ``x`` and ``y`` (``d = y - x``) is

    ∇̄f(x, y) = ∇f(½(x + y)) + [f(y) - f(x) - ∇f(½(x + y))·d] / |d|² · d           (71)

Partitioned discrete derivatives (Appendix A of the paper is missing from our copy; we
use the construction of the authors' public code, which satisfies (73)):

    ∂̄_q T = ½ [∇̄_q T(q_n, q_{n+1}; v_n) + ∇̄_q T(q_n, q_{n+1}; v_{n+1})]
    ∂̄_v T = ½ [∇̄_v T(v_n, v_{n+1}; q_n) + ∇̄_v T(v_n, v_{n+1}; q_{n+1})]
          = ½ (M(q_n) + M(q_{n+1})) v_{n+½}                                  (83)

where ``∇̄_x f(x_n, x_{n+1}; y)`` is (71) applied to ``x ↦ f(x, y)``; ``∂̄_q V = ∇̄V`` (71)
and ``∇̄g_k`` (71) for every constraint row. The sum of the two orderings makes
``∂̄_q T·Δq + ∂̄_v T·Δv = T(q_{n+1}, v_{n+1}) - T(q_n, v_n)`` exact (73).

Our choices (not in the paper)
------------------------------
* Small increments. (71) divides by ``|d|²``; its correction term is ``O(|d|²)`` while its
  rounding error is ``O(ε |f| / |d|)``. Below ``|d| = ε^{1/3} s`` (``ε`` the float64
  epsilon, ``s = max(‖x‖∞, ‖y‖∞)``, so ``|d| ≲ 6e-6 s``) the two are equal and the
  midpoint gradient is used instead; directionality then holds to ``O(|d|³) = O(ε)``,
  i.e. to round-off. (The authors' code switches at ``|d|² < 1e-9``.)
* The multipliers enter the Newton unknowns as ``λ̃ = h λ`` (units of momentum), so all
  unknowns of (72b) have the same units; :class:`LivensState` stores ``λ``.
* Consistent initial momenta ``p_0 = M(q_0) v_0``; the initial state must satisfy the
  constraints and the hidden constraints ``∇g(q_0) v_0 = 0`` (else ``ValueError``).

Newton: one ``(3n + m)``-dimensional system per body and step with its analytic
Jacobian, solved for all bodies together by :func:`granular.bodies.newton.solve`.
The predictor is ``(q_n + h v̄, p_n, 2 v̄ - v_n, h λ_n)`` with ``v̄ = (q_n - q_{n-1})/h`` the
last step's midpoint velocity (``v_0`` at the start): the node velocities may carry a
parasitic alternating component that the trajectory does not (see
:mod:`granular.bodies.livens.rigid`), and a predictor built on them degrades Newton.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...backend import resolve_backend
from ...rotations import array_module
from .. import newton
from ..core import BodyState, Scheme, check_step, count

__all__ = [
    "GONZALEZ_CUTOFF",
    "LivensState",
    "gonzalez_gradient",
    "gonzalez_jacobian",
    "ImplicitScheme",
    "MechanicalSystem",
    "LivensEM",
    "check_step",
    "as_rows",
]

#: Relative increment ``|d| / max(‖x‖∞, ‖y‖∞)`` below which (71) falls back to the
#: midpoint gradient: ``ε^{1/3}`` (see the module docstring).
GONZALEZ_CUTOFF = float(np.finfo(np.float64).eps) ** (1.0 / 3.0)


# ------------------------------------------------------------------------- helpers


def as_rows(xp, a, n, name, shape=()):
    """``a`` as an ``(n,) + shape`` float64 array, broadcasting a single ``shape`` value.

    ``ValueError`` naming ``name`` for any other shape or a non-finite entry.
    """
    arr = xp.asarray(a, dtype=xp.float64)
    if tuple(arr.shape) == tuple(shape):
        arr = xp.broadcast_to(arr, (n,) + tuple(shape))
    if tuple(arr.shape) != (n,) + tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} or ({n},) + {tuple(shape)}, got {tuple(arr.shape)}")
    if not bool(xp.isfinite(arr).all()):
        raise ValueError(f"{name} must be finite")
    return xp.ascontiguousarray(arr)


def _eye(xp, n):
    return xp.eye(n, dtype=xp.float64)


# -------------------------------------------------------------- discrete gradient (71)


def gonzalez_gradient(f0, f1, grad_mid, d, scale):
    """Gonzalez discrete gradient (71), batched over leading axes.

    f0, f1: (...,) float64, ``f(x)`` and ``f(y)`` [units of f].
    grad_mid: (..., n) float64, ``∇f(½(x + y))`` [f / units of x].
    d: (..., n) float64, ``y - x`` [units of x] (broadcast against ``grad_mid``).
    scale: (...,) float64, ``max(‖x‖∞, ‖y‖∞)`` for the small-increment cut-off
        (:data:`GONZALEZ_CUTOFF`).

    Returns ``(dg, c, use, dd)``: ``dg`` (..., n) the discrete gradient; ``c`` (...,) the
    correction coefficient ``[f(y) - f(x) - ∇f(½(x+y))·d]/|d|²`` (0 where the midpoint
    gradient is used); ``use`` (...,) bool, where the correction is applied; ``dd``
    (...,) ``|d|²`` (1 where not used). ``dg·d = f(y) - f(x)`` (69) to round-off.
    """
    xp = _xp(grad_mid)
    d = xp.broadcast_to(d, grad_mid.shape)
    dd = (d * d).sum(axis=-1)
    use = dd > (GONZALEZ_CUTOFF * scale) ** 2
    dd = xp.where(use, dd, 1.0)
    c = xp.where(use, (f1 - f0 - (grad_mid * d).sum(axis=-1)) / dd, 0.0)
    return grad_mid + c[..., None] * d, c, use, dd


def gonzalez_jacobian(c, use, dd, d, grad_mid, hess_mid, grad_1):
    """``∂∇̄f(x, y)/∂y`` of (71) for fixed ``x``, batched over leading axes.

    ``½ H(m) + c I + d ⊗ ∂c/∂y`` with ``∂c/∂y = [∇f(y) - ∇f(m) - ½ H(m) d - 2 c d] / |d|²``,
    ``m = ½(x + y)``; ``½ H(m)`` where the midpoint gradient is used. Arguments as returned
    by :func:`gonzalez_gradient` plus ``hess_mid`` (..., n, n) ``∇²f(m)`` and ``grad_1``
    (..., n) ``∇f(y)``. Returns (..., n, n).
    """
    xp = _xp(hess_mid)
    n = hess_mid.shape[-1]
    d = xp.broadcast_to(d, grad_mid.shape)
    hd = (hess_mid * d[..., None, :]).sum(axis=-1)
    dc = (grad_1 - grad_mid - 0.5 * hd - 2.0 * c[..., None] * d) / dd[..., None]
    dc = xp.where(use[..., None], dc, 0.0)
    return 0.5 * hess_mid + c[..., None, None] * _eye(xp, n) + d[..., :, None] * dc[..., None, :]


def _xp(a):
    return array_module(a)


# ----------------------------------------------------------------------------- state


@dataclass
class LivensState(BodyState):
    """What changes during a run of a Livens scheme (one row per system).

    q: (N, n) float64, coordinates ``q_n`` [units of q].
    v: (N, n) float64, independent velocities ``v_n`` [units of q / s].
    p: (N, n) float64, independent momenta ``p_n`` [units of M·v].
    lam: (N, m) float64, multipliers ``λ`` of the last step [units of p / (s · units of g)].
    v_half: (N, n) float64, midpoint velocity ``(q_n - q_{n-1})/h`` of the last step (``v_0``
        before the first), the predictor's velocity.
    iterations: (N,) int64, Newton iterations of the last step per system.
    iterations_total: (N,) int64, Newton iterations summed over all steps.
    extra: scheme-specific arrays (e.g. the multibody load's work), one row per system.
    t: time [T]. step: steps taken.
    """

    q: object
    v: object
    p: object
    lam: object
    v_half: object
    iterations: object
    iterations_total: object
    extra: dict = field(default_factory=dict)

    def copy(self) -> "LivensState":
        c = super().copy()
        c.extra = {k: a.copy() for k, a in self.extra.items()}
        return c


# ------------------------------------------------------------------ stepping base


class ImplicitScheme(Scheme):
    """Whole-array stepping of the Livens schemes written on arrays of a
    :class:`MechanicalSystem` (the general scheme (72) and the multibody closed loop):
    :meth:`step` assembles every system's residual and Jacobian as (N, k) and (N, k, k)
    arrays and calls :func:`granular.bodies.newton.solve`. The quaternion rigid bodies
    (:mod:`granular.bodies.livens.rigid`) use per-body kernels instead.

    Subclasses set ``n``, ``n_dof``, ``n_constraints``, ``xp``, ``backend``, ``rtol``,
    ``max_iter`` and define ``_prepare(state, h)`` (fills ``self._x0``), ``_residual(x)``
    and ``_finish(state, x, h)``.
    """

    scheme_name = "Livens"
    state_type = LivensState
    implicit = True
    energy_key = "generalized_energy"

    def _init_solver(self, backend, rtol, max_iter):
        self.backend = resolve_backend(backend)
        self.xp = self.backend.xp
        if not (isinstance(rtol, (int, float, np.floating)) and rtol > 0.0):
            raise ValueError(f"rtol: the Newton tolerance must be a number > 0, got {rtol!r}")
        self.rtol = float(rtol)
        if isinstance(max_iter, bool) or int(max_iter) != max_iter or max_iter < 1:
            raise ValueError(f"max_iter: the Newton iteration cap must be an integer >= 1, got {max_iter!r}")
        self.max_iter = int(max_iter)

    def _check_state(self, state):
        if tuple(state.q.shape) != (self.n, self.n_dof):
            raise ValueError(
                f"state: q has shape {tuple(state.q.shape)}, the scheme expects ({self.n}, {self.n_dof})"
            )

    def newton_system(self, state: LivensState, h: float):
        """Set up the nonlinear system of one step from ``state`` with step ``h`` [T].

        Returns ``(fun, x0)``: ``fun(x) -> (r, J)`` with ``x`` (N, k) the unknowns, ``r``
        (N, k) the residual and ``J`` (N, k, k) its analytic Jacobian (workspace buffers,
        overwritten by the next call); ``x0`` (N, k) the predictor. :meth:`step` passes
        them to :func:`granular.bodies.newton.solve`; tests use them to check the Jacobian.
        """
        h = check_step(h)
        self._check_state(state)
        self._h = h
        self._t0 = state.t
        self._prepare(state, h)
        return self._residual, self._x0

    def step(self, state: LivensState, h: float) -> LivensState:
        """Advance all systems by one step ``h`` [T] (> 0); ``state`` is updated in place.

        Raises :class:`~granular.bodies.newton.NewtonError` naming the first failed
        system and the step (the state is left untouched).
        """
        fun, x0 = self.newton_system(state, h)
        h = self._h
        ctx = f"{self.scheme_name} step {state.step + 1} at t = {state.t:.6g} s, h = {h:g} s"
        res = newton.solve(fun, x0, rtol=self.rtol, max_iter=self.max_iter, out=self._x, context=ctx,
                           step=state.step + 1, scheme=self.name)  # fmt: skip
        q_prev = state.q
        self._finish(state, res.x, h)
        state.v_half = (state.q - q_prev) / h
        state.tick(h)  # t = t0 + (step - step0) h, not a running sum
        state.iterations = res.iterations
        state.iterations_total = state.iterations_total + res.iterations
        return state

    def advance(self, state, h, steps):
        """``steps`` calls of :meth:`step` (the array schemes take one step at a time)."""
        for _ in range(count(steps, "steps", 0)):
            self.step(state, h)
        return state

    def _new_state(self, q, v, p, m):
        xp, n = self.xp, self.n
        z = xp.zeros(n, dtype=xp.int64)
        return LivensState(q, v, p, xp.zeros((n, m)), v.copy(), z, z.copy())

    @staticmethod
    def _midpoint_velocity(state):
        """``(q_n - q_{n-1})/h`` of the last step (``v_0`` before the first): the predictor's
        velocity. Unlike the node velocity ``v_n`` it carries no node-to-node alternating
        component (see :mod:`granular.bodies.livens.multibody`, "Parasitic node velocities")."""
        return state.v_half

    def _alloc(self, k):
        xp, n = self.xp, self.n
        self.k = k
        self._x0 = xp.zeros((n, k))
        self._x = xp.zeros((n, k))
        self._r = xp.zeros((n, k))
        self._jac = xp.zeros((n, k, k))


# ------------------------------------------------------------------ system interface


class MechanicalSystem:
    """N independent systems with the same structure: ``n`` coordinates, ``m`` constraints.

    Subclasses implement, batched over the first axis (``q``: (N, n) float64):

    * ``mass_matrix(q)`` (N, n, n) ``M(q)``; ``mass_matrix_derivative(q)`` (N, n, n, n),
      ``[b, i, j, k] = ∂M_ij/∂q_k``; ``mass_matrix_second_derivative(q)`` (N, n, n, n, n),
      ``∂²M_ij/∂q_k∂q_l``;
    * ``potential(q)`` (N,), ``potential_gradient(q)`` (N, n), ``potential_hessian(q)``
      (N, n, n);
    * ``constraints(q)`` (N, m), ``constraint_jacobian(q)`` (N, m, n),
      ``constraint_hessian(q)`` (N, m, n, n).

    The defaults are ``V = 0`` and no constraints. Attributes: ``n_systems`` (N),
    ``n_dof`` (n), ``n_constraints`` (m), ``backend``, ``xp``.
    """

    n_dof = 0
    n_constraints = 0

    def __init__(self, n_systems, backend="cpu"):
        if isinstance(n_systems, bool) or int(n_systems) != n_systems or n_systems < 1:
            raise ValueError(f"n_systems must be a positive integer, got {n_systems!r}")
        self.n_systems = int(n_systems)
        self.backend = resolve_backend(backend)
        self.xp = self.backend.xp

    def _param(self, value, name, positive=True):
        arr = as_rows(self.xp, value, self.n_systems, name)
        if positive and not bool((arr > 0.0).all()):
            raise ValueError(f"{name} must be > 0")
        return arr

    def potential(self, q):
        return self.xp.zeros(q.shape[0])

    def potential_gradient(self, q):
        return self.xp.zeros_like(q)

    def potential_hessian(self, q):
        return self.xp.zeros(q.shape + (q.shape[1],))

    def constraints(self, q):
        return self.xp.zeros((q.shape[0], 0))

    def constraint_jacobian(self, q):
        return self.xp.zeros((q.shape[0], 0, q.shape[1]))

    def constraint_hessian(self, q):
        return self.xp.zeros((q.shape[0], 0, q.shape[1], q.shape[1]))

    def kinetic_energy(self, q, v):
        """``T = ½ vᵀ M(q) v`` (8): (N,)."""
        return 0.5 * (v * (self.mass_matrix(q) @ v[..., None])[..., 0]).sum(axis=-1)


# ------------------------------------------------------------------- the scheme (72)


class LivensEM(ImplicitScheme):
    """Energy-momentum scheme (72) of Livens' equations for a :class:`MechanicalSystem`.

    Parameters
    ----------
    system: the batched :class:`MechanicalSystem` (N systems, n coordinates, m constraints).
    rtol: Newton relative tolerance (see :mod:`granular.bodies.newton`), > 0.
    max_iter: Newton iteration cap.

    Conserves the generalized energy (74) exactly (Proposition 4.4) and satisfies the
    constraints at every node (72d). Example (Sect. 5.1)::

        sys = RedundantMassSpring(n_systems=1)
        em = LivensEM(sys)
        s = em.state([0.0, 1.1, 0.0], [1.0, 1.0, -1.0])
        em.run(s, 0.1, 100)
    """

    scheme_name = "Livens EM (72)"
    name = "livens general"

    def __init__(self, system: MechanicalSystem, *, rtol=1e-10, max_iter=25):
        if not isinstance(system, MechanicalSystem):
            raise ValueError(f"system must be a MechanicalSystem, got {type(system).__name__}")
        self.system = system
        self._init_solver(system.backend, rtol, max_iter)
        self.n = system.n_systems
        self.n_dof = system.n_dof
        self.n_constraints = system.n_constraints
        self._alloc(3 * self.n_dof + self.n_constraints)

    def state(self, q, v, t=0.0, tol=1e-10) -> LivensState:
        """Initial state ``(q_0, v_0, p_0 = M(q_0) v_0, λ = 0)``.

        q: (n,) or (N, n) float64 [units of q]; v: (n,) or (N, n) [units of q / s].
        The constraints ``|g(q_0)|`` and hidden constraints ``|∇g(q_0) v_0|`` must be
        below ``tol`` (relative to ``1 + ‖v_0‖∞`` for the latter).
        """
        xp, n, nd = self.xp, self.n, self.n_dof
        q = as_rows(xp, q, n, "q", (nd,))
        v = as_rows(xp, v, n, "v", (nd,))
        if self.n_constraints:
            g = abs(self.system.constraints(q)).max(axis=1)
            bad = g > tol
            if bool(bad.any()):
                b = int(xp.nonzero(bad)[0][0])
                raise ValueError(f"q: system {b} violates the constraints, max |g(q)| = {float(g[b]):.3e} > tol {tol:g}")
            gv = abs((self.system.constraint_jacobian(q) @ v[..., None])[..., 0]).max(axis=1)
            bad = gv > tol * (1.0 + abs(v).max(axis=1))
            if bool(bad.any()):
                b = int(xp.nonzero(bad)[0][0])
                raise ValueError(
                    f"v: system {b} violates the hidden constraints, max |∇g(q) v| = {float(gv[b]):.3e} (5)"
                )
        p = (self.system.mass_matrix(q) @ v[..., None])[..., 0]
        s = self._new_state(q.copy(), v.copy(), p, self.n_constraints)
        s.t = float(t)
        return s

    # -------------------------------------------------------------- assembly
    def _prepare(self, state, h):
        sysm, nd = self.system, self.n_dof
        self._q0, self._v0, self._p0 = state.q, state.v, state.p
        self._M0 = sysm.mass_matrix(state.q)
        self._V0 = sysm.potential(state.q)
        self._g0 = sysm.constraints(state.q)
        self._s0 = abs(state.q).max(axis=1)
        x0 = self._x0
        vh = self._midpoint_velocity(state)
        x0[:, :nd] = state.q + h * vh
        x0[:, nd : 2 * nd] = state.p
        x0[:, 2 * nd : 3 * nd] = 2.0 * vh - state.v
        x0[:, 3 * nd :] = h * state.lam

    def _discrete_derivatives(self, q1, v1, want_jacobian=True):
        """(72b)-(72c) ingredients at the iterate; see :meth:`_residual`."""
        xp, sysm = self.xp, self.system
        q0, v0 = self._q0, self._v0
        qm, d = 0.5 * (q0 + q1), q1 - q0
        scale = xp.maximum(self._s0, abs(q1).max(axis=1))
        M0, M1 = self._M0, sysm.mass_matrix(q1)
        dMm, dM1 = sysm.mass_matrix_derivative(qm), sysm.mass_matrix_derivative(q1)
        W = xp.stack([v0, v1], axis=1)  # (N, 2, n): the two velocities of the partition
        f0 = 0.5 * xp.einsum("bwi,bij,bwj->bw", W, M0, W)
        f1 = 0.5 * xp.einsum("bwi,bij,bwj->bw", W, M1, W)
        gm = 0.5 * xp.einsum("bwi,bijk,bwj->bwk", W, dMm, W)
        dgT, cT, useT, ddT = gonzalez_gradient(f0, f1, gm, d[:, None, :], scale[:, None])
        out = {"qm": qm, "d": d, "M1": M1, "dT": 0.5 * (dgT[:, 0] + dgT[:, 1])}
        V1 = sysm.potential(q1)
        gVm = sysm.potential_gradient(qm)
        out["dV"], cV, useV, ddV = gonzalez_gradient(self._V0, V1, gVm, d, scale)
        g1 = sysm.constraints(q1)
        Gm = sysm.constraint_jacobian(qm)
        out["g1"] = g1
        out["dg"], cg, useg, ddg = gonzalez_gradient(self._g0, g1, Gm, d[:, None, :], scale[:, None])
        if not want_jacobian:
            return out
        d2Mm = sysm.mass_matrix_second_derivative(qm)
        Hm = 0.5 * xp.einsum("bwi,bijkl,bwj->bwkl", W, d2Mm, W)
        g1T = 0.5 * xp.einsum("bwi,bijk,bwj->bwk", W, dM1, W)
        JT = gonzalez_jacobian(cT, useT, ddT, d[:, None, :], gm, Hm, g1T)  # (N, 2, n, n)
        out["dT_dq1"] = 0.5 * (JT[:, 0] + JT[:, 1])
        # ∂/∂v1 of ∇̄_q T(q_n, q_{n+1}; v1): A + d ⊗ ∂c/∂v1 with A_kj = Σ_i ∂M_ij/∂q_k(m) v1_i
        A = xp.einsum("bi,bijk->bkj", v1, dMm)
        Dv = xp.einsum("bijk,bk->bij", dMm, d)
        dc = (((M1 - M0) - Dv) @ v1[..., None])[..., 0] / ddT[:, 1, None]
        dc = xp.where(useT[:, 1, None], dc, 0.0)
        out["dT_dv1"] = 0.5 * (A + d[:, :, None] * dc[:, None, :])
        out["dV_dq1"] = gonzalez_jacobian(
            cV, useV, ddV, d, gVm, sysm.potential_hessian(qm), sysm.potential_gradient(q1)
        )
        G1 = sysm.constraint_jacobian(q1)
        out["G1"] = G1
        out["dg_dq1"] = gonzalez_jacobian(
            cg, useg, ddg, d[:, None, :], Gm, sysm.constraint_hessian(qm), G1
        )  # (N, m, n, n)
        out["dM1"] = dM1
        return out

    def _residual(self, x):
        """Residual of (72a)-(72d) with ``λ̃ = hλ`` and its Jacobian, for all systems.

        Rows: ``q1 - q0 - h v̄`` (n); ``p1 - p0 - h ∂̄_qT + h ∇̄V + Σ λ̃_k ∇̄g_k`` (n);
        ``p̄ - ½(M0 + M1) v̄`` (n); ``g(q1)`` (m).
        """
        xp, nd, h = self.xp, self.n_dof, self._h
        r, jac = self._r, self._jac
        q1, p1, v1, lt = x[:, :nd], x[:, nd : 2 * nd], x[:, 2 * nd : 3 * nd], x[:, 3 * nd :]
        q0, v0, p0 = self._q0, self._v0, self._p0
        vm = 0.5 * (v0 + v1)
        o = self._discrete_derivatives(q1, v1)
        Msum = self._M0 + o["M1"]
        a, b, c, e = slice(0, nd), slice(nd, 2 * nd), slice(2 * nd, 3 * nd), slice(3 * nd, None)
        r[:, a] = q1 - q0 - h * vm
        r[:, b] = p1 - p0 - h * o["dT"] + h * o["dV"] + xp.einsum("bk,bki->bi", lt, o["dg"])
        r[:, c] = 0.5 * (p0 + p1) - 0.5 * (Msum @ vm[..., None])[..., 0]
        r[:, e] = o["g1"]
        eye = _eye(xp, nd)
        jac.fill(0.0)
        jac[:, a, a] = eye
        jac[:, a, c] = -0.5 * h * eye
        jac[:, b, a] = -h * o["dT_dq1"] + h * o["dV_dq1"] + xp.einsum("bk,bkij->bij", lt, o["dg_dq1"])
        jac[:, b, b] = eye
        jac[:, b, c] = -h * o["dT_dv1"]
        jac[:, b, e] = o["dg"].swapaxes(1, 2)
        jac[:, c, a] = -0.5 * xp.einsum("bijk,bj->bik", o["dM1"], vm)
        jac[:, c, b] = 0.5 * eye
        jac[:, c, c] = -0.25 * Msum
        jac[:, e, a] = o["G1"]
        return r, jac

    def _finish(self, state, x, h):
        nd = self.n_dof
        state.q = x[:, :nd].copy()
        state.p = x[:, nd : 2 * nd].copy()
        state.v = x[:, 2 * nd : 3 * nd].copy()
        state.lam = x[:, 3 * nd :] / h

    # ---------------------------------------------------------- diagnostics
    def invariants(self, state):
        """``generalized_energy`` (74), ``total_energy`` (80), ``constraint_residual``,
        ``hidden_constraint_residual``, ``fiber_residual``: (N,) each."""
        return {"generalized_energy": self.generalized_energy(state), "total_energy": self.total_energy(state),
                "constraint_residual": self.constraint_residual(state),
                "hidden_constraint_residual": self.hidden_constraint_residual(state),
                "fiber_residual": self.fiber_residual(state)}  # fmt: skip

    def generalized_energy(self, state):
        """``E^n = p·v - ½ v·M(q) v + V(q)`` (74): (N,) [M L²/T²]."""
        T = self.system.kinetic_energy(state.q, state.v)
        return (state.p * state.v).sum(axis=1) - T + self.system.potential(state.q)

    def total_energy(self, state):
        """``E_tot = ½ v·M(q) v + V(q)`` (80): (N,) [M L²/T²]; equals (74) only for constant M."""
        return self.system.kinetic_energy(state.q, state.v) + self.system.potential(state.q)

    def constraint_residual(self, state):
        """``max_k |g_k(q)|`` (72d): (N,) [units of g]; 0 without constraints."""
        g = self.system.constraints(state.q)
        return abs(g).max(axis=1) if g.shape[1] else self.xp.zeros(self.n)

    def hidden_constraint_residual(self, state):
        """``max_k |∇g_k(q) v|`` (5) at the nodes: (N,); not enforced by (72) at the nodes."""
        G = self.system.constraint_jacobian(state.q)
        return abs((G @ state.v[..., None])[..., 0]).max(axis=1) if G.shape[1] else self.xp.zeros(self.n)

    def fiber_residual(self, state):
        """``max |p - M(q) v|`` at the nodes: (N,); nonzero in general (Proposition 4.6)."""
        return abs(state.p - (self.system.mass_matrix(state.q) @ state.v[..., None])[..., 0]).max(axis=1)
