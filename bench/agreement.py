"""CPU/GPU agreement of the particle engine, with and without CUDA graphs.

The torus impact (paper 003) and a bonded block impact are run on the CPU and on the GPU
(graph replay and eager launches) from the same initial state; the script prints the
largest differences of positions, velocities, orientations and the total energy, and
whether graph replay equals eager launches bit for bit. CPU and GPU differ in the last
bits (fused multiply-adds, libdevice), which a chaotic impact amplifies with time, so
the differences are reported at several step counts. Then the torus's energy error in
each precision on both backends: the largest ``|E(t) - E(0)| / E(0)`` over the run to
``--energy-time`` (default 25, the paper's run) at h = 5e-4, sampled every 100 steps.

    python bench/agreement.py [--json out.json] [--steps 100,1000,3000] [--energy-time 25]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import granular as gr
from granular.backend import BackendError
from granular.io.jsonio import dumps
from granular.particles.shapes import block_impact_builder
from granular.validation.torus_setup import torus_builder


def run(builder, backend, h, steps, graphs=True, dtype=np.float64):
    model = builder().finalize(backend, dtype=dtype)
    state = model.state()
    gr.ExplicitIntegrator("verlet", graphs=graphs).advance(model, state, h, steps)
    be = model.backend
    out = {k: be.to_host(getattr(state, k)).astype(np.float64) for k in ("x", "v", "q", "omega")}
    out["energy"] = gr.diagnostics.total_energy(model, state)
    return out


def energy_drift(builder, backend, h, t_end, dtype=np.float64, every=100) -> float:
    """Largest ``|E(t) - E(0)| / |E(0)|`` of ``builder``'s model on ``backend`` over
    ``t_end``, sampled every ``every`` steps (the energy summed in float64)."""
    model = builder().finalize(backend, dtype=dtype)
    state = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    e0 = gr.diagnostics.total_energy(model, state)
    worst, done, total = 0.0, 0, round(t_end / h)
    while done < total:
        k = min(every, total - done)
        integ.advance(model, state, h, k)
        done += k
        worst = max(worst, abs(gr.diagnostics.total_energy(model, state) - e0))
    return worst / abs(e0)


def compare(a, b) -> dict:
    d = {k: float(np.abs(a[k] - b[k]).max()) for k in ("x", "v", "q", "omega")}
    d["energy"] = abs(a["energy"] - b["energy"])
    d["bitwise"] = all(np.array_equal(a[k], b[k]) for k in ("x", "v", "q", "omega"))
    return d


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", default="100,1000,3000")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--energy-time", type=float, default=25.0, help="end time of the torus energy runs")
    p.add_argument("--precision", default="float64,float32", help="comma list of float64, float32")
    args = p.parse_args(argv)
    dtypes = [np.dtype(d.strip()).type for d in args.precision.split(",")]
    try:
        gpu = gr.get_backend("gpu")
    except BackendError as exc:
        print(f"no GPU backend: {exc}")
        return 0
    cases = {"torus": (torus_builder, 5e-4), "block_22": (lambda: block_impact_builder(22, gap=0.05), 1e-3)}
    rows = []
    for name, (builder, h) in cases.items():
        for steps in (int(s) for s in args.steps.split(",")):
            for dtype in dtypes:
                cpu = run(builder, "cpu", h, steps, dtype=dtype)
                graph = run(builder, gpu, h, steps, graphs=True, dtype=dtype)
                eager = run(builder, gpu, h, steps, graphs=False, dtype=dtype)
                row = {"case": name, "steps": steps, "dtype": np.dtype(dtype).name,
                       "cpu_vs_gpu": compare(cpu, graph), "graph_vs_eager": compare(graph, eager)}  # fmt: skip
                rows.append(row)
                c, g = row["cpu_vs_gpu"], row["graph_vs_eager"]
                print(f"{name:<9} {steps:>6} {row['dtype']:<8} CPU-GPU: |dx| {c['x']:.2e} |dv| {c['v']:.2e} "
                      f"|dq| {c['q']:.2e} |dE| {c['energy']:.2e}   graphs == eager: {g['bitwise']}", flush=True)  # fmt: skip
    drift = {}
    for be in ("cpu", gpu):
        for dtype in dtypes:
            key = f"{'cpu' if be == 'cpu' else 'gpu'} {np.dtype(dtype).name}"
            drift[key] = energy_drift(torus_builder, be, 5e-4, args.energy_time, dtype)
            print(f"torus energy error to t = {args.energy_time:g}, {key}: {drift[key]:.2e}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(dumps({"device": gpu.device, "rows": rows, "torus_energy_error": drift}, indent=2))
    return 0 if all(r["graph_vs_eager"]["bitwise"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
