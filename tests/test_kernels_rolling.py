"""Per-ball kernels of paper 004 (kernels/bodies_rolling.py) against the whole-array
reference (tests/reference_bodies/rolling_array.py) on random batches, on the CPU and on
the GPU backend (the CUDA simulator in CI): RK4, the per-ball adaptive Dormand-Prince and
the rolling disk; blocks equal single steps bit for bit; a failing ball is named and the
others are untouched."""

import math

import numpy as np
import pytest

from granular.bodies.core import NonFiniteBodyError
from granular.bodies.rolling_ball import rails as R
from granular.bodies.rolling_ball.ball import HarmonicForce, RollingBall
from granular.bodies.rolling_ball.disk import RollingDisk, RollingDiskRK4
from granular.bodies.rolling_ball.integrators import RK4, DormandPrince
from granular.validation import rollingball as study
from tests.reference_bodies import rolling_array as ref

STEPS = 100


def random_balls(backend, rng, n, force="harmonic"):
    """Per-ball parameters, four rail kinds, three actuation kinds, an external force."""
    rails = [R.CircleRail(rng.uniform(0.5, 0.7, n), u=(0.0, 1.0, 0.0), v=(0.0, 0.0, 1.0)),
             R.EllipseRail(0.6, rng.uniform(0.3, 0.5, n), center=(0.0, 0.1, -0.1), u=(0.6, 0.8, 0.0), v=(0, 0, 1.0)),
             R.FigureEightRail(0.5, 0.6, center=(0.0, 0.0, -0.2), u=(1.0, 0.0, 0.0), v=(0.0, 1.0, 0.0)),
             R.LineRail(np.tile([0.0, 0.3, 0.1], (n, 1)), center=rng.uniform(-0.1, 0.1, (n, 3))),
             study.fourier_rail(rng)]  # fmt: skip
    acts = [R.ConstantSpeed(0.1, rng.uniform(0.5, 2.0, n)), R.Sinusoidal(rng.uniform(0.2, 1.0, n), 1.3),
            R.Harmonic(0.2, 0.7, 0.5, rng.uniform(0.5, 2.0, n), 0.4), R.Sinusoidal(0.3, 2.0, 0.1),
            study.random_actuation(rng)]  # fmt: skip
    Fe = {"harmonic": HarmonicForce((0.01, 0.0, 0.0), rng.uniform(0, 0.05, (n, 3)), (0.7, 1.1, 0.3)),
          "constant": rng.uniform(-0.05, 0.05, (n, 3)), "callable": lambda t: study.external_force_wave(t), "none": None}[force]
    ball = RollingBall(rng.uniform(0.9, 1.1, n), rng.uniform(0.8, 1.2, n), rng.uniform(0.55, 0.7, (n, 3)),
                       rng.uniform(-0.05, 0.05, (n, 3)), rng.uniform(0.05, 0.2, (n, 5)), rails, acts, gravity=1.0,
                       external_force=Fe, backend=backend)  # fmt: skip
    q = rng.normal(size=(n, 4))
    state = ball.state(Omega=rng.normal(size=(n, 3)), q=q / np.linalg.norm(q, axis=1, keepdims=True),
                       xy=rng.normal(size=(n, 2)), track_work=True)  # fmt: skip
    return ball, state


def rel(a, b, backend):
    a, b = backend.to_host(a), backend.to_host(b)
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("force", ["harmonic", "constant", "callable"])
def test_rk4_kernel_matches_array_reference(backend, rng, force):
    n = 10 if backend.name == "cpu" else 4
    ball, s = random_balls(backend, rng, n, force)
    s_ref = s.copy()
    RK4(ball).advance(s, 0.01, STEPS)
    for _ in range(STEPS):
        ref.RK4().step(ball, s_ref, 0.01)
    assert rel(s.y, s_ref.y, backend) < 1e-13
    assert s.step == s_ref.step == STEPS


def test_dormand_prince_kernel_matches_array_reference(backend, rng):
    n = 8 if backend.name == "cpu" else 4
    ball, s0 = random_balls(backend, rng, n)
    dp = DormandPrince(ball, rtol=1e-9, atol=1e-11)
    s = dp.integrate(dp.adaptive(s0), [0.4, 1.0])
    s_ref = s0.copy()
    rdp = ref.DormandPrince(rtol=1e-9, atol=1e-11)
    rdp.run(ball, s_ref, 1.0, times=[0.4, 1.0])
    assert rel(s.y, s_ref.y, backend) < 1e-13
    assert np.array_equal(backend.to_host(s.accepted), rdp.stats["accepted"])
    assert np.array_equal(backend.to_host(s.rejected), rdp.stats["rejected"])
    assert s.t == 1.0 and s.step == 2


def test_rolling_disk_kernel_matches_array_reference(backend, rng):
    n = 10 if backend.name == "cpu" else 4
    rails = [R.CircleRail(rng.uniform(0.5, 0.8, n)), R.FigureEightRail(0.6, 0.5, center=(0.05, 0.0, 0.1))]
    acts = [R.ConstantSpeed(-1.0, rng.uniform(0.5, 1.5, n)), R.Sinusoidal(0.9, 1.7, 0.3)]
    for fx in (rng.uniform(-0.1, 0.1, n), lambda t: 0.05 * math.cos(t), None):
        disk = RollingDisk(1.0, rng.uniform(0.8, 1.2, n), rng.uniform(0.5, 0.7, n), rng.uniform(-0.05, 0.05, (n, 2)),
                           rng.uniform(0.1, 0.3, (n, 2)), rails, acts, gravity=1.0, external_force_x=fx,
                           backend=backend)  # fmt: skip
        s = disk.state(psi=rng.normal(size=n), psi_dot=rng.normal(size=n), x=rng.normal(size=n))
        s_ref = s.copy()
        RollingDiskRK4(disk).advance(s, 0.01, STEPS)
        for _ in range(STEPS):
            ref.RK4().step(disk, s_ref, 0.01)
        assert rel(s.y, s_ref.y, backend) < 1e-13


def test_blocks_equal_single_steps_bitwise(backend, rng):
    ball, s = random_balls(backend, rng, 4)
    scheme = RK4(ball)
    s1 = s.copy()
    scheme.advance(s, 0.02, 20)
    for _ in range(20):
        scheme.step(s1, 0.02)
    assert np.array_equal(backend.to_host(s.y), backend.to_host(s1.y)) and s.t == s1.t


def test_batch_equals_balls_one_by_one_bitwise(backend):
    """The study's check (per-ball parameters, RK4 and the adaptive scheme), to the bit."""
    out = study.batch_vs_alone(backend=backend, n=4, steps=20, t_dp=0.3)
    assert out["rk4"] == 0.0 and out["dp"] == 0.0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_failing_ball_is_named_and_the_others_are_unaffected(backend):
    """Ball 1's force turns to NaN after t = 0.05: the error names it and the step; every
    ball is left at the step before, the others equal to a run without the failure."""

    def force(t):
        F = np.zeros((3, 3))
        F[1, 0] = np.nan if t > 0.05 else 0.01
        return F

    ball = RollingBall(1.0, 1.0, (0.5, 0.55, 0.6), (0.0, 0.0, -0.05), external_force=force, n=3, backend=backend)
    s = ball.state(Omega=[[0.1, 0.2, 0.3], [0.3, 0.0, 0.1], [0.0, 0.5, 0.0]])
    with pytest.raises(NonFiniteBodyError) as exc:
        RK4(ball).advance(s, 0.01, 20)
    assert exc.value.body == 1 and exc.value.step == 6 and s.step == 5 and s.t == pytest.approx(0.05)
    assert exc.value.quantity == "Omega"
    good = RollingBall(1.0, 1.0, (0.5, 0.55, 0.6), (0.0, 0.0, -0.05), external_force=lambda t: np.zeros((3, 3)),
                       n=3, backend=backend)  # fmt: skip
    s2 = good.state(Omega=[[0.1, 0.2, 0.3], [0.3, 0.0, 0.1], [0.0, 0.5, 0.0]])
    RK4(good).advance(s2, 0.01, 5)
    y, y2 = backend.to_host(s.y), backend.to_host(s2.y)
    assert np.array_equal(y[[0, 2]], y2[[0, 2]])
