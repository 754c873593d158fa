"""Scene adapters of the director schemes (paper 000) and unified local velocity
coordinates (paper 001), and :func:`build_system`, which picks the adapter for a
``[bodies]`` table.

The interface the adapters share (``scheme``, ``state``, ``step``, ``advance``, ``time``,
``step_count``, ``frame``, ``series``, ``state_arrays``, ``restore``) is described in
:mod:`granular.bodies.scene_base`; :mod:`granular.bodies.scene_more` holds the adapters of
the Livens quaternion schemes (paper 002) and the rolling ball (paper 004).
"""

from __future__ import annotations

import numpy as np

from .. import rotations as rot
from . import scene_more, ulvc
from .core import scheme_class
from .directors import ExternalMoment, angular_velocity, directors_from_matrix
from .nontwisting import CASES, ramp
from .scene_base import AXES, SMALL_BATCH, BodySystem, det_minus_one, inertia_components

__all__ = ["AXES", "SMALL_BATCH", "BodySystem", "DirectorSystem", "ULVCSystem", "build_system", "det_minus_one",
           "inertia_components"]  # fmt: skip


class DirectorSystem(BodySystem):
    """``scheme = "directors"`` / ``"nontwisting"``: :class:`~granular.bodies.directors.DirectorEM`,
    :class:`~granular.bodies.nontwisting.NonTwistingEM` and the DLA comparators of
    :mod:`granular.bodies.dla`, rotating about a fixed point (pure rotation)."""

    def __init__(self, cfg, backend):
        t = cfg.table
        self.cfg, self.backend, self.n = cfg, backend, cfg.count
        self.nonholonomic = t.scheme == "nontwisting"
        kwargs = dict(n=self.n, backend=backend, moment=self._moment(cfg, backend.xp), rtol=t.newton_rtol,
                      max_iter=t.newton_max_iter)  # fmt: skip
        if self.nonholonomic:
            kwargs["a"] = t.a
        self.label = f"{t.scheme} {t.variant}"
        xp = backend.xp
        self.scheme = scheme_class(f"{t.scheme} {t.variant}")(xp.asarray(cfg.inertia), **kwargs)
        self.state = self.scheme.state(directors_from_matrix(xp.asarray(cfg.R)), xp.asarray(cfg.omega))

    @staticmethod
    def _moment(cfg, xp):
        """The loads: presets of paper 000 (115), (118) with the ramp (116), or [bodies.moment]."""

        t = cfg.table
        if t.moment is not None:
            m = t.moment
            ms = None if m.spatial is None else xp.asarray(np.tile(m.spatial, (cfg.count, 1)))
            mc = None if m.material is None else xp.asarray(np.tile(m.material, (cfg.count, 1)))
            if ms is None and mc is None:
                return None
            return ExternalMoment(spatial=ms, material=mc, profile=ramp if m.time == "ramp" else None)
        if all(name in ("none", "case1") for name in cfg.load):
            return None
        comps = xp.asarray([[-CASES[int(name[-1])][1][0], -CASES[int(name[-1])][1][1]] if name != "none"
                            else [0.0, 0.0] for name in cfg.load], dtype=xp.float64)  # fmt: skip
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
        return self._frame_data(self.cfg.offsets, R, J, 0.0, np.zeros((self.n, 3)), w, K, 0.25 * self.cfg.table.spacing)

    def series(self):
        s, sch, xp = self.state, self.scheme, self.backend.xp
        K = sch.kinetic_energy(s)
        pi = sch.spatial_angular_momentum(s)
        row = {"kinetic_rotational": float(K.sum()), "total": float(K.sum())}
        self._vector(row, "L", self.host(pi.sum(axis=0)))
        row["constraint_residual_max"] = float(sch.constraint_residual(s).max())
        row["hidden_constraint_max"] = float(sch.hidden_constraint_residual(s).max())
        row["det_R_minus_1_max"] = det_minus_one(self._R())
        if self.cfg.table.variant == "dla":
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

    def __init__(self, cfg, backend):
        t, xp = cfg.table, backend.xp
        self.cfg, self.backend, self.n = cfg, backend, cfg.count
        self.label = f"ulvc {t.variant}"
        n = self.n
        mass = cfg.arrays.get("mass", np.ones(n))  # (N,) [M]; the key's default is 1
        self.bodies = ulvc.ULVCBodies(xp.asarray(mass), xp.asarray(cfg.inertia), n=n, projection=t.projection,
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
        x0 = cfg.arrays.get("position", cfg.offsets)
        R = xp.asarray(cfg.R)
        v = cfg.arrays.get("velocity")
        U = None if v is None else xp.asarray(np.einsum("nji,nj->ni", cfg.R, v))
        state = self.bodies.state(R=R, x=xp.asarray(x0), U=U, Omega=xp.asarray(cfg.omega_body))
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
        return self._frame_data(self.host(s.x), R, J, m, v, w, self.host(trans + rot_), 0.25 * self.cfg.table.spacing)

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


def build_system(cfg, backend):
    """The adapter for ``cfg`` (a :class:`~granular.bodies.scene_schema.BodiesConfig`) on
    ``backend``. ValueError from the scheme for inputs the schema could not check."""
    scheme = cfg.table.scheme
    if scheme in ("directors", "nontwisting"):
        return DirectorSystem(cfg, backend)
    if scheme == "ulvc":
        return ULVCSystem(cfg, backend)
    if scheme == "livens":
        return scene_more.LivensSystem(cfg, backend)
    return scene_more.RollingBallSystem(cfg, backend)
