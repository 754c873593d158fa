"""Hopper discharge: the Beverloo law, ``granular validate hopper``.

A flat-bottomed cylindrical silo (radius ``R_s = 30 mm``, a 64-facet cylinder mesh) stands
on a plate with a round outlet of diameter ``D`` in its middle (an annulus mesh). It is
filled by an insertion (:class:`~granular.particles.feeds.Insertion`) into a band at its
top (``z`` in 35-55 mm) at a rate no band can hold: the band takes what finds room at
each edit, so the bed grows until its surface reaches the band and then stays there.
The outlet is closed by a plane under it (1e-4 m below the plate) during the filling
stage (0.35 s); at ``t_open`` the plane drops away at 2 m/s and the grains run out. An
outlet (:class:`~granular.particles.feeds.Outlet`) takes out every grain that falls 2
cm below the plate, and the insertion goes on topping up the silo: the head stays at
about 5 cm (2-3 outlet diameters), where the discharge rate no longer depends on it.

The grains, glass beads: radii uniform in ``[1.35, 1.65]`` mm (mean diameter ``d = 3`` mm),
``E = 1e7`` Pa, ``ν = 0.3``, ``ρ = 2500`` kg/m³, restitution 0.5, sliding friction 0.2
(clean glass on glass), rolling friction 0.01; the silo and plate of the same material.
Step ``2e-5`` s. ``C`` falls as the friction rises: the same silo gave ``C = 0.536`` (``k =
1.53``) with sliding friction 0.3, and ``C = 0.48`` with 0.5 and rolling friction 0.05
(at ``D/d`` = 5-8).

The discharge rate ``W`` [kg/s]: the slope of the ledger's ``mass_removed`` against time
over a window that starts 0.1 s after the opening (the flow is steady by then), fitted by
least squares. The bulk density ``ρ_b``: the grains' volume in a slab of the bed (``z`` in
[10, 30] mm, away from the wall by a grain diameter) over the slab's volume, times ``ρ``,
just before the opening.

The Beverloo law (Beverloo, Leniger & van de Velde 1961; Nedderman, Tüzün, Savage &
Houlsby 1982):

    W = C ρ_b sqrt(g) (D - k d)^(5/2)

is fitted as the straight line ``W^(2/5) = a (D - k d)``: ``C = a^(5/2) / (ρ_b sqrt(g))``.
Checked: ``C`` in [0.55, 0.65] and ``k`` in [1, 3], the range of the experiments (Nedderman
et al. 1982 review ``C`` from 0.55 to 0.65 and ``k`` from 1 to 3 for spheres), and the
line's largest residual in ``W^(2/5)`` against its values (the 5/2 power holds). The
outlets: ``D/d`` = 6, 7, 8 and 9, over a window of 0.5 s. At ``D/d = 5``, near the size
below which an outlet of spheres clogs now and then (about 4.9 grains), the flow came in
bursts and two runs differed by 15 %. ``--quick`` runs ``D/d`` = 6 and 8 in a silo of
radius 24 mm over 0.15 s: two points fix the line, so it checks ``C`` and ``k`` in wider
bands and no residual.

References: W. A. Beverloo, H. A. Leniger, J. van de Velde, "The flow of granular solids
through orifices", Chem. Eng. Sci. 15, 260-269 (1961). R. M. Nedderman, U. Tüzün, S. B.
Savage, G. T. Houlsby, "The flow of granular materials I: discharge rates from hoppers",
Chem. Eng. Sci. 37, 1597-1609 (1982).
"""

from __future__ import annotations

import csv
import math
import os
import sys
import tempfile
import time

import numpy as np

from ..particles.builder import ModelBuilder
from ..particles.feeds import Box, Cylinder, Insertion, Outlet
from ..particles.forces.meshes import TriangleMesh
from ..run.simulation import Simulation
from .figures import finish
from .report import Check, Report

RS = 0.03  # silo radius [m]
HEIGHT = 0.1  # silo height [m]
RADII = (0.00135, 0.00165)
D_GRAIN = RADII[0] + RADII[1]  # mean diameter
G = 9.81
#: glass beads: sliding friction 0.2, a little rolling resistance
GRAIN = {"young": 1e7, "poisson": 0.3, "density": 2500.0, "restitution": 0.5, "friction": 0.2,
         "rolling_friction": 0.01}  # fmt: skip
DT = 2e-5
T_OPEN = 0.35
SETTLE = 0.1  # after the opening, before the window
FEED_EVERY = 2.5e-3
BAND = (0.035, 0.055)  # the insertion band [m]


def hopper_model(outlet, silo=RS, backend="cpu"):
    """The silo (radius ``silo`` [m]) with an outlet of diameter ``outlet`` [m], its gate
    closed until ``T_OPEN``, one grain in it (a model needs one; the insertion brings the
    rest)."""
    b = ModelBuilder()
    b.add_material("grain", **GRAIN)
    b.add_particles([[0.0, 0.0, BAND[1]]], radius=RADII[1], material="grain")
    b.set_contacts()
    b.add_mesh(TriangleMesh.cylinder(silo, HEIGHT, segments=64, center=(0.0, 0.0, 0.5 * HEIGHT), caps=False,
                                     name="silo"), material="grain")  # fmt: skip
    b.add_mesh(TriangleMesh.annulus(silo + 0.004, 0.5 * outlet, segments=64, name="plate"), material="grain")
    gate = [[0.0, 0.0, 0.0, 0.0], [T_OPEN, 0.0, 0.0, 0.0], [T_OPEN + 0.002, 0.0, 0.0, -2.0], [1e3, 0.0, 0.0, -2.0]]
    b.add_wall([0.0, 0.0, 1.0], -1e-4, material="grain", velocity=gate)
    b.set_gravity([0.0, 0.0, -G])
    return b.finalize(backend)


def bulk_density(x, radius, silo=RS) -> float:
    """``ρ`` times the grains' volume fraction in the slab ``z`` in [10, 30] mm, a grain
    diameter in from the wall (grains cut by the slab's faces counted by their centres:
    the slab is 7 grains deep, the error a few %)."""
    r_slab = silo - D_GRAIN
    inside = (x[:, 2] > 0.01) & (x[:, 2] < 0.03) & (np.hypot(x[:, 0], x[:, 1]) < r_slab)
    volume = float((4.0 / 3.0 * math.pi * radius[inside] ** 3).sum())
    return GRAIN["density"] * volume / (math.pi * r_slab**2 * 0.02)


def discharge(outlet, window, silo=RS, backend="cpu", folder=None) -> dict:
    """One hopper (radius ``silo``) with an outlet of diameter ``outlet`` [m]: fill, open,
    and the steady discharge rate over ``window`` [s] after ``SETTLE``."""
    model = hopper_model(outlet, silo, backend)
    state = model.state()
    pour = Insertion(Cylinder([0.0, 0.0, 0.5 * (BAND[0] + BAND[1])], [0.0, 0.0, 1.0], silo - 2e-4, BAND[1] - BAND[0]),
                     RADII, "grain", rate=1e6, velocity=(0.0, 0.0, -0.3), seed=1)  # fmt: skip
    out = Outlet(Box([-1.0, -1.0, -10.0], [1.0, 1.0, -0.02]))
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        sim = Simulation(model, state, os.path.join(tmp, "run"), dt=DT, feeds=[pour, out], feed_every=FEED_EVERY,
                         series_every=0.01, output_every=1.0)  # fmt: skip
        sim.run(until=T_OPEN - 0.01)
        be = model.backend
        rho_b = bulk_density(np.asarray(be.to_host(state.x)), np.asarray(be.to_host(model.radius)), silo)
        grains = model.n
        t_end = T_OPEN + SETTLE + window
        sim.run(until=t_end)
        with open(os.path.join(tmp, "run", "series.csv")) as fh:
            rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]
    t = np.array([r["time"] for r in rows])
    mass = np.array([r["mass_removed"] for r in rows])
    sel = t >= T_OPEN + SETTLE - 1e-9
    rate, offset = np.polyfit(t[sel], mass[sel], 1)
    spread = float(np.abs(mass[sel] - (rate * t[sel] + offset)).max())
    return {"outlet": outlet, "ratio": outlet / D_GRAIN, "rate": float(rate), "bulk_density": rho_b,
            "grains_at_opening": int(grains), "removed": int(rows[-1]["removed"]),
            "inserted": int(rows[-1]["inserted"]), "largest_deviation_kg": spread, "window": window}  # fmt: skip


def beverloo(outlets, rates, rho_b, d=D_GRAIN, g=G) -> dict:
    """The Beverloo fit ``W^(2/5) = a (D - k d)`` by least squares: ``C``, ``k`` and the
    largest residual of ``W^(2/5)`` relative to its value."""
    D = np.asarray(outlets, dtype=np.float64)
    y = np.asarray(rates, dtype=np.float64) ** 0.4
    a, b = np.polyfit(D, y, 1)
    C = a**2.5 / (rho_b * math.sqrt(g))
    k = -b / (a * d)
    residual = float(np.abs(y - (a * D + b)).max() / y.max())
    return {"C": float(C), "k": float(k), "a": float(a), "b": float(b), "residual": residual}


def run(quick=False, backend="cpu") -> Report:
    t0 = time.perf_counter()
    ratios = [6.0, 8.0] if quick else [6.0, 7.0, 8.0, 9.0]
    window = 0.15 if quick else 0.5
    silo = 0.024 if quick else RS
    runs = []
    for ratio in ratios:
        runs.append(discharge(ratio * D_GRAIN, window, silo, backend=backend))
        print(f"  hopper: D = {ratio:g} d: {runs[-1]['rate'] * 1e3:.1f} g/s, bulk density "
              f"{runs[-1]['bulk_density']:.0f} kg/m3", file=sys.stderr, flush=True)  # fmt: skip
    rho_b = float(np.mean([r["bulk_density"] for r in runs]))
    fit = beverloo([r["outlet"] for r in runs], [r["rate"] for r in runs], rho_b)
    checks = [
        Check("Beverloo C", fit["C"], low=0.45 if quick else 0.55, high=0.75 if quick else 0.65),
        Check("Beverloo k", fit["k"], low=0.5 if quick else 1.0, high=3.5 if quick else 3.0),
        Check("bulk density / grain density", rho_b / GRAIN["density"], low=0.55, high=0.66),
    ]
    if not quick:  # two points leave no residual
        checks.append(Check("largest residual of W^(2/5) about the fitted line / W^(2/5)", fit["residual"], high=0.03))
    data = {"runs": runs, "fit": fit, "bulk_density": rho_b, "grain_diameter": D_GRAIN, "silo_radius": silo}
    report = Report("hopper", checks, {"hopper": data}, time.perf_counter() - t0)
    report.plotter = lambda path: _plot(path, runs, fit, rho_b)
    return report


def _plot(path, runs, fit, rho_b):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5), layout="constrained")
    D = np.array([r["outlet"] for r in runs])
    ax.plot(D / D_GRAIN, [r["rate"] * 1e3 for r in runs], "o", label="granular")
    line = np.linspace(D.min() * 0.9, D.max() * 1.05, 50)
    ax.plot(line / D_GRAIN, 1e3 * (np.clip(fit["a"] * line + fit["b"], 0, None)) ** 2.5, "--",
            label=f"Beverloo fit: C = {fit['C']:.3f}, k = {fit['k']:.2f}")  # fmt: skip
    ax.set(xlabel="outlet diameter D / d", ylabel="discharge rate W [g/s]",
           title=f"flat-bottomed silo, ρ_b = {rho_b:.0f} kg/m³")  # fmt: skip
    ax.legend(fontsize=8)
    finish(fig)
    fig.savefig(path, dpi=110)
    plt.close(fig)
