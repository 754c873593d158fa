"""The dissipative contact law against theory: ``granular validate contacts``.

Spheres of glass-like material (``E = 7e10``, ``ν = 0.25``, ``ρ = 2500``, radius 0.01, SI
units) on a wall of the same material or on each other; map (25). Every run resolves
a contact with at least :data:`STEPS_PER_CONTACT` steps of the elastic Hertz contact
time at its speed. Checks, with the thresholds of the report:

* **Elastic normal impact** (``e = 1``) of a sphere on a wall and of two spheres: the
  contact duration ``t_c = 2 I δ_max / v`` (``I = ∫_0^1 dx / sqrt(1 - x^{5/2})``) and
  the peak force ``(4/3) E* sqrt(R*) δ_max^{3/2}``, ``δ_max = (15 m* v² / 16 E*
  sqrt(R*))^{2/5}`` (Hertz): within 1 %.
* **Damped normal impact**: the measured restitution equals the requested ``e`` (0.1 to
  0.95) within 1 % at impact speeds 0.01, 0.1, 1 and 10 (three decades).
* **Oblique impact** on a wall, incidence ``tan θ = v_t / v_n`` over the whole range
  (0.06 to 24, 3.4° to 87.6° from the normal; quick: 0.12 to 12), a
  solid sphere (``J = 2/5 m r²``) without spin, ``μ = 0.3``, elastic normal law
  (``e = 1``, as Maw, Barber and Fawcett): in the gross sliding regime
  (``v_t / v_n > (7/2) μ (1 + e)``) the rebound tangential velocity and spin equal the
  Coulomb impulse values ``v_t' = v_t - μ (1 + e) v_n``, ``r ω' = (5/2) μ (1 + e) v_n``
  within 1 % of ``v_n``; at every angle (sticking, micro-slip and sliding) they follow an
  independent integration of the same Hertz-Mindlin equations (:func:`oblique_reference`,
  20000 steps per contact, converged to 1e-5 of ``v_n``) within 1 % of ``v_n``; the
  tangential force never exceeds ``μ F_n`` at any step (``max |F_t| / μ F_n ≤ 1 + 1e-9``).
* **Incline** (gravity tilted by ``θ``, ``μ = 0.3``): below ``tan θ = (7/2) μ`` the
  sphere rolls without slipping, ``a = (5/7) g sin θ``; above it slides with
  ``a = g (sin θ - μ cos θ)``; with rolling resistance ``μ_r = 0.1`` at
  ``tan θ = 0.05`` it stays at rest (speed below 1e-6 of ``g t``). Accelerations within 1 %.
* **Closed cluster with friction**: 27 spheres thrown together with random velocities
  and spins, friction, rolling and twisting resistance, no wall or field: linear and
  angular momentum conserved to round-off (relative change ≤ 1e-12), and total plus
  dissipated energy conserved to the scheme's accuracy (≤ 2e-4 of the initial energy).
* **Order of accuracy** with the step: the errors of the restitution and of the rebound
  spin of oblique impacts (:data:`SPIN_CASES`), against a run at a step 16 times smaller,
  for the two velocities the dashpots can see (``docs/contacts.md``): ``predicted``
  (``v_{k+1/2} + h F_k / 2m``, the default) and ``half`` (``v_{k+1/2}``); the springs are
  always stretched by the drift velocity ``v_{k+1/2}``. Measured (full study): order 2 or
  more for the spin of the elastic and of the damped sticking impact with the predicted
  velocity (1 with the half-step one); about 1 for ``e`` (the Tsuji dashpot switches on
  as ``δ^{1/4}``, not smoothly); the damped partial-slip impact's spin error falls
  slower than any power (reported, not checked).

The two other laws with named materials, with LAMMPS's parameters of
``tests/data/lammps_contacts.json`` (spheres of radius 0.01 and density 2500 on a wall of
their material):

* **Linear law** (``k_n = 1e5``, ``e = 0.5``; :func:`linear_impact`): the restitution
  equals ``e`` at 0.1 and 1 m/s and the contact lasts ``π/ω_d``,
  ``ω_d = sqrt(k_n/m* - (η_n/2m*)²)``, within 1e-4 at :data:`STEPS_PER_CONTACT` steps per
  contact (the error falls like h² with the predicted velocity; measured 2e-5).
* **JKR** (``E = 1e8``, ``ν = 0.3``, ``γ = 100``; :func:`jkr_checks`): the least force of
  an elastic rebound at 0.3 m/s is the pull-off force ``3πγR*`` within 1e-4; a damped
  sphere (``d = 2e6``) captured at 0.1 m/s comes to rest at the zero-load overlap
  ``δ_0 = (3π²γ²R*/E*²)^{1/3}`` within 1e-6, with no gravity; an elastic sphere at
  0.98 ``v_s`` (``v_s = sqrt(2W/m*)``, ``W`` the hysteresis of the JKR cycle) is still in
  contact after ten contact times, and at 1.02 ``v_s`` it rebounds with
  ``e = sqrt(1 - v_s²/v²)`` within 1 %.
"""

from __future__ import annotations

import math
import time

import numpy as np

from kernels.contact_laws import hertz_mindlin

from ..particles.diagnostics import angular_momentum, linear_momentum
from ..particles.forces.materials import Material, mix
from ..particles.integrators import ExplicitIntegrator
from ..particles.builder import ModelBuilder
from ..particles.system import DISSIPATED
from .report import Check, Report

E, NU, RHO, R = 7e10, 0.25, 2500.0, 0.01
#: Steps per elastic Hertz contact time in the checks against theory.
STEPS_PER_CONTACT = 400


def hertz_integral() -> float:
    """``I = ∫_0^1 dx / sqrt(1 - x^{5/2})`` (``t_c = 2 I δ_max / v``)."""
    from scipy.integrate import quad

    return quad(lambda x: 1.0 / math.sqrt(1.0 - x**2.5), 0.0, 1.0, limit=200)[0]


def hertz_theory(estar, rstar, mstar, v):
    """``(t_c, F_max, δ_max)`` of an elastic Hertz impact at relative speed ``v``."""
    dmax = (15.0 * mstar * v * v / (16.0 * estar * math.sqrt(rstar))) ** 0.4
    return 2.0 * hertz_integral() * dmax / v, 4.0 / 3.0 * estar * math.sqrt(rstar) * dmax**1.5, dmax


def _estar():
    return 1.0 / (2.0 * (1.0 - NU * NU) / E)


def _mass():
    return RHO * 4.0 / 3.0 * math.pi * R**3


def sphere_on_wall(v, e=1.0, mu=0.0, mu_r=0.0, vt=0.0, backend="cpu", velocity="predicted", spin=(0, 0, 0)):
    """One sphere touching the wall ``z = 0`` and moving into it at ``v`` (and ``vt``
    along x)."""
    b = ModelBuilder()
    b.add_material("glass", E, NU, RHO, e, mu, mu_r)
    b.add_particles(np.array([[0.0, 0.0, R]]), v=[vt, 0.0, -v], omega=spin, radius=R, material="glass")
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="glass", allow_initial_overlap=True)  # touching at the start
    b.set_contacts(velocity=velocity)
    return b.finalize(backend)


def run_impact(model, h, steps, record=False):
    """Advance ``steps`` steps; with ``record``, host copies of ``x``, ``v``, ``F``,
    ``omega`` after each step (one step at a time)."""
    integ = ExplicitIntegrator("verlet")
    s = model.state()
    integ.prepare(model, s)
    if not record:
        integ.advance(model, s, h, steps)
        return s, None
    be = model.backend
    rows = {k: [] for k in ("x", "v", "F", "omega")}
    for _ in range(steps):
        integ.advance(model, s, h, 1)
        for k, row in rows.items():
            row.append(be.to_host(getattr(s, k)).copy())
    return s, {k: np.asarray(v) for k, v in rows.items()}


def elastic_wall(v=1.0, backend="cpu"):
    estar, m = _estar(), _mass()
    tc, fmax, _ = hertz_theory(estar, R, m, v)
    h = tc / STEPS_PER_CONTACT
    model = sphere_on_wall(v, backend=backend)
    _, rec = run_impact(model, h, int(1.2 * STEPS_PER_CONTACT), record=True)
    z = rec["x"][:, 0, 2]
    inside = np.flatnonzero(z < R)
    # contact from t = 0 (touching at the start) to the crossing of z = R, interpolated
    k = inside[-1]
    t_out = (k + 1 + (R - z[k]) / (z[k + 1] - z[k])) * h
    return {"t_c": t_out, "t_c_theory": tc, "F_max": float(rec["F"][:, 0, 2].max()), "F_max_theory": fmax}


def elastic_pair(v=1.0, backend="cpu"):
    m = _mass()
    estar = 1.0 / (2.0 * (1.0 - NU * NU) / E)
    rstar, mstar = 0.5 * R, 0.5 * m
    tc, fmax, _ = hertz_theory(estar, rstar, mstar, v)
    h = tc / STEPS_PER_CONTACT
    b = ModelBuilder()
    b.add_material("glass", E, NU, RHO, 1.0)
    b.add_particles(np.array([[-R, 0, 0], [R, 0, 0]]), v=[[0.5 * v, 0, 0], [-0.5 * v, 0, 0]], radius=R, material="glass")
    b.set_contacts()
    model = b.finalize(backend)
    _, rec = run_impact(model, h, int(1.2 * STEPS_PER_CONTACT), record=True)
    d = rec["x"][:, 1, 0] - rec["x"][:, 0, 0]
    inside = np.flatnonzero(d < 2 * R)
    k = inside[-1]
    t_out = (k + 1 + (2 * R - d[k]) / (d[k + 1] - d[k])) * h
    return {"t_c": t_out, "t_c_theory": tc, "F_max": float(-rec["F"][:, 0, 0].min()), "F_max_theory": fmax}


def restitution(e, v, backend="cpu", steps_per_contact=STEPS_PER_CONTACT, velocity="predicted"):
    """Measured ``-v_out / v_in`` of a sphere hitting the wall at ``v``."""
    tc, _, _ = hertz_theory(_estar(), R, _mass(), v)
    h = tc / steps_per_contact
    model = sphere_on_wall(v, e=e, backend=backend, velocity=velocity)
    s, _ = run_impact(model, h, steps_per_contact)
    integ = ExplicitIntegrator("verlet")
    for _ in range(40):  # a strongly damped rebound leaves slowly (the force ends before the overlap)
        if float(model.backend.to_host(s.x)[0, 2]) > R:
            return float(model.backend.to_host(s.v)[0, 2]) / v
        integ.advance(model, s, h, steps_per_contact // 2)
    raise RuntimeError(f"e = {e}, v = {v}: the sphere is still in contact after 20 contact times")


def oblique(vt, vn=1.0, mu=0.3, e=0.9, backend="cpu", steps_per_contact=STEPS_PER_CONTACT, velocity="predicted"):
    """Rebound ``(v_t', r ω', max |F_t| / μ F_n)`` of an oblique impact (the sphere moves
    along +x on the floor ``z = 0``: rolling means ``v_x = r ω_y``)."""
    tc, _, _ = hertz_theory(_estar(), R, _mass(), vn)
    h = tc / steps_per_contact
    model = sphere_on_wall(vn, e=e, mu=mu, vt=vt, backend=backend, velocity=velocity)
    s, rec = run_impact(model, h, int(1.5 * steps_per_contact), record=True)
    F = rec["F"][:, 0]
    fn = F[:, 2]
    ft = np.hypot(F[:, 0], F[:, 1])
    on = fn > 1e-9 * fn.max()
    ratio = float((ft[on] / (mu * fn[on])).max()) if mu > 0 and on.any() else 0.0
    v = model.backend.to_host(s.v)[0]
    w = model.backend.to_host(s.omega)[0]
    return float(v[0]), float(R * w[1]), ratio


def oblique_reference(vt, vn=1.0, mu=0.3, e=1.0, steps_per_contact=20000):
    """Rebound ``(v_t', r ω')`` of the same Hertz-Mindlin-Tsuji impact (``docs/contacts.md``
    laws, wall of the same material) by an independent integration of the contact's
    equations: semi-implicit Euler with ``steps_per_contact`` steps per elastic contact
    time, forces at the current velocities, the spring ``ξ`` scaled by ``sqrt(k_t,old/k_t)``
    as the contact radius changes and stretched by the slip velocity, force and spring
    scaled back onto the Coulomb limit when it slides. ``vt`` may be an array
    (one impact per entry, integrated together)."""


    row = mix(*(2 * [Material(E, NU, RHO, e, mu)]))
    estar, gstar, alpha = row[hertz_mindlin.PAIR_ESTAR], row[hertz_mindlin.PAIR_GSTAR], row[hertz_mindlin.PAIR_ALPHA]
    m = _mass()
    J = 0.4 * m * R * R
    kn = 4.0 / 3.0 * estar * math.sqrt(R)
    tc, _, _ = hertz_theory(estar, R, m, vn)
    h = tc / steps_per_contact
    u = np.array(vt, dtype=np.float64, ndmin=1)  # tangential velocity of the centre
    w = np.zeros_like(u)  # spin about +y: r w = u rolls without slip
    xi = np.zeros_like(u)
    d, dd = 0.0, vn  # overlap and its rate (the normal motion does not depend on the tangential)
    kt_old = 0.0
    for _ in range(100 * steps_per_contact):
        if d < 0.0 and dd < 0.0:
            break
        dp = max(d, 0.0)
        fel = kn * dp**1.5
        fn = max(0.0, fel - alpha * math.sqrt(m * kn * math.sqrt(dp)) * -dd)
        kt = 8.0 * gstar * math.sqrt(R * dp)
        eta = alpha * math.sqrt(m * kt)
        lever = R - dp
        vc = u - lever * w  # slip of the contact point
        xi = (xi * math.sqrt(kt_old / kt) if kt > 0 else 0.0 * xi) + h * vc  # energy kept as k_t changes
        kt_old = kt
        ft = -kt * xi - eta * vc
        over = np.abs(ft) > mu * fn
        if over.any():  # force and spring scaled onto the Coulomb limit
            scale = np.where(over, mu * fn / np.maximum(np.abs(ft), 1e-300), 1.0)
            ft, xi = ft * scale, xi * scale
        dd = dd - h * fn / m
        d = d + h * dd
        u = u + h * ft / m
        w = w - h * lever * ft / J
    return u, R * w


def incline(theta, mu=0.3, mu_r=0.0, backend="cpu", t_end=0.05):
    """Acceleration along the slope of a sphere resting on a floor under gravity tilted
    by ``theta`` (``g = 9.81``), measured between ``t_end/2`` and ``t_end``."""
    g = 9.81
    b = ModelBuilder()
    b.add_material("glass", E, NU, RHO, 0.5, mu, mu_r)
    m = _mass()
    kn = 4.0 / 3.0 * _estar() * math.sqrt(R)
    d0 = (m * g * math.cos(theta) / kn) ** (2.0 / 3.0)
    b.add_particles(np.array([[0.0, 0.0, R - d0]]), radius=R, material="glass")
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="glass", allow_initial_overlap=True)
    b.set_gravity([g * math.sin(theta), 0.0, -g * math.cos(theta)])
    b.set_contacts()
    model = b.finalize(backend)
    tc, _, _ = hertz_theory(_estar(), R, m, math.sqrt(2 * g * d0))
    h = min(tc / 50.0, 2e-6)
    integ = ExplicitIntegrator("verlet")
    s = model.state()
    n = round(t_end / h)
    integ.advance(model, s, h, n // 2)
    v1 = float(model.backend.to_host(s.v)[0, 0])
    integ.advance(model, s, h, n - n // 2)
    v2 = float(model.backend.to_host(s.v)[0, 0])
    return (v2 - v1) / ((n - n // 2) * h), v2


def cluster(backend="cpu", steps=4000, seed=3, h=2e-7):
    """27 spheres thrown together (no wall, no field): relative changes of ``P`` and
    ``L`` and of ``total + dissipated``, and the dissipated fraction."""

    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    b.add_material("glass", E, NU, RHO, 0.6, 0.4, 0.05, 0.05)
    x = (np.stack(np.meshgrid(*(np.arange(3),) * 3, indexing="ij"), -1).reshape(-1, 3) - 1.0) * 2.02 * R
    x += rng.normal(scale=0.003 * R, size=x.shape)
    v = -2.0 * x / R + rng.normal(scale=0.5, size=x.shape)
    b.add_particles(x, v=v, omega=rng.normal(scale=100.0, size=x.shape), radius=R, material="glass")
    b.set_contacts(allow_initial_overlap=True)  # a jostled lattice: some pairs start pressed
    model = b.finalize(backend)
    s = model.state()
    integ = ExplicitIntegrator("verlet")
    integ.prepare(model, s)

    def measures():
        d = model.diagnostics(s)
        total = d["kinetic_translational"] + d["kinetic_rotational"] + d["U_pp"]
        return linear_momentum(model, s), angular_momentum(model, s), total, sum(d[k] for k in DISSIPATED)

    p0, l0, e0, _ = measures()
    integ.advance(model, s, h, steps)
    p1, l1, e1, diss = measures()
    scale_p = _mass() * np.abs(v).max() * len(x)
    scale_l = scale_p * 3 * R
    return {"P": float(np.abs(p1 - p0).max() / scale_p), "L": float(np.abs(l1 - l0).max() / scale_l),
            "energy": abs(e1 + diss - e0) / e0, "dissipated_fraction": diss / e0}  # fmt: skip


#: The linear law's and JKR's parameters (those of LAMMPS's reference runs): normal and
#: tangential stiffness, restitution; Young's modulus, Poisson's ratio, surface energy.
LINEAR = {"stiffness": 1e5, "restitution": 0.5}
JKR = {"young": 1e8, "poisson": 0.3, "surface_energy": 100.0}


def law_on_wall(law, v, h, backend="cpu", **material):
    """A sphere of the module's radius and density moving at ``v`` into the wall ``z = 0``
    of its own material, under ``law``; it starts 0.37 of a step's travel from the wall
    (a contact that begins exactly at a step would be decided by round-off)."""
    b = ModelBuilder()
    b.add_material("m", density=RHO, **material)
    b.add_particles(np.array([[0.0, 0.0, R + 0.37 * h * v]]), v=[0.0, 0.0, -v], radius=R, material="m")
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="m")
    b.set_contacts(law=law)
    return b.finalize(backend)


def linear_impact(v, backend="cpu", steps_per_contact=STEPS_PER_CONTACT):
    """Restitution and contact duration of the linear law's normal impact at ``v`` (from
    the free flight after it), with their closed forms ``e`` and ``π/ω_d``."""
    m, kn, e = _mass(), LINEAR["stiffness"], LINEAR["restitution"]
    le = math.log(e)
    zeta = -le / math.sqrt(math.pi**2 + le * le)
    tc = math.pi / (math.sqrt(kn / m) * math.sqrt(1.0 - zeta * zeta))
    h = tc / steps_per_contact
    model = law_on_wall("linear", v, h, backend, **LINEAR)
    s, _ = run_impact(model, h, int(1.3 * steps_per_contact))
    z, vz = float(model.backend.to_host(s.x)[0, 2]), float(model.backend.to_host(s.v)[0, 2])
    t_out = int(1.3 * steps_per_contact) * h - (z - R) / vz
    return {"e": vz / v, "e_theory": e, "t_c": t_out - 0.37 * h, "t_c_theory": tc}


def jkr_theory(rstar=R):
    """Pull-off force ``3πγR*``, break overlap ``δ_c``, zero-load overlap ``δ_0`` and the
    energy ``W`` an elastic JKR impact loses (``W = G(a_c) - G(a(0))``, ``G`` the
    antiderivative of ``F dδ/da``) of a sphere on a wall of its material."""
    estar = JKR["young"] / (2.0 * (1.0 - JKR["poisson"] ** 2))
    g, pi = JKR["surface_energy"], math.pi
    a_c = (9 * pi * g * rstar**2 / (4 * estar)) ** (1 / 3)
    a_0 = (4 * pi * g * rstar**2 / estar) ** (1 / 3)

    def G(a):
        return (8 * estar * a**5 / (15 * rstar**2) - 8 / (3 * rstar) * math.sqrt(pi * g * estar) * a**3.5
                + 2 * pi * g * a * a)  # fmt: skip

    return {"F_pulloff": 3 * pi * g * rstar, "delta_c": -((3 * pi**2 * g**2 * rstar / (16 * estar**2)) ** (1 / 3)),
            "delta_0": (3 * pi**2 * g**2 * rstar / estar**2) ** (1 / 3), "W": G(a_c) - G(a_0)}  # fmt: skip


def jkr_checks(backend="cpu"):
    """JKR against its closed forms (sphere on a wall): the least force of an elastic
    rebound at 0.3 m/s (step 1e-6, about 1600 per contact, one step at a time), the
    overlap where a damped sphere comes to rest (step 1e-6, 20 ms), and the capture speed
    ``v_s`` (step 1e-7: the elastic restitution near ``v_s`` is sensitive to the energy
    error of the snap-in and the break)."""
    th = jkr_theory()
    out = {"theory": th}
    integ = ExplicitIntegrator("verlet")
    h = 1e-6
    model = law_on_wall("jkr", 0.3, h, backend, **JKR)
    s = model.state()
    integ.prepare(model, s)
    least = 0.0
    for _ in range(2000):
        integ.advance(model, s, h, 1)
        least = min(least, float(model.backend.to_host(s.F)[0, 2]))
    out["least_force"] = least
    model = law_on_wall("jkr", 0.1, h, backend, damping=2e6, **JKR)
    s, _ = run_impact(model, h, 20000)
    out["rest_overlap"] = R - float(model.backend.to_host(s.x)[0, 2])
    out["rest_speed"] = float(np.abs(model.backend.to_host(s.v)).max())
    vs = math.sqrt(2.0 * th["W"] / _mass())
    out["v_s"] = vs
    h = 1e-7
    model = law_on_wall("jkr", 0.98 * vs, h, backend, **JKR)
    s, _ = run_impact(model, h, 20000)  # ten contact times
    out["stuck_below"] = bool(R - float(model.backend.to_host(s.x)[0, 2]) > th["delta_c"])
    model = law_on_wall("jkr", 1.02 * vs, h, backend, **JKR)
    s, _ = run_impact(model, h, 40000)
    out["e_above"] = float(model.backend.to_host(s.v)[0, 2]) / (1.02 * vs)
    out["e_above_theory"] = math.sqrt(1.0 - 1.0 / 1.02**2)
    return out


#: Oblique impacts whose rebound spin's order is measured: ``(e, v_t / v_n)``: elastic
#: in the partial-slip regime (Maw, Barber and Fawcett), damped and sticking, and damped
#: in the partial-slip regime (reported: its error does not fall like a power of h).
SPIN_CASES = ((1.0, 0.5), (0.5, 0.2), (0.5, 0.5))


def orders(velocity, backend="cpu"):
    """Errors of ``e`` (``e = 0.5``, ``v = 1``) and of the rebound spin of
    :data:`SPIN_CASES` (``μ = 0.3``) against a 16 times smaller step, at 25, 50, 100 and
    200 steps per contact; fitted orders (slopes of log error against log h)."""
    spc = np.array([25, 50, 100, 200])
    h = 1.0 / spc

    def fit(err):
        return float(np.polyfit(np.log(h), np.log(np.maximum(err, 1e-300)), 1)[0])

    ref_e = restitution(0.5, 1.0, backend, 3200, velocity)
    err_e = np.array([abs(restitution(0.5, 1.0, backend, k, velocity) - ref_e) for k in spc])
    out = {"steps_per_contact": spc.tolist(), "error_e": err_e.tolist(), "order_e": fit(err_e), "spin": []}
    for e, vt in SPIN_CASES:
        ref = oblique(vt, mu=0.3, e=e, backend=backend, steps_per_contact=3200, velocity=velocity)[1]
        err = np.array([abs(oblique(vt, mu=0.3, e=e, backend=backend, steps_per_contact=k, velocity=velocity)[1] - ref)
                        for k in spc])  # fmt: skip
        out["spin"].append({"e": e, "tan_theta": vt, "error": err.tolist(), "order": fit(err)})
    return out


def run(quick=False, backend="cpu") -> Report:
    t0 = time.perf_counter()
    checks, data = [], {}

    w = elastic_wall(1.0, backend)
    p = elastic_pair(1.0, backend)
    data["elastic_wall"], data["elastic_pair"] = w, p
    for name, r in (("sphere-wall", w), ("sphere-sphere", p)):
        checks.append(Check(f"elastic {name}: contact time / Hertz - 1", abs(r["t_c"] / r["t_c_theory"] - 1), high=0.01))
        checks.append(Check(f"elastic {name}: peak force / Hertz - 1", abs(r["F_max"] / r["F_max_theory"] - 1), high=0.01))

    es = (0.1, 0.5, 0.9) if quick else (0.1, 0.3, 0.5, 0.7, 0.9, 0.95)
    speeds = (0.01, 1.0, 10.0) if quick else (0.01, 0.1, 1.0, 10.0)
    table = {f"{e:g}": {f"{v:g}": restitution(e, v, backend) for v in speeds} for e in es}
    data["restitution"] = table
    worst = max(abs(m / float(e) - 1.0) for e, row in table.items() for m in row.values())
    checks.append(Check("damped impact: max |e_measured / e - 1| over e and speeds", worst, high=0.01))

    mu, e = 0.3, 1.0  # elastic in the normal direction, as Maw, Barber and Fawcett's analysis
    # tan θ from 0.06 (3.4°) to 24 (87.6°, near grazing); quick: 0.12 to 12 (84.8°)
    ratios = np.array([0.1, 0.3, 0.6, 1.0, 1.5, 2.5, 4.0, 6.0, 15.0, 40.0] if not quick else [0.2, 0.8, 2.5, 5.0, 20.0])
    ob = []
    sliding = ratios > 3.5 * 1.05  # tan θ / μ (1 + e) > 7/2: slides through the whole contact
    ref_v, ref_w = oblique_reference(ratios * mu * (1 + e), mu=mu, e=e)
    for k, slides, rv, rw in zip(ratios, sliding, ref_v, ref_w):
        vt = k * mu * (1 + e)
        got_v, got_w, fr = oblique(vt, mu=mu, e=e, backend=backend)
        entry = {"tan_theta": vt, "v_t": got_v, "r_omega": got_w, "max_ft_over_mu_fn": fr, "sliding": bool(slides),
                 "v_t_ref": float(rv), "r_omega_ref": float(rw)}  # fmt: skip
        if slides:  # Coulomb impulse theory
            entry["v_t_theory"], entry["r_omega_theory"] = vt - mu * (1 + e), 2.5 * mu * (1 + e)
        ob.append(entry)
    data["oblique"] = ob
    slide = [o for o in ob if o["sliding"]]
    checks.append(Check("oblique, gross sliding: max |v_t' - Coulomb|, |r w' - Coulomb| / v_n",
                        max(max(abs(o["v_t"] - o["v_t_theory"]), abs(o["r_omega"] - o["r_omega_theory"])) for o in slide),
                        high=0.01))  # fmt: skip
    checks.append(Check("oblique, all angles: max |v_t' - ref|, |r w' - ref| / v_n (reference integration)",
                        max(max(abs(o["v_t"] - o["v_t_ref"]), abs(o["r_omega"] - o["r_omega_ref"])) for o in ob),
                        high=0.01))  # fmt: skip
    checks.append(Check("oblique: max |F_t| / mu F_n over every step", max(o["max_ft_over_mu_fn"] for o in ob),
                        high=1 + 1e-9))  # fmt: skip

    g = 9.81
    inc = {}
    th_roll = math.atan(0.5 * 3.5 * mu)
    th_slide = math.atan(1.5 * 3.5 * mu)
    a_roll, _ = incline(th_roll, mu, backend=backend)
    a_slide, _ = incline(th_slide, mu, backend=backend)
    _, v_rest = incline(math.atan(0.05), mu, mu_r=0.1, backend=backend)
    inc["roll"] = {"theta": th_roll, "a": a_roll, "theory": 5.0 / 7.0 * g * math.sin(th_roll)}
    inc["slide"] = {"theta": th_slide, "a": a_slide, "theory": g * (math.sin(th_slide) - mu * math.cos(th_slide))}
    inc["rest"] = {"theta": math.atan(0.05), "speed": abs(v_rest)}
    data["incline"] = inc
    checks.append(Check("incline below (7/2) mu: a / (5/7 g sin) - 1", abs(inc["roll"]["a"] / inc["roll"]["theory"] - 1),
                        high=0.01))  # fmt: skip
    checks.append(Check("incline above: a / g(sin - mu cos) - 1", abs(inc["slide"]["a"] / inc["slide"]["theory"] - 1),
                        high=0.01))  # fmt: skip
    checks.append(Check("incline with rolling resistance: speed / (g t)", abs(v_rest) / (g * 0.05), high=1e-6))

    c = cluster(backend, steps=1500 if quick else 4000)
    data["cluster"] = c
    checks.append(Check("closed cluster: linear momentum change (relative)", c["P"], high=1e-12))
    checks.append(Check("closed cluster: angular momentum change (relative)", c["L"], high=1e-12))
    checks.append(Check("closed cluster: |total + dissipated - E0| / E0", c["energy"], high=2e-4))
    checks.append(Check("closed cluster: dissipated fraction (contacts happened)", c["dissipated_fraction"], low=1e-3))

    lin = {f"{v:g}": linear_impact(v, backend) for v in (0.1, 1.0)}
    data["linear"] = lin
    checks.append(Check("linear law: max |e_measured / e - 1| at 0.1 and 1 m/s",
                        max(abs(r["e"] / r["e_theory"] - 1) for r in lin.values()), high=1e-4))  # fmt: skip
    checks.append(Check("linear law: max |contact time / (pi / omega_d) - 1|",
                        max(abs(r["t_c"] / r["t_c_theory"] - 1) for r in lin.values()), high=1e-4))  # fmt: skip
    data["jkr"] = j = jkr_checks(backend)
    checks.append(Check("JKR: least force of an elastic rebound / (-3 pi gamma R*) - 1",
                        abs(-j["least_force"] / j["theory"]["F_pulloff"] - 1), high=1e-4))  # fmt: skip
    checks.append(Check("JKR: damped sphere's rest overlap / delta_0 - 1",
                        abs(j["rest_overlap"] / j["theory"]["delta_0"] - 1), high=1e-6))  # fmt: skip
    checks.append(Check("JKR: stuck at 0.98 v_s (1: still in contact after ten contact times)",
                        float(j["stuck_below"]), low=1.0))  # fmt: skip
    checks.append(Check("JKR: e at 1.02 v_s / sqrt(1 - v_s^2 / v^2) - 1", abs(j["e_above"] / j["e_above_theory"] - 1),
                        high=0.01))  # fmt: skip

    if not quick:
        data["order_predicted"] = op = orders("predicted", backend)
        data["order_half"] = oh = orders("half", backend)
        checks.append(Check("order of e with h (predicted velocity)", op["order_e"], low=0.9))
        checks.append(Check("error of e at 100 steps per contact (predicted velocity)", op["error_e"][2], high=2e-3))
        for key, o in (("predicted", op), ("half", oh)):
            for c in o["spin"][:2]:
                checks.append(Check(f"order of the rebound spin with h, e = {c['e']:g}, tan theta = {c['tan_theta']:g} "
                                    f"({key} velocity)", c["order"], low=1.5 if key == "predicted" else 0.9))  # fmt: skip

    report = Report("contacts", checks, data, time.perf_counter() - t0)
    report.plotter = lambda path: _plot(data, path)
    return report


def _plot(data, path):
    from matplotlib.figure import Figure

    order = "order_predicted" in data  # the full study: the convergence panel too
    fig = Figure(figsize=(13, 9) if order else (16, 4.8), layout="constrained")
    ax = fig.subplots(2, 2).ravel() if order else fig.subplots(1, 3)
    fig.suptitle("granular validate contacts: Hertz-Mindlin with Tsuji damping (glass spheres, SI units)")
    a = ax[0]
    for k, (e, row) in enumerate(data["restitution"].items()):
        v = [float(x) for x in row]
        a.semilogx(v, [row[x] / float(e) for x in row], marker="os^vD<>"[k % 7], ls=("-", "--", ":", "-.")[k % 4],
                   ms=6 - k % 3, mfc="none", label=f"e = {e}")  # fmt: skip
    a.axhspan(0.99, 1.01, color="0.92", label="±1 % (the check)")
    a.set_title("damped normal impact on a wall: restitution", fontsize="medium")
    a.set_xlabel("impact speed [m/s]")
    a.set_ylabel("measured e / requested e [-]")
    a.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0.0, 1.08), ncols=4, borderaxespad=0.0)
    a.set_ylim(0.985, 1.015)
    ob = data["oblique"]
    t = [o["tan_theta"] for o in ob]
    a = ax[1]
    a.plot(t, [o["v_t_ref"] for o in ob], "-", color="C0", label="v_t' theory")
    a.plot(t, [o["v_t"] for o in ob], "o", color="C0", mfc="none", ms=8, label="v_t' granular")
    a.plot(t, [o["r_omega_ref"] for o in ob], "--", color="C1", label="r ω' theory")
    a.plot(t, [o["r_omega"] for o in ob], "s", color="C1", mfc="none", ms=8, label="r ω' granular")
    a.set_title("oblique impact on a wall (μ = 0.3): rebound", fontsize="medium")
    a.set_xlabel("incidence tan θ = v_t / v_n [-]")
    a.set_ylabel("rebound velocity / v_n [-]")
    a.legend(fontsize="small", loc="upper left")
    a = ax[2]
    labels = ["sphere on wall:\ncontact time", "sphere on wall:\npeak force", "two spheres:\ncontact time",
              "two spheres:\npeak force"]  # fmt: skip
    ratios = [data["elastic_wall"]["t_c"] / data["elastic_wall"]["t_c_theory"],
              data["elastic_wall"]["F_max"] / data["elastic_wall"]["F_max_theory"],
              data["elastic_pair"]["t_c"] / data["elastic_pair"]["t_c_theory"],
              data["elastic_pair"]["F_max"] / data["elastic_pair"]["F_max_theory"]]  # fmt: skip
    a.axhspan(0.99, 1.01, color="0.92", label="±1 % (the check)")
    a.plot(range(4), ratios, "o", color="C0", ms=9, label="granular / Hertz")
    for x, r in enumerate(ratios):
        a.annotate(f"{r:.5f}", (x, r), textcoords="offset points", xytext=(0, 9), ha="center", fontsize="small")
    a.set_xticks(range(4), labels, fontsize="small")
    a.set_xlim(-0.5, 3.5)
    a.set_ylim(0.985, 1.015)
    a.set_title("elastic normal impact: against Hertz", fontsize="medium")
    a.set_ylabel("measured / Hertz [-]")
    a.legend(fontsize="small", loc="lower right")
    if order:
        a = ax[3]
        for key, mark in (("order_predicted", "o-"), ("order_half", "s--")):
            o = data[key]
            h = [1.0 / k for k in o["steps_per_contact"]]
            a.loglog(h, o["error_e"], mark, label=f"e, {key[6:]} velocity (order {o['order_e']:.2f})")
            for c in o["spin"]:
                a.loglog(h, c["error"], mark, alpha=0.5, label=f"spin, e = {c['e']:g}, tan θ = {c['tan_theta']:g}, "
                                                                f"{key[6:]} (order {c['order']:.2f})")  # fmt: skip
        a.set_title("convergence with the step", fontsize="medium")
        a.set_xlabel("h / t_c [-]")
        a.set_ylabel("error [-]")
        a.legend(fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100)
