"""The planar rolling disk actuated by internal point masses: one scalar equation (paper 004, App. C).

When the ball's body ``e2`` axis is a principal axis of ``𝕀``, the shell's centre of mass
and every rail lie in the body ``x-z`` plane, ``F_e`` has no ``e2`` component and the ball
starts with ``Ω ∥ e2`` and ``e2`` horizontal, the motion stays planar: ``Λ`` is the
rotation by ``ψ`` about ``e2``, ``Ω = ψ̇ e2``, ``Γ = Λᵀe3 = (-sin ψ, 0, cos ψ)`` and the
centre moves along ``x`` with ``ẋ = r ψ̇`` (from ``ż = r ω × e3``). Then
``𝕀 - Σ m_i ŝ_i²`` keeps ``e2`` as an eigenvector (``a12 = a23 = 0`` in (C.2)), so only
its middle entry ``-a22`` of (C.4) enters, ``A⁻¹e2 = e2/a22`` (C.5), and the ``e2``
component of (B.8) gives the scalar equation (the paper's (3.39), re-derived here since
the main text is lost)::

    s_i = (ζ_i1 - r sin ψ,  ζ_i3 + r cos ψ)                     (x, z body components)
    a_i1 = -g sin ψ - ψ̇² ζ_i1 + 2 ψ̇ ζ̇_i3 + ζ̈_i1
    a_i3 =  g cos ψ - ψ̇² ζ_i3 - 2 ψ̇ ζ̇_i1 + ζ̈_i3
    ψ̈ = [r F_1 - Σ_i m_i (s_i3 a_i1 - s_i1 a_i3)] / [d2 + Σ_i m_i (s_i1² + s_i3²)]

(``i = 0`` the shell with ``ζ_0 = χ0``, at rest; ``d2 = 𝕀_22``; ``F_1`` the horizontal
component of the external force at the geometric centre.) The paper's angle in (C.4) is
``φ = -ψ`` (its ``Γ = (sin φ, 0, cos φ)``); the denominator is ``-a22`` of (C.4).

State: ``y`` (N, 3) float64 ``[ψ [rad], ψ̇ [1/T], x [L]]``. This module shares only the
rails and actuations with :mod:`granular.bodies.rolling_ball`; its arithmetic is written
out in scalars so that it checks the 3D equations independently.

:class:`RollingDiskRK4` integrates it by classical RK4, one disk per kernel thread
(``rolling_disk_rk4_body`` of :mod:`kernels.bodies_rolling`, the same scalar formula).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...backend import resolve_backend
from ..core import BodyState, Scheme
from .rails import Actuation, Rail, _host_rows, kernel_rails, mass_kinematics

__all__ = ["RollingDisk", "RollingDiskState", "RollingDiskRK4"]


@dataclass
class RollingDiskState(BodyState):
    """``y`` (N, 3) float64 ``[ψ, ψ̇, x]``; clock ``t`` [T]; ``step``."""

    y: object


def _check_planar_rail(rail, k):
    worst = 0.0
    for value in np.linspace(0.0, 2 * np.pi, 13):
        th = np.full((rail.rows,), value)
        worst = max([worst] + [float(np.abs(a[:, 1]).max()) for a in rail.evaluate(th)])
    if worst > 1e-12:
        raise ValueError(f"rails[{k}]: not in the body x-z plane (max |ζ_2|, |ζ_2'|, |ζ_2''| = {worst:.3g} "
                         "at sample θ)")


class RollingDisk:
    """Fixed parameters of ``N`` rolling disks (the planar ball).

    ``radius`` r [L], ``shell_mass`` m0 [M] (scalar or (N,)); ``inertia_y`` d2 [M L²]
    (scalar or (N,), > 0); ``shell_com``: (2,) or (N, 2) ``(χ0_1, χ0_3)`` [L]; ``masses``
    (K,) or (N, K) [M]; ``rails``: K rails in the body x-z plane (sampled at 13 θ to check);
    ``actuations``: K actuations; ``gravity`` [L/T²]; ``external_force_x``: ``None``,
    scalar or (N,) [M L/T²], or a callable ``t -> F_1``; ``n``; ``backend``.
    """

    columns = ("psi", "psi_dot", "x")

    def __init__(self, radius, shell_mass, inertia_y, shell_com=(0.0, 0.0), masses=(), rails=(), actuations=(),
                 gravity=9.81, external_force_x=None, n=None, backend="cpu"):  # fmt: skip
        self.backend = resolve_backend(backend)
        xp = self.backend.xp
        rails, actuations = list(rails), list(actuations)
        if len(rails) != len(actuations):
            raise ValueError(f"actuations: need one per rail ({len(rails)}), got {len(actuations)}")
        for k, (r_, a_) in enumerate(zip(rails, actuations)):
            if not isinstance(r_, Rail):
                raise ValueError(f"rails[{k}]: expected a Rail, got {r_!r}")
            if not isinstance(a_, Actuation):
                raise ValueError(f"actuations[{k}]: expected an Actuation, got {a_!r}")
            _check_planar_rail(r_, k)
        K = len(rails)
        m = np.array(masses, dtype=np.float64) if np.size(masses) else np.zeros((0,))
        m = m[None] if m.ndim == 1 else m
        if m.ndim != 2 or m.shape[1] != K or not (np.isfinite(m).all() and (m > 0).all()):
            raise ValueError(f"masses: expected finite values > 0 of shape ({K},) or (N, {K}), got {masses!r}")
        host = {
            "radius": _host_rows(radius, "radius", (), positive=True),
            "shell_mass": _host_rows(shell_mass, "shell_mass", (), positive=True),
            "inertia_y": _host_rows(inertia_y, "inertia_y", (), positive=True),
            "shell_com": _host_rows(shell_com, "shell_com", (2,)),
            "masses": m,
        }
        try:
            g = float(gravity)
        except (TypeError, ValueError):
            raise ValueError(f"gravity: expected a number, got {gravity!r}") from None
        if not (math.isfinite(g) and g >= 0):
            raise ValueError(f"gravity: must be finite and >= 0, got {gravity!r}")
        self._force_fn = external_force_x if callable(external_force_x) else None
        if external_force_x is not None and self._force_fn is None:
            host["external_force_x"] = _host_rows(external_force_x, "external_force_x", ())
        rows = {k: v.shape[0] for k, v in host.items()}
        rows.update({f"rails[{k}]": r_.rows for k, r_ in enumerate(rails)})
        rows.update({f"actuations[{k}]": a_.rows for k, a_ in enumerate(actuations)})
        found = set(rows.values()) - {1}
        if len(found) > 1:
            raise ValueError(f"per-disk parameters have different numbers of rows: {rows}")
        found = found.pop() if found else None
        n = (found or 1) if n is None else n
        if not isinstance(n, int) or n < 1 or (found is not None and n != found):
            raise ValueError(f"n: must be a positive int matching the per-disk parameters ({found}), got {n!r}")
        self.n, self.n_masses, self.gravity = n, K, g
        self.rails, self.actuations = rails, actuations
        for k, v in host.items():
            setattr(self, k, xp.asarray(v))
        if "external_force_x" not in host:
            self.external_force_x = None

    @property
    def xp(self):
        return self.backend.xp

    @classmethod
    def from_ball(cls, ball):
        """The disk of a planar :class:`~granular.bodies.rolling_ball.RollingBall`;
        ``ValueError`` naming what is not planar."""
        be = ball.backend
        I_ = be.to_host(ball.inertia)
        if np.abs(I_[:, [0, 2], 1]).max() > 0:
            raise ValueError("inertia: e2 must be a principal axis (I12 = I32 = 0) for planar motion")
        com = be.to_host(ball.shell_com)
        if np.abs(com[:, 1]).max() > 0:
            raise ValueError("shell_com: must lie in the body x-z plane (χ0_2 = 0) for planar motion")
        fx = None
        if ball._force_fn is not None:
            fn = ball._force_fn
            fx = lambda t: ball.xp.asarray(fn(t))[..., 0]  # noqa: E731
        elif ball.external_force is not None:
            F = be.to_host(ball.external_force)
            if np.abs(F[:, 1]).max() > 0:
                raise ValueError("external_force: must have no e2 component for planar motion")
            fx = F[:, 0]
        return cls(be.to_host(ball.radius), be.to_host(ball.shell_mass), I_[:, 1, 1], com[:, [0, 2]],
                   be.to_host(ball.masses), ball.rails, ball.actuations, ball.gravity, fx, n=ball.n,
                   backend=be)  # fmt: skip

    def state(self, psi=0.0, psi_dot=0.0, x=0.0):
        """A :class:`RollingDiskState`; each argument scalar or (N,)."""
        xp = self.xp
        cols = []
        for name, v in (("psi", psi), ("psi_dot", psi_dot), ("x", x)):
            a = xp.asarray(v, dtype=xp.float64)
            if a.shape not in ((), (self.n,)) or not bool(xp.isfinite(a).all()):
                raise ValueError(f"{name}: must be finite, scalar or ({self.n},), got shape {tuple(a.shape)}")
            cols.append(xp.broadcast_to(a, (self.n,)))
        return RollingDiskState(y=xp.stack(cols, axis=1))

    def ball_state(self, ball, state):
        """The :class:`~granular.bodies.rolling_ball.RollingBallState` of ``ball`` for this
        disk state: ``q = (cos ψ/2, 0, sin ψ/2, 0)``, ``Ω = (0, ψ̇, 0)``, centre ``(x, 0, r)``."""
        xp = self.xp
        psi, w, x = state.y[:, 0], state.y[:, 1], state.y[:, 2]
        z = xp.zeros_like(psi)
        q = xp.stack([xp.cos(0.5 * psi), z, xp.sin(0.5 * psi), z], axis=1)
        s = ball.state(Omega=xp.stack([z, w, z], axis=1), q=q, xy=xp.stack([x, z], axis=1))
        s.t = state.t
        return s

    def _scalars(self, t, y):
        xp = self.xp
        mk = mass_kinematics(self.rails, self.actuations, t, self.n, xp)
        psi, w = y[:, 0], y[:, 1]
        sn, cs = xp.sin(psi), xp.cos(psi)
        r = self.radius
        z1 = xp.concatenate([xp.broadcast_to(self.shell_com[:, :1], (self.n, 1)), mk.chi[:, :, 0]], axis=1)
        z3 = xp.concatenate([xp.broadcast_to(self.shell_com[:, 1:], (self.n, 1)), mk.chi[:, :, 2]], axis=1)
        zero = xp.zeros((self.n, 1))
        dz1 = xp.concatenate([zero, mk.dchi[:, :, 0]], axis=1)
        dz3 = xp.concatenate([zero, mk.dchi[:, :, 2]], axis=1)
        ddz1 = xp.concatenate([zero, mk.ddchi[:, :, 0]], axis=1)
        ddz3 = xp.concatenate([zero, mk.ddchi[:, :, 2]], axis=1)
        m = xp.concatenate([xp.broadcast_to(self.shell_mass[:, None], (self.masses.shape[0], 1)), self.masses], axis=1)
        return psi, w, sn, cs, r, z1, z3, dz1, dz3, ddz1, ddz3, m

    def psi_ddot(self, t, y):
        """``ψ̈`` (N,) [1/T²] of the scalar rolling-disk equation (module docstring)."""
        psi, w, sn, cs, r, z1, z3, dz1, dz3, ddz1, ddz3, m = self._scalars(t, y)
        g = self.gravity
        s1 = z1 - (r * sn)[:, None]
        s3 = z3 + (r * cs)[:, None]
        w_ = w[:, None]
        a1 = -g * sn[:, None] - w_ * w_ * z1 + 2.0 * w_ * dz3 + ddz1
        a3 = g * cs[:, None] - w_ * w_ * z3 - 2.0 * w_ * dz1 + ddz3
        num = -(m * (s3 * a1 - s1 * a3)).sum(axis=1)
        F = self._fx(t)
        if F is not None:
            num = num + r * F
        return num / (self.inertia_y + (m * (s1 * s1 + s3 * s3)).sum(axis=1))

    def _fx(self, t):
        if self._force_fn is not None:
            return self.xp.asarray(self._force_fn(t), dtype=self.xp.float64)
        return self.external_force_x

    def rhs(self, t, y):
        """``[ψ̇, ψ̈, r ψ̇]`` (N, 3) for ``y`` (N, 3) at ``t`` (float or (N,))."""
        return self.xp.stack([y[:, 1], self.psi_ddot(t, y), self.radius * y[:, 1]], axis=1)

    def project(self, y):
        """Nothing to project (no constraint on ``y``)."""
        return y

    def energy(self, t, y):
        """``½ d2 ψ̇² + ½ Σ m_i |ψ̇ e2 × s_i + χ̇_i|² + g Σ m_i (r - ζ_i1 sin ψ + ζ_i3 cos ψ)``
        (N,) [M L²/T²]."""
        psi, w, sn, cs, r, z1, z3, dz1, dz3, _, _, m = self._scalars(t, y)
        s1 = z1 - (r * sn)[:, None]
        s3 = z3 + (r * cs)[:, None]
        u1, u3 = w[:, None] * s3 + dz1, -w[:, None] * s1 + dz3
        kin = 0.5 * self.inertia_y * w * w + 0.5 * (m * (u1 * u1 + u3 * u3)).sum(axis=1)
        return kin + self.gravity * (m * (r[:, None] - z1 * sn[:, None] + z3 * cs[:, None])).sum(axis=1)


class RollingDiskRK4(Scheme):
    """Classical RK4 on ``ẏ = (ψ̇, ψ̈, r ψ̇)`` for every disk, ``RollingDiskRK4(disk).step(state, h)``.

    The external force may be constant or a Python callable of ``t`` (evaluated on the
    host at the stage times ``t, t + h/2, t + h`` of each block of steps).
    """

    name = "rolling_disk rk4"
    state_type = RollingDiskState
    quantities = RollingDisk.columns

    def __init__(self, disk):
        if not isinstance(disk, RollingDisk):
            raise ValueError(f"disk must be a RollingDisk, got {type(disk).__name__}")
        self.model, self.n = disk, disk.n
        self._init_backend(disk.backend)
        xp = self.xp
        self._rails = kernel_rails(self.backend, disk.rails, disk.actuations, disk.n)
        m = xp.concatenate([xp.broadcast_to(disk.shell_mass[:, None], (disk.masses.shape[0], 1)), disk.masses], axis=1)
        self._disk = (disk.radius, disk.inertia_y, disk.shell_com, xp.ascontiguousarray(m), float(disk.gravity))
        self._fx = xp.zeros(1) if disk.external_force_x is None else disk.external_force_x
        self._mode = 2 if disk._force_fn is not None else int(disk.external_force_x is not None)
        self._no_table = xp.zeros((1, 1))

    def state(self, psi=0.0, psi_dot=0.0, x=0.0):
        return self.model.state(psi=psi, psi_dot=psi_dot, x=x)

    def block_steps(self):
        return self.max_block if self._mode != 2 else max(1, min(self.max_block, (1 << 21) // (3 * self.n)))

    def _table(self, state, h, k):
        if self._mode != 2:
            return self._no_table
        xp = self.xp
        vals = [xp.broadcast_to(xp.asarray(self.model._force_fn(float(t)), dtype=xp.float64).reshape(-1), (self.n,))
                for t in self._times(state, h, k, (0.0, 0.5, 1.0)).reshape(-1)]  # fmt: skip
        return xp.ascontiguousarray(xp.stack(vals))

    def _launch(self, state, out, h, k, status, value):
        t0, step0 = state.origin(h)
        self.kernels.rolling_disk_rk4(k, h, float(t0), np.int64(state.step - step0), state.y, out.y, *self._disk,
                                      *self._rails, self._mode,
                                      self._fx, self._table(state, h, k), status, value)  # fmt: skip

    def invariants(self, state):
        """``energy`` (N,) [M L²/T²] (conserved when the masses rest and no force acts)."""
        return {"energy": self.model.energy(state.t, state.y)}

    def body_angular_velocity(self, state):
        xp = self.xp
        z = xp.zeros(self.n)
        return xp.stack([z, state.y[:, 1], z], axis=1)
