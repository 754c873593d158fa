"""Rolling ball actuated by internal point masses (paper 004): the reduced equations
against (B.8) written out, closed-form solutions, energy conservation and the energy
balance with moving masses (order 4 of RK4), the rolling disk, the constrained
Newton-Euler equations by SciPy, the integrators, batched vs alone, and input errors."""

import math

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies.rolling_ball import rails as R
from granular.bodies.rolling_ball.ball import RollingBall
from granular.bodies.rolling_ball.disk import RollingDisk, RollingDiskRK4
from granular.bodies.rolling_ball.integrators import RK4, DormandPrince
from granular.bodies.rolling_ball.reference import newton_euler_reference
from granular.particles import diagnostics as diag
from granular.particles.integrators import IntegrationError, NonFiniteError
from granular.validation import rollingball as study

pytest.importorskip("scipy.integrate")
E3 = np.array([0.0, 0.0, 1.0])


def hat(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def run_rk4(system, state, h, t_end):
    scheme = RollingDiskRK4(system) if isinstance(system, RollingDisk) else RK4(system)
    return scheme.run(state.copy(), h, int(round(t_end / h)))


# --------------------------------------------------------------- the equations


def test_omega_dot_satisfies_B8_written_out(rng):
    """Ω̇ from the solved form (B.9)-(B.10) makes the residual of (B.8), evaluated term by
    term as printed, vanish; and (B.10) is ŝ²."""
    ball, st = study.scene_random()
    for _ in range(5):
        q = rot.quat_from_rotvec(rng.normal(size=3))
        y = ball.state(Omega=rng.normal(size=3), q=q, xy=rng.normal(size=2), track_work=True).y
        t = float(rng.uniform(0, 5))
        Omd = ball.omega_dot(t, y)[0]
        Om, Gam = y[0, 0:3], y[0, 3:6]
        mk = ball.mass_kinematics(t)
        chis = [np.asarray(ball.shell_com[0])] + list(mk.chi[0])
        dchis = [np.zeros(3)] + list(mk.dchi[0])
        ddchis = [np.zeros(3)] + list(mk.ddchi[0])
        ms = [float(ball.shell_mass[0])] + list(ball.masses[0])
        Ib = ball.inertia[0]
        Gt = rot.quat_rotate(rot.quat_conjugate(q), study.external_force_wave(t))
        r, g = study.RADIUS, study.GRAVITY
        res = Ib @ Omd + np.cross(Om, Ib @ Om) + r * np.cross(Gt, Gam)
        for m, chi, dchi, ddchi in zip(ms, chis, dchis, ddchis):
            s = r * Gam + chi
            inner = g * Gam + np.cross(Omd, s) + np.cross(Om, np.cross(Om, chi) + 2 * dchi) + ddchi
            res = res + m * np.cross(s, inner)
            v = s
            B10 = np.array([[-(v[1] ** 2 + v[2] ** 2), v[0] * v[1], v[0] * v[2]],
                            [v[0] * v[1], -(v[0] ** 2 + v[2] ** 2), v[1] * v[2]],
                            [v[0] * v[2], v[1] * v[2], -(v[0] ** 2 + v[1] ** 2)]])  # fmt: skip
            assert np.abs(B10 - hat(v) @ hat(v)).max() < 1e-15
        assert np.abs(res).max() < 1e-13 * max(1.0, np.abs(Omd).max())


def test_kinematics_columns_of_rhs(rng):
    """Γ̇ = Γ × Ω (A.13), q̇ = ½ q Ω^♯ (D.21), ż = r ω × e3, work columns = powers."""
    ball, st = study.scene_random()
    y = st.y.copy()
    y[0, 0:3] = rng.normal(size=3)
    f = ball.rhs(0.7, y)[0]
    q, Om, Gam = y[0, 6:10], y[0, 0:3], y[0, 3:6]
    assert np.abs(f[3:6] - np.cross(Gam, Om)).max() < 1e-15
    assert np.abs(f[6:10] - 0.5 * rot.quat_multiply(q, np.r_[0.0, Om])).max() < 1e-15
    w = rot.quat_to_matrix(q) @ Om
    assert np.abs(f[10:13] - study.RADIUS * np.cross(w, E3)).max() < 1e-15
    assert f[12] == 0.0
    assert f[13] == pytest.approx(float(ball.actuation_power(0.7, y)[0]), rel=1e-14)
    F_i, Q_i = ball.rail_forces(0.7, y)
    mk = ball.mass_kinematics(0.7)
    assert f[13] == pytest.approx(float((Q_i * mk.theta_dot).sum()), rel=1e-12)
    zdot = f[10:13]
    assert f[14] == pytest.approx(float(study.external_force_wave(0.7) @ zdot), rel=1e-13)


def test_uniform_rolling_of_a_symmetric_ball_is_exact():
    """No masses, χ0 = 0, isotropic 𝕀: Ω is constant, the centre moves on a straight line
    at r ω × e3 and a vertical spin stays in place (closed form)."""
    ball = RollingBall(0.7, 2.0, (0.5, 0.5, 0.5), gravity=9.81, n=2)
    st = ball.state(Omega=[[1.3, -0.4, 0.0], [0.0, 0.0, 2.0]])
    s = run_rk4(ball, st, 0.01, 3.0)
    assert np.abs(s.Omega - st.Omega).max() < 1e-14  # body Ω of a rolling sphere: constant
    # Ω horizontal about a fixed spatial axis: ω = Ω (the axis is fixed), z = r ω × e3 t
    assert np.abs(s.position[0] - [0.7 * -0.4 * 3.0, -0.7 * 1.3 * 3.0, 0.7]).max() < 1e-13
    assert np.abs(s.position[1] - [0.0, 0.0, 0.7]).max() == 0
    q_exact = rot.quat_from_rotvec(np.array([1.3, -0.4, 0.0]) * 3.0)  # Λ = exp(t Ω̂)
    assert float(rot.quat_angle_between(s.q[0], q_exact)) < 1e-9  # RK4 error of the exponential


def test_small_rocking_period_of_an_offset_centre_of_mass():
    """χ0 = (0, 0, -l), no masses: small planar rocking with
    ω² = m0 g l / (𝕀22 + m0 (r - l)²) (inertia about the contact point)."""
    r, m0, g, l, I2 = 1.0, 1.0, 9.81, 0.3, 0.4
    ball = RollingBall(r, m0, (0.4, I2, 0.5), shell_com=(0.0, 0.0, -l), gravity=g)
    eps = 1e-3
    st = ball.state(Omega=(0.0, eps, 0.0))
    w = math.sqrt(m0 * g * l / (I2 + m0 * (r - l) ** 2))
    h, T = 4e-3, 2 * math.pi / w
    s = st.copy()
    rows = []
    RK4(ball).run(s, h, int(1.3 * T / h), callback=lambda x: rows.append((x.t, x.Omega[0, 1])))
    t, om = np.array(rows).T
    i = np.nonzero((om[:-1] < 0) & (om[1:] >= 0))[0][0]  # the upward zero crossing after a half period
    tc = t[i] - om[i] * (t[i + 1] - t[i]) / (om[i + 1] - om[i])
    # Ω2 starts at +eps (a maximum); it crosses zero upward at 3/4 of the period
    assert tc == pytest.approx(0.75 * T, rel=1e-5)


def test_contact_force_of_a_ball_at_rest():
    still = RollingBall(1.0, 1.0, (0.6, 0.6, 0.6), masses=[0.3], rails=[R.CircleRail(0.8)],
                        actuations=[R.at_rest(-math.pi / 2)], gravity=2.0)  # fmt: skip
    st = still.state()
    lam = still.contact_force(0.0, st.y)[0]
    assert np.abs(lam - [0.0, 0.0, 2.0 * 1.3]).max() < 1e-15
    assert np.abs(still.omega_dot(0.0, st.y)).max() < 1e-16  # cos(-π/2) = 6e-17


# ---------------------------------------------------------- energy and work


def test_energy_conserved_at_order_4_with_masses_at_rest():
    ball, st = study.scene_at_rest()
    E0 = float(ball.energy(0.0, st.y)[0])
    hs, errs = [0.08, 0.04, 0.02], []
    for h in hs:
        tr = study.integrate(ball, st, h, 2.4)
        errs.append(np.abs(tr["E"] - E0).max() / E0)
    assert 3.7 < diag.convergence_order(hs, errs) < 4.4
    assert errs[-1] < 1e-9
    s = run_rk4(ball, st, 0.02, 2.4)
    inv = ball.invariants(s)
    assert abs(float(inv["quat_norm"][0])) < 1e-15
    assert float(inv["gamma_vs_q"][0]) < 1e-8 and abs(float(inv["gamma_norm"][0])) < 1e-8
    assert float(inv["height"][0]) == 0.0
    assert np.abs(s.work_actuation).max() == 0  # the masses do not move: no actuation work


def test_energy_balance_with_moving_masses_order_4_and_newton_euler_work():
    ball, st, _ = study.scene_orthogonal()
    E0 = float(ball.energy(0.0, st.y)[0])
    hs, errs = [0.08, 0.04, 0.02], []
    for h in hs:
        tr = study.integrate(ball, st, h, 2.4)
        errs.append(np.abs(tr["E"] - E0 - tr["y"][:, 13]).max() / E0)
    assert 3.7 < diag.convergence_order(hs, errs) < 4.4
    s = run_rk4(ball, st, 0.005, 2.0)
    dE = float(ball.energy(s.t, s.y)[0]) - E0
    assert abs(dE) > 1e-3  # the masses do pump energy in or out
    ref = newton_euler_reference(ball, st.y[0], [0.0, 1.0, 2.0])
    assert abs(dE - ref["work_actuation"][-1]) < 1e-10
    # the reference's own energy, from spatial velocities, balances its own work
    assert np.abs(ref["energy"] - ref["energy"][0] - ref["work_actuation"]).max() < 1e-10


def test_external_force_work_and_direction():
    """A horizontal push at the centre accelerates a symmetric ball along it, and its work
    F·Δz equals the energy gained."""
    F = np.array([0.3, 0.0, 0.0])
    ball = RollingBall(1.0, 1.0, (0.4, 0.4, 0.4), external_force=F, gravity=1.0)
    st = ball.state(track_work=True)
    s = run_rk4(ball, st, 0.01, 2.0)
    # solid-ball translation: (m + I/r²) a = F
    a = 0.3 / (1.0 + 0.4)
    assert s.position[0, 0] == pytest.approx(0.5 * a * 4.0, rel=1e-10)
    assert abs(s.position[0, 1]) < 1e-15
    E = float(ball.energy(s.t, s.y)[0]) - float(ball.energy(0.0, st.y)[0])
    assert s.work_external[0] == pytest.approx(0.3 * s.position[0, 0], rel=1e-10)
    assert E == pytest.approx(float(s.work_external[0]), rel=1e-10)


# ------------------------------------------------------------ rolling disk


def test_planar_ball_equals_rolling_disk(rng):
    ball, st = study.scene_planar()
    disk = RollingDisk.from_ball(ball)
    for _ in range(10):
        ds = disk.state(psi=rng.uniform(-4, 4), psi_dot=rng.normal(), x=rng.normal())
        t = float(rng.uniform(0, 5))
        bs = disk.ball_state(ball, ds)
        Omd = ball.omega_dot(t, bs.y)[0]
        assert abs(Omd[1] - float(disk.psi_ddot(t, ds.y)[0])) < 1e-14 * max(1, abs(Omd[1]))
        assert abs(Omd[0]) < 1e-15 and abs(Omd[2]) < 1e-15
        assert float(ball.energy(t, bs.y)[0]) == pytest.approx(float(disk.energy(t, ds.y)[0]), rel=1e-14)
    ds = disk.state(psi=0.0, psi_dot=0.5, x=0.2)
    sb, sd = run_rk4(ball, st, 1e-3, 1.0), run_rk4(disk, ds, 1e-3, 1.0)
    psi = 2 * math.atan2(float(sb.q[0, 2]), float(sb.q[0, 0]))
    assert abs(psi - float(sd.y[0, 0])) < 1e-10
    assert abs(float(sb.Omega[0, 1] - sd.y[0, 1])) < 1e-10 and abs(float(sb.position[0, 0] - sd.y[0, 2])) < 1e-10
    assert np.abs(sb.y[0, [0, 2, 4, 7, 9, 11]]).max() == 0  # stays in the plane


def test_rolling_disk_refuses_non_planar_setups():
    with pytest.raises(ValueError, match=r"rails\[0\]"):
        RollingDisk(1.0, 1.0, 0.5, masses=[0.1], rails=[R.CircleRail(0.5, u=(0.0, 1.0, 0.0))],
                    actuations=[R.at_rest(0.0)])  # fmt: skip
    ball = RollingBall(1.0, 1.0, [[0.5, 0.01, 0], [0.01, 0.5, 0], [0, 0, 0.5]])
    with pytest.raises(ValueError, match="inertia"):
        RollingDisk.from_ball(ball)
    with pytest.raises(ValueError, match="shell_com"):
        RollingDisk.from_ball(RollingBall(1.0, 1.0, 0.5 * np.ones(3), shell_com=(0.0, 0.1, 0.0)))


# ------------------------------------------------------- independent cross-check


def test_newton_euler_scipy_agrees_with_reduced_equations_on_a_random_rail():
    ball, st = study.scene_random(seed=7)
    tr = study.integrate(ball, st, 0.0025, 2.0, every=40)
    ref = newton_euler_reference(ball, st.y[0], tr["t"], rtol=1e-12, atol=1e-12)
    y = tr["y"]
    assert np.abs(y[:, 0:3] - ref["Omega"]).max() < 1e-8
    assert np.abs(y[:, 10:13] - ref["position"]).max() < 1e-8
    assert rot.quat_angle_between(y[:, 6:10] / np.linalg.norm(y[:, 6:10], axis=1, keepdims=True),
                                  ref["q"]).max() < 1e-8  # fmt: skip
    assert np.abs(y[:, 13] - ref["work_actuation"]).max() < 1e-8
    assert np.abs(y[:, 14] - ref["work_external"]).max() < 1e-8
    assert ref["slip"].max() < 1e-12 and ref["normal_force"].min() > 0
    assert np.ptp(y[:, 0]) > 0.05  # a non-trivial motion


# ------------------------------------------------------------- integrators


def test_batched_equals_alone_rk4_and_dormand_prince(backend):
    # the CUDA simulator runs each ball's law as Python: a short run there
    size = {"n": 2, "steps": 3, "t_dp": 0.02} if backend.simulated else {"n": 4, "steps": 30, "t_dp": 0.5}
    out = study.batch_vs_alone(backend=backend, **size)
    assert out["rk4"] <= 1e-14 and out["dp"] <= 1e-14


def test_dormand_prince_tolerance_and_output_times():
    ball, st = study.scene_random(seed=3)
    ref = run_rk4(ball, st, 0.002, 2.0).y[0]
    errs = []
    for rtol in (1e-6, 1e-9):
        dp = DormandPrince(ball, rtol=rtol, atol=rtol * 1e-2)
        seen = []
        s = dp.integrate(dp.adaptive(st), [0.5, 1.0, 2.0], callback=lambda x: seen.append(x.t))
        assert seen == [0.5, 1.0, 2.0] and s.t == 2.0 and s.step == 3
        assert s.accepted[0] > 0
        assert abs(float(np.linalg.norm(s.q[0])) - 1) < 1e-15
        errs.append(np.abs(s.y[0, :13] - ref[:13]).max())
    assert errs[1] < errs[0] / 100 and errs[1] < 1e-7


def test_dormand_prince_per_ball_steps_differ():
    """Two balls, one quiet and one fast: each takes the steps it needs."""
    ball = RollingBall(1.0, 1.0, (0.6, 0.65, 0.7), shell_com=(0, 0, -0.1), gravity=1.0, n=2)
    st = ball.state(Omega=[[0.01, 0.0, 0.0], [3.0, -2.0, 5.0]])
    dp = DormandPrince(ball, rtol=1e-9, atol=1e-12)
    st = dp.step(dp.adaptive(st), 2.0)
    acc = st.accepted
    assert acc[1] > 3 * acc[0]


def test_integrator_errors():
    ball, st, _ = study.scene_circle()
    with pytest.raises(ValueError, match="h"):
        RK4(ball).step(st, 0.0)
    with pytest.raises(ValueError, match="steps"):
        RK4(ball).run(st, 0.1, -1)
    with pytest.raises(ValueError, match="AdaptiveBallState"):
        DormandPrince(ball).step(st, 1.0)
    with pytest.raises(ValueError, match="h"):
        DormandPrince(ball).step(DormandPrince(ball).adaptive(st), -1.0)
    with pytest.raises(ValueError, match="rtol"):
        DormandPrince(ball, rtol=0)
    with pytest.raises(ValueError, match="times"):
        DormandPrince(ball).integrate(DormandPrince(ball).adaptive(st), [0.5, 0.4, 1.0])
    with pytest.raises(IntegrationError, match="max_steps") as exc:
        dp = DormandPrince(ball, max_steps=3)
        s = dp.adaptive(st)
        dp.step(s, 10.0)
    assert exc.value.body == 0 and exc.value.quantity == "max_steps" and s.t == st.t
    with pytest.raises(ValueError, match="CurveRail"):
        RK4(RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), masses=[0.1], rails=[R.CurveRail(*[lambda th: 0 * th] * 3)],
                        actuations=[R.at_rest(0.0)]))  # fmt: skip


def test_non_finite_state_raises_naming_the_ball_and_leaves_state_unchanged():
    def force(t):
        bad = np.where(np.asarray(t) > 0.05, np.nan, 0.0)
        return np.stack([bad * np.ones(2), np.zeros(2), np.zeros(2)], axis=-1)

    ball = RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), external_force=force, n=2)
    st = ball.state(Omega=(0.1, 0.2, 0.3))
    RK4(ball).run(st, 0.01, 5)
    before = st.y.copy()
    with pytest.raises(NonFiniteError, match="body 0") as exc:
        RK4(ball).step(st, 0.01)
    assert exc.value.particle == exc.value.body == 0 and exc.value.step == 6
    assert st.t == pytest.approx(0.05) and np.array_equal(st.y, before)
    with pytest.raises(ValueError, match="external_force"):
        DormandPrince(ball)  # a Python callable cannot run in the adaptive kernel
    free = RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), n=2)
    dp = DormandPrince(free)
    s = dp.state(Omega=(0.1, 0.2, 0.3))
    s.y[1, 0] = np.nan
    with pytest.raises(NonFiniteError, match="body 1"):
        dp.step(s, 1.0)
    assert s.t == 0.0 and np.isnan(s.y[1, 0])


# ------------------------------------------------------------ input errors


def test_model_input_errors():
    rails, acts = [R.CircleRail(0.5)], [R.at_rest(0.0)]
    with pytest.raises(ValueError, match="inertia"):
        RollingBall(1.0, 1.0, (0.5, -0.1, 0.5))
    with pytest.raises(ValueError, match="inertia"):
        RollingBall(1.0, 1.0, [[1, 0.5, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="radius"):
        RollingBall(0.0, 1.0, (0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="masses"):
        RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), masses=[0.1, 0.2], rails=rails, actuations=acts)
    with pytest.raises(ValueError, match="actuations"):
        RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), masses=[0.1], rails=rails, actuations=[])
    with pytest.raises(ValueError, match=r"rails\[0\]"):
        RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), masses=[0.1], rails=["circle"], actuations=acts)
    with pytest.raises(ValueError, match="gravity"):
        RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), gravity=float("nan"))
    with pytest.raises(ValueError, match="rows"):
        RollingBall([1.0, 1.0], [1.0, 1.0, 1.0], (0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="n:"):
        RollingBall([1.0, 1.0], 1.0, (0.5, 0.5, 0.5), n=3)
    ball = RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), n=2)
    with pytest.raises(ValueError, match="q"):
        ball.state(q=(1.0, 0.1, 0.0, 0.0))
    with pytest.raises(ValueError, match="Omega"):
        ball.state(Omega=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="y"):
        ball.rhs(0.0, np.zeros((2, 12)))
    f = RollingBall(1.0, 1.0, (0.5, 0.5, 0.5), external_force=lambda t: np.zeros(2))
    with pytest.raises(ValueError, match="external_force"):
        f.rhs(0.0, f.state().y)
