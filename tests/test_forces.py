"""Fields: force and moment equal minus the derivatives of their energies (central
differences), and values at configurations derived by hand (tests/data/fields.json)."""

import json
import pathlib

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.particles.forces import forces_at

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "fields.json").read_text())


def forces_and_energy(model, x, q):
    F, RM, energies = forces_at(model, x, q)
    return model.backend.to_host(F), model.backend.to_host(RM), sum(energies.values())


def random_model(backend, rng, n=7):
    b = gr.ModelBuilder()
    q = rot.quat_from_rotvec(rng.normal(size=(n, 3)) * 1.5)  # finite rotations
    idx = b.add_particles(rng.normal(size=(n, 3)), orientation=q, mass=rng.uniform(0.5, 2, n))
    b.add_pendulum(idx[: n - 2], rho0=rng.normal(size=(n - 2, 3)), g=rng.uniform(0.5, 3, n - 2),
                   vertical=[0.6, 0.0, 0.8])  # fmt: skip
    b.set_gravity(rng.normal(size=3))
    return b.finalize(backend)


def test_moments_and_forces_are_minus_energy_derivatives(backend, rng):
    model = random_model(backend, rng)
    xp = model.backend.xp
    s = model.state()
    F, RM, _ = forces_and_energy(model, s.x, s.q)
    eps = 1e-6
    for i in range(model.n):
        for c in range(3):
            d = np.zeros(3)
            d[c] = eps
            # position: U(x ± ε e_c)
            xp_, xm_ = s.x.copy(), s.x.copy()
            xp_[i] += xp.asarray(d)
            xm_[i] -= xp.asarray(d)
            dUdx = (forces_and_energy(model, xp_, s.q)[2] - forces_and_energy(model, xm_, s.q)[2]) / (2 * eps)
            # rotation: R → exp(S(±ε e_c)) R (spatial variation, the moment's definition (46))
            qp, qm = s.q.copy(), s.q.copy()
            qp[i] = xp.asarray(rot.quat_multiply(rot.quat_from_rotvec(d), model.backend.to_host(s.q[i])))
            qm[i] = xp.asarray(rot.quat_multiply(rot.quat_from_rotvec(-d), model.backend.to_host(s.q[i])))
            dUdth = (forces_and_energy(model, s.x, qp)[2] - forces_and_energy(model, s.x, qm)[2]) / (2 * eps)
            scaleF = max(1.0, np.abs(F[i]).max())
            scaleM = max(1.0, np.abs(RM[i]).max())
            assert abs(F[i, c] + dUdx) <= 1e-6 * scaleF, (i, c, F[i, c], -dUdx)
            assert abs(RM[i, c] + dUdth) <= 1e-6 * scaleM, (i, c, RM[i, c], -dUdth)
    # particles without a pendulum feel no moment
    np.testing.assert_array_equal(RM[-2:], 0.0)


@pytest.mark.parametrize("case", DATA["pendulum"], ids=lambda c: c["derivation"][:20])
def test_pendulum_values_by_hand(case, backend):
    b = gr.ModelBuilder()
    i = b.add_particle([0.0, 0.0, 0.0], orientation=case["q"], mass=1.0)
    b.add_pendulum(i, rho0=case["rho0"], g=case["mg"], vertical=case["vertical"])
    model = b.finalize(backend)
    s = model.state()
    F, RM, U = forces_and_energy(model, s.x, s.q)
    np.testing.assert_allclose(RM[0], case["RM"], atol=1e-15)
    np.testing.assert_allclose(F[0], 0.0, atol=0)
    assert U == pytest.approx(case["U"], abs=1e-15)


@pytest.mark.parametrize("case", DATA["gravity"])
def test_gravity_values_by_hand(case, backend):
    b = gr.ModelBuilder()
    b.add_particle(case["x"], mass=case["m"])
    b.set_gravity(case["g"])
    model = b.finalize(backend)
    s = model.state()
    F, RM, U = forces_and_energy(model, s.x, s.q)
    np.testing.assert_allclose(F[0], case["F"], rtol=1e-15)
    np.testing.assert_array_equal(RM[0], 0.0)
    assert U == pytest.approx(case["U"], rel=1e-15)
