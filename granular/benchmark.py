"""Throughput of the particle engine: ``granular bench``.

Workloads (all advanced by :meth:`ExplicitIntegrator.advance`, map (25), in blocks):

``block``
    the bonded block impact (``block_impact``): ``n³`` unit spheres with binder bonds
    between nearest neighbours, Hertz contact and a wall, hitting the wall at v0 = 1;
    advanced 60 steps into the wall before timing.
``block-friction``
    the same block with the dissipative contact law (``docs/contacts.md``: Tsuji damping,
    friction with its springs, rolling and twisting resistance) in place of the Hertz
    contact, same stiffness. With ``block`` also asked for, the cost per step relative to
    ``block`` of the same size (target: at most 1.5×) is measured by :func:`paired_cost`,
    over interleaved windows of both runs.
``spheres-friction``
    the ``block-friction`` block without its bonds: ``n³`` touching frictional spheres
    hitting the wall (the workload LAMMPS ``pair granular`` is compared on:
    ``bench/peers.py``).
``spheres``
    Hertz spheres only (no bonds, walls or fields): unit spheres on a cubic lattice of
    spacing 0.98 with small random velocities, the workload of JAX-MD's ``soft_sphere``
    benchmark (α = 5/2).
``torus``
    the paper's 80-particle torus impact, stepping only, in steps/s; and ``torus-run``, the
    same through ``granular run`` with its output (frames, series, checkpoints).
``pile``
    the heap of ``granular validate pile`` (:mod:`granular.validation.pile`) with
    ``--pile`` grains: frictional spheres with rolling resistance fall into a square
    column, settle, and slump into a heap when its walls are taken away; the wall-clock
    time until both phases rest (the fastest grain below 1 mm/s; at most
    ``max(1.5, 4 t_fall)`` and ``max(3, 8 t_fall)`` of simulated time, ``t_fall`` the
    column's free-fall time), the particle-steps/s over the whole run and the heap's
    angle. Progress lines on stderr.

Each row reports ms/step and particle-steps/s; the bytes a step moves by the kernels'
access pattern (:func:`bytes_per_step`: every array a kernel reads or writes, once) and
the fraction of the memory bandwidth that is; neighbour-list rebuilds per 1000 steps of
the timed run and the time of one rebuild (in place on the device, timed alone after the
run: ``rebuild_ms``); host time and device time per step; memory held. JIT compilation is
excluded and the device is synchronised inside every timed region.

    granular bench [--backend cpu|gpu|all] [--workload block,block-friction,spheres-friction,spheres,torus,pile]
                   [--n 10,22,40] [--spheres 10000,100000] [--pile 10000] [--precision float64,float32]
                   [--json out.json]
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from kernels.laws import CONTACT_SLOT

from .backend import BackendError, get_backend
from .io.jsonio import loads
from .particles.integrators import ExplicitIntegrator
from .particles.builder import ModelBuilder
from .particles.paper_torus import torus_builder
from .particles.shapes import block_impact_builder, lattice_positions
from .timing import write_json
from .validation import pile as pile_study

# ------------------------------------------------------------------- workloads


def spheres_builder(n_total: int, spacing: float = 0.98, seed: int = 0, kpp: float = 1.0) -> ModelBuilder:
    """Unit spheres (radius 0.5) on a cubic lattice of ``spacing`` (compressed contacts
    with each neighbour), about ``n_total`` of them, random velocities of size 0.01."""
    n = max(2, round(n_total ** (1.0 / 3.0)))
    x = lattice_positions((n, n, n), spacing)
    rng = np.random.default_rng(seed)
    b = ModelBuilder()
    b.add_particles(x, v=0.01 * rng.normal(size=x.shape), radius=0.5)
    b.set_contacts(kpp, allow_initial_overlap=True)
    return b


def workload_builder(name: str, n: int, spacing: float = 1.0) -> ModelBuilder:
    """The builder of a CPU workload by its name, as ``granular bench`` and the scripts of
    ``bench/`` make it: ``"spheres"`` (:func:`spheres_builder` of ``n³``), else the block
    of :func:`~granular.particles.shapes.block_impact_builder` (``n³``, ``gap = 0.05``):
    ``"block"`` (paper 003's law, bonded), ``"block-friction"`` (the dissipative law,
    bonded), ``"spheres-friction"`` (its spheres without bonds, ``spacing`` apart)."""
    if name == "spheres":
        return spheres_builder(n**3)
    return block_impact_builder(n, gap=0.05, friction=name != "block", bonded=name != "spheres-friction",
                                spacing=spacing)  # fmt: skip


# --------------------------------------------------------------------- traffic


def bytes_per_step(model, state=None) -> int:
    """Bytes a step moves between the kernels and memory, counting each array a kernel
    reads or writes once (neighbours' positions reread from cache are not counted): the
    compulsory traffic of the launches of one step, a lower bound that the achieved
    bandwidth is compared with.

    advance: reads x, v, q, Ω, F, RM, m, J (and x_ref with a neighbour list), writes x,
    v, q, Ω. Bonds, per-bond pass (CPU): reads each bond's ends, row index, flag (and
    thresholds), and once the table of distinct rows of rest data and stiffnesses; writes
    its (F_a, RM_a, RM_b); per-particle pass (GPU): each end reads the bond data instead.
    Forces: reads x, q, m, J, radius, the CSR offsets and incident ids, the bond terms
    (or data) per incident bond, the neighbour row and count, the walls; reads and writes
    v, Ω; writes F, RM. The dissipative law adds the velocities it sees, the ledgers, the
    wall springs and, per contact holding springs, its springs and slots.
    """
    f = model.dtype.itemsize
    n, nb = model.n, model.n_bonds
    contacts = model.force("contacts")
    nl = model.neighbors_of(state) if contacts is not None else None
    listed = nl is not None
    total = n * ((19 + 2) * f + 13 * f + (3 * f if listed else 0))  # advance
    forces = n * ((3 + 4 + 3) * f + 12 * f + 6 * f)  # x, q, m, J, r; v and Ω in and out; F, RM
    gravity = model.force("gravity")
    if gravity is not None and gravity.replica is not None:
        forces += n * 4  # each particle's replica, for its replica's gravity
    if nb:
        thresholds = 2 * f if model.bonds.can_break else 0
        bond_data = 2 * 8 + (1 + 6 + 4 + 3) * f + 1 + thresholds
        forces += n * 8 + 2 * nb * 8  # offsets, incident
        if model.backend.kernels.PER_BOND_PASS:
            # the rest data and stiffnesses from the table of distinct rows: a row index a bond
            total += nb * (2 * 8 + 4 + 1 + thresholds + 9 * f) + int(model.bonds.table.shape[0]) * 14 * f
            forces += 2 * nb * (8 + 6 * f)  # end id and the end's six terms
        else:
            forces += 2 * nb * bond_data
    if listed:
        rows = int(model.backend.to_host(nl.count).sum()) if nl.valid else 0
        forces += n * 4 + rows * 4
        if model.law.history:
            # a law with history (the dissipative law): the velocities it sees (vp, wp: written by the advance,
            # read by the contact passes), the dissipated-energy ledger and the wall
            # springs read and written; a one-byte flag per listed slot (live, and got
            # for the slots of the per-pair pass). Per contact holding springs (``held``
            # counts its two ends): each end reads and writes its own copy of the springs;
            # with the per-pair pass the lower end reads one copy and writes both, and
            # each end's result slot is written and read back
            width = nl.hist.shape[2] * f
            walls = model.force("walls")
            n_walls = 0 if walls is None else walls.per_particle
            held = int(model.backend.to_host(nl.live).sum())
            pair_pass = nl.res.shape[0] > 0
            total += n * 12 * f
            forces += n * (12 * f + 2 * 4 * f + 2 * n_walls * width) + rows * (2 if pair_pass else 1)
            if pair_pass:
                forces += held // 2 * 3 * width + held * 2 * CONTACT_SLOT * f
            else:
                forces += held * 2 * width
    return int(total + forces)


#: ``cudaDevAttrMemoryClockRate`` [kHz] and ``cudaDevAttrGlobalMemoryBusWidth`` [bits]:
#: CUDA 13 removed the first from the device properties, the attribute remains.
CUDA_ATTR_MEMORY_CLOCK, CUDA_ATTR_BUS_WIDTH = 36, 37


def nominal_bandwidth(properties: dict, attribute) -> float | None:
    """Nominal memory bandwidth [bytes/s] of a device, ``2 × clock × bus width`` (double
    data rate): the clock and the bus width from the device ``properties`` or, where they
    lack them (CUDA 13), from ``attribute(code)`` (``cudaDeviceGetAttribute``); ``None``
    if neither gives them."""

    def get(key, code):
        value = properties.get(key)
        if not value:
            try:
                value = attribute(code)
            except Exception:  # an attribute this driver does not know
                value = None
        return value

    clock_khz = get("memoryClockRate", CUDA_ATTR_MEMORY_CLOCK)
    bus_bits = get("memoryBusWidth", CUDA_ATTR_BUS_WIDTH)
    if not clock_khz or not bus_bits:
        return None
    return 2.0 * clock_khz * 1e3 * bus_bits / 8.0


def _copy_rate(xp, synchronize, nbytes=2**28, repeats=5) -> float:
    """Best rate [bytes/s] of a copy of ``nbytes`` between two arrays of ``xp`` (bytes read
    plus bytes written)."""
    a = xp.ones(nbytes // 8)
    b = xp.empty_like(a)
    b[...] = a  # first touch
    synchronize()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        b[...] = a
        synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * a.nbytes / best


def peak_bandwidth(backend) -> tuple[float, str]:
    """Peak memory bandwidth [bytes/s] and how it was obtained: on a GPU the nominal
    figure of the device (:func:`nominal_bandwidth`), else a measured copy on the GPU;
    on the CPU a measured copy of 256 MB on one thread."""
    if backend.name == "gpu" and not backend.simulated:
        import cupy

        dev = cupy.cuda.Device().id
        nominal = nominal_bandwidth(cupy.cuda.runtime.getDeviceProperties(dev),
                                    lambda code: cupy.cuda.runtime.deviceGetAttribute(code, dev))  # fmt: skip
        if nominal:
            return nominal, "memory clock x bus width (device attributes)"
        return _copy_rate(cupy, backend.synchronize, 2**30), "measured device copy of 1 GiB"
    return _copy_rate(np, lambda: None), "measured copy of 256 MB (one thread)"


def model_bytes(model, state) -> int:
    """Bytes of every array the model, the state and the step loop hold."""
    seen, total = set(), 0

    def add(a):
        nonlocal total
        if hasattr(a, "nbytes") and id(a) not in seen:
            seen.add(id(a))
            total += int(a.nbytes)

    objs = [model, state, *model.forces]
    if state._engine is not None:
        objs += [state._engine]
        for a in state._engine._saved:
            add(a)
    nl = getattr(state, "neighbors", None)
    if nl is not None:
        objs.append(nl)
    for obj in objs:
        for v in vars(obj).values():
            add(v)
    return total


# ------------------------------------------------------------------- measuring


class _Clock:
    """Host time spent in the step loop, and time spent waiting for the device."""

    def __init__(self, program):
        self.program = program
        self.wait = 0.0
        self._read = program.read_report

        def timed_read():
            t0 = time.perf_counter()
            try:
                return self._read()
            finally:
                self.wait += time.perf_counter() - t0

        program.read_report = timed_read

    def close(self):
        self.program.read_report = self._read


def measure(model, h, min_time=1.0, warmup=60, label="", graphs=True, steps=None) -> dict:
    """Time ``advance`` on ``model``: ms/step and the other columns of a row. With
    ``steps``, exactly the steps ``warmup .. warmup + steps`` of the trajectory are timed
    (the window a peer code runs, ``bench/peers.py``), on a second run from the initial
    state, the first having compiled and loaded everything that window needs; otherwise
    windows further along the trajectory, grown until one lasts ``min_time``."""
    be = model.backend
    if steps is not None:  # a first run through the window: compilation, graph capture
        first = model.state()
        ExplicitIntegrator("verlet", graphs=graphs).advance(model, first, h, warmup + int(steps))
        be.synchronize()
        del first
    state = model.state()
    integ = ExplicitIntegrator("verlet", graphs=graphs)
    integ.advance(model, state, h, warmup)  # compilation, graph capture, into the wall
    be.synchronize()
    eng = integ.engine(model, state)
    # all of Numba's threads, always: a row measures the engine at the threads asked for
    # (the thread count measured on a busy machine, threads.py, would try others in the window)
    eng.threads = None
    nl = eng.neighbors
    fixed = steps is not None
    steps = int(steps) if fixed else 16
    first = not fixed
    while True:  # grow the run until it lasts min_time; the first window is never the one reported
        builds0 = nl.builds if nl is not None else 0
        clock = _Clock(eng.program)
        t0, c0 = time.perf_counter(), time.process_time()
        integ.advance(model, state, h, steps)
        be.synchronize()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        clock.close()
        # The first window can hold one-time work the warm-up did not reach (a kernel
        # compiled at the first in-block rebuild, a graph captured for a new step count):
        # on a GPU that was 3 s in 16 steps of the spheres at N = 10^4. It is run again.
        if fixed or (wall >= min_time and not first) or steps >= 10**7:
            break
        if wall < min_time:
            steps = int(steps * min(10.0, max(2.0, 1.2 * min_time / max(wall, 1e-6))))
        first = False
    rebuild_ms = _rebuild_time(eng, be) if nl is not None else None
    gpu = be.name == "gpu" and not be.simulated
    # On a GPU the host launches and waits; the device's time is the wall time minus the
    # host's own work between waits. On the CPU the kernels are the host's work.
    host = (wall - clock.wait) if gpu else cpu / max(1, os.cpu_count() or 1)
    traffic = bytes_per_step(model, state)
    return {
        "workload": label,
        "backend": be.name,
        "device": be.device,
        "precision": str(model.dtype),
        "N": model.n,
        "bonds": model.n_bonds,
        "steps": steps,
        "ms_per_step": 1e3 * wall / steps,
        "particle_steps_per_s": model.n * steps / wall,
        "steps_per_s": steps / wall,
        "bytes_per_step": traffic,
        "bandwidth_GBs": traffic * steps / wall / 1e9,
        "rebuilds_per_1000_steps": 1000.0 * ((nl.builds - builds0) if nl is not None else 0) / steps,
        "host_ms_per_step": 1e3 * host / steps,
        "device_ms_per_step": 1e3 * (clock.wait if gpu else wall) / steps,
        "blocks_per_1000_steps": 1000.0 * eng.blocks / max(1, eng.steps),
        "graphs": bool(eng.program.graphs_enabled),
        "memory_MB": model_bytes(model, state) / 2**20,
        "rebuild_ms": rebuild_ms,
    }


def _rebuild_time(eng, be, repeats=5) -> float | None:
    """Milliseconds of one neighbour-list rebuild on the device, in place, at the state's
    positions (the in-block rebuild of a step loop, launched alone; best of ``repeats``):
    on a GPU between two events on the program's stream (the device's time, without the
    host's launch cost), else by the host's clock. ``None`` if the rebuild outgrew the
    list (the run's next block would regrow it; a truncated build is not timed). Timed
    after the run, whose state is not stepped again."""
    program = eng.program
    stream = program.cupy_stream if be.name == "gpu" and not be.simulated else None
    best = math.inf
    for _ in range(repeats):
        program.head(False)  # clears the report the rebuild writes its row counts to
        be.synchronize()
        if stream is not None:
            import cupy

            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            program.rebuild()
            end.record(stream)
            end.synchronize()
            seconds = cupy.cuda.get_elapsed_time(start, end) / 1e3
        else:
            t0 = time.perf_counter()
            program.rebuild()
            be.synchronize()
            seconds = time.perf_counter() - t0
        if eng.neighbors.outgrown(program.read_report()):
            return None
        best = min(best, seconds)
    return 1e3 * best


def paired_cost(model_a, model_b, h, min_time=1.0, rounds=7, warmup=60, graphs=True) -> dict:
    """Cost per step of ``model_b`` relative to ``model_a``, from interleaved windows.

    Both are warmed up ``warmup`` steps (then 16 more to size the windows, and one
    untimed window each), then advanced ``rounds`` times by the same number of steps each,
    alternately (A then B, then B then A, ...), so that both cover the same
    stretches of their trajectories and a slow spell of a shared machine falls on both.
    Returns the median, smallest and largest ratio of the rounds' times (B over A), the
    steps per window (a window lasts about ``min_time / rounds`` seconds of B) and each
    state's step count at the end (equal).
    """
    be = model_a.backend
    runs = []
    for model in (model_a, model_b):
        state = model.state()
        integ = ExplicitIntegrator("verlet", graphs=graphs)
        integ.advance(model, state, h, warmup)
        integ.engine(model, state).threads = None  # all threads, as in measure()
        runs.append((model, state, integ))
    be.synchronize()

    def window(k, steps):
        model, state, integ = runs[k]
        t0 = time.perf_counter()
        integ.advance(model, state, h, steps)
        be.synchronize()
        return time.perf_counter() - t0

    probe = window(1, 16) / 16  # B's cost per step, to size the windows
    window(0, 16)  # A level with B again
    steps = max(16, int(min_time / rounds / max(probe, 1e-9)))
    window(0, steps)  # untimed: a first block of this length (on a GPU, its graphs captured)
    window(1, steps)
    ratios = []
    for r in range(rounds):
        if r % 2 == 0:
            ta = window(0, steps)
            tb = window(1, steps)
        else:
            tb = window(1, steps)
            ta = window(0, steps)
        ratios.append(tb / ta)
    return {"median": float(np.median(ratios)), "min": float(min(ratios)), "max": float(max(ratios)),
            "rounds": rounds, "steps_per_window": steps, "steps": [int(run[1].step) for run in runs]}  # fmt: skip


def torus_run(backend: str, precision: str = "float64") -> dict:
    """``granular run scenes/torus_impact.toml`` (output included) in a subprocess."""
    scene = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenes", "torus_impact.toml")
    if not os.path.isfile(scene):
        return {}
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "granular", "run", scene, "--out", out, "--backend", backend, "--precision",
               precision, "--quiet", "--overwrite"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            return {"workload": "torus-run", "error": proc.stderr.strip()[-300:]}
        with open(os.path.join(out, "run.json")) as fh:
            info = loads(fh.read())
    return {"workload": "torus-run", "backend": backend, "precision": precision, "N": info["particles"],
            "steps": info["steps"], "steps_per_s": info["steps_per_s"],
            "ms_per_step": 1e3 / info["steps_per_s"] if info["steps_per_s"] else None}  # fmt: skip


# ------------------------------------------------------------------------- CLI


def pile_run(backend, n: int, precision: str = "float64") -> dict:
    """The ``pile`` workload: wall-clock of the pile study's two phases to rest."""
    fall = pile_study.fall_time(n)
    t0 = time.perf_counter()

    def progress(phase, t, v):
        print(f"  pile N = {n:,}: {phase} t = {t:.2f} s, fastest grain {v:.2e} m/s, {time.perf_counter() - t0:.0f} s",
              file=sys.stderr, flush=True)  # fmt: skip

    p = pile_study.pile(n, backend, t_fill=max(1.5, 4.0 * fall), t_release=max(3.0, 8.0 * fall), progress=progress,
                        dtype=precision)  # fmt: skip
    wall = time.perf_counter() - t0
    return {"workload": "pile", "backend": backend.name, "device": backend.device, "precision": precision, "N": n,
            "wall_s": wall, "steps": int(p["steps"]), "ms_per_step": 1e3 * wall / max(1, p["steps"]),
            "particle_steps_per_s": n * p["steps"] / wall, "fill_time": p["fill_time"],
            "release_time": p["release_time"], "rests": bool(p["fill_rests"] and p["release_rests"]),
            "angle_mean": p["angle_mean"], "energy_error": p["energy_error"]}  # fmt: skip


def _ints(text):
    return [int(float(v)) for v in text.split(",") if v.strip()]


def _steps_count(text):
    """``--steps``: a whole number of steps, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of steps >= 1, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of steps >= 1, got {text!r}")
    return n


def build_parser(p=None):
    p = p or argparse.ArgumentParser(prog="granular bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"),
                   help="where to measure (default all: the CPU, and the GPU when there is one)")
    p.add_argument("--workload", default="block,spheres,torus",
                   help="comma list of block, block-friction, spheres-friction, spheres, torus, pile, mesh "
                        "(the frictional spheres against a meshed wall)")  # fmt: skip
    p.add_argument("--n", default="10,22,40", help="block edges, N = n^3 (default 10,22,40)")
    p.add_argument("--spheres", default="10000,100000", help="particle counts of the spheres workload")
    p.add_argument("--pile", default="10000", help="grain counts of the pile workload")
    p.add_argument("--mesh", type=int, default=71,
                   help="the mesh workload's wall: mesh x mesh squares of two triangles (default 71: 10,082)")
    p.add_argument("--precision", default="float64",
                   help="comma list of float64, float32: each workload is measured in each (default float64)")
    p.add_argument("--min-time", type=float, default=1.0, help="seconds timed per row")
    p.add_argument("--steps", type=_steps_count, default=None,
                   help="time exactly the steps after the warm-up's 60 instead (the window of bench/peers.py)")
    p.add_argument("--eager", action="store_true", help="no CUDA graphs (every kernel launched by the host)")
    p.add_argument("--spacing", type=_spacing, default=1.0,
                   help="centre distance of the spheres-friction workload's spheres (default 1: touching); "
                        "above 1.2 no pair is listed, so a step costs what the particles alone cost")
    p.add_argument("--json", metavar="PATH", help="save the rows with the hardware description")
    return p


def _spacing(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (np.isfinite(value) and value >= 1.0):
        raise argparse.ArgumentTypeError(f"--spacing takes a number >= 1 (the diameter), got {text!r}")
    return value


def _print_row(r):
    if "error" in r:
        print(f"{r['workload']:<10} error: {r['error']}", flush=True)
        return
    if r["workload"] == "pile":
        rest = "at rest" if r["rests"] else "NOT at rest"
        print(f"{r['workload']:<10} {r['backend']:<4} {r['precision']:<8} {r['N']:>9} {r['ms_per_step']:>9.4f} "
              f"{r['particle_steps_per_s']:>12.3e} {r['wall_s']:>9.1f} s wall-clock to rest: {r['steps']} steps, "
              f"{rest} at t = {r['fill_time']:.2f} + {r['release_time']:.2f} s, angle {r['angle_mean']:.1f} deg",
              flush=True)  # fmt: skip
        return
    if r["workload"] == "torus-run":
        print(f"{r['workload']:<10} {r['backend']:<4} {r['precision']:<8} {r['N']:>9} {r['ms_per_step']:>9.4f} "
              f"{'':>12} {r['steps_per_s']:>10.0f} steps/s with output", flush=True)  # fmt: skip
        return
    print(f"{r['workload']:<10} {r['backend']:<4} {r['precision']:<8} {r['N']:>9} {r['ms_per_step']:>9.4f} "
          f"{r['particle_steps_per_s']:>12.3e} {r['steps_per_s']:>10.0f} {r['bytes_per_step'] / max(1, r['N']):>7.0f} "
          f"{r['bandwidth_GBs']:>8.1f} {100 * r['bandwidth_fraction']:>6.1f} {r['rebuilds_per_1000_steps']:>8.1f} "
          f"{r['host_ms_per_step']:>8.4f} {r['device_ms_per_step']:>8.4f} {r['memory_MB']:>8.1f} "
          f"{'-' if r['rebuild_ms'] is None else format(r['rebuild_ms'], '.3f'):>8}", flush=True)  # fmt: skip


def main(argv=None) -> int:
    return run_bench(build_parser().parse_args(argv))


def run_bench(args) -> int:
    """Measure the rows ``args`` (see :func:`build_parser`) ask for and print them."""
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    bad = set(workloads) - {"block", "block-friction", "spheres-friction", "spheres", "torus", "pile", "mesh"}
    if bad:
        print(f"granular bench: unknown workload(s) {sorted(bad)}; choose from block, block-friction, "
              "spheres-friction, spheres, torus, pile, mesh", file=sys.stderr)  # fmt: skip
        return 2
    if args.spacing != 1.0 and workloads != ["spheres-friction"]:
        print(f"granular bench: --spacing applies to --workload spheres-friction alone, got {args.workload!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    precisions = [p.strip() for p in args.precision.split(",")]
    if set(precisions) - {"float64", "float32"}:
        print(f"granular bench: --precision takes float64 and/or float32, got {args.precision!r}", file=sys.stderr)
        return 2
    rows, devices = [], {}
    print(f"{'workload':<10} {'bkd':<4} {'dtype':<8} {'N':>9} {'ms/step':>9} {'p-steps/s':>12} {'steps/s':>10} "
          f"{'B/p-step':>7} {'GB/s':>8} {'%peak':>6} {'rb/1000':>8} {'host ms':>8} {'dev ms':>8} {'MB':>8} "
          f"{'rb ms':>8}")  # fmt: skip
    for name in names:
        try:
            be = get_backend(name)
        except BackendError as exc:
            print(f"{name}: skipped: {exc}")
            continue
        if be.simulated:
            print(f"{name}: skipped: CUDA simulator (not a throughput measurement)")
            continue
        peak, how = peak_bandwidth(be)
        devices[name] = {"device": be.device, "peak_bandwidth_GBs": peak / 1e9, "peak_bandwidth_from": how}
        cases = []
        for dtype in precisions:
            if "torus" in workloads:
                cases.append(("torus", lambda: torus_builder(), 5e-4, dtype, None))
            for n in _ints(args.n):
                for label in ("block", "block-friction", "spheres-friction"):
                    if label in workloads:
                        spacing = args.spacing if label == "spheres-friction" else 1.0
                        cases.append((label, lambda label=label, n=n, spacing=spacing: workload_builder(label, n, spacing),
                                      1e-3, dtype, n))  # fmt: skip
                if "mesh" in workloads:  # the frictional spheres against a meshed wall of 2 mesh² triangles
                    meshed = lambda n=n: block_impact_builder(n, gap=0.05, friction=True, bonded=False,  # noqa: E731
                                                              mesh=args.mesh)  # fmt: skip
                    cases.append(("mesh", meshed, 1e-3, dtype, n))
            if "spheres" in workloads:
                cases += [("spheres", lambda n=n: spheres_builder(n), 1e-3, dtype, None) for n in _ints(args.spheres)]
        for label, build, h, dtype, edge in cases:
            model = build().finalize(be, dtype=np.dtype(dtype))
            r = measure(model, h, args.min_time, label=label, graphs=not args.eager, steps=args.steps)
            r["bandwidth_fraction"] = r["bandwidth_GBs"] * 1e9 / peak
            if label == "spheres-friction":
                r["spacing"] = args.spacing
            rows.append(r)
            _print_row(r)
            if label == "mesh":
                del model
                pair = paired_cost(
                    block_impact_builder(edge, gap=0.05, friction=True, bonded=False).finalize(be, dtype=np.dtype(dtype)),
                    block_impact_builder(edge, gap=0.05, friction=True, bonded=False, mesh=args.mesh).finalize(
                        be, dtype=np.dtype(dtype)), h, args.min_time, graphs=not args.eager)  # fmt: skip
                r["triangles"] = 2 * args.mesh * args.mesh
                r["cost_vs_plane"] = pair["median"]
                print(f"{'':<10} mesh of {r['triangles']} triangles / planar wall, N = {r['N']}: {pair['median']:.2f}x "
                      f"per step, median of {pair['rounds']} interleaved windows (range {pair['min']:.2f}-"
                      f"{pair['max']:.2f}x)", flush=True)  # fmt: skip
            if label == "block-friction" and "block" in workloads:
                # the ratio from interleaved windows of both runs: one row each, measured
                # minutes apart, can differ by tens of per cent on a shared machine
                del model  # its memory, before two more of these are built
                pair = paired_cost(block_impact_builder(edge, gap=0.05).finalize(be, dtype=np.dtype(dtype)),
                                   block_impact_builder(edge, gap=0.05, friction=True).finalize(be, dtype=np.dtype(dtype)),
                                   h, args.min_time, graphs=not args.eager)  # fmt: skip
                r["cost_vs_block"] = pair["median"]
                r["cost_vs_block_range"] = [pair["min"], pair["max"]]
                print(f"{'':<10} block-friction / block, N = {r['N']}: {pair['median']:.2f}x per step, median of "
                      f"{pair['rounds']} interleaved windows of {pair['steps_per_window']} steps "
                      f"(range {pair['min']:.2f}-{pair['max']:.2f}x; target <= 1.5x)", flush=True)  # fmt: skip
        if "pile" in workloads:
            for dtype in precisions:
                for n in _ints(args.pile):
                    r = pile_run(be, n, dtype)
                    rows.append(r)
                    _print_row(r)
        if "torus" in workloads:
            for dtype in precisions:
                r = torus_run(name, dtype)
                if r:
                    rows.append(r)
                    _print_row(r)
    if args.json:
        write_json(args.json, rows, devices=devices)
    return 0


if __name__ == "__main__":
    sys.exit(main())
