"""The particle engine as a system of the run loop (:class:`~granular.run.runner.Runner`).

:class:`ParticleSystem` joins a model, its state and an integrator, and gives the runner
what it needs: blocks of steps on the device, series rows, frames, the health check and
the kept state (:mod:`granular.particles.health`), and the arrays of a checkpoint.

The frame's point data: ``id``, ``radius``, ``mass``, ``inertia``, ``velocity``,
``angular_velocity`` (spatial), ``d1``, ``d2``, ``d3`` (the columns of ``R``, for glyphs),
``kinetic_energy``, and with the dissipative law ``contacts``, ``contact_force``,
``contact_moment``, ``dissipated``, in a periodic box ``image`` (the periods each
particle crossed); bonds are line cells with ``strain``, ``angle`` and
``broken``; with bonds that can break, ``fragment`` (the particle's fragment, numbered
by mass). The series row: ``time``, ``step``, energies by kind, ``total``, ``P_*``,
``L_*``, ``broken_bonds``, with bonds that can break ``U_released``, ``damage``,
``fragments`` and ``largest_fragment``, pendulum invariants, and for fewer than
:data:`SMALL_SYSTEM` particles each particle's state. With bonds that can break a run
ends with ``fragments.csv`` (:meth:`ParticleSystem.write_final`). The fragments are
joined by intact bonds, or with ``fragments="contacts"`` (the ``[run]`` key) by
touching contacts too (:mod:`granular.particles.fragments`).
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np

from kernels.layout import DIAG, FAMILY_CONTACTS, FAMILY_WALLS

from ..io import write_walls
from . import diagnostics as diag
from . import fragments
from .feeds import Insertion, Ledger, Obstacles, Outlet, particle_set, resize
from .setup import boundary_names, change_setup, present, saved_setup
from .statefile import STATE_ARRAYS, restore_state, state_arrays
from .health import ENERGY_TOLERANCE, HealthCheck, Snapshot, conserved_energy

SMALL_SYSTEM = 10  # below this many particles, series.csv carries every particle's state
#: What may join particles into the fragments of a run (``[run] fragments``).
FRAGMENTS = ("bonds", "contacts")
#: Why a model without particle contacts cannot count fragments by contacts.
CONTACTS_NEEDED = ('run.fragments: "contacts" joins touching particles through the neighbour list of the particle '
                   "contacts, and this model has no particle contacts: give it a contact law (ModelBuilder."
                   'set_contacts, or materials), or count fragments by intact bonds (fragments = "bonds")')  # fmt: skip


def frame_data(model, state, contacts=False):
    """Points, point data, bond lines and bond cell data of one frame: host arrays of
    their own (copies, never views of the state, which the next steps change while a
    background thread may still be writing the frame). ``contacts``: the ``fragment``
    point data joins touching particles too."""
    be = model.backend
    x = np.array(be.to_host(state.x))
    R = be.to_host(state.R)
    v = np.array(be.to_host(state.v))
    w = np.array(be.to_host(state.omega))
    m, J = be.to_host(model.mass), be.to_host(model.inertia)
    point = {
        "id": np.array(model.ids, dtype=np.int64),
        "radius": be.to_host(model.radius),
        "mass": m,
        "inertia": J,
        "velocity": v,
        "angular_velocity": w,
        "d1": R[:, :, 0],
        "d2": R[:, :, 1],
        "d3": R[:, :, 2],
        "kinetic_energy": 0.5 * m * (v * v).sum(axis=1) + 0.5 * J * (w * w).sum(axis=1),
    }
    if model.period.shape[0]:  # a periodic box: the periods crossed (x + image L is the unwrapped position)
        point["image"] = np.array(be.to_host(state.image), dtype=np.int32)
    if model.law is not None and model.law.dissipates:
        point.update(contact_data(model, state))
    lines, cell = None, None
    if breakable(model):
        point["fragment"] = fragments.numbers(model, state, contacts)
    if model.n_bonds:
        meas = model.bonds.measures(model, state)
        lines = np.stack([model.bonds.host["a"], model.bonds.host["b"]], axis=1)
        cell = {"strain": meas[:, 3], "angle": meas[:, 4], "broken": np.array(be.to_host(state.broken), dtype=np.int8)}
    return x, point, lines, cell


def contact_data(model, state) -> dict:
    """Per-particle point data of the dissipative law: ``contacts`` (touching partners
    and walls), ``contact_force`` and ``contact_moment`` (the sum of the contact and wall
    forces and spatial moments on the particle, the springs as they stand, the damping
    at the current velocities), and ``dissipated`` (the energy dissipated so far by its wall
    contacts and by the pairs of which it is the lower index)."""

    be, xp = model.backend, model.backend.xp
    rows = be.to_host(model.diagnostics_rows(state))
    count = np.array(rows[:, DIAG["contacts"]], dtype=np.int32)
    cfg = SimpleNamespace(x=state.x, v=state.v, q=state.q, omega=state.omega, F=xp.zeros_like(state.F),
                          RM=xp.zeros_like(state.RM), broken=state.broken, released=state.released,
                          wall_springs=state.wall_springs, dissipated=state.dissipated,
                          neighbors=state.neighbors)  # fmt: skip
    model.accumulate_family(FAMILY_CONTACTS, cfg)
    if model.force("walls") is not None:
        model.accumulate_family(FAMILY_WALLS, cfg)
    return {"contacts": count, "contact_force": np.array(be.to_host(cfg.F)),
            "contact_moment": np.array(be.to_host(cfg.RM)),
            "dissipated": np.array(be.to_host(state.dissipated).sum(axis=1))}  # fmt: skip


#: Columns of ``series.csv`` with the dissipative law: the energy dissipated so far by
#: each mechanism (``total`` plus their sum is what the scheme conserves).
DISSIPATED = ("dissipated_normal", "dissipated_friction", "dissipated_rolling", "dissipated_twisting")


def breakable(model) -> bool:
    """Whether the model's bonds can break (then runs book ``U_released`` and the fragments)."""
    return model.bonds is not None and model.bonds.can_break


def series_row(model, state, contacts=False, states=True) -> dict:
    """One ``series.csv`` row: energies, momenta, invariants and (small systems) states.

    Energies, momenta and bond counts come from one fused diagnostics kernel and one
    read-back. With bonds that can break, ``U_released`` is the energy the broken bonds
    had when they broke (``total + U_released`` is conserved), and ``damage``,
    ``fragments`` and ``largest_fragment`` describe the pieces
    (:func:`granular.particles.fragments.summary`; ``contacts``: touching particles are
    joined too)."""
    totals = model.diagnostics(state)
    row = {"time": state.time, "step": float(state.step)}
    row.update(diag.energies(model, state, totals))
    for a in "xyz":
        row[f"P_{a}"] = totals[f"P_{a}"]
    for a in "xyz":
        row[f"L_{a}"] = totals[f"L_{a}"]
    row["broken_bonds"] = totals["broken_bonds"]
    if breakable(model):
        row["U_released"] = totals["U_released"]
        row.update(fragments.summary(model, state, contacts))
    if model.law is not None and model.law.dissipates:
        for k in DISSIPATED:
            row[k] = totals[k]
        row["contacts"] = totals["contacts"]
    walls = model.force("walls")
    if walls is not None and walls.moving:  # total + dissipated - work_walls is conserved
        row["work_walls"] = totals["work_walls"]
    if model.force("pendulum") is not None:
        dot, norm = diag.pendulum_invariants(model, state)
        for k in range(min(len(dot), SMALL_SYSTEM)):
            row[f"pendulum{k}_Rrho0_dot_Omega"] = float(dot[k])
            row[f"pendulum{k}_norm_Rrho0"] = float(norm[k])
    if states and model.n < SMALL_SYSTEM:
        be = model.backend
        for name, arr in (("x", state.x), ("v", state.v), ("q", state.q), ("omega", state.omega)):
            a = be.to_host(arr)
            for i in range(model.n):
                for c in range(a.shape[1]):
                    row[f"p{i}_{name}{c}"] = float(a[i, c])
    return row


class ParticleSystem:
    """A model and its state advanced by ``integrator`` (an
    :class:`~granular.particles.integrators.ExplicitIntegrator`), for the run loop.

    ``energy_tolerance``: the health check's (``[run] energy_tolerance``);
    ``health_start``: a resumed run's checkpoint ``meta["health"]`` (the start values the
    check compares against); ``stable_step``: the setup's
    :class:`~granular.particles.stability.StepEstimate`, reported in the start event and ``run.json``;
    ``fragments``: ``"bonds"`` or ``"contacts"``, what joins particles into the fragments
    of the series, frames and ``fragments.csv`` (``[run] fragments``; ``"contacts"``
    needs particle contacts)."""

    def __init__(self, model, state, integrator, energy_tolerance=None, health_start=None, stable_step=None,
                 health=True, fragments="bonds", feeds=None, ledger=None):  # fmt: skip
        if fragments not in FRAGMENTS:
            raise ValueError(f"fragments: {fragments!r}; allowed: {', '.join(map(repr, FRAGMENTS))}")
        if fragments == "contacts" and model.force("contacts") is None:
            raise ValueError(CONTACTS_NEEDED)
        self.by_contacts = fragments == "contacts"
        self.model, self.state, self.integrator = model, state, integrator
        self.backend = model.backend
        self.n = model.n
        self.label = integrator.scheme
        self.energy_tolerance = energy_tolerance or ENERGY_TOLERANCE
        self.health_start = health_start
        self.stable_step = stable_step
        self.health = None
        self.snapshot = None
        self.checks = bool(health)
        #: Insertions and outlets (:mod:`granular.particles.feeds`) applied by
        #: :meth:`apply_feeds`, and the ledger of what entered and left; None for a closed
        #: system (no ledger columns, each particle's state in the series of a small one).
        self.feeds = None if feeds is None else list(feeds)
        self.ledger = None if feeds is None else (Ledger() if ledger is None else ledger)
        self.stage = None  # the stage of a staged run (granular.run.stages), kept in checkpoints

    @property
    def time(self) -> float:
        return self.state.time

    @property
    def dtype(self):
        """The precision the engine steps in (the model's dtype)."""
        return self.model.dtype

    def step_size(self, dt) -> float:
        """The step the engine takes for ``dt``: ``dt`` in the model's dtype."""
        return float(self.model.dtype.type(dt))

    @property
    def step_count(self) -> int:
        return self.state.step

    def prepare(self, dt) -> None:
        """Forces of the first state, the health check's start values, the first kept state."""
        self.integrator.prepare(self.model, self.state)
        if not self.checks:
            return
        row = self.series_row()
        self.health = HealthCheck(self.model, dt, row, self.energy_tolerance, start=self.health_start)
        self.snapshot = Snapshot(self.state, STATE_ARRAYS, self.model)

    def advance(self, dt, k) -> None:
        self.integrator.advance(self.model, self.state, dt, k)

    def series_row(self) -> dict:
        row = series_row(self.model, self.state, self.by_contacts, states=self.ledger is None)
        if self.ledger is not None:
            row.update(self.ledger.columns())
            b = self.model.builder
            if b is not None and b._setup is not None and sum(boundary_names(b), []):
                row.setdefault("U_pw", 0.0)  # walls or meshes a change may bring
                row.setdefault("work_walls", 0.0)
            self.ledger.pad(row, self.feeds)  # the columns the series has or may come to have
        return row

    # ----------------------------------------------------------------- an open system
    def _balance(self):
        """The conserved sum of the energy check and the momentum, now (host floats); the
        health check's scale takes in the row's energies."""
        row = series_row(self.model, self.state, False, states=False)
        if self.health is not None:
            self.health.widen(row)
        return conserved_energy(row), np.array([row["P_x"], row["P_y"], row["P_z"]])

    def change_setup(self, add=(), remove=(), motions=None, gravity=None) -> None:
        """Change the walls, meshes, motions or gravity now
        (:func:`granular.particles.setup.change_setup`), booking the energy the change
        brought (``E_setup``) in the ledger; the changed state is the one a failure goes
        back to."""
        if self.ledger is None:
            raise ValueError("this run's system is closed: the set-up can change in a run made with feeds "
                             "(Simulation(..., feeds=[]), or a scene's [[stages]]), whose series has the ledger's "
                             "columns from its first row")  # fmt: skip
        e0, _ = self._balance()
        change_setup(self.model, self.state, add=add, remove=remove, motions=motions, gravity=gravity)
        self.integrator.prepare(self.model, self.state)  # the forces of the new set-up
        e1, _ = self._balance()
        self.ledger.values["E_setup"] += e1 - e0
        if self.health is not None:
            self.snapshot = Snapshot(self.state, STATE_ARRAYS, self.model)

    def edit(self, keep=None, add=None) -> None:
        """Take out the particles not in the mask ``keep`` and put in those of ``add``
        (:func:`granular.particles.feeds.resize`), booking what they took and brought in
        the ledger; the edited state is the one a failure goes back to."""
        if self.ledger is None:
            raise ValueError("this run's system is closed: particles can enter and leave a run made with feeds "
                             "(Simulation(..., feeds=[]), or a scene's [[insert]] or [[outlets]]), whose series "
                             "has the ledger's columns from its first row")  # fmt: skip
        model, state, be, led = self.model, self.state, self.backend, self.ledger
        if keep is not None and not np.all(keep):
            keep = np.asarray(keep, dtype=bool)
            mass = float(np.asarray(be.to_host(model.mass), dtype=np.float64)[~keep].sum())
            e0, p0 = self._balance()
            resize(model, state, keep=keep)
            e1, p1 = self._balance()
            led.values["removed"] += float((~keep).sum())
            led.values["mass_removed"] += mass
            led.values["E_removed"] += e0 - e1
            led.P_removed += p0 - p1
        if add is not None and len(add["x"]):
            e0, p0 = self._balance()
            resize(model, state, add=add)
            e1, p1 = self._balance()
            led.values["inserted"] += float(len(add["x"]))
            led.values["mass_inserted"] += float(np.sum(add["mass"]))
            led.values["E_inserted"] += e1 - e0
            led.P_inserted += p1 - p0
        self.n = model.n
        if self.health is not None:
            self.health.m_min = float(np.asarray(be.to_host(model.mass)).min())
            self.snapshot = Snapshot(state, STATE_ARRAYS, model)

    def apply_feeds(self) -> None:
        """The outlets take out the particles that leave, then each insertion puts in
        the particles due now that find room."""
        if not self.feeds:
            return
        outlets = [f for f in self.feeds if isinstance(f, Outlet) and f.active]
        if outlets:
            x = np.asarray(self.backend.to_host(self.state.x), dtype=np.float64)
            leave = np.zeros(self.model.n, dtype=bool)
            for f in outlets:
                leave |= f.leaving(x)
            if leave.all():
                leave[-1] = False  # a model keeps one particle; it leaves at the next event
            if leave.any():
                self.edit(keep=~leave)
        for f in self.feeds:
            if isinstance(f, Insertion) and f.active and f.due(self.state.time):
                add = f.draw(self.state.time, Obstacles(self.model, self.state, f.radius[1] + f.gap))
                if add is not None:
                    self.edit(add=add)

    def frame(self):
        return frame_data(self.model, self.state, self.by_contacts)

    def plot_columns(self, data) -> dict:
        """The columns of ``series.csv`` the plots show: ``broken_bonds`` only where bonds
        can break (else it is 0 by construction, an empty panel)."""
        bonds = self.model.bonds
        if bonds is None or not bonds.can_break:
            data = {k: v for k, v in data.items() if k != "broken_bonds"}
        return data

    def check(self, row):
        return self.health.problem(row, self.state)

    def keep(self) -> None:
        self.snapshot.take(self.state)

    def rewind(self) -> None:
        self.snapshot.restore(self.state)

    def state_arrays(self) -> dict:
        out = state_arrays(self.model, self.state)
        if self.ledger is not None:
            out.update(particle_set(self.model))
        return out

    def restore(self, arrays) -> None:
        restore_state(self.model, self.state, arrays)

    def _wall_view(self):
        """Where the walls are drawn: around the particles' centroid at the first call,
        squares twice the particles' extent."""
        if getattr(self, "_view", None) is None:
            model = self.model
            x = model.backend.to_host(self.state.x)
            size = 2.0 * float(np.ptp(x, axis=0).max() + 4 * model.backend.to_host(model.radius).max())
            self._view = (x.mean(axis=0), size)
        return self._view

    def write_static(self, out_dir) -> None:
        """``walls.vtu``: the walls at rest as squares around the particles (moving walls
        are drawn at each frame instead: :meth:`walls_frame`)."""
        walls = self.model.force("walls")
        if walls is not None and walls.count and not walls.moving:
            write_walls(out_dir, walls.planes_host, *self._wall_view())

    def wall_loads_row(self):
        """A ``walls.csv`` row: ``time``, ``step``, and for wall ``k`` the force on it
        ``wall{k}_Fx..Fz`` and its moment about its centre ``wall{k}_Mx..Mz``
        (:func:`granular.particles.analysis.wall_loads`), then for mesh ``k`` the same as
        ``mesh{k}_...`` (:func:`granular.particles.analysis.mesh_loads`); None without
        walls or meshes."""
        b = self.model.builder
        if self.model.force("walls") is None and (b is None or b._setup is None or not sum(boundary_names(b), [])):
            return None
        row = {"time": self.state.time, "step": float(self.state.step)}
        names = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")
        wall_loads, mesh_loads = list(self.model.wall_loads(self.state)), list(self.model.mesh_loads(self.state)[0])
        b = self.model.builder
        if b is not None and b._setup is not None:  # numbered as the builder has them; zeros while absent
            walls, meshes = boundary_names(b)
            here_w, here_m = present(b, b._setup)
            zero = np.zeros(6)
            wall_loads = [wall_loads[here_w.index(n)] if n in here_w else zero for n in walls]
            mesh_loads = [mesh_loads[here_m.index(n)] if n in here_m else zero for n in meshes]
        for k, load in enumerate(wall_loads):
            for c, name in enumerate(names):
                row[f"wall{k}_{name}"] = float(load[c])
        for k, load in enumerate(mesh_loads):
            for c, name in enumerate(names):
                row[f"mesh{k}_{name}"] = float(load[c])
        return row

    def meshes_frame(self):
        """``(points, triangles, mesh, force, displacement)`` of the triangle meshes now
        (:class:`granular.io.vtk.MeshFrameWriter`), else None without meshes."""
        walls = self.model.force("walls")
        if walls is None or not walls.meshes:
            return None
        _, per_tri = self.model.mesh_loads(self.state)
        pts, tris, ids, disp = [], [], [], []
        off = 0
        for m, spec in enumerate(walls.meshes):
            mesh = spec["mesh"]
            now = walls.mesh_vertices_now(m)
            pts.append(now)
            disp.append(now - mesh.vertices)
            tris.append(mesh.triangles + off)
            ids.append(np.full(len(mesh.triangles), m))
            off += len(mesh.vertices)
        return np.concatenate(pts), np.concatenate(tris), np.concatenate(ids), per_tri, np.concatenate(disp)

    def walls_frame(self):
        """``(planes, center, size)`` of the walls now when some wall moves, else None."""
        walls = self.model.force("walls")
        if walls is None or not walls.moving or not walls.count:
            return None
        return (walls.planes_now(), *self._wall_view())

    def write_final(self, out_dir) -> None:
        """``fragments.csv`` of the last state, when bonds can break."""
        if breakable(self.model):
            frags = fragments.fragments(self.model, self.state, self.by_contacts)
            fragments.write_csv(os.path.join(out_dir, "fragments.csv"), frags)

    def checkpoint_meta(self) -> dict:
        meta = {"integrator": self.label, "health": self.health.start_values()}
        if self.ledger is not None:
            meta["feeds"] = {"ledger": self.ledger.get_state(), "each": [f.get_state() for f in self.feeds]}
        if self.stage is not None:
            meta["stage"] = dict(self.stage)
        setup = saved_setup(self.model)
        if setup is not None:
            meta["setup"] = setup
        return meta

    def _estimate(self):
        return self.stable_step.as_dict() if self.stable_step is not None else None

    def start_fields(self, dt) -> dict:
        est = self._estimate()
        return {"dt": dt, "stable_step": None if est is None else est["h_max"],
                "stable_step_mode": None if est is None else est["description"]}  # fmt: skip

    def describe(self, dt) -> dict:
        be = self.backend
        return {"precision": str(self.model.dtype), "integrator": self.label,
                "graphs": self.integrator.graphs and be.name == "gpu" and not be.simulated, "dt": dt,
                "stable_step": self._estimate(), "particles": self.model.n, "bonds": self.model.n_bonds}  # fmt: skip

    def health_info(self) -> dict:
        return {"health": {"energy_tolerance": self.health.tolerance, **self.health.start_values()}}


__all__ = [
    "CONTACTS_NEEDED",
    "DISSIPATED",
    "FRAGMENTS",
    "SMALL_SYSTEM",
    "STATE_ARRAYS",
    "ParticleSystem",
    "contact_data",
    "frame_data",
    "restore_state",
    "series_row",
    "state_arrays",
]
