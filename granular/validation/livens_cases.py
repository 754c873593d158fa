"""The examples 5.1-5.5 of paper 002 as functions, for the study :mod:`granular.validation.livens`
(its docstring gives the setups and what does not reproduce) and for the tests: each runs
one example and returns host arrays; the constants are the paper's steps and horizons.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..backend import get_backend
from ..bodies.livens.comparators import EMH, MPH, MPL
from ..bodies.livens.multibody import closed_loop
from ..bodies.livens.problems import RedundantMassSpring, SpringPendulum
from ..bodies.livens.rigid import EML, REML, NullEML, body_angular_velocity, rotation_matrix
from ..bodies.livens.schemes import LivensEM
from ..bodies.newton import NewtonError
from ..particles import diagnostics as diag

__all__ = [
    "RTOL",
    "SCHEMES",
    "MODEL_PROBLEMS",
    "FREE_J",
    "FREE_OMEGA0",
    "FREE_H",
    "FREE_T",
    "FREE_T_COST",
    "TOP_H",
    "TOP_T",
    "TOP_T_CONV",
    "TOP_HS",
    "LOOP_H",
    "LOOP_T",
    "LOOP_T_LOAD",
    "increments",
    "model_problem",
    "free_body",
    "euler_reference",
    "free_body_convergence",
    "time_per_step",
    "parasitic_mode",
    "heavy_top_parameters",
    "heavy_top",
    "precession_reference",
    "heavy_top_run",
    "heavy_top_convergence",
    "closed_loop_run",
    "loop_figures",
]


RTOL = 1e-10
SCHEMES = {"EML": EML, "REML": REML, "Null-EML": NullEML, "MPL": MPL, "EMH": EMH, "MPH": MPH}
MODEL_PROBLEMS = {
    "mass_spring": (RedundantMassSpring, (0.0, 1.1, 0.0), (1.0, 1.0, -1.0), 0.1, 10.0),
    "spring_pendulum": (SpringPendulum, (1.05, math.pi / 2, 0.0), (0.0, 1.0, 1.0), 0.01, 1.0),
}
FREE_J = (6.0, 8.0, 3.0)
FREE_OMEGA0 = (10.0, 20.0, 20.0)
FREE_H, FREE_T, FREE_T_COST = 0.05, 2.0, 10.0
TOP_H, TOP_T, TOP_T_CONV = 0.01, 2.0, 0.1
TOP_HS = (0.01, 0.005, 0.001, 0.0005)
LOOP_H, LOOP_T, LOOP_T_LOAD = 0.1, 10.0, 1.0


def _steps(h, t_end):
    k = int(round(t_end / h))
    if abs(k * h - t_end) > 1e-9 * t_end:
        raise ValueError(f"h: t_end = {t_end} is not a whole number of steps of {h}")
    return k


def increments(x, scale=None):
    """``max_n |x^{n+1} - x^n| / |x^0|`` along axis 0 (all trailing entries)."""
    x = np.asarray(x, dtype=float)
    sc = np.abs(x[0]).max() if scale is None else scale
    return float(np.abs(np.diff(x, axis=0)).max() / sc)


# ---------------------------------------------------------------- 5.1 and 5.2


def model_problem(name, h=None, t_end=None, backend="cpu"):
    """Run 5.1 (``"mass_spring"``) or 5.2 (``"spring_pendulum"``) with the scheme (72).

    Returns host arrays over the steps (index 0: initial): ``t``, ``q``, ``v``, ``p``;
    ``E`` generalized energy (74), ``Etot`` total energy (80), ``T``, ``V``; ``g``
    max |g| (107) (zeros without constraints); ``iterations`` per step.
    """
    cls, q0, v0, h0, t0 = MODEL_PROBLEMS[name]
    h, t_end = h or h0, t_end or t0
    sysm = cls(1, backend=backend)
    em = LivensEM(sysm, rtol=RTOL)
    s = em.state(q0, v0)
    be = em.backend
    rows = {k: [] for k in ("t", "q", "v", "p", "E", "Etot", "T", "V", "g", "iterations")}

    def rec():
        rows["t"].append(s.t)
        for k in ("q", "v", "p"):
            rows[k].append(be.to_host(getattr(s, k))[0])
        rows["E"].append(float(em.generalized_energy(s)[0]))
        rows["Etot"].append(float(em.total_energy(s)[0]))
        rows["T"].append(float(sysm.kinetic_energy(s.q, s.v)[0]))
        rows["V"].append(float(sysm.potential(s.q)[0]))
        rows["g"].append(float(em.constraint_residual(s)[0]))
        rows["iterations"].append(int(be.to_host(s.iterations)[0]))

    rec()
    for _ in range(_steps(h, t_end)):
        em.step(s, h)
        rec()
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["h"] = h
    return out


# ------------------------------------------------------------------ 5.3 free body


def free_body(name="EML", h=FREE_H, t_end=FREE_T, backend="cpu"):
    """5.3 with scheme ``name``: host arrays ``t``, ``q``, ``v``, ``p``, ``lam``, ``E`` (the
    scheme's energy), ``Etot`` (80), ``L`` (64) (T, 3), ``unity`` ``|q| - 1``,
    ``iterations``."""
    sch = SCHEMES[name](np.diag(FREE_J), n=1, backend=backend, rtol=RTOL)
    s = sch.state([1.0, 0.0, 0.0, 0.0], Omega=FREE_OMEGA0)
    be = sch.backend
    rows = {k: [] for k in ("t", "q", "v", "p", "lam", "E", "Etot", "L", "unity", "iterations")}

    def rec():
        rows["t"].append(s.t)
        for k in ("q", "v", "p", "lam"):
            rows[k].append(be.to_host(getattr(s, k))[0])
        rows["E"].append(float(sch.scheme_energy(s)[0]))
        rows["Etot"].append(float(sch.total_energy(s)[0]))
        rows["L"].append(be.to_host(sch.angular_momentum(s))[0])
        rows["unity"].append(float(sch.unity_residual(s)[0]))
        rows["iterations"].append(int(be.to_host(s.iterations)[0]))

    rec()
    for _ in range(_steps(h, t_end)):
        sch.step(s, h)
        rec()
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["h"] = h
    return out


def euler_reference(t_end, inertia=FREE_J, Omega0=FREE_OMEGA0):
    """SciPy ``solve_ivp`` (DOP853, rtol 1e-12, atol 1e-13) of Euler's equations
    ``J Ω̇ = (J Ω) × Ω``, ``Ṙ = R Ω̂``, ``R(0) = I``. Returns ``(R, Ω)`` at ``t_end``."""
    from scipy.integrate import solve_ivp

    J = np.diag(inertia)
    Ji = np.linalg.inv(J)

    def rhs(t, y):
        R, W = y[:9].reshape(3, 3), y[9:]
        Wh = np.array([[0.0, -W[2], W[1]], [W[2], 0.0, -W[0]], [-W[1], W[0], 0.0]])
        return np.concatenate([(R @ Wh).ravel(), Ji @ np.cross(J @ W, W)])

    y0 = np.concatenate([np.eye(3).ravel(), Omega0])
    sol = solve_ivp(rhs, (0.0, t_end), y0, method="DOP853", rtol=1e-12, atol=1e-13)
    return sol.y[:9, -1].reshape(3, 3), sol.y[9:, -1]


def free_body_convergence(hs=(0.01, 0.005, 0.0025), t_end=1.0, name="EML", backend="cpu"):
    """EML against :func:`euler_reference`: error ``‖R - R_ref‖ + ‖Ω - Ω_ref‖/‖Ω_ref‖`` at
    ``t_end`` per h, and the least-squares order."""
    R_ref, W_ref = euler_reference(t_end)
    errs = []
    for h in hs:
        r = free_body(name, h, t_end, backend)
        q, v = r["q"][-1], r["v"][-1]
        R, W = rotation_matrix(q), body_angular_velocity(q, v)
        errs.append(float(np.linalg.norm(R - R_ref) + np.linalg.norm(W - W_ref) / np.linalg.norm(W_ref)))
    return {"h": list(hs), "error": errs, "order": diag.convergence_order(hs, errs), "t_end": t_end}


def time_per_step(names=("EML", "REML", "Null-EML"), h=FREE_H, t_end=FREE_T_COST, n=1, repeats=3, backend="cpu"):
    """Wall time per step [T] of the free body (5.3) for each scheme: minimum over
    ``repeats`` runs of ``t_end / h`` steps with ``n`` identical bodies in the batch (the
    first step is a warm-up, excluded)."""
    be = get_backend(backend)
    out = {}
    for name in names:
        best = math.inf
        for _ in range(repeats):
            sch = SCHEMES[name](np.diag(FREE_J), n=n, backend=be, rtol=RTOL)
            s = sch.state(np.array([1.0, 0.0, 0.0, 0.0]), Omega=FREE_OMEGA0)
            sch.step(s, h)
            be.synchronize()
            k = _steps(h, t_end) - 1
            t0 = time.perf_counter()
            for _ in range(k):
                sch.step(s, h)
            be.synchronize()
            best = min(best, (time.perf_counter() - t0) / k)
        out[name] = best
    return out


def parasitic_mode(h=0.01, t_end=FREE_T_COST, name="EML", backend="cpu"):
    """Long free-body run (5.3 setup): the node velocities' normal component ``q·v`` (41)
    (0 in the exact motion; EML enforces it only at the midpoints, (94)) alternates in sign
    from step to step and grows. Returns ``t`` (every step), ``qv`` ``|q·v|`` [1/s],
    ``T_mid`` the kinetic energy of the midpoint motion ``½ Ω̄ᵀJΩ̄`` with
    ``Ω̄ = 2 G(q̄)(q_{n+1} - q_n)/(h|q̄|²)`` relative to E^0, and ``failed_at`` (time of a
    NewtonError, or None)."""

    sch = SCHEMES[name](np.diag(FREE_J), n=1, backend=backend, rtol=RTOL)
    s = sch.state([1.0, 0.0, 0.0, 0.0], Omega=FREE_OMEGA0)
    be, J = sch.backend, np.diag(FREE_J)
    E0 = float(sch.generalized_energy(s)[0])
    t, qv, Tm, failed = [], [], [], None
    for _ in range(_steps(h, t_end)):
        q_prev = be.to_host(s.q)[0]
        try:
            sch.step(s, h)
        except NewtonError:
            failed = s.t
            break
        q = be.to_host(s.q)[0]
        qm = 0.5 * (q + q_prev)
        W = body_angular_velocity(qm, (q - q_prev) / h) / (qm @ qm)
        t.append(s.t)
        qv.append(abs(float(be.to_host(sch.hidden_constraint_residual(s))[0])))
        Tm.append(0.5 * W @ J @ W / E0)
    return {"t": np.asarray(t), "qv": np.asarray(qv), "T_mid": np.asarray(Tm), "failed_at": failed, "h": h}


# ---------------------------------------------------------------- 5.4 heavy top


def heavy_top_parameters():
    """Parameters of 5.4 (see the module docstring): dict with ``m, l, J1, J3, theta0,
    omega_p, omega_s, g, q0`` (4,), ``omega0`` (3,) [SI units]."""
    rho, a = 2700.0, 0.1
    r, l = a / 2.0, 3.0 * a / 4.0
    m = rho * math.pi * r * r * a / 3.0
    J1 = 3.0 / 80.0 * m * (4.0 * r * r + a * a) + m * l * l
    J3 = 3.0 / 10.0 * m * r * r
    th0, wp, g = math.pi / 3.0, 10.0, 9.81
    ws = m * g * l / (J3 * wp) + (J1 - J3) / J3 * wp * math.cos(th0)  # (118)
    q0 = np.array([math.cos(th0 / 2.0), math.sin(th0 / 2.0), 0.0, 0.0])  # (117)
    d3 = rotation_matrix(q0)[:, 2]
    omega0 = wp * np.array([0.0, 0.0, 1.0]) + ws * d3  # (119)
    return {"m": m, "l": l, "J1": J1, "J3": J3, "theta0": th0, "omega_p": wp, "omega_s": ws, "g": g, "q0": q0,
            "omega0": omega0}  # fmt: skip


def heavy_top(name="EML", n=1, backend="cpu", rtol=RTOL):
    """The scheme ``name`` set up for n copies of the heavy top of 5.4, and its state."""
    P = heavy_top_parameters()
    sch = SCHEMES[name](np.diag([P["J1"], P["J1"], P["J3"]]), n=n, mass=P["m"], center_of_mass=[0.0, 0.0, P["l"]],
                        gravity=[0.0, 0.0, -P["g"]], backend=backend, rtol=rtol)  # fmt: skip
    return sch, sch.state(np.broadcast_to(P["q0"], (n, 4)), omega=np.broadcast_to(P["omega0"], (n, 3)))


def precession_reference(t):
    """Centre of mass of the steady precession (120): (len(t), 3) [L]."""
    P = heavy_top_parameters()
    t = np.atleast_1d(np.asarray(t, dtype=float))
    s, c = P["l"] * math.sin(P["theta0"]), P["l"] * math.cos(P["theta0"])
    wt = P["omega_p"] * t
    return np.stack([s * np.sin(wt), -s * np.cos(wt), np.full_like(t, c)], axis=-1)


def heavy_top_run(name="EML", h=TOP_H, t_end=TOP_T, backend="cpu"):
    """5.4 with scheme ``name``: host ``t``, ``E`` (its energy), ``L`` (T, 3), ``phi``
    centre of mass (T, 3), ``iterations``."""
    sch, s = heavy_top(name, backend=backend)
    be = sch.backend
    rows = {k: [] for k in ("t", "E", "L", "phi", "iterations")}

    def rec():
        rows["t"].append(s.t)
        rows["E"].append(float(sch.scheme_energy(s)[0]))
        rows["L"].append(be.to_host(sch.angular_momentum(s))[0])
        rows["phi"].append(be.to_host(sch.center_of_mass_position(s))[0])
        rows["iterations"].append(int(be.to_host(s.iterations)[0]))

    rec()
    for _ in range(_steps(h, t_end)):
        sch.step(s, h)
        rec()
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["h"] = h
    return out


def heavy_top_convergence(names=("EML", "MPL", "EMH", "MPH"), hs=TOP_HS, t_end=TOP_T_CONV, backend="cpu"):
    """Error (121) ``‖φ_ref - φ‖/‖φ_ref‖`` at ``t_end`` per scheme and h; orders (least
    squares over all h, and from the two finest)."""
    ref = precession_reference(t_end)[0]
    out = {"h": list(hs), "t_end": t_end, "error": {}, "order": {}, "order_fine": {}}
    for name in names:
        errs = []
        for h in hs:
            sch, s = heavy_top(name, backend=backend)
            sch.run(s, h, _steps(h, t_end))
            phi = sch.backend.to_host(sch.center_of_mass_position(s))[0]
            errs.append(float(np.linalg.norm(ref - phi) / np.linalg.norm(ref)))
        out["error"][name] = errs
        out["order"][name] = diag.convergence_order(hs, errs)
        out["order_fine"][name] = diag.convergence_order(hs[-2:], errs[-2:])
    return out


# -------------------------------------------------------------- 5.5 closed loop


def closed_loop_run(h=LOOP_H, t_end=LOOP_T, backend="cpu", snapshots=(0.0, 2.0, 4.0, 6.0, 8.0, 10.0)):
    """5.5: host ``t``, ``E`` (74), ``T`` (123) at the nodes, ``spin`` (T, 2) body rates of
    bars 2 and 4 about their long axes (0 in the exact motion: no torque about the axis
    and J2 = J3), ``L`` (T, 3), ``g`` max |constraint|, ``work`` external
    work, ``defect`` (T, 3) the predicted per-step change of L
    (:meth:`~granular.bodies.livens.multibody.MultibodyEML.joint_torque_defect`), ``dL``
    (T, 3) the measured change, ``bars`` {t: (4, 2, 3) end points}, ``iterations``."""
    sch, s = closed_loop(1, backend=backend, rtol=RTOL)
    be = sch.backend
    ends = np.zeros((4, 2, 3))
    for j, jt in enumerate(sch.joints):  # each bar's two joint points
        ends[jt.a, 0 if jt.point_a[0] + jt.point_a[1] > 0 else 1] = jt.point_a
        ends[jt.b, 0 if jt.point_b[0] + jt.point_b[1] > 0 else 1] = jt.point_b
    rows = {k: [] for k in ("t", "E", "T", "spin", "L", "g", "work", "defect", "dL", "iterations")}
    bars = {}

    def rec(defect, dL):
        rows["t"].append(s.t)
        rows["E"].append(float(sch.generalized_energy(s)[0]))
        rows["T"].append(float(sch.kinetic_energy(s)[0]))
        W = be.to_host(body_angular_velocity(*(a.reshape(1, 4, 7)[..., 3:] for a in (s.q, s.v))))[0]
        rows["spin"].append([W[1, 0], W[3, 0]])  # bars 2 and 4 about their long axes (physically 0)
        rows["L"].append(be.to_host(sch.angular_momentum(s))[0])
        rows["g"].append(float(sch.constraint_residual(s)[0]))
        rows["work"].append(float(be.to_host(s.extra["work"])[0]))
        rows["defect"].append(defect)
        rows["dL"].append(dL)
        rows["iterations"].append(int(be.to_host(s.iterations)[0]))
        for ts in snapshots:
            if abs(s.t - ts) < 0.5 * h:
                pts = [be.to_host(sch.points(s, ends[:, k]))[0] for k in (0, 1)]
                bars[ts] = np.stack(pts, axis=1)

    rec(np.zeros(3), np.zeros(3))
    for _ in range(_steps(h, t_end)):
        q_prev, L_prev = s.q.copy(), be.to_host(sch.angular_momentum(s))[0]
        sch.step(s, h)
        rec(be.to_host(sch.joint_torque_defect(q_prev, s, h))[0], be.to_host(sch.angular_momentum(s))[0] - L_prev)
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["bars"], out["h"] = bars, h
    return out


def _after(run, t0=LOOP_T_LOAD):
    return run["t"] >= t0 - 1e-9


def loop_figures(run):
    """Measured figures of one closed-loop run."""
    a = _after(run)
    E, L = run["E"][a], run["L"][a]
    Lscale = np.abs(L[0]).max()
    load = ~a
    free = run["t"] >= LOOP_T_LOAD + run["h"] - 1e-9  # steps that start after the load
    return {
        "E_rel_variation_after_load": float(np.abs(E - E[0]).max() / abs(E[0])),
        "L_rel_variation_after_load": float(np.abs(L - L[0]).max() / Lscale),
        "constraint_max": float(run["g"].max()),
        "energy_balance_max_rel": float(np.abs(run["E"] - run["E"][0] - run["work"]).max() / abs(E[0])),
        "L_defect_identity_max_rel": float(np.abs(run["dL"][free] - run["defect"][free]).max() / Lscale),
        "E_after_load": float(E[0]),
        "L_after_load": L[0].tolist(),
        "newton_iterations_per_step": float(run["iterations"][1:].mean()),
        "energy_during_load_changes": float(np.abs(run["E"][load] - run["E"][0]).max()),
        "kinetic_energy_rel_growth_after_load": float(run["T"][a].max() / run["T"][a][0] - 1.0),
        "axial_spin_bars_2_4_max_after_load": float(np.abs(run["spin"][a]).max()),
        "axial_spin_bars_2_4_at_end": float(np.abs(run["spin"][-1]).max()),
    }
