"""CPU kernels, GPU kernels (CUDA simulator in CI) and the NumPy reference give the same
forces, moments and energies on the torus and on a 10^3 block (1e-12 relative)."""

import numpy as np
import pytest
import reference_forces as ref

import granular as gr
from granular import rotations as rot
from granular.particles.forces import forces_at
from granular.particles.shapes import block_impact_builder
from granular.validation import torus_setup as T


def loaded_state(builder_fn, steps, h):
    """A deformed configuration in contact with the wall, computed on the CPU."""
    m = builder_fn().finalize("cpu")
    s = m.state()
    gr.ExplicitIntegrator("verlet").run(m, s, h, steps)
    q = rot.quat_multiply(rot.quat_from_rotvec(np.random.default_rng(2).normal(scale=0.3, size=(m.n, 3))), s.q)
    return s.x.copy(), q, s.broken.copy()


CASES = {
    "torus": (lambda: T.torus_builder(), 300, 1e-3),
    "block 10^3": (lambda: block_impact_builder(10, gap=0.02), 60, 1e-3),
}


def reference(model, x, q, broken):
    bd = model.bonds
    host = {k: model.backend.to_host(getattr(bd, k)) for k in ("a", "b", "rest_length", "n0a", "n0b", "qref", "ka", "ks", "km")}
    F, RM, U = ref.bonds(x, q, host, broken)
    c = model.force("contacts")
    Fc, Uc = ref.contacts(x, model.backend.to_host(model.radius), c.kpp)
    w = model.force("walls")
    Fw, Uw = ref.walls(x, model.backend.to_host(model.radius), w.planes_host, model.backend.to_host(w.k))
    U.update(Uc)
    U.update(Uw)
    return F + Fc + Fw, RM, U


@pytest.mark.parametrize("case", CASES)
def test_kernels_match_the_numpy_reference(case, backend):
    if backend.simulated and case != "torus":
        pytest.skip("the block is too slow under the CUDA simulator; the torus covers the GPU kernels")
    x, q, broken = loaded_state(*CASES[case])
    model = CASES[case][0]().finalize(backend)
    be = model.backend
    F, RM, U = forces_at(model, be.asarray(x), be.asarray(q), be.asarray(broken))
    F, RM = be.to_host(F), be.to_host(RM)
    Fr, RMr, Ur = reference(model, x, q, broken)
    assert U["U_pw"] > 0 and U["U_pp"] > 0 and U["U_s"] > 0  # everything is loaded
    np.testing.assert_allclose(F, Fr, rtol=1e-12, atol=1e-12 * np.abs(Fr).max())
    np.testing.assert_allclose(RM, RMr, rtol=1e-12, atol=1e-12 * np.abs(RMr).max())
    for key in Ur:
        assert U[key] == pytest.approx(Ur[key], rel=1e-12), key


def test_bond_reference_data_from_the_initial_configuration():
    """rest length, rest directions in each body frame and reference relative rotation,
    recomputed independently with rotation matrices from random initial orientations."""
    rng = np.random.default_rng(4)
    x0 = rng.normal(size=(5, 3))
    q0 = rot.quat_from_rotvec(rng.normal(size=(5, 3)))
    b = gr.ModelBuilder()
    b.add_particles(x0, orientation=q0)
    b.add_bonds([[0, 1], [3, 2], [4, 0]], ka=1.0, ks=1.0, km=1.0)
    bd = b.finalize("cpu").bonds
    R = rot.quat_to_matrix(q0)
    for k in range(3):
        a, c = int(bd.a[k]), int(bd.b[k])
        assert tuple(x0[a]) < tuple(x0[c])  # oriented by geometry, not by index
        d = x0[a] - x0[c]
        assert bd.rest_length[k] == pytest.approx(np.linalg.norm(d), rel=1e-15)
        n = d / np.linalg.norm(d)
        np.testing.assert_allclose(bd.n0a[k], R[a].T @ n, atol=1e-15)
        np.testing.assert_allclose(bd.n0b[k], R[c].T @ n, atol=1e-15)
        np.testing.assert_allclose(rot.quat_to_matrix(bd.qref[k]), R[c].T @ R[a], atol=1e-14)


def test_launch_sizes_are_not_shared_between_models(backend):
    """The torus (80 particles), then a smaller model, then the torus again: every torus
    particle is computed each time (a launch configuration belongs to one size)."""
    x, q, broken = loaded_state(*CASES["torus"])
    model = CASES["torus"][0]().finalize(backend)
    be = model.backend
    Fr, RMr, _ = reference(model, x, q, broken)
    for other in (None, block_impact_builder(2, gap=0.02).finalize(backend)):
        if other is not None:
            forces_at(other, other.state().x, other.state().q)
        F, RM, _ = forces_at(model, be.asarray(x), be.asarray(q), be.asarray(broken))
        np.testing.assert_allclose(be.to_host(F), Fr, rtol=1e-12, atol=1e-12 * np.abs(Fr).max())
        np.testing.assert_allclose(be.to_host(RM), RMr, rtol=1e-12, atol=1e-12 * np.abs(RMr).max())
