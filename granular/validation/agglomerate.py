"""Impacts of one bonded agglomerate on a wall: ``granular validate agglomerate``.

One specimen (:func:`granular.particles.packing.dense_packing`: grains of radii 0.4-0.6
mm, log-normal, in a sphere; soft grains ``E = 100 MPa``, ``ν = 0.25``, ``ρ = 2500``,
restitution 0.5, friction 0.5; SI units) cemented where its grains touch by parallel
bonds (``E = 100 MPa``, ``ν = 0.25``, bond radius half the smaller grain's, tensile and
shear strengths of 2 MPa scattered per bond by a Weibull law of modulus 5) hits a wall
of the grains' material at a range of speeds, normally and at 45° to the wall, all
impacts one model of replicas (:meth:`~granular.particles.builder.ModelBuilder.replicas`)
stepped together. At the end of each impact: the damage ratio (broken / initial bonds),
the number of fragments, the mass fraction of the largest and the cumulative
fragment-mass distribution (:mod:`granular.particles.fragments`).

Checks: the damage ratio of the normal impacts rises with the speed (Spearman's rank
correlation at least 0.9) and spans chipping to break-up (below 0.1 at the lowest speed,
above 0.5 at the highest); the largest fragment shrinks as the damage grows (rank
correlation at most -0.9); each fragment set accounts for the replica's whole mass; the
energy balance (kinetic + stored + released + dissipated) holds within 2 % of the
impact's kinetic energy at the lowest speed, where few bonds break, and within 6 % for
every impact: breaking a bond drops its force for the second half of the step's kick, a
first-order event of about ``F v h / 2`` per bond (``docs/physics.md``), and a thousand
bonds break in a violent impact; the rest is the scheme's second-order error at this
step (``h`` a quarter of the contact's stable step). Measured: 0.1 % (quick) and 1.0 %
(full) at 1 m/s, at most 3.5 % (quick) and 4.5 % (full).

Measured (2,000 grains, 8 speeds from 1 to 16 m/s at 90° and 45°, 1.5 ms, 91 s on 2
cores; ``--quick``: 500 grains, 6 normal impacts from 1 to 16 m/s, 1 ms, 8 s): see
``docs/agglomerates.md``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..particles.builder import ModelBuilder
from ..particles.fragments import fragment_labels, per_replica
from ..particles.integrators import ExplicitIntegrator
from ..particles.packing import dense_packing
from ..particles.replicas import replica_diagnostics
from ..particles.strengths import draw_strengths
from .figures import finish
from .report import Check, Report

GRAIN = {"young": 1e8, "poisson": 0.25, "density": 2500.0, "restitution": 0.5, "friction": 0.5}
CEMENT = {"young": 1e8, "poisson": 0.25, "radius_ratio": 0.5}
STRENGTH, WEIBULL_MODULUS = 2e6, 5.0
RADII = (0.4e-3, 0.6e-3)
DT = 5e-7
GAP = 5e-5  # between the specimen's container and the wall [L]


def _energy(d) -> np.ndarray:
    return sum(d[k] for k in d if k.startswith(("kinetic_", "U_", "dissipated_")))


def replica_builder(x, radius, speed, angle_deg, strengths, pairs) -> ModelBuilder:
    """One impact: the specimen at speed ``speed`` [L/T], ``angle_deg`` from the wall's
    plane (90: normal), toward the wall ``x = 0``."""
    a = math.radians(angle_deg)
    b = ModelBuilder()
    b.add_material("grain", **GRAIN)
    b.add_particles(x, v=[-speed * math.sin(a), speed * math.cos(a), 0.0], radius=radius, material="grain")
    b.add_parallel_bonds(pairs, tensile_strength=strengths[0], shear_strength=strengths[1], **CEMENT)
    b.set_contacts(bonded_contacts=False, skin=2e-4)
    b.add_wall([1.0, 0.0, 0.0], 0.0, material="grain")
    return b


def impacts(count, speeds, angles, duration, backend="cpu", seed=1, progress=None) -> dict:
    """Every (speed, angle) impact of one specimen of ``count`` grains (module docstring)."""
    spec = dense_packing(count, radius=RADII, distribution="lognormal", seed=seed)
    spread = 1.0 + spec.max_overlap
    x = spec.x * spread + [spec.size[0] * spread + GAP, 0.0, 0.0]
    pairs = spec.pairs(1.01)
    strengths = [draw_strengths(STRENGTH, len(pairs), "weibull", modulus=WEIBULL_MODULUS, seed=seed + k)
                 for k in range(2)]  # fmt: skip
    cases = [(float(v), float(a)) for a in angles for v in speeds]
    builders = [replica_builder(x, spec.radius, v, a, strengths, pairs) for v, a in cases]
    model = ModelBuilder.replicas(builders).finalize(backend)
    state = model.state()
    integ = ExplicitIntegrator("verlet")
    e0 = _energy(replica_diagnostics(model, state))
    kinetic0 = replica_diagnostics(model, state)["kinetic_translational"]
    steps = round(duration / DT)
    chunk = max(1, steps // 10)
    done = 0
    while done < steps:
        k = min(chunk, steps - done)
        integ.advance(model, state, DT, k)
        done += k
        if progress:
            progress(done, steps)
    d = replica_diagnostics(model, state)
    frag = per_replica(model, state)
    be = model.backend
    labels = be.to_host(fragment_labels(model, state))
    rep = np.asarray(be.to_host(model.replica), dtype=np.int64)
    m = np.asarray(be.to_host(model.mass), dtype=np.float64)
    roots, inverse = np.unique(labels, return_inverse=True)
    masses = np.bincount(inverse, weights=m)
    owner = rep[roots]
    return {
        "grains": count, "bonds": len(pairs), "solid_fraction": spec.solid_fraction,
        "coordination": spec.coordination, "speed": [v for v, _ in cases], "angle": [a for _, a in cases],
        "duration": duration, "steps": steps, "damage": frag["damage"].tolist(),
        "fragments": frag["fragments"].tolist(), "largest_fragment": frag["largest_fragment"].tolist(),
        "fragment_masses": [np.sort(masses[owner == r]).tolist() for r in range(len(cases))],
        "mass": float(m[rep == 0].sum()),
        "energy_error": (np.abs(_energy(d) - e0) / kinetic0).tolist(),
    }  # fmt: skip


def _rank_correlation(a, b) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def run(quick=False, backend="cpu") -> Report:
    t0 = time.perf_counter()
    if quick:
        res = impacts(500, np.linspace(1.0, 16.0, 6), [90.0], 1e-3, backend)
    else:
        res = impacts(2000, [1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0], [90.0, 45.0], 1.5e-3, backend)
    speed, angle = np.array(res["speed"]), np.array(res["angle"])
    normal = angle == 90.0
    damage, largest = np.array(res["damage"]), np.array(res["largest_fragment"])
    mass_gap = max(abs(sum(fm) - res["mass"]) / res["mass"] for fm in res["fragment_masses"])
    checks = [
        Check("damage rises with speed: rank correlation (normal impacts)",
              _rank_correlation(speed[normal], damage[normal]), low=0.9),
        Check("damage ratio at the lowest speed", float(damage[normal][0]), high=0.1),
        Check("damage ratio at the highest speed", float(damage[normal][-1]), low=0.5),
        Check("largest fragment shrinks with damage: rank correlation", _rank_correlation(damage, largest), high=-0.9),
        Check("fragments hold the whole mass: max relative gap", mass_gap, high=1e-12),
        Check("energy balance, lowest speed (few bonds break): |E - E0| / initial kinetic energy",
              float(np.array(res["energy_error"])[normal][0]), high=0.02),
        Check("energy balance, every impact: max |E - E0| / initial kinetic energy", max(res["energy_error"]),
              high=0.06),
    ]  # fmt: skip
    report = Report("agglomerate", checks, {"agglomerate": res}, time.perf_counter() - t0)
    report.plotter = lambda path: _plot(path, res)
    return report


def _plot(path, res):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    speed, angle = np.array(res["speed"]), np.array(res["angle"])
    fig, ax = plt.subplots(1, 3, figsize=(17, 4.8), layout="constrained")
    for a in sorted(set(angle.tolist()), reverse=True):
        sel = angle == a
        ax[0].plot(speed[sel], np.array(res["damage"])[sel], "o-", label=f"{a:g}° to the wall")
        ax[1].plot(speed[sel], np.array(res["largest_fragment"])[sel], "o-", label=f"{a:g}° to the wall")
    ax[0].set(title="damage ratio", xlabel="impact speed [m/s]", ylabel="broken / initial bonds [-]")
    ax[1].set(title="largest fragment", xlabel="impact speed [m/s]", ylabel="mass fraction [-]")
    first = angle == angle[0]
    for r in np.flatnonzero(first):
        m = np.array(res["fragment_masses"][r])
        ax[2].step(m / res["mass"], np.cumsum(m) / m.sum(), where="post", label=f"{speed[r]:g} m/s")
    ax[2].set(title=f"cumulative fragment mass, {angle[0]:g}°", xscale="log", xlabel="fragment mass fraction [-]",
              ylabel="mass in fragments no heavier [-]")  # fmt: skip
    for a_ in ax:
        a_.legend(fontsize=8)
    finish(fig)
    fig.savefig(path, dpi=110)
    plt.close(fig)
