"""Scene adapters of the director schemes (paper 000), unified local velocity coordinates
(paper 001), the Livens quaternion schemes (paper 002) and the rolling ball (paper 004),
and :func:`build_system`, which picks the adapter for a ``[bodies]`` table.

The interface the adapters share (``scheme``, ``state``, ``advance``, ``time``,
``step_count``, ``frame``, ``series``, ``state_arrays``, ``restore``, and the rest of the
run loop's ``System`` protocol) is described in :mod:`granular.bodies.scenes.base`.
"""

from __future__ import annotations

import numpy as np

from ... import rotations as rot
from ..core import scheme_class
from ..directors.nontwisting import CASES, ramp
from ..directors.schemes import ExternalMoment, angular_velocity, directors_from_matrix
from ..livens import rigid as lr
from ..rolling_ball import rails as R
from ..rolling_ball.ball import RollingBall
from ..ulvc import schemes as ulvc
from .base import AXES, SMALL_BATCH, BodySystem, det_minus_one, inertia_components
from .schema import make_actuation, make_rail

__all__ = ["AXES", "SMALL_BATCH", "BodySystem", "DirectorSystem", "LivensSystem", "RollingBallSystem", "ULVCSystem",
           "build_system", "det_minus_one", "inertia_components"]  # fmt: skip


class DirectorSystem(BodySystem):
    """``scheme = "directors"`` / ``"nontwisting"``: :class:`~granular.bodies.directors.DirectorEM`,
    :class:`~granular.bodies.directors.nontwisting.NonTwistingEM` and the DLA comparators of
    :mod:`granular.bodies.directors.dla`, rotating about a fixed point (pure rotation)."""

    def __init__(self, config, backend):
        t = config.table
        self.config, self.backend, self.n = config, backend, config.count
        self.nonholonomic = t.scheme == "nontwisting"
        kwargs = dict(n=self.n, backend=backend, moment=self._moment(config, backend.xp), rtol=t.newton_rtol,
                      max_iter=t.newton_max_iter)  # fmt: skip
        if self.nonholonomic:
            kwargs["a"] = t.a
        self.label = f"{t.scheme} {t.variant}"
        xp = backend.xp
        self.scheme = scheme_class(f"{t.scheme} {t.variant}")(xp.asarray(config.inertia), **kwargs)
        self.state = self.scheme.state(directors_from_matrix(xp.asarray(config.R)), xp.asarray(config.omega))

    @staticmethod
    def _moment(config, xp):
        """The loads: presets of paper 000 (115), (118) with the ramp (116), or [bodies.moment]."""

        t = config.table
        if t.moment is not None:
            m = t.moment
            ms = None if m.spatial is None else xp.asarray(np.tile(m.spatial, (config.count, 1)))
            mc = None if m.material is None else xp.asarray(np.tile(m.material, (config.count, 1)))
            if ms is None and mc is None:
                return None
            return ExternalMoment(spatial=ms, material=mc, profile=ramp if m.time == "ramp" else None)
        if all(name in ("none", "case1") for name in config.load):
            return None
        comps = xp.asarray([[-CASES[int(name[-1])][1][0], -CASES[int(name[-1])][1][1]] if name != "none"
                            else [0.0, 0.0] for name in config.load], dtype=xp.float64)  # fmt: skip
        return ExternalMoment(material=comps, profile=ramp)

    def _R(self):
        return self.host(self.state.d).swapaxes(1, 2)

    def frame(self):
        s, sch = self.state, self.scheme
        R = self._R()
        J = np.broadcast_to(self.host(sch.inertia), (self.n, 3, 3))
        w = self.host(angular_velocity(s.d, s.v))
        K = self.host(sch.kinetic_energy(s))
        # the director schemes model the rotation only: mass 0, the body fixed at its offset
        return self._frame_data(self.config.offsets, R, J, 0.0, np.zeros((self.n, 3)), w, K, 0.25 * self.config.table.spacing)

    def series(self):
        s, sch, xp = self.state, self.scheme, self.backend.xp
        K = sch.kinetic_energy(s)
        pi = sch.spatial_angular_momentum(s)
        row = {"kinetic_rotational": float(K.sum()), "total": float(K.sum())}
        self._vector(row, "L", self.host(pi.sum(axis=0)))
        row["constraint_residual_max"] = float(sch.constraint_residual(s).max())
        row["hidden_constraint_max"] = float(sch.hidden_constraint_residual(s).max())
        row["det_R_minus_1_max"] = det_minus_one(self._R())
        if self.config.table.variant == "dla":
            row["midpoint_energy"] = float(sch.midpoint_energy(s).sum())
        Pi = None
        if self.nonholonomic:
            Pi = sch.nonholonomic_momenta(s)
            row["Pi1"], row["Pi2"] = float(Pi[:, 0].sum()), float(Pi[:, 1].sum())
            row["Pi3_max"] = float(xp.abs(Pi[:, 2]).max())
            row["twist_rate_max"] = float(xp.abs(sch.twist_rate(s)).max())
        self._newton(row, s.iterations)
        if self.n < SMALL_BATCH:
            d = self.host(s.d)
            for j in range(3):
                self._per_body(row, f"d{j + 1}_", d[:, j], AXES)
            self._per_body(row, "omega_", self.host(angular_velocity(s.d, s.v)), AXES)
            self._per_body(row, "K", self.host(K))
            self._per_body(row, "L_", self.host(pi), AXES)
            if Pi is not None:
                self._per_body(row, "Pi", self.host(Pi), "123")
        return row


class ULVCSystem(BodySystem):
    """``scheme = "ulvc"``: :class:`~granular.bodies.ulvc.LieGroupRK4` (``variant = "rk4"``)
    or the Newton-Euler reference :class:`~granular.bodies.ulvc.NewtonEulerRK4`
    (``"reference"``); free bodies that translate and rotate, with optional dead loads."""

    def __init__(self, config, backend):
        t, xp = config.table, backend.xp
        self.config, self.backend, self.n = config, backend, config.count
        self.label = f"ulvc {t.variant}"
        n = self.n
        mass = config.arrays.get("mass", np.ones(n))  # (N,) [M]; the key's default is 1
        self.bodies = ulvc.ULVCBodies(xp.asarray(mass), xp.asarray(config.inertia), n=n, projection=t.projection,
                                      l=tuple(t.l), backend=backend)  # fmt: skip
        self.gravity = None if t.gravity is None else np.asarray(t.gravity, dtype=np.float64)
        loads = None
        if self.gravity is not None or t.torque_body is not None or t.torque_spatial is not None:
            fs = None
            if self.gravity is not None:
                fs = xp.asarray(mass[:, None, None] * self.gravity[None, None, :])
            loads = ulvc.PointLoads(points=None if fs is None else xp.zeros((1, 1, 3)), force_spatial=fs,
                                    torque_body=t.torque_body, torque_spatial=t.torque_spatial,
                                    backend=backend)  # fmt: skip
        x0 = config.arrays.get("position", config.offsets)
        R = xp.asarray(config.R)
        v = config.arrays.get("velocity")
        U = None if v is None else xp.asarray(np.einsum("nji,nj->ni", config.R, v))
        state = self.bodies.state(R=R, x=xp.asarray(x0), U=U, Omega=xp.asarray(config.omega_body))
        cls = scheme_class(f"ulvc {t.variant}")
        if t.variant == "rk4":
            self.scheme = cls(self.bodies, loads, stages=t.stages)
            self.state = state
        else:
            self.scheme = cls(self.bodies, loads)
            self.state = ulvc.to_newton_euler(self.bodies, state)
        self._ulvc = ulvc

    def _parts(self):
        U, Om = self.state.velocities(self.bodies)
        b = self.bodies
        trans = 0.5 * b.mass * (U * U).sum(axis=-1)
        rot_ = 0.5 * (Om * (b.J @ Om[..., None])[..., 0]).sum(axis=-1)
        return U, Om, trans, rot_

    def frame(self):
        s, b = self.state, self.bodies
        U, Om, trans, rot_ = self._parts()
        R = self.host(s.R)
        J = np.broadcast_to(self.host(b.J), (self.n, 3, 3))
        v = np.einsum("nij,nj->ni", R, self.host(U))
        w = np.einsum("nij,nj->ni", R, self.host(Om))
        m = np.broadcast_to(self.host(b.mass), (self.n,))
        return self._frame_data(self.host(s.x), R, J, m, v, w, self.host(trans + rot_), 0.25 * self.config.table.spacing)

    def series(self):
        s, b, u = self.state, self.bodies, self._ulvc
        U, Om, trans, rot_ = self._parts()
        row = {"kinetic_translational": float(trans.sum()), "kinetic_rotational": float(rot_.sum())}
        total = row["kinetic_translational"] + row["kinetic_rotational"]
        if self.gravity is not None:
            m = np.broadcast_to(self.host(b.mass), (self.n,))
            ug = float(-(m * (self.host(s.x) @ self.gravity)).sum())
            row["U_gravity"] = ug
            total += ug
        row["total"] = total
        self._vector(row, "P", self.host(u.linear_momentum(b, s).sum(axis=0)))
        L = u.angular_momentum(b, s)
        self._vector(row, "L", self.host(L.sum(axis=0)))
        R = self.host(s.R)
        row["det_R_minus_1_max"] = det_minus_one(R)
        row["orthogonality_max"] = float(np.abs(R.swapaxes(1, 2) @ R - np.eye(3)).max())
        if self.n < SMALL_BATCH:
            self._per_body(row, "x_", self.host(s.x), AXES)
            self._per_body(row, "q", rot.quat_from_matrix(R), "0123")
            self._per_body(row, "v_", np.einsum("nij,nj->ni", R, self.host(U)), AXES)
            self._per_body(row, "Omega_", self.host(Om), "123")
            self._per_body(row, "K", self.host(trans + rot_))
            self._per_body(row, "L_", self.host(L), AXES)
        return row


# ---------------------------------------------------------------------- livens (002)


class LivensSystem(BodySystem):
    """``scheme = "livens"``: :class:`~granular.bodies.livens.rigid.EML` (``variant = "eml"``),
    its size reductions REML and Null-EML, and the comparators MPL, EMH, MPH of
    :mod:`granular.bodies.livens.comparators`; bodies rotating about a fixed point at
    ``position`` (default: spaced along x) with an optional gravity potential (115)."""

    def __init__(self, config, backend):
        t, xp, n = config.table, backend.xp, config.count
        self.config, self.backend, self.n = config, backend, n
        self.label = f"livens {t.variant}"
        mass = config.arrays.get("mass", np.zeros(n))  # (N,) [M]; the key's default is 0 (no potential)
        com = config.arrays.get("center_of_mass", np.zeros((n, 3)))
        self.pivot = config.arrays.get("position", config.offsets)
        self.mass = mass
        self.scheme = scheme_class(f"livens {t.variant}")(xp.asarray(config.inertia), n=n, mass=xp.asarray(mass),
                                         center_of_mass=xp.asarray(com), gravity=xp.asarray(t.gravity),
                                         backend=backend, rtol=t.newton_rtol, max_iter=t.newton_max_iter)  # fmt: skip
        q = xp.asarray(config.quaternion)
        if config.given == "omega":
            self.state = self.scheme.state(q, omega=xp.asarray(config.omega))
        else:
            self.state = self.scheme.state(q, Omega=xp.asarray(config.omega_body))
        self._lr = lr

    def frame(self):
        s, sch, lr = self.state, self.scheme, self._lr
        R = self.host(sch.rotation(s))
        com = self.host(sch.center_of_mass_position(s))
        w = self.host(lr.spatial_angular_velocity(s.q, s.v))
        J = np.broadcast_to(self.host(sch.J), (self.n, 3, 3))
        T = self.host(sch.kinetic_energy(s))
        size = 0.25 * self.config.table.spacing
        return self._frame_data(self.pivot + com, R, J, self.mass, np.cross(w, com), w, T, size)

    def series(self):
        s, sch, xp = self.state, self.scheme, self.backend.xp
        T, V = sch.kinetic_energy(s), sch.potential(s.q)
        E = sch.generalized_energy(s)
        row = {"kinetic_rotational": float(T.sum()), "U_gravity": float(V.sum()), "total": float((T + V).sum()),
               "generalized_energy": float(E.sum())}  # fmt: skip
        if self.config.table.variant in ("emh", "mph"):
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
    :class:`~granular.bodies.rolling_ball.integrators.RK4`; the work of the rail actuation
    and of the external force is tracked, so ``E - W`` is an invariant. Each ball is one
    vertex at its geometric centre (``radius`` = the ball's radius); the internal masses
    are not drawn (:mod:`granular.bodies.rolling_ball.output` draws them)."""

    def __init__(self, config, backend):
        t, xp, n = config.table, backend.xp, config.count
        self.config, self.backend, self.n = config, backend, n
        self.label = "rolling_ball rk4"
        rails = [make_rail(R, m.rail) for m in t.masses]
        acts = [make_actuation(R, m.actuation) for m in t.masses]
        masses = [m.mass for m in t.masses]
        self.model = RollingBall(t.radius, t.shell_mass, config.inertia, shell_com=t.shell_com, masses=masses,
                                 rails=rails, actuations=acts, gravity=t.gravity, external_force=t.external_force,
                                 n=n, backend=backend)  # fmt: skip
        xy = config.arrays.get("xy", config.offsets[:, :2])
        self.state = self.model.state(Omega=xp.asarray(config.omega_body), q=xp.asarray(config.quaternion),
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


def build_system(config, backend):
    """The adapter for ``config`` (a :class:`~granular.bodies.scenes.schema.BodiesConfig`) on
    ``backend``. ValueError from the scheme for inputs the schema could not check."""
    scheme = config.table.scheme
    if scheme in ("directors", "nontwisting"):
        return DirectorSystem(config, backend)
    if scheme == "ulvc":
        return ULVCSystem(config, backend)
    if scheme == "livens":
        return LivensSystem(config, backend)
    return RollingBallSystem(config, backend)
