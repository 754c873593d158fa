"""``Model``: what does not change during a run, on one backend.

=============  ========  ===================================================
``mass``       (N,)      particle mass ``m`` [M], > 0
``inertia``    (N,)      scalar moment of inertia ``J`` [M L²], > 0
``radius``     (N,)      radius [L], > 0
``forces``     list      interaction families (:mod:`granular.particles.forces`)
``bonds``                the :class:`~granular.particles.forces.Bonds` family or ``None``
``law``                  the contact law (:mod:`granular.particles.forces.laws`) or ``None``
=============  ========  ===================================================

and the initial conditions, from which :meth:`Model.state` makes a fresh
:class:`~granular.particles.state.State`. A model is made by
:meth:`granular.particles.builder.ModelBuilder.finalize`.
"""

from __future__ import annotations

import numpy as np

from kernels import contact_laws
from kernels.layout import DIAGNOSTICS, Dynamics, Particles
from kernels.meshes import LOAD_WIDTH, SLOTS

from ..backend import Backend
from .forces.bonds import empty_bond_args
from .forces.contacts import no_contact_args, no_wall_args
from .forces.fields import field_args
from .state import State


class Model:
    """Fixed per-particle parameters and interaction families on one backend.

    Made by :meth:`ModelBuilder.finalize`, which checks the inputs; :meth:`state` makes a
    fresh :class:`~granular.particles.state.State` at the initial conditions.

    The attributes (arrays on ``backend``, of float dtype ``dtype``):

    =============  ==============  =======================================================
    ``n``          int             number of particles ``N``
    ``n_bonds``    int             number of bonds ``B``
    ``mass``       (N,) float      particle mass ``m`` [M]
    ``inertia``    (N,) float      scalar moment of inertia ``J`` [M L²]
    ``radius``     (N,) float      radius [L]
    ``forces``     list            interaction families (:mod:`granular.particles.forces`), in
                                   the order gravity, pendulum, bonds, contacts, walls
    ``bonds``                      the :class:`~granular.particles.forces.Bonds` family or ``None``
    ``law``                        the contact law of the contacts and walls
                                   (:class:`~granular.particles.forces.laws.ContactLaw`), or
                                   ``None`` without either
    ``kernels``                    the step kernels, compiled for the law
                                   (:func:`kernels.cpu.for_law`)
    ``backend``                    the :class:`~granular.backend.Backend` of every array
    ``dtype``      numpy.dtype     float64 (default) or float32
    =============  ==============  =======================================================

    Parameters
    ----------
    backend : Backend
        The backend of every array.
    dtype : {numpy.float64, numpy.float32}
        Float dtype of the arrays.
    mass, inertia, radius : array_like, (N,) float
        Masses [M], scalar moments of inertia [M L²] and radii [L].
    forces : list
        Interaction families (:mod:`granular.particles.forces`).
    initial : tuple of ndarray
        Host initial conditions ``(x, v, q, omega)``: (N, 3) [L], (N, 3) [L/T], (N, 4)
        unit quaternions [-], (N, 3) spatial angular velocities [1/T].
    bonds : Bonds, optional
        The bond family (also in ``forces``), or ``None``.
    law : ContactLaw, optional
        The contact law, or ``None`` (no contacts, no walls).
    kernels : namespace, optional
        The step kernels for ``law`` (default: compiled for it, or for paper 003's law).
    """

    def __init__(self, backend: Backend, dtype, mass, inertia, radius, forces, initial, bonds=None, law=None,
                 kernels=None):  # fmt: skip
        xp = backend.xp
        self.law = law
        if kernels is None:
            walls = next((f for f in forces if f.kind == "walls"), None)
            kernels = backend.kernels.for_law(law.kernel if law is not None else contact_laws.hertz,
                                              meshes=walls is not None and bool(walls.meshes))  # fmt: skip
        self.kernels = kernels
        self.bonds = bonds
        self.n_bonds = 0 if bonds is None else bonds.count
        self.backend = backend
        self.dtype = np.dtype(dtype)
        self.n = len(mass)
        self.mass = xp.asarray(mass, dtype=dtype)
        self.inertia = xp.asarray(inertia, dtype=dtype)
        self.radius = xp.asarray(radius, dtype=dtype)
        self.forces = list(forces)
        self._initial = initial  # host arrays (x, v, q, omega)
        #: A periodic box (``ModelBuilder.set_periodic``): (3, 3) host rows ``(lo, L, 1/L)``,
        #: ``L = 0`` along an axis that is not periodic; (0, 3) without one.
        self.period = np.zeros((0, 3))
        self.replica = None  # (N,) int32, each particle's replica, in a model of replicas (ModelBuilder.replicas)
        self.replica_count = 0
        #: The builder this model was made from (a copy, :meth:`ModelBuilder.finalize`): what
        #: an edit of the particle set (:mod:`granular.particles.feeds`) starts from; None
        #: for a model made otherwise.
        self.builder = None
        #: (N,) int64 each particle's number, kept when particles enter and leave (frames'
        #: ``id``): the index at the start, then the next free number for each particle
        #: that enters.
        self.ids = np.arange(self.n, dtype=np.int64)
        self.next_id = self.n  # the number the next particle to enter gets
        self._static_args = None
        self._diag_rows = None
        self._zeros = None

    def state(self) -> State:
        """Make a new state at the model's initial conditions (forces not yet evaluated).

        Returns
        -------
        State
            Copies of the initial ``x``, ``v``, ``q``, ``omega`` on the model's backend in
            its dtype; zero forces (``forces_valid`` false), intact bonds, ``time = 0``,
            ``step = 0``; with a contact law that keeps history, no history (the wall
            contacts' (N, W, H) and a neighbour list without any); with one that
            dissipates, zero dissipated energies (N, 4); with walls, a zero running
            maximum of the wall contact force (N,), with moving walls their work (N,).
            Every call gives an independent state.
        """
        x, v, q, omega = self._initial
        walls = self.force("walls")
        history = self.law.history if self.law is not None else 0
        n_walls = 0 if walls is None else walls.per_particle
        state = State.allocate(self.backend.xp, self.n, self.dtype, x, v, q, omega, self.n_bonds,
                               walls=n_walls if history else 0, history=history,
                               dissipation=self.law is not None and self.law.dissipates,
                               wall_peak=walls is not None, wall_work=walls is not None and walls.moving,
                               periodic=self.period.shape[0] > 0)  # fmt: skip
        contacts = self.force("contacts")
        state.neighbors = contacts.new_list() if contacts is not None else None
        return state

    def force(self, kind: str):
        """Return the interaction family of ``kind``, or ``None``.

        Parameters
        ----------
        kind : {"gravity", "pendulum", "bonds", "contacts", "walls"}
            The family's ``kind``.

        Returns
        -------
        object or None
            The family (a class of :mod:`granular.particles.forces`), ``None`` if the
            model has none of that kind.
        """
        for f in self.forces:
            if f.kind == kind:
                return f
        return None

    # ------------------------------------------------------------ kernel arguments

    def kernel_args(self, cfg=None) -> dict:
        """Internal plumbing of the step loop: the kernels' argument bundles.

        The bundles of :mod:`kernels.layout` (device views): ``par``, ``bonds``,
        ``walls``, ``fields`` (fixed), ``contacts`` and ``grid`` (``cfg``'s neighbour list:
        a state's own, new arrays after a regrow)."""
        be, dt = self.backend, self.dtype
        if self._static_args is None:
            dev = be.kernels.to_device
            bonds = self.bonds.kernel_args() if self.bonds is not None else empty_bond_args(be, self.n, dt, self.period)
            walls = self.force("walls")
            self._static_args = {
                "par": Particles(dev(self.mass), dev(self.inertia), dev(self.radius)),
                "bonds": bonds,
                "walls": walls.kernel_args() if walls is not None else no_wall_args(be, dt),
                "fields": field_args(be, self.n, self.force("gravity"), self.force("pendulum"), dt),
            }
        contacts = self.force("contacts")
        if contacts is not None:
            pair = contacts.kernel_args(cfg)
        else:
            pair = no_contact_args(be, dt, self.law.args() if self.law is not None else None, self.period)
        return dict(self._static_args, contacts=pair[0], grid=pair[1])

    def neighbors_of(self, cfg):
        """The neighbour list of ``cfg`` (a state's own; the contact family's scratch list
        for another configuration), or ``None`` without one."""
        contacts = self.force("contacts")
        return contacts.list_of(cfg) if contacts is not None else None

    def dynamics(self, cfg, step=False) -> Dynamics:
        """Internal plumbing of the step loop: the ``Dynamics`` bundle of ``cfg``.

        ``cfg`` is a state or configuration (an object with ``x``, ``q``, ``F``, ``RM``,
        ``broken`` and optionally ``v``, ``omega``, ``released``, ``wall_springs``,
        ``dissipated``, ``wall_contact_peak``, ``neighbors``; missing velocities count as
        zero, missing history as none, a missing peak is not kept). With a law that reads
        velocities, ``step``: the bundle of the step loop (the law's own ``vp``, ``wp``,
        written by the advance pass); else the force pass sees ``v`` and ``Ω``
        themselves."""
        dev = self.backend.kernels.to_device
        xp = self.backend.xp
        if self._zeros is None:
            self._zeros = (xp.zeros((self.n, 3), dtype=self.dtype), xp.zeros(self.n_bonds, dtype=self.dtype))
        v = getattr(cfg, "v", None)
        omega = getattr(cfg, "omega", None)
        released = getattr(cfg, "released", None)
        v = self._zeros[0] if v is None else v
        omega = self._zeros[0] if omega is None else omega
        law = self.law_arrays(cfg)
        if self.law is not None and self.law.vp is not None:
            vp, wp = (self.law.vp, self.law.wp) if step else (v, omega)
        else:
            vp = wp = law["none3"]
        return Dynamics(
            dev(cfg.x), dev(v), dev(cfg.q), dev(omega), dev(cfg.F), dev(cfg.RM), dev(cfg.broken),
            dev(self._zeros[1] if released is None else released), dev(vp), dev(wp), dev(law["hist"]),
            dev(law["live"]), dev(law["whist"]), dev(law["dissip"]), dev(law["nbr"]), dev(law["count"]), dev(law["x_ref"]),
            dev(self.wall_peak_of(cfg)), dev(self.wall_work_of(cfg)), dev(self.image_of(cfg)),
        )  # fmt: skip

    def image_of(self, cfg):
        """Internal plumbing of the step loop: ``cfg``'s image counters (``State.image``,
        (N, 3) int32) in a periodic box where it has them, else an empty placeholder (the
        advance pass then keeps no count)."""
        image = getattr(cfg, "image", None)
        if image is None or image.ndim != 2 or image.shape[0] != self.n or image.shape[0] == 0:
            if getattr(self, "_image_none", None) is None:
                self._image_none = self.backend.xp.zeros((0, 3), np.int32)
            return self._image_none
        return image

    def wall_work_of(self, cfg):
        """Internal plumbing of the step loop: ``cfg``'s work of the moving walls
        (``State.wall_work``, (N,)) where it has one of ``N`` rows, else an empty
        placeholder (no work is kept)."""
        work = getattr(cfg, "wall_work", None)
        if work is None or work.ndim != 1 or work.shape[0] != self.n or work.shape[0] == 0:
            if getattr(self, "_work_none", None) is None:
                self._work_none = self.backend.xp.zeros(0, self.dtype)
            return self._work_none
        return work

    def wall_peak_of(self, cfg):
        """Internal plumbing of the step loop: ``cfg``'s running maximum of the wall
        contact force (``State.wall_contact_peak``, (N,)) where it has one of ``N`` rows,
        else an empty placeholder (the force pass keeps no maximum)."""
        peak = getattr(cfg, "wall_contact_peak", None)
        if peak is None or peak.ndim != 1 or peak.shape[0] != self.n or peak.shape[0] == 0:
            if getattr(self, "_peak_none", None) is None:
                self._peak_none = self.backend.xp.zeros(0, self.dtype)
            return self._peak_none
        return peak

    def law_arrays(self, cfg=None) -> dict:
        """Internal plumbing of the step loop: the contact law's arrays of a ``Dynamics`` bundle.

        One-row or empty placeholders where the law keeps no history and dissipates
        nothing; else ``cfg``'s neighbour list's ``nbr``, ``count``, ``x_ref``, ``hist``,
        ``live``, and ``cfg``'s ``wall_springs`` and ``dissipated``."""
        xp = self.backend.xp
        if getattr(self, "_law_none", None) is None:
            dt = self.dtype
            self._law_none = {"none3": xp.zeros((0, 3), dt), "hist": xp.zeros((0, 1, 1), dt),
                              "live": xp.zeros((0, 1), np.uint8),
                              "whist": xp.zeros((0, 0, 1), dt), "dissip": xp.zeros((0, 4), dt),
                              "nbr": xp.zeros((0, 1), np.int32), "count": xp.zeros(0, np.int32),
                              "x_ref": xp.zeros((0, 3), dt)}  # fmt: skip
        out = dict(self._law_none)
        law = self.law
        if law is None:
            return out
        walls = self.force("walls")
        if law.history:
            nl = self.neighbors_of(cfg)
            if nl is not None:
                out.update(nbr=nl.nbr, count=nl.count, x_ref=nl.x_ref, hist=nl.hist, live=nl.live)
            ws = getattr(cfg, "wall_springs", None)
            if ws is None or ws.shape[0] != self.n:
                ws = xp.zeros((self.n, 0 if walls is None else walls.per_particle, law.history), self.dtype)
            out["whist"] = ws
        if law.dissipates:
            ds = getattr(cfg, "dissipated", None)
            if ds is None or ds.shape[0] != self.n:
                ds = xp.zeros((self.n, 4), self.dtype)
            out["dissip"] = ds
        return out

    def accumulate_family(self, family: int, cfg) -> None:
        """Internal plumbing of the step loop: add one family's force and moment at ``cfg`` to ``cfg.F``, ``cfg.RM``."""
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        self._place_walls(cfg, a["walls"])
        kern.family_forces(family, self.dynamics(cfg), a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"])

    def wall_loads(self, cfg) -> np.ndarray:
        """Internal plumbing of the series: the force on each wall and its moment about
        the wall's centre, summed over the particles at ``cfg`` (:func:`kernels.contacts.build`
        ``wall_load``): a host float64 array (W, 6), sums in float64."""
        walls = self.force("walls")
        if walls is None:
            return np.zeros((0, 6))
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        self._place_walls(cfg, a["walls"])
        if getattr(self, "_load_rows", None) is None:
            self._load_rows = self.backend.xp.zeros((self.n, 6), dtype=self.dtype)
        dyn, rows = self.dynamics(cfg), kern.to_device(self._load_rows)
        out = np.zeros((walls.count, 6))
        for w in range(walls.count):
            kern.wall_loads(w, dyn, a["par"], a["walls"], a["contacts"], rows)
            out[w] = self.backend.to_host(self._load_rows.sum(axis=0, dtype=np.float64))
        return out

    def mesh_loads(self, cfg):
        """Internal plumbing of the series and the frames: the load of the particles at
        ``cfg`` on each triangle mesh, ``(loads (M, 6), per_triangle (T, 3))``: the force on
        each mesh and its moment about the mesh's centre (where the centre is now; its
        ``center``), and the force on each triangle (all meshes' triangles in order), host
        float64 (:mod:`kernels.meshes` ``mesh_load``)."""
        walls = self.force("walls")
        if walls is None or not walls.meshes:
            return np.zeros((0, 6)), np.zeros((0, 3))
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        self._place_walls(cfg, a["walls"])
        if getattr(self, "_mesh_rows", None) is None:
            xp = self.backend.xp
            self._mesh_rows = (xp.zeros((self.n, SLOTS, LOAD_WIDTH), dtype=self.dtype),
                               xp.zeros((self.n, SLOTS), dtype=np.int32))  # fmt: skip
        rows, tri = self._mesh_rows
        kern.mesh_loads(self.dynamics(cfg), a["par"], a["walls"], a["contacts"], kern.to_device(rows),
                        kern.to_device(tri))  # fmt: skip
        rows = np.asarray(self.backend.to_host(rows), dtype=np.float64).reshape(-1, LOAD_WIDTH)
        tri = np.asarray(self.backend.to_host(tri)).reshape(-1).astype(np.int64)
        got = tri >= 0
        rows, tri = rows[got], tri[got]
        per_tri = np.zeros((int(walls.tri_first[-1]), 3))
        np.add.at(per_tri, tri, rows[:, :3])
        mesh = np.searchsorted(walls.tri_first, tri, side="right") - 1
        centers = np.array([walls.mesh_center_now(m) for m in range(len(walls.meshes))]).reshape(-1, 3)
        arm = rows[:, 3:6] - centers[mesh]
        out = np.zeros((len(walls.meshes), 6))
        np.add.at(out[:, :3], mesh, rows[:, :3])
        np.add.at(out[:, 3:], mesh, np.cross(arm, rows[:, :3]) + rows[:, 6:9])
        return out, per_tri

    def _place_walls(self, cfg, walls) -> None:
        """Moving walls where they are at ``cfg.time`` (a state's time; the walls'
        clock is written again before every step)."""
        if walls.clock.shape[0] and getattr(cfg, "time", None) is not None:
            self.kernels.set_clock(walls.clock, (float(cfg.time), 0.0, 0.0))
            self.kernels.walls_place(walls)

    # ----------------------------------------------------------------- diagnostics

    def diagnostics_rows(self, cfg):
        """Internal plumbing of the step loop: per-particle diagnostics at ``cfg``.

        A backend array (N, len(DIAGNOSTICS)) in the model's dtype: kinetic energies,
        potential energies by kind, momenta, broken bonds and released energy
        (:data:`kernels.layout.DIAGNOSTICS`). A neighbour list is brought up to date for
        ``cfg.x`` first."""
        contacts = self.force("contacts")
        if contacts is not None:
            contacts.ensure_list(cfg)
        if self._diag_rows is None:
            self._diag_rows = self.backend.xp.zeros((self.n, len(DIAGNOSTICS)), dtype=self.dtype)
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        self._place_walls(cfg, a["walls"])
        kern.diagnostics(self.dynamics(cfg), a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"],
                         kern.to_device(self._diag_rows))  # fmt: skip
        return self._diag_rows

    def diagnostics(self, cfg) -> dict:
        """Internal plumbing of the step loop: totals over particles of :meth:`diagnostics_rows`.

        A dict of host floats (one read-back), summed in float64."""
        rows = self.diagnostics_rows(cfg)
        sums = self.backend.to_host(rows.sum(axis=0, dtype=np.float64))
        return {name: float(sums[k]) for k, name in enumerate(DIAGNOSTICS)}

    def family_energies(self, keys, cfg) -> dict:
        """Internal plumbing of the step loop: the totals of :meth:`diagnostics` named by ``keys``."""
        d = self.diagnostics(cfg)
        return {k: d[k] for k in keys}

    def potential_energies(self, cfg) -> dict:
        """Internal plumbing of the step loop: ``U_<kind>`` of every family the model has, at ``cfg``."""
        d = self.diagnostics(cfg)
        return {k: d[k] for f in self.forces for k in f.energy_keys}

    def __repr__(self) -> str:
        kinds = ", ".join(f.kind for f in self.forces) or "none"
        return f"Model(N={self.n}, backend={self.backend.name}, dtype={self.dtype}, forces: {kinds})"
