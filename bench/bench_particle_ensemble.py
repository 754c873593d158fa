"""Ensembles of particle scenes: wall-clock of N torus impacts (paper 003's torus, 80
particles each) run as replicas in one system, against the same impacts run one by one.

    python bench/bench_particle_ensemble.py [--n 10 100 1000] [--time 5.0] [--backend cpu]
                                            [--loop 3] [--chunk 1000] [--json FILE]

For each N: ``granular ensemble`` of ``scenes/torus_impact.toml`` (run in this process,
with its progress lines) with the impact speed and the bond stiffness sampled, to
``--time`` (the scene's 5.0 by default), everything included (building the replicas, the
diagnostics samples, the summaries, histograms and ``ensemble.json`` written);
printed as wall-clock seconds, replica-steps/s and particle-steps/s. ``--loop`` impacts are
also run one by one (one model each, built and run; the same sampling), and the time of N
impacts one by one is extrapolated from them. The issue's figure is N = 10^4 to t = 5 on a
GPU (8·10^5 particles); on the CPU fewer replicas show the rate.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SCENE = os.path.join(ROOT, "scenes", "torus_impact.toml")
VARY = ["particles[0].velocity[0]=uniform(-2,-0.5)", "bond_families.binder.ka=uniform(150,250)"]


def ensemble(n, t_end, backend, chunk, quiet=False):
    """Wall-clock seconds of ``granular ensemble`` (the command, in this process) of ``n``
    replicas to ``t_end``, output included: summaries, histograms, ``ensemble.json``
    (written to a temporary folder); its progress lines on stderr unless ``quiet``."""
    from granular.ensemble.command import main as ensemble_command

    args = [SCENE, "--n", str(n), "--time", repr(t_end), "--backend", backend, "--chunk", str(chunk), "--seed", "0"]
    for v in VARY:
        args += ["--vary", v]
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        status = ensemble_command(args + ["--out", os.path.join(out, "ensemble")] + (["--quiet"] if quiet else []))
        wall = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"granular ensemble exited with {status}")
    return wall


def one_by_one(k, t_end, backend):
    """Seconds per impact run alone (its own model: built and run, same sampling)."""
    import granular as gr
    from granular.ensemble.particles import make_particle_spec, replica_scene
    from granular.run.scene import build_model, load_scene

    spec = make_particle_spec(load_scene(SCENE), max(k, 1), VARY, 0, time=t_end, backend=backend)
    t0 = time.perf_counter()
    for i in range(k):
        model, run = build_model(replica_scene(spec, i), backend)
        state = model.state()
        gr.ExplicitIntegrator(run.integrator).advance(model, state, run.dt, spec.steps)
    model.backend.synchronize()
    return (time.perf_counter() - t0) / max(k, 1), spec.steps


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--time", type=float, default=5.0, help="end time of each impact (the scene's is 5.0)")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--loop", type=int, default=3, help="impacts run one by one for the comparison")
    p.add_argument("--chunk", type=int, default=1000)
    p.add_argument("--json")
    args = p.parse_args(argv)
    ensemble(2, min(args.time, 0.05), args.backend, args.chunk, quiet=True)  # compile the kernels
    per, steps = one_by_one(args.loop, args.time, args.backend)
    print(f"one impact alone: {per:.3f} s ({steps / per:,.0f} steps/s), {steps} steps to t = {args.time}")
    rows = []
    print(f"{'N':>7} {'particles':>10} {'wall s':>9} {'replica-steps/s':>16} {'particle-steps/s':>17} "
          f"{'one by one s':>13} {'speed-up':>9}")  # fmt: skip
    for n in args.n:
        wall = ensemble(n, args.time, args.backend, args.chunk)
        particles = 80 * n
        row = {"N": n, "particles": particles, "steps": steps, "wall_s": wall, "replica_steps_per_s": n * steps / wall,
               "particle_steps_per_s": particles * steps / wall, "one_by_one_s": per * n,
               "speedup": per * n / wall, "backend": args.backend}  # fmt: skip
        rows.append(row)
        print(f"{n:>7} {particles:>10} {wall:>9.2f} {row['replica_steps_per_s']:>16,.0f} "
              f"{row['particle_steps_per_s']:>17.3e} {row['one_by_one_s']:>13.1f} {row['speedup']:>8.1f}x")  # fmt: skip
    if args.json:
        from granular.timing import write_json

        write_json(args.json, rows, devices=[args.backend], one_impact_alone_s=per)
    return 0


if __name__ == "__main__":
    sys.exit(main())
