"""Contact laws on the host: which law a model's contacts follow and its parameters.

The kernels of a law are one module of :mod:`kernels.contact_laws`; here is what the
host gives them: each particle's and each wall's material index, and the table of the
law's parameters per pair of materials (:data:`PARAMS` of the kernel module as columns),
row ``a * M + b`` for materials ``a``, ``b`` (``M`` materials; a model of replicas with
their own parameters has a block of ``M²`` rows per replica and material indices
``r * M + m``). A wall has a material like a particle.

* ``"hertz"``: paper 003's elastic contact (56)-(57) with the stiffness ``K^pp`` between
  particles and each wall's own ``K`` (:func:`hertz_law`). Its materials are implicit:
  the particles are material 0 and wall ``k`` (of its replica) is material ``k + 1``.
* ``"hertz-mindlin"``: the dissipative law of ``docs/contacts.md``, with named materials
  (:mod:`granular.particles.forces.materials`);
* ``"linear"``: the linear spring-dashpot with Cundall-Strack friction
  (:mod:`kernels.contact_laws.linear`), with named materials that give a stiffness;
* ``"jkr"``: JKR cohesion (:mod:`kernels.contact_laws.jkr`), with named materials that
  give Young's modulus and a surface energy.

The laws with named materials are :data:`MATERIAL_LAWS`: for each, the fields a material
must give and the rule that mixes two materials into a row of the table
(:func:`material_law` builds it). Adding a law means a kernel module, an entry here
(``docs/contacts.md``, "Adding a contact law").
"""

from __future__ import annotations

import numpy as np

import math
from dataclasses import dataclass

from kernels import contact_laws
from kernels.contact_laws import hertz_mindlin, jkr, linear
from kernels.laws import VELOCITY_HALF, VELOCITY_PREDICTED

from .materials import mix, pair_table

#: ``velocity`` names: which velocity a law's damping and friction see (``docs/contacts.md``).
VELOCITIES = {"predicted": VELOCITY_PREDICTED, "half": VELOCITY_HALF}


class ContactLaw:
    """A contact law's fixed data on a backend.

    ``kernel``: the law's module of :mod:`kernels.contact_laws`; ``mat`` (N,) int32 each
    particle's material, ``wall_mat`` (W,) int32 each wall's, ``table`` (rows,
    len(kernel.PARAMS)) the parameters per pair of materials, ``nmat`` the materials of
    one system (a replica's block of the table has ``nmat²`` rows); ``velocity``:
    ``"predicted"`` (default, ``v_{k+1/2} + h F_k/2m``) or ``"half"`` (``v_{k+1/2}``), the
    velocity a law that reads velocities sees in maps (23) and (25). For such a law,
    ``vp``, ``wp`` (N, 6) are the velocities the force pass reads, written by the advance
    pass: columns 0-2 those the dashpots see, 3-5 the drift velocity ``v_{k+1/2}`` that
    stretches the springs (the force pass kicks ``v`` in place, so it cannot read another
    particle's ``v``). ``materials``, ``names``: the named materials, where the law has
    them."""

    def __init__(self, backend, kernel, mat, wall_mat, table, nmat, velocity="predicted", dtype=np.float64,
                 materials=None, names=None):  # fmt: skip
        if velocity not in VELOCITIES:
            raise ValueError(f"velocity: must be one of {sorted(VELOCITIES)}, got {velocity!r}")
        xp = backend.xp
        self.backend = backend
        self.kernel = kernel
        self.velocity = velocity
        self.materials = list(materials or [])
        self.names = list(names or [])
        self.nmat = int(nmat)
        self.mat_host = np.asarray(mat, dtype=np.int32)
        self.wall_mat_host = np.asarray(wall_mat, dtype=np.int32).reshape(-1)
        self.pair_host = np.asarray(table, dtype=np.float64).reshape(-1, len(kernel.PARAMS))
        self.mat = xp.asarray(self.mat_host)
        self.wall_mat = xp.asarray(self.wall_mat_host)
        self.pair = xp.asarray(self.pair_host, dtype=dtype)
        n = len(self.mat_host)
        self.vp = self.wp = None
        if kernel.VELOCITIES:
            self.vp = xp.zeros((n, 6), dtype=dtype)
            self.wp = xp.zeros((n, 6), dtype=dtype)

    @property
    def name(self) -> str:
        return self.kernel.NAME

    @property
    def history(self) -> int:
        """Floats of history a contact keeps (0: none)."""
        return self.kernel.HISTORY

    @property
    def dissipates(self) -> bool:
        return self.kernel.DISSIPATES

    def args(self) -> dict:
        """The law's fields of the ``Contacts`` bundle (device views)."""
        dev = self.backend.kernels.to_device
        return {"vel": np.int64(VELOCITIES[self.velocity]), "mat": dev(self.mat), "pair": dev(self.pair),
                "nmat": np.int64(self.nmat)}  # fmt: skip

    def pair_parameters(self, a: int, b: int) -> dict:
        """The parameters of materials ``a`` and ``b`` (host floats, named by the law's
        columns)."""
        row = self.pair_host[a * self.nmat + b]
        return {name: float(row[c]) for c, name in enumerate(self.kernel.PARAMS)}

    def __repr__(self) -> str:
        return f"ContactLaw({self.name!r}, materials={self.nmat})"


def hertz_law(backend, n, kpp, wall_k=(), replica=None, first_wall=None, kpp_replicas=None, dtype=np.float64):
    """Paper 003's law: ``kpp`` between particles (``kpp_replicas`` (R,): each replica's),
    ``wall_k`` (W,) each wall's stiffness; ``replica`` (N,) each particle's replica and
    ``first_wall`` (R+1,) each replica's walls, in a model of replicas."""
    wall_k = np.asarray(wall_k, dtype=np.float64).reshape(-1)
    if replica is None:
        first = np.array([0, len(wall_k)], dtype=np.int64)
        rep = np.zeros(n, dtype=np.int64)
        kpps = np.array([float(kpp or 0.0)])
    else:
        first = np.asarray(first_wall, dtype=np.int64)
        rep = np.asarray(replica, dtype=np.int64)
        count = len(first) - 1
        kpps = np.full(count, float(kpp or 0.0)) if kpp_replicas is None else np.asarray(kpp_replicas, np.float64)
    count = len(first) - 1
    nmat = 1 + int(np.diff(first).max(initial=0))
    table = np.zeros((count * nmat * nmat, 1))
    wall_mat = np.zeros(len(wall_k), dtype=np.int32)
    for r in range(count):
        base = r * nmat * nmat
        table[base, 0] = kpps[r]
        for w in range(first[r], first[r + 1]):
            local = 1 + w - first[r]
            wall_mat[w] = local
            table[base + local, 0] = table[base + local * nmat, 0] = wall_k[w]
    return ContactLaw(backend, contact_laws.hertz, rep * nmat, wall_mat, table, nmat, dtype=dtype)


def _mean(a, b, field, given):
    """The pair's ``field``: given, or the geometric mean of the two materials'."""
    given = given or {}
    return float(given[field]) if field in given else math.sqrt(getattr(a, field) * getattr(b, field))


def _estar(a, b):
    return 1.0 / ((1.0 - a.poisson**2) / a.young + (1.0 - b.poisson**2) / b.young)


def _gstar(a, b):
    return 1.0 / ((2.0 - a.poisson) / a.shear + (2.0 - b.poisson) / b.shear)


def restitution_factor(e: float) -> float:
    """``β(e) = -2 ln e / sqrt(π² + ln² e)``: the linear law's normal dashpot
    ``η_n = β sqrt(m* k_n)`` rebounds with restitution ``e`` (0 for ``e = 1``)."""
    if e >= 1.0:
        return 0.0
    le = math.log(e)
    return -2.0 * le / math.sqrt(math.pi * math.pi + le * le)


def mix_linear(a, b, given=None):
    """The linear law's row: ``k_n``, ``k_t`` (a material without ``k_t`` has ``2/7 k_n``)
    and ``x_γt`` as geometric means (equal materials keep theirs, a wall of the same
    material as the particle too: LAMMPS's ``mix_geom``), ``β(e)`` of the pair's
    restitution and its friction (geometric means unless given)."""
    kt = [m.tangential_stiffness if m.tangential_stiffness is not None else 2.0 / 7.0 * m.stiffness for m in (a, b)]
    return [math.sqrt(a.stiffness * b.stiffness), restitution_factor(_mean(a, b, "restitution", given)),
            math.sqrt(kt[0] * kt[1]), math.sqrt(a.tangential_damping * b.tangential_damping),
            _mean(a, b, "friction", given)]  # fmt: skip


def mix_jkr(a, b, given=None):
    """JKR's row: ``E*`` and ``G*`` as the dissipative law mixes them, the surface energy
    ``γ``, the damping ``d`` and the friction as geometric means (unless given)."""
    return [_estar(a, b), _gstar(a, b), _mean(a, b, "surface_energy", given), math.sqrt(a.damping * b.damping),
            _mean(a, b, "friction", given)]  # fmt: skip


@dataclass(frozen=True)
class MaterialLaw:
    """A law with named materials: its kernel module, the fields every material must
    give, the values a pair of materials may be given in place of the mixing rule, and
    the rule ``mix(a, b, given) -> row``; for a law whose contacts last beyond touching,
    ``reach(table, r_max)``, how far (at most, over the rows of the pair table, for radii
    up to ``r_max``)."""

    kernel: object
    needs: tuple
    pair_fields: tuple
    mix: object
    reach: object = None


def reach_jkr(table, r_max):
    """JKR's pull-off separation ``|δ_c| = (3π²γ²R*/16E*²)^{1/3}`` at ``R* = r_max`` (a
    wall's ``R*`` is the radius, a pair's at most half of it), the most over the table."""
    estar, gamma = table[:, 0], table[:, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(estar > 0, (3.0 * math.pi**2 * gamma**2 * r_max / (16.0 * estar**2)) ** (1.0 / 3.0), 0.0)
    return d.max()


#: The laws with named materials, by name.
MATERIAL_LAWS = {
    "hertz-mindlin": MaterialLaw(
        hertz_mindlin, ("young",), ("restitution", "friction", "rolling_friction", "twisting_friction"), mix
    ),
    "linear": MaterialLaw(linear, ("stiffness",), ("restitution", "friction"), mix_linear),
    "jkr": MaterialLaw(jkr, ("young",), ("surface_energy", "friction"), mix_jkr, reach_jkr),
}

#: Every law by name (paper 003's ``"hertz"`` has implicit materials: :func:`hertz_law`).
LAWS = ("hertz",) + tuple(MATERIAL_LAWS)


def material_law(name, backend, materials, names, mat, wall_mat, velocity="predicted", dtype=np.float64,
                 per_replica=None, pairs=None, per_replica_pairs=None):  # fmt: skip
    """The law ``name`` of :data:`MATERIAL_LAWS` with named materials: ``materials``
    (list of :class:`~granular.particles.forces.materials.Material`) named ``names``;
    ``mat`` (N,) and ``wall_mat`` (W,) the material of each particle and wall; ``pairs``:
    ``{(i, j): values}`` given to pairs of materials in place of the mixing rule. With
    ``per_replica``, a list of each replica's materials under the same names (R blocks of
    ``M²`` rows, material indices ``r * M + m``) and ``per_replica_pairs`` one ``pairs``
    per replica."""
    spec = MATERIAL_LAWS[name]
    materials = list(materials)
    pairs = dict(pairs or {})
    if per_replica is None:
        table = pair_table(materials, pairs, spec.mix)
    else:
        given = per_replica_pairs or [pairs] * len(per_replica)
        table = np.concatenate([pair_table(list(m), p, spec.mix) for m, p in zip(per_replica, given)])
    law = ContactLaw(backend, spec.kernel, mat, wall_mat, table, len(materials), velocity=velocity, dtype=dtype,
                     materials=materials, names=names)  # fmt: skip
    law.per_replica = None if per_replica is None else [list(m) for m in per_replica]
    law.pairs = pairs
    return law


def reach(law, r_max: float) -> float:
    """How far beyond touching a contact of ``law`` lasts, at most, between particles of
    radius up to ``r_max`` (the law's own ``reach`` rule; 0 for laws whose contacts end
    at touching): the neighbour list's skin must be at least this, so that a lasting
    contact stays listed through a rebuild."""
    spec = next((m for m in MATERIAL_LAWS.values() if law is not None and m.kernel is law.kernel), None)
    if spec is None or spec.reach is None or not len(law.pair_host):
        return 0.0
    return float(spec.reach(law.pair_host, r_max))
