"""Staged runs (``[[stages]]``, :mod:`granular.run.stages`): a stage's feeds act in it
only, and a run stopped in any stage and resumed equals the run that was not stopped,
bit for bit."""

import csv

import numpy as np
import pytest

from granular import cli
from granular.errors import SceneError
from granular.io import load_checkpoint
from granular.run.scene import parse_scene
from granular.run.stages import stage_plan

SCENE = """
name = "staged"
[run]
dt = 2e-5
duration = 0.09
series_every = 0.005
output_every = 0.03
checkpoint_every = 0.01
feed_every = 0.002
backend = "cpu"

[materials.glass]
young = 1e7
poisson = 0.3
density = 2500.0
restitution = 0.5
friction = 0.5

[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.002]]
radius = 0.002
material = "glass"

[contacts]
law = "hertz-mindlin"

[[walls]]
normal = [0.0, 0.0, 1.0]
offset = 0.0
material = "glass"

[[insert]]
name = "pour"
box = [[-0.015, -0.015, 0.02], [0.015, 0.015, 0.06]]
radius = [0.0015, 0.002]
material = "glass"
rate = 2000.0
seed = 3

[[outlets]]
name = "middle"
box = [[-0.004, -0.004, -1.0], [0.004, 0.004, 0.01]]

[[stages]]
name = "fill"
duration = 0.04
outlets = []

[[stages]]
name = "drain"
duration = 0.03
insert = []

[[stages]]
name = "settle"
until = 0.09
insert = []
outlets = []
"""


def rows(out):
    with open(out / "series.csv") as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]


@pytest.fixture
def scene(tmp_path):
    path = tmp_path / "staged.toml"
    path.write_text(SCENE)
    return path


def run(*args):
    return cli.main(["run", *map(str, args), "--quiet"])


def test_each_stage_acts_with_its_own_feeds(scene, tmp_path):
    assert run(scene, "--out", tmp_path / "o") == 0
    rs = rows(tmp_path / "o")
    at = {round(r["time"], 6): r for r in rs}
    assert at[0.04]["inserted"] == 80 and at[0.04]["removed"] == 0  # filling: the outlet is closed
    assert at[0.07]["inserted"] == 80 and at[0.07]["removed"] > 0  # draining: no pouring
    assert at[0.09]["removed"] == at[0.07]["removed"]  # settling: neither
    meta = load_checkpoint(str(tmp_path / "o" / "checkpoints" / "checkpoint.npz"))[1]
    assert meta["stage"]["name"] == "settle" and meta["stage"]["start"] == pytest.approx(0.07)


@pytest.mark.parametrize("stop", [0.02, 0.05, 0.08])
def test_a_run_stopped_in_any_stage_resumes_bit_for_bit(scene, tmp_path, stop):
    assert run(scene, "--out", tmp_path / "whole") == 0
    assert run(scene, "--out", tmp_path / "part", "--time", stop) == 0
    assert run(scene, "--resume", tmp_path / "part" / "checkpoints" / "checkpoint.npz") == 0
    a, _ = load_checkpoint(str(tmp_path / "whole" / "checkpoints" / "checkpoint.npz"))
    b, _ = load_checkpoint(str(tmp_path / "part" / "checkpoints" / "checkpoint.npz"))
    for k in ("x", "v", "q", "omega", "dissipated", "wall_springs", "particle_ids", "contact_springs"):
        assert np.array_equal(a[k], b[k]), k
    assert rows(tmp_path / "whole")[-1] == rows(tmp_path / "part")[-1]


def test_bad_stages_name_the_field():
    data = __import__("tomllib").loads(SCENE)
    data["stages"][1] = {"until": 0.06, "insert": ["nope"]}
    data["stages"][2]["until"] = 0.05
    del data["stages"][0]["duration"]
    with pytest.raises(SceneError) as info:
        stage_plan(parse_scene(data), "bad.toml")
    text = str(info.value)
    assert "stages[0]: give its length" in text
    assert "stages[1].insert: no [[insert]] table named 'nope'" in text
    assert "stages[2].until: 0.05 is not after" in text
