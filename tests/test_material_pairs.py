"""Pairs of materials with their own restitution and friction ([[material_pairs]],
ModelBuilder.set_pair): the pair table, the engine's rebound and sliding, scene errors
named with their field, replicas and ensembles that vary a pair's value."""

import math
import tomllib

import numpy as np
import pytest

import granular as gr
from granular import ensemble as ens
from granular.ensemble.particles import make_particle_spec, replica_scene
from granular.errors import SceneError
from granular.particles.forces.materials import Material, mix, pair_table, tsuji_alpha
from granular.run.scene import build_model, parse_scene
from kernels.contact_laws.hertz_mindlin import PAIR_ALPHA, PAIR_ESTAR, PAIR_GSTAR, PAIR_MU, PAIR_MU_ROLL, PAIR_MU_TWIST

GLASS = Material(7e10, 0.25, 2500.0, 0.9, 0.4, 0.04, 0.02)
STEEL = Material(2e11, 0.3, 7800.0, 0.8, 0.2, 0.01, 0.01)


def test_a_pairs_values_replace_the_means_and_nothing_else():
    plain = pair_table([GLASS, STEEL])
    given = pair_table([GLASS, STEEL], {(0, 1): {"restitution": 0.6, "friction": 0.15}})
    for row in (1, 2):  # glass-steel and steel-glass
        assert given[row, PAIR_ALPHA] == tsuji_alpha(0.6) and given[row, PAIR_MU] == 0.15
        for col in (PAIR_ESTAR, PAIR_GSTAR, PAIR_MU_ROLL, PAIR_MU_TWIST):
            assert given[row, col] == plain[row, col]
        assert plain[row, PAIR_MU] == math.sqrt(0.4 * 0.2)
    np.testing.assert_array_equal(given[[0, 3]], plain[[0, 3]])  # like pairs keep their materials' values
    np.testing.assert_array_equal(mix(GLASS, STEEL, {}), plain[1])


def _drop(pair=None, v=(0.0, 0.0, -1.0), gravity=None, z=0.0101):
    """A glass sphere (r = 1 cm) against a steel floor."""
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10, 0.25, 2500.0, 0.9, 0.4)
    b.add_material("steel", 2e11, 0.3, 7800.0, 0.9, 0.2)
    if pair:
        b.set_pair("steel", "glass", **pair)
    b.add_particles(np.array([[0.0, 0.0, z]]), v=[v], radius=0.01, material="glass")
    b.add_wall([0, 0, 1], 0.0, material="steel", allow_initial_overlap=z < 0.01)
    if gravity:
        b.set_gravity([0, 0, -gravity])
    return b.finalize("cpu")


def test_the_rebound_follows_the_pairs_restitution():
    """The sphere leaves the floor at the pair's e (0.6), not the materials' 0.9."""
    for pair, e in ((None, 0.9), ({"restitution": 0.6}, 0.6)):
        m = _drop(pair)
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 2e-7, 1000)  # 2e-4 s: in, contact (~5e-5 s), out
        assert float(s.x[0, 2]) > 0.01  # off the floor again
        assert float(s.v[0, 2]) == pytest.approx(e, rel=1e-2)


def test_sliding_decelerates_at_the_pairs_friction():
    """A sphere resting on the floor, thrown along it without spin, slides at the start:
    its speed falls at μ g with the pair's μ = 0.15 (the means would give 0.28)."""
    g = 9.81
    m = _drop({"friction": 0.15}, v=(1.0, 0.0, 0.0), gravity=g, z=0.01 - 1.2e-7)
    s = m.state()
    h, steps = 2e-6, 2500
    gr.ExplicitIntegrator("verlet").advance(m, s, h, steps)  # 5 ms, well before rolling (t = 2v/7μg = 0.2 s)
    decel = (1.0 - float(s.v[0, 0])) / (h * steps)
    assert decel == pytest.approx(0.15 * g, rel=2e-2)


def test_set_pair_errors_name_the_pair_and_the_field():
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10)
    with pytest.raises(ValueError, match=r"pair \('glass', 'steel'\): no material named 'steel'"):
        b.set_pair("glass", "steel", friction=0.1)
    with pytest.raises(ValueError, match="give at least one of restitution"):
        b.set_pair("glass", "glass")
    with pytest.raises(ValueError, match=r"restitution: must be in \[0.01, 1\]"):
        b.set_pair("glass", "glass", restitution=1.5)
    with pytest.raises(ValueError, match="friction: must be finite and >= 0"):
        b.set_pair("glass", "glass", friction=-0.1)
    with pytest.raises(ValueError, match="young: not a value of a pair"):
        b.set_pair("glass", "glass", young=1.0)
    b.set_pair("glass", "glass", friction=0.1)
    b.add_particles(np.zeros((1, 3)), radius=0.5)
    with pytest.raises(ValueError, match="no particle has a material"):
        b.finalize("cpu")


SCENE = """
name = "pair_drop"
[run]
dt = 2e-7
steps = 1000
backend = "cpu"
[materials.glass]
young = 7e10
poisson = 0.25
density = 2500.0
restitution = 0.9
friction = 0.4
[materials.steel]
young = 2e11
density = 7800.0
restitution = 0.9
friction = 0.2
[[material_pairs]]
materials = ["glass", "steel"]
restitution = 0.6
friction = 0.15
[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.0101]]
radius = 0.01
material = "glass"
velocity = [0.0, 0.0, -1.0]
[contacts]
[[walls]]
normal = [0.0, 0.0, 1.0]
offset = 0.0
material = "steel"
"""


def test_a_scenes_material_pairs_reach_the_law():
    model, run = build_model(parse_scene(tomllib.loads(SCENE)), "cpu")
    row = model.law.pair_host[0 * 2 + 1]
    assert row[PAIR_ALPHA] == tsuji_alpha(0.6) and row[PAIR_MU] == 0.15
    s = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, s, run.dt, run.steps)
    assert float(s.v[0, 2]) == pytest.approx(0.6, rel=1e-2)


@pytest.mark.parametrize("edit,path,match", [
    ('materials = ["glass", "steel"]', "material_pairs[0].materials", "no material 'steel'"),
    ('restitution = 0.6\nfriction = 0.15', "material_pairs[0]", "gives no value"),
    ("restitution = 0.6", "material_pairs[0].restitution", "less than or equal to 1"),
    ('materials = ["glass", "steel"]', "material_pairs[0].materials", "at least 2"),
])  # fmt: skip
def test_bad_material_pairs_are_named(edit, path, match):
    text = SCENE
    if "no material" in match:
        text = text.replace("[materials.steel]\nyoung = 2e11", "[materials.iron]\nyoung = 2e11")
        text = text.replace('material = "steel"', 'material = "iron"')
    elif "gives no value" in match:
        text = text.replace(edit + "\n", "")
    elif "less than" in match:
        text = text.replace(edit, "restitution = 1.6")
    else:
        text = text.replace(edit, 'materials = ["glass"]')
    with pytest.raises(SceneError) as exc:
        build_model(parse_scene(tomllib.loads(text)), "cpu")
    assert any(p == path and match in m for p, m in exc.value.errors), exc.value.errors


def test_material_pairs_need_materials():
    data = tomllib.loads(SCENE)
    del data["materials"]
    for g in data["particles"] + data["walls"]:
        del g["material"]
    data["contacts"] = {"kpp": 1e4}
    with pytest.raises(SceneError) as exc:
        parse_scene(data)
    assert ("material_pairs[0]", "needs [materials]: it sets values of the dissipative law") in exc.value.errors


def test_an_ensemble_varies_a_pairs_restitution_per_replica():
    """Each replica keeps its own pair value: the rebound grows with it, and each
    replica equals its scene run alone."""
    vary = ["material_pairs[0].restitution=grid(0.3,0.9)"]
    scene = parse_scene(tomllib.loads(SCENE))
    table = ens.run_ensemble(scene, 3, vary, seed=0, chunk_size=3)
    np.testing.assert_allclose(table["v_cm_z"], [0.3, 0.6, 0.9], rtol=1e-2)
    spec = make_particle_spec(scene, 3, vary, 0)
    model, run = build_model(replica_scene(spec, 1), "cpu")
    s = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, s, run.dt, spec.steps)
    assert table["v_cm_z"][1] == float(s.v[0, 2])
    with pytest.raises(ens.EnsembleSpecError, match="the scene has 1 material pair"):
        make_particle_spec(scene, 3, ["material_pairs[1].friction=uniform(0,1)"], 0)
    with pytest.raises(ens.EnsembleSpecError, match="does not give material_pairs\\[0\\].rolling_friction"):
        make_particle_spec(scene, 3, ["material_pairs[0].rolling_friction=uniform(0,1)"], 0)


def test_a_pair_given_twice_in_a_scene_is_named():
    text = SCENE.replace('''[[material_pairs]]
materials = ["glass", "steel"]''', '''[[material_pairs]]
materials = ["steel", "glass"]
friction = 0.1
[[material_pairs]]
materials = ["glass", "steel"]''')
    with pytest.raises(SceneError) as exc:
        parse_scene(tomllib.loads(text))
    assert any(p == "material_pairs[1].materials" and "given already by material_pairs[0]" in m
               for p, m in exc.value.errors), exc.value.errors  # fmt: skip
