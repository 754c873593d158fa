"""Rolling ball actuated by internal point masses (paper 004): scenes and the checks.

The paper's figures are lost (only its appendices survive; ``docs/physics.md``), so the
study measures what the issue asks for, with the independent checks of the notes:

* **masses at rest**: energy conserved to the integrator's accuracy: the RK4 energy
  error over ``t ∈ [0, T]`` is fitted against ``h`` (order 4 expected); the adaptive
  Dormand-Prince keeps it near its tolerance; the no-slip condition is checked on the
  recorded trajectory (4th-order finite differences of the centre against ``r ω × e3``),
  together with ``|Γ - Λᵀe3|`` and ``z3 = r``;
* **moving masses**: ``E(t) - E(0)`` against the work of the rail actuation forces, both
  integrated by the same RK4 (order 4 of the balance error), and against the work
  computed independently from the constraint forces of the Newton-Euler reference;
* **planar motion**: the 3D equations started in the plane against the scalar
  rolling-disk equation (:mod:`granular.bodies.rolling_ball.disk`), RK4 at ``h = 1e-3``;
* **independent cross-check**: a random Fourier rail with a random actuation (plus an
  ellipse rail with a sinusoidal one, a full inertia tensor, an offset centre of mass and
  a time-dependent external force) against the constrained Newton-Euler equations
  integrated by SciPy (DOP853, rtol 1e-12), :mod:`granular.bodies.rolling_ball.reference`;
* **batched vs alone** for RK4 and for the per-ball adaptive integrator.

Scenes (dimensionless: ``r = 1``, ``m0 = 1``, ``g = 1``, ``𝕀 = diag(0.62, 0.66, 0.70)``,
``χ0 = (0, 0, -0.05)``): :func:`scene_circle` (one mass on a circular rail),
:func:`scene_orthogonal` (two masses on orthogonal circular rails),
:func:`scene_figure_eight` (a figure-eight rail); the plot shows their contact paths.
:func:`write_scene_frames` writes a scene's ParaView frames.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import rotations as rot
from ..bodies.rolling_ball import rails as R
from ..bodies.rolling_ball.ball import HarmonicForce, RollingBall
from ..bodies.rolling_ball.disk import RollingDisk, RollingDiskRK4
from ..bodies.rolling_ball.integrators import RK4, DormandPrince
from ..bodies.rolling_ball.output import RollingBallFrames
from ..bodies.rolling_ball.reference import newton_euler_reference
from ..particles import diagnostics as diag
from .figures import finish
from .report import Check, Report

RADIUS, SHELL_MASS, GRAVITY = 1.0, 1.0, 1.0
INERTIA = (0.62, 0.66, 0.70)
SHELL_COM = (0.0, 0.0, -0.05)
H_SEQUENCE = (0.08, 0.04, 0.02, 0.01)


def _ball(masses, rails, actuations, backend="cpu", **kw):
    kw.setdefault("inertia", INERTIA)
    kw.setdefault("shell_com", SHELL_COM)
    return RollingBall(RADIUS, SHELL_MASS, masses=masses, rails=rails, actuations=actuations, gravity=GRAVITY,
                       backend=backend, **kw)  # fmt: skip


def scene_circle(backend="cpu", track_work=True):
    """One mass ``m = 0.3`` on a circle of radius 0.8 in the body x-z plane, driven from
    the bottom at 1 rad/T; the ball starts with a spin ``Ω0 = (0, 0, 0.4)``. ``t ∈ [0, 30]``."""
    ball = _ball([0.3], [R.CircleRail(0.8)], [R.ConstantSpeed(-math.pi / 2, 1.0)], backend)
    return ball, ball.state(Omega=(0.0, 0.0, 0.4), track_work=track_work), 30.0


def orthogonal_rails():
    """Circles of radius 0.75 in the body x-z and y-z planes."""
    return [R.CircleRail(0.75), R.CircleRail(0.75, u=(0.0, 1.0, 0.0), v=(0.0, 0.0, 1.0))]


def scene_orthogonal(backend="cpu", track_work=True):
    """Two masses ``m = 0.2`` on orthogonal circles (body x-z and y-z planes), swinging
    about the bottom like pendula: ``θ1 = -π/2 + 1.0 sin(1.0 t)``,
    ``θ2 = -π/2 + 0.8 sin(1.3 t + π/2)``. ``t ∈ [0, 30]``."""
    acts = [R.Sinusoidal(1.0, 1.0, 0.0, -math.pi / 2), R.Sinusoidal(0.8, 1.3, math.pi / 2, -math.pi / 2)]
    ball = _ball([0.2, 0.2], orthogonal_rails(), acts, backend)
    return ball, ball.state(track_work=track_work), 30.0


def scene_figure_eight(backend="cpu", track_work=True):
    """One mass ``m = 0.3`` on a figure eight (``a = 0.7``, ``b = 0.9``) in the horizontal
    body plane ``z = -0.2``, driven at 0.8 rad/T. ``t ∈ [0, 30]``."""
    rail = R.FigureEightRail(0.7, 0.9, center=(0.0, 0.0, -0.2), u=(1.0, 0.0, 0.0), v=(0.0, 1.0, 0.0))
    ball = _ball([0.3], [rail], [R.ConstantSpeed(0.0, 0.8)], backend)
    return ball, ball.state(track_work=track_work), 30.0


SCENES = {"circle": scene_circle, "orthogonal": scene_orthogonal, "figure_eight": scene_figure_eight}


def scene_at_rest(backend="cpu"):
    """The orthogonal-rail ball with its masses held off the bottom (``θ = -π/2 + 0.6``,
    ``-π/2 - 0.4``), started with ``Ω0 = (0.4, -0.3, 0.8)``: energy must be conserved."""
    acts = [R.at_rest(-math.pi / 2 + 0.6), R.at_rest(-math.pi / 2 - 0.4)]
    ball = _ball([0.2, 0.2], orthogonal_rails(), acts, backend)
    return ball, ball.state(Omega=(0.4, -0.3, 0.8), track_work=True)


def scene_planar(backend="cpu"):
    """A planar ball: circle and figure-eight rails in the body x-z plane, a horizontal
    external force 0.05 e1, ``χ0 = (0.03, 0, -0.05)``; started rolling ``Ω0 = (0, 0.5, 0)``."""
    rails = [R.CircleRail(0.7), R.FigureEightRail(0.6, 0.5, center=(0.05, 0.0, 0.1))]
    acts = [R.ConstantSpeed(-1.0, 1.2), R.Sinusoidal(0.9, 1.7, 0.3)]
    ball = _ball([0.25, 0.15], rails, acts, backend, shell_com=(0.03, 0.0, -0.05), external_force=(0.05, 0.0, 0.0))
    return ball, ball.state(Omega=(0.0, 0.5, 0.0), xy=(0.2, 0.0))


def fourier_rail(rng, terms=3, scale=0.25):
    """A random closed curve ``ζ(θ) = c + Σ_k (A_k cos kθ + B_k sin kθ)`` as a
    :class:`~granular.bodies.rolling_ball.rails.FourierRail` (inside the unit ball for ``scale <= 0.25``)."""
    c = rng.uniform(-0.1, 0.1, 3)
    A = rng.normal(size=(terms, 3)) * scale / np.arange(1, terms + 1)[:, None] / 2
    B = rng.normal(size=(terms, 3)) * scale / np.arange(1, terms + 1)[:, None] / 2
    return R.FourierRail(c, A, B)


def random_actuation(rng):
    """``θ(t) = θ0 + w t + A sin(ν t + φ)`` with random coefficients, as a
    :class:`~granular.bodies.rolling_ball.rails.Harmonic`."""
    th0, w, A, nu, ph = rng.uniform(-1, 1), rng.uniform(0.3, 1.5), rng.uniform(0.2, 1.0), rng.uniform(0.5, 2), 1.0
    return R.Harmonic(th0, w, A, nu, ph)


#: A time-dependent horizontal force at the centre: ``(0.05 cos 0.7t, 0.03 sin 1.1t, 0)``
#: (``sin x = cos(x - π/2)``); called with ``t`` a float or a (N,) array → (1, 3) or (N, 3).
external_force_wave = HarmonicForce(amplitude=(0.05, 0.03, 0.0), frequency=(0.7, 1.1, 0.0),
                                    phase=(0.0, -math.pi / 2, 0.0))  # fmt: skip


def scene_random(seed=4, backend="cpu"):
    """The cross-check system: random Fourier rail + random actuation, an ellipse rail
    with a sinusoidal actuation, a random full inertia tensor, an offset centre of mass,
    :func:`external_force_wave`, random initial orientation and angular velocity."""
    rng = np.random.default_rng(seed)
    Q = rot.so3_exp(rng.normal(size=3))
    inertia = Q @ np.diag(rng.uniform(0.55, 0.7, 3)) @ Q.T
    ell = R.EllipseRail(0.6, 0.4, center=(0.0, 0.1, -0.1), u=(0.6, 0.8, 0.0), v=(0.0, 0.0, 1.0))
    ball = _ball([0.2, 0.15], [fourier_rail(rng), ell], [random_actuation(rng), R.Sinusoidal(1.1, 1.4, 0.2, 0.3)],
                 backend, inertia=inertia, shell_com=rng.uniform(-0.08, 0.08, 3),
                 external_force=external_force_wave)  # fmt: skip
    q0 = rot.quat_from_rotvec(rng.normal(size=3))
    return ball, ball.state(Omega=rng.normal(size=3) * 0.5, q=q0, xy=rng.normal(size=2), track_work=True)


# ------------------------------------------------------------------ integration


def integrate(ball, state, h, t_end, every=1):
    """RK4 from a copy of ``state`` to ``t_end``; host samples of ball 0 every ``every`` steps:
    ``t``, ``y`` (K, d), ``E`` (K,)."""
    steps = int(round(t_end / h))
    if abs(steps * h - t_end) > 1e-9 * t_end:
        raise ValueError(f"h: t_end = {t_end} is not a whole number of steps of {h}")
    be = ball.backend
    s = state.copy()
    rows = {"t": [], "y": [], "E": []}

    def rec(st):
        rows["t"].append(st.t)
        rows["y"].append(be.to_host(st.y[0]).copy())
        rows["E"].append(float(ball.energy(st.t, st.y)[0]))

    rec(s)
    RK4(ball).run(s, h, steps, callback=rec, every=every)
    return {k: np.asarray(v) for k, v in rows.items()}


def _omega_spatial(y):
    q = y[:, 6:10] / np.linalg.norm(y[:, 6:10], axis=1, keepdims=True)
    return rot.quat_rotate(q, y[:, 0:3])


def slip_residual(traj, r):
    """Max over interior samples of ``|ż_fd - r ω × e3| / max |r ω|``, ``ż_fd`` by 4th-order
    central differences of the recorded centre (uniform samples)."""
    t, z = traj["t"], traj["y"][:, 10:13]
    dt = t[1] - t[0]
    zd = (z[:-4] - 8 * z[1:-3] + 8 * z[3:-1] - z[4:]) / (12 * dt)
    om = _omega_spatial(traj["y"])[2:-2]
    pred = r * np.cross(om, [0.0, 0.0, 1.0])
    return float(np.abs(zd - pred).max() / (r * np.abs(om).max()))


def _fit(hs, errs):
    """Least-squares order over the three finest steps (the coarsest are pre-asymptotic:
    local slopes approach 4 from above)."""
    return diag.convergence_order(hs[-3:], errs[-3:])


def _local_slopes(hs, errs):
    return [math.log(e0 / e1) / math.log(h0 / h1) for h0, h1, e0, e1 in zip(hs, hs[1:], errs, errs[1:])]


def _rest_study(backend, t_end, hs):
    ball, st = scene_at_rest(backend)
    E0 = float(ball.energy(0.0, st.y)[0])
    errs, runs = [], {}
    for h in hs:
        tr = integrate(ball, st, h, t_end)
        errs.append(float(np.abs(tr["E"] - E0).max() / abs(E0)))
        runs[h] = tr
    fine = runs[0.01]  # the slip and Γ checks are quoted at h = 0.01
    dp = DormandPrince(ball, rtol=1e-10, atol=1e-12)
    samples = []
    s = dp.adaptive(st)
    dp.integrate(s, np.linspace(t_end / 50, t_end, 50),
                 callback=lambda x: samples.append(float(ball.energy(x.t, x.y)[0])))  # fmt: skip
    inv = ball.invariants(s)
    return {"hs": list(hs), "errors": errs, "order": _fit(hs, errs), "slopes": _local_slopes(hs, errs), "E0": E0,
            "fine": fine,
            "slip": slip_residual(fine, RADIUS), "dp_error": float(np.abs(np.asarray(samples) - E0).max() / abs(E0)),
            "dp_steps": int(s.accepted[0]), "dp_rejected": int(s.rejected[0]),
            "height": float(np.abs(fine["y"][:, 12] - RADIUS).max()),
            "gamma_vs_q": float(np.max(np.linalg.norm(fine["y"][:, 3:6] - rot.quat_rotate(
                rot.quat_conjugate(fine["y"][:, 6:10]), np.array([0.0, 0.0, 1.0])), axis=1))),
            "gamma_norm_dp": float(abs(inv["gamma_norm"][0]))}  # fmt: skip


def _moving_study(backend, t_end, hs, h_ne):
    ball, st, _ = scene_orthogonal(backend)
    E0 = float(ball.energy(0.0, st.y)[0])
    errs, runs = [], {}
    for h in sorted(set(hs) | {h_ne}, reverse=True):
        tr = integrate(ball, st, h, t_end)
        bal = tr["E"] - E0 - tr["y"][:, 13] - tr["y"][:, 14]
        if h in hs:
            errs.append(float(np.abs(bal).max() / abs(E0)))
        runs[h] = tr
    tr = runs[h_ne]
    ref = newton_euler_reference(ball, st.y[0], tr["t"][:: int(round(1.0 / h_ne))])
    dE = tr["E"][:: int(round(1.0 / h_ne))] - E0
    return {"hs": list(hs), "errors": errs, "order": _fit(hs, errs), "slopes": _local_slopes(hs, errs), "E0": E0,
            "traj": tr, "ref": ref,
            "balance_vs_ne": float(np.abs(dE - ref["work_actuation"]).max() / abs(E0)),
            "work_range": float(np.ptp(ref["work_actuation"])),
            "ne_energy_balance": float(np.abs(ref["energy"] - ref["energy"][0] - ref["work_actuation"]).max())}


def _planar_study(backend, t_end, h):
    ball, st = scene_planar(backend)
    disk = RollingDisk.from_ball(ball)
    ds = disk.state(psi=0.0, psi_dot=0.5, x=0.2)
    steps = int(round(t_end / h))
    be = ball.backend
    rows_b, rows_d, rhs_diff = [], [], []

    def disk_y(s):  # the disk state of a planar ball state: ψ from q = (cos ψ/2, 0, sin ψ/2, 0)
        y = be.to_host(s.y[0])
        return disk.xp.asarray([[2 * math.atan2(y[8], y[6]), y[1], y[10]]])

    def rec_b(s):
        rows_b.append(be.to_host(s.y[0]).copy())
        rhs_diff.append(abs(float(ball.omega_dot(s.t, s.y)[0, 1]) - float(disk.psi_ddot(s.t, disk_y(s))[0])))

    sb, sd = st.copy(), ds.copy()
    RK4(ball).run(sb, h, steps, callback=rec_b, every=10)
    RollingDiskRK4(disk).run(sd, h, steps, callback=lambda s: rows_d.append(be.to_host(s.y[0]).copy()), every=10)
    yb, yd = np.asarray(rows_b), np.asarray(rows_d)
    psi_b = 2 * np.arctan2(yb[:, 8], yb[:, 6])
    dpsi = np.abs(np.angle(np.exp(1j * (psi_b - yd[:, 0]))))
    off = np.abs(yb[:, [0, 2, 4, 7, 9, 11]]).max()
    return {"psi": float(dpsi.max()), "psi_dot": float(np.abs(yb[:, 1] - yd[:, 1]).max()),
            "x": float(np.abs(yb[:, 10] - yd[:, 2]).max()), "off_plane": float(off),
            "rhs": float(max(rhs_diff)), "t": np.arange(1, len(yb) + 1) * 10 * h, "x_disk": yd[:, 2]}  # fmt: skip


def _cross_check(backend, t_end, h):
    ball, st = scene_random(backend=backend)
    tr = integrate(ball, st, h, t_end, every=int(round(0.1 / h)))
    ref = newton_euler_reference(ball, st.y[0], tr["t"])
    y = tr["y"]
    qn = y[:, 6:10] / np.linalg.norm(y[:, 6:10], axis=1, keepdims=True)
    dp = DormandPrince(ball, rtol=1e-12, atol=1e-13)
    s = dp.adaptive(st)
    dp_rows = []
    dp.integrate(s, tr["t"][1:], callback=lambda x: dp_rows.append(ball.backend.to_host(x.y[0]).copy()))
    ydp = np.asarray(dp_rows)
    return {"Omega": float(np.abs(y[:, 0:3] - ref["Omega"]).max()),
            "position": float(np.abs(y[:, 10:13] - ref["position"]).max()),
            "angle": float(rot.quat_angle_between(qn, ref["q"]).max()),
            "work": float(np.abs(y[:, 13] - ref["work_actuation"]).max()),
            "work_ext": float(np.abs(y[:, 14] - ref["work_external"]).max()),
            "dp_Omega": float(np.abs(ydp[:, 0:3] - ref["Omega"][1:]).max()),
            "dp_position": float(np.abs(ydp[:, 10:13] - ref["position"][1:]).max()),
            "normal_min": float(ref["normal_force"].min()), "ne_slip": float(ref["slip"].max()),
            "t": tr["t"], "diff_t": np.abs(y[:, 0:3] - ref["Omega"]).max(axis=1)}  # fmt: skip


def batch_vs_alone(backend="cpu", n=6, seed=11, h=0.01, steps=100, t_dp=1.0):
    """Max |y_batch - y_alone| over ``n`` balls with per-ball parameters, for RK4
    (``steps`` of ``h``) and the adaptive integrator (to ``t_dp``)."""
    rng = np.random.default_rng(seed)
    p = {"radius": rng.uniform(0.8, 1.2, n), "shell_mass": rng.uniform(0.8, 1.2, n),
         "inertia": rng.uniform(0.5, 0.7, (n, 3)), "shell_com": rng.uniform(-0.05, 0.05, (n, 3)),
         "masses": rng.uniform(0.1, 0.3, (n, 2)), "rho": rng.uniform(0.5, 0.7, n), "speed": rng.uniform(0.5, 2, n),
         "amp": rng.uniform(0.2, 1, n), "Omega": rng.normal(size=(n, 3)), "xy": rng.normal(size=(n, 2))}  # fmt: skip

    def build(idx, nb):
        sel = lambda a: a[idx]  # noqa: E731
        rails = [R.CircleRail(sel(p["rho"])), R.LineRail(np.tile([0.0, 0.6, 0.0], (nb, 1)), center=sel(p["shell_com"]))]
        acts = [R.ConstantSpeed(0.1, sel(p["speed"])), R.Sinusoidal(sel(p["amp"]), 1.3)]
        ball = RollingBall(sel(p["radius"]), sel(p["shell_mass"]), sel(p["inertia"]), sel(p["shell_com"]),
                           sel(p["masses"]), rails, acts, gravity=1.0, n=nb, backend=backend)  # fmt: skip
        return ball, ball.state(Omega=sel(p["Omega"]), xy=sel(p["xy"]), track_work=True)

    out = {}
    for name in ("rk4", "dp"):
        ball, st = build(np.arange(n), n)
        if name == "rk4":
            RK4(ball).run(st, h, steps)
        else:
            dp = DormandPrince(ball, rtol=1e-9, atol=1e-11)
            st = dp.adaptive(st)
            dp.step(st, t_dp)
        yb = ball.backend.to_host(st.y)
        worst = 0.0
        for k in range(n):
            b1, s1 = build(np.array([k]), 1)
            if name == "rk4":
                RK4(b1).run(s1, h, steps)
            else:
                dp = DormandPrince(b1, rtol=1e-9, atol=1e-11)
                s1 = dp.adaptive(s1)
                dp.step(s1, t_dp)
            worst = max(worst, float(np.abs(b1.backend.to_host(s1.y)[0] - yb[k]).max()))
        out[name] = worst
    return out


def write_scene_frames(name, out_dir, t_end=None, h=0.01, every=20, backend="cpu"):
    """Run scene ``name`` (a key of :data:`SCENES`) with RK4 and write its ParaView frames
    (``out_dir/frames.pvd``) every ``every`` steps; returns the frame paths."""

    if name not in SCENES:
        raise ValueError(f"name: unknown scene {name!r}; available: {sorted(SCENES)}")
    ball, st, t_scene = SCENES[name](backend)
    t_end = t_scene if t_end is None else float(t_end)
    frames = RollingBallFrames(out_dir, ball)
    frames.write(st)
    RK4(ball).run(st, h, int(round(t_end / h)), callback=frames.write, every=every)
    return frames.paths


def run(quick: bool = False, backend: str = "cpu") -> Report:
    """Run the study; returns a :class:`Report` with checks, data and a plot function."""
    started = time.perf_counter()
    hs = list(H_SEQUENCE) if quick else list(H_SEQUENCE) + [0.005]
    t_rest = 4.0 if quick else 8.0
    rest = _rest_study(backend, t_rest, hs)
    moving = _moving_study(backend, t_rest, hs, 0.005)
    planar = _planar_study(backend, 2.0 if quick else 5.0, 1e-3)
    cross = _cross_check(backend, 3.0 if quick else 6.0, 0.0025)
    batch = batch_vs_alone(backend)
    paths = {}
    for name, fn in SCENES.items():
        ball, st, t_end = fn(backend)
        t_end = 15.0 if quick else t_end
        tr = integrate(ball, st, 0.01, t_end, every=5)
        E0 = tr["E"][0]
        normal = min(float((ball.contact_force(t, ball.xp.asarray(y[None]))[0] * ball.xp.asarray(y[3:6])).sum())
                     for t, y in zip(tr["t"][::10], tr["y"][::10]))  # fmt: skip
        paths[name] = {"xy": tr["y"][:, 10:12], "balance": float(np.abs(tr["E"] - E0 - tr["y"][:, 13]).max()),
                       "normal_min": normal}  # fmt: skip
    scene_balance = max(v["balance"] for v in paths.values())
    checks = [
        Check("masses at rest: order of max|E - E0|/E0, RK4 (three finest h)", rest["order"], 3.7, 4.3),
        Check("masses at rest: max|E - E0|/E0, RK4 h = 0.01", rest["errors"][3], None, 1e-9),
        Check("masses at rest: max|E - E0|/E0, Dormand-Prince rtol 1e-10", rest["dp_error"], None, 1e-8),
        Check("no slip: max|dz/dt (4th-order FD) - r w x e3| / max|r w|, h = 0.01", rest["slip"], None, 1e-7),
        Check("no slip: max|z3 - r|", rest["height"], None, 0.0),
        Check("advected Gamma vs R(q)^T e3, max, h = 0.01", rest["gamma_vs_q"], None, 1e-9),
        Check("moving masses: order of max|E - E0 - W_act|/E0, RK4 (three finest h)", moving["order"], 3.7, 4.3),
        Check("moving masses: max|E - E0 - W_act|/E0, RK4 h = 0.01", moving["errors"][3], None, 1e-8),
        Check("moving masses: max|E_RK4 - E0 - W_NE|/E0 (work from Newton-Euler forces), h = 0.005",
              moving["balance_vs_ne"], None, 1e-9),  # fmt: skip
        Check("three scenes: max|E - E0 - W_act|, RK4 h = 0.01", scene_balance, None, 1e-7),
        Check("three scenes: min normal force (contact kept, rolling model valid)",
              min(v["normal_min"] for v in paths.values()), 0.0, None),  # fmt: skip
        Check("planar: max|psi_3D - psi_disk|, RK4 h = 1e-3", planar["psi"], None, 1e-10),
        Check("planar: max|Omega_2 - psi_dot_disk|", planar["psi_dot"], None, 1e-10),
        Check("planar: max|x_3D - x_disk|", planar["x"], None, 1e-10),
        Check("planar: max|dOmega_2/dt - psi_ddot| on the trajectory", planar["rhs"], None, 1e-13),
        Check("planar: off-plane components (Omega_1,3, Gamma_2, q_1,3, y)", planar["off_plane"], None, 1e-14),
        Check("Newton-Euler (SciPy DOP853) vs RK4 h = 0.0025: max|dOmega|", cross["Omega"], None, 1e-8),
        Check("Newton-Euler vs RK4: max|d position|", cross["position"], None, 1e-8),
        Check("Newton-Euler vs RK4: max rotation angle [rad]", cross["angle"], None, 1e-8),
        Check("Newton-Euler vs RK4: max|d W_act|", cross["work"], None, 1e-8),
        Check("Newton-Euler vs RK4: max|d W_ext|", cross["work_ext"], None, 1e-8),
        Check("Newton-Euler vs Dormand-Prince rtol 1e-12: max|dOmega|", cross["dp_Omega"], None, 1e-8),
        Check("batched vs alone, RK4: max|dy|", batch["rk4"], None, 1e-13),
        Check("batched vs alone, Dormand-Prince (per-ball steps): max|dy|", batch["dp"], None, 1e-13),
    ]
    data = {
        "parameters": {"radius": RADIUS, "shell_mass": SHELL_MASS, "gravity": GRAVITY, "inertia": list(INERTIA),
                       "shell_com": list(SHELL_COM), "h": hs, "t_rest": t_rest, "backend": backend},
        "rest": {k: rest[k] for k in ("hs", "errors", "order", "slopes", "E0", "slip", "dp_error", "dp_steps",
                                      "dp_rejected", "height", "gamma_vs_q")},
        "moving": {k: moving[k] for k in ("hs", "errors", "order", "slopes", "E0", "balance_vs_ne", "work_range",
                                          "ne_energy_balance")},
        "planar": {k: planar[k] for k in ("psi", "psi_dot", "x", "off_plane", "rhs")},
        "cross_check": {k: cross[k] for k in ("Omega", "position", "angle", "work", "work_ext", "dp_Omega",
                                              "dp_position", "normal_min", "ne_slip")},
        "batch_vs_alone": batch,
        "scenes": {k: {"balance": v["balance"], "normal_force_min": v["normal_min"],
                       "end_xy": v["xy"][-1].tolist()} for k, v in paths.items()},
    }  # fmt: skip
    report = Report("rollingball", checks, data, time.perf_counter() - started)
    report.plotter = lambda path: _plot(path, paths, rest, moving, planar, cross)
    return report


def _plot(path, paths, rest, moving, planar, cross):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker  # noqa: F401  (NullFormatter)


    fig, axes = plt.subplots(2, 3, figsize=(17, 9), layout="constrained")
    ax = axes[0, 0]
    for name, v in paths.items():
        ax.plot(v["xy"][:, 0], v["xy"][:, 1], lw=1, label=name)
        ax.plot(v["xy"][-1, 0], v["xy"][-1, 1], "o", ms=3, color=ax.lines[-1].get_color())
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [L]")
    ax.set_ylabel("y [L]")
    ax.set_title("contact paths on the plane (o: end)")
    ax.legend(fontsize=8)
    ax = axes[0, 1]
    h = np.asarray(rest["hs"])
    ax.loglog(h, rest["errors"], "o-", mfc="none", label="masses at rest: max|E-E0|/E0")
    ax.loglog(moving["hs"], moving["errors"], "s-", mfc="none", label="moving: max|E-E0-W|/E0")
    ax.loglog(h, rest["errors"][-1] * (h / h[-1]) ** 4, "k:", label="slope 4")
    ax.set_xlabel("step h [T]")
    ax.set_ylabel("relative energy (balance) error [-]")
    ax.set_title(f"RK4 energy (balance) error: orders {rest['order']:.2f}, {moving['order']:.2f}", fontsize=9)
    ax.legend(fontsize=8)
    ax = axes[0, 2]
    tr, ref = moving["traj"], moving["ref"]
    ax.plot(tr["t"], tr["E"] - moving["E0"], label="E(t) - E(0), RK4 h = 0.005")
    ax.plot(ref["t"], ref["work_actuation"], "o", ms=3, mfc="none", label="work of rail forces (Newton-Euler)")
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("energy [M L²/T²]")
    ax.set_title("moving masses: energy change = actuation work", fontsize=9)
    ax.legend(fontsize=8)
    ax = axes[1, 0]
    ax.plot(planar["t"], planar["x_disk"])
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("x [L]")
    ax.set_title(f"planar: disk x(t); max|x_3D - x_disk| = {planar['x']:.1e}", fontsize=9)
    ax = axes[1, 1]
    ax.semilogy(cross["t"], np.maximum(cross["diff_t"], 1e-18))
    ax.axhline(1e-8, color="k", ls=":", lw=1, label="1e-8 (the check)")
    ax.set_xlabel("time t [T]")
    ax.set_ylabel("|ΔΩ| [1/T] (0 drawn at 1e-18)")
    ax.legend(fontsize=8)
    ax.set_title("random rail: |Omega_RK4 - Omega_Newton-Euler|", fontsize=9)
    ax = axes[1, 2]
    fine = rest["fine"]
    ax.plot(fine["y"][:, 10], fine["y"][:, 11], lw=1)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x [L]")
    ax.set_ylabel("y [L]")
    ax.set_title("masses at rest: contact path", fontsize=9)
    fig.suptitle("Rolling ball actuated by internal point masses (paper 004)")
    finish(fig)
    fig.savefig(path, dpi=110)
    plt.close(fig)
