"""Multibody systems in quaternions with the Livens EM scheme (paper 002, Sect. 5.5,
(122)-(128)): analytic Jacobian, the closed loop of four bars (energy, constraints,
energy balance during the load, the angular-momentum defect of the joints), the heavy top
rebuilt as one body on a ground joint against the analytic precession; batched against
alone; input errors."""

import numpy as np
import pytest

from granular.bodies.livens.multibody import BodyLoads, MultibodyEML, SphericalJoint, closed_loop
from granular.bodies.livens.rigid import point_position, rotation_matrix
from granular.particles import diagnostics as diag
from granular.validation import livens as study


def _fd_jacobian(fun, x, eps=1e-6):
    Jn = np.zeros(x.shape + (x.shape[1],))
    for j in range(x.shape[1]):
        xp_, xm = x.copy(), x.copy()
        xp_[:, j] += eps
        xm[:, j] -= eps
        Jn[:, :, j] = (fun(xp_)[0].copy() - fun(xm)[0].copy()) / (2 * eps)
    return Jn


def test_closed_loop_jacobian_during_the_load(rng):
    sch, s = closed_loop(2, f_m=[100.0, 60.0])
    sch.run(s, 0.1, 3)
    fun, x0 = sch.newton_system(s, 0.1)
    x = x0 + 0.01 * rng.normal(size=x0.shape)
    Ja = fun(x)[1].copy()
    np.testing.assert_allclose(Ja, _fd_jacobian(fun, x), atol=1e-8 * abs(Ja).max())


def _two_bodies(n=2, loads=True):
    """Body 0 hangs from the ground at a body point, body 1 from body 0; full inertia
    tensors, gravity, a force off the centre of mass and a torque on each body."""
    J = np.array([[[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]],
                  [[1.0, 0.0, 0.2], [0.0, 0.8, 0.1], [0.2, 0.1, 0.6]]])  # fmt: skip
    joints = [SphericalJoint(0, (0.0, 0.0, 0.5), -1, (0.0, 0.0, 1.0)),
              SphericalJoint(1, (0.1, 0.0, 0.4), 0, (0.0, 0.2, -0.5))]  # fmt: skip
    bl = None
    if loads:
        F = np.array([[[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]]] * n)
        T = np.array([[[0.2, 0.1, -0.3], [-0.4, 0.5, 0.1]]] * n)
        pts = [[0.1, 0.2, 0.0], [0.0, -0.1, 0.3]]
        bl = BodyLoads(force=lambda t: np.cos(t) * F, torque=lambda t: (1 + t) * T, points=pts)
    sch = MultibodyEML([1.0, 0.7], J, joints, n=n, gravity=[0.0, 0.0, -9.81], loads=bl)
    q = np.array([[1.0, 0.0, 0.0, 0.0], [np.cos(0.2), np.sin(0.2), 0.0, 0.0]])
    phi0 = np.array([0.0, 0.0, 1.0]) - point_position(q[0], np.array([0.0, 0.0, 0.5]))
    phi1 = phi0 + point_position(q[0], np.array([0.0, 0.2, -0.5])) - point_position(q[1], np.array([0.1, 0.0, 0.4]))
    return sch, sch.state(np.stack([phi0, phi1]), q)


def test_general_multibody_jacobian(rng):
    sch, s = _two_bodies()
    sch.run(s, 0.01, 3)
    fun, x0 = sch.newton_system(s, 0.01)
    x = x0 + 1e-3 * rng.normal(size=x0.shape)
    Ja = fun(x)[1].copy()
    np.testing.assert_allclose(Ja, _fd_jacobian(fun, x), atol=1e-8 * abs(Ja).max())


def test_general_multibody_energy_balance_and_constraints():
    """With loads the discrete energy balance E^n - E^0 = Σ Δq·F_{n+½} holds to round-off;
    without loads the generalized energy (74) is conserved; joints hold to round-off."""
    for loads in (True, False):
        sch, s = _two_bodies(loads=loads)
        E0 = sch.generalized_energy(s)[0]
        Es = [E0]
        for _ in range(60):
            sch.step(s, 0.01)
            Es.append(sch.generalized_energy(s)[0])
            assert sch.constraint_residual(s).max() < 1e-13
        Es = np.array(Es)
        scale = abs(sch.kinetic_energy(s)[0]) + abs(E0)
        if loads:
            assert abs(Es[-1] - E0 - s.extra["work"][0]) < 1e-12 * scale
            assert abs(s.extra["work"][0]) > 1e-2 * scale
        else:
            assert abs(np.diff(Es)).max() < 1e-12 * scale and s.extra["work"][0] == 0.0


@pytest.fixture(scope="module")
def loop_run():
    return study.closed_loop_run(t_end=3.0, snapshots=(0.0, 2.0))


def test_closed_loop_conservation_after_the_load(loop_run):
    """5.5, Fig. 16: after t = 1 the generalized energy is conserved (<= 1e-10, measured
    ~1e-15); the 16 constraints hold to round-off; during the load E changes by exactly the
    work of the load."""
    f = study.loop_figures(loop_run)
    assert f["E_rel_variation_after_load"] < 1e-10
    assert f["constraint_max"] < 1e-12
    assert f["energy_balance_max_rel"] < 1e-12
    assert f["energy_during_load_changes"] > 100.0
    assert 2.0 <= f["newton_iterations_per_step"] <= 6.0


def test_closed_loop_angular_momentum_defect(loop_run):
    """The paper claims exact conservation of L; with the midpoint gradient of the quadratic
    joint constraints each step changes L by exactly -Σ g(q̄) × hλ (round-off), which is not
    zero: L drifts after the load (~1e-3 relative at h = 0.1, O(h²))."""
    f = study.loop_figures(loop_run)
    assert f["L_defect_identity_max_rel"] < 1e-12
    assert f["L_rel_variation_after_load"] > 1e-6
    a = loop_run["t"] >= 1.0 + 0.1 - 1e-9
    assert np.abs(loop_run["defect"][a]).max() > 1e-8


def test_closed_loop_linear_momentum_after_the_load(loop_run):
    """No external force after t = 1: the total linear momentum is constant (joint forces
    cancel pairwise); it equals the impulse of the load, ∫ 8 f dt e1 = 400 e1 N s."""
    sch, s = closed_loop(1)
    sch.run(s, 0.1, 15)
    P = sch.linear_momentum(s)[0]
    np.testing.assert_allclose(P, [400.0, 0.0, 0.0], atol=1e-9)


def test_heavy_top_as_a_multibody_system():
    """The heavy top of 5.4 as one body with translation on a ground joint at its tip
    (J about the centre of mass): order 2 at t = 0.1 against the steady precession (120),
    and the generalized energy is conserved."""
    P = study.heavy_top_parameters()
    m, l = P["m"], P["l"]
    Jc = np.diag([P["J1"] - m * l * l, P["J1"] - m * l * l, P["J3"]])
    ref = study.precession_reference(0.1)[0]
    hs, errs = [0.001, 0.0005], []
    for h in hs:
        sch = MultibodyEML([m], Jc[None], [SphericalJoint(0, (0.0, 0.0, -l), -1, (0.0, 0.0, 0.0))],
                           n=1, gravity=[0.0, 0.0, -P["g"]])  # fmt: skip
        phi0 = rotation_matrix(P["q0"]) @ np.array([0.0, 0.0, l])
        s = sch.state(phi0[None], P["q0"][None], velocity=np.cross(P["omega0"], phi0)[None], omega=P["omega0"][None])
        E0 = sch.generalized_energy(s)[0]
        sch.run(s, h, int(round(0.1 / h)))
        assert abs(sch.generalized_energy(s)[0] - E0) < 1e-12 * abs(E0)
        errs.append(np.linalg.norm(s.q[0, :3] - ref) / np.linalg.norm(ref))
    assert abs(diag.convergence_order(hs, errs) - 2.0) < 0.1, errs
    assert errs[-1] < 1e-3


def test_batched_equals_alone(backend):
    """Closed loops with different load amplitudes in one batch give each loop alone to 1e-12."""
    fm = np.array([100.0, 40.0, 150.0, 70.0])
    xp = backend.xp
    sch, s = closed_loop(4, f_m=xp.asarray(fm), backend=backend)
    sch.run(s, 0.1, 12)
    qB = backend.to_host(s.q)
    for b in (0, 2):
        one, s1 = closed_loop(1, f_m=float(fm[b]), backend=backend)
        one.run(s1, 0.1, 12)
        assert np.abs(backend.to_host(s1.q)[0] - qB[b]).max() <= 1e-12 * 40.0


def test_bad_input_raises():
    J = np.eye(3)[None]
    with pytest.raises(ValueError, match="joints\\[0\\]: bodies must be distinct"):
        MultibodyEML([1.0], J, [SphericalJoint(0, (0, 0, 0), 0, (0, 0, 0))], n=1)
    with pytest.raises(ValueError, match="joints\\[0\\]: bodies must be distinct"):
        MultibodyEML([1.0], J, [SphericalJoint(1, (0, 0, 0), -1, (0, 0, 0))], n=1)
    with pytest.raises(ValueError, match="mass must be > 0"):
        MultibodyEML([0.0], J, n=1)
    with pytest.raises(ValueError, match="loads.points"):
        MultibodyEML([1.0], J, n=1, loads=BodyLoads(points=np.zeros((2, 3))))
    sch = MultibodyEML([1.0], J, [SphericalJoint(0, (0, 0, 1.0), -1, (0, 0, 0))], n=1)
    with pytest.raises(ValueError, match="violates the joints"):
        sch.state([[0.0, 0.0, 0.0]], [[1.0, 0, 0, 0]])
    with pytest.raises(ValueError, match="joint velocities"):
        sch.state([[0.0, 0.0, -1.0]], [[1.0, 0, 0, 0]], velocity=[[1.0, 0.0, 0.0]])
    bad = MultibodyEML([1.0], J, n=1, loads=BodyLoads(force=lambda t: np.zeros((1, 3))))
    s = bad.state([[0.0, 0.0, 0.0]], [[1.0, 0, 0, 0]])
    with pytest.raises(ValueError, match="loads.force\\(t\\) must return shape"):
        bad.step(s, 0.1)
