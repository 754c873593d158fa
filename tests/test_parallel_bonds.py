"""Parallel bonds (binder moduli E, G and a bond radius; Potyondy & Cundall's stress
criterion and the combined force-moment criterion of LAMMPS ``bond bpm/rotational``):
forces and moments are minus the energy's derivatives (central differences), momentum
balance to round-off, the four pure responses against closed forms of the cylinder's
stiffnesses, breakage at the strength within one step, and per-bond strengths."""

import math

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot
from granular.particles.forces import forces_at
from granular.particles.strengths import draw_strengths

E, NU = 2.0e3, 0.3
G = E / (2 * (1 + NU))


def pair(radius=(0.5, 0.5), length=1.0, lam=0.8, backend="cpu", mass=1.0, inertia=1.0, **strength):
    """Two particles on the x axis bonded by one parallel bond."""
    b = gr.ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [length, 0.0, 0.0]], radius=list(radius), mass=mass, inertia=inertia)
    b.add_parallel_bonds([[0, 1]], young=E, poisson=NU, radius_ratio=lam, **strength)
    return b.finalize(backend)


def cylinder(radius=(0.5, 0.5), length=1.0, lam=0.8):
    rbar = lam * min(radius)
    area, inertia = math.pi * rbar**2, math.pi * rbar**4 / 4
    return {"rbar": rbar, "A": area, "I": inertia, "J": 2 * inertia, "kn": E * area / length,
            "ks": G * area / length, "kb": E * inertia / length, "kt": G * 2 * inertia / length}  # fmt: skip


def cluster(rng, backend="cpu", n=5):
    """Particles of random radii in a chain-like cluster, every neighbouring pair and a
    few others bonded, random reference orientations."""
    b = gr.ModelBuilder()
    x = np.cumsum(rng.normal(size=(n, 3)) * 0.3 + [0.9, 0.0, 0.0], axis=0)
    q = rot.quat_from_rotvec(rng.normal(size=(n, 3)) * 1.5)
    b.add_particles(x, orientation=q, radius=rng.uniform(0.3, 0.6, n), mass=rng.uniform(0.5, 2.0, n),
                    inertia=rng.uniform(0.05, 0.2, n))  # fmt: skip
    pairs = [[i, i + 1] for i in range(n - 1)] + [[0, 2], [1, 4]]
    b.add_parallel_bonds(pairs, young=E, poisson=NU, radius_ratio=rng.uniform(0.5, 1.0, len(pairs)))
    return b.finalize(backend)


def energy(model, x, q):
    return sum(forces_at(model, x, q)[2].values())


def deformed(model, rng, size):
    s = model.state()
    x = s.x + rng.normal(size=s.x.shape) * 0.1 * size
    q = rot.quat_multiply(rot.quat_from_rotvec(rng.normal(size=(model.n, 3)) * size), s.q)
    return x, q


@pytest.mark.parametrize("size", [0.02, 0.6], ids=["small-angles-series", "large-angles"])
def test_forces_and_moments_are_minus_the_energy_derivatives(size):
    rng = np.random.default_rng(3)
    model = cluster(rng)
    x, q = deformed(model, rng, size)
    F, RM, _ = forces_at(model, x, q)
    eps = 1e-6
    for i in range(model.n):
        for c in range(3):
            d = np.zeros(3)
            d[c] = eps
            xp_, xm_ = x.copy(), x.copy()
            xp_[i] += d
            xm_[i] -= d
            dUdx = (energy(model, xp_, q) - energy(model, xm_, q)) / (2 * eps)
            qp, qm = q.copy(), q.copy()
            qp[i] = rot.quat_multiply(rot.quat_from_rotvec(d), q[i])
            qm[i] = rot.quat_multiply(rot.quat_from_rotvec(-d), q[i])
            dUdth = (energy(model, x, qp) - energy(model, x, qm)) / (2 * eps)
            scale = max(1.0, np.abs(F).max(), np.abs(RM).max())
            assert abs(F[i, c] + dUdx) <= 2e-7 * scale, (i, c, F[i, c], -dUdx)
            assert abs(RM[i, c] + dUdth) <= 2e-7 * scale, (i, c, RM[i, c], -dUdth)


def test_momentum_balance_to_round_off():
    rng = np.random.default_rng(5)
    model = cluster(rng)
    x, q = deformed(model, rng, 0.8)
    F, RM, _ = forces_at(model, x, q)
    scale = np.abs(F).max() * np.abs(x).max() + np.abs(RM).max()
    assert np.abs(F.sum(axis=0)).max() <= 1e-13 * np.abs(F).max()
    assert np.abs(np.cross(x, F).sum(axis=0) + RM.sum(axis=0)).max() <= 1e-13 * scale


def test_axial_response_is_k_n_stretch_at_any_stretch():
    model = pair()
    c = cylinder()
    s = model.state()
    for stretch in (1e-4, 0.05, -0.2):
        x = s.x.copy()
        x[1, 0] += stretch
        F, RM, U = forces_at(model, x, s.q)
        assert F[1, 0] == pytest.approx(-c["kn"] * stretch, rel=1e-13)
        assert np.abs(F[:, 1:]).max() == 0 and np.abs(RM).max() == 0
        assert U["U_a"] == pytest.approx(0.5 * c["kn"] * stretch**2, rel=1e-13)


def test_torsion_response_is_k_t_angle_at_any_angle():
    model = pair()
    c = cylinder()
    s = model.state()
    for phi in (1e-3, 0.05, 1.2):
        q = s.q.copy()
        q[1] = rot.quat_from_rotvec(np.array([phi, 0.0, 0.0]))  # about the bond's axis
        F, RM, U = forces_at(model, s.x, q)
        assert RM[1, 0] == pytest.approx(-c["kt"] * phi, rel=1e-12)
        assert RM[0, 0] == pytest.approx(c["kt"] * phi, rel=1e-12)
        assert np.abs(F).max() <= 1e-12 * c["kt"] and np.abs(RM[:, 1:]).max() <= 1e-12 * c["kt"]
        assert U["U_m"] == pytest.approx(0.5 * c["kt"] * phi**2, rel=1e-12)


def test_bending_response_is_k_b_angle_at_any_angle():
    """Ends turned by ∓φ/2 about z: pure bending (the middle section does not shear)."""
    model = pair()
    c = cylinder()
    s = model.state()
    for phi in (1e-3, 0.05, 1.2):
        q = s.q.copy()
        q[0] = rot.quat_from_rotvec(np.array([0.0, 0.0, phi / 2]))
        q[1] = rot.quat_from_rotvec(np.array([0.0, 0.0, -phi / 2]))
        F, RM, U = forces_at(model, s.x, q)
        assert abs(RM[1, 2]) == pytest.approx(c["kb"] * phi, rel=1e-12)
        assert RM[0, 2] == pytest.approx(-RM[1, 2], rel=1e-12)
        assert np.abs(F).max() <= 1e-12 * c["kb"] and U["U_s"] <= 1e-25
        assert U["U_m"] == pytest.approx(0.5 * c["kb"] * phi**2, rel=1e-12)


def test_shear_response_is_k_s_offset():
    """End b moved by δ across the axis, no rotation: a shear force ``k_s L³ δ / r³``
    across the current axis (``k_s δ`` for small δ) and each end's moment ``F L/2``."""
    model = pair()
    c = cylinder()
    s = model.state()
    for delta in (1e-4, 0.1):
        x = s.x.copy()
        x[1, 1] += delta
        F, RM, U = forces_at(model, x, s.q)
        r = math.hypot(1.0, delta)
        n = np.array([1.0, delta, 0.0]) / r  # from a to b
        across = np.array([-delta, 1.0, 0.0]) / r
        fs = c["ks"] * delta / r**3  # ks L³ δ / r³ with L = 1
        expected = -fs * across - c["kn"] * (r - 1.0) * n
        np.testing.assert_allclose(F[1], expected, rtol=1e-12, atol=1e-14 * c["kn"])
        assert U["U_s"] == pytest.approx(0.5 * c["ks"] * (delta / r) ** 2, rel=1e-12)
        if delta < 1e-3:
            assert F[1, 1] == pytest.approx(-c["ks"] * delta, rel=1e-6)
            assert RM[0, 2] == pytest.approx(RM[1, 2], rel=1e-6)
            assert abs(RM[1, 2]) == pytest.approx(c["ks"] * delta * 0.5, rel=1e-6)


def test_unequal_radii_put_the_middle_section_in_proportion():
    """Arms ``r0 r_a/(r_a + r_b)`` and ``r0 r_b/(r_a + r_b)``: under a pure offset δ the
    ends' shear moments are ``F_s`` times their arms (small δ)."""
    model = pair(radius=(0.3, 0.6), length=0.9)
    s = model.state()
    x = s.x.copy()
    x[1, 1] += 1e-5
    _, RM, _ = forces_at(model, x, s.q)
    arms = 0.9 * np.array([0.3, 0.6]) / 0.9
    assert RM[0, 2] / RM[1, 2] == pytest.approx(arms[0] / arms[1], rel=1e-4)


def first_exceeding(model, omega=None, v=None, steps=300, dt=1e-3, load=None):
    """Step a heavy pair under prescribed motion; return (first step whose end state has
    ``load(x, q) > 1`` computed from the closed forms, the step that broke the bond)."""
    s = model.state()
    if v is not None:
        s.v[1] = v
    if omega is not None:
        s.omega[:] = omega
    integ = gr.ExplicitIntegrator()
    integ.prepare(model, s)
    exceeded = broke = None
    for k in range(1, steps + 1):
        integ.step(model, s, dt)
        if exceeded is None and load(s.x, s.q) > 1:
            exceeded = k
        if broke is None and s.broken[0]:
            broke = k
    return exceeded, broke


HEAVY = {"mass": 1e12, "inertia": 1e12}


def relative_rotvec(q):
    """Rotation vector of ``R_1 R_0ᵀ``: the pair's relative rotation from rest (both start at I)."""
    return rot.quat_to_rotvec(rot.quat_multiply(q[1], rot.quat_conjugate(q[0])))


def test_pure_tension_breaks_at_the_tensile_strength():
    c = cylinder()
    sigma = 3.0
    model = pair(tensile_strength=sigma, shear_strength=1e9, **HEAVY)
    ex, br = first_exceeding(model, v=[0.01, 0.0, 0.0], load=lambda x, q: c["kn"] * (x[1, 0] - 1.0) / c["A"] / sigma)
    assert ex is not None and br is not None and abs(br - ex) <= 1, (ex, br)
    assert ex == pytest.approx(sigma * 1.0 / E / 0.01 / 1e-3, abs=1.01)  # stretch σ L / E at speed 0.01


def test_pure_bending_breaks_at_the_tensile_strength():
    """σ = M_b R̄ / I = E φ R̄ / L."""
    c = cylinder()
    sigma = 50.0
    model = pair(tensile_strength=sigma, shear_strength=1e9, **HEAVY)
    omega = np.array([[0.0, 0.0, 0.5], [0.0, 0.0, -0.5]])

    def load(x, q):
        phi = np.linalg.norm(relative_rotvec(q))
        return c["kb"] * phi * c["rbar"] / c["I"] / sigma

    ex, br = first_exceeding(model, omega=omega, load=load)
    assert ex is not None and br is not None and abs(br - ex) <= 1, (ex, br)


def test_pure_torsion_breaks_at_the_shear_strength():
    """τ = M_t R̄ / J = G φ R̄ / L."""
    c = cylinder()
    tau = 20.0
    model = pair(tensile_strength=1e9, shear_strength=tau, **HEAVY)
    omega = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])

    def load(x, q):
        phi = abs(relative_rotvec(q)[0])
        return c["kt"] * phi * c["rbar"] / c["J"] / tau

    ex, br = first_exceeding(model, omega=omega, load=load)
    assert ex is not None and br is not None and abs(br - ex) <= 1, (ex, br)


def test_pure_shear_breaks_at_the_shear_strength():
    """An offset δ without rotation: τ = F_s / A with ``F_s = k_s L δ / r``."""
    c = cylinder()
    tau = 1.0
    model = pair(tensile_strength=1e9, shear_strength=tau, **HEAVY)

    def load(x, q):
        r = np.linalg.norm(x[1] - x[0])
        return c["ks"] * abs(x[1, 1]) / r / c["A"] / tau

    ex, br = first_exceeding(model, v=[0.0, 0.01, 0.0], load=load)
    assert ex is not None and br is not None and abs(br - ex) <= 1, (ex, br)


def test_the_combined_criterion_sums_force_and_moment_ratios():
    """Tension and torsion together: ``F_n/F_nc + M_t/M_tc`` reaches 1 when each alone is
    below its limit."""
    c = cylinder()
    fnc, mtc = c["kn"] * 0.01 * 0.2, c["kt"] * 0.2  # each alone reached at t = 0.2
    model = pair(critical_force=(fnc, 1e9), critical_moment=(mtc, 1e9), **HEAVY)
    omega = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])

    def load(x, q):
        phi = abs(relative_rotvec(q)[0])
        return c["kn"] * (x[1, 0] - 1.0) / fnc + c["kt"] * phi / mtc

    ex, br = first_exceeding(model, v=[0.01, 0.0, 0.0], omega=omega, load=load)
    assert ex is not None and br is not None and abs(br - ex) <= 1, (ex, br)
    assert ex == pytest.approx(100, abs=2)  # the sum reaches 1 at t = 0.1, each ratio 1/2


def test_released_energy_is_booked_when_a_parallel_bond_breaks():
    """The bond's energy at the breaking configuration is booked as released: about
    ``F_c² / (2 k_n)`` for a bond broken in tension at force ``F_c = σ_c A``, and the
    balance closes up to the step's work of the dropped force (``F_c v h / 2``)."""
    c = cylinder()
    sigma, v, h = 3.0, 2.0, 1e-4
    model = pair(tensile_strength=sigma, shear_strength=1e9)
    s = model.state()
    s.v[1] = [v, 0.0, 0.0]
    e0 = gr.diagnostics.total_energy(model, s)
    gr.ExplicitIntegrator().advance(model, s, h, 400)
    assert s.broken[0] == 1
    released = gr.diagnostics.released_energy(model, s)
    fc = sigma * c["A"]
    assert released == pytest.approx(fc**2 / (2 * c["kn"]), rel=0.5)
    assert abs(gr.diagnostics.total_energy(model, s) + released - e0) <= fc * v * h


def test_energy_error_is_second_order_for_a_vibrating_cluster():
    rng = np.random.default_rng(11)
    model = cluster(rng)
    errs = []
    v0, w0 = rng.normal(size=(model.n, 3)) * 0.05, rng.normal(size=(model.n, 3)) * 0.05
    for dt in (2e-3, 1e-3):
        s = model.state()
        s.v[:] = v0
        s.omega[:] = w0
        integ = gr.ExplicitIntegrator()
        e0 = gr.diagnostics.total_energy(model, s)
        worst = 0.0
        for _ in range(round(0.5 / dt)):
            integ.step(model, s, dt)
            worst = max(worst, abs(gr.diagnostics.total_energy(model, s) - e0))
        errs.append(worst / e0)
    assert errs[1] < 1e-3
    assert errs[0] / errs[1] == pytest.approx(4.0, rel=0.25)


@pytest.mark.gpu
def test_the_gpu_kernels_give_the_cpu_forces(gpu_backend):
    rng = np.random.default_rng(2)
    cpu = cluster(rng)
    gpu = cluster(np.random.default_rng(2), backend="gpu")
    x, q = deformed(cpu, rng, 0.5)
    Fc, Mc, _ = forces_at(cpu, x, q)
    Fg, Mg, _ = forces_at(gpu, x, q)
    np.testing.assert_allclose(Fg, Fc, rtol=1e-12, atol=1e-12 * np.abs(Fc).max())
    np.testing.assert_allclose(Mg, Mc, rtol=1e-12, atol=1e-12 * np.abs(Mc).max())


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"young": E}, "shear_modulus, poisson"),
        ({"young": E, "poisson": 0.3, "shear_modulus": 1.0}, "shear_modulus, poisson"),
        ({"young": E, "poisson": 0.7}, "poisson"),
        ({"young": -1.0, "poisson": 0.3}, "young"),
        ({"young": E, "poisson": 0.3, "radius_ratio": 0.0}, "radius_ratio"),
        ({"young": E, "poisson": 0.3, "tensile_strength": 0.0}, "tensile_strength"),
        ({"young": E, "poisson": 0.3, "tensile_strength": 1.0, "critical_force": (1.0, 1.0)}, "critical_force"),
        ({"young": E, "poisson": 0.3, "critical_moment": (0.0, 1.0)}, "critical_moment"),
    ],
)
def test_bad_parallel_bond_input_names_the_argument(kwargs, field):
    b = gr.ModelBuilder()
    b.add_particles([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match=field):
        b.add_parallel_bonds([[0, 1]], **kwargs)
    assert b._bond_count == 0  # nothing half-added


def test_weibull_and_normal_strengths_have_their_mean_and_scatter():
    m = 4.0
    s = draw_strengths(10.0, 200_000, "weibull", modulus=m, seed=4)
    cov = math.sqrt(math.gamma(1 + 2 / m) / math.gamma(1 + 1 / m) ** 2 - 1)
    assert s.mean() == pytest.approx(10.0, rel=0.01)
    assert s.std() / s.mean() == pytest.approx(cov, rel=0.02)
    n = draw_strengths(10.0, 200_000, "normal", cov=0.1, seed=4)
    assert n.mean() == pytest.approx(10.0, rel=0.005) and n.std() == pytest.approx(1.0, rel=0.02)
    assert (n > 0).all() and (draw_strengths(1.0, 1000, "normal", cov=2.0, seed=1) > 0).all()
    assert np.array_equal(s, draw_strengths(10.0, 200_000, "weibull", modulus=m, seed=4))
    assert not np.array_equal(s, draw_strengths(10.0, 200_000, "weibull", modulus=m, seed=5))
    with pytest.raises(ValueError, match="modulus"):
        draw_strengths(1.0, 10, "weibull")
    with pytest.raises(ValueError, match="law"):
        draw_strengths(1.0, 10, "gamma")


def test_strengths_per_bond_break_the_weakest_first():
    """Three parallel chains pulled alike, strengths 1, 2, 3: they break in that order."""
    b = gr.ModelBuilder()
    for k in range(3):
        b.add_particles([[0.0, 3.0 * k, 0.0], [1.0, 3.0 * k, 0.0]], radius=0.5, v=[[0, 0, 0], [0.01, 0, 0]], **HEAVY)
    b.add_parallel_bonds([[4, 5], [0, 1], [2, 3]], young=E, poisson=NU, tensile_strength=[3.0, 1.0, 2.0])
    model = b.finalize("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator()
    order = []
    for _ in range(400):
        integ.step(model, s, 1e-3)
        for k in np.flatnonzero(s.broken):
            if k not in order:
                order.append(int(k))
    assert len(order) == 3
    a = model.bonds.host["a"]
    assert [int(a[k]) // 2 for k in order] == [0, 1, 2]


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_grains_of_a_broken_bond_collide(backend, request):
    """Bonded pairs have no contact (``bonded_contacts=False``) only while their bond
    holds: two grains pushed together break their bond in compression (``strain_max``)
    and then meet by contact and bounce apart, instead of passing through each other."""
    if backend == "gpu":
        request.getfixturevalue("gpu_backend")  # skipped where no GPU backend is usable
    b = gr.ModelBuilder()
    b.add_material("grain", young=1e5, poisson=0.3, density=1000.0, restitution=0.9)
    b.add_particles([[0.0, 0.0, 0.0], [0.02, 0.0, 0.0]], radius=0.01, material="grain",
                    v=[[0.5, 0.0, 0.0], [-0.5, 0.0, 0.0]])  # fmt: skip
    b.add_parallel_bonds([[0, 1]], young=1e5, poisson=0.3, radius_ratio=0.5, strain_max=0.005)
    b.set_contacts(bonded_contacts=False)
    model = b.finalize(backend)
    s = model.state()
    integ = gr.ExplicitIntegrator()
    closest = 1.0
    for _ in range(400):
        integ.advance(model, s, 2e-5, 5)
        x = model.backend.to_host(s.x)
        closest = min(closest, float(np.linalg.norm(x[1] - x[0])))
    v = model.backend.to_host(s.v)
    assert int(model.backend.to_host(s.broken)[0]) == 1
    assert closest > 0.015  # met by contact (overlap a few per cent), never passed through
    assert v[0, 0] < 0 < v[1, 0]  # bounced apart
