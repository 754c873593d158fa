"""Array reference of paper 001's schemes (the package's implementation before the
per-body kernels): :class:`LieGroupRK4` and :class:`NewtonEulerRK4` on whole (N, ...)
arrays, ``step(bodies, state, h)``. Models, states and loads come from
:mod:`granular.bodies.ulvc`."""

from __future__ import annotations

import operator

from granular import rotations as rot
from granular.bodies.ulvc.coordinates import generalized_force
from granular.bodies.ulvc.schemes import check_step
from granular.particles.integrators import NonFiniteError
from granular.rotations import matvec as _mv
from granular.rotations import matvec_t as _tmv

# --------------------------------------------------------------------- integrators


def _check_finite(xp, state_step, **arrays):
    """Raise :class:`NonFiniteError` naming the first body with a NaN or infinity."""
    for name, a in arrays.items():
        ok = xp.isfinite(a).reshape(a.shape[0], -1).all(axis=1)
        if not bool(ok.all()):
            body = int(xp.argmin(ok.astype(xp.int8)))
            raise NonFiniteError(
                f"step {state_step}: non-finite {name} for body {body}; the state is unchanged",
                step=state_step, particle=body, value=name,
            )  # fmt: skip


def _count(k, name, low):
    try:
        k = operator.index(k)
    except TypeError:
        raise ValueError(f"{name} must be an int >= {low}, got {k!r}") from None
    if k < low:
        raise ValueError(f"{name} must be an int >= {low}, got {k!r}")
    return k


class _RK4Base:
    def __init__(self, loads=None):
        if loads is not None and not hasattr(loads, "body_forces"):
            raise ValueError("loads must be None or have a body_forces(t, R, x) method (see PointLoads)")
        self.loads = loads

    def run(self, bodies, state, h, steps, callback=None, every=1):
        """Take ``steps`` steps of size ``h``; call ``callback(state)`` after every ``every``-th."""
        h = check_step(h)
        steps, every = _count(steps, "steps", 0), _count(every, "every", 1)
        for k in range(1, steps + 1):
            self.step(bodies, state, h)
            if callback is not None and k % every == 0:
                callback(state)
        return state


class LieGroupRK4(_RK4Base):
    """The RK4 Lie-group scheme (79)-(87) on SE(3) in unified local velocity coordinates.

    With ``f(H, w̄, t) = M̄⁻¹ (Q̄ - Γ̄ w̄)`` (79) and ``T̄⁻¹(n) = T⁻¹_SE3(n) D̄⁻¹`` (72)::

        K1 = h T̄⁻¹(0) w̄_i,                 k1 = h f(H_i, w̄_i, t_i)                       (82)
        K2 = h T̄⁻¹(½K1)(w̄_i + ½k1),        k2 = h f(H_i exp(½K1), w̄_i + ½k1, t_i + h/2)  (83)
        K3 = h T̄⁻¹(½K2)(w̄_i + ½k2),        k3 = h f(H_i exp(½K2), w̄_i + ½k2, t_i + h/2)  (84)
        K4 = h T̄⁻¹(K3)(w̄_i + k3),          k4 = h f(H_i exp(K3), w̄_i + k3, t_i + h)      (85)
        w̄_{i+1} = w̄_i + (k1 + 2k2 + 2k3 + k4)/6                                          (86)
        H_{i+1} = H_i exp_SE3((K1 + 2K2 + 2K3 + K4)/6)                                     (87)

    ``loads``: ``None`` or a :class:`PointLoads`-like object; its body-frame point forces
    enter through (53). ``stages``: ``"munthe-kaas"`` (default) evaluates the loads at
    the stage configurations shown; ``"paper"`` evaluates them at ``H_i`` in every stage
    as (82)-(85) are printed, which is first-order accurate once the loads depend on the
    configuration (kept to show that). Without loads the two are identical and the
    stage configurations are not computed.
    """

    STAGES = ("munthe-kaas", "paper")

    def __init__(self, loads=None, stages="munthe-kaas"):
        super().__init__(loads)
        if stages not in self.STAGES:
            raise ValueError(f"stages must be one of {self.STAGES}, got {stages!r}")
        self.stages = stages

    def _accel(self, bodies, t, R, x, w):
        Q = None
        if self.loads is not None:
            points, f, tau = self.loads.body_forces(t, R, x)
            if f is not None:
                Q = generalized_force(points, f, bodies.D_inv, tau)
            elif tau is not None:
                xp = bodies.xp
                Q = _tmv(bodies.D_inv, xp.concatenate([xp.zeros_like(tau), tau], axis=-1))
        return bodies.acceleration(w, Q)

    def _stage(self, R, x, n):
        if self.loads is None or self.stages == "paper":
            return R, x
        dR, dx = rot.se3_exp_parts(n)
        return R @ dR, x + _mv(R, dx)

    def step(self, bodies, state, h):
        """Advance ``state`` (a :class:`ULVCState`) by one step ``h`` [T], in place."""
        h = check_step(h)
        Dinv = bodies.D_inv
        R, x, w, t = state.R, state.x, state.w, state.t
        dexpinv = rot.se3_tangent_inv_apply
        k1 = h * self._accel(bodies, t, R, x, w)
        K1 = h * _mv(Dinv, w)
        w2 = w + 0.5 * k1
        K2 = h * dexpinv(0.5 * K1, _mv(Dinv, w2))
        k2 = h * self._accel(bodies, t + 0.5 * h, *self._stage(R, x, 0.5 * K1), w2)
        w3 = w + 0.5 * k2
        K3 = h * dexpinv(0.5 * K2, _mv(Dinv, w3))
        k3 = h * self._accel(bodies, t + 0.5 * h, *self._stage(R, x, 0.5 * K2), w3)
        w4 = w + k3
        K4 = h * dexpinv(K3, _mv(Dinv, w4))
        k4 = h * self._accel(bodies, t + h, *self._stage(R, x, K3), w4)
        w_new = w + (k1 + 2.0 * k2 + 2.0 * k3 + k4) / 6.0
        dR, dx = rot.se3_exp_parts((K1 + 2.0 * K2 + 2.0 * K3 + K4) / 6.0)
        x_new, R_new = x + _mv(R, dx), R @ dR
        _check_finite(bodies.xp, state.step + 1, w=w_new, R=R_new, x=x_new)
        state.x, state.R, state.w = x_new, R_new, w_new
        state.t = t + h
        state.step += 1
        return state


class NewtonEulerRK4(_RK4Base):
    """Reference in standard coordinates: RK4 on the Newton-Euler equations with a
    Lie-group update of the rotation (the paper's comparison, Terze et al.'s "f1").

    ODE on ``(θ, x, v, Ω̄)`` with ``θ(t_i) = 0`` and ``R = R_i exp(θ)``::

        θ̇ = T⁻¹_SO3(θ) Ω̄,   ẋ = v,   m v̇ = R F̄,   J̄ Ω̇̄ = τ̄ - Ω̄ × J̄ Ω̄   (66)-(67)

    with ``F̄ = Σ f̄_k`` and ``τ̄ = Σ ȳ_k × f̄_k + τ̄_pure`` from the loads; classical RK4
    on it, then ``R_{i+1} = R_i exp(θ_{i+1})``.
    """

    def _rates(self, bodies, t, R, x, v, Om):
        xp = bodies.xp
        torque = -rot.cross(Om, _mv(bodies.J, Om))
        acc = xp.zeros_like(v)
        if self.loads is not None:
            points, f, tau = self.loads.body_forces(t, R, x)
            if f is not None:
                acc = _mv(R, f.sum(axis=-2)) / bodies.mass[:, None]
                torque = torque + rot.cross(xp.broadcast_to(points, f.shape), f).sum(axis=-2)
            if tau is not None:
                torque = torque + tau
        return acc, _mv(bodies.J_inv, torque)

    def step(self, bodies, state, h):
        """Advance ``state`` (a :class:`NewtonEulerState`) by one step ``h`` [T], in place."""
        h = check_step(h)
        R, x, v, Om, t = state.R, state.x, state.v, state.Omega, state.t

        def kin(theta, Om_s):
            return _mv(rot.so3_tangent_inv(theta), Om_s)

        def rot_at(theta):
            return R if self.loads is None else R @ rot.so3_exp(theta)

        a1, b1 = self._rates(bodies, t, R, x, v, Om)
        th1, x1, v1, o1 = h * Om, h * v, h * a1, h * b1
        a2, b2 = self._rates(bodies, t + 0.5 * h, rot_at(0.5 * th1), x + 0.5 * x1, v + 0.5 * v1, Om + 0.5 * o1)
        th2, x2, v2, o2 = h * kin(0.5 * th1, Om + 0.5 * o1), h * (v + 0.5 * v1), h * a2, h * b2
        a3, b3 = self._rates(bodies, t + 0.5 * h, rot_at(0.5 * th2), x + 0.5 * x2, v + 0.5 * v2, Om + 0.5 * o2)
        th3, x3, v3, o3 = h * kin(0.5 * th2, Om + 0.5 * o2), h * (v + 0.5 * v2), h * a3, h * b3
        a4, b4 = self._rates(bodies, t + h, rot_at(th3), x + x3, v + v3, Om + o3)
        th4, x4, v4, o4 = h * kin(th3, Om + o3), h * (v + v3), h * a4, h * b4
        comb = lambda p, q, r, s: (p + 2.0 * q + 2.0 * r + s) / 6.0  # noqa: E731
        Om_new, v_new = Om + comb(o1, o2, o3, o4), v + comb(v1, v2, v3, v4)
        x_new, R_new = x + comb(x1, x2, x3, x4), R @ rot.so3_exp(comb(th1, th2, th3, th4))
        _check_finite(bodies.xp, state.step + 1, Omega=Om_new, v=v_new, R=R_new, x=x_new)
        state.x, state.v, state.Omega, state.R = x_new, v_new, Om_new, R_new
        state.t = t + h
        state.step += 1
        return state
