"""Ensembles (granular.ensemble): counter-based sampling, chunking invariance, Dask
distribution (same table, a killed worker retried), single-run agreement, bad specs, CLI."""

from __future__ import annotations

import json
import os
import resource

import numpy as np
import pytest

from granular import ensemble as ens
from granular.backend import get_backend
from granular.run.scene import load_scene

SCENES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenes")
ULVC = os.path.join(SCENES, "ulvc_unstable_rotation.toml")
TOP = os.path.join(SCENES, "livens_heavy_top.toml")
DIRECTORS = os.path.join(SCENES, "directors_batch.toml")

TOP_VARY = {"omega[2]": "normal(77.8, 2.0)", "mass": "uniform(0.6, 0.8)"}
ULVC_VARY = {"omega_body[0]": "uniform(0.005, 0.02)", "inertia[1]": "grid(1.1, 1.3)"}


def same_table(a, b):
    assert list(a) == list(b)
    for k in a:
        assert np.array_equal(a[k], b[k], equal_nan=True), k


# ----------------------------------------------------------------- sampling


def test_sampling_depends_only_on_seed_and_body():
    d = ens.parse_distribution("x", "normal(1, 2)")
    full = ens.sample(d, 7, 0, np.arange(1000), 1000)
    part = ens.sample(d, 7, 0, np.arange(500, 600), 1000)
    assert np.array_equal(full[500:600], part)
    assert abs(full.mean() - 1.0) < 0.2 and abs(full.std() - 2.0) < 0.2
    u = ens.sample(ens.parse_distribution("x", "uniform(-1, 3)"), 7, 1, np.arange(1000), 1000)
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.15
    assert not np.array_equal(u, ens.sample(ens.parse_distribution("x", "uniform(-1, 3)"), 8, 1, np.arange(1000), 1000))
    g = ens.sample(ens.parse_distribution("x", "grid(0, 1)"), 7, 2, np.arange(5), 5)
    assert np.allclose(g, [0, 0.25, 0.5, 0.75, 1.0])


# ----------------------------------------------------------------- chunking


@pytest.mark.parametrize(
    "scene,vary,steps", [(TOP, TOP_VARY, 20), (ULVC, ULVC_VARY, 200), (DIRECTORS, {"omega": "normal(0, 1)"}, 10)]
)
def test_same_seed_same_table_for_any_chunk_size(scene, vary, steps):
    tables = [ens.run_ensemble(scene, 7, vary, seed=3, chunk_size=c, steps=steps) for c in (1, 2, 7)]
    for t in tables[1:]:
        same_table(tables[0], t)
    t = tables[0]
    assert np.array_equal(t["body"], np.arange(7))
    assert np.all(np.isfinite(t["energy_rel_error"])) and np.abs(t["energy_rel_error"]).max() < 1e-9
    other = ens.run_ensemble(scene, 7, vary, seed=4, chunk_size=7, steps=steps)
    first = list(t)[1]  # the first sampled column (omega[0] for a whole-vector field)
    assert not np.array_equal(other[first], t[first])


def test_heavy_top_invariants_and_unstable_rotation_flip():
    top = ens.run_ensemble(TOP, 4, TOP_VARY, seed=1, chunk_size=4, steps=50)
    assert np.abs(top["energy_rel_error"]).max() < 1e-10  # EML conserves the generalized energy (74)
    assert np.abs(top["L_error_z"]).max() < 1e-12  # and the vertical angular momentum
    assert np.all(np.isnan(top["flip_time"]))  # the spinning top does not flip
    u = ens.run_ensemble(ULVC, 3, {"omega_body[0]": "grid(0.01, 0.04)"}, seed=0, chunk_size=3, time=0.2)
    assert np.all(u["flip_axis"] == 3)
    f = u["flip_time"]
    assert np.all(np.isfinite(f)) and np.all(np.diff(f) < 0)  # larger perturbation, earlier flip
    assert 0.14 < f[0] < 0.16  # Omega_3 = 0 half-way through the first flip (the body is upside down at ~0.3)


# ----------------------------------------------------------------- single runs


def _single(scene_path, row, vary_fields, steps):
    """Run one body through the plain scene machinery with the row's sampled values."""
    from granular.backend import get_backend
    from granular.bodies.scenes.config import parse_bodies
    from granular.bodies.scenes.systems import build_system
    from granular.rotations import quat_from_matrix

    scene = load_scene(scene_path)
    table = {k: v for k, v in scene.bodies.items() if k not in ("count", "random")}
    for name in vary_fields:
        key, index = ens.parse_field(name)
        base = np.array(table.get(key, 0.0), dtype=float)
        if index:
            base[index] = row[name]
        else:
            base = np.array(row[name])
        table[key] = base.tolist()
    if table["scheme"] in ("livens", "ulvc"):
        table["position"] = [0.0, 0.0, 0.0]
    system = build_system(parse_bodies(table), get_backend("cpu"))
    for _ in range(steps):
        system.step(scene.run.dt)
    points, data = system.frame()
    q = quat_from_matrix(np.stack([data["d1"], data["d2"], data["d3"]], axis=2))[0]
    return points[0], q, data["angular_velocity"][0]


@pytest.mark.parametrize("scene,vary,steps", [(TOP, TOP_VARY, 30), (ULVC, ULVC_VARY, 100)])
def test_rows_match_single_runs(scene, vary, steps):
    t = ens.run_ensemble(scene, 40, vary, seed=11, chunk_size=16, steps=steps)
    for i in (0, 17, 39):
        row = {k: t[k][i] for k in t}
        x, q, w = _single(scene, row, vary, steps)
        assert np.allclose([row["x"], row["y"], row["z"]], x, rtol=1e-12, atol=1e-13)
        assert np.allclose([row[f"q{c}"] for c in range(4)], q, rtol=1e-12, atol=1e-13)
        assert np.allclose([row["omega_x"], row["omega_y"], row["omega_z"]], w, rtol=1e-11, atol=1e-11)


def test_file_distribution(tmp_path):
    vals = np.linspace(70.0, 80.0, 6)
    p = tmp_path / "w.npy"
    np.save(p, vals)
    t = ens.run_ensemble(TOP, 6, {"omega[2]": f"file({p})"}, seed=0, chunk_size=4, steps=2)
    assert np.array_equal(t["omega[2]"], vals)
    with pytest.raises(ens.EnsembleSpecError, match="has 6 rows, the ensemble needs 7"):
        ens.run_ensemble(TOP, 7, {"omega[2]": f"file({p})"}, seed=0, steps=1)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "spec,match",
    [
        ("omega_body[0]=gauss(0,1)", r"--vary omega_body\[0\]: bad distribution .*allowed forms: uniform"),
        ("omega_body[0]=uniform(1)", r"--vary omega_body\[0\]: bad distribution"),
        ("omega_body[0]=uniform(2,1)", r"needs a <= b"),
        ("omega_body[0]=normal(0,-1)", r"sigma >= 0"),
        ("omega_body[7]=uniform(0,1)", r"index \[7\] out of range"),
        ("spin=uniform(0,1)", r"'spin' cannot be varied for scheme 'ulvc'; allowed keys"),
        ("omega=uniform(0,1)", r"the scene gives 'omega_body', not 'omega'"),
        ("omega_body[0]", r"expected FIELD=DISTRIBUTION"),
        ("omega_body[a]=uniform(0,1)", r"bad field"),
        ("omega_body[0]=file(x.txt)", r"needs a .npy path"),
        ("mass=uniform(-2,-1)", r"bodies.mass"),
    ],
)
def test_bad_specs(spec, match):
    from granular.run.scene import SceneError

    with pytest.raises((ens.EnsembleSpecError, SceneError), match=match):
        ens.run_ensemble(ULVC, 3, [spec], seed=0, steps=1)


def test_bad_arguments():
    with pytest.raises(ens.EnsembleSpecError, match="n must be a positive integer"):
        ens.run_ensemble(TOP, 0, {}, seed=0, steps=1)
    with pytest.raises(ens.EnsembleSpecError, match="chunk_size must be a positive integer"):
        ens.run_ensemble(TOP, 3, {}, seed=0, chunk_size=0, steps=1)
    with pytest.raises(ens.EnsembleSpecError, match="seed must be"):
        ens.run_ensemble(TOP, 3, {}, seed=-1, steps=1)
    # a particle scene is an ensemble of replicas, which takes no pendula
    with pytest.raises(ens.EnsembleSpecError, match="do not take pendula"):
        ens.run_ensemble(os.path.join(SCENES, "pendulum.toml"), 3, {}, seed=0, steps=1)
    # the body spec itself still names the missing table
    with pytest.raises(ens.EnsembleSpecError, match="no \\[bodies\\] table"):
        ens.make_spec(os.path.join(SCENES, "pendulum.toml"), 3, {}, seed=0, steps=1)


def test_cli_bad_vary_is_one_line_exit_2(capsys, tmp_path):
    rc = ens.main([ULVC, "--n", "4", "--vary", "omega_body[0]=beta(1,2)", "--steps", "1", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err
    assert "omega_body[0]" in err and "uniform(a,b), normal(mu,sigma), grid(a,b), file(path.npy)" in err


def test_cli_writes_table_and_histograms(tmp_path, capsys):
    out = tmp_path / "ens"
    rc = ens.main([TOP, "--n", "9", "--vary", "omega[2]=normal(77.8,1)", "--seed", "5", "--chunk", "4", "--steps",
                   "5", "--out", str(out)])  # fmt: skip
    assert rc == 0, capsys.readouterr().err
    with np.load(out / "summaries.npz") as z:
        assert np.array_equal(z["body"], np.arange(9))
        t = ens.run_ensemble(TOP, 9, {"omega[2]": "normal(77.8,1)"}, seed=5, chunk_size=9, steps=5)
        for k in t:
            assert np.array_equal(z[k], t[k], equal_nan=True), k
    assert (out / "histograms.png").stat().st_size > 1000
    assert (out / "ensemble.json").exists()
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]


# ----------------------------------------------------------------- Dask


def test_dask_two_workers_identical_to_in_process(dask_client):
    local = ens.run_ensemble(TOP, 30, TOP_VARY, seed=9, chunk_size=30, steps=20)
    dist = ens.run_ensemble(TOP, 30, TOP_VARY, seed=9, chunk_size=4, steps=20, client=dask_client)
    same_table(local, dist)
    assert len(dask_client.scheduler_info()["workers"]) == 2


def test_dask_killed_worker_is_retried(dask_client, tmp_path):
    local = ens.run_ensemble(TOP, 12, TOP_VARY, seed=2, chunk_size=12, steps=20)
    dist = ens.run_ensemble(TOP, 12, TOP_VARY, seed=2, chunk_size=6, steps=20, client=dask_client, retries=3,
                            _kill_once_dir=tmp_path)  # fmt: skip
    assert sorted(os.listdir(tmp_path)) == ["chunk0", "chunk6"]  # each chunk's first attempt killed its worker
    same_table(local, dist)


# ----------------------------------------------------------------- large


@pytest.mark.long
def test_heavy_top_1e5_on_cpu():
    n = 100_000
    t = ens.run_ensemble(TOP, n, TOP_VARY, seed=21, chunk_size=20_000, steps=20)
    assert len(t["body"]) == n and np.all(np.isfinite(t["energy_rel_error"]))
    assert np.abs(t["energy_rel_error"]).max() < 1e-9
    for i in (0, 54_321, n - 1):
        row = {k: t[k][i] for k in t}
        _, q, _ = _single(TOP, row, TOP_VARY, 20)
        assert np.allclose([row[f"q{c}"] for c in range(4)], q, rtol=1e-12, atol=1e-13)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS after a 1e5-body heavy-top ensemble (chunks of 20000): {rss_mb:.0f} MB")


def test_subsample_trajectories_with_frames(tmp_path):
    """--trajectories K: K bodies re-run with the full output; their final states are the
    ensemble's summary rows for those bodies."""
    import xml.etree.ElementTree as ET

    from granular.ensemble import main as ensemble_main
    from granular.io import read_series

    out = tmp_path / "ens"
    rc = ensemble_main([os.path.join(SCENES, "livens_heavy_top.toml"), "--n", "12", "--vary",
                        "omega[2]=normal(135.6,1.0)", "--seed", "5", "--steps", "6", "--out", str(out),
                        "--trajectories", "3", "--quiet"])  # fmt: skip
    assert rc == 0
    table = dict(np.load(out / "summaries.npz"))
    meta = json.loads((out / "ensemble.json").read_text())
    idx = meta["meta"]["subsample_bodies"] if "meta" in meta else meta["subsample_bodies"]
    assert idx == [0, 6, 11]
    frames = ET.parse(out / "subsample" / "frames.pvd").getroot().find("Collection").findall("DataSet")
    assert len(frames) >= 2
    s = read_series(str(out / "subsample" / "series.csv"))
    for j, body in enumerate(idx):
        for c in range(4):
            assert s[f"b{j}_q{c}"][-1] == pytest.approx(table[f"q{c}"][body], abs=1e-12)


@pytest.mark.parametrize("scene_backend,flag,expected", [("cpu", None, "cpu"), ("gpu", "cpu", "cpu"),
                                                         ("auto", None, "auto")])  # fmt: skip
def test_cli_backend_is_the_scenes_unless_given(tmp_path, scene_backend, flag, expected):
    """Without ``--backend`` the ensemble runs on the scene's ``[run] backend`` (``auto``:
    the CPU here, where no GPU is usable); ``--backend`` overrides it; ``ensemble.json``
    records the backend that ran."""
    text = open(TOP).read()
    assert 'backend = "cpu"\n' in text
    scene = tmp_path / "top.toml"
    scene.write_text(text.replace('backend = "cpu"\n', f'backend = "{scene_backend}"\n', 1))
    out = tmp_path / "ens"
    args = [str(scene), "--n", "3", "--steps", "2", "--out", str(out), "--quiet"]
    assert ens.main(args + (["--backend", flag] if flag else [])) == 0
    if expected == "auto":  # the CPU here unless a GPU is usable
        expected = get_backend("auto").name
    assert json.loads((out / "ensemble.json").read_text())["backend"] == expected
