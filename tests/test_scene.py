"""Scene files: every shipped scene loads; malformed scenes give one line per problem
naming the field path, the value and what is allowed; no traceback reaches the user."""

import copy
import glob
import os
import subprocess
import sys

import numpy as np
import pytest

from granular.run.scene import SceneError, build_model, load_scene, parse_scene
from patience import PATIENCE

SCENES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "scenes", "*.toml")))

BASE = {
    "name": "t",
    "run": {"dt": 1e-3, "duration": 1.0},
    "bond_families": {"b": {"ka": 1.0, "ks": 1.0, "km": 1.0}},
    "particles": [{"kind": "explicit", "name": "g", "x": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "radius": 0.5}],
    "bonds": [{"kind": "explicit", "pairs": [[0, 1]], "family": "b"}],
    "contacts": {"kpp": 10.0},
    "walls": [{"normal": [1.0, 0.0, 0.0], "offset": -1.0}],
}


def edit(path, value):
    """BASE with the entry at ``path`` (tuple of keys/indices) set (or deleted if ...)."""
    d = copy.deepcopy(BASE)
    node = d
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


def test_base_scene_is_valid():
    model, run = build_model(parse_scene(copy.deepcopy(BASE)), backend="cpu")
    assert model.n == 2 and model.n_bonds == 1 and run.dt == 1e-3


#: Agglomerates of more grains are built at this count by the default tests (the GPU-sized
#: scenes take minutes to pack and bond on 2 cores), at full size under ``-m long``.
SHIPPED_COUNT_MAX = 20_000


def _shrunk(scene):
    """``scene`` with every larger agglomerate group made of :data:`SHIPPED_COUNT_MAX`
    grains, and whether any was."""
    groups = [g.model_copy(update={"count": SHIPPED_COUNT_MAX}) if getattr(g, "count", None) and
              g.kind == "agglomerate" and g.count > SHIPPED_COUNT_MAX else g for g in scene.particles]  # fmt: skip
    small = scene.model_copy(update={"particles": groups})
    small._folder = scene._folder
    return small, any(a is not b for a, b in zip(groups, scene.particles))


@pytest.mark.parametrize("path", SCENES, ids=os.path.basename)
def test_shipped_scenes_load_and_build(path):
    scene = load_scene(path)
    if scene.bodies is not None:
        pytest.skip("a [bodies] scene: run by tests/test_body_scenes.py")
    small, shrunk = _shrunk(scene)
    model, run = build_model(small, backend="cpu")
    assert model.n >= 1 and run.dt > 0
    if shrunk:
        assert model.n == SHIPPED_COUNT_MAX and model.n_bonds > 2 * model.n  # a dense, bonded specimen


@pytest.mark.long
@pytest.mark.parametrize("path", SCENES, ids=os.path.basename)
def test_shipped_large_scenes_build_at_full_size(path):
    scene = load_scene(path)
    if scene.bodies is not None or not _shrunk(scene)[1]:
        pytest.skip("built at full size by test_shipped_scenes_load_and_build")
    model, _ = build_model(scene, backend="cpu")
    groups = [g for g in scene.particles if g.kind == "agglomerate"]
    assert model.n == sum(g.count for g in groups) and model.n_bonds > 2 * model.n


MALFORMED = [
    ({}, r"\(top level\): the scene is empty"),
    (edit(("run",), ...), r"run: required field is missing"),
    (edit(("run", "dt"), -1.0), r"run.dt: Input should be greater than 0 \(got -1.0\)"),
    (edit(("run", "dt"), "fast"), r"run.dt: Input should be a valid number.*\(got 'fast'\)"),
    (edit(("run", "steps"), 10), r"run: Value error, give exactly one of duration \(time\) or steps"),
    (edit(("run", "integrator"), "rk4"), r"run.integrator: Input should be 'exact', 'verlet' or 'campello' \(got 'rk4'\)"),
    (edit(("run", "backend"), "tpu"), r"run.backend: Input should be 'auto', 'cpu' or 'gpu'"),
    (edit(("run", "precision"), "float16"), r"run.precision: Input should be .float64. or .float32."),
    (edit(("run", "dtt"), 0.1), r"run.dtt: unknown key"),
    (edit(("partikles",), []), r"partikles: unknown key"),
    (edit(("particles",), []), r"particles: List should have at least 1 item \(or give a \[bodies\] table\)"),
    (edit(("particles", 0, "kind"), "cloud"), r"particles\[0\]: Input tag 'cloud' found using 'kind' does not match"),
    (edit(("particles", 0, "x"), [[0.0, 0.0]]), r"particles\[0\].x\[0\]: List should have at least 3 items"),
    (edit(("particles", 0, "radius"), 0.0), r"particles\[0\].radius.*greater than 0"),
    (edit(("particles", 0, "mass"), -2.0), r"particles\[0\].mass: Input should be greater than 0 \(got -2.0\)"),
    (edit(("particles", 0, "mass"), float("nan")), r"particles\[0\].mass: Input should be a finite number"),
    (edit(("particles", 0, "colour"), "red"), r"particles\[0\].colour: unknown key"),
    (edit(("particles", 0, "v"), [[1.0, 0.0, 0.0]]), r"particles\[0\].v: has 1 entries, expected one per particle \(2\)"),
    (edit(("particles", 0, "x"), [[0.0, 0.0, 0.0], [0.5, 0.0, 0.0]]), r"contacts.allow_initial_overlap: particles 0 and 1 overlap"),
    (edit(("bond_families", "b", "ka"), -200.0), r"bond_families.b.ka: Input should be greater than or equal to 0"),
    (edit(("bonds", 0, "family"), "glue"), r"bonds\[0\].family: no bond family 'glue'; defined: \['b'\]"),
    (edit(("bonds", 0, "pairs"), [[0, 7]]), r"bonds\[0\]: bonds: bond 0 names particle 7, but particles are 0..1"),
    (edit(("bonds", 0, "pairs"), [[0, 1], [1, 0]]), r"bonds\[0\]: bonds: bond 1 duplicates bond 0"),
    (edit(("bonds", 0, "pairs"), [[0, -1]]), r"bonds\[0\].pairs\[0\]\[1\]: Input should be greater than or equal to 0"),
    (edit(("bonds", 0), {"kind": "neighbors", "cutoff": 0.1, "family": "b"}), r"bonds\[0\].cutoff: no pair of particles is within 0.1"),
    (edit(("bonds", 0), {"kind": "neighbors", "cutoff": 2.0, "family": "b", "groups": ["ring"]}), r"bonds\[0\].groups: no particle group named 'ring'"),
    (edit(("walls", 0, "normal"), [0.0, 0.0, 0.0]), r"walls\[0\].normal: Value error, normal has zero length"),
    (edit(("contacts",), ...), r"walls\[0\].k: no stiffness: give k or a \[contacts\] table"),
    (edit(("contacts", "kpp"), -1.0), r"contacts.kpp: Input should be greater than or equal to 0"),
    (edit(("particles",), [{"kind": "lattice", "shape": [1000, 1000, 1000]}]), r"particles: the scene asks for 1000000000 particles; at most 100000000"),
    (edit(("particles",), [{"kind": "lattice", "shape": [2, 0, 2]}]), r"particles\[0\].shape\[1\]: Input should be greater than or equal to 1"),
    (edit(("particles",), [{"kind": "random", "count": 50, "box": [[0, 0, 0], [1, 1, 1]], "radius": 0.3}]), r"particles\[0\].count: could not place 50 non-overlapping particles"),
    (edit(("particles",), [{"kind": "random", "count": 5, "box": [[0, 0, 0], [-1, 1, 1]]}]), r"particles\[0\].box: Value error, box must be"),
    (edit(("particles",), [{"kind": "torus", "n": 2}]), r"particles\[0\].n: Input should be greater than or equal to 3"),
    (edit(("particles",), [{"kind": "torus", "bonds": "glue"}]), r"particles\[0\].bonds: no bond family 'glue'"),
    (edit(("fields",), {"pendulum": [{"group": "nobody"}]}), r"fields.pendulum\[0\].group: no particle group named 'nobody'"),
    (edit(("fields",), {"gravity": [0.0, -9.81]}), r"fields.gravity: List should have at least 3 items"),
]


@pytest.mark.parametrize("data,match", MALFORMED, ids=[f"case{k}" for k in range(len(MALFORMED))])
def test_malformed_scenes_name_the_field(data, match):
    with pytest.raises(SceneError, match=match) as info:
        model, _ = build_model(parse_scene(data), backend="cpu")
    text = str(info.value)
    assert "Traceback" not in text
    assert all(line.startswith("  ") or line.startswith("scene") for line in text.splitlines())


def test_all_problems_are_listed_at_once():
    d = edit(("run", "dt"), -1.0)
    d["run"]["integrator"] = "rk4"
    d["particles"][0]["mass"] = 0.0
    with pytest.raises(SceneError) as info:
        parse_scene(d)
    paths = [p for p, _ in info.value.errors]
    assert {"run.dt", "run.integrator", "particles[0].mass"} <= set(paths)


def test_file_errors(tmp_path):
    with pytest.raises(SceneError, match="no such file"):
        load_scene(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[run\ndt = 1")
    with pytest.raises(SceneError, match=r"\(syntax\): not valid TOML"):
        load_scene(bad)


def test_cli_prints_no_traceback_for_a_bad_scene(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\ndt = -1\nduration = 1\n[[particles]]\nkind = "explicit"\nx = [[0, 0, 0]]\nmas = 1\n')
    out = subprocess.run([sys.executable, "-m", "granular", "run", str(bad), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "run.dt: Input should be greater than 0 (got -1)" in out.stderr
    assert "particles[0].mas: unknown key" in out.stderr
    assert not (tmp_path / "o").exists()


def test_generators(tmp_path):
    d = {
        "run": {"dt": 1e-3, "steps": 10},
        "bond_families": {"b": {"ka": 200.0}},
        "particles": [
            {"kind": "lattice", "name": "block", "shape": [3, 2, 2], "spacing": 1.0, "origin": [5.0, 0.0, 0.0]},
            {"kind": "random", "name": "gas", "count": 40, "box": [[0, 0, 0], [4, 4, 4]], "radius": [0.2, 0.3], "seed": 3},
            {"kind": "torus", "name": "ring", "n": 12, "ring_diameter": 2.0, "center": [0.0, 10.0, 0.0], "bonds": "b"},
        ],
        "bonds": [{"kind": "neighbors", "cutoff": 1.01, "family": "b", "groups": ["block"]}],
        "contacts": {"kpp": 100.0},
    }
    model, _ = build_model(parse_scene(d), backend="cpu")
    assert model.n == 12 + 40 + 12
    # lattice 3x2x2 nearest neighbours: 2*2*2 + 3*1*2 + 3*2*1 = 20 bonds, plus the ring's 12
    assert model.n_bonds == 20 + 12
    x = model.state().x[12:52]
    r = model.radius[12:52]
    d2 = np.linalg.norm(x[:, None] - x[None], axis=-1) + np.eye(40) * 10
    assert (d2 >= (r[:, None] + r[None]) * (1 - 1e-12)).all()  # random packing does not overlap
    assert (x >= 0).all() and (x <= 4).all()


REVIEW_CASES = [
    (edit(("particles", 0, "name"), ""), r"particles\[0\].name: String should have at least 1 character"),
    (edit(("fields",), {"gravity": [0.0, float("nan"), 0.0]}), r"fields.gravity\[1\]: Input should be a finite number"),
    (edit(("walls", 0, "offset"), float("inf")), r"walls\[0\].offset: Input should be a finite number"),
    (edit(("particles",), [{"kind": "random", "count": 2, "box": [[0, 0, 0], [float("inf"), 1, 1]]}]),
     r"particles\[0\].box\[1\]\[0\]: Input should be a finite number"),
    (edit(("bond_families",), {"torus": {"ka": -1.0}}), r"bond_families.torus.ka: Input should be greater than or equal to 0"),
    (edit(("walls", 0, "velocity"), [[0.0, 1.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]]),
     r"walls\[0\]: wall 0: velocity table: times must increase strictly; row 1 has t = 0.0 after t = 0.0"),
    (edit(("walls", 0, "velocity"), [[0.0, 1.0, 0.0]]), r"walls\[0\].velocity"),
    (edit(("walls", 0, "angular_velocity"), [0.0, float("nan"), 0.0]), r"walls\[0\].angular_velocity\[1\]: Input should be a finite number"),
    (edit(("particles",), [{"kind": "lattice", "shape": [4194304, 4194304, 4194304]}]), r"particles: the scene asks for"),
]


@pytest.mark.parametrize("data,match", REVIEW_CASES, ids=[f"review{k}" for k in range(len(REVIEW_CASES))])
def test_more_malformed_scenes(data, match):
    with pytest.raises(SceneError, match=match):
        build_model(parse_scene(data), backend="cpu")


def test_tori_keep_spin_and_breakage():
    d = {"run": {"dt": 1e-3, "steps": 1}, "bond_families": {"b": {"ka": 1.0, "strain_max": 0.01}},
         "particles": [{"kind": "tori", "count": 2, "box": [[0, 0, 0], [20, 20, 20]], "omega": [0.0, 0.0, 5.0],
                        "bonds": "b", "n": 10}]}  # fmt: skip
    model, _ = build_model(parse_scene(d), backend="cpu")
    assert model.bonds.can_break and float(model.bonds.strain_max.max()) == 0.01
    np.testing.assert_array_equal(model.state().omega[:, 2], 5.0)


def test_cli_rejects_bad_lengths(tmp_path):
    for bad in (["--time", "inf"], ["--time", "nan"], ["--steps", "0"]):
        r = subprocess.run([sys.executable, "-m", "granular", "run", "scenes/torus_impact.toml", "--out",
                            str(tmp_path / "o"), *bad], capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
        assert r.returncode == 2 and "Traceback" not in r.stderr and "must be" in r.stderr, bad
