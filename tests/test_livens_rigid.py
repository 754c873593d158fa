"""Rigid bodies in unit quaternions with Livens' principle (paper 002, Sects. 3-5.4): the
quaternion matrices, EML (86)-(93), REML (101)-(103), Null-EML (104)-(105) and the
comparators MPL, EMH, MPH of Table 1. Free body 5.3 and heavy top 5.4 against exact
invariants, SciPy and the analytic steady precession; batched against alone; Newton
failure and input errors."""

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies.livens import rigid as lr
from granular.bodies.livens.comparators import EMH, MPH, MPL, omega_tilde
from granular.bodies.livens.rigid import EML, REML, NullEML
from granular.bodies.newton import NewtonError
from granular.validation import livens as study
from tests.reference_bodies import livens_array as ref

SCHEMES = [EML, REML, NullEML, MPL, EMH, MPH]


def _unit(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _fd(f, x, eps=1e-6):
    """Central differences of f: (..., k) → (..., m) at x: (..., m, k)."""
    cols = []
    for j in range(x.shape[-1]):
        e = np.zeros(x.shape[-1])
        e[j] = eps
        cols.append((f(x + e) - f(x - e)) / (2 * eps))
    return np.stack(cols, axis=-1)


def test_quaternion_matrices(rng):
    """(35), (43), (46), (50), (64), (126): R = E Gᵀ equals the engine's rotation on S³;
    Ω = 2 G(q) q̇ for q̇ = ½ q ⊗ (0, Ω); M4 has rank 3 with null vector q; L = ½ E p = R J Ω;
    G(q) v = -G(v) q; the bar matrices; the point Jacobian and Hessian."""
    q, W = _unit(rng, 6), rng.normal(size=(6, 3))
    np.testing.assert_allclose(lr.rotation_matrix(q), rot.quat_to_matrix(q), atol=1e-15)
    qdot = 0.5 * rot.quat_multiply(q, np.concatenate([np.zeros((6, 1)), W], 1))
    np.testing.assert_allclose(lr.velocity_from_body_rate(q, W), qdot, atol=1e-15)
    np.testing.assert_allclose(lr.body_angular_velocity(q, qdot), W, atol=1e-14)
    R = rot.quat_to_matrix(q)
    np.testing.assert_allclose(lr.spatial_angular_velocity(q, qdot), (R @ W[..., None])[..., 0], atol=1e-14)
    J = np.diag([1.0, 2.0, 3.5])
    M4 = lr.quat_mass_matrix(q, J)
    assert (np.linalg.matrix_rank(M4) == 3).all()
    assert abs((M4 @ q[..., None])[..., 0]).max() < 1e-14
    p = (M4 @ qdot[..., None])[..., 0]
    np.testing.assert_allclose(lr.spatial_angular_momentum(q, p), (R @ J @ W[..., None])[..., 0], atol=1e-13)
    a, v, w = rng.normal(size=(3, 6, 4))
    np.testing.assert_allclose(lr.quat_G(a) @ v[..., None], -(lr.quat_G(v) @ a[..., None]), atol=1e-15)
    x3 = w[:, :3]
    np.testing.assert_allclose(lr.quat_G(a).swapaxes(1, 2) @ x3[..., None], lr.quat_bar(x3) @ a[..., None], atol=1e-15)
    np.testing.assert_allclose(lr.quat_E(a).swapaxes(1, 2) @ x3[..., None], lr.quat_ebar(x3) @ a[..., None], atol=1e-15)
    np.testing.assert_allclose(lr.quat_right(a) @ v[..., None], rot.quat_multiply(v, a)[..., None], atol=1e-15)
    X, lam = rng.normal(size=(2, 6, 3))
    Pn = _fd(lambda qq: lr.point_position(qq, X), a)
    np.testing.assert_allclose(lr.point_jacobian(a, X), Pn, atol=1e-8)
    Hn = _fd(lambda qq: (lam[:, None, :] @ lr.point_jacobian(qq, X))[:, 0], a)
    np.testing.assert_allclose(lr.point_hessian(lam, X), Hn, atol=1e-8)


def test_exponential_map_and_its_jacobian(rng):
    d = rng.normal(size=(6, 3))
    th = d / np.linalg.norm(d, axis=1, keepdims=True) * np.array([1e-9, 1e-3, 0.04, 0.06, 1.0, 3.0])[:, None]
    q = lr.exp_increment(th)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(rot.quat_to_rotvec(q), th, rtol=1e-12, atol=1e-20)
    np.testing.assert_allclose(lr.exp_increment_jacobian(th), _fd(lr.exp_increment, th, 1e-7), atol=1e-8)


def _heavy_top_random(rng, n, cls=EML, backend=None, rtol=1e-10):
    """Heavy tops with random SPD inertia, mass, centre of mass, orientation and ω."""
    A = rng.normal(size=(n, 3, 3))
    J = (A @ A.swapaxes(1, 2) + 0.5 * np.eye(3)) * 1e-3
    m = rng.uniform(0.2, 1.5, n)
    X = rng.normal(size=(n, 3)) * 0.05
    q = _unit(rng, n)
    w = rng.normal(size=(n, 3)) * 20.0
    kw = {} if backend is None else {"backend": backend}
    xp = np if backend is None else backend.xp
    sch = cls(xp.asarray(J), mass=xp.asarray(m), center_of_mass=xp.asarray(X), gravity=[0.0, 0.0, -9.81], rtol=rtol, **kw)
    return sch, sch.state(xp.asarray(q), omega=xp.asarray(w)), xp.asarray(q), xp.asarray(w)


@pytest.mark.parametrize("cls", SCHEMES)
def test_analytic_jacobian_matches_finite_differences(cls, rng):
    """The analytic Jacobian of each scheme (array reference, the same formulas as the
    kernels of kernels/bodies_livens.py, which reproduce its Newton iteration counts)."""
    sch, s, _, _ = _heavy_top_random(rng, 5, getattr(ref, cls.__name__))
    sch.run(s, 0.004, 2)
    fun, x0 = sch.newton_system(s, 0.004)
    x = x0 + 1e-3 * rng.normal(size=x0.shape)
    Ja = fun(x)[1].copy()
    Jn = np.zeros_like(Ja)
    for j in range(x.shape[1]):
        xp_, xm = x.copy(), x.copy()
        xp_[:, j] += 1e-7
        xm[:, j] -= 1e-7
        Jn[:, :, j] = (fun(xp_)[0].copy() - fun(xm)[0].copy()) / 2e-7
    np.testing.assert_allclose(Ja, Jn, atol=2e-7 * abs(Ja).max())


@pytest.fixture(scope="module")
def free_runs():
    return {k: study.free_body(k) for k in ("EML", "REML", "Null-EML")}


def test_free_body_invariants(free_runs):
    """5.3, Figs. 6-8: generalized energy, |q| = 1 and the three components of the spatial
    angular momentum conserved to <= 1e-12 by EML, REML and Null-EML; the total energy
    (80) is not (Fig. 7)."""
    for k, r in free_runs.items():
        assert study.increments(r["E"]) < 1e-12, k
        assert abs(r["unity"]).max() < 1e-12, k
        assert study.increments(r["L"]) < 1e-12, k
        assert abs(r["Etot"] / r["Etot"][0] - 1).max() > 1e-3, k
    L0 = free_runs["EML"]["L"][0]
    np.testing.assert_allclose(L0, np.diag(study.FREE_J) @ study.FREE_OMEGA0, rtol=1e-14)


def test_reduced_variants_reproduce_eml(free_runs):
    """REML and Null-EML give EML's trajectory (q, v, p, λ) to the Newton tolerance."""
    ref = free_runs["EML"]
    for k in ("REML", "Null-EML"):
        for key in ("q", "v", "p", "lam"):
            dev = np.abs(free_runs[k][key] - ref[key]).max() / np.abs(ref[key]).max()
            assert dev < 1e-9, (k, key, dev)


def test_free_body_order_2_against_scipy():
    """EML converges with order 2 to SciPy DOP853 on Euler's equations."""
    conv = study.free_body_convergence(hs=(0.01, 0.005, 0.0025), t_end=0.5)
    assert abs(conv["order"] - 2.0) < 0.1, conv
    assert conv["error"][-1] < 0.05


def test_null_eml_also_converges_to_scipy():
    R_ref, W_ref = study.euler_reference(0.5)
    errs = []
    for h in (0.01, 0.005):
        r = study.free_body("Null-EML", h, 0.5)
        errs.append(np.linalg.norm(lr.rotation_matrix(r["q"][-1]) - R_ref))
    assert 3.5 < errs[0] / errs[1] < 4.5


def test_midpoint_velocity_constraint_remark_4_8(free_runs):
    """(94): q̄·v̄ = 0 at the midpoints to round-off; at the nodes q·v ≠ 0 in general (95)."""
    r = free_runs["EML"]
    q, v = r["q"], r["v"]
    mid = ((0.5 * (q[1:] + q[:-1])) * (0.5 * (v[1:] + v[:-1]))).sum(-1)
    assert abs(mid).max() < 1e-12
    assert abs((q * v).sum(-1)).max() > 1e-3


def test_parasitic_node_velocity_mode():
    """Measured property (module docstring): the node values q·v alternate in sign from step
    to step and grow (h = 0.05: max |q·v| in the 3rd second > 2 × in the 1st), while the
    midpoint motion stays on the trajectory (order-2 tests above)."""
    r = study.parasitic_mode(0.05, 3.0)
    assert r["failed_at"] is None
    qv = np.array([(a * b).sum() for a, b in zip(*(study.free_body("EML", 0.05, 3.0)[k][1:] for k in ("q", "v")))])
    late = qv[len(qv) // 2 :]
    assert (np.sign(late[1:]) != np.sign(late[:-1])).mean() > 0.9
    first, third = r["qv"][r["t"] <= 1.0].max(), r["qv"][r["t"] > 2.0].max()
    assert third > 2.0 * first > 1.0


@pytest.fixture(scope="module")
def top_convergence():
    return study.heavy_top_convergence()


def test_heavy_top_convergence_orders_and_ranking(top_convergence):
    """5.4, Fig. 13: order 2 at t = 0.1 against (120) for EML, MPL, EMH, MPH; errors
    MPL < EML < EMH, MPH at every h (the paper: MPL lowest, Livens below Hamiltonian)."""
    c = top_convergence
    for k in ("EML", "MPL", "EMH", "MPH"):
        assert abs(c["order_fine"][k] - 2.0) < 0.1, (k, c["error"][k])
        assert abs(c["order"][k] - 2.0) < 0.2, (k, c["error"][k])
    e = c["error"]
    for i in range(len(c["h"])):
        assert e["MPL"][i] < e["EML"][i] < min(e["EMH"][i], e["MPH"][i])


def test_heavy_top_invariants():
    """5.4, Figs. 10-11: EML conserves (74) and the vertical angular momentum to round-off;
    EMH its Hamiltonian; MPL and MPH do not conserve their energies; L1, L2 vary."""
    runs = {k: study.heavy_top_run(k, t_end=0.5) for k in ("EML", "MPL", "EMH", "MPH")}
    scale = np.abs(runs["EML"]["L"][0]).max()
    assert study.increments(runs["EML"]["E"]) < 1e-12
    assert study.increments(runs["EMH"]["E"]) < 1e-12
    assert study.increments(runs["EML"]["L"][:, 2], scale) < 1e-13
    assert study.increments(runs["MPL"]["E"]) > 1e-6 and study.increments(runs["MPH"]["E"]) > 1e-6
    assert np.ptp(runs["EML"]["L"][:, 0]) > 1e-2 * scale


def test_steady_precession_initial_state_is_consistent():
    """(117)-(119): ω(0) = ω_p e3 + ω_s d3; Ω3 = ω_s + ω_p cos θ0; the spin satisfies the
    steady-precession balance m g l = ω_p (J3 Ω3 - J1 ω_p cos θ0)."""
    P = study.heavy_top_parameters()
    sch, s = study.heavy_top("EML")
    W = sch.body_angular_velocity(s)[0]
    assert abs(W[2] - (P["omega_s"] + P["omega_p"] * np.cos(P["theta0"]))) < 1e-12
    lhs = P["m"] * P["g"] * P["l"]
    rhs = P["omega_p"] * (P["J3"] * W[2] - P["J1"] * P["omega_p"] * np.cos(P["theta0"]))
    assert abs(lhs - rhs) < 1e-12 * lhs
    np.testing.assert_allclose(sch.center_of_mass_position(s)[0], study.precession_reference(0.0)[0], atol=1e-15)


def test_hamiltonian_comparators_use_regularised_mass_matrix(rng):
    """EMH/MPH: T*(q, p) = ½ ω̃ᵀ W ω̃ equals ½ Ωᵀ J Ω on S³ with p = M̄ v,
    M̄ = M4 + 2 tr(J) q qᵀ; the node velocity is ∂_p H."""
    sch, s, _, _ = _heavy_top_random(rng, 4, EMH)
    T = sch.kinetic_energy(s)
    w = omega_tilde(s.q, s.p)
    np.testing.assert_allclose(0.5 * (w * (sch.W @ w[..., None])[..., 0]).sum(-1), T, rtol=1e-13)
    trJ = np.trace(sch.J, axis1=1, axis2=2)[:, None, None]
    Mbar = lr.quat_mass_matrix(s.q, sch.J) + 2 * trJ * np.einsum("bi,bj->bij", s.q, s.q)
    v = np.linalg.solve(Mbar, s.p[..., None])[..., 0]
    np.testing.assert_allclose(v, sch.hamiltonian_velocity(s.q, s.p), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", SCHEMES)
def test_batched_equals_alone(cls, backend, rng):
    """1000 heavy tops with random inertia, mass, centre of mass, orientation and ω in one
    batch give each top's trajectory alone to 1e-12 (a random sample of 25 here; all 1000
    in the long test)."""
    n, steps, h = (1000, 8, 0.004) if backend.name == "cpu" else (16, 4, 0.004)  # the simulator runs Python
    sch, s, q0, w0 = _heavy_top_random(rng, n, cls, backend)
    sch.run(s, h, steps)
    qB, pB = backend.to_host(s.q), backend.to_host(s.p)
    for b in rng.choice(n, min(n, 25), replace=False):
        sl = slice(int(b), int(b) + 1)
        one = cls(sch.J[sl], mass=sch.mass[sl], center_of_mass=sch.center_of_mass[sl], gravity=[0.0, 0.0, -9.81],
                  backend=backend)  # fmt: skip
        s1 = one.state(q0[sl], omega=w0[sl])
        one.run(s1, h, steps)
        assert np.abs(backend.to_host(s1.q)[0] - qB[b]).max() <= 1e-12
        assert np.abs(backend.to_host(s1.p)[0] - pB[b]).max() <= 1e-12 * max(1.0, np.abs(pB[b]).max())


@pytest.mark.long
def test_batched_equals_alone_all_1000():
    from granular.backend import get_backend

    be = get_backend("cpu")
    n, steps, h = 1000, 8, 0.004
    for cls in SCHEMES:
        sch, s, q0, w0 = _heavy_top_random(np.random.default_rng(7), n, cls)
        sch.run(s, h, steps)
        worst = 0.0
        for b in range(n):
            sl = slice(b, b + 1)
            one = cls(sch.J[sl], mass=sch.mass[sl], center_of_mass=sch.center_of_mass[sl], gravity=[0, 0, -9.81], backend=be)
            s1 = one.state(q0[sl], omega=w0[sl])
            one.run(s1, h, steps)
            worst = max(worst, np.abs(s1.q[0] - s.q[b]).max(), np.abs(s1.p[0] - s.p[b]).max() / max(1, np.abs(s.p[b]).max()))
        assert worst <= 1e-12, cls.__name__


@pytest.mark.parametrize("cls", SCHEMES)
def test_newton_failure_names_body_and_step(cls):
    """A step far too large for body 1 (|Ω| ≈ 3700 rad/s, h = 0.05: 190 rad per step)
    raises NewtonError naming body 1 and step 1; the state is left untouched."""
    sch = cls(np.diag([6.0, 8.0, 3.0]), n=3)
    s = sch.state(np.tile([1.0, 0, 0, 0], (3, 1)), Omega=[[10, 20, 20], [3000, 1000, -2000], [1, 2, 3]])
    keep = s.copy()
    with pytest.raises(NewtonError) as exc:
        sch.step(s, 0.05)
    assert exc.value.body == 1
    assert exc.value.step == 1 and exc.value.iterations >= 1 and exc.value.reason
    assert "body 1" in str(exc.value) and "step 1" in str(exc.value) and sch.name in str(exc.value)
    assert s.step == 0 and np.array_equal(s.q, keep.q) and np.array_equal(s.p, keep.p)


def test_bad_input_raises():
    J = np.diag([6.0, 8.0, 3.0])
    with pytest.raises(ValueError, match="positive definite"):
        EML(np.diag([1.0, -1.0, 1.0]), n=1)
    with pytest.raises(ValueError, match="symmetric"):
        EML(J + np.triu(np.ones((3, 3)), 1), n=1)
    with pytest.raises(ValueError, match="n: the number of bodies"):
        EML(J)
    with pytest.raises(ValueError, match=r"inertia must have shape"):
        EML(np.eye(4), n=1)
    with pytest.raises(ValueError, match="mass must be >= 0"):
        EML(J, n=1, mass=-1.0)
    em = EML(J, n=1)
    with pytest.raises(ValueError, match="not a unit quaternion"):
        em.state([1.0, 0.1, 0.0, 0.0], Omega=[1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="exactly one of Omega"):
        em.state([1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="exactly one of Omega"):
        em.state([1.0, 0.0, 0.0, 0.0], Omega=[1.0, 0, 0], omega=[1.0, 0, 0])
    s = em.state([1.0, 0.0, 0.0, 0.0], Omega=[1.0, 0, 0])
    with pytest.raises(ValueError, match="h: the time step"):
        em.step(s, -0.01)
    with pytest.raises(ValueError, match="state: q has shape"):
        EML(J, n=2).step(s, 0.01)
    with pytest.raises(ValueError, match="max_iter"):
        EML(J, n=1, max_iter=0)
