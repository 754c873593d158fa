"""3D pendulum study of paper 003, Sect. 3 and Fig. 1.

Setup (the paper gives only (39) and the initial conditions (42); the remaining
parameters are ours): ``m = J = g = 1``, ``ρ0 = e = e3``, pivot at the origin,
``α(0) = [0, 1, 0] 2 tan(3π/8)`` (a 135° tilt about ``e2``),
``Ω(0) = [1, 0, 1] 0.4 sin²(π/4)``; horizon ``t_N = 10``.

Measured, for maps (23), (25) and (27):

* E(t)-error (38) over a sequence of halved steps: order 2 for (23), (25), 1 for (27);
* q(t)-error (37) against a reference run (map (23), step ``h_min / 32``): order 1 for
  (23), (25) (a difference of squared norms, see :func:`granular.particles.diagnostics.q_error`),
  and the plain relative H1 distance of the trajectories: order 2;
* invariants (41b) ``Rρ0·Ω`` and (41c) ``|Rρ0|`` over ``10^5`` steps of ``h = 0.01``:
  conserved to round-off by (23) and (25).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..particles import diagnostics as diag
from ..particles.integrators import ExplicitIntegrator
from ..particles.builder import ModelBuilder
from ..run.simulation import run_sampled
from .report import Check, Report

ALPHA0 = (0.0, 2.0 * math.tan(3.0 * math.pi / 8.0), 0.0)
OMEGA0 = tuple(0.4 * math.sin(math.pi / 4.0) ** 2 * c for c in (1.0, 0.0, 1.0))
RHO0 = (0.0, 0.0, 1.0)


def build_model(backend="cpu", alpha0=ALPHA0, omega0=OMEGA0, g=1.0, mass=1.0, inertia=1.0):
    """One pendulum (or a batch: ``alpha0``, ``omega0`` of shape (K, 3)) about the origin."""
    a = np.atleast_2d(np.asarray(alpha0, dtype=float))
    w = np.atleast_2d(np.asarray(omega0, dtype=float))
    b = ModelBuilder()
    idx = b.add_particles(np.zeros((len(a), 3)), alpha=a, omega=w, mass=mass, inertia=inertia, radius=0.5)
    b.add_pendulum(idx, rho0=RHO0, g=g)
    return b.finalize(backend)


def run_trajectory(model, scheme, h, t_end, record_every=1):
    """Integrate to ``t_end`` with step ``h``; returns the recorded trajectory arrays."""
    steps = int(round(t_end / h))
    if abs(steps * h - t_end) > 1e-9 * t_end:
        raise ValueError(f"h: t_end = {t_end} is not a whole number of steps of {h}")
    integ = ExplicitIntegrator(scheme)
    state = model.state()
    integ.prepare(model, state)
    rec = diag.TrajectoryRecorder(model)
    rec.record(state)
    run_sampled(model, state, integ, h, steps, record_every, rec.record, label="pendulum")
    return rec.arrays()


def invariant_drift(model, scheme, h, steps, samples=200):
    """Max relative deviation of (41b) and (41c) over ``steps`` steps, and their history."""
    integ = ExplicitIntegrator(scheme)
    state = model.state()
    integ.prepare(model, state)
    dot0, norm0 = diag.pendulum_invariants(model, state)
    scale = np.linalg.norm(RHO0) * max(1.0, float(np.abs(model.backend.to_host(state.omega)).max()))
    hist = {"t": [0.0], "dot": [0.0], "norm": [0.0]}

    def sample(s):
        d, n = diag.pendulum_invariants(model, s)
        hist["t"].append(s.time)
        hist["dot"].append(float(np.max(np.abs(d - dot0))) / scale)
        hist["norm"].append(float(np.max(np.abs(n - norm0) / norm0)))

    run_sampled(model, state, integ, h, steps, max(1, steps // samples), sample, label="pendulum")
    sample(state)
    return max(hist["dot"]), max(hist["norm"]), {k: np.asarray(v) for k, v in hist.items()}


def _subsample(traj, every):
    return {k: v[::every] for k, v in traj.items()}


def run(quick: bool = False, backend: str = "cpu") -> Report:
    """Run the study; returns a :class:`Report` with checks, data and a plot function."""
    started = time.perf_counter()
    t_end = 5.0 if quick else 10.0
    hs = [0.1, 0.05, 0.025, 0.0125] if quick else [0.1, 0.05, 0.025, 0.0125, 0.00625]
    ratio = 16 if quick else 32
    inv_steps = 20_000 if quick else 100_000
    model = build_model(backend)

    h_min = hs[-1]
    ref = run_trajectory(model, "exact", h_min / ratio, t_end, record_every=ratio)
    errors = {}
    for scheme in ("exact", "verlet", "campello"):
        e_err, q_err, h1 = [], [], []
        for h in hs:
            traj = run_trajectory(model, scheme, h, t_end)
            r = _subsample(ref, int(round(h / h_min)))
            e_err.append(diag.energy_error(traj["t"], traj["E"]))
            q_err.append(diag.q_error(traj, r))
            h1.append(diag.h1_difference(traj, r))
        errors[scheme] = {"E_error": e_err, "q_error": q_err, "H1_difference": h1}

    checks = []
    for scheme, eq in (("exact", "(23)"), ("verlet", "(25)")):
        e = errors[scheme]
        checks += [
            Check(f"map {eq}: order of E(t)-error (38)", diag.convergence_order(hs, e["E_error"]), 1.8, 2.2),
            Check(f"map {eq}: order of q(t)-error (37)", diag.convergence_order(hs, e["q_error"]), 0.8, 1.2),
            Check(f"map {eq}: order of H1 trajectory distance", diag.convergence_order(hs, e["H1_difference"]), 1.8, 2.2),
        ]
    checks.append(
        Check("map (27): order of E(t)-error (38)", diag.convergence_order(hs, errors["campello"]["E_error"]), 0.8, 1.2)
    )
    history = {}
    for scheme, eq in (("exact", "(23)"), ("verlet", "(25)")):
        dot, norm, hist = invariant_drift(model, scheme, 0.01, inv_steps)
        history[scheme] = hist
        checks += [
            Check(f"map {eq}: max rel. change of R rho0 . Omega (41b), {inv_steps} steps", dot, None, 1e-13),
            Check(f"map {eq}: max rel. change of |R rho0| (41c), {inv_steps} steps", norm, None, 1e-13),
        ]
    data = {
        "parameters": {
            "m": 1.0, "J": 1.0, "g": 1.0, "rho0": list(RHO0), "alpha0": list(ALPHA0), "omega0": list(OMEGA0),
            "t_end": t_end, "h": hs, "h_reference": h_min / ratio, "invariant_steps": inv_steps,
            "invariant_h": 0.01, "backend": model.backend.name,
        },
        "errors": errors,
    }  # fmt: skip
    report = Report("pendulum", checks, data, time.perf_counter() - started)
    report.plotter = lambda path: _plot(path, hs, errors, history)
    return report


def _plot(path, hs, errors, history):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    marks = {"exact": ("o", "map (23)"), "verlet": ("v", "map (25)"), "campello": ("s", "map (27)")}
    fig, ax = plt.subplots(2, 2, figsize=(11, 9), layout="constrained")
    h = np.asarray(hs)
    for scheme, (mk, label) in marks.items():
        ax[0, 0].loglog(h, errors[scheme]["E_error"], mk + "-", label=label, mfc="none")
        if scheme != "campello":
            ax[0, 1].loglog(h, errors[scheme]["q_error"], mk + "-", label=f"{label}: q(t)-error (37)", mfc="none")
            ax[0, 1].loglog(h, errors[scheme]["H1_difference"], mk + "--", label=f"{label}: H1 distance", mfc="none")
    for a, p in ((ax[0, 0], 2), (ax[0, 1], 1)):
        ref = errors["verlet"]["E_error" if p == 2 else "q_error"][0] * (h / h[0]) ** p
        a.loglog(h, ref, "k:", lw=2.5, alpha=0.6, label=f"slope {p}")
        a.set_xlabel("step h [T]")
        a.set_xticks(h, [f"{x:g}" for x in h])  # the steps run, not crowded minor labels
        a.xaxis.set_minor_formatter(NullFormatter())
        a.legend(fontsize=8)
    ax[0, 0].set_title("energy error against the step", fontsize="medium")
    ax[0, 1].set_title("trajectory error against the step", fontsize="medium")
    ax[0, 0].set_ylabel("E(t)-error (38) [-]")
    ax[0, 1].set_ylabel("trajectory error [-]")
    for scheme in ("exact", "verlet"):
        mk, label = marks[scheme]
        hist = history[scheme]
        ax[1, 0].semilogy(hist["t"][1:], np.maximum(hist["dot"][1:], 1e-18), mk, ms=3, label=label, mfc="none")
        ax[1, 1].semilogy(hist["t"][1:], np.maximum(hist["norm"][1:], 1e-18), mk, ms=3, label=label, mfc="none")
    ax[1, 0].set_ylabel(r"$|R\rho_0\cdot\Omega - (R\rho_0\cdot\Omega)_0|$ (41b), relative [-]")
    ax[1, 1].set_ylabel(r"$||R\rho_0| - 1|$ (41c) [-]")
    ax[1, 0].set_title("invariant (41b) along the run (0 drawn at 1e-18)", fontsize="medium")
    ax[1, 1].set_title("invariant (41c) along the run (0 drawn at 1e-18)", fontsize="medium")
    for a in ax[1]:
        a.set_xlabel("time t [T]")
        a.axhline(1e-13, color="k", ls=":", lw=1, label="1e-13 (the check)")
        a.set_ylim(top=1e-12)
        a.legend(fontsize=8, loc="upper right", ncols=3)
    fig.suptitle("3D pendulum (paper 003, Fig. 1): convergence and invariants")
    fig.savefig(path, dpi=120)
    plt.close(fig)
