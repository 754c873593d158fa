"""The stable-step estimate (granular.particles.stability) against exact modes and measured limits,
and its use at setup: a step above it is refused unless the scene or the command line
says to go on (issue 15, item 1)."""

import json
import math
import os

import numpy as np
import pytest

from granular import cli
from granular.particles import diagnostics as diag
from granular.particles.integrators import ExplicitIntegrator, IntegrationError
from granular.particles.builder import ModelBuilder
from granular.particles.shapes import add_torus
from granular.particles.stability import (
    CONTACT_OVERLAP,
    collision_overlap,
    damped_limit,
    estimate_stable_step,
    hertz_stiffness,
)
from kernels.contact_laws.hertz_mindlin import PAIR_ALPHA, PAIR_ESTAR

ROOT = os.path.join(os.path.dirname(__file__), "..")
TORUS = os.path.join(ROOT, "scenes", "torus_impact.toml")
R0 = 3.0 * math.sin(math.pi / 80)  # the torus' rest length (= particle diameter)


def ring(velocity=(0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0), wall=False):
    b = ModelBuilder()
    add_torus(b, 80, 3.0, center=(1.5 * R0 + 1.5, 0.0, 0.0), velocity=velocity, omega=omega)
    if wall:
        b.add_wall([1.0, 0.0, 0.0], 0.0, k=2100.0)
    return b.finalize("cpu")


def max_energy_error(model, h, t_end):
    integ, state = ExplicitIntegrator("verlet"), model.state()
    e0 = diag.total_energy(model, state)
    worst = 0.0
    try:
        for k in range(int(round(t_end / h))):
            integ.step(model, state, h)
            if k % 10 == 0:
                worst = max(worst, abs(diag.total_energy(model, state) - e0) / e0)
                if not worst < 100:
                    return math.inf
    except IntegrationError:
        return math.inf
    return worst


def test_dimer_and_lattice_are_exact():
    # two masses on an axial spring: omega^2 = k/mu = 2 k/m, k = K^a / r0^2
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]], mass=3.0, inertia=1.0, radius=0.5)
    b.add_bonds([[0, 1]], ka=50.0)
    est = estimate_stable_step(b.finalize("cpu"))
    assert est.mode == "bond axial" and est.h_max == pytest.approx(2.0 / math.sqrt(2 * (50.0 / 4.0) / 3.0), rel=1e-12)
    # simple-cubic lattice with axial springs: the highest mode is the chain's, 2 sqrt(k/m)
    b = ModelBuilder()
    idx = np.stack(np.meshgrid(*(np.arange(4),) * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    b.add_particles(idx * 1.5, mass=2.0, radius=0.5)
    d = np.linalg.norm(idx[:, None] - idx[None], axis=-1)
    b.add_bonds(np.argwhere(np.triu(d == 1.0)), ka=200.0)
    est = estimate_stable_step(b.finalize("cpu"))
    # (the closed-form eigenvalue is good to ~1e-8 where two eigenvalues coincide, as here)
    assert est.h_max == pytest.approx(1.5 * math.sqrt(2.0 / 200.0), rel=1e-8) and est.mode == "bond axial"


def test_pendulum_spin_and_collision_modes():
    b = ModelBuilder()
    i = b.add_particle([0.0, 0.0, 0.0], mass=2.0, inertia=0.5)
    b.add_pendulum(i, rho0=[0.0, 0.0, 0.3], g=9.0)
    est = estimate_stable_step(b.finalize("cpu"))
    assert est.mode == "pendulum" and est.h_max == pytest.approx(2.0 / math.sqrt(2.0 * 9.0 * 0.3 / 0.5), rel=1e-12)
    # a fast spin: the RRP map's closed form needs h |Omega| < 1 (map (23)), < 2 (map (25))
    b = ModelBuilder()
    b.add_particle([0.0, 0.0, 0.0], omega=[0.0, 0.0, 400.0])
    model = b.finalize("cpu")
    assert estimate_stable_step(model, scheme="exact").h_max == pytest.approx(1 / 400.0)
    est = estimate_stable_step(model, scheme="verlet")
    assert est.mode == "rotation increment" and est.h_max == pytest.approx(2 / 400.0)
    # two free particles approaching at 3 each: Hertz stiffness at the collision's overlap
    b = ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]], v=[[3.0, 0.0, 0.0], [-3.0, 0.0, 0.0]], radius=1.0)
    b.set_contacts(1000.0)
    est = estimate_stable_step(b.finalize("cpu"))
    delta = collision_overlap(1000.0, 0.5, 6.0)
    assert delta > CONTACT_OVERLAP and est.assumed["overlap_pp"] == pytest.approx(delta)
    assert est.mode == "particle-particle contact"
    assert est.h_max == pytest.approx(2.0 / math.sqrt(2 * hertz_stiffness(1000.0, 2.0, delta)), rel=1e-12)
    # (2/5) K delta^(5/2) = 1/2 mu v^2 at that overlap
    assert 0.4 * 1000.0 * delta**2.5 == pytest.approx(0.5 * 0.5 * 36.0)


def test_torus_ring_estimate_matches_the_measured_limit():
    """The bonded ring alone: the axial chain mode gives h < r0 sqrt(m/K^a) = 8.3e-3;
    measured, stable at 8e-3 and unstable at 9e-3."""
    rng = np.random.default_rng(1)
    model = ring(velocity=rng.normal(scale=0.1, size=(80, 3)), omega=rng.normal(scale=0.1, size=(80, 3)))
    est = estimate_stable_step(model)
    assert est.mode == "bond axial" and not est.with_
    assert est.h_max == pytest.approx(R0 * math.sqrt(1.0 / 200.0), rel=2e-3)
    assert 8e-3 < est.h_max < 9e-3
    assert max_energy_error(model, 8e-3, 5.0) < 0.5
    assert max_energy_error(model, 9e-3, 5.0) == math.inf


def test_torus_impact_estimate_is_below_the_measured_limit():
    """With the wall and the contacts between bonded neighbours the stiffest mode is the
    Hertz contact; the estimate (2.8e-3) is below the measured limit (stable at 3e-3)."""
    from granular.run.scene import build_model, load_scene

    model, run = build_model(load_scene(TORUS), backend="cpu")
    est = estimate_stable_step(model, scheme=run.integrator)
    assert 2.5e-3 < est.h_max < 3e-3
    assert est.mode == "particle-particle contact" and set(est.with_) == {"wall contact", "bond axial"}
    assert est.modes["bond axial"] == pytest.approx(R0 * math.sqrt(1.0 / 200.0), rel=2e-3)
    assert run.dt < est.h_max  # the shipped scene is accepted


@pytest.mark.long
def test_torus_impact_measured_limit():
    from granular.run.scene import build_model, load_scene

    model, _ = build_model(load_scene(TORUS), backend="cpu")
    assert max_energy_error(model, 3e-3, 10.0) < 0.2
    assert max_energy_error(model, 4e-3, 10.0) == math.inf


def scene_with(tmp_path, name="t.toml", drop=None, **run):
    text = open(TORUS).read()
    for key, value in run.items():
        lines = text.splitlines()
        if any(ln.split("=")[0].strip() == key for ln in lines):
            lines = [f"{key} = {value}" if ln.split("=")[0].strip() == key else ln for ln in lines]
        else:
            at = lines.index("[run]") + 1
            lines.insert(at, f"{key} = {value}")
        text = "\n".join(lines) + "\n"
    if drop:
        a = text.index(f"[{drop}]")
        b = text.index("[", a + len(drop) + 2)
        text = text[:a] + text[b:]
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_step_above_the_estimate_is_refused_at_setup(tmp_path, capsys):
    scene = scene_with(tmp_path, dt="0.05")
    out = tmp_path / "o"
    assert cli.main(["run", scene, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "run.dt = 0.05 is above the stable-step estimate 0.00283" in err
    assert "particle-particle contact" in err and "--allow-unstable-step" in err and "Traceback" not in err
    assert not out.exists()
    # without contacts the wall and the axial mode remain
    scene = scene_with(tmp_path, "nc.toml", drop="contacts", dt="0.05")
    assert cli.main(["run", scene, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "stable-step estimate 0.0039 from the wall contact" in err and not out.exists()


def test_estimate_in_the_start_line_the_start_event_and_run_json(tmp_path, capsys):
    out = tmp_path / "o"
    assert cli.main(["run", TORUS, "--out", str(out), "--steps", "4"]) == 0
    err = capsys.readouterr().err
    assert "stable-step estimate 0.00283 from the particle-particle contact" in err
    info = json.loads((out / "run.json").read_text())
    assert info["stable_step"]["h_max"] == pytest.approx(2.83e-3, rel=1e-2)
    assert info["stable_step"]["mode"] == "particle-particle contact"
    assert info["stable_step"]["modes"]["bond axial"] == pytest.approx(8.33e-3, rel=1e-2)
    assert cli.main(["run", TORUS, "--out", str(out), "--steps", "4", "--log-json", "--overwrite"]) == 0
    start = json.loads(capsys.readouterr().out.splitlines()[0])
    assert start["event"] == "start" and start["stable_step"] == info["stable_step"]["h_max"]
    assert "particle-particle contact" in start["stable_step_mode"]


def _resting_sphere(e, velocity, at=None):
    """A glass sphere resting on a glass floor under strong gravity (the dissipative law,
    no friction), at its equilibrium overlap (``at``: the overlap it starts from)."""
    b = ModelBuilder()
    b.add_material("glass", 7e10, 0.25, 2500.0, e, 0.0)
    b.add_particles(np.array([[0.0, 0.0, 0.01 - (at or 0.0)]]), radius=0.01, material="glass")
    b.add_wall([0, 0, 1], 0.0, material="glass", allow_initial_overlap=True)
    b.set_gravity([0, 0, -9.81e3])
    b.set_contacts(velocity=velocity)
    return b.finalize("cpu")


@pytest.mark.parametrize("scheme,velocity,e", [("verlet", "predicted", 0.1), ("verlet", "predicted", 0.5),
                                               ("verlet", "half", 0.1), ("exact", "predicted", 0.1),
                                               ("campello", "predicted", 0.1)])  # fmt: skip
def test_damped_contact_is_stable_below_the_stated_limit_and_not_above(scheme, velocity, e):
    """The linearised resting contact (tangent stiffness ``2 E* a``, damping ratio
    ``α / 2 sqrt(1.5)``) is stable below :func:`damped_limit` of its scheme and dashpot
    velocity and leaves its equilibrium above it. With e = 0.1 (ζ = 1.14) the predicted
    velocity's limit is 0.56 of the lagging one: the step 1.2 times above it, which leaves
    equilibrium, is still below the lagging formula."""
    m0 = _resting_sphere(e, velocity)
    mass, (es, alpha) = float(m0.mass[0]), m0.law.pair_host[0, [PAIR_ESTAR, PAIR_ALPHA]]
    overlap = (mass * 9.81e3 / (4.0 / 3.0 * es * math.sqrt(0.01))) ** (2.0 / 3.0)
    omega = math.sqrt(2.0 * es * math.sqrt(0.01 * overlap) / mass)
    zeta = alpha / (2.0 * math.sqrt(1.5))
    lagging = scheme == "campello" or velocity == "half"
    h_c = damped_limit(zeta, lagging) / omega
    if e == 0.1 and not lagging:
        assert 1.2 * h_c < damped_limit(zeta, True) / omega
    for factor, stable in ((0.9, True), (1.2, False)):
        m = _resting_sphere(e, velocity, at=1.001 * overlap)
        s = m.state()
        ExplicitIntegrator(scheme).advance(m, s, factor * h_c, 20000)
        departed = abs(float(s.x[0, 2]) - (0.01 - overlap)) / overlap
        assert (departed < 1e-9) if stable else (departed > 1e-2), (factor, departed)


def test_damped_limit_is_where_the_amplification_matrix_reaches_one():
    """:func:`damped_limit` against the spectral radius of one step of each map on
    ``x'' = -x - 2ζ x'`` (state x, v, F; ω = 1), computed here independently."""

    def radius(h, zeta, lagging):
        cols = []
        for e in np.eye(3):
            x, v, f = e
            half = v + 0.5 * h * f
            x1 = x + h * half
            seen = half if lagging else half + 0.5 * h * f
            f1 = -x1 - 2.0 * zeta * seen
            cols.append([x1, half + 0.5 * h * f1, f1])
        return max(abs(np.linalg.eigvals(np.array(cols).T)))

    for zeta in (0.0, 0.05, 0.285, 1.0, 1.4):
        for lagging in (False, True):
            hc = damped_limit(zeta, lagging)
            assert radius(0.999 * hc, zeta, lagging) <= 1.0 + 1e-12
            assert radius(1.001 * hc, zeta, lagging) > 1.0


def test_the_estimate_takes_the_limit_of_its_scheme_and_dashpot_velocity():
    """A damped contact's estimate is ``damped_limit`` of the map and the dashpot velocity:
    the predicted velocity of (23)/(25) gives the lower limit, (27) and ``half`` the other,
    in the ratio of the two formulas."""
    def estimate(scheme, velocity):
        b = ModelBuilder()
        b.add_material("glass", 7e10, 0.25, 2500.0, 0.1, 0.0)
        b.add_particles(np.array([[0.0, 0.0, 0.0101]]), v=[[0.0, 0.0, -1.0]], radius=0.01, material="glass")
        b.add_wall([0, 0, 1], 0.0, material="glass")
        b.set_contacts(velocity=velocity)
        m = b.finalize("cpu")
        return estimate_stable_step(m, scheme=scheme), m

    pred, m = estimate("verlet", "predicted")
    zeta = pred.assumed["damping_ratio"]
    ratio = damped_limit(zeta, True) / damped_limit(zeta, False)
    assert pred.mode == "dissipative contact" and ratio > 1.5
    for scheme, velocity in (("verlet", "half"), ("campello", "predicted")):
        other, _ = estimate(scheme, velocity)
        assert other.h_max == pytest.approx(ratio * pred.h_max, rel=1e-12), (scheme, velocity)
    assert estimate("exact", "predicted")[0].h_max == pytest.approx(pred.h_max, rel=1e-12)
