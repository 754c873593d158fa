"""float32 storage mode: state and parameters in single precision, same physics."""

import numpy as np
import pytest

import granular as gr
from granular.particles import diagnostics as diag
from granular.run.scene import build_model, load_scene
from granular.validation import torus_setup as T


def test_float32_torus_impact_tracks_float64(backend):
    """Before contact (t = 0.1) the trajectories agree to single precision; through the
    impact (which amplifies any perturbation) the energy stays conserved."""
    before, total = (40, 80) if backend.simulated else (200, 4000)
    runs = {}
    for dt in (np.float64, np.float32):
        if backend.simulated:  # the simulator runs every thread as Python: a 16-particle ring
            b = gr.ModelBuilder()
            gr.shapes.add_torus(b, n_p=16, ring_diameter=1.0, center=(0.6, 0, 0), velocity=(-1.0, 0, 0))
            b.set_contacts(T.K_PP)
            b.add_wall([1.0, 0, 0], 0.0, k=T.K_PP)
            m = b.finalize(backend, dtype=dt)
        else:
            m = T.torus_builder().finalize(backend, dtype=dt)
        s = m.state()
        assert s.x.dtype == dt and s.q.dtype == dt and m.bonds.n0a.dtype == dt
        integ = gr.ExplicitIntegrator("verlet")
        integ.prepare(m, s)
        E0 = diag.total_energy(m, s)
        integ.run(m, s, 5e-4, before)
        x_before = m.backend.to_host(s.x).astype(np.float64)
        integ.run(m, s, 5e-4, total - before)
        runs[np.dtype(dt).name] = (x_before, abs(diag.total_energy(m, s) - E0) / E0)
    x64, e64 = runs["float64"]
    x32, e32 = runs["float32"]
    assert e32 < 2e-3 and e64 < 1e-3
    assert 0 < np.abs(x32 - x64).max() < 1e-5


def test_float32_from_scene_and_bad_dtype():
    scene = load_scene("scenes/torus_impact.toml")
    model, _ = build_model(scene, backend="cpu", precision="float32")
    assert model.state().v.dtype == np.float32
    b = gr.ModelBuilder()
    b.add_particles(np.zeros((1, 3)))
    with pytest.raises(ValueError, match="dtype: must be float64 .* or float32"):
        b.finalize("cpu", dtype=np.float16)
