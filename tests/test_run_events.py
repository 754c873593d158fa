"""Job-script output and long runs (issue 15, items 7 and 12): ``--quiet --log-json``
prints the JSON events, the final checkpoint is an event; the ETA does not wrap after
24 h; a run of 1e15 steps asks (or is refused) before it starts."""

import io
import json
import os
import subprocess
import sys

import pytest
from test_stability import TORUS

from granular import cli
from granular.run.progress import LONG_RUN_STEPS, Progress, format_duration
from patience import PATIENCE


def test_quiet_log_json_prints_events_and_the_final_checkpoint(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["run", TORUS, "--out", str(out), "--steps", "40", "--quiet", "--log-json"]) == 0
    captured = capsys.readouterr()
    events = [json.loads(line) for line in captured.out.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "end" and "frame" in kinds
    final = [e for e in events if e["event"] == "checkpoint" and e.get("final")]
    assert len(final) == 1 and final[0]["step"] == 40
    assert final[0]["path"] == os.path.join(str(out), "checkpoints", "checkpoint.npz")
    assert kinds.index("checkpoint") < kinds.index("end")
    assert captured.err == ""  # quiet: no start line, no bar, no summary


def test_body_scene_quiet_log_json(tmp_path, capsys):
    scene = os.path.join(os.path.dirname(TORUS), "livens_free_body.toml")
    assert cli.main(["run", scene, "--out", str(tmp_path / "o"), "--steps", "3", "--quiet", "--log-json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"
    assert any(e["event"] == "checkpoint" and e.get("final") for e in events)


@pytest.mark.parametrize("seconds,text", [(59, "00:00:59"), (86399, "23:59:59"), (86400, "1 d 00:00:00"),
                                          (90061, "1 d 01:01:01"), (3.2e9, "101 years"),
                                          (float("inf"), "--:--:--")])  # fmt: skip
def test_eta_does_not_wrap_after_a_day(seconds, text):
    assert format_duration(seconds) == text


def test_progress_line_shows_days(monkeypatch):
    stream = io.StringIO()
    p = Progress(10**9, stream=stream, min_seconds=0.0)
    clock = iter([0.0, 1.0, 2.0])
    monkeypatch.setattr("granular.run.progress.time.perf_counter", lambda: next(clock))
    p.start = p.last = -1.0
    p.update(0, 0.0, 0)  # marks the rate's start
    p.update(1000, 1.0, 0)  # 1000 steps/s: 999 999 s left
    assert "ETA 11 d 13:46:39" in stream.getvalue()  # (1e9 - 1000) / 1000 s; it wrapped to 13:46:39 before


def test_a_run_of_1e15_steps_is_refused_without_a_word_of_consent(tmp_path):
    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "granular", "run", TORUS, "--out", str(out), "--time", "5e11"],
                       capture_output=True, text=True, timeout=PATIENCE, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "the run asks for 1e+15 steps (t = 5e+11 at dt = 0.0005)" in r.stderr
    assert "317 years" in r.stderr and "--allow-long-run" in r.stderr
    assert not out.exists()


def test_long_run_asks_at_a_terminal(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    steps = str(LONG_RUN_STEPS + 1)
    assert cli.main(["run", TORUS, "--out", str(tmp_path / "o"), "--steps", steps]) == 2
    err = capsys.readouterr().err
    assert "that takes 02:46:40" in err and err.count("the run asks for 1e+09 steps") == 2  # the question, the refusal
    assert not (tmp_path / "o").exists()
    # past the step counter: refused even with --allow-long-run
    assert cli.main(["run", TORUS, "--out", str(tmp_path / "o"), "--steps", str(2**63), "--allow-long-run"]) == 2
    assert "the step counter holds at most" in capsys.readouterr().err
