"""Per-body kernels of the implicit schemes (papers 000 and 002: kernels/bodies_directors.py,
kernels/bodies_livens.py) against the whole-array references (tests/reference_bodies/) on
random batches, on the CPU and on the GPU backend (the CUDA simulator in CI).

Each of 100 steps is compared from the same state (the reference's): the kernel's step
matches the reference's to 1e-13 in every state array, with the same Newton iteration
counts. Over the whole trajectory the two differ by the rounding that the scheme itself
amplifies (node velocities carry an undamped alternating mode, (2/h) times the rounding
of q per step, see granular.bodies.livens.rigid); the trajectory check is therefore at
the size of the reference's own response to a perturbation of 1e-15, measured here.
Also: blocks equal single steps bit for bit, a batch equals its bodies one by one bit for
bit, and a Newton failure names the body and leaves every body at the step before."""

import math

import numpy as np
import pytest

from granular.bodies.core import NewtonError
from granular.bodies.directors import dla, nontwisting
from granular.bodies.directors import schemes as dirs
from granular.bodies.directors.schemes import ExternalMoment
from granular.bodies.livens import comparators as lc
from granular.bodies.livens import rigid as lr
from tests.reference_bodies import directors_array as dref
from tests.reference_bodies import livens_array as lref

STEPS = 100
LIVENS = ("EML", "REML", "NullEML", "MPL", "EMH", "MPH")
DIRECTORS = {"DirectorEM": dirs, "NonTwistingEM": nontwisting, "DirectorDLA": dla, "NonTwistingDLA": dla}


def _livens_cls(name):
    return getattr(lr, name) if hasattr(lr, name) else getattr(lc, name)


def heavy_tops(backend, rng, n, name, ref=False):
    A = rng.normal(size=(n, 3, 3))
    J = (A @ A.swapaxes(1, 2) + 0.5 * np.eye(3)) * 1e-3
    m, X = rng.uniform(0.2, 1.5, n), rng.normal(size=(n, 3)) * 0.05
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w = rng.normal(size=(n, 3)) * 20.0
    xp = backend.xp
    kw = dict(mass=xp.asarray(m), center_of_mass=xp.asarray(X), gravity=[0.0, 0.0, -9.81], backend=backend)
    K = _livens_cls(name)(xp.asarray(J), **kw)
    R = getattr(lref, name)(xp.asarray(J), **kw)
    return K, R, K.state(xp.asarray(q), omega=xp.asarray(w))


def director_bodies(backend, rng, n, name, per_step):
    A = rng.normal(size=(n, 2, 2))
    E = np.zeros((n, 3, 3))
    E[:, :2, :2] = A @ A.swapaxes(1, 2) + 0.5 * np.eye(2)
    E[:, 2, 2] = rng.uniform(0.2, 2.0, n)
    q = rng.normal(size=(n, 4))
    d = dirs.directors_from_quaternion(q / np.linalg.norm(q, axis=1, keepdims=True))
    w = rng.normal(size=(n, 3)) * 3.0
    w -= (w * d[:, 2]).sum(-1, keepdims=True) * d[:, 2]
    xp = backend.xp
    c = xp.asarray(rng.normal(size=(n, 2)) * 5.0)
    if per_step:
        moment = ExternalMoment(material=lambda t: math.cos(2.0 * t) * c)
    else:
        moment = ExternalMoment(material=c, profile=lambda t: math.cos(2.0 * t))
    cls = getattr(DIRECTORS[name], name)
    K = cls(euler=xp.asarray(E), backend=backend, moment=moment)
    R = getattr(dref, name)(euler=xp.asarray(E), backend=backend, moment=moment)
    return K, R, K.state(xp.asarray(d), xp.asarray(w))


def _rel(a, b, backend, scale=None):
    a, b = backend.to_host(a), backend.to_host(b)
    s = np.abs(b).max() if scale is None else scale
    return float(np.abs(a - b).max() / max(s, 1e-300))


def _compare_steps(K, R, s, backend, names, h, steps, scales):
    """Each step from the reference's state: worst relative difference per array
    (``scales``: name -> function of the state giving the array's scale, default max|a|)."""
    worst = dict.fromkeys(names, 0.0)
    for _ in range(steps):
        a, b = s.copy(), s.copy()
        K.step(a, h)
        R.step(b, h)
        for k in names:
            scale = scales[k](b) if k in scales else None
            worst[k] = max(worst[k], _rel(getattr(a, k), getattr(b, k), backend, scale))
        assert np.array_equal(backend.to_host(a.iterations), backend.to_host(b.iterations))
        s = b
    return worst


@pytest.mark.parametrize("name", LIVENS)
def test_livens_kernels_match_the_array_reference_step_by_step(backend, rng, name):
    n, steps = (16, STEPS) if backend.name == "cpu" else (4, 8)
    K, R, s = heavy_tops(backend, rng, n, name)
    h = 0.004
    # the multiplier enters Newton as hλ (units of p): its precision is relative to |p|/h
    scales = {"lam": lambda b: np.abs(backend.to_host(b.p)).max() / h}
    worst = _compare_steps(K, R, s, backend, ("q", "v", "p", "v_half", "lam"), h, steps, scales)
    assert max(worst.values()) < 1e-13, worst


@pytest.mark.parametrize("name", LIVENS)
def test_livens_trajectory_within_the_rounding_response(rng, name):
    from granular.backend import get_backend

    be = get_backend("cpu")
    K, R, s = heavy_tops(be, rng, 16, name)
    a, b, c = s.copy(), s.copy(), s.copy()
    c.v = c.v * (1.0 + 1e-15)
    K.advance(a, 0.004, STEPS)
    for _ in range(STEPS):
        R.step(b, 0.004)
        R.step(c, 0.004)
    kernel = max(_rel(getattr(a, k), getattr(b, k), be) for k in ("q", "v", "p"))
    floor = max(_rel(getattr(c, k), getattr(b, k), be) for k in ("q", "v", "p"))
    assert kernel < max(1e-13, 10.0 * floor), (kernel, floor)
    assert np.array_equal(a.iterations_total, b.iterations_total)


@pytest.mark.parametrize("name", list(DIRECTORS))
@pytest.mark.parametrize("per_step", [False, True])
def test_director_kernels_match_the_array_reference_step_by_step(backend, rng, name, per_step):
    n, steps = (12, STEPS) if backend.name == "cpu" else (4, 6)
    K, R, s = director_bodies(backend, rng, n, name, per_step)
    h = 0.005
    names = ("d", "v", "v_half", "lam") + (("mu",) if "NonTwisting" in name else ())
    names += (("lam_end", "mu_end") if "NonTwisting" in name else ("lam_end",)) if "DLA" in name else ()
    # the multipliers enter Newton as (h²/2)λ beside directors of size 1, and the DLA
    # projection's as (h/2)λ_end beside velocities: their precision is relative to those
    vmax = lambda b: np.abs(backend.to_host(b.v)).max()  # noqa: E731
    scales = {"lam": lambda b: 2.0 / h**2, "mu": lambda b: 2.0 / h**2, "lam_end": lambda b: 2.0 / h * vmax(b),
              "mu_end": lambda b: 2.0 / h * vmax(b)}  # fmt: skip
    worst = _compare_steps(K, R, s, backend, names, h, steps, scales)
    assert max(worst.values()) < 1e-13, worst


def test_blocks_equal_single_steps_bitwise(backend, rng):
    for K, _, s in (heavy_tops(backend, rng, 4, "EML"), director_bodies(backend, rng, 4, "NonTwistingEM", False)):
        a = s.copy()
        K.advance(s, 0.004, 6)
        for _ in range(6):
            K.step(a, 0.004)
        for k, v in s.arrays().items():
            assert np.array_equal(backend.to_host(v), backend.to_host(getattr(a, k))), k
        assert s.t == a.t and s.step == a.step == 6


def test_batch_equals_bodies_one_by_one_bitwise(backend):
    """Heavy tops with per-body parameters, batched and one at a time: the same bits."""
    n = 5
    K, _, s0 = heavy_tops(backend, np.random.default_rng(1), n, "EML")
    s = s0.copy()
    K.advance(s, 0.004, 5)
    for b in range(n):
        sl = slice(b, b + 1)
        one = lr.EML(K.J[sl], mass=K.mass[sl], center_of_mass=K.center_of_mass[sl], gravity=[0.0, 0.0, -9.81],
                     backend=backend)  # fmt: skip
        s1 = s0.copy()
        for k, v in s0.arrays().items():
            setattr(s1, k, v[sl].copy())
        one.advance(s1, 0.004, 5)
        for k, v in s.arrays().items():
            assert np.array_equal(backend.to_host(v)[b], backend.to_host(getattr(s1, k))[0]), k


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", ["EML", "NullEML", "EMH"])
def test_newton_failure_names_the_body_and_leaves_every_body_before_the_step(backend, name):
    """Body 1's |Ω| ≈ 3700 rad/s is far too large for h = 0.05 (190 rad per step): the
    error names body 1 and its step; every body is left at the step before, the others
    equal to a run without body 1."""
    J = np.diag([6.0, 8.0, 3.0])
    cls = _livens_cls(name)
    sch = cls(J, n=3, backend=backend)
    Om = np.array([[10.0, 20.0, 20.0], [3000.0, 1000.0, -2000.0], [1.0, 2.0, 3.0]])
    s = sch.state(np.tile([1.0, 0.0, 0.0, 0.0], (3, 1)), Omega=Om)
    with pytest.raises(NewtonError) as exc:
        sch.advance(s, 0.05, 10)
    err = exc.value
    assert err.body == 1 and err.step == s.step + 1 and "body 1" in str(err) and sch.name in str(err)
    assert err.iterations >= 1 and err.reason
    good = cls(J, n=2, backend=backend)
    s2 = good.state(np.tile([1.0, 0.0, 0.0, 0.0], (2, 1)), Omega=Om[[0, 2]])
    good.advance(s2, 0.05, s.step)
    for k in ("q", "v", "p"):
        assert np.array_equal(backend.to_host(getattr(s, k))[[0, 2]], backend.to_host(getattr(s2, k)))
