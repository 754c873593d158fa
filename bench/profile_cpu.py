"""Where a CPU step's time goes, instruction by instruction, with Linux ``perf``.

    python bench/profile_cpu.py [--workload spheres-friction] [--n 22] [--steps 2000]
                                [--threads 1] [--freq 4000] [--top 12] [--spacing 1]

Numba's compiled kernels have no symbols ``perf`` can read, and with every law and body
inlined (``inline="always"``) a whole block is one or two machine functions. This script
runs ``granular bench``'s workload (:func:`granular.particles.shapes.block_impact_builder`
with ``gap = 0.05``; ``spheres`` is the Hertz spheres) under ``perf record``. At the end
of the run the child writes the perf map of every compiled function
(``/tmp/perf-<pid>.map``) and copies the hottest functions' machine code out of its own
memory; the parent then:

- shares the samples among the functions (the compiled kernels, Python, the kernel);
- disassembles the hottest kernel (``objdump``) and puts each sample on its instruction;
- counts the samples that land on an instruction at most two after a square root or a
  division (``vsqrtsd``/``vdivsd``, single precision too). A sampled instruction is the
  one that waited, so this share is the time the step spent waiting on the divider unit
  (an estimate: a sample skids over one or two instructions);
- counts the square roots and divisions in the function's hot range and prints the hottest
  instructions with the ones before them.

Not part of the tests (it needs ``perf`` and ``objdump``, and a machine that lets a user
sample: ``kernel.perf_event_paranoid`` at most 2). ``docs/engine.md`` gives what it found.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from numba.core.registry import CPUDispatcher

from granular.backend import get_backend
from granular.benchmark import workload_builder
from granular.particles.integrators import ExplicitIntegrator

#: Instructions of the divider unit (double and single precision, scalar and packed).
DIVIDER = ("vsqrtsd", "vsqrtss", "vsqrtpd", "vsqrtps", "vdivsd", "vdivss", "vdivpd", "vdivps", "sqrtsd", "divsd")
#: How many instructions after one of them a sample still counts as waiting on it.
SKID = 2


def parse_listing(text: str) -> list[tuple[int, str]]:
    """``(address, instruction)`` of each line of an ``objdump -D`` listing, in order."""
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*(.*)", line)
        if m and m.group(3).strip():
            out.append((int(m.group(1), 16), m.group(3).strip()))
    return out


def attribute(samples: dict[int, int], listing: list[tuple[int, str]], skid: int = SKID) -> dict:
    """Samples per address put on ``listing``: the total, those at most ``skid``
    instructions after a :data:`DIVIDER` instruction, the divider instructions of the
    sampled range, and the samples by mnemonic."""
    index = {a: k for k, (a, _) in enumerate(listing)}
    known = {a: c for a, c in samples.items() if a in index}
    total = sum(known.values())
    waiting = 0
    mnemonics = collections.Counter()
    for a, c in known.items():
        k = index[a]
        mnemonics[listing[k][1].split()[0]] += c
        if any(listing[m][1].startswith(DIVIDER) for m in range(max(0, k - skid), k + 1)):
            waiting += c
    lo = min(known) if known else 0
    hi = max(known) if known else -1
    roots = sum(1 for a, ins in listing if lo <= a <= hi and "sqrt" in ins.split()[0])
    divisions = sum(1 for a, ins in listing if lo <= a <= hi and "div" in ins.split()[0] and ins.startswith("v"))
    return {"samples": total, "waiting_on_divider": waiting, "square_roots": roots, "divisions": divisions,
            "range": (lo, hi), "mnemonics": mnemonics}  # fmt: skip


def _child(args) -> None:
    """Run the workload, then write the perf map and the hottest functions' code."""
    model = workload_builder(args.workload, args.n, args.spacing).finalize(get_backend("cpu"))
    state = model.state()
    integ = ExplicitIntegrator("verlet")
    integ.advance(model, state, 1e-3, 60)
    t0 = time.perf_counter()
    integ.advance(model, state, 1e-3, args.steps)
    ms = 1e3 * (time.perf_counter() - t0) / args.steps
    entries = []
    for o in gc.get_objects():
        if isinstance(o, CPUDispatcher):
            for cres in o.overloads.values():
                try:
                    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
                except Exception:  # noqa: BLE001 - a function with no machine code of its own
                    continue
                if addr:
                    entries.append((addr, o.py_func.__name__))
    entries.sort()
    sizes = {}
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as f:
        for k, (a, name) in enumerate(entries):
            size = min((entries[k + 1][0] - a) if k + 1 < len(entries) else 1 << 20, 1 << 22)
            sizes[a] = size
            f.write(f"{a:x} {size:x} {name}\n")
    with open("/proc/self/mem", "rb") as mem:
        for a, name in entries:
            code = bytearray()
            pos = a
            while pos < a + sizes[a]:
                try:
                    mem.seek(pos)
                    chunk = mem.read(4096 - pos % 4096)
                except OSError:
                    break
                if not chunk:
                    break
                code += chunk
                pos += len(chunk)
            with open(os.path.join(args.dir, f"{a:x}.bin"), "wb") as f:
                f.write(code)
    with open(os.path.join(args.dir, "child.json"), "w") as f:
        json.dump({"pid": os.getpid(), "ms_per_step": ms, "N": model.n, "functions": entries}, f)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="spheres-friction",
                   choices=("spheres-friction", "block-friction", "block", "spheres"))  # fmt: skip
    p.add_argument("--n", type=int, default=22, help="block edge (N = n^3); the spheres: n^3 of them")
    p.add_argument("--steps", type=int, default=2000, help="steps sampled after 60 of warm-up")
    p.add_argument("--spacing", type=float, default=1.0,
                   help="spheres-friction only: the spheres this many diameters apart (3: no pair, the particles' "
                        "own cost)")  # fmt: skip
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--freq", type=int, default=4000, help="samples per second")
    p.add_argument("--top", type=int, default=12, help="hot instructions printed")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.spacing != 1.0 and args.workload != "spheres-friction":
        p.error(f"--spacing applies to the spheres-friction workload only, not {args.workload!r}")
    if args.child:
        _child(args)
        return 0
    missing = [t for t in ("perf", "objdump") if shutil.which(t) is None]
    if missing:
        print(f"profile_cpu: needs {' and '.join(missing)} on PATH (linux-tools, binutils)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "perf.data")
        env = {**os.environ, "NUMBA_NUM_THREADS": str(args.threads)}
        cmd = ["perf", "record", "-q", "-F", str(args.freq), "-o", data, sys.executable, os.path.abspath(__file__),
               "--child", "--dir", d, "--workload", args.workload, "--n", str(args.n), "--steps", str(args.steps),
               "--spacing", repr(args.spacing)]  # fmt: skip
        r = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(os.path.join(d, "child.json")):
            print(f"profile_cpu: perf record failed ({r.returncode}):\n{r.stderr[-2000:]}", file=sys.stderr)
            return 1
        with open(os.path.join(d, "child.json")) as f:
            child = json.load(f)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True).stdout
        by_symbol = collections.Counter()
        by_ip = collections.defaultdict(collections.Counter)
        for line in script.splitlines():
            parts = line.split(None, 1)
            if not parts:
                continue
            sym = parts[1].strip() if len(parts) > 1 else "[unknown]"
            by_symbol[sym] += 1
            by_ip[sym][int(parts[0], 16)] += 1
        total = sum(by_symbol.values())
        print(f"{args.workload}, N = {child['N']}, {args.threads} thread(s): {child['ms_per_step']:.3f} ms per step "
              f"under perf, {total} samples")  # fmt: skip
        print("\nsamples by function:")
        for sym, c in by_symbol.most_common(8):
            print(f"  {100 * c / total:5.1f} %  {sym}")
        kernels = {name: a for a, name in child["functions"]}
        hot = [s for s, _ in by_symbol.most_common() if s in kernels][:2]
        for name in hot:
            addr = kernels[name]
            listing = subprocess.run(["objdump", "-D", "-b", "binary", "-mi386:x86-64", f"--adjust-vma={addr:#x}",
                                      os.path.join(d, f"{addr:x}.bin")], capture_output=True, text=True).stdout  # fmt: skip
            ins = parse_listing(listing)
            got = attribute(by_ip[name], ins)
            n = got["samples"]
            if not n:
                continue
            print(f"\n{name}: {n} samples ({100 * n / total:.1f} % of all); {got['square_roots']} square roots and "
                  f"{got['divisions']} divisions in its sampled range of {got['range'][1] - got['range'][0]} bytes")  # fmt: skip
            print(f"  on an instruction at most {SKID} after a square root or a division: "
                  f"{100 * got['waiting_on_divider'] / n:.1f} %")  # fmt: skip
            print("  by mnemonic: " + ", ".join(f"{m} {100 * c / n:.1f} %" for m, c in got["mnemonics"].most_common(6)))
            index = {a: k for k, (a, _) in enumerate(ins)}
            print(f"  hottest instructions (offset in the function, samples, the {SKID} before):")
            for a, c in by_ip[name].most_common(args.top):
                k = index.get(a)
                if k is None:
                    continue
                before = "; ".join(x for _, x in ins[max(0, k - SKID):k])
                print(f"    +{a - addr:6x} {100 * c / n:5.1f} %  {ins[k][1]:<40s} after: {before}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
