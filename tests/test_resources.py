"""Memory checked before allocating (issue 15, item 4): host and GPU, by particles, bonds
and neighbour capacity, with a message naming what is needed and what is available."""

import os
import resource
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from granular import cli, resources
from granular.benchmark import model_bytes
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.shapes import block_impact_builder
from granular.resources import ResourceError, bytes_per_item, check_memory, memory_needed
from granular.run import command
from patience import PATIENCE

ROOT = os.path.join(os.path.dirname(__file__), "..")
BLOCK = os.path.join(ROOT, "scenes", "block_impact.toml")


def block(tmp_path, edge):
    path = tmp_path / f"block{edge}.toml"
    path.write_text(open(BLOCK).read().replace("shape = [10, 10, 10]", f"shape = [{edge}, {edge}, {edge}]"))
    return str(path)


def test_per_item_bytes_and_totals():
    b64, b32 = bytes_per_item(np.float64), bytes_per_item(np.float32)
    assert all(b32[k] <= b64[k] for k in b64) and b32["particle_device"] < b64["particle_device"]
    cpu = memory_needed(10**6, 3 * 10**6, 16, np.float64, "cpu")
    gpu = memory_needed(10**6, 3 * 10**6, 16, np.float64, "gpu")
    assert cpu["device"] == 0 and gpu["device"] > 0
    # the CPU's direct pass adds its running sums and a result slot per listed slot
    b = bytes_per_item(np.float64)
    direct = 10**6 * (b["particle_direct"] + 16 * b["slot_pair_pass"]) + 3 * 10**6 * b["bond_table"]
    assert cpu["host"] == pytest.approx(gpu["host"] + gpu["device"] - resources.DEVICE_BASELINE + direct)
    # the calibration of the module docstring: about 2.7 kB per particle of a bonded
    # block on a GPU, 3.8 kB on the CPU, and on the CPU at most 0.35 kB more for the
    # per-bond pass's table (one row a bond, a random packing; a lattice has a few)
    per = (gpu["host"] + gpu["device"] - resources.DEVICE_BASELINE - resources.HOST_BASELINE) / 10**6
    assert 2400 < per < 3100
    assert 3500 < (cpu["host"] - resources.HOST_BASELINE) / 10**6 < 4200 + 3 * b["bond_table"]
    # the simulator's "GPU" arrays live on the host
    assert memory_needed(10, 0, 0, np.float64, "gpu", simulated=True)["device"] == 0


def test_400_cubed_block_is_refused_at_once(tmp_path):
    """6.4e7 particles, 1.9e8 bonds: refused before any particle is placed (the command's
    peak memory stays below what 6.4e7 positions alone would take, 1.5 GB: a measure of
    work that does not depend on the machine's load), naming both figures; nothing is
    written."""
    out = tmp_path / "o"
    # the command's own peak memory, from a parent that has no other child
    measure = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")
    r = subprocess.run([sys.executable, "-c", measure, sys.executable, "-m", "granular", "run", block(tmp_path, 400),
                        "--out", str(out)], capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    peak_kib = int(r.stderr.strip().splitlines()[-1])
    assert r.returncode == 2 and "Traceback" not in r.stderr
    need = memory_needed(400**3, 3 * 400**3, resources.NEIGHBOR_CAPACITY, np.float64, "cpu")["host"]
    assert f"(64,000,000 particles, 192,000,000 bonds, float64) needs about {need / 1e9:.3g} GB of host memory;" in r.stderr
    assert "GB are available" in r.stderr
    assert not out.exists()
    assert peak_kib < 1.5e9 / 1024, f"peak memory {peak_kib} KiB"  # ru_maxrss is in KiB on Linux


def test_under_ulimit_the_limit_is_what_is_available(tmp_path):
    limit = 4 * 2**30

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    r = subprocess.run([sys.executable, "-m", "granular", "run", block(tmp_path, 150), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=PATIENCE, preexec_fn=cap)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    need = memory_needed(150**3, 3 * 150**3, resources.NEIGHBOR_CAPACITY, np.float64, "cpu")["host"]
    assert f"needs about {need / 1e9:.3g} GB of host memory" in r.stderr and "(ulimit -v)" in r.stderr


def test_check_names_host_and_gpu_figures(monkeypatch):
    monkeypatch.setattr(resources, "host_memory_available", lambda: (2 * 10**8, "the cgroup's memory limit"))
    with pytest.raises(ResourceError, match=r"needs about 0\.\d+ GB of host memory; 0\.2 GB are available "
                                            r"\(the cgroup's memory limit\)"):  # fmt: skip
        check_memory(10**5, 0, 16, np.float64, type("B", (), {"name": "cpu"})())

    class FakeGPU:
        name, simulated, device = "gpu", False, "a 1 GB test GPU"

    monkeypatch.setattr(resources, "host_memory_available", lambda: (10**12, "available memory"))
    monkeypatch.setattr(resources, "device_memory_available", lambda backend: 10**9)
    with pytest.raises(ResourceError, match=r"needs about \d\.\d+ GB of GPU memory; 1 GB are free on a 1 GB test GPU"):
        check_memory(5 * 10**6, 0, 16, np.float64, FakeGPU())
    assert check_memory(10**5, 0, 16, np.float64, FakeGPU())["available"]["device"] == 10**9


def test_memory_error_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    def no_memory(*a, **k):
        raise MemoryError("Unable to allocate 89.4 GiB for an array with shape (64000000, 3, 3)")

    monkeypatch.setattr(command, "build_model", no_memory)  # the name `granular run` calls
    assert cli.main(["run", BLOCK, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("granular run: error: out of memory (MemoryError: Unable to allocate 89.4 GiB")
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_a_bodies_scene_too_large_for_memory_is_refused_before_any_array(tmp_path):
    """10^7 heavy tops under a 2 GB ``ulimit -v``: refused naming the bodies, the figure
    and the limit, before the scene's arrays are made; nothing is written."""
    limit = 2 * 2**30
    scene = tmp_path / "tops.toml"
    text = open(os.path.join(ROOT, "scenes", "livens_heavy_top.toml")).read()
    assert "[bodies]" in text and "count" not in text.split("[bodies]")[1].split("[")[0]
    scene.write_text(text.replace("[bodies]\n", "[bodies]\ncount = 10000000\n", 1))

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = tmp_path / "o"
    r = subprocess.run([sys.executable, "-m", "granular", "run", str(scene), "--out", str(out), "--steps", "2"],
                       capture_output=True, text=True, timeout=PATIENCE, preexec_fn=cap)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    need = resources.HOST_BASELINE + 10**7 * resources.BODY_HOST_BYTES // 2  # what any backend needs on the host
    assert f"bodies.count: this table (10,000,000 bodies) needs about {need / 1e9:.3g} GB of host memory" in r.stderr
    assert "(ulimit -v)" in r.stderr and not out.exists()


def test_body_memory_figures_by_backend(monkeypatch):
    from granular.backend import get_backend

    monkeypatch.setattr(resources, "host_memory_available", lambda: (10**10, "available memory"))
    cpu = get_backend("cpu")
    assert resources.check_body_memory(10**6, cpu)["needed"]["host"] == resources.HOST_BASELINE + 4096 * 10**6
    with pytest.raises(ResourceError, match=r"the scene \(3,000,000 bodies\) needs about 12.6 GB of host memory"):
        resources.check_body_memory(3 * 10**6, cpu)


def test_a_bodies_run_without_disk_room_is_refused_before_it_starts(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(resources.shutil, "disk_usage", lambda path: SimpleNamespace(free=10**5))
    out = tmp_path / "o"
    code = cli.main(["run", os.path.join(ROOT, "scenes", "livens_heavy_top.toml"), "--out", str(out), "--steps", "20"])
    err = capsys.readouterr().err
    assert code == 2 and "needs about" in err and "of disk" in err and "bodies" in err
    assert not (out / "series.csv").exists()


def test_the_dissipative_law_memory_is_counted():
    """The springs, their copies and the per-pair slots of the dissipative law: the
    estimate matches what the friction block holds beyond the plain one (the model, the
    state, the step loop's saved copies), within 10 %."""
    held = []
    for friction in (False, True):
        model = block_impact_builder(6, gap=0.05, friction=friction).finalize("cpu")
        state = model.state()
        ExplicitIntegrator("verlet").advance(model, state, 1e-3, 2)
        saved = state._engine._saved_law or {}
        held.append(model_bytes(model, state) + sum(a.nbytes for a in saved.values()))
    cap = state.neighbors.capacity
    extra = [memory_needed(model.n, model.n_bonds, cap, np.float64, "cpu", history=h)["host"] for h in (False, True)]
    assert extra[1] - extra[0] == pytest.approx(held[1] - held[0], rel=0.1)
    # the CPU's direct pass keeps its slots and running sums for every law: the history
    # costs the same on a GPU (each end evaluates its pairs there: no slots at all)
    gpu = [memory_needed(model.n, model.n_bonds, cap, np.float64, "gpu", history=h)["device"] for h in (False, True)]
    assert gpu[1] - gpu[0] == extra[1] - extra[0]
    b = bytes_per_item(np.float64)
    cpu_slots = model.n * (b["particle_direct"] + cap * b["slot_pair_pass"]) + model.n_bonds * b["bond_table"]
    assert memory_needed(model.n, model.n_bonds, cap, np.float64, "cpu")["host"] - memory_needed(
        model.n, model.n_bonds, cap, np.float64, "gpu", simulated=True)["host"] == cpu_slots
