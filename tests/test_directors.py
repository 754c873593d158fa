"""Standard rigid body in directors (paper 000, (56)-(67)) and its energy-momentum scheme
(85)-(91): inertia conversion (111), kinematic identities, exact conservation of K and π,
order 2 against SciPy on Euler's equations, analytic Jacobian, input errors."""

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies.directors import schemes as dirs
from granular.bodies.directors.dla import DirectorDLA
from granular.bodies.directors.schemes import DirectorEM, ExternalMoment
from granular.particles import diagnostics as diag
from tests.reference_bodies import directors_array as ref

solve_ivp = pytest.importorskip("scipy.integrate").solve_ivp

J111 = np.array([[3.0, -1.0 / 7.0, 0.0], [-1.0 / 7.0, 4.0, 0.0], [0.0, 0.0, 5.0]])


def random_inertia(rng, n):
    """Random convected inertia tensors J = tr(𝒥) I - 𝒥 with SPD Euler coefficients 𝒥."""
    A = rng.normal(size=(n, 3, 3))
    return dirs.inertia_from_euler(A @ A.swapaxes(1, 2) + 0.5 * np.eye(3))


def random_rotations(rng, n):
    q = rng.normal(size=(n, 4))
    return rot.quat_to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True))


def test_inertia_and_euler_coefficients_of_the_paper():
    """(111): J and 𝒥 as printed in the paper are related by J = tr(𝒥) I - 𝒥."""
    E = dirs.euler_coefficients(J111)
    np.testing.assert_allclose(E, [[3.0, 1 / 7, 0.0], [1 / 7, 2.0, 0.0], [0.0, 0.0, 1.0]], rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(dirs.inertia_from_euler(E), J111, rtol=1e-15)


def test_director_energy_and_momentum_equal_the_rotation_forms(rng):
    """(33), (37), (61), (65): ½ Σ 𝒥^{ij} ḋ_i·ḋ_j = ½ ω·jω and Σ d_i × π^i = j ω, j = Λ J Λᵀ."""
    n = 20
    J = random_inertia(rng, n)
    R = random_rotations(rng, n)
    w = rng.normal(size=(n, 3)) * 5
    d = dirs.directors_from_matrix(R)
    v = dirs.director_velocities(d, w)
    E = dirs.euler_coefficients(J)
    j = R @ J @ R.swapaxes(1, 2)
    jw = (j @ w[..., None])[..., 0]
    np.testing.assert_allclose(dirs.kinetic_energy(E, v), 0.5 * (w * jw).sum(-1), rtol=1e-12)
    np.testing.assert_allclose(dirs.spatial_angular_momentum(E, d, v), jw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dirs.material_angular_momentum(E, d, v), (R.swapaxes(1, 2) @ jw[..., None])[..., 0],
                               rtol=1e-12, atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(dirs.angular_velocity(d, v), w, rtol=1e-13, atol=1e-13)
    assert np.abs(dirs.constraints(d)).max() < 1e-14
    assert np.abs(dirs.hidden_constraints(d, v)).max() < 1e-12


def test_free_body_conserves_energy_and_spatial_momentum_to_round_off(rng):
    """(91): K_{n+1} = K_n and π_{n+1} = π_n, for bodies with random inertia and state."""
    n = 8
    J = random_inertia(rng, n)
    em = DirectorEM(J)
    s = em.state(dirs.directors_from_matrix(random_rotations(rng, n)), rng.normal(size=(n, 3)) * 8)
    K0, pi0 = em.kinetic_energy(s), em.spatial_angular_momentum(s)
    kd = pd = 0.0
    for _ in range(400):
        em.step(s, 0.01)
        kd = max(kd, np.abs(em.kinetic_energy(s) / K0 - 1).max())
        pd = max(pd, (np.abs(em.spatial_angular_momentum(s) - pi0).max(axis=1) / np.abs(pi0).max(axis=1)).max())
    assert kd < 1e-12 and pd < 1e-12
    assert em.constraint_residual(s).max() < 1e-14
    # the check can fail: the nodal velocities violate the hidden constraints at O(h²)
    assert em.hidden_constraint_residual(s).max() > 1e-6


def euler_quaternion_rhs(J):
    """Independent reference: q̇ = ½ q ⊗ (0, W), J Ẇ = (J W) × W (body frame, quaternions)."""
    Ji = np.linalg.inv(J)

    def rhs(t, y):
        q, W = y[:4], y[4:]
        return np.concatenate([0.5 * rot.quat_multiply(q, np.concatenate([[0.0], W])), Ji @ np.cross(J @ W, W)])

    return rhs


def test_agrees_with_scipy_euler_equations_at_order_2():
    t_end = 2.0
    W0 = np.array([6.0, -18.0, 3.0])
    ref = solve_ivp(euler_quaternion_rhs(J111), (0, t_end), np.concatenate([[1.0, 0, 0, 0], W0]), method="DOP853",
                    rtol=1e-12, atol=1e-13)  # fmt: skip
    q = ref.y[:4, -1] / np.linalg.norm(ref.y[:4, -1])
    R_ref = rot.quat_to_matrix(q)
    w_ref = R_ref @ ref.y[4:, -1]
    hs, errs = [0.01, 0.005, 0.0025, 0.00125], []
    for h in hs:
        em = DirectorEM(J111, n=1)
        s = em.state(np.eye(3), W0)
        em.run(s, h, int(round(t_end / h)))
        err = np.abs(s.d[0] - dirs.directors_from_matrix(R_ref[None])[0]).max()
        err += np.abs(dirs.angular_velocity(s.d, s.v)[0] - w_ref).max() / np.linalg.norm(w_ref)
        errs.append(err)
    p = diag.convergence_order(hs, errs)
    assert abs(p - 2.0) < 0.15, (p, errs)
    assert errs[-1] < 5e-3


def test_rattle_comparator_is_second_order_with_consistent_velocities():
    """DirectorDLA without the nonholonomic constraint (RATTLE): consistent node velocities,
    energy to round-off, order 2 against the same reference."""
    t_end = 1.0
    W0 = np.array([2.0, -3.0, 1.0])
    ref = solve_ivp(euler_quaternion_rhs(J111), (0, t_end), np.concatenate([[1.0, 0, 0, 0], W0]), method="DOP853",
                    rtol=1e-12, atol=1e-13)  # fmt: skip
    d_ref = dirs.directors_from_matrix(rot.quat_to_matrix(ref.y[:4, -1] / np.linalg.norm(ref.y[:4, -1]))[None])[0]
    hs, errs = [0.02, 0.01, 0.005], []
    for h in hs:
        sch = DirectorDLA(J111, n=1)
        s = sch.state(np.eye(3), W0)
        K0 = sch.kinetic_energy(s)
        sch.run(s, h, int(round(t_end / h)))
        assert sch.hidden_constraint_residual(s).max() < 1e-12
        assert abs(sch.kinetic_energy(s)[0] / K0[0] - 1) < 1e-12
        errs.append(np.abs(s.d[0] - d_ref).max())
    assert abs(diag.convergence_order(hs, errs) - 2.0) < 0.15, errs


def test_constant_spatial_moment_changes_momentum_by_its_impulse():
    """Remark 2, (68): a constant spatial moment m gives π(T) - π(0) → T m at order 2."""
    m = np.array([[0.3, -1.2, 0.7]])
    errs, hs = [], [0.02, 0.01, 0.005]
    for h in hs:
        em = DirectorEM(J111, n=1, moment=ExternalMoment(spatial=lambda t: m))
        s = em.state(np.eye(3), [1.0, 2.0, -0.5])
        pi0 = em.spatial_angular_momentum(s)
        em.run(s, h, int(round(1.0 / h)))
        errs.append(np.abs(em.spatial_angular_momentum(s) - pi0 - m).max())
    assert errs[-1] < 1e-4
    assert abs(diag.convergence_order(hs, errs) - 2.0) < 0.2, errs


def fd_jacobian(fun, x, eps=1e-6):
    n, k = x.shape
    J = np.zeros((n, k, k))
    for j in range(k):
        xp, xm = x.copy(), x.copy()
        xp[:, j] += eps
        xm[:, j] -= eps
        J[:, :, j] = (fun(xp)[0].copy() - fun(xm)[0].copy()) / (2 * eps)
    return J


@pytest.mark.parametrize("cls", [DirectorEM, DirectorDLA])
def test_analytic_jacobian_matches_finite_differences(cls, rng):
    """The analytic Jacobian (array reference, the formulas of kernels/bodies_directors.py,
    which reproduce its Newton iteration counts) against central differences."""
    cls = getattr(ref, cls.__name__)
    n = 4
    J = random_inertia(rng, n)
    ms = rng.normal(size=(n, 3))
    mc = rng.normal(size=(n, 3))
    sch = cls(J, moment=ExternalMoment(spatial=lambda t: (1 + t) * ms, material=lambda t: (2 - t) * mc))
    s = sch.state(dirs.directors_from_matrix(random_rotations(rng, n)), rng.normal(size=(n, 3)))
    fun, x0 = sch.newton_system(s, 0.05)
    x = x0 + 0.01 * rng.normal(size=x0.shape)
    Ja = fun(x)[1].copy()
    np.testing.assert_allclose(Ja, fd_jacobian(fun, x), atol=1e-7)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"inertia": np.diag([1.0, 1.0, 3.0]), "n": 1}, "positive definite"),
        ({"inertia": np.diag([1.0, 2.0, 3.0]) + np.triu(np.ones((3, 3)), 1), "n": 1}, "symmetric"),
        ({"inertia": np.eye(2), "n": 1}, "shape"),
        ({"inertia": np.eye(3)}, "number of bodies"),
        ({"inertia": np.eye(3), "euler": np.eye(3), "n": 1}, "exactly one"),
        ({"inertia": np.eye(3), "n": 1, "rtol": 0.0}, "rtol"),
        ({"inertia": np.full((3, 3), np.nan), "n": 1}, "finite"),
    ],
)
def test_bad_model_input_raises(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DirectorEM(**kwargs)


def test_bad_state_and_step_input_raises():
    em = DirectorEM(J111, n=2)
    with pytest.raises(ValueError, match="orthonormality"):
        em.state(np.diag([1.0, 1.0, 1.001]), np.zeros(3))
    with pytest.raises(ValueError, match="left-handed"):
        em.state(np.diag([1.0, 1.0, -1.0]), np.zeros(3))
    with pytest.raises(ValueError, match="omega"):
        em.state(np.eye(3), np.zeros(4))
    s = em.state(np.eye(3), np.ones(3))
    for h in (0.0, -0.01, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="h: the time step"):
            em.step(s, h)
    bad = ExternalMoment(spatial=lambda t: np.zeros((3, 3)))
    with pytest.raises(ValueError, match="moment.spatial"):
        DirectorEM(J111, n=2, moment=bad).step(s, 0.01)
