"""Output folders that lose nothing (issue 15, items 2, 3 and 9): an earlier run is not
replaced without --overwrite, an unusable --out is refused before any computing, a
refused resume leaves nothing behind and says why."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from test_stability import TORUS, scene_with

from granular import cli, resources
from granular.io import load_checkpoint
from granular.run.folder import scene_differences
from patience import PATIENCE


def run(*args):
    return cli.main(["run", *map(str, args)])


def test_an_earlier_run_is_kept_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(TORUS, "--out", out, "--steps", "6", "--quiet") == 0
    before = (out / "run.json").read_text()
    ckpt_before = load_checkpoint(str(out / "checkpoints" / "checkpoint.npz"))[1]
    assert run(TORUS, "--out", out, "--steps", "3", "--quiet") == 2
    err = capsys.readouterr().err
    assert "holds a finished run (6 steps to t = 0.003)" in err and "--overwrite" in err and "--resume" in err
    assert (out / "run.json").read_text() == before  # untouched
    assert load_checkpoint(str(out / "checkpoints" / "checkpoint.npz"))[1] == ckpt_before
    assert run(TORUS, "--out", out, "--steps", "3", "--quiet", "--overwrite") == 0
    assert json.loads((out / "run.json").read_text())["steps"] == 3
    # --resume continues it instead
    assert run(TORUS, "--resume", out / "checkpoints" / "checkpoint.npz", "--steps", "5", "--quiet") == 0
    assert json.loads((out / "run.json").read_text())["steps"] == 5


def test_a_partial_run_is_refused_with_the_resume_hint(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(TORUS, "--out", out, "--steps", "4", "--quiet") == 0
    (out / "run.json").unlink()  # as after a SIGKILL before the end
    assert run(TORUS, "--out", out, "--steps", "4", "--quiet") == 2
    err = capsys.readouterr().err
    assert "holds a partial run" in err and f"--resume {out}/checkpoints/checkpoint.npz" in err
    assert (out / "series.csv").exists()


def test_refused_overwrite_deletes_nothing(tmp_path, capsys):
    """--overwrite with a scene refused at setup (step above the estimate) keeps the old run."""
    out = tmp_path / "o"
    assert run(TORUS, "--out", out, "--steps", "4", "--quiet") == 0
    bad = scene_with(tmp_path, dt="0.05")
    assert run(bad, "--out", out, "--overwrite", "--quiet") == 2
    assert "stable-step estimate" in capsys.readouterr().err
    assert json.loads((out / "run.json").read_text())["steps"] == 4


def test_out_that_is_a_file_or_under_a_file(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("x")
    for out in (f, f / "run"):
        assert run(TORUS, "--out", out, "--steps", "2") == 2
        err = capsys.readouterr().err
        assert "is a file, not a directory" in err and "Traceback" not in err
    assert f.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_read_only_out_is_refused_before_computing(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert run(TORUS, "--out", ro / "o", "--steps", "2") == 2
        assert "not writable" in capsys.readouterr().err
    finally:
        ro.chmod(0o755)


def test_unwritable_out_is_refused_without_traceback(tmp_path, monkeypatch, capsys):
    """A file system that refuses writes (read-only mount, permissions): exit 2 from the
    write probe, before the model is built."""
    real_open = os.open

    def refusing(path, flags, *a, **k):
        if ".granular-write-test" in str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(resources.os, "open", refusing)
    assert run(TORUS, "--out", tmp_path / "o", "--steps", "2") == 2
    err = capsys.readouterr().err
    assert "not writable (it would be created in" in err and "Permission denied" in err
    assert not (tmp_path / "o").exists()


def test_full_disk_is_refused_before_computing(tmp_path, monkeypatch, capsys):
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda p: usage._replace(free=10_000))
    assert run(TORUS, "--out", tmp_path / "o", "--steps", "2") == 2
    err = capsys.readouterr().err
    assert "of disk; 1e-05 GB are free" in err and "run.output_every" in err
    assert not (tmp_path / "o").exists()


def test_subprocess_unwritable_out_exit_2_no_traceback(tmp_path):
    (tmp_path / "file").write_text("x")
    r = subprocess.run([sys.executable, "-m", "granular", "run", TORUS, "--out", str(tmp_path / "file" / "o"),
                        "--steps", "2"], capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and "is a file, not a directory" in r.stderr


# ------------------------------------------------------------------ item 9: resume


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 0.01-long torus run (20 steps, checkpoint at the end)."""
    out = tmp_path_factory.mktemp("fin") / "o"
    assert run(TORUS, "--out", out, "--time", "0.01", "--quiet") == 0
    return out


def test_resume_with_an_earlier_time_is_an_error(finished, capsys):
    before = sorted(os.listdir(finished))
    assert run(TORUS, "--resume", finished / "checkpoints" / "checkpoint.npz", "--time", "0.005") == 2
    err = capsys.readouterr().err
    assert "the checkpoint is at step 20 (t = 0.01); the requested end, step 10 (t = 0.005), is before it" in err
    assert sorted(os.listdir(finished)) == before
    # the same end: nothing to do, exit 0
    assert run(TORUS, "--resume", finished / "checkpoints" / "checkpoint.npz", "--time", "0.01") == 0
    assert "already at step 20" in capsys.readouterr().err


def test_refused_resume_leaves_nothing_behind(finished, tmp_path, capsys):
    elsewhere = tmp_path / "new"
    assert run(TORUS, "--resume", finished / "checkpoints" / "checkpoint.npz", "--out", elsewhere, "--time", "0.02") == 2
    err = capsys.readouterr().err
    assert "holds no run to continue (no frames.pvd or series.csv)" in err
    assert not elsewhere.exists()
    # a missing checkpoint: no empty checkpoints/ left behind
    assert run(TORUS, "--resume", tmp_path / "gone" / "checkpoints" / "checkpoint.npz") == 2
    assert "no such file" in capsys.readouterr().err and not (tmp_path / "gone").exists()


def test_different_scene_says_what_differs(finished, tmp_path, capsys):
    other = scene_with(tmp_path, dt="0.001", series_every="0.02")
    assert run(other, "--resume", finished / "checkpoints" / "checkpoint.npz") == 2
    err = capsys.readouterr().err
    assert "written for a different scene: run.dt: 0.0005 in the checkpoint, 0.001 in the scene" in err
    assert "run.series_every: 0.01 in the checkpoint, 0.02 in the scene" in err


def test_scene_differences():
    a = {"run": {"dt": 1.0, "steps": 3}, "walls": [{"k": 1.0}], "name": "a"}
    b = {"run": {"dt": 2.0}, "walls": [{"k": 1.0}, {"k": 2.0}], "name": "a", "extra": True}
    assert scene_differences(a, b) == ["run.dt: 1.0 in the checkpoint, 2.0 in the scene",
                                       "run.steps: 3 in the checkpoint, absent in the scene",
                                       'walls: [{"k": 1.0}] in the checkpoint, [{"k": 1.0}, {"k": 2.0}] in the scene',
                                       "extra: absent in the checkpoint, true in the scene"]  # fmt: skip
    assert scene_differences(a, a) == []


def test_body_scene_output_folder_and_resume(tmp_path, capsys):
    scene = os.path.join(os.path.dirname(TORUS), "livens_free_body.toml")
    out = tmp_path / "o"
    assert run(scene, "--out", out, "--steps", "4", "--quiet") == 0
    assert run(scene, "--out", out, "--steps", "4", "--quiet") == 2
    assert "holds a finished run (4 steps" in capsys.readouterr().err
    ckpt = out / "checkpoints" / "checkpoint.npz"
    assert run(scene, "--resume", ckpt, "--steps", "2") == 2
    assert "the checkpoint is at step 4 (t = 0.2); the requested end, step 2 (t = 0.1), is before it" in capsys.readouterr().err
    assert run(scene, "--resume", ckpt, "--steps", "6", "--quiet") == 0
    assert json.loads((out / "run.json").read_text())["steps"] == 6
    assert run(scene, "--out", out, "--steps", "3", "--quiet", "--overwrite") == 0
    assert json.loads((out / "run.json").read_text())["steps"] == 3


@pytest.mark.parametrize("scene", ["drum.toml", "agglomerate_impact.toml"])
def test_a_run_with_meshes_or_fragments_is_replaced_with_overwrite(scene, tmp_path):
    """Every file a run writes is the run's: its meshes (``meshes.pvd``, ``meshes/``) and
    its ``fragments.csv`` too, so ``--overwrite`` replaces it."""
    src = os.path.join(os.path.dirname(__file__), "..", "scenes", scene)
    out = tmp_path / "o"
    assert run(src, "--out", out, "--steps", "4", "--quiet") == 0
    written = set(os.listdir(out))
    assert written & {"meshes.pvd", "fragments.csv"}
    assert run(src, "--out", out, "--steps", "3", "--quiet", "--overwrite") == 0
    assert json.loads((out / "run.json").read_text())["steps"] == 3
