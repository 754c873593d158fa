"""The rolling ball's schemes (paper 004) as per-ball kernels: classical RK4 and the
adaptive Dormand-Prince 5(4) with a step per ball.

Both are :class:`~granular.bodies.core.Scheme` objects built on a
:class:`~granular.bodies.rolling_ball.RollingBall`; the right-hand side ((B.8) solved for
Ω̇ as in (B.9)-(B.10), (A.13), (D.21), the no-slip condition, the two power columns) is
written once in :mod:`kernels.bodies_rolling` and compiled for the CPU and the GPU.

* :class:`RK4`: ``step(state, h)`` is one classical RK4 step of size ``h`` for every
  ball; ``q`` is renormalised after each step (renormalising an O(h⁵) deviation keeps
  the order).
* :class:`DormandPrince`: ``step(state, h)`` takes every ball from ``t`` to ``t + h``
  (an output interval) with its own adaptive steps: the embedded pair of Dormand & Prince,
  5(4), FSAL, local extrapolation, the 5th-order solution projected (``q/|q|``) before the
  FSAL stage; error norm ``‖e‖ = rms_k(e_k / (atol + rtol max(|y_k|, |ŷ_k|)))``, a step
  accepted when ``‖e‖ <= 1``; ``h ← h min(fac_max, max(fac_min, safety ‖e‖^(-1/5)))``
  (``fac_max = 1`` right after a rejection). Each ball's step size and its counts of
  accepted and rejected steps live in its :class:`AdaptiveBallState`, so consecutive
  intervals continue where the last ended. :meth:`DormandPrince.integrate` visits a list
  of output times.

Rails and actuations must be kernel forms (circle, ellipse, figure eight, line, Fourier
rails; constant-speed, sinusoidal, harmonic actuations); an external force may be a
constant or a :class:`~granular.bodies.rolling_ball.HarmonicForce`, and for RK4 also a
Python callable, evaluated on the host at the stage times of each block of steps.

Failures raise a :class:`~granular.bodies.core.BodyError` naming the ball, the step and
the quantity (a non-finite state column; the step size ``h`` on underflow;
``max_steps`` when a ball needs more than ``max_steps`` attempts in one interval),
leaving the state before the failing step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core import Scheme, count
from .ball import COLUMNS, HarmonicForce, RollingBall, RollingBallState
from .rails import kernel_rails

__all__ = ["RK4", "DormandPrince", "AdaptiveBallState"]

_FORCE_NONE, _FORCE_KERNEL, _FORCE_TABLE = 0, 1, 2
#: largest host-evaluated force table per launch (entries), for callables in RK4
_TABLE_ENTRIES = 1 << 21


@dataclass
class AdaptiveBallState(RollingBallState):
    """A :class:`~granular.bodies.rolling_ball.RollingBallState` with each ball's adaptive
    step: ``dt`` (N,) float64, the step the next attempt starts with [T] (0: not yet
    chosen); ``accepted``, ``rejected`` (N,) int64, step counts since the start;
    ``last_rejected`` (N,) int32, 1 when the ball's last attempt was rejected (the
    controller then does not enlarge the next step)."""

    dt: object
    accepted: object
    rejected: object
    last_rejected: object


class _BallScheme(Scheme):
    """Kernel parameters of a :class:`RollingBall` shared by both schemes."""

    quantities = COLUMNS + ("h", "max_steps")

    def __init__(self, ball):
        if not isinstance(ball, RollingBall):
            raise ValueError(f"ball must be a RollingBall, got {type(ball).__name__}")
        self.model, self.n = ball, ball.n
        self._init_backend(ball.backend)
        be, xp = self.backend, self.xp
        cap = getattr(self.kernels, "MAX_MASSES", None)
        if cap is not None and ball.n_masses > cap:
            raise ValueError(f"masses: the GPU kernels take at most {cap} masses per ball, got {ball.n_masses}")
        self._rails = kernel_rails(be, ball.rails, ball.actuations, ball.n)
        self._ball = (ball.radius, ball.inertia, ball.shell_com, xp.ascontiguousarray(ball.m_all), float(ball.gravity))
        self._force_mode, self._force_fn = _FORCE_NONE, None
        self._force_par = xp.zeros((1, 3, 4))
        if isinstance(ball._force_fn, HarmonicForce):
            self._force_mode, self._force_par = _FORCE_KERNEL, be.asarray(ball._force_fn.params)
        elif ball._force_fn is not None:
            self._force_mode, self._force_fn = _FORCE_TABLE, ball._force_fn
        elif ball.external_force is not None:
            par = np.zeros((ball.external_force.shape[0], 3, 4))
            par[:, :, 0] = be.to_host(ball.external_force)
            self._force_mode, self._force_par = _FORCE_KERNEL, be.asarray(par)
        self._no_table = xp.zeros((1, 1, 3))

    def state(self, Omega=None, q=None, xy=None, track_work=False):
        """A state at ``t = 0`` (see :meth:`RollingBall.state`)."""
        return self.model.state(Omega=Omega, q=q, xy=xy, track_work=track_work)

    def invariants(self, state):
        """:meth:`RollingBall.invariants`: ``energy``, ``gamma_norm``, ``gamma_vs_q``,
        ``quat_norm``, ``height`` and, with tracked work, ``energy_balance``."""
        return self.model.invariants(state)

    @property
    def energy_key(self):
        return "energy_balance"

    def body_angular_velocity(self, state):
        return state.y[:, 0:3]


class RK4(_BallScheme):
    """Classical RK4 for every ball with a common step ``h``; ``q`` renormalised after each
    step. ``RK4(ball).step(state, h)``; per-ball law ``rolling_ball_rk4_body`` of
    :mod:`kernels.bodies_rolling`."""

    name = "rolling_ball rk4"
    state_type = RollingBallState

    def block_steps(self):
        if self._force_mode != _FORCE_TABLE:
            return self.max_block
        return max(1, min(self.max_block, _TABLE_ENTRIES // (9 * self.n)))

    def _force_table(self, state, h, k):
        if self._force_mode != _FORCE_TABLE:
            return self._no_table
        xp = self.xp
        times = self._times(state, h, k, (0.0, 0.5, 1.0)).reshape(-1)
        rows = []
        for t in times:
            F = xp.asarray(self._force_fn(float(t)), dtype=xp.float64)
            if F.shape not in ((3,), (1, 3), (self.n, 3)):
                raise ValueError(f"external_force(t): returned shape {tuple(F.shape)}, expected (3,) or ({self.n}, 3)")
            rows.append(xp.broadcast_to(F.reshape(-1, 3), (max(F.reshape(-1, 3).shape[0], 1), 3)))
        B = max(r.shape[0] for r in rows)
        return xp.ascontiguousarray(xp.stack([xp.broadcast_to(r, (B, 3)) for r in rows]))

    def _launch(self, state, out, h, k, status, value):
        t0, step0 = state.origin(h)
        self.kernels.rolling_ball_rk4(k, h, float(t0), np.int64(state.step - step0), state.y, out.y, *self._ball, *self._rails,
                                      self._force_mode, self._force_par, self._force_table(state, h, k), status,
                                      value)  # fmt: skip


class DormandPrince(_BallScheme):
    """Adaptive Dormand-Prince 5(4) with a step per ball (see the module docstring).

    ``ball``: the :class:`RollingBall`; ``rtol``, ``atol``: tolerances (> 0); ``h0``: first
    step [T] (default: Hairer's starting-step heuristic per ball); ``h_max``: largest step
    [T]; ``max_steps``: most step attempts per ball in one call of :meth:`step`;
    ``safety``, ``fac_min``, ``fac_max``: the controller. States are
    :class:`AdaptiveBallState` (:meth:`state`, or :meth:`adaptive` of a plain state).
    """

    name = "rolling_ball dopri5"
    state_type = AdaptiveBallState

    def __init__(self, ball, rtol=1e-8, atol=1e-10, h0=None, h_max=math.inf, max_steps=1_000_000, safety=0.9,
                 fac_min=0.2, fac_max=5.0):  # fmt: skip
        for name, v in (("rtol", rtol), ("atol", atol)):
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}: must be a finite number > 0, got {v!r}")
        if h0 is not None and not (isinstance(h0, (int, float)) and math.isfinite(h0) and h0 > 0):
            raise ValueError(f"h0: must be a finite number > 0, got {h0!r}")
        if not (isinstance(h_max, (int, float)) and h_max > 0):
            raise ValueError(f"h_max: must be > 0, got {h_max!r}")
        if not (0 < safety < 1 and 0 < fac_min < 1 < fac_max):
            raise ValueError("safety must be in (0, 1), fac_min in (0, 1) and fac_max > 1")
        super().__init__(ball)
        if self._force_mode == _FORCE_TABLE:
            raise ValueError("external_force: the adaptive scheme evaluates the force inside the kernel at each "
                             "ball's own times; give a constant force or a HarmonicForce, not a Python callable")
        self.rtol, self.atol = float(rtol), float(atol)
        self.h0 = 0.0 if h0 is None else float(h0)
        self.h_max = float(h_max)
        self.max_steps = count(max_steps, "max_steps", 1)
        self.safety, self.fac_min, self.fac_max = float(safety), float(fac_min), float(fac_max)

    def adaptive(self, state):
        """An :class:`AdaptiveBallState` with the arrays of ``state`` (copied), no step chosen yet."""
        xp, n = self.xp, state.y.shape[0]
        return AdaptiveBallState(y=state.y.copy(), dt=xp.zeros(n), accepted=xp.zeros(n, dtype=xp.int64),
                                 rejected=xp.zeros(n, dtype=xp.int64), last_rejected=xp.zeros(n, dtype=xp.int32),
                                 t=state.t, step=state.step)  # fmt: skip

    def state(self, Omega=None, q=None, xy=None, track_work=False):
        return self.adaptive(super().state(Omega=Omega, q=q, xy=xy, track_work=track_work))

    def block_steps(self):
        return 1  # one output interval per launch; the kernel loops over each ball's own steps

    def integrate(self, state, times, callback=None):
        """Visit the increasing output ``times`` (each > ``state.t``) in order; every ball
        reaches each exactly (``state.t`` is set to it) and ``callback(state)`` is called
        there. Returns ``state``."""
        targets = [float(v) for v in np.atleast_1d(times)]
        if not targets or any(not (b > a) for a, b in zip([state.t] + targets, targets)):
            raise ValueError(f"times: must increase strictly from state.t = {state.t}, got {targets}")
        if not all(math.isfinite(v) for v in targets):
            raise ValueError("times: must be finite")
        for target in targets:
            self.step(state, target - state.t)
            state.t = target
            if callback is not None:
                callback(state)
        return state

    def _launch(self, state, out, h, k, status, value):
        self.kernels.rolling_ball_dopri(h, float(state.t), state.y, out.y, state.dt, out.dt, state.accepted,
                                        out.accepted, state.rejected, out.rejected, state.last_rejected,
                                        out.last_rejected, *self._ball, *self._rails,
                                        self._force_mode, self._force_par, self._no_table, self.rtol, self.atol,
                                        self.h0, self.h_max, self.max_steps, self.safety, self.fac_min, self.fac_max,
                                        status, value)  # fmt: skip
