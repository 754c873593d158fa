"""Contact between particles and with planar walls: the candidates and the law.

Which law acts is the model's :class:`~granular.particles.forces.laws.ContactLaw`
(:mod:`granular.particles.forces.laws`): paper 003's elastic U^pp (56)-(57) between any
two overlapping particles (bonded or not) and U^pw against walls (``"hertz"``), or the
dissipative law of ``docs/contacts.md`` with materials (``"hertz-mindlin"``). A law that
keeps history per contact needs the neighbour list (``search = "cells"``): the
all-pairs search has no place to keep it.

Candidate pairs: a Verlet neighbour list on a hash grid (:mod:`granular.particles.neighbors`,
O(N), the default ``search="cells"``), one per state (the list and the contacts' history
are part of the state), or all pairs (``search="all-pairs"``, O(N²), the brute-force
twin). Both give the same forces bit for bit: list rows are sorted by particle index, the
brute force runs in index order, the pair law is evaluated in a canonical orientation and
summed with compensation, and pairs out of reach add nothing.
"""

from __future__ import annotations

import numpy as np

from kernels.laws import ACC_WIDTH, CONTACT_SLOT, CONTACTS_ALL_PAIRS, CONTACTS_LIST, CONTACTS_NONE
from kernels.layout import FAMILY_CONTACTS, FAMILY_WALLS, Contacts, Grid
from kernels.layout import Walls as WallArgs
from kernels.meshes import GEO_WIDTH, HISTORY_SLOTS, IDX_CELL, IDX_MAT, IDX_ROW, IDX_WIDTH, PICK_WIDTH, SLOTS
from kernels.walls import FRAME_MOVING, FRAME_P, FRAME_R, FRAME_WIDTH, MOTION_MOVING, MOTION_P0, MOTION_WIDTH

from ..neighbors import NeighborList, period_rows, placeholder_law
from .laws import reach
from .meshes import pack
from .motion import layout


class ParticleContacts:
    """Contact between all particle pairs under the model's contact ``law``
    (:class:`~granular.particles.forces.laws.ContactLaw`); ``kpp`` [M L²/T²] the largest
    stiffness of paper 003's law (0 for another law; for step estimates).

    ``bonded_contacts``: whether bonded pairs also interact by contact (the paper's
    U^pp acts between any two overlapping particles, bonded or not: the default). Bonded
    neighbours that touch at rest switch this stiff, non-smooth law on and off at every
    vibration, which costs energy accuracy; many bonded-particle codes leave such pairs
    out, which ``bonded_contacts=False`` does (for broken bonds too).

    With ``search="cells"`` each state has its own neighbour list
    (:meth:`new_list`), which holds the contacts' history.
    """

    kind = "contacts"
    family = FAMILY_CONTACTS
    energy_keys = ("U_pp",)
    SEARCHES = ("cells", "all-pairs")

    def __init__(self, backend, n_particles, law, kpp=0.0, bonds=None, bonded_contacts=True, search="cells",
                 skin=None, radius=None, replica=None, kernels=None, period=None):  # fmt: skip
        if search not in self.SEARCHES:
            raise ValueError(f"search: must be one of {self.SEARCHES}, got {search!r}")
        if replica is not None and search != "cells":
            raise ValueError("search: replicas are kept apart by the cell search (the replica is part of a cell); "
                             "they need search = 'cells', not 'all-pairs'")  # fmt: skip
        if law.history and search != "cells":
            raise ValueError(f"search: the {law.name} contact law keeps history per contact in the neighbour list's "
                             "rows; it needs search = 'cells', not 'all-pairs'")  # fmt: skip
        self.law = law
        self.backend = backend
        self.kernels = kernels
        self.dtype = np.dtype(radius.dtype)
        self.kpp = float(kpp)
        self.search = search
        self.radius = radius
        self.replica = replica
        self.skip_bonded = bool(bonds is not None and not bonded_contacts)
        if bonds is not None:
            bonds.skip_contacts = self.skip_bonded
        rmax = float(backend.to_host(radius).max())
        self.skin = 0.4 * rmax if skin is None else float(skin)
        if not (self.skin >= 0 and np.isfinite(self.skin)):
            raise ValueError(f"skin: must be finite and >= 0, got {skin!r}")
        # a contact that lasts beyond touching (JKR) must stay listed through a rebuild
        self.skin = max(self.skin, reach(law, rmax))
        self._dummy = _placeholder_arrays(backend, self.dtype)
        self.period = period  # a periodic box's host rows (lo, L, 1/L), or None
        self._scratch = None

    @property
    def mode(self) -> int:
        return CONTACTS_LIST if self.search == "cells" else CONTACTS_ALL_PAIRS

    def new_list(self):
        """A fresh neighbour list (not yet built) for a state; ``None`` for the all-pairs search."""
        if self.search != "cells":
            return None
        return NeighborList(self.backend, self.radius, self.skin, history=self.law.history, replica=self.replica,
                            law=self.law.args(), kernels=self.kernels, period=self.period)  # fmt: skip

    def list_of(self, cfg):
        """The neighbour list of ``cfg``: a state's own, or for any other configuration
        (analysis) the family's scratch list, which holds no history; ``None`` for the
        all-pairs search."""
        if self.search != "cells":
            return None
        nl = getattr(cfg, "neighbors", None)
        if nl is not None:
            return nl
        if self._scratch is None:
            self._scratch = self.new_list()
        return self._scratch

    def kernel_args(self, cfg=None):
        """The ``Contacts`` and ``Grid`` bundles for ``cfg`` (device views; new after a regrow)."""
        nl = self.list_of(cfg)
        if nl is not None:
            return nl.bundles(CONTACTS_LIST)
        return _placeholder_args(self.backend, self._dummy, CONTACTS_ALL_PAIRS, self.dtype.type, self.law.args(),
                                 self.period)  # fmt: skip

    def ensure_list(self, cfg) -> None:
        """Make ``cfg``'s neighbour list valid for its positions (a build if needed)."""
        nl = self.list_of(cfg)
        if nl is not None:
            nl.update(cfg.x)

    def accumulate(self, model, cfg) -> None:
        self.ensure_list(cfg)
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        self.ensure_list(cfg)
        return model.family_energies(self.energy_keys, cfg)


def no_contact_args(backend, dtype, law=None, period=None):
    """``Contacts`` and ``Grid`` bundles for a model without particle contact (``law``:
    the model's contact law's fields, for its walls; ``period``: its periodic box)."""
    T = np.dtype(dtype).type
    law = law if law is not None else placeholder_law(backend, np.dtype(dtype))
    return _placeholder_args(backend, _placeholder_arrays(backend, dtype), CONTACTS_NONE, T, law, period)


def _placeholder_arrays(backend, dtype):
    """One-row stand-ins for the neighbour-list and grid arrays (never read)."""
    xp = backend.xp
    return (xp.zeros((1, 1), dtype=np.int32), xp.zeros(1, dtype=np.int32), xp.zeros((1, 3), dtype=dtype),
            xp.zeros(1, dtype=np.int32), xp.zeros((1, 1), dtype=np.int32))  # fmt: skip


def _placeholder_args(backend, dummy, mode, T, law, period=None):
    dev = backend.kernels.to_device
    nbr, count, x_ref, buckets, members = (dev(a) for a in dummy)
    xp = backend.xp
    hist = dev(xp.zeros((0, 1, 1), dtype=T))
    live = dev(xp.zeros((0, 1), dtype=np.uint8))
    res = dev(xp.zeros((0, 1, CONTACT_SLOT), dtype=T))
    acc = dev(xp.zeros((0, ACC_WIDTH), dtype=T))
    return (Contacts(mode, nbr, count, x_ref, T(0.0), T(0.0), law["vel"], law["mat"], law["pair"], law["nmat"], hist,
                     live, nbr, count, hist, live, res, live, acc, dev(period_rows(xp, period, T))),
            Grid(T(1.0), np.int64(0), buckets, members, dev(xp.zeros(0, dtype=np.int32)),
                 dev(xp.zeros(0, dtype=np.int32)), dev(xp.zeros(0, dtype=np.int32)), dev(xp.zeros((0, 3), dtype=T)),
                 dev(xp.zeros(4, dtype=np.int64)), dev(xp.zeros(4, dtype=T)), dev(xp.zeros(0, dtype=np.int32))))  # fmt: skip


class Walls:
    """Planar walls ``n·x = c``: ``planes`` (W, 4) rows ``(n1, n2, n3, c)`` with unit ``n``
    pointing into the allowed half-space; ``k`` (W,) stiffness [M L²/T²] under paper
    003's law; ``mat`` (W,) each wall's material index in the contact law's table.

    In a model of replicas (:func:`granular.particles.replicas.replicate`) ``first``
    ((R+1,) int) gives each replica's walls, ``first[r]:first[r+1]``, and ``replica``
    ((N,) int) each particle's replica: a particle meets only its replica's walls."""

    kind = "walls"
    family = FAMILY_WALLS
    energy_keys = ("U_pw",)

    def __init__(self, backend, n_particles, planes, k, dtype=np.float64, mat=None, first=None, replica=None,
                 motions=None, meshes=None, margin=0.0, history=0, keep_work=False):  # fmt: skip
        xp = backend.xp
        self.backend = backend
        self.dtype = np.dtype(dtype)
        self.planes_host = np.asarray(planes, dtype=np.float64).reshape(-1, 4)
        self.planes = xp.array(self.planes_host, dtype=dtype)  # a copy: the moving walls' planes change
        W = len(self.planes_host)
        # triangle meshes (kernels.meshes): dicts of mesh, mat, smooth, motion; their frame
        # rows follow the planes'
        self.meshes = list(meshes or [])
        self.history = int(history)
        mesh_motions = [m["motion"] for m in self.meshes]
        # prescribed motion (kernels.walls): the planes at t = 0, each wall's motion, the
        # walls' clock; ``planes`` then holds where the walls are at the state's time
        self.motions = None if motions is None else list(motions)
        plane_motions = self.motions if self.motions is not None else [None] * W
        motion, table = layout(plane_motions + mesh_motions, W + len(self.meshes))
        # keep_work: a model whose set-up may change keeps the moving walls' clock and
        # work (and the series its work_walls column) with every wall at rest
        self.moving = bool(motion[:, MOTION_MOVING].any()) if len(motion) else False
        self.moving = self.moving or bool(keep_work)
        self.ref = xp.array(self.planes_host)
        self.motion = xp.asarray(motion)
        self.table = xp.asarray(table)
        frame = np.zeros((W + len(self.meshes), FRAME_WIDTH))
        frame[:, FRAME_P:FRAME_P + 3] = motion[:, MOTION_P0:MOTION_P0 + 3]  # each wall's centre
        frame[:, FRAME_MOVING] = motion[:, MOTION_MOVING]
        frame[:, FRAME_R:FRAME_R + 9] = np.eye(3).reshape(-1)
        self.frame = xp.asarray(frame, dtype=dtype)
        self.clock = xp.zeros(3 if self.moving else 0, dtype=np.float64)
        mat = np.zeros(W, np.int32) if mat is None else np.asarray(mat, np.int32)
        self.k = xp.asarray(np.asarray(k), dtype=dtype)
        self.mat = xp.asarray(mat[:W])
        self._pack_meshes(xp, n_particles, mat[W:], motion[W:], margin)
        if first is None:
            self.first_host = np.zeros(0, np.int64)
            self.replica_host = np.zeros(0, np.int32)
        else:
            self.first_host = np.asarray(first, np.int64)
            self.replica_host = np.asarray(replica, np.int32)
        self.first = xp.asarray(self.first_host)
        self.replica = xp.asarray(self.replica_host)

    def _pack_meshes(self, xp, n, mesh_mat, motion, margin) -> None:
        """The meshes' kernel arrays (:mod:`kernels.meshes`; empty without meshes)."""
        dev_t = self.dtype
        if not self.meshes:
            tri, geo, idx = np.zeros((0, 12)), np.zeros((0, GEO_WIDTH)), np.zeros((0, IDX_WIDTH), np.int64)
            first, cells, self.tri_first = np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(1, np.int64)
            n = 0
        else:
            spec = [(m["mesh"], m["smooth"], motion[k, MOTION_P0:MOTION_P0 + 3]) for k, m in enumerate(self.meshes)]
            tri, geo, cell0, first, cells, self.tri_first = pack(spec, margin)
            idx = np.zeros((len(self.meshes), IDX_WIDTH), np.int64)
            idx[:, IDX_ROW] = len(self.planes_host) + np.arange(len(self.meshes))
            idx[:, IDX_CELL] = cell0
            idx[:, IDX_MAT] = mesh_mat
        self.mesh_mat_host = np.asarray(mesh_mat, np.int32)
        self.tri = xp.asarray(tri, dtype=dev_t)
        self.mesh_geo = xp.asarray(geo, dtype=dev_t)
        self.mesh_idx = xp.asarray(idx)
        self.cell_first = xp.asarray(first)
        self.cell_tri = xp.asarray(cells)
        self.pick = xp.zeros((n, SLOTS, PICK_WIDTH), dtype=dev_t)
        self.pick_tri = xp.zeros((n, SLOTS), dtype=np.int32)

    @property
    def count(self) -> int:
        """All the planar walls of the model."""
        return len(self.planes_host)

    @property
    def per_particle(self) -> int:
        """The width of the wall history (``State.wall_springs``): the most planar walls
        one particle meets (its replica's; all of them for one system), and with meshes
        and a law that keeps history, the mesh slots (:mod:`kernels.meshes`)."""
        extra = HISTORY_SLOTS if self.meshes and self.history else 0
        if len(self.first_host):
            return int(np.diff(self.first_host).max()) + extra
        return self.count + extra

    def mesh_center_now(self, m: int) -> np.ndarray:
        """Where mesh ``m``'s centre (``center``, its rotation's point) is now (host)."""
        row = len(self.planes_host) + m
        return np.asarray(self.backend.to_host(self.frame[row, FRAME_P:FRAME_P + 3]), dtype=np.float64)

    def mesh_vertices_now(self, m: int) -> np.ndarray:
        """Mesh ``m``'s vertices where it is now (host float64): ``p + R (v - p_0)`` from
        its frame row after the last placement, its reference vertices at rest."""
        mesh = self.meshes[m]["mesh"]
        if not self.moving:
            return mesh.vertices
        row = len(self.planes_host) + m
        fr = np.asarray(self.backend.to_host(self.frame[row]), dtype=np.float64)
        if fr[FRAME_MOVING] == 0.0:
            return mesh.vertices
        R = fr[FRAME_R:FRAME_R + 9].reshape(3, 3)
        p0 = np.asarray(self.backend.to_host(self.motion[row, MOTION_P0:MOTION_P0 + 3]), dtype=np.float64)
        return (mesh.vertices - p0) @ R.T + fr[FRAME_P:FRAME_P + 3]

    def of_particle(self, i: int) -> range:
        """The indices of the walls particle ``i`` meets (host)."""
        if len(self.first_host):
            r = int(self.replica_host[i])
            return range(int(self.first_host[r]), int(self.first_host[r + 1]))
        return range(self.count)

    def kernel_args(self) -> WallArgs:
        dev = self.backend.kernels.to_device
        return WallArgs(dev(self.planes), dev(self.mat), dev(self.first), dev(self.replica), dev(self.ref),
                        dev(self.motion), dev(self.table), dev(self.frame), dev(self.clock), dev(self.tri),
                        dev(self.mesh_geo), dev(self.mesh_idx), dev(self.cell_first), dev(self.cell_tri),
                        dev(self.pick), dev(self.pick_tri))  # fmt: skip

    def planes_now(self) -> np.ndarray:
        """The planes ``(n, c)`` (W, 4) where the walls are now (host float64): the last
        placement by the kernels for moving walls, else the model's planes."""
        if not self.moving:
            return self.planes_host
        return np.asarray(self.backend.to_host(self.planes), dtype=np.float64)

    def accumulate(self, model, cfg) -> None:
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        return model.family_energies(self.energy_keys, cfg)


def no_wall_args(backend, dtype) -> WallArgs:
    xp, dev = backend.xp, backend.kernels.to_device
    return WallArgs(dev(xp.zeros((0, 4), dtype=dtype)), dev(xp.zeros(0, dtype=np.int32)),
                    dev(xp.zeros(0, dtype=np.int64)), dev(xp.zeros(0, dtype=np.int32)),
                    dev(xp.zeros((0, 4), dtype=np.float64)), dev(xp.zeros((0, MOTION_WIDTH), dtype=np.float64)),
                    dev(xp.zeros((0, 7), dtype=np.float64)), dev(xp.zeros((0, FRAME_WIDTH), dtype=dtype)),
                    dev(xp.zeros(0, dtype=np.float64)), dev(xp.zeros((0, 12), dtype=dtype)),
                    dev(xp.zeros((0, GEO_WIDTH), dtype=dtype)), dev(xp.zeros((0, IDX_WIDTH), dtype=np.int64)),
                    dev(xp.zeros(1, dtype=np.int64)), dev(xp.zeros(0, dtype=np.int32)),
                    dev(xp.zeros((0, SLOTS, PICK_WIDTH), dtype=dtype)), dev(xp.zeros((0, SLOTS), dtype=np.int32)))  # fmt: skip
