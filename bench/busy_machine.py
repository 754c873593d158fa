"""The CPU engine on an idle and on a busy machine: the Hertz spheres with and without one
competing busy process.

    python bench/busy_machine.py [--n 22] [--windows 30] [--steps 200] [--rounds 2]
                                 [--set-ups measured,fixed,one] [--json rows.json]

For each round and set-up it runs, in a fresh process each, ``granular bench``'s Hertz
spheres (:func:`granular.benchmark.spheres_builder`, ``N = n³``, ``h = 1e-3``, 60 steps
to warm up) for ``windows`` windows of ``steps`` steps on one continuing state, first on
the idle machine and then beside one busy process (``python -c "while True: pass"``,
started before and stopped after the run), and prints the median ms per step of the
second half of the windows (the engine's thread tuning has settled by then) with the
extremes. Set-ups: ``measured`` (the default: the engine times its blocks and keeps the
fastest thread count, ``docs/engine.md`` "Threads on a busy machine"), ``fixed``
(``GRANULAR_THREADS=fixed``: all threads, always) and ``one`` (``NUMBA_NUM_THREADS=1``).
The rounds alternate the set-ups, so a change of the machine's load between them shows as
spread, not as a difference. Not part of the tests (it loads the machine on purpose); the
issue's goal is "no more than 2× slower than idle with one competing process".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SETUPS = {"measured": {}, "fixed": {"GRANULAR_THREADS": "fixed"}, "one": {"NUMBA_NUM_THREADS": "1"}}


def windows(n: int, count: int, steps: int) -> list[float]:
    """ms per step of ``count`` windows of ``steps`` steps of the Hertz spheres (this process)."""
    from granular.backend import get_backend
    from granular.benchmark import spheres_builder
    from granular.particles.integrators import ExplicitIntegrator

    model = spheres_builder(n**3).finalize(get_backend("cpu"))
    state = model.state()
    integ = ExplicitIntegrator("verlet")
    integ.advance(model, state, 1e-3, 60)
    out = []
    for _ in range(count):
        t0 = time.perf_counter()
        integ.advance(model, state, 1e-3, steps)
        out.append((time.perf_counter() - t0) / steps * 1e3)
    return out


def run_once(setup: str, loaded: bool, args) -> list[float]:
    """The windows of one fresh process with ``setup``'s environment, beside a busy
    process when ``loaded``."""
    env = {**os.environ, **SETUPS[setup]}
    cmd = [sys.executable, __file__, "--child", "--n", str(args.n), "--windows", str(args.windows), "--steps",
           str(args.steps)]  # fmt: skip
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if loaded else None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=22, help="block edge: N = n³ spheres (default 22)")
    p.add_argument("--windows", type=int, default=30, help="windows per run (default 30)")
    p.add_argument("--steps", type=int, default=200, help="steps per window (default 200)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    p.add_argument("--set-ups", default="measured,fixed,one", help="of measured, fixed, one (default all)")
    p.add_argument("--json", default=None, help="write the rows here")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.n < 2 or args.windows < 2 or args.steps < 1 or args.rounds < 1:
        p.error("--n must be >= 2, --windows >= 2, --steps and --rounds >= 1")
    if args.child:
        print(json.dumps(windows(args.n, args.windows, args.steps)))
        return 0
    setups = [s.strip() for s in args.set_ups.split(",") if s.strip()]
    if not setups or set(setups) - set(SETUPS):
        p.error(f"--set-ups: of {', '.join(SETUPS)}, got {args.set_ups!r}")
    rows = []
    print(f"Hertz spheres, N = {args.n**3}, {os.cpu_count()} cores; ms per step, median of the last "
          f"{args.windows - args.windows // 2} of {args.windows} windows of {args.steps} steps (min-max)")  # fmt: skip
    print(f"{'round':>5} {'set-up':<9} {'idle':>22} {'loaded':>22} {'loaded/idle':>12}")
    for k in range(args.rounds):
        for setup in setups:
            got = {}
            for loaded in (False, True):
                ts = run_once(setup, loaded, args)[args.windows // 2:]
                got[loaded] = (statistics.median(ts), min(ts), max(ts))
            (a, alo, ahi), (b, blo, bhi) = got[False], got[True]
            print(f"{k + 1:>5} {setup:<9} {a:>7.3f} ({alo:.3f}-{ahi:.3f}) {b:>7.3f} ({blo:.3f}-{bhi:.3f}) "
                  f"{b / a:>11.2f}x")  # fmt: skip
            rows.append({"round": k + 1, "setup": setup, "n": args.n**3, "idle_ms": a, "loaded_ms": b,
                         "idle_range": [alo, ahi], "loaded_range": [blo, bhi], "ratio": b / a})  # fmt: skip
    for setup in setups:
        r = [row["ratio"] for row in rows if row["setup"] == setup]
        print(f"{setup}: loaded/idle {np.median(r):.2f}x (rounds: {', '.join(f'{x:.2f}' for x in r)})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"results": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
