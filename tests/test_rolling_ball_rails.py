"""Rails and actuations of the rolling ball (paper 004): shapes, derivatives against
finite differences, the chain rule of the mass kinematics, and input errors."""

import math

import numpy as np
import pytest

from granular.bodies.rolling_ball import rails as R
from granular.validation.rollingball import fourier_rail, random_actuation

S2 = 1 / math.sqrt(2)


def all_rails(rng):
    return {
        "circle": R.CircleRail(0.7, center=(0.1, 0.0, -0.1), u=(S2, S2, 0.0), v=(0.0, 0.0, 1.0)),
        "ellipse": R.EllipseRail(0.6, 0.3),
        "figure_eight": R.FigureEightRail(0.7, 0.9, u=(1.0, 0.0, 0.0), v=(0.0, 1.0, 0.0)),
        "line": R.LineRail((0.0, 0.6, 0.8), center=(0.1, 0.2, 0.0)),
        "fourier": fourier_rail(rng),
    }


@pytest.mark.parametrize("name", ["circle", "ellipse", "figure_eight", "line", "fourier"])
def test_rail_derivatives_match_finite_differences(name, rng):
    rail = all_rails(rng)[name]
    theta = rng.uniform(-4, 4, 50)
    e1, e2 = R.derivative_error(rail, theta, step=1e-3)
    assert e1 < 1e-9 and e2 < 1e-9


def test_rail_shapes(rng):
    rails = all_rails(rng)
    th = np.linspace(0, 2 * np.pi, 101)
    z = rails["circle"].position(th)
    assert np.abs(np.linalg.norm(z - [0.1, 0.0, -0.1], axis=1) - 0.7).max() < 1e-15
    n = np.cross([S2, S2, 0.0], [0.0, 0.0, 1.0])
    assert np.abs((z - [0.1, 0.0, -0.1]) @ n).max() < 1e-15  # in its plane
    e = rails["ellipse"].position(th)
    assert np.abs((e[:, 0] / 0.6) ** 2 + (e[:, 2] / 0.3) ** 2 - 1).max() < 1e-14 and np.abs(e[:, 1]).max() == 0
    f = rails["figure_eight"].position(np.array([0.0, np.pi, np.pi / 2, np.pi / 4]))
    assert np.abs(f[:2]).max() < 1e-15  # the crossing point is the centre
    assert f[2] == pytest.approx([0.7, 0.0, 0.0], abs=1e-15)
    assert f[3] == pytest.approx([0.7 * S2, 0.45, 0.0], abs=1e-15)
    line = rails["line"].evaluate(np.array([2.0]))
    assert line[0][0] == pytest.approx([0.1, 1.4, 1.6]) and np.all(line[2] == 0)


def test_per_ball_rail_parameters_broadcast():
    rail = R.CircleRail([0.5, 0.6, 0.7], center=np.zeros((3, 3)))
    z = rail.position(np.zeros(3))
    assert z[:, 0] == pytest.approx([0.5, 0.6, 0.7])
    assert rail.rows == 3
    with pytest.raises(ValueError):  # 3 parameter rows, 4 angles
        rail.position(np.zeros(4))


def test_actuations_derivatives(rng):
    acts = [R.ConstantSpeed(0.3, 1.7), R.Sinusoidal(0.8, 2.1, 0.4, -1.0), random_actuation(rng), R.at_rest(0.2)]
    t = np.array([0.0, 0.37, 2.5])
    h = 1e-4
    for a in acts:
        th, w, acc = (np.broadcast_to(v, (3,)) for v in a(t, np))
        thp, wp, _ = (np.broadcast_to(v, (3,)) for v in a(t + h, np))
        thm, wm, _ = (np.broadcast_to(v, (3,)) for v in a(t - h, np))
        assert np.abs((thp - thm) / (2 * h) - w).max() < 1e-7
        assert np.abs((wp - wm) / (2 * h) - acc).max() < 1e-7
    th, w, acc = acts[3](1.3, np)
    assert float(th[0]) == 0.2 and float(w[0]) == 0 and float(acc[0]) == 0


def test_mass_kinematics_chain_rule(rng):
    """χ̇ and χ̈ are the time derivatives of χ(t) = ζ(θ(t)) (central differences in t)."""
    rails = [R.FigureEightRail(0.7, 0.9), fourier_rail(rng)]
    acts = [R.Sinusoidal(0.8, 2.1, 0.4), random_actuation(rng)]
    t, h = 0.83, 1e-4
    k0 = R.mass_kinematics(rails, acts, t, 2, np)
    kp = R.mass_kinematics(rails, acts, t + h, 2, np)
    km = R.mass_kinematics(rails, acts, t - h, 2, np)
    assert k0.chi.shape == (2, 2, 3) and k0.theta_dot.shape == (2, 2)
    assert np.abs((kp.chi - km.chi) / (2 * h) - k0.dchi).max() < 1e-7
    assert np.abs((kp.dchi - km.dchi) / (2 * h) - k0.ddchi).max() < 1e-7
    assert np.allclose(k0.dchi, k0.tangent * k0.theta_dot[..., None], rtol=0, atol=1e-15)
    # per-ball times (adaptive integrator): row k equals the scalar-time result at t_k
    ts = np.array([t, t + h])
    kk = R.mass_kinematics(rails, acts, ts, 2, np)
    assert np.abs(kk.chi[0] - k0.chi[0]).max() == 0 and np.abs(kk.chi[1] - kp.chi[1]).max() == 0


def test_rail_and_actuation_input_errors():
    with pytest.raises(ValueError, match="u, v"):
        R.CircleRail(0.5, u=(1.0, 0.0, 0.0), v=(1.0, 1.0, 0.0))
    with pytest.raises(ValueError, match="radius"):
        R.CircleRail(-0.5)
    with pytest.raises(ValueError, match="radius"):
        R.CircleRail(float("nan"))
    with pytest.raises(ValueError, match="center"):
        R.CircleRail(0.5, center=(0.0, 0.0))
    with pytest.raises(ValueError, match="direction"):
        R.LineRail((0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="^b:"):
        R.EllipseRail(0.5, 0.0)
    with pytest.raises(ValueError, match="position"):
        R.CurveRail(3.0, lambda t: t, lambda t: t)
    bad = R.CurveRail(lambda th: np.zeros((len(th), 2)), lambda th: np.zeros((len(th), 3)),
                      lambda th: np.zeros((len(th), 3)))  # fmt: skip
    with pytest.raises(ValueError, match="position"):
        bad.evaluate(np.zeros(4))
    with pytest.raises(ValueError, match="theta"):
        R.CircleRail(0.5).evaluate(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="speed"):
        R.ConstantSpeed(0.0, [1.0, float("inf")])
    with pytest.raises(ValueError, match="dtheta"):
        R.UserActuation(lambda t: t, None, lambda t: t)
    ua = R.UserActuation(lambda t: np.zeros((2, 2)), lambda t: t, lambda t: t)
    with pytest.raises(ValueError, match="theta"):
        ua(0.0, np)
    with pytest.raises(ValueError, match="step"):
        R.derivative_error(R.CircleRail(0.5), np.zeros(2), step=0.0)
