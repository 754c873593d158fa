"""Throughput of the bonded block impact (``block_impact``): ms/step and particle-steps/s
per backend and N, with a breakdown (bonds, contacts, neighbour search, walls,
integration) and the memory per particle.

    granular bench [--backend cpu|gpu|all] [--n 10,22,46,100] [--json out.json]
    python bench/bench_impact.py ...     (the same)

N = n³. JIT warm-up is excluded; the device is synchronised inside every timed region.
The block is first advanced into the wall so contacts and bonds are loaded.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time


import granular as gr
from granular.backend import BackendError
from granular.forces import evaluate_forces
from granular.shapes import block_impact_builder


def timed(be, fn, repeat):
    be.synchronize()
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    be.synchronize()
    return (time.perf_counter() - t0) / repeat


def model_bytes(model, state) -> int:
    seen, total = set(), 0

    def add(a):
        nonlocal total
        if hasattr(a, "nbytes") and id(a) not in seen:
            seen.add(id(a))
            total += int(a.nbytes)

    for obj in [model, state, state.back] + list(model.forces):
        for v in vars(obj).values():
            add(v)
            if isinstance(v, tuple):
                for w in v:
                    add(w)
    nl = getattr(model.force("contacts"), "neighbors", None)
    if nl is not None:
        total += nl.bytes
    return total


def bench_block(backend, n, min_time=1.0, scheme="verlet"):
    be = gr.get_backend(backend)
    model = block_impact_builder(n, gap=0.05).finalize(be)
    state = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    h = 1e-3
    for _ in range(60):  # warm-up (JIT) and into the wall
        integ.step(model, state, h)
    steps = max(3, int(min_time / max(timed(be, lambda: integ.step(model, state, h), 2), 1e-6)))
    t_step = timed(be, lambda: integ.step(model, state, h), steps)
    parts = {}
    for f in model.forces:
        parts[f.kind] = timed(be, lambda f=f: f.accumulate(model, state), steps)
    nl = model.force("contacts").neighbors
    if nl is not None:
        parts["neighbor_build"] = timed(be, lambda: nl.build(state.x), max(2, steps // 5))
        parts["builds_per_step"] = nl.builds / max(1, state.step)
    t_forces = timed(be, lambda: evaluate_forces(model, state), steps)
    parts["integration"] = max(0.0, t_step - t_forces)
    N = model.n
    return {"backend": be.name, "device": be.device, "n": n, "N": N, "bonds": model.n_bonds, "scheme": scheme,
            "precision": "float64", "ms_per_step": 1e3 * t_step, "particle_steps_per_s": N / t_step,
            "ms": {k: 1e3 * v for k, v in parts.items() if k != "builds_per_step"},
            "neighbor_builds_per_step": parts.get("builds_per_step"),
            "bytes_per_particle": model_bytes(model, state) / N}  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="all", choices=("cpu", "gpu", "all"))
    p.add_argument("--n", default="10,22,46,100", help="block edges; N = n^3")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--min-time", type=float, default=1.0)
    args = p.parse_args(argv)
    names = ["cpu", "gpu"] if args.backend == "all" else [args.backend]
    rows = []
    head = f"{'backend':<7} {'N':>9} {'ms/step':>9} {'particle-steps/s':>17} {'B/particle':>10}  breakdown [ms]"
    print(head)
    for name in names:
        try:
            be = gr.get_backend(name)
        except BackendError as exc:
            print(f"{name:<7} skipped: {exc}")
            continue
        if be.simulated:
            print(f"{name:<7} skipped: CUDA simulator (not a throughput measurement)")
            continue
        for n in (int(v) for v in args.n.split(",")):
            r = bench_block(be, n, args.min_time)
            rows.append(r)
            brk = ", ".join(f"{k} {v:.3g}" for k, v in r["ms"].items())
            print(f"{name:<7} {r['N']:>9} {r['ms_per_step']:>9.3f} {r['particle_steps_per_s']:>17.3e} "
                  f"{r['bytes_per_particle']:>10.0f}  {brk}", flush=True)  # fmt: skip
    if args.json:
        meta = {"python": sys.version.split()[0], "platform": platform.platform(), "granular": gr.__version__,
                "date": time.strftime("%Y-%m-%d")}  # fmt: skip
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "results": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
