"""Ensembles of particle scenes: many impacts with sampled parameters, run as replicas of
the scene in one system (:meth:`~granular.particles.builder.ModelBuilder.replicas`).

``FIELD`` names a number of the scene, with component indices for vectors:

``particles[K].KEY`` or ``particles.NAME.KEY`` (group ``K`` or the group named ``NAME``)
    ``velocity``, ``omega``, ``mass``, ``inertia`` for every kind of group, and
    ``center``, ``normal``, ``ring_diameter`` (torus), ``origin``, ``spacing``, ``radius``
    (lattice), ``radius`` (explicit groups given one radius); an explicit group's
    per-particle lists ``x``, ``v``, ``w``, ``rotvec`` (position, velocity, spin,
    orientation), one particle's row as ``x[k]`` or one component as ``x[k][c]``;
``walls[K].KEY``
    ``offset``, ``normal``, ``k``;
``bond_families.NAME.KEY``
    ``ka``, ``ks``, ``km``, ``strain_max``, ``angle_max``;
``contacts.kpp``
    the Hertz contact stiffness (each replica keeps its own; a wall without its own ``k``
    takes its replica's);
``materials.NAME.KEY``
    ``young``, ``poisson``, ``density``, ``restitution``, ``friction``,
    ``rolling_friction``, ``twisting_friction`` of the dissipative law (each replica
    keeps its own table);
``material_pairs[K].KEY``
    ``restitution``, ``friction``, ``rolling_friction``, ``twisting_friction`` that the
    scene gives pair ``K`` of materials;
``fields.gravity``
    the gravitational acceleration (each replica keeps its own; the scene must give one).

``velocity[0]`` samples one component, ``velocity`` all three. The ``DISTRIBUTION`` forms,
the counter-based sampling (a replica's values depend only on the seed, its index and the
field order) and the chunking are those of body ensembles (:mod:`granular.ensemble`).
What is one setting of the whole model (the contact law and search, the pendula, the run
table) cannot be varied.

Each chunk of replicas is one model of replicas: one state, one step loop. A replica's
trajectory is its scene's run alone, bit for bit, so the summaries do not depend on the
chunk size or on the executor. Summary columns (each (N,), units of the scene):

``replica`` (int64), one column per sampled component, ``time`` (the end [T]); the final
value of every diagnostic of :data:`kernels.layout.DIAGNOSTICS` summed over the replica
(``kinetic_translational``, ``U_a`` ..., ``broken_bonds``, ``U_released``,
``dissipated_*`` with the dissipative law, ``P_x`` ..., ``L_x`` ..., ``contacts``);
``v_cm_x``, ``v_cm_y``, ``v_cm_z`` (final centre-of-mass velocity [L/T]); with bonds
that can break, the fragmentation at the end: ``damage`` (broken / initial bonds of the
replica), ``fragments`` (their number; joined by intact bonds only, so a scene with
``[run] fragments = "contacts"`` is refused) and ``largest_fragment`` (the heaviest
one's mass fraction; :func:`granular.particles.fragments.per_replica`);
``wall_contact_force_max`` (the largest magnitude of the force one wall exerted on one
particle of the replica, at any step of the run: a running maximum kept per particle by
the force pass on the device, every step, reduced per replica at the end [M L/T²]; with
one particle per replica and one wall touched at a time it is the peak of the force the
walls exert on the replica); ``wall_force_sampled_max`` (the largest magnitude of the
total force the walls exert on the replica, but only over the samples taken every
``sample_every`` steps, the run's ``series_every`` or a two-hundredth of the run
[M L/T²]: an impact shorter than ``sample_every`` steps is usually missed, and the
column is 0 then); ``energy0``, ``energy_error`` and ``energy_rel_error`` (drift of
kinetic + potential + released + dissipated energy, absolute [M L²/T²] and relative to
``|energy0|``).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from kernels.layout import DIAGNOSTICS

from ..backend import get_backend
from ..particles.integrators import ExplicitIntegrator
from ..particles import fragments
from ..particles.builder import ModelBuilder
from ..particles.replicas import replica_diagnostics
from ..resources import NEIGHBOR_CAPACITY, check_memory
from ..run.scene import SceneError, parse_scene, scene_builder
from .spec import EnsembleSpecError, _steps, parse_distribution, sample, vary_items

__all__ = ["ParticleSpec", "check_chunk_memory", "make_particle_spec", "parse_particle_vary", "replica_scene",
           "run_particle_chunk"]

#: A per-particle list of 3-vectors (an explicit group's ``x``, ``v``, ``w``, ``rotvec``):
#: varied by particle row ``[k]`` or component ``[k][c]``.
ROWS = -1

#: What each kind of particle group lets vary, with the component count (0: a number).
GROUP_KEYS = {
    "torus": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0, "center": 3, "normal": 3, "ring_diameter": 0},
    "lattice": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0, "origin": 3, "spacing": 0, "radius": 0},
    "explicit": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0, "radius": 0, "x": ROWS, "v": ROWS, "w": ROWS,
                 "rotvec": ROWS},
    "random": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0},
    "tori": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0},
    "agglomerate": {"velocity": 3, "omega": 3, "mass": 0, "inertia": 0, "center": 3},
}
WALL_KEYS = {"offset": 0, "normal": 3, "k": 0}
FAMILY_KEYS = {"ka": 0, "ks": 0, "km": 0, "strain_max": 0, "angle_max": 0, "young": 0, "shear_modulus": 0,
               "poisson": 0, "radius_ratio": 0, "tensile_strength": 0, "shear_strength": 0}  # fmt: skip
MATERIAL_KEYS = {"young": 0, "poisson": 0, "density": 0, "restitution": 0, "friction": 0, "rolling_friction": 0,
                 "twisting_friction": 0}  # fmt: skip
PAIR_KEYS = {"restitution": 0, "friction": 0, "rolling_friction": 0, "twisting_friction": 0}

_CONTACTS = re.compile(r"^contacts\.kpp$")
_GRAVITY = re.compile(r"^fields\.gravity((?:\[\s*\d+\s*\])*)$")
_INDEXED = re.compile(r"^(particles|walls|material_pairs)\[\s*(\d+)\s*\]\.([A-Za-z_]\w*)((?:\[\s*\d+\s*\])*)$")
_NAMED = re.compile(r"^(particles|bond_families|materials)\.([A-Za-z_]\w*)\.([A-Za-z_]\w*)((?:\[\s*\d+\s*\])*)$")
_ONE_SETTING = ("contacts", "fields", "run", "bonds", "name", "description")


@dataclass(frozen=True)
class ParticleVary:
    """One sampled field: ``name`` as given, ``table`` (``particles``, ``walls`` or
    ``bond_families``), ``item`` (the group or wall index, or the family name), ``key``,
    ``index`` (component indices, possibly empty) and its distribution."""

    name: str
    table: str
    item: object
    key: str
    index: tuple
    dist: object


@dataclass
class ParticleSpec:
    """Everything a chunk of replicas needs (picklable): the scene as given (a dict of the
    keys it sets), the sampled fields, ``seed``, ``n`` replicas, ``dt``, ``steps``,
    ``sample_every`` (steps between diagnostics samples) and the ``backend`` name."""

    scene: dict
    vary: list
    seed: int
    n: int
    dt: float
    steps: int
    sample_every: int
    backend: str = "cpu"
    source: str = "scene"
    columns: list = field(default_factory=list)
    particles: int = 0  # per replica (replica 0's)
    bonds: int = 0  # per replica (replica 0's)


def _field_error(name, text):
    return EnsembleSpecError(f"--vary {name}: {text}")


def _components(name, index, width):
    """The component indices ``name`` samples: ``width`` is 0 (a number), a vector's
    length, or ``(ROWS, n)`` for a list of ``n`` 3-vectors."""
    if isinstance(width, tuple):
        rows = width[1]
        if not index or not 0 <= index[0] < rows or len(index) > 2 or (len(index) == 2 and not 0 <= index[1] < 3):
            raise _field_error(name, f"give one particle's row [k] (k < {rows}) or one component [k][c] (c < 3) "
                                     "of this per-particle list")  # fmt: skip
        return [tuple(index)] if len(index) == 2 else [(index[0], c) for c in range(3)]
    if width == 0:
        if index:
            raise _field_error(name, "is a number; it takes no component index")
        return [()]
    if not index:
        return [(c,) for c in range(width)]
    if len(index) != 1 or not 0 <= index[0] < width:
        raise _field_error(name, f"component index {list(index)} out of range for a vector of {width}")
    return [tuple(index)]


def parse_particle_vary(scene, vary) -> list[ParticleVary]:
    """``vary`` (a dict ``FIELD -> DISTRIBUTION`` or ``["FIELD=DIST", ...]``) checked
    against ``scene`` (a :class:`~granular.run.scene.Scene`): the list of
    :class:`ParticleVary`; :class:`EnsembleSpecError` naming the field otherwise."""
    items = vary_items(vary)
    out, seen = [], set()
    names = {g.name: k for k, g in enumerate(scene.particles) if g.name}
    for name, text in items:
        name = str(name).strip()
        m = _INDEXED.match(name)
        n = _NAMED.match(name)
        gravity = _GRAVITY.match(name)
        if _CONTACTS.match(name):
            if scene.contacts is None or scene.contacts.kpp is None:
                raise _field_error(name, "the scene has no Hertz contact stiffness [contacts] kpp to vary")
            table, item, key, idx = "contacts", None, "kpp", ""
        elif gravity:
            if scene.fields.gravity is None:
                raise _field_error(name, "the scene gives no [fields] gravity; give a base value there")
            table, item, key, idx = "fields", None, "gravity", gravity.group(1)
        elif m:
            table, item, key, idx = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        elif n:
            table, item, key, idx = n.group(1), n.group(2), n.group(3), n.group(4)
        else:
            head = name.split(".")[0].split("[")[0]
            if head in _ONE_SETTING:
                raise _field_error(name, f"{head} is one setting for all replicas and cannot be varied; vary a "
                                         "group's, a wall's, a bond family's or a material's number, "
                                         "contacts.kpp or fields.gravity")  # fmt: skip
            raise _field_error(name, "bad field; expected particles[K].KEY, particles.NAME.KEY, walls[K].KEY, "
                                     "bond_families.NAME.KEY, materials.NAME.KEY, material_pairs[K].KEY, "
                                     "contacts.kpp or fields.gravity, with [i] for a component")  # fmt: skip
        index = tuple(int(x) for x in re.findall(r"\d+", idx))
        if table == "particles":
            if isinstance(item, str):
                if item not in names:
                    raise _field_error(name, f"no particle group named {item!r}; groups: {sorted(names)}")
                item = names[item]
            if item >= len(scene.particles):
                raise _field_error(name, f"the scene has {len(scene.particles)} particle group(s)")
            kind = scene.particles[item].kind
            allowed = GROUP_KEYS[kind]
            if key not in allowed:
                raise _field_error(name, f"{key!r} cannot be varied for a {kind} group; allowed: {', '.join(allowed)}")
            if key == "radius" and kind == "explicit" and isinstance(scene.particles[item].radius, list):
                raise _field_error(name, "the group gives one radius per particle; give one shared radius to vary it")
            if getattr(scene.particles[item], key) is None:
                raise _field_error(name, f"the scene does not give particles[{item}].{key}; give a base value there")
            width = allowed[key]
            if width == ROWS:
                width = (ROWS, len(getattr(scene.particles[item], key)))
        elif table == "walls":
            if item >= len(scene.walls):
                raise _field_error(name, f"the scene has {len(scene.walls)} wall(s)")
            if key not in WALL_KEYS:
                raise _field_error(name, f"{key!r} cannot be varied for a wall; allowed: {', '.join(WALL_KEYS)}")
            if getattr(scene.walls[item], key) is None:
                raise _field_error(name, f"the scene does not give walls[{item}].{key}; give a base value there")
            width = WALL_KEYS[key]
        elif table == "material_pairs":
            if item >= len(scene.material_pairs):
                raise _field_error(name, f"the scene has {len(scene.material_pairs)} material pair(s)")
            if key not in PAIR_KEYS:
                raise _field_error(name, f"{key!r} cannot be varied for a material pair; allowed: "
                                         f"{', '.join(PAIR_KEYS)}")  # fmt: skip
            if getattr(scene.material_pairs[item], key) is None:
                raise _field_error(name, f"the scene does not give material_pairs[{item}].{key}; give a base value "
                                         "there")  # fmt: skip
            width = 0
        elif table == "contacts":
            width = 0
        elif table == "fields":
            width = 3
        else:  # a named entry of [materials] or [bond_families]
            entries, keys, what, plural = ((scene.materials, MATERIAL_KEYS, "material", "materials")
                                           if table == "materials" else
                                           (scene.bond_families, FAMILY_KEYS, "bond family", "families"))  # fmt: skip
            if item not in entries:
                raise _field_error(name, f"no {what} {item!r}; {plural}: {sorted(entries)}")
            if key not in keys:
                raise _field_error(name, f"{key!r} cannot be varied for a {what}; allowed: {', '.join(keys)}")
            width = 0
        _components(name, index, width)
        dist = parse_distribution(name, text)
        if dist.kind == "file":
            raise _field_error(name, "file(...) is for body ensembles; use uniform, normal or grid")
        for t, i, k, other in seen:  # the same component twice: one whole, one by index
            if (t, i, k) == (table, item, key) and (other[: len(index)] == index or index[: len(other)] == other):
                raise _field_error(name, "given twice (the same component by another --vary)")
        seen.add((table, item, key, index))
        out.append(ParticleVary(name, table, item, key, index, dist))
    return out


def _base(scene, v: ParticleVary):
    if v.table == "particles":
        value = getattr(scene.particles[v.item], v.key)
    elif v.table == "walls":
        value = getattr(scene.walls[v.item], v.key)
    elif v.table == "material_pairs":
        value = getattr(scene.material_pairs[v.item], v.key)
    elif v.table == "contacts":
        value = scene.contacts.kpp
    elif v.table == "fields":
        value = scene.fields.gravity
    elif v.table == "materials":
        value = getattr(scene.materials[v.item], v.key)
    else:
        value = getattr(scene.bond_families[v.item], v.key)
    return np.asarray(value, dtype=np.float64)


def _width(scene, v):
    if v.table == "particles":
        width = GROUP_KEYS[scene.particles[v.item].kind][v.key]
        return (ROWS, len(getattr(scene.particles[v.item], v.key))) if width == ROWS else width
    if v.table == "fields":
        return 3
    return WALL_KEYS[v.key] if v.table == "walls" else 0


def _column(v, comp) -> str:
    index = tuple(v.index)
    if comp == index:
        return v.name
    if index and comp[: len(index)] == index:  # a row given, its components sampled
        return v.name + "".join(f"[{c}]" for c in comp[len(index) :])
    return v.name + "".join(f"[{c}]" for c in comp)


def make_particle_spec(scene, n, vary, seed, steps=None, time=None, backend="cpu", source="scene") -> ParticleSpec:
    """Validate the arguments against the particle scene ``scene``; the
    :class:`ParticleSpec` of the run (one replica is built now, so a bad value fails
    before any chunk runs)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise EnsembleSpecError(f"n must be a positive integer (got {n!r})")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise EnsembleSpecError(f"seed must be a non-negative integer (got {seed!r})")
    if not scene.particles:
        raise EnsembleSpecError(f"{source}: the scene has no particles")
    if scene.fields.pendulum:
        raise EnsembleSpecError(f"{source}: ensembles of particle scenes do not take pendula")
    if scene.run.fragments != "bonds":
        raise EnsembleSpecError(f'{source}: run.fragments = "{scene.run.fragments}": an ensemble counts each '
                                'replica\'s fragments by its intact bonds only; leave the key out (or "bonds")')  # fmt: skip
    vs = parse_particle_vary(scene, vary)
    run = scene.run
    dt = float(run.dt)
    n_steps = _steps(run, steps, time, dt)
    every = round(run.series_every / dt) if run.series_every else math.ceil(max(n_steps, 1) / 200)
    columns = []
    for v in vs:
        columns += [_column(v, c) for c in _components(v.name, v.index, _width(scene, v))]
    spec = ParticleSpec(scene.model_dump(mode="json", exclude_unset=True), vs, int(seed), int(n), dt, n_steps,
                        max(1, int(every)), backend, source, columns)  # fmt: skip
    try:  # replica 0 whole: its scene, its placement
        b, spec.bonds = scene_builder(replica_scene(spec, 0), f"{source} (replica 0)", backend)
        spec.particles = b.particle_count
        b.finalize("cpu")
    except SceneError as exc:
        raise EnsembleSpecError(str(exc)) from None
    except ValueError as exc:
        raise EnsembleSpecError(f"{source} (replica 0): {exc}") from None
    return spec


def _values(spec: ParticleSpec, idx) -> dict:
    """``{column: (m,) float64}``: the sampled values of the replicas ``idx``."""
    scene = parse_scene(spec.scene, spec.source)
    out = {}
    for j, v in enumerate(spec.vary):
        for c, comp in enumerate(_components(v.name, v.index, _width(scene, v))):
            out[_column(v, comp)] = sample(v.dist, spec.seed, 64 * j + c, idx, spec.n)
    return out


def replica_scene(spec: ParticleSpec, i: int, values=None, row: int = 0, base=None):
    """The scene of replica ``i``: the base scene with its sampled values (``values`` from
    :func:`_values` and the replica's ``row`` in it, else sampled now; ``base``: the base
    scene parsed, else parsed now)."""
    if values is None:
        values, row = _values(spec, np.array([i])), 0
    if base is None:
        base = parse_scene(spec.scene, spec.source)
    data = {k: (list(v) if isinstance(v, list) else dict(v) if isinstance(v, dict) else v)
            for k, v in spec.scene.items()}  # fmt: skip
    current = {}  # the field's value so far: --vary of two components of one vector keep both
    for j, v in enumerate(spec.vary):
        value = current.get((v.table, v.item, v.key))
        if value is None:
            value = current[(v.table, v.item, v.key)] = _base(base, v)
        for comp in _components(v.name, v.index, _width(base, v)):
            value[comp] = values[_column(v, comp)][row]
        if v.table == "contacts":
            data["contacts"] = dict(data["contacts"], kpp=float(value))
        elif v.table == "fields":
            data["fields"] = dict(data["fields"], gravity=value.tolist())
        elif v.table in ("bond_families", "materials"):
            table = dict(data[v.table])
            table[v.item] = dict(table[v.item], **{v.key: float(value)})
            data[v.table] = table
        else:
            items = list(data[v.table])
            items[v.item] = dict(items[v.item], **{v.key: value.tolist()})
            data[v.table] = items
    scene = parse_scene(data, f"{spec.source} (replica {i})")
    if os.path.isfile(spec.source):  # relative paths in the scene (specimen files) from its folder
        scene._folder = os.path.dirname(os.path.abspath(spec.source))
    return scene


def check_chunk_memory(spec: ParticleSpec, replicas: int, backend=None) -> None:
    """:class:`~granular.resources.ResourceError` when a model of ``replicas`` replicas
    (replica 0's size each) does not fit in the host's or the device's memory."""
    scene = spec.scene
    capacity = NEIGHBOR_CAPACITY if scene.get("contacts") or scene.get("materials") else 0
    be = backend or get_backend(spec.backend)
    check_memory(spec.particles * replicas, spec.bonds * replicas, capacity,
                 scene.get("run", {}).get("precision", "float64"), be,
                 what=f"a chunk of {replicas:,} replicas", history=bool(scene.get("materials")))  # fmt: skip


def _energy(d) -> np.ndarray:
    keys = [k for k in DIAGNOSTICS if k.startswith(("kinetic_", "U_", "dissipated_"))]
    return sum(d[k] for k in keys)


def run_particle_chunk(spec: ParticleSpec, start: int, stop: int, progress=None) -> dict:
    """Run replicas ``start..stop-1`` as one model of replicas; their summary table
    (module docstring). ``progress(k)`` is called with the steps done."""
    idx = np.arange(start, stop, dtype=np.int64)
    be = get_backend(spec.backend)
    check_chunk_memory(spec, len(idx), be)
    values = _values(spec, idx)
    base = parse_scene(spec.scene, spec.source)
    builders = []
    for row, i in enumerate(idx):
        scene = replica_scene(spec, int(i), values, row, base)
        builders.append(scene_builder(scene, f"{spec.source} (replica {i})", be)[0])
    run = scene.run
    merged = ModelBuilder.replicas(builders, names=[int(i) for i in idx])
    model = merged.finalize(be, dtype=np.dtype(run.precision))
    del builders
    state = model.state()
    integ = ExplicitIntegrator(run.integrator)
    d = replica_diagnostics(model, state)
    e0 = _energy(d)
    peak = d["wall_force"].copy()
    done = 0
    while done < spec.steps:
        k = min(spec.sample_every, spec.steps - done)
        integ.advance(model, state, spec.dt, k)
        done += k
        d = replica_diagnostics(model, state)
        np.maximum(peak, d["wall_force"], out=peak)
        if progress is not None:
            progress(done)
    e1 = _energy(d)
    table = {"replica": idx}
    table.update(values)
    table["time"] = np.full(len(idx), float(state.time))
    for k in DIAGNOSTICS:
        if k.startswith("dissipated_") and (model.law is None or not model.law.dissipates):
            continue
        table[k] = d[k]
    for axis in "xyz":
        table[f"v_cm_{axis}"] = d[f"v_cm_{axis}"]
    if model.bonds is not None and model.bonds.can_break:
        table.update(fragments.per_replica(model, state))
    table["wall_contact_force_max"] = d["wall_contact_force_max"]
    table["wall_force_sampled_max"] = peak
    table["energy0"] = e0
    table["energy_error"] = e1 - e0
    table["energy_rel_error"] = (e1 - e0) / np.maximum(np.abs(e0), np.finfo(np.float64).tiny)
    return table
