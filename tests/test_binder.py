"""Particle-binder interactions (paper 003, Sect. 4): derivatives, hand-derived values,
exact antisymmetry, momentum conservation, breakage, bad input."""

import json
import pathlib

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.particles import diagnostics as diag
from granular.particles.forces import forces_at
from granular.validation import torus_setup as T

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "binder.json").read_text())


def random_cluster(backend, rng, family, n=6):
    """n particles in a small box (so contacts overlap), random reference orientations,
    bonds along a chain plus one chord; evaluated at a configuration moved by finite
    displacements and rotations (up to ~1 rad)."""
    x0 = rng.uniform(0, 1.2, size=(n, 3))
    q0 = rot.quat_from_rotvec(rng.normal(size=(n, 3)))
    b = gr.ModelBuilder()
    b.add_particles(x0, orientation=q0, radius=rng.uniform(0.4, 0.7, n))
    pairs = np.array([[k, k + 1] for k in range(n - 1)] + [[0, n - 1]])
    if family == "bonds":
        b.add_bonds(pairs, ka=rng.uniform(50, 200, len(pairs)), ks=rng.uniform(50, 200, len(pairs)),
                    km=rng.uniform(1, 10, len(pairs)))  # fmt: skip
    elif family == "contacts":
        b.set_contacts(2100.0, allow_initial_overlap=True)
    elif family == "walls":
        for _ in range(3):
            nrm = rng.normal(size=3)
            b.add_wall(nrm, offset=float(nrm @ x0.mean(axis=0) / np.linalg.norm(nrm)), k=rng.uniform(500, 2000), allow_initial_overlap=True)
    model = b.finalize(backend)
    x = x0 + rng.normal(scale=0.15, size=(n, 3))
    q = rot.quat_multiply(rot.quat_from_rotvec(rng.normal(scale=0.6, size=(n, 3))), q0)
    xp = model.backend.xp
    return model, xp.asarray(x), xp.asarray(q)


@pytest.mark.parametrize("family", ["bonds", "contacts", "walls"])
def test_forces_and_moments_are_minus_energy_derivatives(family, backend):
    rng = np.random.default_rng({"bonds": 1, "contacts": 2, "walls": 3}[family])
    model, x, q = random_cluster(backend, rng, family)
    be = model.backend
    F, RM, E = forces_at(model, x, q)
    F, RM = be.to_host(F), be.to_host(RM)
    assert sum(abs(v) for v in E.values()) > 1e-3  # the configuration is actually loaded

    def U(xx, qq):
        return sum(forces_at(model, be.asarray(xx), be.asarray(qq))[2].values())

    xh, qh = be.to_host(x), be.to_host(q)
    eps = 1e-6
    for i in range(model.n):
        for c in range(3):
            d = np.zeros(3)
            d[c] = eps
            xp_, xm_ = xh.copy(), xh.copy()
            xp_[i] += d
            xm_[i] -= d
            dUdx = (U(xp_, qh) - U(xm_, qh)) / (2 * eps)
            qp, qm = qh.copy(), qh.copy()
            qp[i] = rot.quat_multiply(rot.quat_from_rotvec(d), qh[i])
            qm[i] = rot.quat_multiply(rot.quat_from_rotvec(-d), qh[i])
            dUdt = (U(xh, qp) - U(xh, qm)) / (2 * eps)
            assert abs(F[i, c] + dUdx) <= 1e-6 * max(1.0, np.abs(F).max()), (family, i, c, F[i, c], -dUdx)
            assert abs(RM[i, c] + dUdt) <= 1e-6 * max(1.0, np.abs(RM).max()), (family, i, c, RM[i, c], -dUdt)


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["name"])
def test_values_derived_by_hand(case, backend):
    b = gr.ModelBuilder()
    b.add_particles(np.array(case["x0"], float), orientation=np.array(case["q0"], float), radius=0.5)
    if case.get("bonds", True):
        b.add_bonds([[0, 1]], ka=case["ka"], ks=case["ks"], km=case["km"])
    if case["kpp"] is not None:
        b.set_contacts(case["kpp"], allow_initial_overlap=True)
    for w in case["walls"]:
        b.add_wall(w["normal"], w["offset"], k=w["k"], allow_initial_overlap=True)
    model = b.finalize(backend)
    be = model.backend
    F, RM, E = forces_at(model, be.asarray(np.array(case["x"], float)), be.asarray(np.array(case["q"], float)))
    atol = case.get("atol", 1e-12)
    np.testing.assert_allclose(be.to_host(F), case["F"], rtol=1e-13, atol=atol)
    np.testing.assert_allclose(be.to_host(RM), case["RM"], rtol=1e-13, atol=atol)
    for key, value in case["U"].items():
        assert E[key] == pytest.approx(value, rel=1e-13, abs=atol), key


def test_pair_forces_are_exactly_antisymmetric(backend, rng):
    x0 = np.array([[0.0, 0.0, 0.0], [0.93, 0.1, -0.05]])
    b = gr.ModelBuilder()
    b.add_particles(x0, orientation=rot.quat_from_rotvec(rng.normal(size=(2, 3))), radius=0.5)
    b.add_bonds([[1, 0]], ka=200.0, ks=200.0, km=10.0)
    b.set_contacts(2100.0, allow_initial_overlap=True)
    model = b.finalize(backend)
    be = model.backend
    x = be.asarray(x0 + rng.normal(scale=0.05, size=(2, 3)))
    q = be.asarray(rot.quat_from_rotvec(rng.normal(size=(2, 3))))
    F, RM, E = forces_at(model, x, q)
    F = be.to_host(F)
    assert E["U_pp"] > 0 and E["U_s"] > 0 and E["U_m"] > 0
    np.testing.assert_array_equal(F[0], -F[1])
    # angular momentum balance of the pair: (x_0 - x_1) × F_0 + RM_0 + RM_1 = 0
    xh, RM = be.to_host(x), be.to_host(RM)
    torque = np.cross(xh[0] - xh[1], F[0]) + RM[0] + RM[1]
    assert np.abs(torque).max() <= 1e-12 * np.abs(F).max()


def permuted_torus(perm, q0):
    """The impact torus (initial orientations ``q0``) with particle i stored at row perm[i]."""
    b0 = T.torus_builder()
    m0 = b0.finalize("cpu")
    x, v, _, w = m0._initial
    inv = np.argsort(perm)
    b = gr.ModelBuilder()
    b.add_particles(x[inv], v=v[inv], orientation=q0[inv], omega=w[inv], radius=0.5 * T.D_P)
    ring = np.stack([np.arange(T.N_P), np.roll(np.arange(T.N_P), -1)], axis=1)
    b.add_bonds(perm[ring][::-1], ka=T.K_A, ks=T.K_S, km=T.K_M)  # bond order reversed too
    b.set_contacts(T.K_PP)
    b.add_wall([1.0, 0.0, 0.0], 0.0, k=T.K_PP)
    return b.finalize("cpu")


def test_particle_order_does_not_change_the_trajectory(rng):
    """Random initial orientations (every bond term, bending included, is loaded), 1000
    steps of the impact: identical bit for bit under a random renumbering."""
    perm = rng.permutation(T.N_P)
    q0 = rot.quat_from_rotvec(rng.normal(size=(T.N_P, 3)))
    out = []
    for p in (np.arange(T.N_P), perm):
        model = permuted_torus(p, q0)
        s = model.state()
        tilt = rot.quat_from_rotvec(np.full((T.N_P, 3), 0.1))  # the same small turn of every particle
        F, RM, E = forces_at(model, s.x, rot.quat_multiply(tilt, s.q))
        out.append((F[p], RM[p]))
        gr.ExplicitIntegrator("verlet").run(model, s, 1e-3, 1000)
        out.append((s.x[p], s.q[p], s.v[p], s.omega[p]))
    assert diag.energies(model, s)["U_m"] > 0
    np.testing.assert_array_equal(out[2][0], out[0][0])  # forces at a rotated configuration
    np.testing.assert_array_equal(out[2][1], out[0][1])  # moments, bending included
    for a, b_, name in zip(out[1], out[3], ("x", "q", "v", "omega")):
        np.testing.assert_array_equal(b_, a, err_msg=name)


@pytest.mark.parametrize("scheme", ["exact", "verlet"])
def test_free_flight_conserves_momenta(scheme):
    """Random velocities and spins, no wall, 10^4 steps: P and L = Σ(x × m v + J Ω) to 1e-12."""
    rng = np.random.default_rng(11)
    model = T.torus_model("cpu", wall=False, velocity=rng.normal(scale=0.3, size=(T.N_P, 3)),
                          omega=rng.normal(scale=0.5, size=(T.N_P, 3)))  # fmt: skip
    s = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    integ.prepare(model, s)
    P0, L0 = diag.linear_momentum(model, s), diag.angular_momentum(model, s)
    integ.run(model, s, 1e-3, 10_000)
    e = diag.energies(model, s)
    assert e["U_a"] > 1e-3 and e["U_m"] > 1e-3  # the ring is really deforming
    P, L = diag.linear_momentum(model, s), diag.angular_momentum(model, s)
    assert np.abs(P - P0).max() <= 1e-12 * np.abs(P0).max()
    assert np.abs(L - L0).max() <= 1e-12 * np.abs(L0).max()


def test_wall_impact_keeps_the_momenta_the_wall_cannot_change():
    """Wall normal e1: P_y, P_z and L_x are unaffected by the wall force."""
    rng = np.random.default_rng(5)
    v = np.array([-1.0, 0.2, -0.1]) + rng.normal(scale=0.05, size=(T.N_P, 3))
    model = T.torus_model("cpu", velocity=v, omega=rng.normal(scale=0.3, size=(T.N_P, 3)))
    s = model.state()
    integ = gr.ExplicitIntegrator("exact")
    integ.prepare(model, s)
    P0, L0 = diag.linear_momentum(model, s), diag.angular_momentum(model, s)
    seen_wall = []
    integ.run(model, s, 1e-3, 1500, callback=lambda st: seen_wall.append(diag.energies(model, st)["U_pw"]), every=50)
    assert max(seen_wall) > 1e-3
    P, L = diag.linear_momentum(model, s), diag.angular_momentum(model, s)
    assert abs(P[0] - P0[0]) > 1.0  # the wall did push
    np.testing.assert_allclose(P[1:], P0[1:], rtol=1e-12, atol=1e-12 * np.abs(P0).max())
    assert abs(L[0] - L0[0]) <= 1e-12 * np.abs(L0).max()


def two_particles(velocity, strain_max=np.inf, angle_max=np.inf, omega=(0.0, 0.0, 0.0)):
    b = gr.ModelBuilder()
    b.add_particles(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), v=np.array([-velocity, velocity]),
                    omega=np.array([[0.0, 0.0, 0.0], omega]), radius=0.4)  # fmt: skip
    b.add_bonds([[0, 1]], ka=200.0, ks=200.0, km=10.0, strain_max=strain_max, angle_max=angle_max)
    return b.finalize("cpu")


def test_bond_breaks_once_and_its_energy_leaves_the_total():
    model = two_particles(np.array([0.6, 0.05, 0.0]), strain_max=0.05)
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(model, s)
    P0 = diag.linear_momentum(model, s)
    h = 1e-4
    history = []
    for _ in range(3000):
        before = diag.energies(model, s)
        integ.step(model, s, h)
        history.append((diag.broken_bonds(model, s), before, diag.energies(model, s)))
    counts = [c for c, _, _ in history]
    assert counts[-1] == 1 and counts[0] == 0
    k = counts.index(1)
    assert all(c == 1 for c in counts[k:])  # broke once, for good
    _, before, after = history[k]
    bond_energy = before["U_a"] + before["U_s"] + before["U_m"]
    assert bond_energy > 0.05 * before["total"]
    assert after["U_a"] == after["U_s"] == after["U_m"] == 0.0
    # the energy lost at the break is the bond's energy there (up to one step's change)
    assert abs((before["total"] - after["total"]) - bond_energy) <= 2e-2 * bond_energy
    # after the break the particles fly freely: kinetic energy constant
    assert history[-1][2]["total"] == pytest.approx(after["total"], rel=1e-12)
    np.testing.assert_allclose(diag.linear_momentum(model, s), P0, atol=1e-13)
    measures = model.bonds.measures(model, s)
    assert measures[0, 3] > 0.05  # strain kept being reported after the break


def test_bond_breaks_on_relative_rotation():
    model = two_particles(np.zeros(3), angle_max=0.5, omega=(0.0, 0.0, 3.0))
    s = model.state()
    gr.ExplicitIntegrator("exact").run(model, s, 1e-3, 400)
    assert diag.broken_bonds(model, s) == 1
    assert model.bonds.measures(model, s)[0, 4] > 0.5


def test_no_breakage_by_default():
    model = two_particles(np.array([0.6, 0.0, 0.0]))
    s = model.state()
    gr.ExplicitIntegrator("verlet").run(model, s, 1e-3, 500)
    assert diag.broken_bonds(model, s) == 0
    assert not model.bonds.can_break


@pytest.mark.gpu
def test_torus_forces_cpu_and_gpu_agree(gpu_backend):
    out = {}
    ref = T.torus_model("cpu")
    s = ref.state()
    gr.ExplicitIntegrator("verlet").run(ref, s, 1e-3, 300)  # deformed, in contact with the wall
    for be in ("cpu", gpu_backend):
        model = T.torus_model(be)
        b = model.backend
        F, RM, E = forces_at(model, b.asarray(s.x), b.asarray(s.q))
        out[b.name] = (b.to_host(F), b.to_host(RM), E)
    for k in range(2):
        np.testing.assert_allclose(out["gpu"][k], out["cpu"][k], rtol=1e-12, atol=1e-12 * np.abs(out["cpu"][k]).max())
    for key in out["cpu"][2]:
        assert out["gpu"][2][key] == pytest.approx(out["cpu"][2][key], rel=1e-12, abs=1e-14)


def test_excluding_bonded_contacts():
    x0 = np.array([[0.0, 0.0, 0.0], [0.9, 0.0, 0.0], [0.0, 0.9, 0.0]])
    for bonded, expected_pairs in ((True, 2), (False, 1)):
        b = gr.ModelBuilder()
        b.add_particles(x0, radius=0.5)
        b.add_bonds([[0, 1]], ka=1.0)
        b.set_contacts(100.0, bonded_contacts=bonded, allow_initial_overlap=True)
        model = b.finalize("cpu")
        _, _, E = forces_at(model, model.state().x, model.state().q)
        one_pair = 0.4 * 100.0 * 0.1**2.5
        assert E["U_pp"] == pytest.approx(expected_pairs * one_pair, rel=1e-12)


@pytest.mark.parametrize(
    "build,match",
    [
        (lambda b: b.add_bonds([[0, 5]]), "bonds: bond 0 names particle 5, but particles are 0..2"),
        (lambda b: b.add_bonds([[0, 1], [1, 0]]), r"bonds: bond 1 duplicates bond 0 \(particles 0, 1\)"),
        (lambda b: b.add_bonds([[2, 2]]), "bonds: bond 0 joins particle 2 to itself"),
        (lambda b: b.add_bonds([[0, 1]], ka=-1.0), "ka: must be finite and >= 0; bond 0 of this call has -1.0"),
        (lambda b: b.add_bonds([[0, 1], [1, 2]], km=[1.0, np.nan]), "km: must be finite and >= 0; bond 1"),
        (lambda b: b.add_bonds([[0, 1]], strain_max=0.0), "strain_max: must be > 0"),
        (lambda b: b.add_bonds([[0.5, 1]]), "bonds: expected integer pairs"),
        (lambda b: b.add_wall([0, 0, 0]), "wall 0: normal has zero length"),
        (lambda b: b.add_wall([1, 0]), "wall 0: normal must be 3 finite numbers"),
        (lambda b: b.add_wall([1, 0, 0], k=-5), "wall 0: k: must be finite and >= 0"),
        (lambda b: b.set_contacts(-1.0), "kpp: must be finite and >= 0"),
    ],
)
def test_bad_bond_and_wall_input(build, match):
    b = gr.ModelBuilder()
    b.add_particles(np.array([[0.0, 0, 0], [1.0, 0, 0], [0.0, 1.0, 0]]))
    with pytest.raises(ValueError, match=match):
        build(b)


def test_zero_rest_length_and_wall_without_stiffness():
    b = gr.ModelBuilder()
    b.add_particles(np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0]]))
    b.add_bonds([[0, 1], [1, 2]], ka=1.0)
    with pytest.raises(ValueError, match=r"bonds: bond 1 \(particles 1, 2\) has zero rest length"):
        b.finalize("cpu")
    b = gr.ModelBuilder()
    b.add_particles(np.zeros((1, 3)))
    b.add_wall([1, 0, 0])
    with pytest.raises(ValueError, match="wall 0: no stiffness k given"):
        b.finalize("cpu")


def test_a_run_with_breaking_bonds_has_a_released_energy_column_that_closes_the_balance(tmp_path):
    """Issue 15, item 6: broken bonds take their energy with them; ``series.csv`` has it
    (``U_released``), ``total + U_released`` is conserved as well as ``total`` is when
    no bond breaks (the same impact with unbreakable bonds), and the energy plot draws
    that sum instead of showing the drop as drift."""
    from granular.io import read_series
    from granular.run import Simulation

    def impact(strain_max, out):
        b = gr.ModelBuilder()
        gr.shapes.add_torus(b, n_p=40, ring_diameter=3.0, center=(2.0, 0, 0), velocity=(-2, 0, 0),
                            strain_max=strain_max)  # fmt: skip
        b.set_contacts(2100.0)
        b.add_wall([1, 0, 0], 0.0, 2100.0)
        m = b.finalize("cpu")
        assert Simulation(m, m.state(), out, dt=1e-3, series_every=0.02).run(steps=3000)["finished"]
        return read_series(str(out / "series.csv"))

    whole = impact(np.inf, tmp_path / "whole")
    drift = np.abs(whole["total"] - whole["total"][0]).max()  # the scheme's accuracy here
    assert "U_released" not in whole
    s = impact(0.01, tmp_path / "broken")
    assert s["broken_bonds"][-1] > 10
    released = s["U_released"][-1]
    balance = np.abs(s["total"] + s["U_released"] - s["total"][0]).max()
    assert released > 5 * drift  # the drop of total is the bonds' energy ...
    assert balance < 1.5 * drift  # ... and with it the balance closes as well as without breakage
    assert (tmp_path / "broken" / "plots" / "energies.png").stat().st_size > 0
