"""Ensemble throughput: body-steps/s versus N for each body scheme, the speed-up over a
plain Python loop running the same scheme body by body, and the peak RSS of an ensemble
versus its chunk size.

    python bench/bench_ensemble.py [--n 1 10 100 1000 10000] [--steps 5] [--loop 10]
                                   [--schemes ulvc livens directors nontwisting rolling_ball]
                                   [--backend cpu] [--json FILE]
    python bench/bench_ensemble.py --rss 1000000 --chunk 20000 --steps 1

Throughput: one batched system of N bodies (:func:`granular.ensemble.run_chunk` without
the chunk bookkeeping: built once, then ``--steps`` steps timed; setup excluded);
loop: ``--loop`` one-body systems, each built and stepped ``--steps`` times (steps timed,
setup excluded), rate = bodies x steps / time. ``--rss``: a child process runs
:func:`granular.ensemble.run_ensemble` on the heavy top and prints its peak RSS
(``ru_maxrss``) [MB].
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np

from granular.io.jsonio import dumps
from granular.timing import time_steps

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SCHEMES = {  # scheme -> (scene, vary)
    "ulvc": ("ulvc_unstable_rotation.toml", {"omega_body[0]": "uniform(0.005, 0.02)"}),
    "livens": ("livens_heavy_top.toml", {"omega[2]": "normal(77.8, 2.0)"}),
    "directors": ("directors_batch.toml", {"omega": "normal(0, 0.5)"}),
    "nontwisting": ("nontwisting_case1.toml", {"omega[0]": "uniform(5, 7)"}),
    "rolling_ball": ("rolling_ball_circle.toml", {"omega_body[2]": "uniform(0, 1)"}),
}


def _system(spec, idx, backend):
    from granular.bodies.scenes.config import parse_bodies
    from granular.bodies.scenes.systems import build_system

    table, _ = __import__("granular.ensemble", fromlist=["chunk_table"]).chunk_table(spec, 0, 0, idx)
    return build_system(parse_bodies(table), backend)


def _time_steps(system, steps, dt, backend):
    """Seconds for ``steps`` steps after one untimed warm-up step (JIT, caches)."""
    return time_steps(lambda k: system.advance(dt, k), backend.synchronize, first=steps, min_time=0.0,
                      max_steps=steps)[1]  # fmt: skip


def throughput(scheme, ns, steps, loop, backend_name):
    from granular import ensemble as ens
    from granular.backend import get_backend

    scene, vary = SCHEMES[scheme]
    backend = get_backend(backend_name)
    rows = []
    for n in ns:
        spec = ens.make_spec(os.path.join(ROOT, "scenes", scene), max(n, 2), vary, 0, steps=steps, backend=backend_name)
        idx = np.arange(n) if n > 1 else np.array([0, 0])
        system = _system(spec, idx, backend)
        wall = _time_steps(system, steps, spec.dt, backend)
        rows.append({"scheme": scheme, "n": n, "steps": steps, "wall_s": wall,
                     "body_steps_per_s": len(idx) * steps / wall})  # fmt: skip
    spec = ens.make_spec(os.path.join(ROOT, "scenes", scene), max(loop, 2), vary, 0, steps=steps, backend=backend_name)
    wall = 0.0
    for i in range(loop):
        system = _system(spec, np.array([i]), backend)
        wall += _time_steps(system, steps, spec.dt, backend)
    loop_rate = loop * steps / wall
    for r in rows:
        r["loop_body_steps_per_s"] = loop_rate
        r["speedup_vs_loop"] = r["body_steps_per_s"] / loop_rate
    return rows


def rss(n, chunk, steps, backend):
    scene = os.path.join(ROOT, "scenes", "livens_heavy_top.toml")
    vary = {"omega[2]": "normal(77.8, 2.0)", "mass": "uniform(0.6, 0.8)"}
    code = (
        f"import resource, time, sys; sys.path.insert(0, {ROOT!r})\n"
        "from granular.ensemble import run_ensemble\n"
        "t = time.perf_counter()\n"
        f"r = run_ensemble({scene!r}, {n}, {vary!r}, seed=1, chunk_size={chunk}, steps={steps}, backend={backend!r})\n"
        "print(len(r['body']), time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return {"n": int(out[0]), "chunk": chunk, "steps": steps, "wall_s": float(out[1]), "peak_rss_mb": float(out[2])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[1, 10, 100, 1000, 10000])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--loop", type=int, default=10, help="bodies run one by one for the loop baseline")
    p.add_argument("--schemes", nargs="+", default=list(SCHEMES), choices=list(SCHEMES))
    p.add_argument("--backend", default="cpu")
    p.add_argument("--rss", type=int, help="peak RSS of a heavy-top ensemble of this many bodies")
    p.add_argument("--chunk", type=int, nargs="+", default=[20000], help="chunk sizes for --rss")
    p.add_argument("--json", help="also write the rows to this JSON file")
    a = p.parse_args(argv)
    rows = []
    if a.rss:
        for c in a.chunk:
            r = rss(a.rss, c, a.steps, a.backend)
            rows.append(r)
            print(f"heavy top N={r['n']:>9,} chunk={c:>7,} steps={r['steps']}: {r['wall_s']:8.1f} s, "
                  f"peak RSS {r['peak_rss_mb']:7.0f} MB", flush=True)  # fmt: skip
    else:
        print(f"{'scheme':<13}{'N':>9}{'body-steps/s':>15}{'loop':>12}{'speed-up':>10}")
        for s in a.schemes:
            for r in throughput(s, a.n, a.steps, a.loop, a.backend):
                rows.append(r)
                print(f"{s:<13}{r['n']:>9,}{r['body_steps_per_s']:>15,.0f}{r['loop_body_steps_per_s']:>12,.0f}"
                      f"{r['speedup_vs_loop']:>10.1f}", flush=True)  # fmt: skip
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
