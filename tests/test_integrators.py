"""Explicit maps (23), (25), (27): exact orientation over many turns, step-size limit,
failure handling (state unchanged), momenta."""

import math

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.particles import diagnostics as diag

SCHEMES = ["exact", "verlet", "campello"]


def free_spinner(backend, omega, n=1, q0=None):
    b = gr.ModelBuilder()
    b.add_particles(np.zeros((n, 3)), v=[0.3, -0.1, 0.2], omega=omega, orientation=q0, mass=2.0, inertia=0.7)
    return b.finalize(backend)


def per_step_angle(scheme, h, w):
    """Rotation angle of one increment of a torque-free particle: 2 atan(|Δα|/2)."""
    if scheme == "exact":  # Δα = 2hw/(1+sqrt(1-h²w²)) ⇒ angle = asin(hw)
        return math.asin(h * w)
    return 2.0 * math.atan(0.5 * h * w)  # Δα = hΩ


@pytest.mark.parametrize("scheme", SCHEMES)
def test_free_spin_100_turns_stays_exact(scheme, rng):
    """100 turns (10^5 steps, through the RRP singularity at π 100 times): the stored
    orientation equals the closed-form rotation by n identical increments to 1e-10 rad.

    The increment of a torque-free step is a rotation about Ω by ``2 atan(|Δα|/2)``,
    which differs from ``h|Ω|`` by O((h|Ω|)³) (the maps' truncation error); this test
    isolates accumulation: no drift, no loss at half turns.
    """
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    w = 2.0
    h = 2 * math.pi / (w * 1000)
    steps = 100_000
    q0 = rot.quat_from_rotvec(rng.normal(size=3))
    model = free_spinner("cpu", w * axis, q0=q0)
    state = model.state()
    gr.ExplicitIntegrator(scheme).run(model, state, h, steps)
    expected = rot.quat_multiply(rot.quat_from_rotvec(steps * per_step_angle(scheme, h, w) * axis), q0)
    err = rot.quat_angle_between(state.q[0], expected)
    assert err < 1e-10
    assert abs(np.linalg.norm(state.q[0]) - 1.0) < 1e-15
    np.testing.assert_array_equal(state.omega[0], w * axis)  # no torque: Ω untouched


@pytest.mark.parametrize("scheme,order", [("exact", 2), ("verlet", 2), ("campello", 2)])
def test_free_spin_converges_to_analytic_rotation(scheme, order):
    """Against the analytic rotation exp(S(Ω t)) over 10 turns: error ∝ h^order
    (for a torque-free body all three maps have an O(h³) per-step angle error)."""
    w, turns = 3.0, 10
    axis = np.array([1.0, 2.0, -2.0]) / 3.0
    errs, hs = [], []
    for per_turn in (100, 200, 400):
        h = 2 * math.pi / (w * per_turn)
        model = free_spinner("cpu", w * axis)
        state = model.state()
        gr.ExplicitIntegrator(scheme).run(model, state, h, turns * per_turn)
        exact = rot.quat_from_rotvec(w * state.time * axis)
        errs.append(float(rot.quat_angle_between(state.q[0], exact)))
        hs.append(h)
    assert abs(diag.convergence_order(hs, errs) - order) < 0.1


def test_step_size_limit_raises_and_leaves_state_unchanged(backend):
    omega = np.zeros((5, 3))
    omega[3] = [0.0, 0.0, 50.0]  # h|Ω| = 1.5 at h = 0.03
    b = gr.ModelBuilder()
    b.add_particles(np.arange(15.0).reshape(5, 3), omega=omega, v=[1.0, 0.0, 0.0])
    b.set_gravity([0.0, 0.0, -9.81])
    model = b.finalize(backend)
    state = model.state()
    integ = gr.ExplicitIntegrator("exact")
    integ.step(model, state, 0.01)  # fine: h|Ω| = 0.5
    before = {k: model.backend.to_host(getattr(state, k)).copy() for k in ("x", "v", "q", "omega", "F", "RM")}
    t, n = state.time, state.step
    with pytest.raises(gr.StepSizeError) as info:
        integ.step(model, state, 0.03)
    msg = str(info.value)
    assert "particle 3" in msg and "1.5" in msg and "(23)" in msg and "step 2" in msg
    assert info.value.particle == 3 and info.value.value == pytest.approx(1.5)
    for k, a in before.items():
        np.testing.assert_array_equal(model.backend.to_host(getattr(state, k)), a, err_msg=k)
    assert (state.time, state.step) == (t, n)
    integ.step(model, state, 0.01)  # and the run can go on with a smaller step
    assert state.step == 2


@pytest.mark.parametrize("scheme", ["verlet", "campello"])
def test_rotation_limit_of_the_truncated_maps(scheme):
    """(25) and (27) keep the same limit: incremental rotation below π/2 (|Δα| < 2)."""
    model = free_spinner("cpu", [0.0, 30.0, 0.0], n=2)
    state = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    integ.step(model, state, 0.06)  # |Δα|/2 = 0.9
    with pytest.raises(gr.StepSizeError, match="particle 0"):
        integ.step(model, state, 0.07)  # |Δα|/2 = 1.05


def test_nan_is_reported_with_particle_and_state_kept(backend):
    model = free_spinner(backend, [0.0, 0.0, 1.0], n=4)
    state = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.step(model, state, 0.01)
    xp = model.backend.xp
    state.v[2, 1] = xp.nan
    x_before = model.backend.to_host(state.x).copy()
    with pytest.raises(gr.NonFiniteError, match=r"particle 2: x = \[") as exc:
        integ.step(model, state, 0.01)
    assert np.isnan(exc.value.value) and exc.value.step == 2 and exc.value.particle == 2
    np.testing.assert_array_equal(model.backend.to_host(state.x), x_before)
    assert state.step == 1


def test_nan_orientation_is_reported():
    model = free_spinner("cpu", [0.0, 0.0, 1.0], n=3)
    state = model.state()
    state.q[1, 0] = np.nan
    with pytest.raises(gr.NonFiniteError, match=r"particle 1: q = \[") as exc:
        gr.ExplicitIntegrator("exact").step(model, state, 0.01)
    assert np.isnan(exc.value.value)
    state.q[1, 0] = 1.0
    state.v[1, 2] = np.inf  # the step carries it into the position: the first field named
    with pytest.raises(gr.NonFiniteError, match=r"particle 1: x = \[") as exc:
        gr.ExplicitIntegrator("exact").step(model, state, 0.01)
    assert exc.value.value == np.inf


@pytest.mark.parametrize("h", [0.0, -1e-3, float("nan"), float("inf"), "big"])
def test_bad_step_size(h):
    model = free_spinner("cpu", [0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="h: "):
        gr.ExplicitIntegrator("exact").step(model, model.state(), h)


def test_scheme_names():
    assert gr.ExplicitIntegrator("23").scheme == "exact"
    assert gr.ExplicitIntegrator("25").scheme == "verlet"
    assert gr.ExplicitIntegrator("27").scheme == "campello"
    with pytest.raises(ValueError, match="scheme: unknown explicit map 'rk4'"):
        gr.ExplicitIntegrator("rk4")


@pytest.mark.parametrize("scheme", SCHEMES)
def test_gravity_free_fall_and_momenta(scheme, backend, rng):
    """Uniform gravity: x is exact for (23)/(25) (velocity Verlet integrates constant
    acceleration exactly); linear momentum grows by exactly h Σ m g per step; the spin
    part of angular momentum is untouched."""
    g = np.array([0.0, -1.0, -9.81])
    b = gr.ModelBuilder()
    x0, v0, w0 = rng.normal(size=(6, 3)), rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    m = rng.uniform(0.5, 2.0, 6)
    b.add_particles(x0, v=v0, omega=w0, mass=m, inertia=0.1)
    b.set_gravity(g)
    model = b.finalize(backend)
    state = model.state()
    h, steps = 0.01, 50
    p0 = diag.linear_momentum(model, state)
    gr.ExplicitIntegrator(scheme).run(model, state, h, steps)
    t = steps * h
    np.testing.assert_allclose(diag.linear_momentum(model, state), p0 + t * m.sum() * g, rtol=1e-13, atol=1e-12)
    if scheme != "campello":
        np.testing.assert_allclose(model.backend.to_host(state.x), x0 + v0 * t + 0.5 * g * t * t, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(model.backend.to_host(state.omega), w0)
    assert state.time == pytest.approx(t)


def test_angular_momentum_of_free_particles_is_conserved(backend, rng):
    b = gr.ModelBuilder()
    b.add_particles(rng.normal(size=(8, 3)), v=rng.normal(size=(8, 3)), omega=rng.normal(size=(8, 3)),
                    mass=rng.uniform(1, 2, 8), inertia=rng.uniform(0.1, 0.3, 8))  # fmt: skip
    model = b.finalize(backend)
    state = model.state()
    L0 = diag.angular_momentum(model, state)
    gr.ExplicitIntegrator("exact").run(model, state, 0.01, 200)
    np.testing.assert_allclose(diag.angular_momentum(model, state), L0, rtol=0, atol=1e-13 * np.abs(L0).max())


def test_failed_step_with_bonds_contacts_and_breakage_changes_nothing():
    """A step that would break bonds and move contacts, but fails on one particle's
    rotation limit, leaves every array (broken flags included) as it was."""
    from granular.validation import torus_setup as T

    omega = np.zeros((T.N_P, 3))
    omega[17] = [0.0, 0.0, 400.0]  # h|Ω| = 2 at h = 5e-3: outside map (23)'s domain
    b = T.torus_builder(strain_max=1e-4, omega=omega)
    model = b.finalize("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("exact")
    for _ in range(130):  # into the wall with small steps: contacts loaded, bonds near breaking
        integ.step(model, s, 2e-4)
    broken_before = int(s.broken.sum())
    before = {k: getattr(s, k).copy() for k in ("x", "v", "q", "omega", "F", "RM", "broken")}
    with pytest.raises(gr.StepSizeError, match="particle 17"):
        integ.step(model, s, 5e-3)
    for k, a in before.items():
        np.testing.assert_array_equal(getattr(s, k), a, err_msg=k)
    assert int(s.broken.sum()) == broken_before
