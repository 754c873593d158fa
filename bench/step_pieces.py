"""What each piece of a CPU step costs, per particle, on one thread.

    python bench/step_pieces.py [--workload spheres-friction] [--n 22] [--spacing 1]
                                [--warm 60] [--pieces advance,kick,wall,pairs,forces]
                                [--reps 20] [--windows 7]

A step of the direct pass is one compiled loop (:mod:`kernels.cpu`) with every law and
body inlined, so a profile cannot say which part of the source an instruction came
from. This script compiles each piece into a loop of its own, from the same bodies the
step uses (:func:`kernels.particles.build`, :func:`kernels.interactions.build`), and
times it over every particle of ``granular bench``'s workload
(:func:`granular.particles.shapes.block_impact_builder`, ``gap = 0.05``, ``--warm``
steps of ``h = 1e-3`` first, so the block has met the wall):

- ``advance``: the first part of a step (kick with the stored forces, drift, rotation,
  the dashpots' velocities, the skin test; :func:`kernels.particles.build`
  ``advance_with``), with ``h = 1e-9`` so that the state barely moves between repetitions;
- ``kick``: the second half kick and the row's finiteness test (``kick_body``) followed by
  ``advance``;
- ``wall``: the wall loop of each particle (``wall_sum``);
- ``pairs``: the direct pass's pairs alone (``direct_start`` and ``direct_sum`` over the
  whole range as one chunk: each listed pair once, the law where it is in contact);
- ``bonds``: the per-bond pass (as :mod:`kernels.cpu` runs it: paper 003's bonds in
  groups of vector lanes, ``bond_range``; in a step, so a bond past its limit breaks;
  the bonded workloads only);
- ``forces``: ``pairs`` and each row's whole force body (pairs, walls, bonds, the
  dissipation ledger, the stored force, the finiteness test; ``direct_body`` without
  the kick);

and then the engine's whole step over the next 400 steps (``step``). The pieces overlap
(``forces`` holds ``pairs`` and ``wall``) and a piece alone can run faster than inside
the step (its own loop keeps fewer values live), so they bound the step's parts rather
than add up to it. ``--spacing 3`` (``spheres-friction`` only) sets the spheres apart:
no pair, the particles' own cost (``docs/engine.md``, "A particle's step, piece by
piece"). The state is restored after each timed window (bonds that broke in it
included); the laws' springs and the ledgers keep what the repetitions did to them. Not
part of the tests' timings (a test runs the cheap pieces on a small block to keep the
script working).
"""

from __future__ import annotations

import argparse
import sys
import time

import numba
import numpy as np
from numba import njit

from granular.backend import get_backend
from granular.benchmark import workload_builder
from granular.particles.integrators import ExplicitIntegrator
from kernels import cpu, interactions, particles
from kernels.laws import SCHEME_VERLET

PIECES = ("advance", "kick", "wall", "pairs", "bonds", "forces")
WORKLOADS = ("spheres-friction", "block-friction", "block", "spheres")
_K = {"nogil": True, "_nrt": False, "error_model": "numpy"}


def _loops(law):
    """The timing loops for ``law``, compiled on first call (each its own function, so a
    run compiles only the pieces it times)."""
    P = particles.build(cpu._jit, law)
    I = interactions.build(cpu._jit, P, law, cpu._prefetch_springs, acc_add=cpu._acc_add)  # noqa: E741
    C = I.contacts
    advance_with, kick_factors, kick_body = P.advance_with, P.kick_factors, P.kick_body
    wall_sum, direct_start, direct_sum, direct_body = C.wall_sum, C.direct_start, C.direct_sum, I.direct_body
    bond_range, lane_buffer = I.bond_range, cpu._lane_buffer

    @njit(**_K)
    def advance(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        for _ in range(reps):
            for i in range(dyn.x.shape[0]):
                a, b = kick_factors(i, scheme, h, par)
                advance_with(i, scheme, h, a, b, dyn, par, contacts, status)

    @njit(**_K)
    def kick(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        F, RM = dyn.F, dyn.RM
        for _ in range(reps):
            for i in range(dyn.x.shape[0]):
                a, b = kick_body(i, True, scheme, h, dyn, par, status, F[i, 0], F[i, 1], F[i, 2], RM[i, 0], RM[i, 1],
                                 RM[i, 2])  # fmt: skip
                advance_with(i, scheme, h, a, b, dyn, par, contacts, status)

    @njit(**_K)
    def wall(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        s = 0.0
        for _ in range(reps):
            for i in range(dyn.x.shape[0]):
                s += wall_sum(i, True, h, dyn, par, walls, contacts)[0]
        return s

    @njit(**_K)
    def pairs(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        n = dyn.x.shape[0]
        s = 0.0
        for _ in range(reps):
            for j in range(n):
                direct_start(j, 0, contacts)
            for i in range(n):
                s += direct_sum(i, n, h, dyn, par, bonds, contacts)[0]
        return s

    @njit(**_K)
    def bonds_pass(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        for _ in range(reps):
            bond_range(0, bonds.terms.shape[0], True, dyn, bonds, lane_buffer(dyn.x))

    @njit(**_K)
    def forces(reps, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        n = dyn.x.shape[0]
        for _ in range(reps):
            for j in range(n):
                direct_start(j, 0, contacts)
            for i in range(n):
                direct_body(i, n, False, scheme, h, dyn, par, bonds, contacts, walls, fields, status)

    return {"advance": advance, "kick": kick, "wall": wall, "pairs": pairs, "bonds": bonds_pass, "forces": forces}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="spheres-friction", choices=WORKLOADS)
    p.add_argument("--n", type=int, default=22, help="block edge (N = n^3); the spheres: n^3 of them")
    p.add_argument("--spacing", type=float, default=1.0, help="spheres-friction only: centre distance (3: no pair)")
    p.add_argument("--warm", type=int, default=60, help="steps of h = 1e-3 before the timing")
    p.add_argument("--pieces", default=",".join(PIECES), help=f"comma-separated, of {', '.join(PIECES)}")
    p.add_argument("--reps", type=int, default=20, help="passes over the particles in a timed window")
    p.add_argument("--windows", type=int, default=7, help="timed windows per piece (the fastest is printed)")
    p.add_argument("--no-step", action="store_true", help="leave out the engine's whole step")
    args = p.parse_args(argv)
    pieces = [s for s in args.pieces.split(",") if s]
    bad = [s for s in pieces if s not in PIECES]
    if bad:
        p.error(f"--pieces: unknown {', '.join(bad)}; choose from {', '.join(PIECES)}")
    if args.spacing != 1.0 and args.workload != "spheres-friction":
        p.error(f"--spacing applies to the spheres-friction workload only, not {args.workload!r}")
    if "bonds" in pieces and args.workload not in ("block", "block-friction"):
        if args.pieces != ",".join(PIECES):
            p.error(f"--pieces: bonds applies to the bonded workloads (block, block-friction), not {args.workload!r}")
        pieces.remove("bonds")
    if args.n < 2 or args.reps < 1 or args.windows < 1 or args.warm < 0:
        p.error("--n must be >= 2, --reps and --windows >= 1, --warm >= 0")
    numba.set_num_threads(1)
    model = workload_builder(args.workload, args.n, args.spacing).finalize(get_backend("cpu"))
    state = model.state()
    integ = ExplicitIntegrator("verlet")
    integ.advance(model, state, 1e-3, args.warm)
    b = state._engine.program.b
    bundles = (b["dyn"], b["par"], b["bonds"], b["contacts"], b["walls"], b["fields"], b["flags"].status)
    dyn, n = b["dyn"], model.n
    kept = {k: getattr(dyn, k).copy() for k in ("x", "v", "omega", "q", "F", "RM", "broken", "released")}
    loops = _loops(model.kernels.law)
    print(f"{args.workload}, N = {n}" + (f", spacing {args.spacing:g}" if args.workload == "spheres-friction" else "")
          + f", after {args.warm} steps; one thread, ns per particle (fastest of {args.windows} windows):")  # fmt: skip
    for name in pieces:
        h = 1e-9 if name in ("advance", "kick") else 1e-3
        f = loops[name]
        t0 = time.perf_counter()
        f(1, SCHEME_VERLET, h, *bundles)
        compile_s = time.perf_counter() - t0
        best = np.inf
        for _ in range(args.windows):
            t0 = time.perf_counter()
            f(args.reps, SCHEME_VERLET, h, *bundles)
            best = min(best, time.perf_counter() - t0)
            for k, a in kept.items():
                getattr(dyn, k)[:] = a
        print(f"  {name:8s} {1e9 * best / args.reps / n:7.1f}   (compiled in {compile_s:.0f} s)", flush=True)
    b["flags"].status[:] = 0
    if not args.no_step:
        steps = 400
        t0 = time.perf_counter()
        integ.advance(model, state, 1e-3, steps)
        print(f"  {'step':8s} {1e9 * (time.perf_counter() - t0) / steps / n:7.1f}   (the engine, the next {steps} "
              f"steps)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
