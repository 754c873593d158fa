"""A heap of frictional spheres at rest and its angle of repose: ``granular validate pile``.

The lifting-cylinder test of DEM calibration, with planar walls: ``N`` spheres (radii
uniform in ``[0.8, 1] r``, ``r = 0.01``, soft grains ``E = 1e7``, ``ν = 0.3``,
``ρ = 2500``, restitution 0.3, sliding friction ``μ = 0.5``, rolling resistance
``μ_r = 0.1``, twisting 0.05; SI units) start on a jittered loose lattice inside a
square column of side ``L`` standing on a rough floor (``z = 0``, the same material),
fall and settle under gravity (**fill**). Then the four side walls are taken away
(:func:`granular.particles.setup.change_setup`: the grains keep their state and their
contacts' springs, those with the side walls go) and the column slumps into a heap
(**release**). Each phase runs until the grains rest: the largest grain speed below
``v_rest`` (1 mm/s, a thousandth of the fall speed) or ``t_max``.

Measured at rest: the heap's flank in 8 azimuthal sectors around the column's axis
(the highest grain top in each radial bin, the flank fitted between 20 % and 80 % of
the heap's height), its slope angle per sector, and their mean and spread: the angle of
repose. Checks: both phases came to rest; the energy balance (kinetic + gravitational +
contact elastic + dissipated) holds to ``2e-3`` of the released potential energy; the
heap has a flank (a slope steeper than 10° and below 60°, the spread over sectors below
10°). The measured angle is reported, not checked against a number: a slumped column
ends below the angle of a poured heap (``docs/contacts.md`` compares it with Zhou et al.
(2002)'s correlation for poured heaps).

Measured (10^4 grains, the default; 262 s on 2 CPU cores, 2026-11-27): at rest after
0.90 s and 2.00 s, a 15.5° flank (5.4° between sectors), energy balance 5.1e-4.
``--quick`` builds 1500 grains (about 20 s), a heap a few grains high whose angle is
reported, not checked.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from ..particles.diagnostics import kinetic_energy_rotational, kinetic_energy_translational
from ..particles.integrators import ExplicitIntegrator
from ..particles.builder import ModelBuilder
from ..particles.setup import change_setup
from ..particles.system import DISSIPATED
from .report import Check, Report

MATERIAL = {"young": 1e7, "poisson": 0.3, "density": 2500.0, "restitution": 0.3, "friction": 0.5,
            "rolling_friction": 0.1, "twisting_friction": 0.05}  # fmt: skip
R_MAX = 0.01
G = 9.81
#: the grains rest when the fastest moves slower than this [L/T]
V_REST = 1e-3
SECTORS = 8


def _column(n, seed):
    """Centres and radii of ``n`` grains on a jittered cubic lattice (spacing 2.3 r) in
    a square column on the floor; the column's side ``L`` (about as wide as the settled
    column will be tall)."""
    rng = np.random.default_rng(seed)
    spacing = 2.3 * R_MAX
    per_side = max(3, round(n ** (1.0 / 3.0)))
    layers = math.ceil(n / per_side**2)
    ii, jj, kk = np.meshgrid(np.arange(per_side), np.arange(per_side), np.arange(layers), indexing="ij")
    x = np.stack([ii.ravel(), jj.ravel(), kk.ravel()], axis=1)[:n].astype(float) * spacing
    x += spacing / 2.0
    x += rng.uniform(-0.1, 0.1, size=x.shape) * R_MAX
    radius = rng.uniform(0.8, 1.0, n) * R_MAX
    return x, radius, per_side * spacing


def fall_time(n, seed=1) -> float:
    """Free-fall time [T] from the top of the loose column of ``n`` grains to the floor."""
    x, radius, _ = _column(n, seed)
    return math.sqrt(2.0 * float((x[:, 2] + radius).max()) / G)


#: The column's four side walls, taken away at the release.
SIDES = ("x-", "x+", "y-", "y+")


def _builder(x, radius, side):
    b = ModelBuilder()
    b.add_material("grain", **MATERIAL)
    b.add_particles(x, radius=radius, material="grain")
    b.set_contacts()
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="grain", name="floor")
    for name, normal, offset in zip(SIDES, ([1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0]), (0.0, -side, 0.0, -side)):
        b.add_wall(normal, offset, material="grain", name=name)
    b.set_gravity([0.0, 0.0, -G])
    b.expect_changes()  # the side walls go at the release (granular.particles.setup)
    return b


def _energy(model, s):
    """Kinetic + gravitational + contact elastic energy, and the dissipated energy."""
    d = model.diagnostics(s)
    total = d["kinetic_translational"] + d["kinetic_rotational"] + d["U_pp"] + d["U_pw"] + d["U_gravity"]
    return total, sum(d[k] for k in DISSIPATED)


def settle(model, h, t_max, chunk=0.05, progress=None, state=None):
    """Advance ``model`` from ``state`` (default: its initial state) until the fastest
    grain is slower than :data:`V_REST` (checked every ``chunk`` of time) or for
    ``t_max``; returns the state, the time it ran, whether it rests, and the largest
    ``|E + dissipated - E0|`` [M L²/T²] of the checks."""
    integ = ExplicitIntegrator("verlet")
    s = model.state() if state is None else state
    integ.prepare(model, s)
    e0, d0 = _energy(model, s)
    steps = max(1, round(chunk / h))
    t, worst, rest = 0.0, 0.0, False
    while t < t_max - 0.5 * h:
        integ.advance(model, s, h, steps)
        t += steps * h
        e, d = _energy(model, s)
        worst = max(worst, abs(e + (d - d0) - e0))
        vmax = float(np.sqrt((model.backend.to_host(s.v) ** 2).sum(axis=1).max()))
        if progress:
            progress(t, vmax)
        if vmax < V_REST:
            rest = True
            break
    return s, t, rest, worst


def flank_angles(distance, top, group, groups, width, lo=0.2, hi=0.8):
    """The slope [degrees] of a heap's flanks: the grains split into ``groups`` (the
    integer ``group`` of each, ``0 <= group < groups``: sectors around a cone's axis, or
    the two sides of a slot's heap), ``distance`` each grain's horizontal distance from
    the heap's axis and ``top`` its top (``z + r``). In each group the highest top per bin
    of ``width`` in ``distance``; the surface points between ``lo`` and ``hi`` of the
    heap's height (the highest top of all), out from the axis up to the heap's foot (the
    first bin below ``lo``), fitted by a line. Returns the angles (NaN where a group has
    fewer than 3 such points) and the heap's height."""
    distance, top, group = np.asarray(distance), np.asarray(top), np.asarray(group)
    height = float(top.max())
    nbin = int(distance.max() / width) + 1
    centres = (np.arange(nbin) + 0.5) * width
    angles = np.full(groups, np.nan)
    for k in range(groups):
        sel = group == k
        surf = np.full(nbin, -np.inf)
        np.maximum.at(surf, (distance[sel] / width).astype(int), top[sel])
        # the heap: the bins out from the axis up to the first one whose surface is below
        # lo (grains that rolled away beyond the foot are not part of the flank)
        below = np.flatnonzero(surf <= lo * height)
        foot = below[0] if below.size else nbin
        ok = (surf > lo * height) & (surf < hi * height) & (np.arange(nbin) < foot)
        if ok.sum() >= 3:
            slope = np.polyfit(centres[ok], surf[ok], 1)[0]
            angles[k] = math.degrees(math.atan(-slope))
    return angles, height


def repose_angle(x, radius, axis, sectors=SECTORS, lo=0.2, hi=0.8):
    """The heap's flank slope [degrees] in ``sectors`` azimuthal sectors around the
    vertical line through ``axis`` (x, y): :func:`flank_angles` with the grains' distance
    from the axis, in radial bins of one largest diameter. Returns the angles (NaN where a
    sector has fewer than 3 surface points) and the heap's height."""
    x = np.asarray(x)
    dx, dy = x[:, 0] - axis[0], x[:, 1] - axis[1]
    phi = np.mod(np.arctan2(dy, dx), 2 * np.pi)
    sector = np.minimum((phi / (2 * np.pi) * sectors).astype(int), sectors - 1)
    return flank_angles(np.hypot(dx, dy), x[:, 2] + radius, sector, sectors, 2.0 * float(np.max(radius)), lo, hi)


def pile(n=10_000, backend="cpu", seed=1, h=4e-5, t_fill=1.5, t_release=3.0, progress=None, dtype="float64") -> dict:
    """Fill, release and measure (see the module docstring); the heap's grain centres and
    radii are returned as ``positions`` and ``radii``, the steps taken as ``steps``."""
    x, radius, side = _column(n, seed)
    m = _builder(x, radius, side).finalize(backend, dtype=np.dtype(dtype))
    s1, t1, rest1, err1 = settle(m, h, t_fill, progress=progress and (lambda t, v: progress("fill", t, v)))
    be = m.backend
    top1 = float((be.to_host(s1.x)[:, 2] + radius).max())
    # the release: the side walls go, everything else (the contacts' springs too) stays
    change_setup(m, s1, remove=list(SIDES))
    s2, t2, rest2, err2 = settle(m, h, t_release, progress=progress and (lambda t, v: progress("release", t, v)),
                                 state=s1)  # fmt: skip
    x2 = be.to_host(s2.x)
    # the energy scale: the potential energy released by the fall and the slump
    released = float(G * (be.to_host(m.mass) * (x[:, 2] - x2[:, 2])).sum())
    angles, height = repose_angle(x2, radius, (side / 2.0, side / 2.0))
    ke = kinetic_energy_translational(m, s2) + kinetic_energy_rotational(m, s2)
    return {"N": n, "column_side": side, "fill_time": t1, "fill_rests": rest1, "fill_height": top1,
            "release_time": t2, "release_rests": rest2, "heap_height": height,
            "heap_radius": float(np.hypot(x2[:, 0] - side / 2, x2[:, 1] - side / 2).max()),
            "angles": angles.tolist(), "angle_mean": float(np.nanmean(angles)),
            "angle_spread": float(np.nanmax(angles) - np.nanmin(angles)),
            "energy_error": max(err1, err2) / released, "kinetic_at_rest": ke / released,
            "released_potential": released, "steps": s2.step, "positions": x2.copy(),
            "radii": radius}  # fmt: skip


def run(quick=False, backend="cpu") -> Report:
    t0 = time.perf_counter()
    n = 1500 if quick else 10_000

    def progress(phase, t, v):  # on stderr: stdout carries the report (or its JSON)
        print(f"  pile: {phase} t = {t:.2f} s, fastest grain {v:.2e} m/s", file=sys.stderr, flush=True)

    p = pile(n, backend, progress=progress)
    p = {k: v for k, v in p.items() if k not in ("positions", "radii", "steps")}
    checks = [
        Check("fill: the grains came to rest (1 if so)", float(p["fill_rests"]), low=1.0),
        Check("release: the heap came to rest (1 if so)", float(p["release_rests"]), low=1.0),
        Check("energy balance: max |E + dissipated - E0| / released potential", p["energy_error"], high=2e-3),
    ]
    if not quick:  # 1500 grains make a heap a few grains high: its flank is not a slope yet
        checks += [Check("flank angle, mean over sectors [deg]", p["angle_mean"], low=10.0, high=60.0),
                   Check("flank angle, max - min over sectors [deg]", p["angle_spread"], high=10.0)]  # fmt: skip
    return Report("pile", checks, {"pile": p}, time.perf_counter() - t0)
