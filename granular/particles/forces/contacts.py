"""Contact: particle-particle U^pp (56)-(57) between any two overlapping particles
(bonded or not) and particle-wall U^pw for planar walls (paper 003, Sect. 4).

U^pp = (2/5) K^pp [1 - |x_a - x_b|/(D_a/2 + D_b/2)]_+^{5/2} (the factor 2/5 makes
``-dU/dx`` equal (57); the printed 5/2 contradicts it, see ``docs/physics.md``). A wall
is "a special case of particle-particle": the same law with the signed distance
``n·x - c`` of the centre from the plane in place of the centre distance and ``D/2`` as
the reach. Frictionless: contacts exert no moment.

With materials (:mod:`granular.particles.forces.materials`) every contact follows the dissipative
law of ``docs/contacts.md`` instead: Hertz with Tsuji damping set by the restitution,
Mindlin tangential springs with the Coulomb limit, rolling and twisting resistance, with
springs carried per contact (:class:`ContactLaw`). It needs the neighbour list
(``search = "cells"``): the all-pairs search has no place to keep springs.

Candidate pairs: a Verlet neighbour list on a hash grid (:mod:`granular.particles.neighbors`,
O(N), the default ``search="cells"``) or all pairs (``search="all-pairs"``, O(N²), the
brute-force twin). Both give the same forces bit for bit: list rows are sorted by
particle index, the brute force runs in index order, the pair law is evaluated in a
canonical orientation and summed with compensation, and pairs out of reach add nothing.
"""

from __future__ import annotations

import numpy as np

from kernels import laws
from kernels.laws import (
    CONTACT_SLOT,
    CONTACTS_ALL_PAIRS,
    CONTACTS_LIST,
    CONTACTS_NONE,
    VELOCITY_HALF,
    VELOCITY_PREDICTED,
)
from kernels.layout import FAMILY_CONTACTS, FAMILY_WALLS, Contacts, Grid
from kernels.layout import Walls as WallArgs

from ..neighbors import NeighborList, placeholder_law
from .materials import pair_table

#: ``velocity`` names of the dissipative law: which velocity the damping and friction see.
VELOCITIES = {"predicted": VELOCITY_PREDICTED, "half": VELOCITY_HALF}


class ContactLaw:
    """The dissipative law's fixed data on a backend: ``materials`` (list of
    :class:`~granular.particles.forces.materials.Material`), ``names``, ``mat`` (N,) int32 each
    particle's material, ``wall_mat`` (W,) int32 each wall's, ``pair`` (M*M, PAIR_WIDTH) the
    mixed pair parameters (with ``per_replica``, a list of each replica's materials under
    the same names: R blocks of M*M rows, and material indices ``r * M + m``); ``pairs``:
    ``{(i, j): values}`` given to pairs of materials in place of the mixing rule (with
    ``per_replica``, ``per_replica_pairs`` one such dict per replica); ``velocity``: ``"predicted"`` (default, ``v_{k+1/2} + h F_k/2m``)
    or ``"half"`` (``v_{k+1/2}``), see ``docs/contacts.md``. ``vp``, ``wp`` (N, 6): the
    velocities the force pass reads, written by the advance pass: columns 0-2 those the
    dashpots see, 3-5 the drift velocity ``v_{k+1/2}`` that stretches the springs (the
    force pass kicks ``v`` in place, so it cannot read another particle's ``v``)."""

    def __init__(self, backend, materials, names, mat, wall_mat, velocity="predicted", dtype=np.float64,
                 per_replica=None, pairs=None, per_replica_pairs=None):  # fmt: skip
        if velocity not in VELOCITIES:
            raise ValueError(f"velocity: must be one of {sorted(VELOCITIES)}, got {velocity!r}")
        xp = backend.xp
        self.backend = backend
        self.materials, self.names = list(materials), list(names)
        self.velocity = velocity
        self.mat_host = np.asarray(mat, dtype=np.int32)
        self.wall_mat_host = np.asarray(wall_mat, dtype=np.int32).reshape(-1)
        # replicas with their own materials (lists of the same names): a block of pair rows
        # per replica, material indices r * M + m (kernels.interactions pair_row)
        self.per_replica = None if per_replica is None else [list(m) for m in per_replica]
        self.pairs = dict(pairs or {})
        if self.per_replica is None:
            self.pair_host = pair_table(self.materials, self.pairs)
        else:
            given = per_replica_pairs or [self.pairs] * len(self.per_replica)
            self.pair_host = np.concatenate([pair_table(m, p) for m, p in zip(self.per_replica, given)])
        self.mat = xp.asarray(self.mat_host)
        self.wall_mat = xp.asarray(self.wall_mat_host)
        self.pair = xp.asarray(self.pair_host, dtype=dtype)
        n = len(self.mat_host)
        self.vp = xp.zeros((n, 6), dtype=dtype)
        self.wp = xp.zeros((n, 6), dtype=dtype)

    def args(self) -> dict:
        dev = self.backend.kernels.to_device
        return {"on": True, "vel": np.int64(VELOCITIES[self.velocity]), "mat": dev(self.mat), "pair": dev(self.pair),
                "nmat": np.int64(len(self.materials))}  # fmt: skip

    def pair_parameters(self, a: int, b: int) -> dict:
        """The mixed parameters of materials ``a`` and ``b`` (host floats)."""

        row = self.pair_host[a * len(self.materials) + b]
        columns = {k: getattr(laws, k) for k in dir(laws) if k.startswith("PAIR_") and k != "PAIR_WIDTH"}
        return {k.lower()[5:]: float(row[c]) for k, c in columns.items() if isinstance(c, int)}


class ParticleContacts:
    """Hertz-type contact between all particle pairs with stiffness ``kpp`` [M L²/T²].

    ``bonded_contacts``: whether bonded pairs also interact by contact (the paper's
    U^pp acts between any two overlapping particles, bonded or not: the default). Bonded
    neighbours that touch at rest switch this stiff, non-smooth law on and off at every
    vibration, which costs energy accuracy; many bonded-particle codes leave such pairs
    out, which ``bonded_contacts=False`` does (for broken bonds too).
    """

    kind = "contacts"
    family = FAMILY_CONTACTS
    energy_keys = ("U_pp",)
    SEARCHES = ("cells", "all-pairs")

    def __init__(self, backend, n_particles, kpp, bonds=None, bonded_contacts=True, search="cells", skin=None,
                 radius=None, law=None, replica=None, kpp_replicas=None):  # fmt: skip
        if search not in self.SEARCHES:
            raise ValueError(f"search: must be one of {self.SEARCHES}, got {search!r}")
        if replica is not None and search != "cells":
            raise ValueError("search: replicas are kept apart by the cell search (the replica is part of a cell); "
                             "they need search = 'cells', not 'all-pairs'")  # fmt: skip
        if law is not None and search != "cells":
            raise ValueError("search: the dissipative contact law (materials) keeps a spring per contact in the "
                             "neighbour list's rows; it needs search = 'cells', not 'all-pairs'")  # fmt: skip
        self.law = law
        self.backend = backend
        self.dtype = np.dtype(radius.dtype)
        # replicas with their own stiffness: kpp is the largest (for step estimates)
        self.kpp_replicas = None if kpp_replicas is None else np.asarray(kpp_replicas, np.float64)
        self.kpp = float(kpp) if kpp_replicas is None else float(self.kpp_replicas.max())
        self.search = search
        self.neighbors = None
        self.skip_bonded = bool(bonds is not None and not bonded_contacts)
        if bonds is not None:
            bonds.skip_contacts = self.skip_bonded
        rmax = float(backend.to_host(radius).max())
        self.skin = 0.4 * rmax if skin is None else float(skin)
        if search == "cells":
            self.neighbors = NeighborList(backend, radius, self.skin, history=law is not None, replica=replica,
                                          kpps=self.kpp_replicas)  # fmt: skip
            if law is not None:
                self.neighbors.law = law.args()
        self._dummy = _placeholder_arrays(backend, self.dtype)

    @property
    def mode(self) -> int:
        return CONTACTS_LIST if self.neighbors is not None else CONTACTS_ALL_PAIRS

    def kernel_args(self):
        """The ``Contacts`` and ``Grid`` bundles (device views; new after a regrow)."""
        T = self.dtype.type
        if self.neighbors is not None:
            return self.neighbors.bundles(T(self.kpp), CONTACTS_LIST)
        return _placeholder_args(self.backend, self._dummy, CONTACTS_ALL_PAIRS, T(self.kpp), T)

    def ensure_list(self, x) -> None:
        """Make the neighbour list valid for positions ``x`` (a build if needed)."""
        if self.neighbors is not None:
            self.neighbors.update(x)

    def accumulate(self, model, cfg) -> None:
        self.ensure_list(cfg.x)
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        self.ensure_list(cfg.x)
        return model.family_energies(self.energy_keys, cfg)


def no_contact_args(backend, dtype):
    """``Contacts`` and ``Grid`` bundles for a model without particle contact."""
    T = np.dtype(dtype).type
    return _placeholder_args(backend, _placeholder_arrays(backend, dtype), CONTACTS_NONE, T(0.0), T)


def _placeholder_arrays(backend, dtype):
    """One-row stand-ins for the neighbour-list and grid arrays (never read)."""
    xp = backend.xp
    return (xp.zeros((1, 1), dtype=np.int32), xp.zeros(1, dtype=np.int32), xp.zeros((1, 3), dtype=dtype),
            xp.zeros(1, dtype=np.int32), xp.zeros((1, 1), dtype=np.int32))  # fmt: skip


def _placeholder_args(backend, dummy, mode, kpp, T):
    dev = backend.kernels.to_device
    nbr, count, x_ref, buckets, members = (dev(a) for a in dummy)
    law = placeholder_law(backend, np.dtype(T))
    xp = backend.xp
    hist = dev(xp.zeros((0, 1, 8), dtype=T))
    live = dev(xp.zeros((0, 1), dtype=np.uint8))
    res = dev(xp.zeros((0, 1, CONTACT_SLOT), dtype=T))
    none = dev(xp.zeros(0, dtype=T))
    return (Contacts(mode, kpp, nbr, count, x_ref, T(0.0), T(0.0), law["on"], law["vel"], law["mat"], law["pair"],
                     law["nmat"], hist, live, nbr, count, hist, res, live, none, dev(xp.zeros(0, dtype=np.int32))),
            Grid(T(1.0), np.int64(0), buckets, members, dev(xp.zeros(0, dtype=np.int32))))  # fmt: skip


class Walls:
    """Planar walls ``n·x = c``: ``planes`` (W, 4) rows ``(n1, n2, n3, c)`` with unit ``n``
    pointing into the allowed half-space; ``k`` (W,) stiffness [M L²/T²].

    In a model of replicas (:func:`granular.particles.replicas.replicate`) ``first``
    ((R+1,) int) gives each replica's walls, ``first[r]:first[r+1]``, and ``replica``
    ((N,) int) each particle's replica: a particle meets only its replica's walls."""

    kind = "walls"
    family = FAMILY_WALLS
    energy_keys = ("U_pw",)

    def __init__(self, backend, n_particles, planes, k, dtype=np.float64, mat=None, first=None, replica=None):
        xp = backend.xp
        self.backend = backend
        self.planes_host = np.asarray(planes, dtype=np.float64).reshape(-1, 4)
        self.planes = xp.asarray(self.planes_host, dtype=dtype)
        self.k = xp.asarray(np.asarray(k), dtype=dtype)
        self.mat = xp.asarray(np.zeros(len(self.planes_host), np.int32) if mat is None else np.asarray(mat, np.int32))
        if first is None:
            self.first_host = np.zeros(0, np.int64)
            self.replica_host = np.zeros(0, np.int32)
        else:
            self.first_host = np.asarray(first, np.int64)
            self.replica_host = np.asarray(replica, np.int32)
        self.first = xp.asarray(self.first_host)
        self.replica = xp.asarray(self.replica_host)

    @property
    def count(self) -> int:
        """All the walls of the model."""
        return len(self.planes_host)

    @property
    def per_particle(self) -> int:
        """The most walls one particle meets (its replica's; all of them for one system):
        the width of the wall springs (``State.wall_springs``)."""
        if len(self.first_host):
            return int(np.diff(self.first_host).max())
        return self.count

    def of_particle(self, i: int) -> range:
        """The indices of the walls particle ``i`` meets (host)."""
        if len(self.first_host):
            r = int(self.replica_host[i])
            return range(int(self.first_host[r]), int(self.first_host[r + 1]))
        return range(self.count)

    def kernel_args(self) -> WallArgs:
        dev = self.backend.kernels.to_device
        return WallArgs(dev(self.planes), dev(self.k), dev(self.mat), dev(self.first), dev(self.replica))

    def accumulate(self, model, cfg) -> None:
        model.accumulate_family(self.family, cfg)

    def energies(self, model, cfg) -> dict:
        return model.family_energies(self.energy_keys, cfg)


def no_wall_args(backend, dtype) -> WallArgs:
    xp, dev = backend.xp, backend.kernels.to_device
    return WallArgs(dev(xp.zeros((0, 4), dtype=dtype)), dev(xp.zeros(0, dtype=dtype)), dev(xp.zeros(0, dtype=np.int32)),
                    dev(xp.zeros(0, dtype=np.int64)), dev(xp.zeros(0, dtype=np.int32)))
