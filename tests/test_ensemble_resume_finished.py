"""``granular ensemble --resume`` of a finished ensemble checks its arguments as the
resume of an interrupted one does (issue 30, item 10): another ``--n`` (or seed, steps,
field, scene) is refused with exit status 2 and named; the same arguments have nothing
to do (exit 0)."""

import json
import os

import pytest

import granular.ensemble as ens

ROOT = os.path.join(os.path.dirname(__file__), "..")
TOP = os.path.join(ROOT, "scenes", "livens_heavy_top.toml")
VARY = ["--vary", "omega[2]=normal(77.8,0.1)"]
ARGS = ["--n", "12", *VARY, "--chunk", "4", "--steps", "5", "--seed", "2"]


def _with(args, option, value):
    args = list(args)
    args[args.index(option) + 1] = value
    return args


@pytest.fixture
def finished(tmp_path):
    out = tmp_path / "e"
    assert ens.main([TOP, *ARGS, "--out", str(out), "--quiet"]) == 0
    assert not (out / "chunks").exists()
    return out


@pytest.mark.parametrize("option, value, named", [
    ("--n", "3", "n: 12 in the finished ensemble, 3 in this command"),
    ("--seed", "3", "seed: 2 in the finished ensemble, 3 in this command"),
    ("--steps", "6", "steps: 5 in the finished ensemble, 6 in this command"),
    ("--vary", "omega[2]=normal(77.8,0.2)", ('vary[0]: "omega[2]=normal(77.8,0.1)" in the finished ensemble, '
                                             '"omega[2]=normal(77.8,0.2)" in this command')),
])  # fmt: skip
def test_resume_of_a_finished_ensemble_with_other_arguments_is_refused(finished, option, value, named, capsys):
    before = (finished / "summaries.npz").stat().st_mtime_ns
    capsys.readouterr()
    rc = ens.main([TOP, *_with(ARGS, option, value), "--out", str(finished), "--resume"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert f"--resume: the ensemble in {finished} was run with other arguments: {named}" in err
    assert "nothing to do" not in err
    assert (finished / "summaries.npz").stat().st_mtime_ns == before


def test_resume_of_a_finished_ensemble_with_its_arguments_has_nothing_to_do(finished, capsys):
    capsys.readouterr()
    assert ens.main([TOP, *ARGS, "--out", str(finished), "--resume"]) == 0
    assert f"the ensemble in {finished} is finished; nothing to do" in capsys.readouterr().err


def test_a_scene_changed_since_is_named(finished, tmp_path, capsys):
    with open(TOP) as fh:
        text = fh.read()
    assert "\ndt = 0.01\n" in text
    scene = tmp_path / "top.toml"
    scene.write_text(text.replace("\ndt = 0.01\n", "\ndt = 0.005\n"))
    capsys.readouterr()
    assert ens.main([str(scene), *ARGS, "--out", str(finished), "--resume"]) == 2
    assert "scene.run.dt: 0.01 in the finished ensemble, 0.005 in this command" in capsys.readouterr().err


def test_a_finished_ensemble_of_an_earlier_version_is_checked_on_what_it_recorded(finished, capsys):
    record = json.loads((finished / "ensemble.json").read_text())
    del record["manifest"]  # ensemble.json before it kept the manifest
    (finished / "ensemble.json").write_text(json.dumps(record))
    assert ens.main([TOP, *ARGS, "--out", str(finished), "--resume", "--quiet"]) == 0
    capsys.readouterr()
    assert ens.main([TOP, *_with(ARGS, "--n", "3"), "--out", str(finished), "--resume"]) == 2
    assert "n: 12 in the finished ensemble, 3 in this command" in capsys.readouterr().err
    (finished / "ensemble.json").unlink()
    assert ens.main([TOP, *ARGS, "--out", str(finished), "--resume"]) == 2
    assert "the arguments it was run with are unknown" in capsys.readouterr().err
