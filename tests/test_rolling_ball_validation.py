"""``granular validate rollingball``: the quick study from the command line (exit code,
JSON, plot) and, marked long, the full study."""

import json

import pytest

from granular.cli import main
from granular.validation import rollingball as study


def test_validate_rollingball_quick_cli(tmp_path, capsys):
    rc = main(["validate", "rollingball", "--quick", "--json", "--out", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    assert rc == 0 and report["passed"], failed
    names = " ".join(c["name"] for c in report["checks"])
    for key in ("masses at rest", "moving masses", "planar", "Newton-Euler", "batched vs alone", "no slip"):
        assert key in names
    assert (tmp_path / "rollingball.json").is_file()
    assert (tmp_path / "rollingball.png").stat().st_size > 20_000


@pytest.mark.long
def test_full_rollingball_study_passes():
    report = study.run(quick=False)
    assert report.passed, report.text()
    assert 3.7 < report.data["rest"]["order"] < 4.3
