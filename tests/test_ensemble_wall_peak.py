"""The peak wall force of an ensemble of particle scenes is a maximum over every step, not
over the diagnostics samples (issue 30, item 7): ``wall_contact_force_max`` is the running
maximum the force pass keeps per particle on the device (``State.wall_contact_peak``),
reduced per replica; ``wall_force_sampled_max`` is the old sampled column, named for
what it is."""

import tomllib

import numpy as np
import pytest
from scene_texts import drop_scene

import granular as gr
from granular import ensemble as ens
from granular.ensemble.particles import make_particle_spec, replica_scene
from granular.particles.system import restore_state, state_arrays
from granular.run.scene import build_model, parse_scene

# Spheres thrown at a floor from just above it: each touches it once, for about 160
# steps (Hertz, t_c ~ 0.032 at |v| ~ 1) between steps ~80 and ~300, and flies off; no
# gravity, so the force on the sphere is its wall force alone. The diagnostics are
# sampled every 400 steps (series_every = 0.08 at dt = 2e-4): at steps 0 and 400 only,
# both out of contact.
DROP = drop_scene('dt = 2e-4\nsteps = 400\nseries_every = 0.08\nbackend = "cpu"', name="near_drop")
VARY = ["particles[0].velocity[2]=uniform(-1.2,-0.8)", "particles[0].velocity[0]=uniform(-0.3,0.3)"]
N = 10
STEPS = 400


def _scene():
    return parse_scene(tomllib.loads(DROP))


def _step_by_step_peak(scene, steps):
    """The largest |F| over a step-by-step run of ``scene`` alone (its one sphere's force
    is the wall's: no gravity, no other particle), and the run's final state."""
    model, run = build_model(scene, "cpu")
    state = model.state()
    integ = gr.ExplicitIntegrator(run.integrator)
    integ.prepare(model, state)
    peak = 0.0
    for _ in range(steps + 1):
        f = np.asarray(state.F, dtype=np.float64)[0]
        peak = max(peak, float(np.sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2])))
        if state.step < steps:
            integ.advance(model, state, run.dt, 1)
    return peak, model, state


@pytest.fixture(scope="module")
def cpu_table():
    return ens.run_ensemble(_scene(), N, VARY, seed=4, chunk_size=N, backend="cpu")


def test_the_peak_wall_force_is_the_maximum_over_every_step(cpu_table):
    table = cpu_table
    spec = make_particle_spec(_scene(), N, VARY, 4)
    assert spec.sample_every == STEPS  # the samples miss every contact
    peak = table["wall_contact_force_max"]
    assert (peak > 0).all(), peak  # every sphere hit the floor
    assert (table["wall_force_sampled_max"] == 0).all()  # what the samples saw
    assert (table["v_cm_z"] > 0).all()  # every sphere bounced
    for i in range(N):
        ref, _, _ = _step_by_step_peak(replica_scene(spec, i), STEPS)
        assert peak[i] == pytest.approx(ref, rel=1e-14, abs=0.0), i


def test_the_peak_is_part_of_the_state(cpu_table):
    # kept per particle; copies, checkpoints and blocks of any length carry it
    spec = make_particle_spec(_scene(), N, VARY, 4)
    ref, model, state = _step_by_step_peak(replica_scene(spec, 2), STEPS)
    assert float(np.asarray(state.wall_contact_peak)[0]) == ref == cpu_table["wall_contact_force_max"][2]
    copy = state.copy()
    assert np.asarray(copy.wall_contact_peak)[0] == ref and copy.wall_contact_peak is not state.wall_contact_peak
    arrays = state_arrays(model, state)
    fresh = model.state()
    restore_state(model, fresh, arrays)
    assert float(np.asarray(fresh.wall_contact_peak)[0]) == ref
    older = {k: v for k, v in arrays.items() if k != "wall_contact_peak"}  # a checkpoint from before
    restore_state(model, fresh, older)
    assert float(np.asarray(fresh.wall_contact_peak)[0]) == 0.0
    block = model.state()
    gr.ExplicitIntegrator("verlet", max_block=64).advance(model, block, spec.dt, STEPS)
    assert float(np.asarray(block.wall_contact_peak)[0]) == ref


@pytest.mark.gpu
def test_the_gpu_keeps_the_same_peak(gpu_backend, cpu_table):
    # the same kernel source: under the CUDA simulator the same bits as the CPU
    table = ens.run_ensemble(_scene(), N, VARY, seed=4, chunk_size=N, backend="gpu")
    peak = table["wall_contact_force_max"]
    assert (peak > 0).all(), peak
    assert (table["wall_force_sampled_max"] == 0).all()
    if gpu_backend.simulated:
        np.testing.assert_array_equal(peak, cpu_table["wall_contact_force_max"])
    else:  # fused multiply-adds and libdevice: the last bits differ
        np.testing.assert_allclose(peak, cpu_table["wall_contact_force_max"], rtol=1e-9)
