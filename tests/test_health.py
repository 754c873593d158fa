"""Health checks that keep a good state (issue 15, item 1): a run forced beyond its stable
step stops within a few steps with exit 1, and its checkpoint holds the last state that
passed the check, never the exploded one."""

import json
import math
import os

import numpy as np
import pytest
from test_stability import scene_with

from granular import cli
from granular.io import load_checkpoint, read_series
from granular.particles import diagnostics as diag
from granular.particles.health import HealthCheck, Snapshot
from granular.particles.builder import ModelBuilder
from granular.particles.system import STATE_ARRAYS, restore_state, series_row
from granular.run.scene import build_model, load_scene


def checkpoint_energy(scene_path, out):
    """Total energy of the state in ``out``'s checkpoint, recomputed from the scene."""
    arrays, meta = load_checkpoint(os.path.join(out, "checkpoints", "checkpoint.npz"))
    model, _ = build_model(load_scene(scene_path), backend="cpu")
    state = model.state()
    restore_state(model, state, arrays)
    return diag.total_energy(model, state), meta, state


@pytest.mark.parametrize("drop,forced", [(None, "scene"), ("contacts", "scene"), (None, "flag")],
                         ids=["contacts", "no-contacts", "command-line-flag"])  # fmt: skip
def test_forced_unstable_torus_stops_and_keeps_a_good_checkpoint(tmp_path, capsys, drop, forced):
    if forced == "scene":
        scene, flag = scene_with(tmp_path, drop=drop, dt="0.05", allow_unstable_step="true"), []
    else:
        scene, flag = scene_with(tmp_path, drop=drop, dt="0.05"), ["--allow-unstable-step"]
    out = tmp_path / "o"
    assert cli.main(["run", scene, "--out", str(out), "--quiet", *flag]) == 1
    err = capsys.readouterr().err
    assert "health check failed at step 3 (t = 0.15): the total energy is 1.56e+05" in err.replace("156386", "1.56e+05")
    assert "the last good state (step 2" in err and "checkpoint.npz" in err and "Traceback" not in err
    info = json.loads((out / "run.json").read_text())
    assert info["steps"] == 2 and not info["finished"] and "health check failed" in info["error"]
    energy, meta, state = checkpoint_energy(scene, str(out))
    e0 = info["health"]["energy0"]
    assert e0 == 40.0 and meta["step"] == 2
    assert abs(energy - e0) <= info["health"]["energy_tolerance"] * info["health"]["scale"]
    assert np.abs(state.v).max() < 10 and np.abs(state.x).max() < 10  # not |x| = 6e7, |v| = 2e11
    series = read_series(str(out / "series.csv"))
    assert list(series["step"]) == [0, 1, 2]  # only states that passed are written
    assert np.all(np.abs(series["total"] - 40.0) < 1e-6)


def test_sparse_outputs_failed_step_falls_back_to_the_last_checked_state(tmp_path, capsys):
    """Outputs every 2 time units at dt = 0.05: the blow-up ends in a non-finite state or
    the neighbour search before the next check; the checkpoint is the last checked state
    (here the start), not the state before the failed step."""
    scene = scene_with(tmp_path, dt="0.05", allow_unstable_step="true", output_every="2.0", series_every="2.0",
                       checkpoint_every="2.0")  # fmt: skip
    out = tmp_path / "o"
    assert cli.main(["run", scene, "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "the last good state (step 0" in err
    energy, meta, state = checkpoint_energy(scene, str(out))
    assert meta["step"] == 0 and energy == 40.0 and np.isfinite(state.x).all()


def test_health_check_units():
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 100.0], [3.0, 0.0, 100.0]], v=[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], mass=[1.0, 2.0])
    b.set_gravity([0.0, 0.0, -1.0])
    model = b.finalize("cpu")
    state = model.state()
    row = series_row(model, state)
    check = HealthCheck(model, 0.01, row, tolerance=0.1)
    # the energy scale is kinetic energy plus potentials, gravity by its change: not 300
    assert check.scale == pytest.approx(0.5) and check.energy0 == pytest.approx(0.5 + 300.0)
    assert check.problem(row, state) is None
    # a fall converts potential into kinetic energy: fine
    state.x[:, 2] -= 10.0
    state.v[0, 2] = -math.sqrt(2 * 10.0)
    state.v[1, 2] = -math.sqrt(2 * 10.0)
    assert check.problem(series_row(model, state), state) is None
    # energy from nowhere
    state.v[1, 2] = -math.sqrt(2 * 10.0) * 1.5
    assert "the total energy is" in check.problem(series_row(model, state), state)
    state.v[1, 2] = -math.sqrt(2 * 10.0)
    # NaN fails
    bad = dict(series_row(model, state), total=float("nan"))
    assert "the total energy is nan" in check.problem(bad, state)
    # released bond energy counts: total + U_released is what is conserved
    row = series_row(model, state)
    assert check.problem(dict(row, total=row["total"] - 10.0, U_released=10.0), state) is None
    assert check.problem(dict(row, total=row["total"] - 10.0), state) is not None
    # rotation increment h |Omega|
    state.omega[0, 0] = 60.0
    text = check.problem(series_row(model, state) | {"total": row["total"], "kinetic_rotational": 0.0}, state)
    assert text is not None and "turns by h|Ω| = 0.6 rad" in text


def test_speed_bound_and_snapshot_round_trip():
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0]], v=[[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    model = b.finalize("cpu")
    state = model.state()
    row = series_row(model, state)
    check = HealthCheck(model, 0.01, row)
    snap = Snapshot(state, STATE_ARRAYS)
    state.v[1, 0] = 50.0  # 10 sqrt(2 * 0.5 / 1) = 10 is the bound; the row is left alone
    assert "particle 1 moves at 50" in check.problem(row, state)
    state.step, state.time = 7, 0.07
    snap.restore(state)
    assert state.v[1, 0] == 0.0 and state.step == 0 and state.time == 0.0


def test_resumed_run_checks_against_the_original_start(tmp_path, capsys):
    scene = scene_with(tmp_path, checkpoint_every="0.05")
    out = tmp_path / "o"
    assert cli.main(["run", scene, "--out", str(out), "--steps", "200", "--quiet"]) == 0
    _, meta = load_checkpoint(str(out / "checkpoints" / "checkpoint.npz"))
    assert meta["health"]["energy0"] == 40.0
    assert cli.main(["run", scene, "--resume", str(out / "checkpoints" / "checkpoint.npz"), "--steps", "240",
                     "--quiet"]) == 0  # fmt: skip
    info = json.loads((out / "run.json").read_text())
    assert info["health"]["energy0"] == 40.0 and info["first_step"] == 200 and info["steps"] == 240
