"""A run stopped by Ctrl-C (issue 30, item 3) says so: at which step and time it
stopped, and the ``granular run`` command that continues it, which does."""

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest
from patience import PATIENCE, wait_until

from granular.io import load_checkpoint

ROOT = os.path.join(os.path.dirname(__file__), "..")
TORUS = os.path.join(ROOT, "scenes", "torus_impact.toml")


def _scene(tmp_path, **run):
    """The torus scene with some [run] entries replaced."""
    with open(TORUS) as fh:
        lines = fh.read().splitlines()
    lines = [f"{ln.split('=')[0].strip()} = {run[ln.split('=')[0].strip()]}" if ln.split("=")[0].strip() in run
             else ln for ln in lines]  # fmt: skip
    path = tmp_path / "torus.toml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_an_interrupted_run_says_where_it_stopped_and_the_command_that_continues_it(tmp_path):
    scene = _scene(tmp_path, checkpoint_every="0.5", output_every="0.5", series_every="0.05")
    out = tmp_path / "run out"  # a space: the command must be quoted for the shell
    ckpt = out / "checkpoints" / "checkpoint.npz"
    proc = subprocess.Popen([sys.executable, "-m", "granular", "run", scene, "--out", str(out), "--time", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert wait_until(ckpt.exists, proc), "the run ended (or hung) before its first checkpoint"
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=PATIENCE)
    if proc.returncode == 0:
        pytest.skip("the run finished before the signal arrived")
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    # not the line of a finished run
    assert "steps to t =" not in stdout + stderr
    m = re.search(r"torus_impact: interrupted at step (\d+) of 16000 \(t = (\S+) of 8\)", stderr)
    assert m, stderr
    step = int(m.group(1))
    _, meta = load_checkpoint(ckpt)
    assert 0 < step < 16000 and meta["step"] == step  # the checkpoint is of the step named
    assert float(m.group(2)) == pytest.approx(meta["time"], rel=1e-5)
    m = re.search(r"continue the run with: (.+)", stderr)
    assert m, stderr
    argv = shlex.split(m.group(1))
    assert argv[:2] == ["granular", "run"] and argv[argv.index("--resume") + 1] == str(ckpt)
    assert argv[argv.index("--time") + 1] == "8"  # the end it was given, not the scene's duration (5)
    # the command, as printed, finishes the run
    r = subprocess.run(
        [sys.executable, "-m", "granular", *argv[1:]], capture_output=True, text=True, timeout=PATIENCE, check=False
    )
    assert r.returncode == 0, r.stderr
    assert re.search(r"torus_impact: 16000 steps to t = 8 ", r.stdout), r.stdout
    _, meta = load_checkpoint(ckpt)
    assert meta["step"] == 16000


def test_the_resume_command_repeats_what_decides_the_run():
    from granular.run.command import resume_command

    args = argparse.Namespace(scene="my scenes/a.toml", out="o", backend="cpu", precision="float32", time=0.1 + 0.2,
                              steps=None, resume=None, overwrite=True, allow_unstable_step=True, allow_long_run=False,
                              eager=True, quiet=False, log_json=False)  # fmt: skip
    cmd = resume_command(args, "o")
    assert shlex.split(cmd) == ["granular", "run", "my scenes/a.toml", "--resume", os.path.join("o", "checkpoints", "checkpoint.npz"),
                                "--backend", "cpu", "--precision", "float32", "--time", repr(0.1 + 0.2),
                                "--allow-unstable-step", "--eager"]  # fmt: skip
    args = argparse.Namespace(scene="a.toml", backend=None, precision=None, time=None, steps=300)
    assert resume_command(args, "o") == "granular run a.toml --resume o/checkpoints/checkpoint.npz --steps 300"
    args = argparse.Namespace(scene="a.toml", backend=None, precision=None, time=2.5, steps=None)
    assert resume_command(args, "o").endswith("--time 2.5")
