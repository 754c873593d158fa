"""3D pendulum (paper 003, Sect. 3): invariants (41b), (41c) to round-off, convergence
orders of the E(t)-error (38), the q(t)-error (37) and the H1 distance, and agreement
with an independent reference (SciPy ``solve_ivp`` at rtol 1e-12)."""

import math

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.particles import diagnostics as diag
from granular.validation import pendulum as study

solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp


@pytest.mark.parametrize("scheme", ["exact", "verlet"])
def test_invariants_conserved_to_round_off_over_1e5_steps(scheme):
    model = study.build_model("cpu")
    dot, norm, _ = study.invariant_drift(model, scheme, 0.01, 100_000, samples=50)
    assert dot <= 1e-13
    assert norm <= 1e-13


def test_invariants_not_conserved_by_a_non_geometric_update():
    """Control: the invariant check can fail. One forward-Euler step on Ω with a moment
    that breaks the symmetry changes Rρ0·Ω by far more than 1e-13."""
    model = study.build_model("cpu")
    s = model.state()
    d0, _ = diag.pendulum_invariants(model, s)
    s.omega[0] += 1e-3 * np.array([0.3, 0.1, 0.9])
    d1, _ = diag.pendulum_invariants(model, s)
    assert abs(d1 - d0)[0] > 1e-5


def test_convergence_orders_of_the_paper():
    """Fig. 1: E(t)-error order 2 and q(t)-error order 1 for (23) and (25); plain H1
    distance order 2; map (27) order 1 in energy. Four step sizes (quick study)."""
    report = study.run(quick=True)
    failed = [c for c in report.checks if not c.passed]
    assert not failed, "\n" + report.text()
    assert len(report.data["parameters"]["h"]) >= 4


def pendulum_rhs(t, y, mg=1.0, J=1.0, rho0=(0.0, 0.0, 1.0)):
    """Independent ODE: q̇ = ½ (0, Ω) ⊗ q, J Ω̇ = m g (Rρ0) × e3."""
    q, om = y[:4], y[4:]
    qdot = 0.5 * rot.quat_multiply(np.concatenate([[0.0], om]), q)
    R = rot.quat_to_matrix(q / np.linalg.norm(q))
    p = R @ np.asarray(rho0)
    return np.concatenate([qdot, mg * np.cross(p, [0.0, 0.0, 1.0]) / J])


def test_agrees_with_scipy_reference_at_order_2():
    t_end = 4.0
    q0 = rot.quat_from_rrp(np.asarray(study.ALPHA0))
    y0 = np.concatenate([q0, study.OMEGA0])
    ref = solve_ivp(pendulum_rhs, (0.0, t_end), y0, method="DOP853", rtol=1e-12, atol=1e-13)
    q_ref, om_ref = ref.y[:4, -1] / np.linalg.norm(ref.y[:4, -1]), ref.y[4:, -1]
    model = study.build_model("cpu")
    for scheme, order in (("exact", 2), ("verlet", 2), ("campello", 1)):
        hs, errs = [], []
        for h in (0.04, 0.02, 0.01, 0.005):
            s = model.state()
            gr.ExplicitIntegrator(scheme).run(model, s, h, int(round(t_end / h)))
            err = float(rot.quat_angle_between(s.q[0], q_ref)) + float(np.linalg.norm(s.omega[0] - om_ref))
            hs.append(h)
            errs.append(err)
        p = diag.convergence_order(hs, errs)
        assert abs(p - order) < 0.15, (scheme, p, errs)
        if order == 2:
            assert errs[-1] < 1e-4


def test_energy_error_measure_is_zero_for_constant_energy():
    t = np.linspace(0, 1, 11)
    assert diag.energy_error(t, np.full(11, 3.0)) == 0.0
    assert diag.energy_error(t, 3.0 + t) == pytest.approx(math.sqrt(1 / 3) / 3.0, rel=1e-2)
