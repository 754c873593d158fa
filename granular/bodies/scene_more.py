"""Scene adapters (see :mod:`granular.bodies.scene_base` for the interface) of the
Livens quaternion schemes (paper 002) and of the rolling ball (paper 004).

Kept apart from :mod:`granular.bodies.scene_systems` to keep each module short.
"""

from __future__ import annotations

import numpy as np

from .. import rotations as rot
from . import livens_rigid as lr
from . import rails as R
from .core import scheme_class
from .rolling_ball import RollingBall
from .scene_base import AXES, SMALL_BATCH, BodySystem, det_minus_one
from .scene_schema import make_actuation, make_rail

# ---------------------------------------------------------------------- livens (002)


class LivensSystem(BodySystem):
    """``scheme = "livens"``: :class:`~granular.bodies.livens_rigid.EML` (``variant = "eml"``),
    its size reductions REML and Null-EML, and the comparators MPL, EMH, MPH of
    :mod:`granular.bodies.livens_comparators`; bodies rotating about a fixed point at
    ``position`` (default: spaced along x) with an optional gravity potential (115)."""

    def __init__(self, cfg, backend):
        t, xp, n = cfg.table, backend.xp, cfg.count
        self.cfg, self.backend, self.n = cfg, backend, n
        self.label = f"livens {t.variant}"
        mass = cfg.arrays.get("mass", np.zeros(n))  # (N,) [M]; the key's default is 0 (no potential)
        com = cfg.arrays.get("center_of_mass", np.zeros((n, 3)))
        self.pivot = cfg.arrays.get("position", cfg.offsets)
        self.mass = mass
        self.scheme = scheme_class(f"livens {t.variant}")(xp.asarray(cfg.inertia), n=n, mass=xp.asarray(mass),
                                         center_of_mass=xp.asarray(com), gravity=xp.asarray(t.gravity),
                                         backend=backend, rtol=t.newton_rtol, max_iter=t.newton_max_iter)  # fmt: skip
        q = xp.asarray(cfg.quaternion)
        if cfg.given == "omega":
            self.state = self.scheme.state(q, omega=xp.asarray(cfg.omega))
        else:
            self.state = self.scheme.state(q, Omega=xp.asarray(cfg.omega_body))
        self._lr = lr

    def frame(self):
        s, sch, lr = self.state, self.scheme, self._lr
        R = self.host(sch.rotation(s))
        com = self.host(sch.center_of_mass_position(s))
        w = self.host(lr.spatial_angular_velocity(s.q, s.v))
        J = np.broadcast_to(self.host(sch.J), (self.n, 3, 3))
        T = self.host(sch.kinetic_energy(s))
        size = 0.25 * self.cfg.table.spacing
        return self._frame_data(self.pivot + com, R, J, self.mass, np.cross(w, com), w, T, size)

    def series(self):
        s, sch, xp = self.state, self.scheme, self.backend.xp
        T, V = sch.kinetic_energy(s), sch.potential(s.q)
        E = sch.generalized_energy(s)
        row = {"kinetic_rotational": float(T.sum()), "U_gravity": float(V.sum()), "total": float((T + V).sum()),
               "generalized_energy": float(E.sum())}  # fmt: skip
        if self.cfg.table.variant in ("emh", "mph"):
            row["hamiltonian"] = float(sch.scheme_energy(s).sum())
        L = sch.angular_momentum(s)
        self._vector(row, "L", self.host(L.sum(axis=0)))
        row["unity_residual_max"] = float(xp.abs(sch.unity_residual(s)).max())
        row["hidden_constraint_max"] = float(xp.abs(sch.hidden_constraint_residual(s)).max())
        row["det_R_minus_1_max"] = det_minus_one(self.host(sch.rotation(s)))
        self._newton(row, s.iterations)
        if self.n < SMALL_BATCH:
            self._per_body(row, "q", self.host(s.q), "0123")
            self._per_body(row, "Omega_", self.host(sch.body_angular_velocity(s)), "123")
            self._per_body(row, "com_", self.host(sch.center_of_mass_position(s)), AXES)
            self._per_body(row, "generalized_energy", self.host(E))
            self._per_body(row, "L_", self.host(L), AXES)
        return row


# ---------------------------------------------------------------- rolling ball (004)


class RollingBallSystem(BodySystem):
    """``scheme = "rolling_ball"``: :class:`~granular.bodies.rolling_ball.RollingBall` with
    :class:`~granular.bodies.rolling_ball_integrators.RK4`; the work of the rail actuation
    and of the external force is tracked, so ``E - W`` is an invariant. Each ball is one
    vertex at its geometric centre (``radius`` = the ball's radius); the internal masses
    are not drawn (:mod:`granular.bodies.rolling_ball_output` draws them)."""

    def __init__(self, cfg, backend):
        t, xp, n = cfg.table, backend.xp, cfg.count
        self.cfg, self.backend, self.n = cfg, backend, n
        self.label = "rolling_ball rk4"
        rails = [make_rail(R, m.rail) for m in t.masses]
        acts = [make_actuation(R, m.actuation) for m in t.masses]
        masses = [m.mass for m in t.masses]
        self.model = RollingBall(t.radius, t.shell_mass, cfg.inertia, shell_com=t.shell_com, masses=masses,
                                 rails=rails, actuations=acts, gravity=t.gravity, external_force=t.external_force,
                                 n=n, backend=backend)  # fmt: skip
        xy = cfg.arrays.get("xy", cfg.offsets[:, :2])
        self.state = self.model.state(Omega=xp.asarray(cfg.omega_body), q=xp.asarray(cfg.quaternion),
                                      xy=xp.asarray(xy), track_work=True)  # fmt: skip
        self.scheme = scheme_class("rolling_ball rk4")(self.model)

    def _kinematics(self):
        """Host arrays: R (N,3,3), ω (N,3), ż (N,3), and per point (shell c.o.m. and masses)
        masses m (B,K+1), positions x (N,K+1,3), velocities u (N,K+1,3), energies."""
        model, s, xp = self.model, self.state, self.backend.xp
        y, t = s.y, s.t
        q = y[:, 6:10]
        qn = q / xp.sqrt((q * q).sum(axis=1))[:, None]
        Om, Gam = y[:, 0:3], y[:, 3:6]
        om = rot.quat_rotate(qn, Om)
        r = model.radius[:, None]
        zdot = r * xp.stack([om[:, 1], -om[:, 0], xp.zeros_like(om[:, 0])], axis=1)  # r ω × e3
        chi, dchi, _, _ = model._points(t)
        rel = rot.quat_rotate(qn[:, None, :], chi)
        x = y[:, None, 10:13] + rel
        u = zdot[:, None, :] + rot.cross(om[:, None, :], rel) + rot.quat_rotate(qn[:, None, :], dchi)
        m = model.m_all
        IOm = (model.inertia * Om[:, None, :]).sum(axis=-1)
        rot_e = 0.5 * (Om * IOm).sum(axis=1)
        trans_e = 0.5 * (m * (u * u).sum(axis=-1)).sum(axis=1)
        pot = model.gravity * (m * (r + (chi * Gam[:, None, :]).sum(axis=-1))).sum(axis=1)
        h = self.host
        return {"R": h(rot.quat_to_matrix(qn)), "omega": h(om), "zdot": h(zdot), "x": h(x), "u": h(u),
                "m": np.broadcast_to(h(m), (self.n, m.shape[1])), "rot": h(rot_e), "trans": h(trans_e),
                "pot": h(pot), "spin": h(rot.quat_rotate(qn, IOm))}  # fmt: skip

    def frame(self):
        k = self._kinematics()
        J = np.broadcast_to(self.host(self.model.inertia), (self.n, 3, 3))
        centre = self.host(self.state.y[:, 10:13])
        return self._frame_data(centre, k["R"], J, k["m"].sum(axis=1), k["zdot"], k["omega"], k["rot"] + k["trans"],
                                np.broadcast_to(self.host(self.model.radius), (self.n,)))  # fmt: skip

    def series(self):
        k = self._kinematics()
        s, model, xp = self.state, self.model, self.backend.xp
        inv = model.invariants(s)
        row = {"kinetic_translational": float(k["trans"].sum()), "kinetic_rotational": float(k["rot"].sum()),
               "U_gravity": float(k["pot"].sum())}  # fmt: skip
        row["total"] = float(self.host(inv["energy"]).sum())
        m = k["m"][:, :, None]
        self._vector(row, "P", (m * k["u"]).sum(axis=(0, 1)))
        L = (m * np.cross(k["x"], k["u"])).sum(axis=1) + k["spin"]
        self._vector(row, "L", L.sum(axis=0))
        row["work_actuation"] = float(s.work_actuation.sum())
        row["work_external"] = float(s.work_external.sum())
        row["energy_balance"] = float(inv["energy_balance"].sum())
        for name in ("gamma_norm", "gamma_vs_q", "quat_norm", "height"):
            row[f"{name}_max"] = float(xp.abs(inv[name]).max())
        if self.n < SMALL_BATCH:
            y = self.host(s.y)
            self._per_body(row, "Omega_", y[:, 0:3], "123")
            self._per_body(row, "Gamma_", y[:, 3:6], "123")
            self._per_body(row, "q", y[:, 6:10], "0123")
            self._per_body(row, "z_", y[:, 10:13], AXES)
            self._per_body(row, "energy", self.host(inv["energy"]))
            self._per_body(row, "work_actuation", y[:, 13])
        return row
