"""``granular compile``: the kernels compiled one function per process, callees first, from
arguments of the types a run passes, so that a run afterwards compiles nothing."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from patience import PATIENCE

from granular import precompile
from granular.cli import main
from kernels import cpu

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("law", "meshes"), [("hertz", False), ("hertz-mindlin", False), ("linear", False),
                                             ("jkr", False), ("hertz-mindlin", True)])  # fmt: skip
def test_every_compiled_function_has_arguments_and_its_callees_come_first(law, meshes):
    """Each CPU kernel of each law (and of a law's mesh variant) gets one argument per
    parameter, of the types the run's bundles have (the same objects where the name says
    so), and every function that calls another compiled function is in a later wave than
    that function."""
    model, state, engine = precompile.sample(law, "cpu", "float64", meshes)
    assert model.kernels.law.NAME == law
    assert (model.kernels is cpu.for_law(model.kernels.law, meshes=True)) == meshes
    args = precompile.arguments(model, state, engine)
    d = model.kernels.dispatchers
    assert set(args) == set(d) and len(d) > 30
    b = engine.program.b
    for name, fn in d.items():
        params = list(inspect.signature(fn.py_func).parameters)
        assert len(args[name]) == len(params), name
        for p, a in zip(params, args[name]):
            if p in ("dyn", "par", "bonds", "contacts", "walls", "fields", "grid"):
                assert a is b[p], (name, p)
    levels = precompile._levels(model)
    assert levels["_direct_range"] == 1 + levels["_advance_lanes"] == 1  # the advance in lanes, compiled first
    assert levels["_block_parallel"] > levels["_block_steps_parallel"] > 0
    for name, fn in d.items():
        names = set(fn.py_func.__code__.co_names) | set(fn.py_func.__code__.co_freevars)
        for callee in names & (set(d) - {name}):
            assert levels[callee] < levels[name], (name, callee)


@pytest.mark.gpu
def test_every_gpu_kernel_has_arguments(gpu_backend):
    """The GPU kernels of a law (``kernels.cuda``) get one argument per parameter from
    the same table, the bundles of the GPU run's own engine; none calls another (one
    wave)."""
    model, state, engine = precompile.sample("hertz-mindlin", "gpu", "float64")
    args = precompile.arguments(model, state, engine)
    d = model.kernels.dispatchers
    assert set(args) == set(d) and {"_forces_kernel", "_grid_build_kernel", "_mesh_loads_kernel"} <= set(d)
    for name, fn in d.items():
        assert len(args[name]) == len(inspect.signature(fn.py_func).parameters), name
    assert set(precompile._levels(model).values()) == {0}


_RUN = """
import json, sys
import numpy as np
import numba
from numba import typeof
from granular import precompile
from granular.compiling import WATCH
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.shapes import block_impact_builder

law, precision = sys.argv[1], sys.argv[2]
ran = {}
for n in (3, 10):  # 27 particles: the serial functions; 1000: the parallel ones
    m = block_impact_builder(n, gap=0.05, friction=law != "hertz").finalize("cpu", dtype=np.dtype(precision))
    s = m.state()
    ExplicitIntegrator("verlet").advance(m, s, 1e-3, 30)
    m.diagnostics(s)
    m.wall_loads(s)
    for name, fn in m.kernels.dispatchers.items():
        ran.setdefault(name, set()).update(str(tuple(sig)) for sig in fn.signatures)
table = {name: str(tuple(typeof(a) for a in args))
         for name, args in precompile.arguments(*precompile.sample(law, "cpu", precision)).items()}
print(json.dumps({"compilations": WATCH.count, "threads": numba.get_num_threads(),
                  "ran": {k: sorted(v) for k, v in ran.items() if v}, "table": table}))
"""


def _run(law, precision, cache=None):
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "GRANULAR_THREADS": "fixed"}
    if cache is not None:
        env["GRANULAR_KERNEL_CACHE"] = str(cache)
    r = subprocess.run([sys.executable, "-c", _RUN, law, precision], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=PATIENCE, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("law", "precision"), [("hertz", "float64"), ("hertz", "float32"),
                                                ("hertz-mindlin", "float64")])  # fmt: skip
def test_the_arguments_have_the_types_a_run_passes(law, precision):
    """Every kernel a run of a small (serial) and a larger (parallel, two threads) block
    calls from Python, with its diagnostics and wall loads, is called with exactly the
    argument types :func:`granular.precompile.arguments` gives it: what ``granular
    compile`` compiles is what the run loads."""
    got = _run(law, precision)
    assert got["threads"] == 2
    assert {"_block_serial", "_block_parallel", "_diagnostics_range", "_wall_loads_range"} <= set(got["ran"])
    for name, sigs in got["ran"].items():
        assert sigs == [got["table"][name]], name


@pytest.mark.long
def test_a_run_after_granular_compile_compiles_nothing(tmp_path):
    """``granular compile`` of the Hertz law in float64, into an empty kernel cache, fills
    it with every function a block run calls, serial and parallel: a process that then
    steps a small and a larger block and takes their diagnostics and wall loads compiles
    nothing (on 2 cores: some 100 s of compiling)."""
    cache = tmp_path / "cache"
    env = {**os.environ, "GRANULAR_KERNEL_CACHE": str(cache)}
    r = subprocess.run([sys.executable, "-m", "granular", "compile", "--law", "hertz", "--precision", "float64"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=4 * PATIENCE, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "_direct_range" in r.stdout and "_block_parallel" in r.stdout and "40 functions in" in r.stdout
    got = _run("hertz", "float64", cache)
    assert got["compilations"] == 0 and got["threads"] == 2


def test_bad_arguments_are_refused_by_name(capsys):
    assert main(["compile", "--law", "hertz,nope"]) == 2
    assert main(["compile", "--precision", "float16"]) == 2
    assert main(["compile", "--jobs", "0"]) == 2
    err = capsys.readouterr().err
    assert "--law" in err and "'hertz,nope'" in err and "--precision" in err and "--jobs: must be >= 1" in err


def test_quiet_prints_nothing_and_log_json_prints_events(capsys):
    """With the kernels in the cache (the cases above compiled them), ``--quiet`` prints
    nothing and ``--log-json`` one JSON line a function between ``start`` and ``end``;
    after the first call every function is in the cache, so the second one says that it
    loaded each (``loaded``) and compiled none."""
    assert main(["compile", "--law", "hertz", "--jobs", "1", "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["compile", "--law", "hertz", "--jobs", "1", "--log-json"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert events[0]["event"] == "start" and events[-1]["event"] == "end"
    compiled = events[1:-1]
    assert len(compiled) == events[0]["functions"] == events[-1]["functions"] > 30
    assert all(e["event"] == "compiled" for e in compiled) and compiled[-1]["done"] == compiled[-1]["total"]
    assert all(e["loaded"] and not e["meshes"] for e in compiled) and events[-1]["loaded"] == len(compiled)
