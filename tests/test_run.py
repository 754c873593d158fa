"""``granular run``: the output directory contract, kills and bit-for-bit resume."""

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest

from granular import cli
from granular.io import load_checkpoint, read_series
from patience import PATIENCE, wait_until

ROOT = os.path.join(os.path.dirname(__file__), "..")
TORUS = os.path.join(ROOT, "scenes", "torus_impact.toml")


def granular(*args, **kw):
    return subprocess.run([sys.executable, "-m", "granular", *args], capture_output=True, text=True, timeout=PATIENCE,
                          **kw)  # fmt: skip


def scene_copy(tmp_path, **run):
    """The torus scene with some [run] entries replaced."""
    text = open(TORUS).read()
    for key, value in run.items():
        lines = text.splitlines()
        lines = [f"{key} = {value}" if ln.split("=")[0].strip() == key else ln for ln in lines]
        text = "\n".join(lines) + "\n"
    path = tmp_path / "torus.toml"
    path.write_text(text)
    return str(path)


def test_output_directory_contract(tmp_path):
    out = tmp_path / "out"
    r = granular("run", TORUS, "--out", str(out), "--time", "0.6", "--quiet")
    assert r.returncode == 0, r.stderr
    for name in ("frames.pvd", "series.csv", "run.json", "walls.vtu", "checkpoints/checkpoint.npz",
                 "plots/energies.png", "plots/momenta.png"):  # fmt: skip
        assert (out / name).is_file(), name
    info = json.loads((out / "run.json").read_text())
    assert info["steps"] == 1200 and info["finished"] and info["backend"] == "cpu" and info["precision"] == "float64"
    assert info["steps_per_s"] > 0 and info["scene"]["name"] == "torus_impact"
    # frames.pvd lists every frame with its time
    ds = ET.parse(out / "frames.pvd").getroot().find("Collection").findall("DataSet")
    times = [float(d.get("timestep")) for d in ds]
    assert len(ds) == 13 and times == sorted(times) and times[0] == 0.0 and times[-1] == pytest.approx(0.6)
    assert sorted(os.listdir(out / "frames")) == sorted(os.path.basename(d.get("file")) for d in ds)
    # velocities and energies recomputed from the frames match series.csv
    series = read_series(str(out / "series.csv"))
    for d, t in zip(ds, times):
        mesh = meshio.read(out / d.get("file"))
        pd = mesh.point_data
        for key in ("id", "radius", "mass", "inertia", "velocity", "angular_velocity", "d1", "d2", "d3"):
            assert key in pd, key
        v, w, m, J = pd["velocity"], pd["angular_velocity"], pd["mass"], pd["inertia"]
        k = int(np.argmin(np.abs(series["time"] - t)))
        assert series["time"][k] == pytest.approx(t, abs=1e-12)
        assert 0.5 * (m * (v * v).sum(1)).sum() == pytest.approx(series["kinetic_translational"][k], rel=1e-12)
        assert 0.5 * (J * (w * w).sum(1)).sum() == pytest.approx(series["kinetic_rotational"][k], rel=1e-12, abs=1e-300)
        np.testing.assert_allclose((m[:, None] * v).sum(0), [series["P_x"][k], series["P_y"][k], series["P_z"][k]],
                                   atol=1e-12)  # fmt: skip
        R = np.stack([pd["d1"], pd["d2"], pd["d3"]], axis=-1)
        np.testing.assert_allclose(R @ np.swapaxes(R, 1, 2), np.broadcast_to(np.eye(3), R.shape), atol=1e-14)
        lines = [c for c in mesh.cells if c.type == "line"]
        assert lines and len(lines[0].data) == 80
    assert series["U_pw"].max() > 0  # the impact happened


def final_state(out):
    arrays, meta = load_checkpoint(os.path.join(out, "checkpoints", "checkpoint.npz"))
    return arrays, meta


def wait_for(path, proc):
    """Whether ``path`` appeared while ``proc`` ran (waiting at most PATIENCE)."""
    return wait_until(lambda: os.path.exists(path), proc)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_run_resumes_bit_for_bit(tmp_path, sig):
    scene = scene_copy(tmp_path, duration="8.0", checkpoint_every="0.5", output_every="0.25", series_every="0.05")
    ref = tmp_path / "ref"
    r = granular("run", scene, "--out", str(ref), "--quiet")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "granular", "run", scene, "--out", str(out), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert wait_for(str(out / "checkpoints" / "checkpoint.npz"), proc)
    time.sleep(0.1)  # into the steps after the first checkpoint, well before the last (about 2 s on)
    proc.send_signal(sig)
    proc.wait(timeout=PATIENCE)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    # the directory is readable as it is
    arrays, meta = final_state(str(out))
    if meta["step"] == 16000:  # killed between its last checkpoint and its exit: nothing is left to resume
        pytest.skip("the signal arrived after the run's last checkpoint")
    assert 0 < meta["step"] < 16000
    series = read_series(str(out / "series.csv"))
    assert len(series["time"]) >= 1
    ds = ET.parse(out / "frames.pvd").getroot().find("Collection").findall("DataSet")
    for d in ds:
        meshio.read(out / d.get("file"))
    # resume and compare with the uninterrupted run
    r = granular("run", scene, "--resume", str(out / "checkpoints" / "checkpoint.npz"), "--quiet")
    assert r.returncode == 0, r.stderr
    a, _ = final_state(str(ref))
    b, _ = final_state(str(out))
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    sa, sb = read_series(str(ref / "series.csv")), read_series(str(out / "series.csv"))
    for key in sa:
        np.testing.assert_array_equal(sa[key], sb[key], err_msg=key)
    fa = ET.parse(ref / "frames.pvd").getroot().find("Collection").findall("DataSet")
    fb = ET.parse(out / "frames.pvd").getroot().find("Collection").findall("DataSet")
    assert [d.get("timestep") for d in fa] == [d.get("timestep") for d in fb]
    last_a, last_b = meshio.read(ref / fa[-1].get("file")), meshio.read(out / fb[-1].get("file"))
    np.testing.assert_array_equal(last_a.points, last_b.points)


def test_resume_refuses_another_scene(tmp_path):
    scene = scene_copy(tmp_path, duration="0.1")
    out = tmp_path / "o"
    assert granular("run", scene, "--out", str(out), "--quiet").returncode == 0
    r = granular("run", os.path.join(ROOT, "scenes", "pendulum.toml"), "--resume", str(out / "checkpoints" / "checkpoint.npz"))
    assert r.returncode == 2 and "different scene" in r.stderr


def test_log_json_and_overrides(tmp_path):
    out = tmp_path / "o"
    r = granular("run", TORUS, "--out", str(out), "--steps", "50", "--log-json", "--backend", "cpu")
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end" and events[-1]["steps"] == 50
    r = granular("run", TORUS, "--out", str(out), "--steps", "20", "--precision", "float32", "--quiet", "--overwrite")
    assert r.returncode == 0 and json.loads((out / "run.json").read_text())["precision"] == "float32"
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "thesis.tex").write_text("x")
    r = granular("run", TORUS, "--out", str(tmp_path / "foreign"), "--steps", "5")
    assert r.returncode == 2 and "not a granular run" in r.stderr
    assert (tmp_path / "foreign" / "thesis.tex").exists()


def test_pendulum_scene_series_has_invariants(tmp_path):
    out = tmp_path / "p"
    r = granular("run", os.path.join(ROOT, "scenes", "pendulum.toml"), "--out", str(out), "--time", "5", "--quiet")
    assert r.returncode == 0, r.stderr
    s = read_series(str(out / "series.csv"))
    assert np.abs(s["pendulum0_Rrho0_dot_Omega"]).max() < 1e-14
    np.testing.assert_allclose(s["pendulum0_norm_Rrho0"], 1.0, atol=1e-15)
    assert "p0_q0" in s and (out / "plots" / "invariants.png").is_file()


def test_overwrite_of_a_folder_holding_only_hidden_files(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / ".gitkeep").write_text("")
    scene = os.path.join(ROOT, "scenes", "sphere_drop.toml")
    assert cli.main(["run", scene, "--out", str(out), "--overwrite", "--steps", "3", "--quiet"]) == 0
    assert (out / "series.csv").is_file()


@pytest.mark.parametrize("how", ["scene", "flag", "neither"])
def test_eager_switch_reaches_the_integrator(tmp_path, monkeypatch, how):
    """``[run] graphs = false`` and ``granular run --eager`` both give an integrator that
    launches every kernel (no CUDA graphs); without either it replays graphs."""
    from granular.run import command

    seen = []
    real = command.Simulation

    def recording(*args, **kw):
        sim = real(*args, **kw)
        seen.append(sim.integrator.graphs)
        return sim

    monkeypatch.setattr(command, "Simulation", recording)
    text = open(os.path.join(ROOT, "scenes", "sphere_drop.toml")).read()
    if how == "scene":
        text = text.replace("[run]\n", "[run]\ngraphs = false\n", 1)
    scene = tmp_path / "drop.toml"
    scene.write_text(text)
    args = ["run", str(scene), "--out", str(tmp_path / "o"), "--steps", "3", "--quiet"]
    assert cli.main(args + (["--eager"] if how == "flag" else [])) == 0
    assert seen == [how == "neither"]
