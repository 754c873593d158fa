"""Scene files with a ``[bodies]`` table (granular.bodies.scenes): every shipped body scene
runs through ``granular run`` and writes the full output directory; its series equals a
direct run of the scheme with the same setup; malformed tables are reported by path and
message without a traceback; resume, failures and overrides give the documented exit codes."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
import tomllib

import numpy as np
import pytest

from granular import cli
from granular.io import load_checkpoint, read_series
from granular.run.scene import SceneError, load_scene, parse_scene
from patience import PATIENCE

ROOT = os.path.join(os.path.dirname(__file__), "..")
SCENE_DIR = os.path.join(ROOT, "scenes")
#: body scene -> steps run by the test (few: the scenes' full runs take seconds to minutes)
BODY_SCENES = {
    "nontwisting_case1": 6,
    "nontwisting_case2": 6,
    "nontwisting_case3": 6,
    "ulvc_unstable_rotation": 12,
    "livens_free_body": 4,
    "livens_heavy_top": 5,
    "rolling_ball_circle": 10,
    "directors_batch": 4,
}
RTOL = 1e-12


def scene_path(name):
    return os.path.join(SCENE_DIR, name + ".toml")


def test_every_body_scene_in_scenes_is_tested():
    shipped = set()
    for f in os.listdir(SCENE_DIR):
        if f.endswith(".toml"):
            with open(os.path.join(SCENE_DIR, f), "rb") as fh:
                if "bodies" in tomllib.load(fh):
                    shipped.add(f[:-5])
    assert shipped == set(BODY_SCENES)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run every body scene with ``granular run SCENE --steps N --out DIR`` in subprocesses,
    two at a time (the imports dominate; two cores)."""
    base = tmp_path_factory.mktemp("body_runs")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    pending = list(BODY_SCENES.items())
    active, done = [], {}
    while pending or active:
        while pending and len(active) < 2:
            name, steps = pending.pop(0)
            out = base / name
            cmd = [sys.executable, "-m", "granular", "run", scene_path(name), "--steps", str(steps), "--out", str(out)]
            active.append((name, out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                       env=env, cwd=base)))  # fmt: skip
        name, out, proc = active.pop(0)
        stdout, stderr = proc.communicate(timeout=PATIENCE)
        done[name] = (proc.returncode, stdout, stderr, out)
    return done


@pytest.mark.parametrize("name", sorted(BODY_SCENES))
def test_body_scene_runs_and_writes_the_output_directory(runs, name):
    rc, stdout, stderr, out = runs[name]
    assert rc == 0, stderr
    assert "Traceback" not in stderr
    steps = BODY_SCENES[name]
    scene = load_scene(scene_path(name))
    n = scene.bodies.get("count", 1)
    assert {"frames.pvd", "frames", "series.csv", "run.json", "plots", "checkpoints"} <= set(os.listdir(out))
    frames = sorted(os.listdir(out / "frames"))
    assert len(frames) >= 2 and all(f.endswith(".vtu") for f in frames)
    with open(out / "frames.pvd") as fh:
        assert fh.read().count("<DataSet") == len(frames)
    import meshio

    mesh = meshio.read(out / "frames" / frames[-1])
    assert mesh.points.shape == (n, 3)
    assert [c.type for c in mesh.cells] == ["vertex"]
    shapes = {k: v.shape for k, v in mesh.point_data.items()}
    for key, shape in {"id": (n,), "mass": (n,), "inertia": (n, 6), "velocity": (n, 3), "angular_velocity": (n, 3),
                       "d1": (n, 3), "d2": (n, 3), "d3": (n, 3)}.items():  # fmt: skip
        assert shapes.get(key) == shape, key
    # the directors are the columns of R: orthonormal, right-handed; the inertia is R J R^T
    R = np.stack([mesh.point_data["d1"], mesh.point_data["d2"], mesh.point_data["d3"]], axis=-1)
    assert np.allclose(R.swapaxes(1, 2) @ R, np.eye(3), atol=1e-8)
    assert np.allclose(np.linalg.det(R), 1.0, atol=1e-8)
    info = json.load(open(out / "run.json"))
    for key in ("scene", "version", "backend", "precision", "dt", "steps", "wall_time_s", "steps_per_s"):
        assert key in info, key
    assert info["steps"] == steps and info["finished"] and info["error"] is None and info["bodies"] == n
    series = read_series(str(out / "series.csv"))
    assert series["step"][0] == 0 and series["step"][-1] == steps
    assert {"time", "step"} <= set(series) and any(k.startswith("kinetic_") for k in series)
    assert {"L_x", "L_y", "L_z"} <= set(series)
    assert any(k.startswith("b0_") for k in series) == (n < 10)
    pngs = os.listdir(out / "plots")
    assert {"energies.png", "momenta.png", "invariants.png"} <= set(pngs)
    arrays, meta = load_checkpoint(str(out / "checkpoints" / "checkpoint.npz"))
    assert meta["step"] == steps and int(arrays["counters"][0]) == steps


# ------------------------------------------------------- series against direct runs


def _direct(sch_step, record, steps):
    """Records of a direct run: index k = state after k steps."""
    recs = [record()]
    for _ in range(steps):
        sch_step()
        recs.append(record())
    return recs


def _compare(series, recs):
    """Every series row (step k) against the direct run's record after k steps."""
    for i, k in enumerate(series["step"].astype(int)):
        for col, value in recs[k].items():
            np.testing.assert_allclose(series[col][i], value, rtol=RTOL, atol=RTOL, err_msg=f"{col} at step {k}")
    assert len(series["step"]) >= 2


def _nontwisting(case):
    from granular.bodies.directors import schemes as dirs
    from granular.validation import nontwisting as nt

    sch, s = nt.build(cases=(case,))

    def record():
        d, v = s.d, s.v
        rec = {"kinetic_rotational": float(sch.kinetic_energy(s)[0]), "time": s.t}
        rec.update({f"b0_d{j + 1}_{a}": d[0, j, c] for j in range(3) for c, a in enumerate("xyz")})
        rec.update({f"b0_omega_{a}": w for a, w in zip("xyz", dirs.angular_velocity(d, v)[0])})
        rec.update({f"L_{a}": p for a, p in zip("xyz", sch.spatial_angular_momentum(s)[0])})
        rec.update({f"b0_Pi{i + 1}": p for i, p in enumerate(sch.nonholonomic_momenta(s)[0])})
        rec["constraint_residual_max"] = float(sch.constraint_residual(s)[0])
        return rec

    return lambda: sch.step(s, nt.H_PAPER), record


def _ulvc():
    from granular import rotations as rot
    from granular.bodies.ulvc import schemes as ulvc
    from granular.validation import ulvc as vu

    bodies = vu.build_bodies()
    s = vu.initial_state(bodies)
    integ = ulvc.LieGroupRK4(bodies)

    def record():
        U, Om = bodies.velocities(s.w)
        rec = {"kinetic_translational": float(0.5 * (U * U).sum()), "time": s.t,
               "kinetic_rotational": float(0.5 * (Om * (bodies.J[0] @ Om[0])).sum())}  # fmt: skip
        rec.update({f"b0_Omega_{i + 1}": x for i, x in enumerate(Om[0])})
        rec.update({f"b0_q{i}": x for i, x in enumerate(rot.quat_from_matrix(s.R)[0])})
        rec.update({f"L_{a}": x for a, x in zip("xyz", ulvc.angular_momentum(bodies, s)[0])})
        rec["det_R_minus_1_max"] = abs(np.linalg.det(s.R[0]) - 1.0)
        return rec

    return lambda: integ.step(s, 1e-4), record


def _livens(name):
    from granular.bodies.livens.rigid import EML

    if name == "livens_free_body":
        sch = EML(np.diag([6.0, 8.0, 3.0]), n=1, rtol=1e-9)
        s, h = sch.state([1.0, 0.0, 0.0, 0.0], Omega=[10.0, 20.0, 20.0]), 0.05
    else:  # the setup of granular/validation/livens.py, with the paper's Newton tolerance 1e-9
        from granular.validation.livens import heavy_top

        (sch, s), h = heavy_top("EML", rtol=1e-9), 0.01

    def record():
        rec = {"generalized_energy": float(sch.generalized_energy(s)[0]), "time": s.t,
               "kinetic_rotational": float(sch.kinetic_energy(s)[0]),
               "U_gravity": float(sch.potential(s.q)[0])}  # fmt: skip
        rec.update({f"b0_q{i}": x for i, x in enumerate(s.q[0])})
        rec.update({f"L_{a}": x for a, x in zip("xyz", sch.angular_momentum(s)[0])})
        rec.update({f"b0_com_{a}": x for a, x in zip("xyz", sch.center_of_mass_position(s)[0])})
        rec.update({f"b0_Omega_{i + 1}": x for i, x in enumerate(sch.body_angular_velocity(s)[0])})
        return rec

    return lambda: sch.step(s, h), record


def _rolling_ball():
    from granular.bodies.rolling_ball.integrators import RK4
    from granular.validation.rollingball import scene_circle

    ball, s, _ = scene_circle()
    integ = RK4(ball)
    names = [f"b0_Omega_{i}" for i in "123"] + [f"b0_Gamma_{i}" for i in "123"] + [f"b0_q{i}" for i in "0123"] \
        + [f"b0_z_{a}" for a in "xyz"]  # fmt: skip

    def record():
        rec = dict(zip(names, s.y[0, :13]))
        rec.update({"time": s.t, "total": float(ball.energy(s.t, s.y)[0]), "work_actuation": float(s.y[0, 13])})
        rec["energy_balance"] = float(ball.invariants(s)["energy_balance"][0])
        return rec

    return lambda: integ.step(s, 0.01), record


def _directors_batch():
    from granular.bodies.directors.schemes import DirectorEM
    from granular.validation.nontwisting import INERTIA

    n = 1000
    omega = np.array([6.0, -18.0, 3.0]) + np.random.default_rng(2026).normal(0.0, 0.5, (n, 3))  # documented sampler
    em = DirectorEM(INERTIA, n=n, rtol=1e-10)
    s = em.state(np.eye(3), omega)

    def record():
        rec = {"kinetic_rotational": float(em.kinetic_energy(s).sum()), "time": s.t}
        rec.update({f"L_{a}": x for a, x in zip("xyz", em.spatial_angular_momentum(s).sum(axis=0))})
        rec["newton_iterations_max"] = float(s.iterations.max())
        return rec

    return lambda: em.step(s, 0.005), record


DIRECT = {
    "nontwisting_case1": lambda: _nontwisting(1),
    "nontwisting_case2": lambda: _nontwisting(2),
    "nontwisting_case3": lambda: _nontwisting(3),
    "ulvc_unstable_rotation": _ulvc,
    "livens_free_body": lambda: _livens("livens_free_body"),
    "livens_heavy_top": lambda: _livens("livens_heavy_top"),
    "rolling_ball_circle": _rolling_ball,
    "directors_batch": _directors_batch,
}


@pytest.mark.parametrize("name", sorted(BODY_SCENES))
def test_series_equals_a_direct_run_of_the_scheme(runs, name):
    rc, _, stderr, out = runs[name]
    assert rc == 0, stderr
    step, record = DIRECT[name]()
    _compare(read_series(str(out / "series.csv")), _direct(step, record, BODY_SCENES[name]))


def test_heavy_top_scene_has_the_parameters_of_the_validation_setup():
    from granular.validation.livens import heavy_top_parameters

    P = heavy_top_parameters()
    b = load_scene(scene_path("livens_heavy_top")).bodies
    np.testing.assert_allclose(b["inertia"], [P["J1"], P["J1"], P["J3"]], rtol=1e-15)
    np.testing.assert_allclose([b["mass"], b["center_of_mass"][2], -b["gravity"][2]], [P["m"], P["l"], P["g"]],
                               rtol=1e-15)  # fmt: skip
    np.testing.assert_allclose(b["orientation"], P["q0"], rtol=1e-15)
    np.testing.assert_allclose(b["omega"], P["omega0"], rtol=1e-15, atol=1e-15)


# ------------------------------------------------------------------ malformed tables

BASE = {
    "name": "t",
    "run": {"dt": 0.01, "steps": 3},
    "bodies": {"scheme": "nontwisting", "inertia": [[3.0, -1.0 / 7.0, 0.0], [-1.0 / 7.0, 4.0, 0.0], [0.0, 0.0, 5.0]],
               "omega": [6.0, -18.0, 0.0], "load": "case2"},  # fmt: skip
}


def bodies(**changes):
    d = copy.deepcopy(BASE)
    for k, v in changes.items():
        if v is ...:
            del d["bodies"][k]
        else:
            d["bodies"][k] = v
    return d


MALFORMED = [
    (bodies(scheme="warp"), "bodies.scheme", r"unknown scheme 'warp'; allowed: 'directors', 'nontwisting', 'ulvc'"),
    (bodies(scheme=...), "bodies.scheme", r"required field is missing; choose one of 'directors'"),
    (bodies(intertia=[1.0, 2.0, 2.0]), "bodies.intertia", r"unknown key \(not part of the schema"),
    (bodies(inertia=...), "bodies.inertia", r"required field is missing"),
    (bodies(inertia=[[3.0, 0.0, 0.0], [0.0, 4.0, "x"], [0.0, 0.0, 5.0]]), "bodies.inertia[1][2]",
     r"expected a finite number \(got 'x'\)"),
    (bodies(inertia=[[3.0, 0.0, 0.2], [0.0, 4.0, 0.0], [0.2, 0.0, 5.0]]), "bodies.inertia",
     r"needs D3 as a principal axis \(32\): J13 = J23 = 0 \(got J13 = 0.2, J23 = 0\)"),
    (bodies(inertia=[1.0, 1.0, 3.0]), "bodies.inertia", r"strict triangle inequality"),
    (bodies(inertia=[1.0, 2.0]), "bodies.inertia", r"expected 3 principal moments .* \(got shape 2\)"),
    (bodies(omega=[6.0, -18.0, 1.0]), "bodies.omega", r"no initial twist, ω·d3 = 0 \(82\); body 0 has ω·d3 = 1"),
    (bodies(omega=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], count=3), "bodies.omega",
     r"has 2 entries, expected one per body \(count = 3\)"),
    (bodies(load="case7"), "bodies.load", r"unknown load 'case7'; allowed: 'none', 'case1', 'case2', 'case3'"),
    (bodies(orientation=[1.0, 0.1, 0.0, 0.0]), "bodies.orientation", r"not a unit quaternion \(\|q\| = 1.00498"),
    (bodies(rotvec=[0.0, 0.0, 0.0], orientation=[1.0, 0.0, 0.0, 0.0]), "bodies.rotvec",
     r"give orientation or rotvec, not both"),
    (bodies(variant="rk4"), "bodies.variant", r"Input should be 'em' or 'dla' \(got 'rk4'\)"),
    (bodies(a=2.0), "bodies.a", r"Input should be less than or equal to 1"),
    (bodies(count=0), "bodies.count", r"Input should be greater than or equal to 1"),
    (bodies(random={"seed": 1, "omega_scale": -0.5}), "bodies.random.omega_scale",
     r"Input should be greater than or equal to 0 \(got -0.5\)"),
    (bodies(random={"omega_scale": 0.5, "distribution": "cauchy"}), "bodies.random.distribution",
     r"Input should be 'uniform' or 'normal'"),
    (bodies(moment={"spatial": [1.0, 0.0, 0.0]}), "bodies.moment", r"load \(a preset\) or \[bodies.moment\]"),
    (bodies(newton_rtol=0.0), "bodies.newton_rtol", r"Input should be greater than 0"),
    ({**BASE, "bodies": {"scheme": "ulvc", "inertia": [1.0, 2.0, 3.0], "mass": -1.0}}, "bodies.mass",
     r"must be > 0 \(got -1.0\)"),
    ({**BASE, "bodies": {"scheme": "ulvc", "inertia": [1.0, 2.0, 3.0], "variant": "euler"}}, "bodies.variant",
     r"Input should be 'rk4' or 'reference'"),
    ({**BASE, "bodies": {"scheme": "directors", "inertia": [[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]}},
     "bodies.inertia", r"must be symmetric"),
    ({**BASE, "bodies": {"scheme": "livens", "inertia": [1.0, 1.0, 1.0], "omega_body": [1.0, 2.0]}},
     "bodies.omega_body", r"expected 3 numbers \[x, y, z\] \(shared by all bodies\) or a list of them"),
    ({**BASE, "bodies": {"scheme": "rolling_ball", "inertia": [1.0, 1.0, 1.0], "masses": [
        {"mass": 0.3, "rail": {"kind": "circel", "radius": 0.5}, "actuation": {"kind": "rest"}}]}},
     "bodies.masses[0].rail", r"unknown kind 'circel'; allowed: 'circle', 'ellipse', 'figure_eight', 'line'"),
    ({**BASE, "bodies": {"scheme": "rolling_ball", "inertia": [1.0, 1.0, 1.0], "masses": [
        {"mass": 0.3, "rail": {"kind": "circle", "radius": 0.5, "u": [1.0, 1.0, 0.0]},
         "actuation": {"kind": "rest"}}]}},
     "bodies.masses[0].rail", r"orthonormal"),
    ({**BASE, "bodies": {"scheme": "rolling_ball", "inertia": [1.0, 1.0, 1.0], "masses": [
        {"mass": 0.3, "rail": {"kind": "line", "direction": [1.0, 0.0, 0.0]}, "actuation": {"speed": 1.0}}]}},
     "bodies.masses[0].actuation", r"required field 'kind' is missing; allowed: 'constant_speed', 'rest'"),
    ({**BASE, "bodies": [1, 2]}, "bodies", r"Input should be a valid dictionary"),
]


@pytest.mark.parametrize("data,path,match", MALFORMED, ids=[f"case{k}" for k in range(len(MALFORMED))])
def test_malformed_bodies_table_names_the_path(data, path, match):
    with pytest.raises(SceneError) as info:
        parse_scene(data)
    errors = info.value.errors
    assert any(p == path and __import__("re").search(match, m) for p, m in errors), errors
    text = str(info.value)
    assert "Traceback" not in text
    assert all(line.startswith("  ") or line.startswith("scene") for line in text.splitlines())


def test_all_problems_of_a_bodies_table_are_listed_at_once():
    d = bodies(intertia=1.0, omega=[1.0, "fast", 0.0], load="case9", variant="rk4")
    with pytest.raises(SceneError) as info:
        parse_scene(d)
    paths = {p for p, _ in info.value.errors}
    assert {"bodies.intertia", "bodies.omega[1]", "bodies.load", "bodies.variant"} <= paths


@pytest.mark.parametrize("extra", [
    {"particles": [{"kind": "explicit", "x": [[0.0, 0.0, 0.0]]}]},
    {"walls": [{"normal": [1.0, 0.0, 0.0], "k": 1.0}]},
])  # fmt: skip
def test_bodies_and_particles_do_not_mix(extra):
    with pytest.raises(SceneError) as info:
        parse_scene({**copy.deepcopy(BASE), **extra})
    assert info.value.errors[0][0] == "bodies"
    assert "either [bodies]" in info.value.errors[0][1]


def test_valid_tables_resolve_to_one_row_per_body():
    from granular.bodies.scenes.config import parse_bodies

    cfg = parse_bodies({"scheme": "directors", "inertia": [[[3.0, 0, 0], [0, 4.0, 0], [0, 0, 5.0]]] * 2,
                        "omega_body": [1.0, 2.0, 3.0], "rotvec": [[0.0, 0.0, 0.0], [0.0, 0.0, math.pi / 2]],
                        "random": {"seed": 5, "distribution": "uniform", "omega_scale": 0.1}})  # fmt: skip
    assert cfg.count == 2 and cfg.inertia.shape == (2, 3, 3) and cfg.offsets[1, 0] == 3.0
    d = np.random.default_rng(5).uniform(-0.1, 0.1, (2, 3))
    np.testing.assert_allclose(cfg.omega_body, np.array([1.0, 2.0, 3.0]) + d, rtol=1e-15)
    np.testing.assert_allclose(cfg.omega[1], [-(2.0 + d[1, 1]), 1.0 + d[1, 0], 3.0 + d[1, 2]], rtol=1e-14)
    # non-twisting: the perturbation keeps omega . d3 = 0 (82)
    cfg = parse_bodies({**BASE["bodies"], "count": 50, "random": {"omega_scale": 1.0}})
    assert np.abs(np.einsum("ni,ni->n", cfg.omega, cfg.R[:, :, 2])).max() < 1e-14
    assert np.ptp(cfg.omega[:, 0]) > 0.1


# ------------------------------------------------------------- CLI: codes and resume


def _write(tmp_path, data, name="s.toml"):
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(float(v)) if isinstance(v, float) else str(v)

    lines = [f"name = {json.dumps(data.get('name', 't'))}", "[run]"]
    lines += [f"{k} = {val(v)}" for k, v in data["run"].items()]
    lines += ["[bodies]"] + [f"{k} = {val(v)}" for k, v in data["bodies"].items()]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_cli_bad_bodies_scene_exits_2_without_traceback(tmp_path):
    path = _write(tmp_path, bodies(intertia=[1.0, 2.0, 2.0]))
    out = subprocess.run([sys.executable, "-m", "granular", "run", path, "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "bodies.intertia: unknown key" in out.stderr
    assert not (tmp_path / "o").exists()


def test_cli_precision_float32_is_refused(tmp_path, capsys):
    path = _write(tmp_path, bodies())
    assert cli.main(["run", path, "--precision", "float32", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "float64" in capsys.readouterr().err


def test_cli_newton_failure_exits_1_and_keeps_the_last_good_state(tmp_path, capsys):
    # the DLA comparator has no solution for h |omega| > 1 (granular.bodies.directors.dla)
    data = bodies(variant="dla", load="none")
    data["run"] = {"dt": 0.1, "steps": 3}
    path = _write(tmp_path, data)
    out = tmp_path / "o"
    assert cli.main(["run", path, "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Newton solve failed" in err and "body 0" in err and "checkpoint.npz" in err
    info = json.load(open(out / "run.json"))
    assert info["error"] and not info["finished"] and info["steps"] == 0
    arrays, meta = load_checkpoint(str(out / "checkpoints" / "checkpoint.npz"))
    assert meta["step"] == 0 and np.array_equal(arrays["d"][0], np.eye(3))


def test_cli_resume_continues_bit_for_bit(tmp_path, capsys):
    data = bodies(count=2, omega=[[6.0, -18.0, 0.0], [1.5, 4.5, 0.0]], load=["case2", "case3"])
    data["run"] = {"dt": 0.005, "steps": 12, "series_every": 0.005, "output_every": 0.02}
    path = _write(tmp_path, data)
    full, part = tmp_path / "full", tmp_path / "part"
    assert cli.main(["run", path, "--out", str(full), "--quiet"]) == 0
    assert cli.main(["run", path, "--out", str(part), "--steps", "5", "--quiet"]) == 0
    assert cli.main(["run", path, "--resume", str(part / "checkpoints" / "checkpoint.npz"), "--quiet"]) == 0
    a, b = read_series(str(full / "series.csv")), read_series(str(part / "series.csv"))
    assert list(a) == list(b) and len(a["time"]) == 13
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    import meshio

    last = [meshio.read(d / "frames" / sorted(os.listdir(d / "frames"))[-1]) for d in (full, part)]
    for k, v in last[0].point_data.items():
        assert np.array_equal(v, last[1].point_data[k]), k
    # a checkpoint of another scene is refused
    other = _write(tmp_path, bodies(load="none"), "other.toml")
    assert cli.main(["run", other, "--resume", str(part / "checkpoints" / "checkpoint.npz"), "--quiet"]) == 2
    assert "different scene" in capsys.readouterr().err


def test_cli_log_json_events(tmp_path, capsys):
    path = _write(tmp_path, bodies(load="none"))
    assert cli.main(["run", path, "--out", str(tmp_path / "o"), "--log-json", "--time", "0.02"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end" and "frame" in kinds
    assert events[-1]["steps"] == 2 and events[-1]["bodies"] == 1


VARIANTS = [
    {"scheme": "directors", "variant": "dla", "inertia": [3.0, 4.0, 5.0], "omega": [1.0, 2.0, 3.0],
     "moment": {"spatial": [0.5, 0.0, 0.0], "material": [0.0, 0.0, 1.0], "time": "ramp"}},
    {"scheme": "nontwisting", "variant": "dla", "a": 0.5, "inertia": [3.0, 4.0, 5.0], "omega": [1.0, 2.0, 0.0],
     "moment": {"material": [1.0, 2.0]}},
    {"scheme": "ulvc", "variant": "reference", "inertia": [1.0, 2.0, 3.0], "mass": [1.0, 2.0],
     "gravity": [0.0, 0.0, -9.81], "torque_body": [0.0, 0.1, 0.0], "velocity": [1.0, 0.0, 2.0]},
    {"scheme": "ulvc", "projection": "tetrahedral", "stages": "paper", "inertia": [1.0, 2.0, 3.0],
     "gravity": [0.0, 0.0, -9.81], "torque_spatial": [0.1, 0.0, 0.0], "omega_body": [1.0, 2.0, 3.0]},
] + [
    {"scheme": "livens", "variant": v, "inertia": [6.0, 8.0, 3.0], "omega_body": [1.0, 2.0, 2.0], "count": 2,
     "mass": 1.0, "center_of_mass": [0.0, 0.0, 0.5], "gravity": [0.0, 0.0, -9.81]}
    for v in ("eml", "reml", "null-eml", "mpl", "emh", "mph")
] + [
    {"scheme": "rolling_ball", "inertia": [0.62, 0.66, 0.70], "external_force": [0.05, 0.0, 0.0], "count": 2,
     "random": {"omega_scale": 0.1}, "masses": [
         {"mass": 0.2, "rail": {"kind": "ellipse", "a": 0.5, "b": 0.4}, "actuation": {"kind": "sinusoidal",
          "amplitude": 1.0, "frequency": 1.3}},
         {"mass": 0.1, "rail": {"kind": "figure_eight", "a": 0.5, "b": 0.4, "u": [0.0, 1.0, 0.0]},
          "actuation": {"kind": "rest", "theta0": 0.3}},
         {"mass": 0.1, "rail": {"kind": "line", "direction": [0.0, 0.0, 1.0]},
          "actuation": {"kind": "constant_speed", "speed": 0.1}}]},
]


@pytest.mark.parametrize("table", VARIANTS, ids=[f"{t['scheme']}-{t.get('variant', '')}" for t in VARIANTS])
def test_every_variant_builds_steps_and_reports(table):
    from granular.backend import get_backend
    from granular.bodies.scenes.config import parse_bodies
    from granular.bodies.scenes.systems import build_system

    system = build_system(parse_bodies(table), get_backend("cpu"))
    rows = [system.series()]
    for _ in range(3):
        system.step(0.01)
        rows.append(system.series())
    assert system.step_count == 3 and abs(system.time - 0.03) < 1e-15
    assert list(rows[0]) == list(rows[-1]) and all(np.isfinite(v) for v in rows[-1].values())
    points, data = system.frame()
    assert points.shape == (system.n, 3) and data["inertia"].shape == (system.n, 6)
    saved = system.state_arrays()
    system.step(0.01)
    system.restore(saved)
    assert system.step_count == 3 and system.series() == rows[-1]
