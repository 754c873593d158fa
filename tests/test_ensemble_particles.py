"""Ensembles of particle scenes (granular.ensemble.particles): replicas of a scene with
sampled numbers run in one system; summaries independent of the chunk size and of the
executor; each replica's summary is its scene run alone; bad fields named."""

import json
import os

import numpy as np
import pytest
from scene_texts import drop_scene

import granular as gr
from granular import ensemble as ens
from granular.ensemble.particles import make_particle_spec, replica_scene
from granular.particles.analysis import _configuration
from granular.run.scene import build_model, parse_scene

SCENE = {
    "name": "small_torus",
    "run": {"dt": 5e-4, "steps": 600, "series_every": 0.01, "backend": "cpu"},
    "bond_families": {"binder": {"ka": 200.0, "ks": 200.0, "km": 10.0, "strain_max": 0.03}},
    "particles": [{"kind": "torus", "name": "torus", "n": 16, "ring_diameter": 2.0,
                   "center": [1.3, 0.0, 0.0], "normal": [0.0, 0.0, 1.0], "velocity": [-1.0, 0.0, 0.0],
                   "bonds": "binder"}],
    "contacts": {"kpp": 2100.0},
    "walls": [{"normal": [1.0, 0.0, 0.0], "offset": 0.0, "k": 2100.0}],
}  # fmt: skip
VARY = ["particles[0].velocity[0]=uniform(-3,-0.5)", "particles.torus.omega[2]=normal(0,1)",
        "bond_families.binder.ka=grid(100,300)", "walls[0].offset=uniform(-0.05,0.05)",
        "contacts.kpp=uniform(1500,3000)"]  # fmt: skip


TOML = """
name = "small_torus"
[run]
dt = 5e-4
steps = 600
series_every = 0.01
backend = "cpu"
[bond_families.binder]
ka = 200.0
ks = 200.0
km = 10.0
strain_max = 0.03
[[particles]]
kind = "torus"
name = "torus"
n = 16
ring_diameter = 2.0
center = [1.3, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]
velocity = [-1.0, 0.0, 0.0]
bonds = "binder"
[contacts]
kpp = 2100.0
[[walls]]
normal = [1.0, 0.0, 0.0]
offset = 0.0
k = 2100.0
"""


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory):
    import tomllib

    assert parse_scene(tomllib.loads(TOML)) == parse_scene(SCENE)
    path = tmp_path_factory.mktemp("scene") / "small_torus.toml"
    path.write_text(TOML)
    return str(path)


def same_table(a, b):
    assert list(a) == list(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_summaries_do_not_depend_on_the_chunk_size(scene_file):
    one = ens.run_ensemble(scene_file, 7, VARY, seed=3, chunk_size=7)
    assert one["replica"].tolist() == list(range(7))
    for chunk in (1, 3):
        same_table(one, ens.run_ensemble(scene_file, 7, VARY, seed=3, chunk_size=chunk))
    assert (one["wall_contact_force_max"] > 0).all()  # every torus hit its wall
    assert (one["wall_contact_force_max"] >= 0.0).all() and (one["wall_force_sampled_max"] >= 0.0).all()
    assert one["broken_bonds"].max() > 0 and one["broken_bonds"].min() == 0  # the fast ones broke
    assert np.abs(one["energy_rel_error"]).max() < 5e-3
    np.testing.assert_allclose(one["bond_families.binder.ka"], np.linspace(100, 300, 7))


def test_a_replica_summary_is_its_scene_run_alone(scene_file):
    table = ens.run_ensemble(scene_file, 4, VARY, seed=5, chunk_size=4)
    spec = make_particle_spec(parse_scene(SCENE), 4, VARY, 5)
    for i in (0, 3):
        scene = replica_scene(spec, i)
        assert scene.particles[0].velocity[0] == table["particles[0].velocity[0]"][i]
        assert scene.walls[0].offset == table["walls[0].offset"][i]
        model, run = build_model(scene, "cpu")
        state = model.state()
        gr.ExplicitIntegrator("verlet").advance(model, state, run.dt, 600)
        d = model.diagnostics(_configuration(model, state))
        for k in ("kinetic_translational", "kinetic_rotational", "U_a", "U_pw", "broken_bonds", "U_released", "P_x"):
            assert table[k][i] == pytest.approx(d[k], rel=1e-12, abs=1e-13), k
        v = np.asarray(state.v)
        assert table["v_cm_x"][i] == pytest.approx(v[:, 0].mean(), rel=1e-12)


def test_cli_writes_the_outputs_and_trajectories(scene_file, tmp_path, capsys):
    out = tmp_path / "ens"
    status = ens.main([scene_file, "--n", "5", *sum((["--vary", v] for v in VARY), []), "--seed", "2",
                       "--chunk", "2", "--out", str(out), "--trajectories", "2"])  # fmt: skip
    assert status == 0
    assert {"summaries.npz", "histograms.png", "ensemble.json", "subsample"} <= set(os.listdir(out))
    meta = json.loads((out / "ensemble.json").read_text())
    assert meta["kind"] == "particle replicas" and meta["subsample_replicas"] == [0, 4]
    said = capsys.readouterr()
    assert "full output of replica 0 (1 of 2)" in said.err and "full output of replica 4 (2 of 2)" in said.err
    z = np.load(out / "summaries.npz")
    assert len(z["replica"]) == 5
    sub = out / "subsample" / "replica_4"
    assert (sub / "series.csv").exists() and any(f.endswith(".vtu") for f in os.listdir(sub / "frames"))
    series = np.genfromtxt(sub / "series.csv", delimiter=",", names=True)
    assert series["kinetic_translational"][-1] == pytest.approx(z["kinetic_translational"][4], rel=1e-12)
    assert "5 replicas x 600 steps" in said.out


@pytest.mark.parametrize("field, match", [
    ("contacts.skin=uniform(1,2)", "one setting for all replicas"),
    ("materials.steel.young=uniform(1,2)", "no material 'steel'"),
    ("fields.pendulum[0].g=uniform(1,2)", "one setting for all replicas"),
    ("fields.gravity[2]=uniform(1,2)", "gives no \\[fields\\] gravity"),
    ("particles[0].n=uniform(10,20)", "'n' cannot be varied for a torus group"),
    ("particles[1].velocity[0]=uniform(0,1)", "1 particle group"),
    ("particles.ring.velocity[0]=uniform(0,1)", "no particle group named 'ring'"),
    ("particles[0].velocity[3]=uniform(0,1)", "out of range"),
    ("walls[0].k[0]=uniform(1,2)", "takes no component index"),
    ("bond_families.glue.ka=uniform(1,2)", "no bond family 'glue'"),
    ("walls[0].offset=uniform(2,1)", "a <= b"),
    ("walls[0].offset=file(x.npy)", "for body ensembles"),
    ("particles[0].velocity=bogus", "bad distribution"),
])  # fmt: skip
def test_bad_fields_are_named(field, match):
    with pytest.raises(ens.EnsembleSpecError, match=match):
        make_particle_spec(parse_scene(SCENE), 3, [field], 0)


def test_a_bad_replica_fails_before_running(scene_file, tmp_path, capsys):
    # a wall moved into the torus: placement refused, named, before any chunk runs
    status = ens.main([scene_file, "--n", "3", "--vary", "walls[0].offset=uniform(2,3)", "--out",
                       str(tmp_path / "bad")])  # fmt: skip
    assert status == 2
    assert "replica 0" in capsys.readouterr().err
    assert not (tmp_path / "bad" / "summaries.npz").exists()


def test_dask_identical_to_in_process(scene_file, dask_client):
    local = ens.run_ensemble(scene_file, 6, VARY, seed=1, chunk_size=6)
    same_table(local, ens.run_ensemble(scene_file, 6, VARY, seed=1, chunk_size=2, client=dask_client))


def test_a_chunk_larger_than_memory_is_refused_before_running(scene_file, tmp_path, capsys):
    status = ens.main([scene_file, "--n", "100000000", "--vary", VARY[0], "--chunk", "100000000", "--out",
                       str(tmp_path / "big")])  # fmt: skip
    assert status == 2
    err = capsys.readouterr().err
    assert "a chunk of 100,000,000 replicas" in err and "--chunk" in err
    assert not (tmp_path / "big").exists() or not os.listdir(tmp_path / "big")


DROP = drop_scene('dt = 2e-4\nduration = 0.4\nseries_every = 0.002\nbackend = "cpu"', height=0.6)


def test_an_explicit_groups_particles_vary_by_row_and_component():
    """``particles[0].x[0][2]`` moves one particle's height, ``particles[0].rotvec[0]`` its
    orientation (all three components): each replica's scene has them, the rest as given."""
    import tomllib

    data = tomllib.loads(DROP)
    data["particles"][0]["rotvec"] = [[0.0, 0.0, 0.0]]
    scene = parse_scene(data)
    vary = ["particles[0].x[0][2]=grid(0.7,1.0)", "particles[0].rotvec[0]=uniform(-0.5,0.5)"]
    spec = make_particle_spec(scene, 4, vary, 3)
    assert spec.columns == ["particles[0].x[0][2]", "particles[0].rotvec[0][0]", "particles[0].rotvec[0][1]",
                            "particles[0].rotvec[0][2]"]  # fmt: skip
    table = ens.run_ensemble(scene, 4, vary, seed=3, chunk_size=2, steps=10)
    for i in (0, 3):
        r = replica_scene(spec, i).particles[0]
        assert r.x[0] == [0.0, 0.0, table["particles[0].x[0][2]"][i]]
        assert r.rotvec[0] == [table[f"particles[0].rotvec[0][{c}]"][i] for c in range(3)]
    np.testing.assert_allclose(table["particles[0].x[0][2]"], [0.7, 0.8, 0.9, 1.0], rtol=1e-15)
    with pytest.raises(ens.EnsembleSpecError, match="give one particle's row"):
        make_particle_spec(scene, 4, ["particles[0].x[1]=uniform(0,1)"], 0)
    with pytest.raises(ens.EnsembleSpecError, match="give one particle's row"):
        make_particle_spec(scene, 4, ["particles[0].x=uniform(0,1)"], 0)
    with pytest.raises(ens.EnsembleSpecError, match="given twice"):  # a row and one of its components
        make_particle_spec(scene, 4, ["particles[0].x[0]=uniform(0,1)", "particles[0].x[0][2]=uniform(1,2)"], 0)


def test_gravity_varies_per_replica(tmp_path):
    # a sphere dropped on a wall from rest: each replica falls in its own field
    path = tmp_path / "drop.toml"
    text = DROP.replace('velocity = [0.0, 0.0, -1.0]', 'velocity = [0.0, 0.0, 0.0]') + "[fields]\ngravity = [0.0, 0.0, -1.0]\n"
    path.write_text(text)
    vary = ["fields.gravity[2]=grid(-4,-1)"]
    table = ens.run_ensemble(str(path), 4, vary, seed=0, chunk_size=4, steps=100)
    assert np.array_equal(table["fields.gravity[2]"], [-4.0, -3.0, -2.0, -1.0])
    import tomllib

    spec = make_particle_spec(parse_scene(tomllib.loads(text)), 4, vary, 0, steps=100)
    for i in (0, 3):
        model, run = build_model(replica_scene(spec, i), "cpu")
        state = model.state()
        gr.ExplicitIntegrator("verlet").advance(model, state, run.dt, 100)
        assert table["v_cm_z"][i] == float(np.asarray(state.v)[0, 2])
        assert table["U_gravity"][i] == pytest.approx(model.diagnostics(_configuration(model, state))["U_gravity"],
                                                      rel=1e-12)  # fmt: skip
    assert table["v_cm_z"][0] == pytest.approx(4.0 * table["v_cm_z"][3], rel=1e-9)  # free fall: v = g t
    with pytest.raises(ens.EnsembleSpecError, match="gives no \\[fields\\] gravity"):
        make_particle_spec(parse_scene(tomllib.loads(DROP)), 4, vary, 0)


def test_materials_vary_per_replica(tmp_path):
    # a sphere dropped on a wall: each replica keeps its own restitution, so the rebound
    # grows with it, and each equals its scene run alone
    path = tmp_path / "drop.toml"
    path.write_text(DROP)
    table = ens.run_ensemble(str(path), 4, ["materials.grain.restitution=grid(0.2,0.9)"], seed=0, chunk_size=4)
    v = table["v_cm_z"]
    assert (v > 0).all() and (np.diff(v) > 0).all(), v
    assert (table["dissipated_normal"] > 0).all()
    import tomllib

    spec = make_particle_spec(parse_scene(tomllib.loads(DROP)), 4, ["materials.grain.restitution=grid(0.2,0.9)"], 0)
    for i in (0, 3):
        scene = replica_scene(spec, i)
        model, run = build_model(scene, "cpu")
        state = model.state()
        gr.ExplicitIntegrator("verlet").advance(model, state, run.dt, spec.steps)
        assert table["v_cm_z"][i] == float(np.asarray(state.v)[0, 2])
        assert table["dissipated_normal"][i] == pytest.approx(float(np.asarray(state.dissipated)[:, 0].sum()), rel=1e-12)


def test_two_components_of_one_vector_vary_together():
    # --vary of velocity[2] and of velocity[0] of one group: each replica keeps both (the
    # later field used to start again from the scene's vector, dropping the earlier one)
    import tomllib

    scene = parse_scene(tomllib.loads(DROP))
    vary = ["particles[0].velocity[2]=uniform(-2,-1)", "particles[0].velocity[0]=uniform(0.5,1)"]
    spec = make_particle_spec(scene, 3, vary, 1)
    table = ens.run_ensemble(scene, 3, vary, seed=1, chunk_size=3, steps=1)
    for i in range(3):
        vx, vz = table["particles[0].velocity[0]"][i], table["particles[0].velocity[2]"][i]
        assert replica_scene(spec, i).particles[0].velocity == [vx, 0.0, vz]
        assert table["v_cm_x"][i] == pytest.approx(vx, rel=1e-15)  # one step in free flight
        assert table["v_cm_z"][i] == pytest.approx(vz, rel=1e-15)
