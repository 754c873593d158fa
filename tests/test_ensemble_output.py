"""``granular ensemble`` output folders (issue 15, items 2, 3 and 11): an earlier ensemble
is not replaced without --overwrite; an unusable --out is refused before any body is
computed; chunks are written as they finish, so an interrupted ensemble keeps them and
--resume finishes it with the same table; ensemble.json has versions; the documented
heavy-top example samples tops in steady precession; non-conserved L components are NaN."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

import granular.ensemble as ens
from granular import resources
from granular.ensemble import driver
from patience import PATIENCE, wait_until

ROOT = os.path.join(os.path.dirname(__file__), "..")
TOP = os.path.join(ROOT, "scenes", "livens_heavy_top.toml")
ARGS = ["--n", "12", "--vary", "omega[2]=normal(77.8,0.1)", "--chunk", "4", "--steps", "5", "--seed", "2"]


def table(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_earlier_ensemble_kept_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "e"
    assert ens.main([TOP, *ARGS, "--out", str(out), "--quiet"]) == 0
    first = table(out / "summaries.npz")
    meta = json.loads((out / "ensemble.json").read_text())
    assert meta["versions"]["granular"] and meta["versions"]["numpy"] == np.__version__
    assert not (out / "chunks").exists()  # gathered, then removed
    mtime = (out / "summaries.npz").stat().st_mtime_ns
    assert ens.main([TOP, *ARGS[:-1], "3", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "holds a finished ensemble; give --overwrite to replace it" in err
    assert (out / "summaries.npz").stat().st_mtime_ns == mtime
    assert ens.main([TOP, *ARGS, "--out", str(out), "--quiet", "--resume"]) == 0  # finished: nothing to do
    assert ens.main([TOP, *ARGS[:-1], "3", "--out", str(out), "--quiet", "--overwrite"]) == 0
    assert not np.array_equal(table(out / "summaries.npz")["omega[2]"], first["omega[2]"])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "data.csv").write_text("x")
    assert ens.main([TOP, *ARGS, "--out", str(tmp_path / "other"), "--overwrite"]) == 2
    assert "not a granular ensemble's (data.csv)" in capsys.readouterr().err


def test_unusable_out_refused_before_computing(tmp_path, monkeypatch, capsys):
    (tmp_path / "f").write_text("x")
    called = []
    monkeypatch.setattr(driver, "run_chunk", lambda *a: called.append(a))  # the name the driver calls
    assert ens.main([TOP, *ARGS, "--out", str(tmp_path / "f" / "e")]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a directory" in err and "Traceback" not in err and not called


def test_read_only_or_full_out_refused_before_computing(tmp_path, monkeypatch, capsys):
    """Issue 15, item 3 for ensembles: an --out the file system refuses, or one without
    room for the summaries, is refused (exit 2) before any chunk runs, leaving nothing."""
    called = []
    monkeypatch.setattr(driver, "run_chunk", lambda *a: called.append(a))
    real_open = os.open

    def refusing(path, flags, *a, **k):
        if ".granular-write-test" in str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(resources.os, "open", refusing)
        assert ens.main([TOP, *ARGS, "--out", str(tmp_path / "ro")]) == 2
    err = capsys.readouterr().err
    assert "not writable" in err and "Permission denied" in err and "Traceback" not in err
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda p: usage._replace(free=1000))
    assert ens.main([TOP, *ARGS, "--out", str(tmp_path / "full")]) == 2
    err = capsys.readouterr().err
    assert "the ensemble (12 bodies)" in err and "are free" in err and "Traceback" not in err
    assert not called and not (tmp_path / "ro").exists() and not (tmp_path / "full").exists()


def test_heavy_top_reports_only_the_conserved_L_component():
    t = ens.run_ensemble(TOP, 3, {"omega[2]": "normal(77.8,0.1)"}, seed=1, steps=5)
    assert np.isnan(t["L_error_x"]).all() and np.isnan(t["L_error_y"]).all()
    assert np.abs(t["L_error_z"]).max() < 1e-12 and np.array_equal(t["L_error_norm"], np.abs(t["L_error_z"]))
    free = ens.run_ensemble(os.path.join(ROOT, "scenes", "livens_free_body.toml"), 2, {"omega_body[0]": "normal(10,1)"},
                            seed=1, steps=5)  # fmt: skip
    assert np.isfinite(free["L_error_x"]).all() and np.isfinite(free["L_error_norm"]).all()


def test_interrupted_ensemble_keeps_its_chunks_and_resumes(tmp_path):
    out = tmp_path / "e"
    args = [TOP, "--n", "40", "--vary", "omega[2]=normal(77.8,0.1)", "--chunk", "4", "--steps", "150", "--seed", "7",
            "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "granular", "ensemble", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    def a_chunk_written():
        return (out / "chunks").is_dir() and any(n.endswith(".npz") for n in os.listdir(out / "chunks"))

    assert wait_until(a_chunk_written, proc), "the ensemble ended (or hung) before writing a chunk"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=PATIENCE)
    if proc.returncode == 0:
        pytest.skip("the ensemble finished before the signal arrived")
    assert proc.returncode == 130 and "Traceback" not in err
    m = re.search(r"interrupted; (\d+) of 10 chunks are kept in (\S+); run the same command with --resume", err)
    assert m and 1 <= int(m.group(1)) < 10 and m.group(2) == str(out / "chunks")
    kept = sorted(os.listdir(out / "chunks"))
    assert "manifest.json" in kept and not (out / "summaries.npz").exists()
    assert not [n for n in kept if n.endswith(".tmp")]
    # another seed is not this ensemble
    r = subprocess.run([sys.executable, "-m", "granular", "ensemble", *args[:-3], "8", "--out", str(out), "--resume"],
                       capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 2 and "seed: 7 in the interrupted ensemble, 8 in this command" in r.stderr
    r = subprocess.run([sys.executable, "-m", "granular", "ensemble", *args, "--resume", "--quiet"],
                       capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    ref = ens.run_ensemble(TOP, 40, ["omega[2]=normal(77.8,0.1)"], seed=7, chunk_size=4, steps=150)
    got = table(out / "summaries.npz")
    for k in ref:
        assert np.array_equal(ref[k], got[k], equal_nan=True), k
    assert not (out / "chunks").exists()


def _doc_snippet():
    text = open(os.path.join(ROOT, "docs", "ensemble.md")).read()
    return re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)


def test_documented_heavy_top_example_samples_steady_precession(tmp_path):
    """The docs' snippet makes one spatial omega per top with the spin of (118); run at
    dt = 1e-3 the centre of mass of each stays at its height l cos(theta0) = 0.0375,
    while the README's former omega[2] = normal(135.6, 1) falls by a centimetre."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(_doc_snippet().replace("100000)", "16)"), {})
    finally:
        os.chdir(cwd)
    rows = np.load(tmp_path / "tops.npy")
    assert rows.shape == (16, 3)
    # the scene's own top is one of this family: omega_p = 10 gives its omega
    from granular.run.scene import load_scene

    scene = load_scene(TOP)
    wp = rows[:, 2] - rows[:, 1] / -np.tan(np.pi / 3)  # omega_z = wp + ws cos, omega_y = -ws sin
    assert np.all(np.abs(wp - 10.0) < 2.0)
    fine = tmp_path / "top_fine.toml"
    fine.write_text(open(TOP).read().replace("dt = 0.01", "dt = 0.001"))
    steady = ens.run_ensemble(str(fine), 16, {"omega": f"file({tmp_path / 'tops.npy'})"}, seed=3, time=0.5)
    assert np.abs(steady["z"] - 0.0375).max() < 3e-4
    old = ens.run_ensemble(str(fine), 16, {"omega[2]": "normal(135.6,1.0)"}, seed=3, time=0.5)
    assert np.abs(old["z"] - 0.0375).max() > 1e-2
    assert scene.bodies["omega"][2] == pytest.approx(77.8)


def test_readme_and_docs_commands_vary_fields_the_scenes_accept():
    texts = open(os.path.join(ROOT, "README.md")).read() + open(os.path.join(ROOT, "docs", "ensemble.md")).read()
    found = re.findall(r"granular ensemble (scenes/\S+\.toml)[^`]*?--vary\s+\"?([^\"\s]+)\"?", texts.replace("\\\n", " "))
    assert len(found) >= 4
    for scene, vary in found:
        field, dist = vary.split("=", 1)
        if dist.startswith("file("):
            continue  # checked above
        ens.make_any_spec(os.path.join(ROOT, scene), 2, [vary], 0, steps=1)


def test_progress_lines_count_steps_and_chunks_and_are_throttled():
    import io

    from granular.ensemble import Progress

    now = [0.0]
    out = io.StringIO()
    p = Progress(100, 1000, 4, stream=out, first=2.0, every=10.0, clock=lambda: now[0])
    p.start([(0, 25)])  # a resumed chunk: counted as done, not in the rate
    step = p.stepper(25, 50)
    step(0)
    assert out.getvalue() == ""  # nothing before `first` seconds
    now[0] = 2.5
    step(400)  # 25 bodies x 400 steps of this chunk
    line = out.getvalue().strip()
    assert "35 % (35,000 of 100,000 body-steps; 1 of 4 chunks done)" in line, line
    assert "4,000 body-steps/s" in line and "about 16 s left" in line, line
    now[0] = 5.0
    step(800)
    assert out.getvalue().count("\n") == 1  # at most one line every `every` seconds
    now[0] = 13.0
    p.finished(25, 50, None)
    assert out.getvalue().count("\n") == 2 and "2 of 4 chunks done" in out.getvalue().splitlines()[-1]
    silent = Progress(100, 1000, 4, stream=None, clock=lambda: now[0])
    silent.start([])
    now[0] = 100.0
    silent.stepper(0, 25)(10)  # no stream: nothing to print, no error


def test_progress_as_json_lines(capsys):
    from granular.ensemble import Progress

    now = [0.0]
    p = Progress(100, 1000, 4, stream=None, first=2.0, every=10.0, clock=lambda: now[0], log_json=True)
    p.start([(0, 25)])
    now[0] = 2.5
    p.stepper(25, 50)(400)
    (line,) = capsys.readouterr().out.splitlines()
    e = json.loads(line)
    assert e == {"event": "progress", "unit": "body-steps", "done": 35000, "total": 100000, "chunks_done": 1,
                 "chunks": 4, "rate": 4000.0, "eta_s": 16.25}  # fmt: skip


def test_ensemble_log_json_prints_start_and_end_events_only_on_stdout(tmp_path, capsys):
    from granular.ensemble import main as ensemble_main

    out = tmp_path / "ens"
    rc = ensemble_main([os.path.join(ROOT, "scenes", "livens_heavy_top.toml"), "--n", "6", "--chunk", "3",
                        "--vary", "omega[2]=normal(135.6,1.0)", "--steps", "4", "--out", str(out), "--quiet",
                        "--log-json"])  # fmt: skip
    assert rc == 0
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines()]
    assert [e["event"] for e in events if e["event"] != "progress"] == ["start", "end"], events
    start, end = events[0], events[-1]
    assert start["n"] == 6 and start["chunks"] == 2 and start["chunks_done"] == 0 and start["kind"] == "bodies"
    assert end["n"] == 6 and end["steps"] == 4 and end["out"] == str(out) and end["wall_time_s"] > 0
    assert captured.err == ""
    rc = ensemble_main([os.path.join(ROOT, "scenes", "livens_heavy_top.toml"), "--n", "6", "--chunk", "3", "--vary",
                        "omega[2]=normal(135.6,1.0)", "--steps", "4", "--out", str(out), "--resume", "--quiet",
                        "--log-json"])  # fmt: skip
    assert rc == 0
    (line,) = capsys.readouterr().out.splitlines()  # finished already: only the end event
    assert json.loads(line) == {"event": "end", "out": str(out), "n": 6, "nothing_to_do": True}
