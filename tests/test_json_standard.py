"""Every JSON file and JSON line granular writes is standard JSON (issue 30, item 6):
strict parsers (JavaScript's ``JSON.parse``, ``jq``) refuse Python's bare ``NaN`` and
``Infinity``, so non-finite numbers are written as the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"`` (docs/scenes.md, "Output directory"), and granular's own readers (resume,
the ensemble store, checkpoints) read back what was written."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

from granular import cli
from granular.ensemble.store import MANIFEST, ChunkStore
from granular.io import load_checkpoint, save_checkpoint
from granular.io.checkpoint import META_KEY
from granular.io.jsonio import dumps, loads

ROOT = Path(__file__).resolve().parents[1]
TORUS = str(ROOT / "scenes" / "torus_impact.toml")  # its binder family has no strain limit: strain_max = inf


def strict(text: str, where: str = "JSON"):
    """``text`` parsed as a strict parser does: NaN, Infinity and -Infinity refused."""

    def refuse(word):
        raise ValueError(f"{where}: {word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def json_texts(folder: Path) -> dict:
    """``{path: text}`` of every JSON document granular wrote under ``folder``: the
    ``*.json`` files and the metadata of the ``*.npz`` checkpoints."""
    found = {str(p): p.read_text() for p in sorted(folder.rglob("*.json"))}
    for p in sorted(folder.rglob("checkpoints/*.npz")):
        with np.load(p) as z:
            found[f"{p} ({META_KEY})"] = str(z[META_KEY][()])
    return found


def test_what_the_commands_write_is_standard_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # a run (its run.json, checkpoint and --log-json lines)
    assert cli.main(["run", TORUS, "--out", "run", "--time", "0.05", "--quiet", "--log-json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and [strict(line, "--log-json")["event"] for line in lines][-1] == "end"
    # an ensemble of particle-scene replicas (ensemble.json records the scene)
    ensemble = [TORUS, "--n", "2", "--vary", "particles[0].velocity[0]=uniform(-2,-0.5)", "--steps", "5", "--out",
                "ensemble", "--quiet"]  # fmt: skip
    assert cli.main(["ensemble", *ensemble]) == 0
    # a validation report, in the file and on stdout
    assert cli.main(["validate", "pendulum", "--quick", "--json", "--out", "validate"]) == 0
    strict(capsys.readouterr().out, "validate --json")
    # a benchmark (the torus workload also reads a run's run.json)
    os.mkdir("bench")
    assert cli.main(["bench", "--backend", "cpu", "--workload", "torus", "--min-time", "0.05",
                     "--json", "bench/rows.json"]) == 0  # fmt: skip
    capsys.readouterr()
    assert cli.main(["info", "--json"]) == 0
    strict(capsys.readouterr().out, "info --json")

    texts = json_texts(tmp_path)
    names = {os.path.relpath(p.split(" (")[0], tmp_path) for p in texts}
    assert {"run/run.json", "run/checkpoints/checkpoint.npz", "ensemble/ensemble.json", "validate/pendulum.json",
            "bench/rows.json"} <= names, names  # fmt: skip
    for path, text in texts.items():
        strict(text, path)

    # the infinite strain limit, written as the documented string, reads back infinite
    run = strict((tmp_path / "run" / "run.json").read_text())
    assert run["scene"]["bond_families"]["binder"]["strain_max"] == "Infinity"
    back = loads((tmp_path / "run" / "run.json").read_text())
    assert back["scene"]["bond_families"]["binder"]["strain_max"] == math.inf
    _, meta = load_checkpoint(tmp_path / "run" / "checkpoints" / "checkpoint.npz")
    assert meta["scene"]["bond_families"]["binder"]["strain_max"] == math.inf
    record = strict((tmp_path / "ensemble" / "ensemble.json").read_text())
    assert record["manifest"]["scene"]["bond_families"]["binder"]["angle_max"] == "Infinity"
    # and a resume compares the scene it reads back with the scene file: the same
    assert cli.main(["run", TORUS, "--resume", "run/checkpoints/checkpoint.npz", "--time", "0.1", "--quiet"]) == 0
    assert strict((tmp_path / "run" / "run.json").read_text())["steps"] == 200
    assert cli.main(["ensemble", *ensemble, "--resume"]) == 0  # finished: its manifest read back, the same


def test_the_ensemble_store_reads_back_its_manifest(tmp_path):
    manifest = {"scene": {"bond_families": {"b": {"strain_max": math.inf, "angle_max": -math.inf}}, "x": math.nan},
                "n": 4, "vary": ["a=uniform(0,1)"], "dt": np.float64(1e-3), "steps": np.int64(5)}  # fmt: skip
    ChunkStore.create(tmp_path, manifest)
    text = (tmp_path / "chunks" / MANIFEST).read_text()
    assert strict(text)["scene"]["bond_families"]["b"] == {"strain_max": "Infinity", "angle_max": "-Infinity"}
    ChunkStore.reopen(tmp_path, manifest)  # the same ensemble (NaN included: it equals itself as stored)
    with pytest.raises(ValueError, match=r"scene.bond_families.b.strain_max: \"Infinity\" in the interrupted "
                                         r"ensemble, 2.0 in this command"):  # fmt: skip
        ChunkStore.reopen(tmp_path, {**manifest, "scene": {"bond_families": {"b": {"strain_max": 2.0,
                                                                                   "angle_max": -math.inf}},
                                                           "x": math.nan}})  # fmt: skip


def test_checkpoint_metadata_is_standard_json_and_reads_back(tmp_path):
    meta = {"inf": math.inf, "ninf": -math.inf, "nan": math.nan, "nested": [1.5, {"x": np.float32(np.inf)}],
            "n": np.int64(3), "flag": np.bool_(True)}  # fmt: skip
    save_checkpoint(tmp_path / "c.npz", {"x": np.zeros(2)}, meta)
    with np.load(tmp_path / "c.npz") as z:
        stored = strict(str(z[META_KEY][()]))
    assert stored["inf"] == "Infinity" and stored["ninf"] == "-Infinity" and stored["nan"] == "NaN"
    _, back = load_checkpoint(tmp_path / "c.npz")
    assert back["inf"] == math.inf and back["ninf"] == -math.inf and math.isnan(back["nan"])
    assert back["nested"] == [1.5, {"x": math.inf}] and back["n"] == 3 and back["flag"] is True


def test_a_value_that_escapes_the_conversion_raises():
    class Odd:
        pass

    with pytest.raises(TypeError):
        dumps({"x": Odd()})
    assert strict(dumps({"x": Odd()}, default=lambda o: "odd")) == {"x": "odd"}
    # files of earlier versions (bare Infinity) still read
    assert loads('{"strain_max": Infinity, "e": NaN}')["strain_max"] == math.inf
