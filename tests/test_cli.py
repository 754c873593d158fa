"""Command line: info, validate (exit codes, JSON, files)."""

import json

from granular.cli import main
from patience import PATIENCE


def test_info_json(capsys):
    assert main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["versions"]["numpy"] and info["auto_backend"] in ("cpu", "gpu")
    assert isinstance(info["gpu_found"], bool)


def test_info_text(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GPU" in out and "'auto' ->" in out


def test_validate_pendulum_quick_json_and_files(tmp_path, capsys):
    rc = main(["validate", "pendulum", "--quick", "--json", "--out", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    assert rc == 0 and report["passed"]
    names = {c["name"] for c in report["checks"]}
    assert any("E(t)-error" in n for n in names) and any("(41b)" in n for n in names)
    assert (tmp_path / "pendulum.json").is_file()
    assert (tmp_path / "pendulum.png").stat().st_size > 10_000
    assert not list(tmp_path.glob("*.part*"))


def test_validate_unknown_study(capsys):
    assert main(["validate", "nope"]) == 2
    assert "unknown study 'nope'" in capsys.readouterr().err


def test_validate_exit_code_follows_the_checks(monkeypatch, capsys):
    from granular.validation import pendulum
    from granular.validation.report import Check, Report

    monkeypatch.setattr(pendulum, "run", lambda quick, backend: Report("pendulum", [Check("x", 3.0, None, 1.0)]))
    assert main(["validate", "pendulum"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_output_piped_into_a_closed_reader_is_not_a_traceback():
    import subprocess
    import sys

    # `true` exits without reading, long before granular has imported and prints
    r = subprocess.run(f"{sys.executable} -m granular info | true", shell=True, capture_output=True, text=True,
                       timeout=PATIENCE)  # fmt: skip
    assert "Error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
