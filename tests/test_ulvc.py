"""Unified local velocity coordinates (paper 001): the maps D, N, E, M, Γ, Q and the
inverse tangent operator against the paper's printed formulas and against quadrature;
the RK4 Lie-group scheme on the unstable-rotation example (order 4, det R, flips,
agreement with SciPy), with point forces and torques against the Newton-Euler
equations (SciPy), batched against alone, and input errors."""

import math

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies.ulvc import schemes as ulvc
from granular.particles import diagnostics as diag
from granular.particles.integrators import NonFiniteError
from granular.validation import ulvc as study

solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp
S2 = 1 / math.sqrt(2)


def random_inertia(rng):
    """A physical inertia tensor: random rotation of principal moments obeying the
    triangle inequality."""
    a, b = rng.uniform(0.5, 3.0, 2)
    c = rng.uniform(abs(a - b) + 0.1, a + b - 0.05)
    Q = rot.so3_exp(rng.normal(size=3))
    return Q @ np.diag([a, b, c]) @ Q.T


def paper_D(l1, l2, l3):
    """(54), written out."""
    return S2 * np.array([
        [1, 0, 0, 0, 0, l2],
        [-1, 0, 0, 0, 0, l2],
        [0, 1, 0, l3, 0, 0],
        [0, -1, 0, l3, 0, 0],
        [0, 0, 1, 0, l1, 0],
        [0, 0, -1, 0, l1, 0],
    ], dtype=float)  # fmt: skip


def paper_N(y, l1, l2, l3):
    """(27), written out."""
    y1, y2, y3 = y
    return S2 * np.array([
        [1 - y2 / l2, -1 - y2 / l2, 0, 0, y3 / l1, y3 / l1],
        [y1 / l2, y1 / l2, 1 - y3 / l3, -1 - y3 / l3, 0, 0],
        [0, 0, y2 / l3, y2 / l3, 1 - y1 / l1, -1 - y1 / l1],
    ])  # fmt: skip


# ------------------------------------------------------------------ the maps


def test_D_maps_velocities_to_w_and_back_exactly(rng):
    n = 200
    l = rng.uniform(0.1, 5.0, (n, 3))
    bodies = ulvc.ULVCBodies(rng.uniform(0.1, 3, n), [random_inertia(rng) for _ in range(n)], l=l)
    U, Om = rng.normal(size=(n, 3)) * 10, rng.normal(size=(n, 3)) * 10
    w = bodies.w_from_velocities(U, Om)
    U2, Om2 = bodies.velocities(w)
    assert np.abs(U2 - U).max() <= 1e-14 * np.abs(U).max()
    assert np.abs(Om2 - Om).max() <= 1e-14 * np.abs(Om).max() / l.min()
    w2 = bodies.w_from_velocities(U2, Om2)
    assert np.abs(w2 - w).max() <= 1e-14 * np.abs(w).max()
    for k in (0, 7, 199):
        assert np.allclose(bodies.D[k], paper_D(*l[k]), rtol=0, atol=1e-15)
    # (18): w_i = b_i · v(y_i), with v(y) = U + Ω × y
    v_at_points = U[:, None, :] + np.cross(Om[:, None, :], bodies.y)
    assert np.allclose(w, (bodies.b * v_at_points).sum(-1), rtol=1e-13, atol=1e-13)


def test_unit_hexahedron_D_is_orthogonal_with_det_minus_one_and_gives_89():
    bodies = study.build_bodies()
    D = bodies.D[0]
    assert np.abs(D @ D.T - np.eye(6)).max() < 1e-15
    assert np.linalg.det(D) == pytest.approx(-1.0, abs=1e-14)
    assert np.abs(bodies.D_inv[0] - D.T).max() < 1e-15  # (55), (71)
    w0 = bodies.state(Omega=study.OMEGA0).w[0]
    assert np.allclose(w0, [100 * S2, 100 * S2, 0.01 * S2, 0.01 * S2, 0, 0], rtol=0, atol=1e-13)  # (89)


def test_velocity_field_is_27_and_rigid(rng):
    l = rng.uniform(0.3, 2.0, 3)
    bodies = ulvc.ULVCBodies(1.0, [1.0, 2.0, 2.5], l=l)
    w = rng.normal(size=(1, 6))
    U, Om = bodies.velocities(w)
    for _ in range(5):
        y = rng.normal(size=3)
        N = ulvc.interpolation_matrix(y[None], bodies.D_inv)[0]
        assert np.allclose(N, paper_N(y, *l), rtol=0, atol=1e-15)
        assert np.allclose(N @ w[0], U[0] + np.cross(Om[0], y), rtol=0, atol=1e-14)
        assert np.allclose(ulvc.point_velocity(y[None], bodies.D_inv, w)[0], N @ w[0], atol=1e-14)
    # (40): Ē collects ė_i and equals Ω̃
    w1, w2, w3, w4, w5, w6 = w[0]
    l1, l2, l3 = l
    E40 = S2 * np.array([
        [0, -(w1 + w2) / l2, (w5 + w6) / l1],
        [(w1 + w2) / l2, 0, -(w3 + w4) / l3],
        [-(w5 + w6) / l1, (w3 + w4) / l3, 0],
    ])  # fmt: skip
    assert np.allclose(ulvc.omega_matrix(w, bodies.D_inv)[0], E40, atol=1e-15)


def test_lie_algebra_matrix_is_70_for_the_unit_hexahedron(rng):
    bodies = study.build_bodies()
    w = rng.normal(size=(1, 6))
    w1, w2, w3, w4, w5, w6 = w[0]
    V70 = S2 * np.array([
        [0, -w1 - w2, w5 + w6, w1 - w2],
        [w1 + w2, 0, -w3 - w4, w3 - w4],
        [-w5 - w6, w3 + w4, 0, w5 - w6],
        [0, 0, 0, 0],
    ])  # fmt: skip
    assert np.allclose(ulvc.lie_algebra_matrix(w, bodies.D_inv)[0], V70, rtol=0, atol=1e-15)


def test_mass_matrix_is_spd_and_gives_the_kinetic_energy(rng):
    n = 100
    m = rng.uniform(0.1, 5, n)
    J = np.array([random_inertia(rng) for _ in range(n)])
    l = rng.uniform(0.1, 4.0, (n, 3))
    bodies = ulvc.ULVCBodies(m, J, l=l)
    M = bodies.M
    assert np.abs(M - np.swapaxes(M, 1, 2)).max() <= 1e-14 * np.abs(M).max()
    assert (np.linalg.eigvalsh(M)[:, 0] > 0).all()
    U, Om = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    w = bodies.w_from_velocities(U, Om)
    T_ne = 0.5 * m * (U * U).sum(1) + 0.5 * np.einsum("ni,nij,nj->n", Om, J, Om)
    assert np.abs(bodies.kinetic_energy(w) - T_ne).max() <= 1e-13 * T_ne.max()
    assert np.abs(bodies.M_inv @ M - np.eye(6)).max() < 1e-10


def test_mass_matrix_60_and_quadratic_velocity_vector_61():
    m, J11, J22, J33 = 1.3, 5.2988, 1.1775, 4.3568
    bodies = ulvc.ULVCBodies(m, [J11, J22, J33])

    def pair(a):
        return [[m + a, a - m], [a - m, m + a]]

    M60 = np.zeros((6, 6))
    M60[:2, :2], M60[2:4, 2:4], M60[4:, 4:] = pair(J33), pair(J11), pair(J22)
    assert np.allclose(bodies.M[0], 0.5 * M60, rtol=0, atol=1e-14)
    w = np.array([[0.3, -1.2, 0.7, 2.0, -0.4, 0.9]])
    w1, w2, w3, w4, w5, w6 = w[0]
    # (61). Rows 2-5 as printed; rows 1 and 6 have sign misprints: row 1 prints
    # (-J11 - J22) for (J22 - J11), row 6 prints m(w3² - w4² + …) for -m(w3² - w4² - …),
    # the pattern of rows 3/4. Only the corrected rows follow from (56) and (65).
    g61 = np.array([
        m * (w1 + w2) * (w4 - w3) + ((J22 - J11) * (w3 + w4) + m * (w5 - w6)) * (w5 + w6),
        m * (w1 + w2) * (w3 - w4) - ((J11 - J22) * (w3 + w4) + m * (w5 - w6)) * (w5 + w6),
        m * (w1**2 - w2**2 - (w3 + w4) * (w5 - w6)) - (J22 - J33) * (w1 + w2) * (w5 + w6),
        -m * (w1**2 - w2**2 - (w3 + w4) * (w5 - w6)) - (J22 - J33) * (w1 + w2) * (w5 + w6),
        m * (w3**2 - w4**2 - (w1 - w2) * (w5 + w6)) + (J11 - J33) * (w1 + w2) * (w3 + w4),
        -m * (w3**2 - w4**2 - (w1 - w2) * (w5 + w6)) + (J11 - J33) * (w1 + w2) * (w3 + w4),
    ]) / (2 * math.sqrt(2))  # fmt: skip
    assert np.allclose(bodies.gamma_times_w(w)[0], g61, rtol=0, atol=1e-13)
    assert np.allclose(bodies.gamma(w)[0] @ w[0], g61, rtol=0, atol=1e-13)


def test_mass_matrix_and_gamma_are_the_integrals_48_49_over_a_box(rng):
    """A homogeneous box of half sides (a, b, c): (48) and (49) by Gauss-Legendre
    quadrature (exact: the integrands are quadratic in ȳ) against (56)."""
    a, b, c, rho = 0.7, 1.1, 0.4, 2.5
    m = rho * 8 * a * b * c
    J = m / 3 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])
    bodies = ulvc.ULVCBodies(m, J, l=rng.uniform(0.5, 2.0, 3))
    g = np.array([-1.0, 1.0]) / math.sqrt(3.0)
    pts = np.array([[a * i, b * j, c * k] for i in g for j in g for k in g])
    weight = rho * a * b * c  # 8 points, each with weight (a b c), times ρ
    N = ulvc.interpolation_matrix(pts, bodies.D_inv)  # (8, 3, 6)
    M48 = weight * np.einsum("pia,pib->ab", N, N)
    assert np.allclose(M48, bodies.M[0], rtol=1e-13, atol=1e-13)
    w = rng.normal(size=(1, 6))
    E = ulvc.omega_matrix(w, bodies.D_inv)[0]
    G49 = weight * np.einsum("pia,ij,pjb->ab", N, E, N)  # ∫ρ N̄ᵀ Ē N̄ dV
    assert np.allclose(G49 @ w[0], bodies.gamma_times_w(w)[0], rtol=1e-12, atol=1e-12)


def test_generalized_force_by_virtual_power(rng):
    bodies = ulvc.ULVCBodies(2.0, random_inertia(rng), l=(0.5, 1.5, 2.0))
    K = 4
    y = rng.normal(size=(1, K, 3))
    f = rng.normal(size=(1, K, 3))
    tau = rng.normal(size=(1, 3))
    Q = bodies.generalized_force(y, f, tau)
    for _ in range(3):
        dw = rng.normal(size=(1, 6))
        dU, dOm = bodies.velocities(dw)
        power = (f[0] * (dU[0] + np.cross(dOm[0], y[0]))).sum() + tau[0] @ dOm[0]  # (52)
        assert Q[0] @ dw[0] == pytest.approx(power, rel=1e-13, abs=1e-13)
    # resultant form: D̄ᵀ Q̄ = [Σ f, Σ y × f + τ]
    wrench = bodies.D[0].T @ Q[0]
    assert np.allclose(wrench, np.concatenate([f[0].sum(0), np.cross(y[0], f[0]).sum(0) + tau[0]]), atol=1e-13)


def test_inverse_tangent_in_w_coordinates(rng):
    """(72) equals the corrected closed form (73)-(78); and ṅ = T̄⁻¹(n) w̄ integrates the
    kinematics: (H⁻¹ Ḣ)^∨ = D̄⁻¹ w̄ for H = exp(n(t)) (central differences)."""
    for l in ((1.0, 1.0, 1.0), (0.4, 2.0, 1.3)):
        bodies = ulvc.ULVCBodies(1.0, [1.0, 2.0, 2.5], l=l)
        n = rng.normal(size=(5, 6)) * np.array([1, 1, 1, 0.6, 0.6, 0.6])
        Tw = bodies.inverse_tangent(n)
        assert np.abs(Tw - ulvc.inverse_tangent_w_closed_form(n, bodies.D_inv)).max() < 1e-13
        if l == (1.0, 1.0, 1.0):
            assert np.abs(Tw - rot.se3_tangent_inv(n) @ bodies.D[0].T).max() < 1e-14  # (72) as printed
        w = rng.normal(size=6)
        ndot = Tw[0] @ w
        eps = 1e-6
        dH = (rot.se3_exp(n[0] + eps * ndot) - rot.se3_exp(n[0] - eps * ndot)) / (2 * eps)
        H = rot.se3_exp(n[0])
        X = np.linalg.solve(H, dH)
        v = np.array([X[0, 3], X[1, 3], X[2, 3], X[2, 1], X[0, 2], X[1, 0]])
        assert np.abs(v - bodies.D_inv[0] @ w).max() < 1e-8


def test_tetrahedral_projection_maps_one_to_one(rng):
    reg = ulvc.ULVCBodies(1.0, [1.0, 2.0, 2.5], projection="tetrahedral")
    assert np.abs(reg.D[0] @ reg.D[0].T - np.eye(6)).max() < 1e-15  # regular, a = 1: orthogonal
    for _ in range(20):
        P = rng.normal(size=(4, 3))
        P -= P.mean(0)
        bodies = ulvc.ULVCBodies(rng.uniform(0.5, 2), random_inertia(rng), projection="tetrahedral", vertices=P)
        U, Om = rng.normal(size=(1, 3)), rng.normal(size=(1, 3))
        U2, Om2 = bodies.velocities(bodies.w_from_velocities(U, Om))
        cond = np.linalg.cond(bodies.D[0])
        assert np.abs(np.concatenate([U2 - U, Om2 - Om])).max() < 1e-15 * cond * 10
        w = bodies.w_from_velocities(U, Om)
        T_ne = 0.5 * bodies.mass[0] * U[0] @ U[0] + 0.5 * Om[0] @ bodies.J[0] @ Om[0]
        assert bodies.kinetic_energy(w)[0] == pytest.approx(T_ne, rel=1e-10)
    flat = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], dtype=float)
    with pytest.raises(ValueError, match="degenerate"):
        ulvc.ULVCBodies(1.0, [1.0, 1.0, 1.0], projection="tetrahedral", vertices=flat)


# ------------------------------------------------------------ the example


@pytest.fixture(scope="module")
def sequence_runs():
    """The paper's step sizes in the asymptotic range, ulvc, full records."""
    bodies = study.build_bodies()
    hs = [1 / 160, 1 / 320, 1 / 640, 1 / 1280]
    return hs, [study.integrate(bodies, "ulvc", h) for h in hs]


@pytest.fixture(scope="module")
def scipy_tight():
    return study.scipy_reference(np.array([0.0, study.T_END]), rtol=2.3e-14, atol=1e-14)


def test_omega_converges_with_order_4(sequence_runs, scipy_tight):
    """Fig. 11 over h = 1/160 … 1/1280 against an independent SciPy solution (the
    h = 1e-5 reference of the paper is in the long test)."""
    hs, runs = sequence_runs
    errs = [np.linalg.norm(r["Omega"][-1] - scipy_tight["Omega"][-1]) for r in runs]
    assert abs(diag.convergence_order(hs, errs) - 4) <= 0.3, errs
    assert errs[-1] < 1e-4


def test_rk4_is_unstable_at_the_two_coarsest_paper_steps():
    """h = 1/10 and 1/40 lie outside RK4's stability region for this example; the scheme
    stops with NonFiniteError and leaves the last finite state."""
    bodies = study.build_bodies()
    for h in (1 / 10, 1 / 40):
        s = study.initial_state(bodies)
        steps = int(round(1 / h))
        with np.errstate(over="ignore", invalid="ignore"), pytest.raises(NonFiniteError, match="non-finite") as exc:
            ulvc.LieGroupRK4(bodies).run(s, h, steps)
        assert s.step < steps and exc.value.step == s.step + 1 and exc.value.particle == 0 and exc.value.body == 0
        assert np.isfinite(s.w).all() and np.isfinite(s.R).all() and np.isfinite(s.x).all()
        assert np.abs(s.w).max() > 1e3 * np.abs(study.initial_state(bodies).w).max()  # it was blowing up


def test_det_R_stays_one(sequence_runs):
    _, runs = sequence_runs
    assert max(np.abs(r["det"] - 1).max() for r in runs) <= 1e-13
    for r in runs:
        R = r["R"]
        assert np.abs(np.swapaxes(R, 1, 2) @ R - np.eye(3)).max() <= 1e-13


def test_energy_and_momentum_drift_shrink_at_order_4(sequence_runs):
    """RK4 conserves neither; the drift is reported and falls like h⁴."""
    hs, runs = sequence_runs
    e = [np.abs(r["E"] - r["E"][0]).max() / r["E"][0] for r in runs]
    L = [np.linalg.norm(r["L"] - r["L"][0], axis=1).max() / np.linalg.norm(r["L"][0]) for r in runs]
    assert all(v > 0 for v in e + L)
    assert diag.convergence_order(hs, e) > 3.7
    assert diag.convergence_order(hs, L) > 3.7
    assert e[-1] < 1e-6 and L[-1] < 1e-5


def test_flip_times_agree_with_reference_integrator_and_scipy():
    bodies = study.build_bodies()
    h = 1 / 1280
    runs = {s: study.integrate(bodies, s, h) for s in ("ulvc", "newton_euler")}
    t = runs["ulvc"]["t"]
    flips = {s: study.crossing_times(r["t"], r["p"][:, 2]) for s, r in runs.items()}
    sp = study.scipy_reference(t)
    flips_sp = study.crossing_times(t, sp["R"][:, 2, 2])
    assert len(flips["ulvc"]) == len(flips["newton_euler"]) == len(flips_sp) == 3
    # same Ω̄ and R up to round-off, which the unstable passages amplify to ~1e-9 here
    assert np.abs(flips["ulvc"] - flips["newton_euler"]).max() < 1e-7
    assert np.abs(flips["ulvc"] - flips_sp).max() < 1e-5
    # the point p̄ flips between +e3 and -e3 (Fig. 8)
    pz = runs["ulvc"]["p"][:, 2]
    assert pz.max() > 0.99 and pz.min() < -0.99


def test_agrees_with_scipy_at_h_1e_4_over_the_first_flip():
    """Relative Ω error and rotation error ≤ 1e-8 for t ≤ 0.3 (the full interval is
    ill-conditioned at the 1e-8 level, see the long test)."""
    bodies = study.build_bodies()
    r = study.integrate(bodies, "ulvc", 1e-4, t_end=study.T_FIRST_FLIP)
    sp = study.scipy_reference(r["t"])
    rel = np.linalg.norm(r["Omega"] - sp["Omega"], axis=1) / np.linalg.norm(sp["Omega"], axis=1)
    ang = rot.quat_angle_between(rot.quat_from_matrix(r["R"]), rot.quat_from_matrix(sp["R"]))
    assert rel.max() <= 1e-8
    assert ang.max() <= 1e-8
    assert len(study.crossing_times(r["t"], r["p"][:, 2])) == 1  # the first flip is inside


# --------------------------------------------------------- forces and torques


M_F, J_F, L_F = 2.0, np.array([1.0, 2.0, 2.5]), (0.7, 1.3, 0.9)
POINTS = np.array([[0.3, -0.2, 0.5], [-0.4, 0.1, 0.2], [0.0, 0.0, 0.0]])
F_BODY = np.array([[0.5, 1.0, -0.3], [0.0, 0.0, 0.0], [0.2, 0.0, 0.1]])
F_SPATIAL = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, -9.81 * M_F], [0.3, -0.1, 0.0]])
TAU_BODY, TAU_SPATIAL = np.array([0.2, -0.1, 0.3]), np.array([0.0, 0.4, 0.0])
U0_F, OM0_F = np.array([0.5, -0.2, 1.0]), np.array([1.0, 2.0, -1.5])


def scale(t):
    return 1.0 + 0.5 * math.sin(3 * t)


def forced_loads():
    return ulvc.PointLoads(points=POINTS, force_body=F_BODY, force_spatial=F_SPATIAL, torque_body=TAU_BODY,
                           torque_spatial=TAU_SPATIAL, scale=scale)  # fmt: skip


def newton_euler_rhs(t, y):
    """Independent Newton-Euler ODE in (x, v, q, Ω̄): m v̇ = R Σf̄, J̄Ω̇̄ = Σȳ×f̄ + τ̄ - Ω̄×J̄Ω̄."""
    v, q, om = y[3:6], y[6:10], y[10:]
    R = rot.quat_to_matrix(q / np.linalg.norm(q))
    s = scale(t)
    f = s * (F_BODY + F_SPATIAL @ R)  # body frame: Rᵀ f per row
    tau = np.cross(POINTS, f).sum(0) + s * (TAU_BODY + R.T @ TAU_SPATIAL)
    qdot = 0.5 * rot.quat_multiply(q, np.concatenate([[0.0], om]))
    return np.concatenate([v, R @ f.sum(0) / M_F, qdot, (tau - np.cross(om, J_F * om)) / J_F])


@pytest.fixture(scope="module")
def forced_reference():
    y0 = np.concatenate([np.zeros(3), U0_F, [1.0, 0.0, 0.0, 0.0], OM0_F])
    sol = solve_ivp(newton_euler_rhs, (0.0, 1.0), y0, method="DOP853", rtol=1e-12, atol=1e-12)
    return sol.y[:, -1]


def forced_error(make, h, y_ref):
    bodies = ulvc.ULVCBodies(M_F, J_F, l=L_F)
    integrator = make(bodies)
    s = integrator.state(U=U0_F, Omega=OM0_F)
    integrator.run(s, h, int(round(1.0 / h)))
    U, Om = s.velocities(bodies)
    q_ref = y_ref[6:10] / np.linalg.norm(y_ref[6:10])
    angle = float(rot.quat_angle_between(rot.quat_from_matrix(s.R[0]), q_ref))
    return (np.linalg.norm(s.x[0] - y_ref[:3]) + np.linalg.norm(s.R[0] @ U[0] - y_ref[3:6])
            + np.linalg.norm(Om[0] - y_ref[10:]) + angle)  # fmt: skip


def test_point_forces_and_torques_match_newton_euler(forced_reference):
    """Follower and dead forces at body points, body and spatial torques, time-scaled:
    position, velocity, orientation and Ω̄ against SciPy, at order 4; and against the
    reference integrator in standard coordinates."""
    hs = [1 / 25, 1 / 50, 1 / 100, 1 / 200]
    errs = [forced_error(lambda b: ulvc.LieGroupRK4(b, forced_loads()), h, forced_reference) for h in hs]
    assert abs(diag.convergence_order(hs, errs) - 4) <= 0.3, errs
    assert errs[-1] < 1e-7
    ne = forced_error(lambda b: ulvc.NewtonEulerRK4(b, forced_loads()), hs[-1], forced_reference)
    assert ne < 1e-7


def test_stages_at_H_i_as_printed_are_first_order_with_dead_loads(forced_reference):
    """Control for the choice of stage configurations: evaluating the loads at H_i in
    every stage, as (82)-(85) are printed, converges only at order 1 here."""
    hs = [1 / 25, 1 / 50, 1 / 100]
    errs = [forced_error(lambda b: ulvc.LieGroupRK4(b, forced_loads(), stages="paper"), h, forced_reference)
            for h in hs]
    assert abs(diag.convergence_order(hs, errs) - 1) <= 0.2, errs


def test_constant_force_at_the_centre_gives_uniform_acceleration(rng):
    """A spatial force through the centre of mass, no spin: x(t) = x0 + v0 t + ½ F/m t²
    (RK4 is exact for this quadratic), at any l."""
    F = np.array([0.3, -1.0, 2.0])
    bodies = ulvc.ULVCBodies(1.5, random_inertia(rng), l=(0.3, 2.0, 1.1))
    loads = ulvc.PointLoads(points=np.zeros((1, 3)), force_spatial=F[None])
    s = bodies.state(U=[1.0, 0.5, -0.2])
    ulvc.LieGroupRK4(bodies, loads).run(s, 0.05, 20)
    x_exact = np.array([1.0, 0.5, -0.2]) + 0.5 * F / 1.5
    assert np.allclose(s.x[0], x_exact, rtol=0, atol=1e-13)
    assert np.allclose(bodies.velocities(s.w)[1][0], 0.0, atol=1e-14)


# ------------------------------------------------------------- batched


def test_batched_equals_alone(backend, rng):
    """N different bodies (parameters, states, loads) in one batch against each alone."""
    n = 3 if backend.simulated else 5  # the CUDA simulator runs each body's law as Python
    m = rng.uniform(0.5, 2, n)
    J = np.array([random_inertia(rng) for _ in range(n)])
    l = rng.uniform(0.5, 2, (n, 3))
    U, Om = rng.normal(size=(n, 3)), 3 * rng.normal(size=(n, 3))
    R0 = rot.so3_exp(rng.normal(size=(n, 3)))
    pts = rng.normal(size=(n, 2, 3))
    fb, fs, tb = rng.normal(size=(n, 2, 3)), rng.normal(size=(n, 2, 3)), rng.normal(size=(n, 3))
    xp = backend.xp
    h, steps = 0.01, 3 if backend.simulated else 30
    for scheme in ("ulvc", "newton_euler"):
        loads = ulvc.PointLoads(points=pts, force_body=fb, force_spatial=fs, torque_body=tb, backend=backend)
        bodies = ulvc.ULVCBodies(m, J, l=l, backend=backend)
        s = bodies.state(R=xp.asarray(R0), U=U, Omega=Om)
        integ = ulvc.LieGroupRK4(bodies, loads) if scheme == "ulvc" else ulvc.NewtonEulerRK4(bodies, loads)
        s = s if scheme == "ulvc" else ulvc.to_newton_euler(bodies, s)
        integ.run(s, h, steps)
        Rb, xb = backend.to_host(s.R), backend.to_host(s.x)
        Ub, Omb = (backend.to_host(a) for a in s.velocities(bodies))
        for k in range(n):
            one = ulvc.ULVCBodies(m[k], J[k], l=l[k], backend=backend)
            lk = ulvc.PointLoads(points=pts[k], force_body=fb[k], force_spatial=fs[k], torque_body=tb[k],
                                 backend=backend)  # fmt: skip
            sk = one.state(R=xp.asarray(R0[k]), U=U[k], Omega=Om[k])
            integ = ulvc.LieGroupRK4(one, lk) if scheme == "ulvc" else ulvc.NewtonEulerRK4(one, lk)
            sk = sk if scheme == "ulvc" else ulvc.to_newton_euler(one, sk)
            integ.run(sk, h, steps)
            Uk, Omk = (backend.to_host(a) for a in sk.velocities(one))
            # one thread per body: the same arithmetic alone and in a batch, bit for bit
            assert np.array_equal(backend.to_host(sk.R)[0], Rb[k])
            assert np.array_equal(backend.to_host(sk.x)[0], xb[k])
            assert np.array_equal(Uk[0], Ub[k]) and np.array_equal(Omk[0], Omb[k])


def test_shared_parameters_broadcast(rng):
    bodies = ulvc.ULVCBodies(1.0, [1.0, 2.0, 2.5], n=7)
    assert bodies.M.shape == (1, 6, 6) and bodies.n == 7
    s = bodies.state(Omega=rng.normal(size=(7, 3)))
    ulvc.LieGroupRK4(bodies).run(s, 0.01, 3)
    assert s.w.shape == (7, 6) and s.R.shape == (7, 3, 3)
    assert s.H.shape == (7, 4, 4) and np.array_equal(s.H[:, 3], np.tile([0, 0, 0, 1.0], (7, 1)))


# -------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mass": 0.0}, "mass"),
        ({"mass": -1.0}, "mass"),
        ({"mass": [1.0, float("nan")]}, "mass"),
        ({"inertia": [1.0, -2.0, 3.0]}, "inertia"),
        ({"inertia": [[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}, "symmetric"),
        ({"inertia": np.ones((2, 2))}, "inertia"),
        ({"l": (1.0, 0.0, 1.0)}, "l"),
        ({"l": (1.0, 1.0)}, "l"),
        ({"projection": "cube"}, "projection"),
        ({"mass": [1.0, 2.0], "l": np.ones((3, 3))}, "different numbers of bodies"),
        ({"n": 0}, "n must"),
    ],
)
def test_bad_parameters_raise(kwargs, match):
    args = {"mass": 1.0, "inertia": [1.0, 2.0, 2.5]}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ulvc.ULVCBodies(**args)


@pytest.mark.parametrize("h", [0.0, -1e-3, float("nan"), float("inf"), "x"])
def test_bad_step_raises(h):
    bodies = study.build_bodies()
    ne_state = ulvc.to_newton_euler(bodies, bodies.state())
    pairs = ((ulvc.LieGroupRK4(bodies), bodies.state()), (ulvc.NewtonEulerRK4(bodies), ne_state))
    for integ, s in pairs:
        with pytest.raises(ValueError, match="h: the time step"):
            integ.step(s, h)


def test_bad_state_and_loads_raise():
    bodies = ulvc.ULVCBodies(1.0, [1.0, 2.0, 2.5], n=2)
    with pytest.raises(ValueError, match="Omega"):
        bodies.state(Omega=np.ones((3, 3)))
    with pytest.raises(ValueError, match="points"):
        ulvc.PointLoads(force_body=np.ones((1, 3)))
    with pytest.raises(ValueError, match="at least one"):
        ulvc.PointLoads(points=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="one force per point"):
        ulvc.PointLoads(points=np.zeros((2, 3)), force_body=np.ones((1, 3)))
    with pytest.raises(ValueError, match="stages"):
        ulvc.LieGroupRK4(bodies, stages="crouch-grossman")
    with pytest.raises(ValueError, match="steps"):
        ulvc.LieGroupRK4(bodies).run(bodies.state(), 0.1, -1)
    with pytest.raises(ValueError, match="NewtonEulerState"):
        ulvc.NewtonEulerRK4(bodies).step(bodies.state(), 0.1)


# ------------------------------------------------------------------ long


@pytest.mark.long
def test_agrees_with_scipy_at_h_1e_4_over_the_whole_interval():
    """Over t ∈ [0, 1] the relative Ω error at h = 1e-4 is at the problem's round-off
    floor: of the same size as the disagreement of two SciPy solutions (rtol 1e-12 and
    2.3e-14), and well below 1e-6."""
    bodies = study.build_bodies()
    r = study.integrate(bodies, "ulvc", 1e-4)
    sp = study.scipy_reference(r["t"])
    sp2 = study.scipy_reference(r["t"], rtol=2.3e-14, atol=1e-14)
    scale_ = np.linalg.norm(sp["Omega"], axis=1)
    rel = np.linalg.norm(r["Omega"] - sp["Omega"], axis=1) / scale_
    rel_sp = np.linalg.norm(sp2["Omega"] - sp["Omega"], axis=1) / scale_
    assert rel.max() <= 1e-6
    assert rel.max() <= 10 * rel_sp.max()
    print(f"max rel |dOmega| ulvc vs SciPy: {rel.max():.3e}; SciPy vs SciPy: {rel_sp.max():.3e}")


@pytest.mark.long
def test_full_study_passes():
    """``granular validate ulvc``: the paper's sequence against h = 1e-5."""
    report = study.run(quick=False)
    print(report.text())
    failed = [c for c in report.checks if not c.passed]
    assert not failed, "\n" + report.text()


@pytest.mark.long
def test_quick_study_passes():
    report = study.run(quick=True)
    failed = [c for c in report.checks if not c.passed]
    assert not failed, "\n" + report.text()
