"""Batched Newton solver (granular.bodies.newton): quadratic convergence, per-body
convergence tracking, independence of the rows, and loud failures naming the body."""

import numpy as np
import pytest

from granular.bodies import newton


def cubic_system(target):
    """Row b: r(x) = (x0³ + x1 - t0, x0 + x1³ - t1) with solution x = (1, 2) shifted per body."""

    def fun(x):
        r = np.stack([x[:, 0] ** 3 + x[:, 1] - target[:, 0], x[:, 0] + x[:, 1] ** 3 - target[:, 1]], axis=-1)
        J = np.zeros(x.shape + (2,))
        J[:, 0, 0] = 3 * x[:, 0] ** 2
        J[:, 0, 1] = 1.0
        J[:, 1, 0] = 1.0
        J[:, 1, 1] = 3 * x[:, 1] ** 2
        return r, J

    return fun


def _targets(sol):
    return np.stack([sol[:, 0] ** 3 + sol[:, 1], sol[:, 0] + sol[:, 1] ** 3], axis=-1)


def test_quadratic_convergence_on_a_known_problem():
    sol = np.array([[1.0, 2.0], [0.5, -1.5], [3.0, 0.25]])
    target = np.stack([sol[:, 0] ** 3 + sol[:, 1], sol[:, 0] + sol[:, 1] ** 3], axis=-1)
    fun = cubic_system(target)
    errors = []

    def recording(x):
        errors.append(np.abs(x - sol).max(axis=1).copy())
        return fun(x)

    res = newton.solve(recording, sol + 0.1, rtol=1e-14, max_iter=30)
    assert np.abs(res.x - sol).max() < 1e-14
    e = np.array(errors)  # (iterations, N)
    # quadratic: e_{k+1} <= C e_k² in the asymptotic range, i.e. the exponent doubles
    for b in range(3):
        eb = e[:, b][e[:, b] > 1e-12]
        assert len(eb) >= 3
        rates = np.log(eb[2:]) / np.log(eb[1:-1])
        assert rates[-1] > 1.8, (b, eb)
    assert (res.iterations <= 8).all()


def test_solution_matches_scipy_root():
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(3)
    sol = rng.uniform(0.5, 2.0, (50, 2))
    target = _targets(sol)
    x0 = sol + rng.uniform(-0.2, 0.2, sol.shape)
    res = newton.solve(cubic_system(target), x0, rtol=1e-13)
    for b in (0, 17, 49):
        ref = optimize.fsolve(lambda y: [y[0] ** 3 + y[1] - target[b, 0], y[0] + y[1] ** 3 - target[b, 1]], x0[b],
                              xtol=1e-14)  # fmt: skip
        np.testing.assert_allclose(res.x[b], ref, rtol=1e-10)


def test_rows_are_independent_of_the_batch():
    """A body's iterates, result and iteration count are the same alone and in a batch."""
    rng = np.random.default_rng(7)
    sol = rng.uniform(0.5, 2.0, (40, 2))
    target = _targets(sol)
    x0 = sol + rng.uniform(-0.3, 0.3, sol.shape)
    batch = newton.solve(cubic_system(target), x0, rtol=1e-12)
    for b in (0, 13, 39):
        alone = newton.solve(cubic_system(target[b : b + 1]), x0[b : b + 1], rtol=1e-12)
        assert np.array_equal(alone.x[0], batch.x[b])
        assert alone.iterations[0] == batch.iterations[b]
    assert len(set(batch.iterations.tolist())) > 1  # the bodies really converged at different iterations


def test_converged_body_takes_one_iteration_and_is_frozen():
    sol = np.array([[1.0, 2.0]])
    target = np.stack([sol[:, 0] ** 3 + sol[:, 1], sol[:, 0] + sol[:, 1] ** 3], axis=-1)
    both = np.concatenate([target, target])
    x0 = np.array([[1.0, 2.0], [3.0, 3.0]])  # body 0 starts at the exact solution
    res = newton.solve(cubic_system(both), x0, rtol=1e-12)
    assert res.iterations[0] == 1 and res.iterations[1] > 3
    assert np.array_equal(res.x[0], sol[0])


def test_non_converging_body_raises_naming_it():
    """r = x² + 1 has no real root: Newton wanders forever for that body only."""

    def fun(x):
        r = x.copy()
        J = np.ones(x.shape + (1,))
        r[2] = x[2] ** 2 + 1.0
        J[2, 0, 0] = 2 * x[2, 0]
        return r - np.array([[0.5], [0.5], [0.0], [0.5]]) * (np.arange(4) != 2)[:, None], J

    with pytest.raises(newton.NewtonError) as exc:
        newton.solve(fun, np.full((4, 1), 0.3), rtol=1e-12, max_iter=15)
    err = exc.value
    assert err.body == 2 and err.failed == 1 and err.max_iter == 15 and err.iterations == 15
    assert err.residual >= 1.0  # |x² + 1| >= 1 everywhere
    msg = str(err)
    assert "body 2" in msg and "max_iter = 15" in msg and "residual" in msg
    assert isinstance(err, RuntimeError)


def test_mixed_batch_reports_first_failed_body_and_count():
    def fun(x):
        r = x**2 - np.array([[4.0], [-1.0], [9.0], [-2.0], [1.0]])
        return r, 2 * x[..., None]

    with pytest.raises(newton.NewtonError) as exc:
        newton.solve(fun, np.full((5, 1), 1.3), rtol=1e-12, max_iter=20)
    assert exc.value.body == 1 and exc.value.failed == 2
    # the converged bodies were really solved: the same batch without the bad rows passes
    ok = newton.solve(lambda x: (x**2 - np.array([[4.0], [9.0], [1.0]]), 2 * x[..., None]), np.full((3, 1), 1.3))
    np.testing.assert_allclose(ok.x[:, 0], [2.0, 3.0, 1.0], rtol=1e-14)


def test_singular_jacobian_and_nan_residual_raise():
    def singular(x):
        J = np.tile(np.eye(2), (3, 1, 1))
        J[1] = 0.0
        return x - 1.0, J

    with pytest.raises(newton.NewtonError, match="body 1: singular Jacobian"):
        newton.solve(singular, np.zeros((3, 2)))

    def nan(x):
        r = x - 1.0
        r[2, 0] = np.nan
        return r, np.tile(np.eye(2), (3, 1, 1))

    with pytest.raises(newton.NewtonError, match="body 2: non-finite"):
        newton.solve(nan, np.zeros((3, 2)))


def test_input_is_not_modified_and_out_is_used():
    fun = cubic_system(np.array([[3.0, 9.0]]))
    x0 = np.array([[1.5, 1.5]])
    keep = x0.copy()
    out = np.empty_like(x0)
    res = newton.solve(fun, x0, out=out)
    assert np.array_equal(x0, keep)
    assert res.x is out


@pytest.mark.parametrize(
    "kwargs, match",
    [({"rtol": 0.0}, "rtol"), ({"rtol": -1.0}, "rtol"), ({"max_iter": 0}, "max_iter"), ({"atol": -1.0}, "atol")],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        newton.solve(cubic_system(np.ones((1, 2))), np.ones((1, 2)), **kwargs)
    with pytest.raises(ValueError, match="x0"):
        newton.solve(cubic_system(np.ones((1, 2))), np.ones(2))
