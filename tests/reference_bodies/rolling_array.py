"""Array reference of paper 004's integrators (the package's implementation before the
per-ball kernels): ``RK4().step(system, state, h)`` and
``DormandPrince(...).run(system, state, t_end)`` on whole (N, d) arrays, for the rolling
ball and the rolling disk of :mod:`granular.bodies`.

Batched explicit integrators for the rolling ball and the rolling disk (paper 004).

Both act on a *system* with ``rhs(t, y)`` (``y``: (N, d) float64, ``t``: float or (N,)
[T]), ``project(y)`` (in-place projection after a step: the quaternion renormalisation
of :class:`~granular.bodies.rolling_ball.RollingBall`, nothing for the disk), ``n`` and
``xp``; and on a state with ``y``, ``t``, ``step`` (:class:`RollingBallState`,
:class:`~granular.bodies.rolling_ball.disk.RollingDiskState`).

* :class:`RK4`: classical fourth-order Runge-Kutta, one common step ``h`` for all balls;
  the state is projected after each step (``q ← q/|q|``; renormalising an O(h⁵)
  deviation keeps the order).
* :class:`DormandPrince`: the embedded Runge-Kutta pair of Dormand & Prince, 5(4), FSAL,
  with error control **per ball**: every ball has its own time ``t_i`` and step ``h_i``;
  all balls are evaluated together in each stage (one batched right-hand side with a
  (N,) time), each ball accepts or rejects its own step from its own error norm
  ``‖e_i‖ = rms_k(e_ik / (atol + rtol max(|y_ik|, |ŷ_ik|)))`` and adapts ``h_i`` by
  ``h ← h min(fac_max, max(fac_min, 0.9 ‖e‖^(-1/5)))`` (``fac_max = 1`` right after a
  rejection). Balls that have reached the target time take steps of size 0 (no-ops)
  until the others arrive, so every output time is hit exactly by every ball. The
  5th-order solution is propagated (local extrapolation) and projected before the FSAL
  stage is evaluated.

Failures raise :class:`~granular.particles.integrators.NonFiniteError` (a NaN or infinity, naming
the ball and the quantity) or :class:`~granular.particles.integrators.IntegrationError` (step-size
underflow, too many steps), leaving the state as it was before the step (RK4) or at the
last completed output time (Dormand-Prince).
"""

from __future__ import annotations

import math
import operator

from granular.particles.integrators import IntegrationError, NonFiniteError

__all__ = ["RK4", "DormandPrince", "rk4_step", "check_step", "DOPRI5"]


def check_step(h) -> float:
    """``h`` as a float; ``ValueError`` unless it is finite and > 0."""
    try:
        h = float(h)
    except (TypeError, ValueError):
        raise ValueError(f"h: the time step must be a number, got {h!r}") from None
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"h: the time step must be finite and > 0, got {h!r}")
    return h


def _count(k, name, low):
    try:
        k = operator.index(k)
    except TypeError:
        raise ValueError(f"{name}: must be an int >= {low}, got {k!r}") from None
    if k < low:
        raise ValueError(f"{name}: must be an int >= {low}, got {k!r}")
    return k


def _column_name(system, col):
    names = getattr(system, "columns", None)
    return names[col] if names is not None and col < len(names) else f"column {col}"


def _check_finite(system, y, step):
    xp = system.xp
    ok = xp.isfinite(y)
    if not bool(ok.all()):
        bad = xp.argwhere(~ok)[0]
        ball, col = int(bad[0]), int(bad[1])
        raise NonFiniteError(
            f"step {step}: non-finite {_column_name(system, col)} for ball {ball}; the state is unchanged",
            step=step, particle=ball, value=_column_name(system, col),
        )  # fmt: skip


def rk4_step(f, t, y, h):
    """One classical RK4 step of ``ẏ = f(t, y)``: returns ``y(t + h)`` (no projection)."""
    k1 = f(t, y)
    k2 = f(t + 0.5 * h, y + (0.5 * h) * k1)
    k3 = f(t + 0.5 * h, y + (0.5 * h) * k2)
    k4 = f(t + h, y + h * k3)
    return y + (h / 6.0) * (k1 + 2.0 * (k2 + k3) + k4)


class RK4:
    """Classical RK4 with a common step ``h`` and projection after each step."""

    def step(self, system, state, h):
        """Advance ``state`` by ``h`` [T] in place; returns it."""
        h = check_step(h)
        y_new = system.project(rk4_step(system.rhs, state.t, state.y, h))
        _check_finite(system, y_new, state.step + 1)
        state.y = y_new
        state.t = state.t + h
        state.step += 1
        return state

    def run(self, system, state, h, steps, callback=None, every=1):
        """Take ``steps`` steps of size ``h``; call ``callback(state)`` after every ``every``-th."""
        h = check_step(h)
        steps, every = _count(steps, "steps", 0), _count(every, "every", 1)
        t0, s0 = state.t, state.step
        for k in range(1, steps + 1):
            self.step(system, state, h)
            state.t = t0 + k * h  # no accumulation of round-off in the clock
            if callback is not None and k % every == 0:
                callback(state)
        assert state.step == s0 + steps
        return state


# Dormand & Prince (1980), RK5(4)7FM: nodes c, matrix a, 5th-order weights b, and
# e = b - b̂ (difference to the embedded 4th-order weights).
DOPRI5 = {
    "c": (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    "a": (
        (),
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
        (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    ),
    "b": (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0),
    "e": (71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40),
}


class DormandPrince:
    """Adaptive Dormand-Prince 5(4) with a per-ball step (see the module docstring).

    ``rtol``, ``atol``: tolerances (> 0); ``h0``: first step [T] (default: Hairer's
    starting-step heuristic per ball); ``h_max``: largest step [T]; ``max_steps``: most
    step attempts per :meth:`run`; ``safety``, ``fac_min``, ``fac_max``: controller.
    After a run, ``stats`` holds ``accepted`` and ``rejected`` (N,) host arrays and
    ``evaluations`` (batched right-hand-side calls).
    """

    def __init__(self, rtol=1e-8, atol=1e-10, h0=None, h_max=math.inf, max_steps=1_000_000, safety=0.9,
                 fac_min=0.2, fac_max=5.0):  # fmt: skip
        for name, v in (("rtol", rtol), ("atol", atol)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: must be a finite number > 0, got {v!r}")
        if h0 is not None:
            h0 = check_step(h0)
        if not (isinstance(h_max, (int, float)) and h_max > 0):
            raise ValueError(f"h_max: must be > 0, got {h_max!r}")
        if not (0 < safety < 1 and 0 < fac_min < 1 < fac_max):
            raise ValueError("safety must be in (0, 1), fac_min in (0, 1) and fac_max > 1")
        self.rtol, self.atol, self.h0, self.h_max = float(rtol), float(atol), h0, float(h_max)
        self.max_steps = _count(max_steps, "max_steps", 1)
        self.safety, self.fac_min, self.fac_max = safety, fac_min, fac_max
        self.stats = {}

    def _norm(self, xp, e, y, y_new):
        sc = self.atol + self.rtol * xp.maximum(xp.abs(y), xp.abs(y_new))
        return xp.sqrt(((e / sc) ** 2).mean(axis=1))

    def _initial_step(self, system, t, y, f0):
        xp = system.xp
        sc = self.atol + self.rtol * xp.abs(y)
        d0 = xp.sqrt(((y / sc) ** 2).mean(axis=1))
        d1 = xp.sqrt(((f0 / sc) ** 2).mean(axis=1))
        h0 = xp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / xp.maximum(d1, 1e-300))
        y1 = y + h0[:, None] * f0
        f1 = system.rhs(t + h0, y1)
        d2 = xp.sqrt((((f1 - f0) / sc) ** 2).mean(axis=1)) / h0
        dm = xp.maximum(d1, d2)
        h1 = xp.where(dm <= 1e-15, xp.maximum(1e-6, h0 * 1e-3), (0.01 / xp.maximum(dm, 1e-300)) ** 0.2)
        return xp.minimum(xp.minimum(100.0 * h0, h1), self.h_max)

    def run(self, system, state, t_end, callback=None, times=None):
        """Integrate every ball from ``state.t`` to ``t_end`` [T], in place.

        ``times``: optional increasing output times in ``(state.t, t_end]``; every ball
        reaches each exactly and ``callback(state)`` is called there (and at ``t_end``).
        ``state.step`` counts the completed output segments (the balls' own step counts
        differ; they are in ``stats``).
        """
        xp = system.xp
        t_end = float(t_end)
        if not (math.isfinite(t_end) and t_end > state.t):
            raise ValueError(f"t_end: must be finite and > state.t = {state.t}, got {t_end!r}")
        targets = [t_end] if times is None else [float(v) for v in times]
        if any(not (b > a) for a, b in zip([state.t] + targets, targets)) or abs(targets[-1] - t_end) > 0:
            raise ValueError("times: must increase strictly from state.t and end at t_end")
        n = system.n
        y = state.y.copy()
        t = xp.full((n,), float(state.t))
        k1 = system.rhs(t, y)
        evals = 1
        h = xp.full((n,), self.h0) if self.h0 is not None else self._initial_step(system, t, y, k1)
        evals += self.h0 is None
        acc = xp.zeros((n,), dtype=xp.int64)
        rej = xp.zeros((n,), dtype=xp.int64)
        just_rejected = xp.zeros((n,), dtype=bool)
        a, c, e = DOPRI5["a"], DOPRI5["c"], DOPRI5["e"]
        attempts = 0
        for target in targets:
            while True:
                remaining = target - t
                active = remaining > 0
                if not bool(active.any()):
                    break
                attempts += 1
                if attempts > self.max_steps:
                    k = int(xp.argmax(active))
                    raise IntegrationError(f"ball {k}: more than max_steps = {self.max_steps} step attempts "
                                           f"before t = {target}", particle=k, value="max_steps")  # fmt: skip
                last = active & (h >= remaining)
                hs = xp.where(active, xp.minimum(h, remaining), 0.0)
                tiny = active & (hs <= 16 * 2.2e-16 * xp.maximum(xp.abs(t), 1.0)) & ~last
                if bool(tiny.any()):
                    k = int(xp.argmax(tiny))
                    raise IntegrationError(f"ball {k}: step size underflow at t = {float(t[k])!r} "
                                           f"(h = {float(hs[k])!r})", particle=k, value="h")  # fmt: skip
                hc = hs[:, None]
                ks = [k1]
                for i in range(1, 7):
                    yi = y + hc * sum(aij * kj for aij, kj in zip(a[i], ks) if aij != 0.0)
                    if i == 6:  # yi is the 5th-order solution (b = a[6]): project it (FSAL)
                        y_new = system.project(yi)
                        yi = y_new
                    ks.append(system.rhs(t + c[i] * hs, yi))
                evals += 6
                err_vec = hc * sum(ei * ki for ei, ki in zip(e, ks) if ei != 0.0)
                err = self._norm(xp, err_vec, y, y_new)
                finite = xp.isfinite(y_new).all(axis=1) & xp.isfinite(err)
                if not bool(finite[active].all()):
                    k = int(xp.argmax(active & ~finite))
                    col = int(xp.argmax(~xp.isfinite(y_new[k]))) if not bool(xp.isfinite(y_new[k]).all()) else 0
                    raise NonFiniteError(f"ball {k}: non-finite {_column_name(system, col)} in a step from "
                                         f"t = {float(t[k])!r}; the state is left at t = {state.t}",
                                         step=state.step, particle=k, value=_column_name(system, col))  # fmt: skip
                ok = active & (err <= 1.0)
                y = xp.where(ok[:, None], y_new, y)
                k1 = xp.where(ok[:, None], ks[6], k1)
                t = xp.where(ok, xp.where(last, target, t + hs), t)
                fac = xp.clip(self.safety * xp.maximum(err, 1e-10) ** -0.2, self.fac_min, self.fac_max)
                fac = xp.where(ok & just_rejected, xp.minimum(fac, 1.0), fac)
                # a clipped last step says nothing about the step the error allows: keep h then
                h_new = xp.where(ok & last & (fac >= 1.0), h, hs * fac)
                h = xp.where(active, xp.minimum(h_new, self.h_max), h)
                just_rejected = xp.where(active, ~ok, just_rejected)
                acc = acc + ok
                rej = rej + (active & ~ok)
            state.y = y.copy()
            state.t = target
            state.step += 1
            if callback is not None:
                callback(state)
        be_host = lambda v: v.get() if hasattr(v, "get") else v  # noqa: E731
        self.stats = {"accepted": be_host(acc), "rejected": be_host(rej), "evaluations": evals}
        return state
