"""First runs: the kernel cache is shared by every copy of the package, each CPU kernel is
compiled once per argument types, compilation is announced and timed apart from stepping."""

import ast
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from patience import PATIENCE
from scene_texts import drop_scene

from granular import compiling
from granular.run.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"

_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import kernels.cache as c, kernels.cpu as k
k._chunk(1, 8, 100)
s = k._chunk.stats
print(json.dumps({"file": k.__file__, "dir": c.cache_dir(), "hits": sum(s.cache_hits.values()),
                  "misses": sum(s.cache_misses.values())}))
"""


def _probe(root, cache, tmp_path):
    env = {**os.environ, "GRANULAR_KERNEL_CACHE": str(cache)}
    env.pop("XDG_CACHE_HOME", None)
    r = subprocess.run([sys.executable, "-c", _PROBE, str(root)], env=env, cwd=tmp_path, capture_output=True,
                       text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_every_copy_of_the_package_shares_one_kernel_cache(tmp_path):
    """A kernel compiled by one copy (a checkout) is loaded, not compiled, by another copy
    at another path (an installed package): the cache folder is keyed by the kernel
    sources, not by where they lie; an edited kernel source gets a folder of its own."""
    cache = tmp_path / "cache"
    copy = tmp_path / "site" / "packages"
    shutil.copytree(KERNELS, copy / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    first = _probe(ROOT, cache, tmp_path)
    second = _probe(copy, cache, tmp_path)
    assert Path(first["file"]).parent == KERNELS and Path(second["file"]).parent == copy / "kernels"
    assert first["dir"] == second["dir"] and Path(first["dir"]).parent == cache
    assert first["misses"] == 1 and first["hits"] == 0  # compiled into the fresh cache
    assert second["misses"] == 0 and second["hits"] == 1  # loaded by the other copy
    with open(copy / "kernels" / "grid.py", "a") as fh:
        fh.write("\n# an edit\n")
    third = _probe(copy, cache, tmp_path)
    assert third["dir"] != first["dir"] and third["misses"] == 1


def test_the_default_cache_is_the_users_not_the_packages(tmp_path):
    from kernels import cache

    env = {k: v for k, v in os.environ.items() if k != "GRANULAR_KERNEL_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    r = subprocess.run([sys.executable, "-c", "import kernels.cache as c; print(c.cache_dir())"], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()) == tmp_path / "xdg" / "granular" / f"kernels-{cache.sources_digest()}"


def _cuda_probe(law, cache):
    """``tests/cuda_cache_probe.py`` in a process of its own (NVVM, no device)."""
    env = {**os.environ, "GRANULAR_KERNEL_CACHE": str(cache)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("cuda_cache_probe.py")), law], env=env,
                       cwd=ROOT, capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    if r.returncode != 0 and any(s in r.stderr for s in ("nvrtc", "NVVM", "libnvvm", "CudaSupportError")):
        pytest.skip(f"no CUDA compiler libraries here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_gpu_kernel_is_compiled_once_per_law_and_then_loaded(tmp_path):
    """A GPU kernel compiled by one process is loaded from the kernel cache by the next
    (the same PTX), under the law's name: the same kernel source made for another law is
    an entry of its own, not the first law's code."""
    cache = tmp_path / "cache"
    first = _cuda_probe("hertz", cache)
    second = _cuda_probe("hertz", cache)
    other = _cuda_probe("hertz-mindlin", cache)
    assert Path(first["dir"]).parent == cache
    assert (first["misses"], first["hits"]) == (1, 0)
    assert (second["misses"], second["hits"]) == (0, 1) and second["ptx"] == first["ptx"]
    assert (other["misses"], other["hits"]) == (1, 0)


def _compiled_functions(path):
    """Names of the functions decorated ``@kernel`` or ``@parallel`` in ``path``, and
    every call between two of them with a literal argument: ``(line, callee, literal)``."""
    tree = ast.parse(path.read_text())
    compiled = {}
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            names = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
            if names & {"kernel", "parallel", "_kernel", "_parallel"}:
                compiled[fn.name] = fn
    found = []
    for fn in compiled.values():
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in compiled:
                for arg in node.args:
                    if isinstance(arg, ast.Constant):
                        found.append((node.lineno, node.func.id, arg.value))
    return compiled, found


def test_compiled_cpu_kernels_pass_no_literal_to_each_other():
    """A literal ``0`` or ``True`` passed from one compiled function to another is typed
    ``Literal[int](0)``: the callee would be compiled a second time beside the launchers'
    ``int64`` call from Python (the force loop alone: 20 s of a first run on 2 cores)."""
    compiled, found = _compiled_functions(KERNELS / "cpu.py")
    assert {"_forces_range", "_steps_serial", "_block_serial", "_rebuild_serial"} <= set(compiled)
    assert not found, f"kernels/cpu.py: literal arguments between compiled functions at {found}"


def test_the_literal_check_finds_a_literal(tmp_path):
    p = tmp_path / "k.py"
    p.write_text("@kernel\ndef a(lo, x):\n    return x\n\n@kernel\ndef b(x):\n    return a(0, x)\n")
    assert _compiled_functions(p)[1] == [(7, "a", 0)]


def test_parallel_chunks_have_integer_bounds():
    """``prange`` hands the chunk number over unsigned; the chunk's bounds must stay
    int64 (mixed with signed counts Numba promotes them to float64, and every range
    function would be compiled again for float bounds)."""
    from numba import njit, prange, types

    from kernels import cpu

    @njit(parallel=True)
    def spread(nchunks, out):
        for c in prange(nchunks):
            lo, hi = cpu._chunk(c, nchunks, out.shape[0])
            for i in range(lo, hi):
                out[i] = c

    out = np.full(100, -1)
    spread(16, out)
    assert (out >= 0).all()
    sigs = cpu._chunk.nopython_signatures
    assert sigs, "the chunk function was not compiled"
    for sig in sigs:
        assert sig.return_type == types.UniTuple(types.int64, 2), sig


# --------------------------------------------------------------------- the notice and the rates


def _fake_compile(seconds):
    """What a compilation looks like to the watch (the ``numba:compile`` event), taking
    ``seconds``."""
    compiling.WATCH.on_start(None)
    time.sleep(seconds)
    compiling.WATCH.on_end(None)


def test_a_real_compilation_is_counted_once_and_a_cached_load_is_not():
    from numba import njit

    @njit
    def inner(x):
        return x + 1

    @njit
    def outer(x):
        return inner(x) * 2

    n0, s0 = compiling.WATCH.count, compiling.WATCH.seconds
    assert outer(1) == 4
    assert compiling.WATCH.count == n0 + 1  # inner compiled inside outer: one outermost compilation
    assert compiling.WATCH.seconds > s0
    assert outer(2) == 6 and compiling.WATCH.count == n0 + 1


def test_the_notice_in_a_log_says_it_once_and_times_the_compilation():
    stream = io.StringIO()
    with compiling.CompileNotice(stream=stream) as notice:
        _fake_compile(0.2)
        _fake_compile(0.1)
    text = stream.getvalue()
    assert text.count("granular: compiling the kernels for this run (once: later runs load them from") == 1
    assert "later runs load them from" in text
    assert 0.3 <= notice.total < 0.3 + 1.0


def test_the_notice_on_a_terminal_counts_the_seconds_and_clears_its_line():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    stream = Tty()
    with compiling.CompileNotice(stream=stream):
        _fake_compile(1.3)
    text = stream.getvalue()
    assert "\rgranular: compiling" in text and " ... 1 s" in text
    assert text.endswith("\r")  # cleared for the progress bar


def test_the_notice_is_silent_when_quiet_and_json_with_log_json(capsys):
    quiet = io.StringIO()
    with compiling.CompileNotice(stream=quiet, quiet=True):
        _fake_compile(0.05)
    assert quiet.getvalue() == ""
    with compiling.CompileNotice(stream=io.StringIO(), log_json=True):
        _fake_compile(0.05)
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["state"] for e in events] == ["start", "end"] and all(e["event"] == "compile" for e in events)
    assert events[1]["seconds"] >= 0.05


def test_the_progress_rate_leaves_out_a_compilation_between_steps():
    stream = io.StringIO()
    p = Progress(100, stream=stream, min_seconds=0.0)
    p.update(0, 0.0, 0)  # the mark
    _fake_compile(0.6)
    time.sleep(0.1)
    p.last = 0.0
    p.update(10, 1.0, 0)
    rate = float(stream.getvalue().split("steps/s")[0].split()[-1].replace(",", ""))
    assert rate > 10 / 0.6  # with the compilation counted, 10 steps in 0.7 s would be 14 steps/s


DROP = drop_scene('dt = 2e-4\nsteps = 200\nbackend = "cpu"')


@pytest.fixture
def small_scene(tmp_path):
    scene = tmp_path / "drop.toml"
    scene.write_text(DROP)
    return scene


def test_run_json_reports_compilation_apart_from_stepping(small_scene, tmp_path, monkeypatch):
    """``run.json`` has ``compile_time_s``; ``steps_per_s`` counts the stepping only, and
    the console line says how long the kernels took to compile."""
    from granular.cli import main
    from granular.run import runner as runner_module

    real_advance = runner_module.Runner._advance

    def advance_with_a_compilation(self, n):
        if self.system.step_count == self.first_step:
            _fake_compile(1.5)  # as the first block would, on a cold cache
        return real_advance(self, n)

    monkeypatch.setattr(runner_module.Runner, "_advance", advance_with_a_compilation)
    out = tmp_path / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(small_scene), "--out", str(out)]) == 0
    info = json.loads((out / "run.json").read_text())
    assert info["compile_time_s"] >= 1.5
    assert info["wall_time_s"] >= 1.5
    stepping = info["wall_time_s"] - 1.5
    assert info["steps_per_s"] >= info["steps"] / stepping * 0.999
    assert "kernels compiled in" in buf.getvalue() and "(once)" in buf.getvalue()


# --------------------------------------------------------------------- progress of the other commands


def test_the_ensemble_rate_leaves_out_the_first_chunks_compilation():
    """A cold first ensemble compiled for minutes before its first few steps: counted as
    stepping time, its first estimate said hours left for a five-minute run."""
    from granular.ensemble import Progress

    now = [0.0]
    out = io.StringIO()
    p = Progress(100, 1000, 4, stream=out, first=2.0, every=10.0, clock=lambda: now[0])
    p.start([])
    _fake_compile(1.0)  # real seconds; the fake clock below says 2.5 s passed in all
    now[0] = 2.5
    p.stepper(0, 25)(100)  # 2,500 body-steps
    rate = float(out.getvalue().split("body-steps/s")[0].split()[-1].replace(",", ""))
    assert rate >= 2500 / 1.5 * 0.99  # 2500 / 2.5 = 1,000 with the compilation counted


def _fake_study(values):
    from granular.validation.report import Check, Report

    def run(quick=False, backend="cpu"):
        checks = []
        for i, v in enumerate(values):
            time.sleep(0.05)
            checks.append(Check(f"figure {i}", v, None, 1.0))
        return Report("fake", checks, seconds=0.1)

    return type("Study", (), {"run": staticmethod(run)})


def test_validate_prints_each_figure_as_it_is_measured_and_estimates_from_the_last_run(tmp_path, monkeypatch,
                                                                                       capsys):  # fmt: skip
    from granular import cli

    monkeypatch.setenv("GRANULAR_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(cli.STUDIES, "fake", "fake")
    monkeypatch.setattr(cli, "get_study", lambda name: _fake_study([0.5, 2.0]))
    assert cli.main(["validate", "fake", "--quick"]) == 1  # figure 1 fails its bound
    first = capsys.readouterr()
    assert "granular validate fake (quick, cpu): no estimate yet" in first.err
    assert "  [1] ok   figure 0: 0.5" in first.err and "  [2] FAIL figure 1: 2" in first.err
    assert "granular validate fake: FAIL" in first.out and "[1]" not in first.out  # progress on stderr only
    history = json.loads((tmp_path / "cache" / "validate" / "fake-quick-cpu.json").read_text())
    assert history["checks"] == 2 and history["seconds"] > 0
    assert cli.main(["validate", "fake", "--quick"]) == 1
    second = capsys.readouterr().err
    assert "2 figures; about 0 s here last time" in second
    assert "  [1/2] ok   figure 0" in second and "left)" in second and "[2/2] FAIL" in second
    assert cli.main(["validate", "fake", "--quick", "--quiet"]) == 1
    assert capsys.readouterr().err == ""


def test_validate_says_when_it_is_still_measuring(tmp_path, monkeypatch):
    from granular.validation import live
    from granular.validation.report import Check

    stream = io.StringIO()
    monkeypatch.setattr(live.LiveChecks, "quiet_after", 0.5)
    with live.LiveChecks("slow", "full", stream=stream, history=str(tmp_path / "h.json")):
        time.sleep(1.8)
        Check("late figure", 0.1, None, 1.0)
    text = stream.getvalue()
    assert "  ... still measuring (" in text and "[1] ok   late figure" in text


def test_validate_log_json_prints_json_lines_only(tmp_path, monkeypatch, capsys):
    from granular import cli

    monkeypatch.setenv("GRANULAR_KERNEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setitem(cli.STUDIES, "fake", "fake")
    monkeypatch.setattr(cli, "get_study", lambda name: _fake_study([0.5, 2.0]))
    assert cli.main(["validate", "fake", "--quick", "--log-json"]) == 1
    out = capsys.readouterr()
    events = [json.loads(line) for line in out.out.splitlines()]
    assert [e["event"] for e in events] == ["start", "figure", "figure", "end"], events
    assert events[0]["study"] == "fake" and events[0]["figures_expected"] is None
    assert events[1]["check"] == "figure 0" and events[1]["passed"] and not events[2]["passed"]
    assert events[3]["passed"] is False and len(events[3]["checks"]) == 2
    assert out.err == ""
    assert cli.main(["validate", "fake", "--quick", "--log-json"]) == 1  # now with the last run's length
    start = json.loads(capsys.readouterr().out.splitlines()[0])
    assert start["figures_expected"] == 2 and start["seconds_expected"] >= 0


_FUNCTION_IDS = """
import sys
sys.path.insert(0, sys.argv[1])
import kernels.cache  # noqa: F401
from numba import njit

@njit
def f(x):
    return x + 1

f(1.0)
print(next(iter(f.overloads.values())).fndesc.mangled_name)
"""


def test_functions_compiled_in_two_processes_never_share_a_symbol(tmp_path):
    """Numba numbers functions from 1 in every process: two processes that compiled two
    laws' closures in the same order named different code alike, and a process that
    loaded both from the cache had two definitions of one symbol. With the kernels'
    cache imported, each process numbers from its own random offset."""
    root = str(Path(__file__).resolve().parents[1])
    script = tmp_path / "ids.py"
    script.write_text(_FUNCTION_IDS)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    names = [subprocess.run([sys.executable, str(script), root], capture_output=True, text=True, env=env,
                            check=True).stdout.strip() for _ in range(2)]  # fmt: skip
    assert all(n.startswith("_ZN") for n in names)  # each process printed a mangled name
    assert names[0] != names[1]
