"""Scenes with parallel bond families (binder moduli, strengths, scattered strengths, the
combined criterion) and bonds between touching particles."""

import copy
import math

import numpy as np
import pytest

from granular.run.scene import SceneError, build_model, parse_scene

PARALLEL = {"form": "parallel", "young": 1.0e4, "poisson": 0.25, "radius_ratio": 0.8, "tensile_strength": 50.0,
            "shear_strength": 80.0}  # fmt: skip

BASE = {
    "name": "t",
    "run": {"dt": 1e-4, "duration": 0.01},
    "bond_families": {"cement": PARALLEL},
    "particles": [
        {"kind": "explicit", "name": "g", "radius": [0.5, 0.4, 0.5], "x": [[0.0, 0.0, 0.0], [0.895, 0.0, 0.0], [3.0, 0.0, 0.0]]}
    ],
    "bonds": [{"kind": "touching", "factor": 1.01, "family": "cement"}],
}


def scene(**families):
    d = copy.deepcopy(BASE)
    d["bond_families"]["cement"].update(families)
    return d


def test_a_parallel_family_bonds_the_touching_pairs_with_the_cylinder_stiffnesses():
    model, _ = build_model(parse_scene(scene()), backend="cpu")
    assert model.n_bonds == 1  # 0-1 touch within 1 %, 2 is far
    host = model.bonds.host
    rbar = 0.8 * 0.4
    area = math.pi * rbar**2
    length = 0.895
    assert float(model.bonds.ka[0]) == pytest.approx(1.0e4 * area / length, rel=1e-14)
    assert float(model.bonds.ks[0]) == pytest.approx(1.0e4 / 2.5 * area / length, rel=1e-14)
    assert float(host["kt"][0]) == pytest.approx(1.0e4 / 2.5 * math.pi * rbar**4 / 2 / length, rel=1e-14)
    assert host["crit"][0, 0] == pytest.approx(1 / (area * 50.0), rel=1e-14)
    assert host["form"].tolist() == [1] and model.bonds.can_break


def test_scattered_strengths_follow_the_seed():
    d = copy.deepcopy(BASE)
    d["particles"][0] = {"kind": "lattice", "name": "g", "shape": [4, 4, 4], "spacing": 1.0}
    d["bond_families"]["cement"].update(strength_law="weibull", strength_modulus=3.0, strength_seed=7)
    m1, _ = build_model(parse_scene(d), backend="cpu")
    m2, _ = build_model(parse_scene(copy.deepcopy(d)), backend="cpu")
    d["bond_families"]["cement"]["strength_seed"] = 8
    m3, _ = build_model(parse_scene(d), backend="cpu")
    c1, c3 = m1.bonds.host["crit"][:, 0], m3.bonds.host["crit"][:, 0]
    assert m1.n_bonds == 3 * 4 * 4 * 3
    assert np.array_equal(c1, m2.bonds.host["crit"][:, 0]) and not np.array_equal(c1, c3)
    assert np.unique(c1).size == c1.size  # one strength per bond


def test_the_combined_criterion_from_a_scene():
    d = scene(critical_force=[2.0, 3.0], critical_moment=[0.5, 0.25])
    del d["bond_families"]["cement"]["tensile_strength"], d["bond_families"]["cement"]["shear_strength"]
    model, _ = build_model(parse_scene(d), backend="cpu")
    assert model.bonds.host["form"].tolist() == [2]
    assert model.bonds.host["crit"][0].tolist() == [1 / 2.0, 1 / 3.0, 1 / 0.25, 1 / 0.5]


@pytest.mark.parametrize(
    ("families", "match"),
    [
        ({"ka": 1.0}, r"bond_families.cement: .*'ka'.* belong to form = \"paper\""),
        ({"young": ...}, r"needs young and exactly one of shear_modulus, poisson"),
        ({"shear_modulus": 4.0e3}, r"exactly one of shear_modulus, poisson"),
        ({"critical_force": [1.0, 1.0]}, r"critical_force, critical_moment replace"),
        ({"strength_law": "weibull"}, r"needs strength_modulus"),
        ({"tensile_strength": 0.0}, r"tensile_strength: Input should be greater than 0"),
        ({"form": "paper"}, r"belong to form = \"parallel\""),
    ],
)
def test_bad_parallel_families_name_the_field(families, match):
    d = copy.deepcopy(BASE)
    for k, v in families.items():
        if v is ...:
            del d["bond_families"]["cement"][k]
        else:
            d["bond_families"]["cement"][k] = v
    with pytest.raises(SceneError, match=match):
        build_model(parse_scene(d), backend="cpu")


def test_touching_bonds_that_find_no_pair_say_so():
    d = copy.deepcopy(BASE)
    d["particles"][0]["x"][1] = [1.2, 0.0, 0.0]
    with pytest.raises(SceneError, match=r"bonds\[0\].factor: no two particles are within 1.01"):
        build_model(parse_scene(d), backend="cpu")


def test_a_torus_refuses_a_parallel_family():
    d = copy.deepcopy(BASE)
    d["particles"] = [{"kind": "torus", "n": 12, "ring_diameter": 3.0, "bonds": "cement"}]
    d["bonds"] = []
    with pytest.raises(SceneError, match=r"particles\[0\].bonds: bond family 'cement' is a parallel family"):
        parse_scene(d)


def agglomerate_scene(group):
    d = copy.deepcopy(BASE)
    d["particles"] = [{"kind": "agglomerate", "name": "s", "center": [1.0, 2.0, 3.0], **group}]
    d["bonds"] = [{"kind": "touching", "factor": 1.01, "family": "cement", "groups": ["s"]}]
    return d


def test_an_agglomerate_from_a_specimen_file_equals_the_one_made_in_the_scene(tmp_path):
    """The same packing made in the scene and read from its file (a path relative to the
    scene file): the same grains, no overlap, the touching pairs bonded."""
    from granular.particles.packing import dense_packing
    from granular.run.scene import load_scene

    made = {"count": 300, "radius": [0.4, 0.6], "distribution": "lognormal", "seed": 3}
    m1, _ = build_model(parse_scene(agglomerate_scene(made)), backend="cpu")
    dense_packing(300, radius=(0.4, 0.6), distribution="lognormal", seed=3).save(tmp_path / "s.npz")
    (tmp_path / "scene.toml").write_text(
        '[run]\ndt = 1e-4\nduration = 0.01\n'
        '[bond_families.cement]\nform = "parallel"\nyoung = 1e4\npoisson = 0.25\n'
        '[[particles]]\nkind = "agglomerate"\nname = "s"\nspecimen = "s.npz"\ncenter = [1.0, 2.0, 3.0]\n'
        '[[bonds]]\nkind = "touching"\nfactor = 1.01\nfamily = "cement"\n'
    )  # fmt: skip
    m2, _ = build_model(load_scene(tmp_path / "scene.toml"), backend="cpu")
    x1, x2 = m1.state().x, m2.state().x
    np.testing.assert_allclose(x1, x2, rtol=0, atol=1e-12)
    assert np.array_equal(m1.radius, m2.radius) and m1.n_bonds == m2.n_bonds > 300
    assert np.linalg.norm(x2.mean(axis=0) - [1.0, 2.0, 3.0]) < 0.5  # the container's centre
    d = np.linalg.norm(x2[:, None] - x2[None], axis=2) + np.eye(300) * 10
    assert (d >= m2.radius[:, None] + m2.radius[None]).all()  # spread: touching, never overlapping


@pytest.mark.parametrize(
    ("group", "match"),
    [
        ({"count": 10, "specimen": "s.npz"}, r"give either specimen"),
        ({}, r"give either specimen"),
        ({"specimen": "s.npz", "seed": 2}, r"\['seed'\] describe a packing made here"),
        ({"specimen": "nowhere.npz"}, r"particles\[0\].specimen: "),
        ({"count": 10, "shape": "box", "size": [1.0, 1.0]}, r"particles\[0\].size"),
    ],
)
def test_bad_agglomerates_name_the_field(group, match):
    with pytest.raises(SceneError, match=match):
        build_model(parse_scene(agglomerate_scene(group)), backend="cpu")
