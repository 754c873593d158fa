"""A builder call that fails leaves the builder as it was (issue 30, item 1).

For every public method of :class:`~granular.particles.builder.ModelBuilder` (its
contact settings included) and every helper of :mod:`granular.particles.shapes` that
fills a builder, each bad call below raises a ``ValueError`` naming the argument, and
afterwards the builder's whole state (every attribute, arrays compared by value) is what
it was before the call; a good call after it then gives the same builder, and the same
model, as if the bad call had never been made. The table of bad calls must name every
public method (a new method fails :func:`test_every_public_method_has_bad_calls` until
it has some).
"""

import copy
import dataclasses
import inspect
import math

import numpy as np
import pytest

from granular.particles import shapes
from granular.particles.builder import ModelBuilder
from granular.particles.forces.meshes import TriangleMesh

# ------------------------------------------------------------------ snapshots


def snapshot(builder) -> dict:
    """A deep copy of every attribute of ``builder``."""
    return copy.deepcopy(vars(builder))


def assert_same(a, b, where="builder"):
    """``a`` and ``b`` equal all the way down: arrays by dtype, shape and value (NaN equal
    to NaN), containers by type and content, dataclasses field by field."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} against {b.dtype}{b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), f"{where}: {a!r} against {b!r}"
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{where}: keys {list(a)} against {list(b)}"
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{where}: {len(a)} entries against {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{k}]")
    elif dataclasses.is_dataclass(a):
        assert_same(dataclasses.asdict(a), dataclasses.asdict(b), where)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), f"{where}: nan against {b!r}"
    else:
        assert a == b, f"{where}: {a!r} against {b!r}"


# ------------------------------------------------------------------ builders


def plain() -> ModelBuilder:
    """Paper 003's setting: particles, a bond, gravity, a pendulum; no contacts yet."""
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], radius=0.5, mass=[1.0, 2.0])
    b.add_bonds([[0, 1]], ka=1.0, ks=2.0)
    b.set_gravity([0.0, 0.0, -1.0])
    b.add_pendulum(0, rho0=[0.0, 0.0, 1.0], g=2.0)
    return b


def with_materials() -> ModelBuilder:
    """The dissipative law: materials, a pair, contact options other than the defaults, a wall."""
    b = ModelBuilder()
    b.add_material("glass", young=1e5, restitution=0.9, friction=0.3)
    b.add_material("steel", young=2e5)
    b.set_pair("glass", "steel", friction=0.2)
    b.add_particles([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0]], radius=0.5, material="glass")
    b.set_contacts(velocity="half", allow_initial_overlap=True, skin=0.1)
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="steel")
    return b


BASES = {"plain": plain, "materials": with_materials}

BOX = [[0.0, 0.0, 0.0], [30.0, 30.0, 30.0]]

#: (method, what is bad, call, message): every call raises ValueError matching message
PLATE = TriangleMesh.rectangle([0.0, 0.0, -50.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])

BAD = [
    ("add_particles", "radius < 0", lambda b: b.add_particles([[9.0, 9.0, 9.0]], radius=-1), r"radius: must be"),
    ("add_particles", "unknown material", lambda b: b.add_particles([[9.0, 9.0, 9.0]], material="wood"),
     r"material: no material named 'wood'"),
    ("add_particles", "unhashable material", lambda b: b.add_particles([[9.0, 9.0, 9.0]], material=["glass"]),
     r"material: no material named \['glass'\]"),
    ("add_particles", "x not (K, 3)", lambda b: b.add_particles([[9.0, 9.0]]), r"x: expected shape \(K, 3\)"),
    ("add_particles", "v of another length", lambda b: b.add_particles([[9.0, 9.0, 9.0]], v=[[1.0, 0, 0]] * 2),
     r"v: expected shape"),
    ("add_particles", "omega not finite", lambda b: b.add_particles([[9.0, 9.0, 9.0]], omega=[np.nan, 0, 0]),
     r"omega: must be 3 finite numbers"),
    ("add_particles", "two orientations", lambda b: b.add_particles([[9.0, 9.0, 9.0]], alpha=[0, 0, 0],
                                                                    rotvec=[0, 0, 0]), r"at most one of orientation"),
    ("add_particles", "quaternion not unit", lambda b: b.add_particles([[9.0, 9.0, 9.0]], orientation=[2.0, 0, 0, 0]),
     r"orientation: must be a unit quaternion"),
    ("add_particles", "mass 0", lambda b: b.add_particles([[9.0, 9.0, 9.0]], mass=0.0),
     r"mass: must be finite and > 0"),
    ("add_particles", "inertia < 0", lambda b: b.add_particles([[9.0, 9.0, 9.0]], inertia=-1.0),
     r"inertia: must be finite and > 0"),
    ("add_particle", "radius < 0", lambda b: b.add_particle([9.0, 9.0, 9.0], radius=-1.0), r"radius: must be"),
    ("add_particle", "unknown material", lambda b: b.add_particle([9.0, 9.0, 9.0], material="wood"),
     r"material: no material named 'wood'"),
    ("set_gravity", "2 numbers", lambda b: b.set_gravity([0.0, 1.0]), r"gravity: expected shape"),
    ("set_gravity", "not finite", lambda b: b.set_gravity([0.0, np.inf, 0.0]), r"gravity: must be 3 finite"),
    ("set_periodic", "no axis", lambda b: b.set_periodic(), r"set_periodic: give at least one periodic axis"),
    ("set_periodic", "hi below lo", lambda b: b.set_periodic(x=(1.0, 0.0)), r"set_periodic: x = \(1.0, 0.0\)"),
    ("set_periodic", "not a span", lambda b: b.set_periodic(z="wide"), r"set_periodic: z must be \(lo, hi\)"),
    ("add_pendulum", "index out of range", lambda b: b.add_pendulum(7), r"particles: indices must be in"),
    ("add_pendulum", "g < 0", lambda b: b.add_pendulum(1, g=-1.0), r"g: must be finite and > 0"),
    ("add_pendulum", "vertical not unit", lambda b: b.add_pendulum(1, vertical=[0.0, 0.0, 2.0]),
     r"vertical: must be a unit vector"),
    ("add_bonds", "index out of range", lambda b: b.add_bonds([[0, 5]]), r"bonds: bond \d+ names particle 5"),
    ("add_bonds", "bonded to itself", lambda b: b.add_bonds([[1, 1]]), r"joins particle 1 to itself"),
    ("add_bonds", "pair twice", lambda b: b.add_bonds([[1, 0], [0, 1]]), r"duplicates bond"),
    ("add_bonds", "ka < 0", lambda b: b.add_bonds([[0, 1]], ka=-1.0), r"ka: must be finite and >= 0"),
    ("add_bonds", "strain_max 0", lambda b: b.add_bonds([[0, 1]], strain_max=0.0), r"strain_max: must be > 0"),
    ("add_bonds", "angle_max < 0", lambda b: b.add_bonds([[0, 1]], angle_max=-1.0), r"angle_max: must be"),
    ("add_parallel_bonds", "no shear modulus", lambda b: b.add_parallel_bonds([[0, 1]], young=1.0),
     r"shear_modulus, poisson: give exactly one"),
    ("add_parallel_bonds", "young < 0", lambda b: b.add_parallel_bonds([[0, 1]], young=-1.0, poisson=0.3),
     r"young: must be finite and > 0"),
    ("add_parallel_bonds", "strength 0", lambda b: b.add_parallel_bonds([[0, 1]], young=1.0, poisson=0.3,
                                                                        tensile_strength=0.0),
     r"tensile_strength: must be > 0"),
    ("add_parallel_bonds", "pair twice", lambda b: b.add_parallel_bonds([[1, 0], [0, 1]], young=1.0, poisson=0.3),
     r"duplicates bond"),
    ("add_material", "young < 0", lambda b: b.add_material("wood", young=-1.0), r"material 'wood': young"),
    ("add_material", "poisson > 0.5", lambda b: b.add_material("wood", young=1.0, poisson=0.7),
     r"material 'wood': poisson"),
    ("add_material", "empty name", lambda b: b.add_material("", young=1.0), r"material name: must be a non-empty"),
    ("set_pair", "unknown material", lambda b: b.set_pair("glass", "wood", friction=0.1),
     r"pair \('glass', 'wood'\): no material named '(glass|wood)'"),
    ("set_pair", "no value", lambda b: b.set_pair("glass", "glass"), r"give at least one of"),
    ("set_pair", "restitution > 1", lambda b: b.set_pair("glass", "glass", restitution=2.0), r"restitution: must be"),
    ("set_pair", "unknown field", lambda b: b.set_pair("glass", "glass", stickiness=1.0), r"stickiness: not a value"),
    ("set_contacts", "kpp < 0", lambda b: b.set_contacts(kpp=-1.0), r"kpp: must be finite and >= 0"),
    ("set_contacts", "unknown search", lambda b: b.set_contacts(kpp=1.0, search="octree"), r"search: must be"),
    ("set_contacts", "skin < 0", lambda b: b.set_contacts(kpp=1.0, skin=-0.1), r"skin: must be finite and >= 0"),
    ("set_contacts", "unknown velocity", lambda b: b.set_contacts(velocity="full"), r"velocity: must be one of"),
    ("set_contacts", "unknown law", lambda b: b.set_contacts(law="coulomb"), r"law: must be one of"),
    ("add_wall", "zero normal", lambda b: b.add_wall([0.0, 0.0, 0.0]), r"normal has zero length"),
    ("add_wall", "offset not finite", lambda b: b.add_wall([1.0, 0, 0], np.nan), r"offset must be a finite number"),
    ("add_wall", "offset not a number", lambda b: b.add_wall([1.0, 0, 0], [1.0, 2.0]),
     r"offset must be a finite number"),
    ("add_wall", "k < 0", lambda b: b.add_wall([1.0, 0, 0], -5.0, k=-1.0), r"wall \d+: k: must be finite and >= 0"),
    ("add_wall", "unknown material", lambda b: b.add_wall([1.0, 0, 0], -5.0, material="wood"),
     r"material: no material named 'wood'"),
    ("add_wall", "empty name", lambda b: b.add_wall([1.0, 0, 0], -5.0, k=1.0, name=""),
     r"name must be a non-empty string"),
    ("add_mesh", "empty name", lambda b: b.add_mesh(PLATE, name=""), r"name must be a non-empty string"),
    ("expect_changes", "replicas", lambda b: ModelBuilder.replicas([with_materials(), with_materials()]).expect_changes(),
     r"expect_changes: this builder joins replicas"),
    ("add_mesh", "not a mesh", lambda b: b.add_mesh([[0.0, 0.0, 0.0]]), r"mesh 0: must be a granular.TriangleMesh"),
    ("add_mesh", "smooth angle 0", lambda b: b.add_mesh(PLATE, smooth_angle=0.0), r"smooth_angle: must be a number"),
    ("add_mesh", "unknown material", lambda b: b.add_mesh(PLATE, material="wood"), r"material: no material named"),
    ("add_mesh", "k < 0", lambda b: b.add_mesh(PLATE, k=-1.0), r"k: must be finite and >= 0"),
    ("add_mesh", "bad velocity table", lambda b: b.add_mesh(PLATE, velocity=[[0.0, 1, 0, 0], [0.0, 2, 0, 0]]),
     r"times must increase strictly"),
    ("finalize", "dtype float16", lambda b: b.finalize("cpu", dtype=np.float16), r"dtype: must be float64"),
    ("finalize", "unknown backend", lambda b: b.finalize("tpu"), r"backend"),
    ("replicas", "an empty builder among them", lambda b: ModelBuilder.replicas([b, ModelBuilder()]),
     r"replicas: builder (0 has pendula|1 has no particles)"),
    ("add_torus", "n_p < 3", lambda b: shapes.add_torus(b, n_p=2), r"n_p: a ring needs at least 3"),
    ("add_torus", "ka < 0 (after its spheres)", lambda b: shapes.add_torus(b, n_p=6, center=(20.0, 20.0, 20.0),
                                                                           ka=-1.0), r"ka: must be finite and >= 0"),
    ("add_torus", "unknown material", lambda b: shapes.add_torus(b, n_p=6, center=(20.0, 20.0, 20.0),
                                                                 material="wood"), r"material: no material named"),
    ("add_block", "angle_max 0 (after its spheres)", lambda b: shapes.add_block(b, 2, origin=(20.0, 20.0, 20.0),
                                                                                angle_max=0.0), r"angle_max: must be"),
    ("add_block", "mass < 0", lambda b: shapes.add_block(b, 2, origin=(20.0, 20.0, 20.0), mass=-1.0),
     r"mass: must be finite and > 0"),
    ("add_tori", "km < 0 (after the first torus' spheres)",
     lambda b: shapes.add_tori(b, 2, [[10.0, 10.0, 10.0], [30.0, 30.0, 30.0]], n_p=6, km=-1.0),
     r"km: must be finite and >= 0"),
    ("add_tori", "count 0", lambda b: shapes.add_tori(b, 0, BOX), r"count: the number of tori"),
]


#: calls that are bad only where the base has materials (on the plain base the unknown
#: first material would be what fails, not the value named)
MATERIALS_ONLY = {("set_pair", "no value"), ("set_pair", "restitution > 1"), ("set_pair", "unknown field")}

CASES = [(base, row) for base in BASES for row in BAD if base == "materials" or row[:2] not in MATERIALS_ONLY]


def _good(b):
    """Good calls after a failed one: a particle far away (of the base's material, if it
    has materials), a bond, a wall."""
    material = "glass" if b._materials else None
    i = b.add_particle([40.0, 40.0, 40.0], radius=0.5, material=material)
    b.add_bonds([[1, i]], ka=3.0)
    b.add_wall([0.0, 0.0, 1.0], -1.0, k=None if material else 10.0, material="steel" if material else None)
    return i


@pytest.mark.parametrize("base,row", CASES, ids=[f"{base}-{row[0]}-{row[1]}" for base, row in CASES])
def test_a_call_that_fails_changes_nothing(base, row):
    _, _, call, message = row
    b = BASES[base]()
    before = snapshot(b)
    with pytest.raises(ValueError, match=message):
        call(b)
    assert_same(snapshot(b), before)
    # the builder goes on as if the call had not been made
    _good(b)
    ref = BASES[base]()
    _good(ref)
    assert_same(snapshot(b), snapshot(ref))


def test_every_public_method_has_bad_calls():
    """The table covers every public method of the builder (its mixins included) and
    every helper of granular.particles.shapes that takes a builder."""
    public = {name for name, _ in inspect.getmembers(ModelBuilder) if not name.startswith("_")}
    public -= {"particle_count"}  # a read-only property
    helpers = {name for name, fn in inspect.getmembers(shapes, inspect.isfunction)
               if fn.__module__ == shapes.__name__ and next(iter(inspect.signature(fn).parameters), "") == "builder"}
    assert helpers >= {"add_torus", "add_block", "add_tori"}
    covered = {row[0] for row in BAD}
    assert public | helpers <= covered, f"no bad call for {sorted((public | helpers) - covered)}"


def test_finalize_that_fails_changes_nothing():
    """finalize refuses overlapping particles, then a builder without the overlap builds."""
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [0.8, 0.0, 0.0]], radius=0.5)
    b.set_contacts(kpp=100.0)
    before = snapshot(b)
    with pytest.raises(ValueError, match=r"particles 0 and 1 overlap"):
        b.finalize("cpu")
    assert_same(snapshot(b), before)
    b.set_contacts(kpp=100.0, allow_initial_overlap=True)
    assert b.finalize("cpu").n == 2


@pytest.mark.parametrize("bad", [dict(radius=-1), dict(material="wood")], ids=["radius", "material"])
def test_issue_30_a_failed_add_particles_leaves_no_particle(bad):
    """The reported case: a refused add_particles, then a good one: one particle, one row."""
    b = ModelBuilder()
    with pytest.raises(ValueError, match="radius|material"):
        b.add_particles([[0, 0, 0]], **bad)
    b.add_particles([[0, 0, 0]], radius=1)
    model = b.finalize("cpu")  # no contacts: the model and its state must agree
    state = model.state()
    assert model.n == 1 and state.n == 1 and np.shape(state.x) == (1, 3)
    b.set_contacts(kpp=100.0)
    model = b.finalize("cpu")
    assert model.n == 1 and model.state().n == 1 and float(model.radius[0]) == 1.0


def test_atomic_block_undoes_a_sequence_and_nests():
    """The builder's own transaction (used by the shape helpers): the outermost block
    undoes every change of its body, a nested block none on its own."""
    b = plain()
    before = snapshot(b)
    with pytest.raises(ValueError, match="ka"):
        with b._atomic():
            b.add_particles([[9.0, 9.0, 9.0]])
            with b._atomic():
                b.set_gravity([1.0, 0.0, 0.0])
                b.add_bonds([[0, 2]], ka=-1.0)
    assert_same(snapshot(b), before)
    with b._atomic():
        b.add_particles([[9.0, 9.0, 9.0]])
    assert b.particle_count == 3 and not b._in_atomic
