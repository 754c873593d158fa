"""Unstable rotation of a free rigid body, paper 001 Sect. 6, eqs. (88)-(91), Figs. 7-12.

Setup (``docs/physics.md``): ``J̄ = diag(5.2988, 1.1775, 4.3568)``, ``m = 1``,
``Ω̄0 = [0.01, 0, 100]``, ``Ū0 = 0``, ``R0 = I``, ``x0 = 0``, hexahedron
``l1 = l2 = l3 = 1`` (so ``w̄0`` is (89)), no loads, ``t ∈ [0, 1]``. The third axis is
the intermediate one (``J̄11 > J̄33 > J̄22``): the body flips.

Measured:

* Figs. 7-10: path of the body point ``p̄ = (0, 0, 1)``, ``Ω̄(t)`` and ``det R - 1`` at
  ``h = 1e-4``;
* Fig. 11: ``‖Ω̄(1) - Ω̄_ref(1)‖`` for ``h ∈ {1/10, 1/40, 1/80, …, 1/5120}`` against the
  scheme's own solution at ``h = 1e-5`` (``--quick``: ``1e-4``), for ulvc and for the
  reference integrator in standard coordinates; the order is the least-squares slope
  over the step sizes in the asymptotic range (see below);
* Fig. 12: ``max_t |det R - 1|`` per step size;
* flip times (zero crossings of ``p_z``) of ulvc, the reference integrator and SciPy;
* agreement with an independent SciPy ``solve_ivp`` (DOP853, rtol 1e-12) solution of
  Euler's equations and the quaternion kinematics;
* drift of the kinetic energy and of the spatial angular momentum (RK4 conserves
  neither).

Two properties of this example shape the checks (both reported in ``data``):

* RK4 is unstable for it at ``h = 1/10`` and ``1/40`` (``h λ`` beyond the stability
  region, ``λ ≈ 69/s`` the growth rate near the unstable axis; plain RK4 on Euler's
  equations overflows at the same steps). These runs end with a non-finite state and
  are left out of the fit; so are step sizes whose error exceeds 1 % of ``|Ω̄|``
  (pre-asymptotic) or is below ten times the round-off floor.
* The problem is ill-conditioned: every passage near the unstable axis (t ≈ 0.3, 0.6,
  0.9) amplifies perturbations about 10³-fold, so round-off alone gives any
  double-precision solution an error of about 1e-8 relative at ``t = 1`` (two SciPy
  solutions at rtol 1e-12 and 2.3e-14 differ by that much). The round-off floor is
  measured as the distance between the ``h_ref`` solution and SciPy's; the 1e-8
  agreement check is made over the first flip, ``t ≤ 0.3``, where the amplification has
  not yet occurred, and the whole interval is checked at 1e-6.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import rotations as rot
from ..bodies.ulvc import schemes as ulvc
from ..particles import diagnostics as diag
from ..particles.integrators import NonFiniteError
from .report import Check, Report

J_DIAG = (5.2988, 1.1775, 4.3568)
MASS = 1.0
OMEGA0 = (0.01, 0.0, 100.0)
P_BODY = (0.0, 0.0, 1.0)
T_END = 1.0
H_SEQUENCE = tuple(1.0 / k for k in (10, 40, 80, 160, 320, 640, 1280, 2560, 5120))
H_TRAJECTORY = 1e-4
T_FIRST_FLIP = 0.3


def build_bodies(backend="cpu", n=1):
    """The example's body (88)-(90), ``n`` identical copies."""
    return ulvc.ULVCBodies(MASS, J_DIAG, n=n, projection="hexahedral", l=(1.0, 1.0, 1.0), backend=backend)


def initial_state(bodies, scheme="ulvc"):
    """``R0 = I``, ``x0 = 0``, ``Ū0 = 0``, ``Ω̄0`` of (88); ``scheme``: ``"ulvc"`` or ``"newton_euler"``."""
    s = bodies.state(Omega=OMEGA0)
    return s if scheme == "ulvc" else ulvc.to_newton_euler(bodies, s)


INTEGRATORS = {"ulvc": ulvc.LieGroupRK4, "newton_euler": ulvc.NewtonEulerRK4}


def integrate(bodies, scheme, h, t_end=T_END, record_every=1):
    """Integrate body 0 of the example to ``t_end``; returns host arrays of the samples.

    Keys: ``t`` (K,), ``Omega`` (K, 3), ``R`` (K, 3, 3), ``x`` (K, 3), ``p`` (K, 3) the
    spatial position of ``p̄``, ``det`` (K,), ``E`` (K,) kinetic energy, ``L`` (K, 3)
    spatial angular momentum, ``finite`` (bool: ``False`` if the run hit a non-finite
    state, then the arrays end at the last finite step) and ``steps_done``.
    """
    steps = int(round(t_end / h))
    if abs(steps * h - t_end) > 1e-9 * t_end:
        raise ValueError(f"h: t_end = {t_end} is not a whole number of steps of {h}")
    be = bodies.backend
    state = initial_state(bodies, scheme)
    integ = INTEGRATORS[scheme](bodies)
    rows = {"t": [], "Omega": [], "R": [], "x": [], "E": [], "L": []}

    def record(s):
        rows["t"].append(s.t)
        rows["Omega"].append(be.to_host(s.velocities(bodies)[1][0]).copy())
        rows["R"].append(be.to_host(s.R[0]).copy())
        rows["x"].append(be.to_host(s.x[0]).copy())
        rows["E"].append(float(ulvc.kinetic_energy(bodies, s)[0]))
        rows["L"].append(be.to_host(ulvc.angular_momentum(bodies, s)[0]).copy())

    record(state)
    finite = True
    try:
        # RK4 overflows for h = 1/10, 1/40 (see the module docstring); the integrator
        # raises NonFiniteError for that, so NumPy's overflow warnings are only noise.
        with np.errstate(over="ignore", invalid="ignore"):
            integ.run(state, h, steps, callback=record, every=record_every)
    except NonFiniteError:
        finite = False
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["p"] = out["x"] + out["R"] @ np.asarray(P_BODY)
    out["det"] = np.linalg.det(out["R"])
    out["finite"] = finite
    out["steps_done"] = state.step
    return out


def crossing_times(t, z):
    """Times where ``z`` changes sign, by linear interpolation between samples."""
    t, z = np.asarray(t), np.asarray(z)
    i = np.nonzero(np.sign(z[:-1]) * np.sign(z[1:]) < 0)[0]
    return t[i] - z[i] * (t[i + 1] - t[i]) / (z[i + 1] - z[i])


def scipy_reference(t_eval, rtol=1e-12, atol=1e-12):
    """Independent solution: Euler's equations ``J̄ Ω̇̄ = J̄Ω̄ × Ω̄`` and ``q̇ = ½ q ⊗ (0, Ω̄)``
    by SciPy ``solve_ivp`` (DOP853). Returns ``Omega`` (K, 3), ``R`` (K, 3, 3) at ``t_eval``."""
    from scipy.integrate import solve_ivp

    Jd = np.asarray(J_DIAG)

    def rhs(t, y):
        q, om = y[:4], y[4:]
        qdot = 0.5 * rot.quat_multiply(q, np.concatenate([[0.0], om]))
        return np.concatenate([qdot, np.cross(Jd * om, om) / Jd])

    y0 = np.concatenate([[1.0, 0.0, 0.0, 0.0], OMEGA0])
    sol = solve_ivp(rhs, (0.0, float(t_eval[-1])), y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval)
    if not sol.success:
        raise RuntimeError(f"SciPy reference failed: {sol.message}")
    q = sol.y[:4].T
    return {"Omega": sol.y[4:].T, "R": rot.quat_to_matrix(q / np.linalg.norm(q, axis=1, keepdims=True))}


def _relative_drift(E, L):
    e = float(np.max(np.abs(E - E[0])) / abs(E[0]))
    l_ = float(np.max(np.linalg.norm(L - L[0], axis=1)) / np.linalg.norm(L[0]))
    return e, l_


def _local_slopes(hs, errs):
    out = []
    for h0, h1, e0, e1 in zip(hs, hs[1:], errs, errs[1:]):
        ok = all(math.isfinite(v) and v > 0 for v in (e0, e1))
        out.append(math.log(e0 / e1) / math.log(h0 / h1) if ok else None)
    return out


def asymptotic_fit(hs, errs, omega_scale, floor):
    """Indices used for the order: finite errors in ``[10 floor, 0.01 |Ω̄|]``, and the slope."""
    errs = np.asarray(errs, dtype=float)
    use = [i for i, e in enumerate(errs) if math.isfinite(e) and 10.0 * floor <= e <= 0.01 * omega_scale]
    slope = diag.convergence_order([hs[i] for i in use], errs[use]) if len(use) >= 2 else float("nan")
    return use, slope


def run(quick: bool = False, backend: str = "cpu") -> Report:
    """Run the study; returns a :class:`Report` with checks, data and a plot function."""
    started = time.perf_counter()
    bodies = build_bodies(backend)
    hs = list(H_SEQUENCE)
    h_ref = 1e-4 if quick else 1e-5

    # Figs. 7-10 and the comparisons: ulvc and the reference integrator at h = 1e-4.
    traj = {s: integrate(bodies, s, H_TRAJECTORY) for s in ("ulvc", "newton_euler")}
    tt = traj["ulvc"]["t"]
    # One reference for both schemes, as in the paper ("all methods converged to the same solution").
    ref = traj["ulvc"] if h_ref == H_TRAJECTORY else integrate(bodies, "ulvc", h_ref, record_every=100)
    omega_ref = ref["Omega"][-1]

    sp = scipy_reference(tt)
    sp_tight = scipy_reference(tt, rtol=2.3e-14, atol=1e-14)
    om_scale = np.linalg.norm(sp["Omega"], axis=1)
    rel = np.linalg.norm(traj["ulvc"]["Omega"] - sp["Omega"], axis=1) / om_scale
    first = tt <= T_FIRST_FLIP + 1e-12
    rel_sp = np.linalg.norm(sp_tight["Omega"] - sp["Omega"], axis=1) / om_scale
    rot_err = rot.quat_angle_between(rot.quat_from_matrix(traj["ulvc"]["R"]), rot.quat_from_matrix(sp["R"]))
    sp_end = scipy_reference(np.array([0.0, T_END]), 2.3e-14, 1e-14)["Omega"][-1]
    floor = float(np.linalg.norm(ref["Omega"][-1] - sp_end))

    # Fig. 11, 12: the step-size sequence.
    seq = {}
    for s in ("ulvc", "newton_euler"):
        rows = {"error": [], "det_max": [], "energy_drift": [], "momentum_drift": [], "finite": [], "steps_done": []}
        for h in hs:
            r = integrate(bodies, s, h)
            err = float(np.linalg.norm(r["Omega"][-1] - omega_ref)) if r["finite"] else float("nan")
            e, l_ = _relative_drift(r["E"], r["L"]) if r["finite"] else (float("nan"), float("nan"))
            rows["error"].append(err)
            rows["det_max"].append(float(np.max(np.abs(r["det"] - 1.0))) if r["finite"] else float("nan"))
            rows["energy_drift"].append(e)
            rows["momentum_drift"].append(l_)
            rows["finite"].append(r["finite"])
            rows["steps_done"].append(int(r["steps_done"]))
        seq[s] = rows
    scale = float(np.linalg.norm(OMEGA0))
    use, slope = asymptotic_fit(hs, seq["ulvc"]["error"], scale, floor)
    _, slope_ne = asymptotic_fit(hs, seq["newton_euler"]["error"], scale, floor)
    finite_idx = [i for i, f in enumerate(seq["ulvc"]["finite"]) if f]
    errs_finite = [seq["ulvc"]["error"][i] for i in finite_idx]
    slope_all_finite = diag.convergence_order([hs[i] for i in finite_idx], errs_finite)
    err_diff = max(abs(a - b) for a, b in zip(seq["ulvc"]["error"], seq["newton_euler"]["error"]) if math.isfinite(a))

    flips = {s: crossing_times(traj[s]["t"], traj[s]["p"][:, 2]) for s in traj}
    flips["scipy"] = crossing_times(tt, (sp["R"] @ np.asarray(P_BODY))[:, 2])
    same_count = len(flips["ulvc"]) == len(flips["newton_euler"]) == len(flips["scipy"]) and len(flips["ulvc"]) > 0
    dflip_ne = float(np.max(np.abs(flips["ulvc"] - flips["newton_euler"]))) if same_count else float("inf")
    dflip_sp = float(np.max(np.abs(flips["ulvc"] - flips["scipy"]))) if same_count else float("inf")

    det_all = max([float(np.max(np.abs(traj[s]["det"] - 1.0))) for s in traj]
                  + [d for s in seq for d in seq[s]["det_max"] if math.isfinite(d)]
                  + [float(np.max(np.abs(ref["det"] - 1.0)))])  # fmt: skip
    det_ulvc = max([float(np.max(np.abs(traj["ulvc"]["det"] - 1.0)))]
                   + [d for d in seq["ulvc"]["det_max"] if math.isfinite(d)])  # fmt: skip
    e_drift, l_drift = _relative_drift(traj["ulvc"]["E"], traj["ulvc"]["L"])
    e_seq = [seq["ulvc"]["energy_drift"][i] for i in use]
    energy_order = diag.convergence_order([hs[i] for i in use], e_seq) if len(use) >= 2 else None
    x_max = float(np.max(np.abs(traj["ulvc"]["x"])))

    checks = [
        Check("order of |Omega(1) - Omega_ref(1)| (Fig. 11), ulvc", slope, 3.7, 4.3),
        Check("order of |Omega(1) - Omega_ref(1)|, reference integrator (f1)", slope_ne, 3.7, 4.3),
        Check("step sizes in the fit", len(use), 3, None),
        Check("max |det R - 1|, ulvc, all step sizes (Fig. 10, 12)", det_ulvc, None, 1e-13),
        Check("max |det R - 1|, every run incl. reference", det_all, None, 1e-13),
        Check("max |error_ulvc - error_f1| over the sequence (paper: 0.0581)", err_diff, None, 1e-4),
        Check("flips: ulvc, f1 and SciPy see the same number (1 = yes)", float(same_count), 1.0, 1.0),
        Check("flips: max |t_ulvc - t_f1| at h = 1e-4", dflip_ne, None, 1e-7),
        Check("flips: max |t_ulvc - t_scipy| at h = 1e-4", dflip_sp, None, 1e-7),
        Check("SciPy agreement, max |dOmega|/|Omega|, t <= 0.3 (first flip), h = 1e-4", float(rel[first].max()),
              None, 1e-8),  # fmt: skip
        Check("SciPy agreement, max |dOmega|/|Omega|, t in [0, 1], h = 1e-4", float(rel.max()), None, 1e-6),
        Check("SciPy agreement, max rotation angle [rad], t in [0, 1], h = 1e-4", float(rot_err.max()), None, 1e-6),
        Check("translation stays 0 to round-off (U0 = 0, no force): max |x|", x_max, None, 1e-12),
        Check("relative kinetic-energy drift, h = 1e-4 (reported)", e_drift, None, 1e-6),
        Check("relative angular-momentum drift, h = 1e-4 (reported)", l_drift, None, 1e-6),
    ]
    data = {
        "parameters": {
            "J": list(J_DIAG), "m": MASS, "Omega0": list(OMEGA0), "U0": [0.0, 0.0, 0.0], "l": [1.0, 1.0, 1.0],
            "p_body": list(P_BODY), "t_end": T_END, "h": hs, "h_reference": h_ref, "h_trajectory": H_TRAJECTORY,
            "backend": bodies.backend.name,
            "w0": [float(v) for v in bodies.backend.to_host(initial_state(bodies).w[0])],
        },
        "sequence": seq,
        "fit": {"indices": use, "h": [hs[i] for i in use], "slope_ulvc": slope, "slope_f1": slope_ne,
                "slope_all_finite_steps": slope_all_finite, "round_off_floor": floor,
                "local_slopes": _local_slopes(hs, seq["ulvc"]["error"])},
        "flip_times": {k: v.tolist() for k, v in flips.items()},
        "scipy": {"max_rel_first_flip": float(rel[first].max()), "max_rel_all": float(rel.max()),
                  "rel_at_t1": float(rel[-1]), "scipy_vs_scipy_max_rel_all": float(rel_sp.max()),
                  "max_rotation_angle": float(rot_err.max())},
        "drift": {"energy_h1e-4": e_drift, "angular_momentum_h1e-4": l_drift, "energy_order": energy_order},
        "det_max": {"ulvc": det_ulvc, "all": det_all},
    }  # fmt: skip
    report = Report("ulvc", checks, data, time.perf_counter() - started)
    report.plotter = lambda path: _plot(path, traj, hs, seq, use, slope, floor)
    return report


def _plot(path, traj, hs, seq, use, slope, floor):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(15, 10), layout="constrained")
    below = {"fontsize": 8, "loc": "upper center", "bbox_to_anchor": (0.5, -0.13), "ncols": 3}  # cover no curve
    u = traj["ulvc"]
    t = u["t"]
    ax = fig.add_subplot(2, 3, 1, projection="3d")
    ax.plot(u["p"][:, 0], u["p"][:, 1], u["p"][:, 2], lw=0.6)
    ax.set_title("Fig. 7: path of p = (0, 0, 1)")
    ax = fig.add_subplot(2, 3, 2)
    for k, c in enumerate("xyz"):
        ax.plot(t, u["p"][:, k], label=f"p_{c}", ls=("-", "--", ":")[k], lw=(2.0, 1.5, 1.5)[k])
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("spatial position of p [L]")
    ax.set_title("Fig. 8: position of p")
    ax.legend(**below)
    ax = fig.add_subplot(2, 3, 3)
    for k in range(3):
        ax.plot(t, u["Omega"][:, k], label=f"Omega_{k + 1}", ls=("-", "--", ":")[k], lw=(2.0, 1.5, 1.5)[k])
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("body angular velocity [1/T]")
    ax.set_title("Fig. 9: body angular velocity")
    ax.legend(**below)
    ax = fig.add_subplot(2, 3, 4)
    ax.plot(t, u["det"] - 1.0, lw=0.6)
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("det R - 1 [-]")
    ax.set_title(f"Fig. 10: det R - 1, h = {H_TRAJECTORY:g}")
    ax = fig.add_subplot(2, 3, 5)
    h = np.asarray(hs)
    for s, mk, lab in (("ulvc", "o-", "ulvc"), ("newton_euler", "x--", "f1 (Newton-Euler, SO(3))")):
        e = np.asarray(seq[s]["error"], dtype=float)
        ax.loglog(h, e, mk, mfc="none", label=lab)
    if use:
        e = np.asarray(seq["ulvc"]["error"], dtype=float)
        i0 = use[0]
        ax.loglog(h[use], e[i0] * (h[use] / h[i0]) ** 4, "k:", label="slope 4")
    ax.axhline(10 * floor, color="gray", ls="--", lw=0.8, label="10 x round-off floor")
    unstable = [hh for hh, f in zip(hs, seq["ulvc"]["finite"]) if not f]
    for hh in unstable:
        ax.axvline(hh, color="r", lw=0.8, ls=":")
    ax.set_xlabel("step h [T]")
    ax.set_ylabel("|Omega(1) - Omega_ref(1)| [1/T]")
    ax.set_title(f"Fig. 11: convergence, fitted order {slope:.2f} (red: RK4 unstable)", fontsize=9)
    ax.legend(**{**below, "ncols": 2})
    ax = fig.add_subplot(2, 3, 6)
    for key, mk, lab in (("det_max", "o-", "max |det R - 1|"), ("energy_drift", "s-", "energy drift (rel.)"),
                         ("momentum_drift", "^-", "ang. momentum drift (rel.)")):  # fmt: skip
        v = np.asarray(seq["ulvc"][key], dtype=float)
        ax.loglog(h, np.maximum(v, 1e-18), mk, mfc="none", label=lab)
    ax.axhline(1e-13, color="k", ls=":", lw=1, label="1e-13")
    ax.set_xlabel("step h [T]")
    ax.set_ylabel("largest over the run [-] (0 drawn at 1e-18)")
    ax.set_title("Fig. 12: det R and invariant drift per step size", fontsize=9)
    ax.legend(**{**below, "ncols": 2})
    fig.suptitle("Unstable rotation in unified local velocity coordinates (paper 001, Sect. 6)")
    fig.savefig(path, dpi=110)
    plt.close(fig)
