"""Every benchmark script runs at a tiny size and writes its rows with the machine's
description (the one harness of :mod:`granular.timing`); rates are printed, never
asserted here."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from granular.benchmark import CUDA_ATTR_BUS_WIDTH, CUDA_ATTR_MEMORY_CLOCK, nominal_bandwidth, paired_cost
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.shapes import block_impact_builder
from granular.timing import machine, time_blocks, time_steps
from patience import PATIENCE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BODY_ARGS = ["--backend", "cpu", "--sizes", "4", "--block", "2", "--min-time", "0.01", "--impl", "old,new"]
SCRIPTS = {
    "bench_ulvc.py": BODY_ARGS,
    "bench_rolling_ball.py": BODY_ARGS,
    "bench_livens.py": BODY_ARGS,
    "bench_nontwisting.py": BODY_ARGS,
    "bench_integrator.py": ["--backend", "cpu", "--sizes", "8", "--min-time", "0.01"],
    "bench_impact.py": ["--backend", "cpu", "--workload", "block,block-friction", "--n", "3", "--min-time", "0.01"],
    "bench_particle_ensemble.py": ["--backend", "cpu", "--n", "3", "--time", "0.02", "--loop", "1"],
    "bench_packing.py": ["--backend", "cpu", "--counts", "200"],
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_benchmark_script_runs_and_writes_its_rows(script, tmp_path):
    out = tmp_path / "rows.json"
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", script), *SCRIPTS[script], "--json", str(out)],
                       capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["results"], r.stdout
    assert data["meta"]["versions"]["granular"] and data["meta"]["cpu_count"] >= 1
    for row in data["results"]:
        rate = row.get("rate", row.get("particle_steps_per_s", row.get("particle_steps_s")))
        assert rate is None or (np.isfinite(rate) and rate > 0), row
        if row.get("workload") == "block-friction":  # the cost relative to the plain block, from paired windows
            lo, hi = row["cost_vs_block_range"]
            assert 0 < lo <= row["cost_vs_block"] <= hi < np.inf, row


def test_paired_cost_times_both_runs_over_the_same_interleaved_windows(monkeypatch):
    """With a fake clock and integrator (run B costs twice as much per step as run A):
    the ratio is B over A exactly, both runs advance through the same step counts, and
    the timed windows alternate A-B, B-A, ..."""
    from types import SimpleNamespace

    from granular import benchmark

    clock, log = [0.0], []

    class Integrator:
        def __init__(self, *args, **kwargs):
            pass

        def advance(self, model, state, h, steps):
            clock[0] += model.cost * steps
            state.step += steps
            log.append((model.name, steps))

        def engine(self, model, state):  # paired_cost turns the thread tuning off on it
            return SimpleNamespace(threads=object())

    be = SimpleNamespace(synchronize=lambda: None)
    monkeypatch.setattr(benchmark, "ExplicitIntegrator", Integrator)
    monkeypatch.setattr(benchmark, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    a = SimpleNamespace(name="A", cost=1e-3, backend=be, state=lambda: SimpleNamespace(step=0))
    b = SimpleNamespace(name="B", cost=2e-3, backend=be, state=lambda: SimpleNamespace(step=0))
    r = benchmark.paired_cost(a, b, 1e-3, min_time=0.7, rounds=4, warmup=5)
    assert [r["min"], r["median"], r["max"]] == pytest.approx([2.0] * 3, rel=1e-9) and r["rounds"] == 4
    w = r["steps_per_window"]
    assert w == int(0.7 / 4 / 2e-3)  # a window lasts min_time / rounds of B
    assert [m for m, _ in log[6:]] == ["A", "B", "B", "A", "A", "B", "B", "A"]
    for name in "AB":
        assert [k for m, k in log if m == name] == [5, 16, w] + [w] * 4
    assert r["steps"] == [5 + 16 + 5 * w] * 2


def test_measure_does_not_report_a_window_holding_one_time_work(monkeypatch):
    """With a fake clock: the first window after the warm-up costs 3 s more (a kernel
    compiled at the first in-block rebuild, as on a GPU for the spheres at N = 10^4, where
    it was reported as 200 ms per step). The reported rate is the steady one."""
    from types import SimpleNamespace

    from granular import benchmark

    clock, calls = [0.0], []

    class Integrator:
        def __init__(self, *args, **kwargs):
            pass

        def advance(self, model, state, h, steps):
            calls.append(steps)
            clock[0] += 1e-3 * steps + (3.0 if len(calls) == 2 else 0.0)

        def engine(self, model, state):
            program = SimpleNamespace(read_report=lambda: None, graphs_enabled=False)
            return SimpleNamespace(neighbors=None, program=program, blocks=1, steps=1)

    be = SimpleNamespace(synchronize=lambda: None, name="cpu", simulated=False, device="fake")
    monkeypatch.setattr(benchmark, "ExplicitIntegrator", Integrator)
    monkeypatch.setattr(benchmark, "time", SimpleNamespace(perf_counter=lambda: clock[0], process_time=lambda: 0.0))
    monkeypatch.setattr(benchmark, "bytes_per_step", lambda model, state=None: 0)
    monkeypatch.setattr(benchmark, "model_bytes", lambda model, state: 0)
    model = SimpleNamespace(backend=be, state=lambda: None, n=10, n_bonds=0, dtype=np.float64)
    r = benchmark.measure(model, 1e-3, min_time=0.5, warmup=5)
    assert calls[:2] == [5, 16] and r["ms_per_step"] == pytest.approx(1.0, rel=1e-9), calls
    assert r["steps"] * 1e-3 >= 0.5


def test_paired_cost_of_the_blocks_runs():
    plain = block_impact_builder(3, gap=0.05).finalize("cpu")
    friction = block_impact_builder(3, gap=0.05, friction=True).finalize("cpu")
    r = paired_cost(plain, friction, 1e-3, min_time=0.0, rounds=3, warmup=5)
    assert r["rounds"] == 3 and r["steps_per_window"] == 16
    assert r["steps"] == [5 + 16 + 4 * 16] * 2  # warm-up, the sizing probe, one untimed and three timed windows
    assert 0 < r["min"] <= r["median"] <= r["max"] < np.inf


def test_time_steps_excludes_the_warm_up_and_grows_the_calls():
    calls = []
    steps, seconds = time_steps(calls.append, lambda: None, first=2, min_time=1e9, warmup=3, max_steps=7)
    assert calls == [3, 2, 4, 1] and steps == 7 and seconds >= 0.0
    calls.clear()
    steps, _ = time_blocks(calls.append, lambda: None, block=5, min_time=0.0, warmup=0)
    assert calls == [5] and steps == 5


def test_machine_names_the_versions():
    m = machine(devices=["cpu"])
    assert m["devices"] == ["cpu"] and "numpy" in m["versions"] and m["numba_threads"] >= 1


def test_nominal_bandwidth_from_properties_or_cuda13_attributes():
    """An H100 SXM: 2619 MHz HBM3 on a 5120-bit bus is 3.35 TB/s, whether the clock comes
    from the device properties (CUDA 12) or only from the attribute (CUDA 13 removed
    ``memoryClockRate`` from the properties); nothing known gives ``None``."""
    attrs = {CUDA_ATTR_MEMORY_CLOCK: 2619000, CUDA_ATTR_BUS_WIDTH: 5120}
    h100 = 2.0 * 2619e6 * 5120 / 8
    assert nominal_bandwidth({"memoryClockRate": 2619000, "memoryBusWidth": 5120}, lambda c: 0) == h100
    assert nominal_bandwidth({"memoryBusWidth": 5120}, attrs.__getitem__) == h100
    assert nominal_bandwidth({}, attrs.__getitem__) == h100

    def unknown(code):
        raise RuntimeError("cudaErrorInvalidValue")

    assert nominal_bandwidth({"memoryBusWidth": 5120}, unknown) is None


def test_granular_bench_spheres_and_torus_rows(tmp_path):
    """``granular bench`` with the contact-only spheres workload and the torus (the
    in-process torus row and the timed ``granular run`` of the scene, output included):
    every column of a row, the device's name and bandwidth in the JSON."""
    from granular import benchmark

    path = tmp_path / "bench.json"
    args = ["--backend", "cpu", "--workload", "spheres,torus", "--spheres", "343", "--min-time", "0.05",
            "--json", str(path)]  # fmt: skip
    assert benchmark.main(args) == 0
    data = json.loads(path.read_text())
    rows = {r["workload"]: r for r in data["results"]}
    assert set(rows) == {"spheres", "torus", "torus-run"}
    for name in ("spheres", "torus"):
        r = rows[name]
        for key in ("ms_per_step", "particle_steps_per_s", "bytes_per_step", "bandwidth_GBs", "bandwidth_fraction",
                    "rebuilds_per_1000_steps", "host_ms_per_step", "device_ms_per_step", "memory_MB", "device"):  # fmt: skip
            assert key in r, (name, key)
        assert r["ms_per_step"] > 0 and 0 < r["bandwidth_fraction"] and r["memory_MB"] > 0
    assert rows["spheres"]["rebuild_ms"] > 0  # the spheres have a neighbour list
    assert rows["spheres"]["N"] == 343 and rows["torus"]["N"] == 80
    assert rows["torus-run"]["N"] == 80 and rows["torus-run"]["steps_per_s"] > 0
    assert data["meta"]["devices"]["cpu"]["peak_bandwidth_GBs"] > 0


def test_granular_bench_pile_row(tmp_path, capsys):
    """The pile workload: a small heap run to rest through both phases, its wall-clock,
    steps and rate in the row, its progress on stderr."""
    from granular import benchmark

    path = tmp_path / "pile.json"
    assert benchmark.main(["--backend", "cpu", "--workload", "pile", "--pile", "64", "--json", str(path)]) == 0
    (r,) = json.loads(path.read_text())["results"]
    assert r["workload"] == "pile" and r["N"] == 64 and r["rests"]
    assert r["steps"] == round((r["fill_time"] + r["release_time"]) / 4e-5)
    assert r["particle_steps_per_s"] == pytest.approx(64 * r["steps"] / r["wall_s"])
    assert r["energy_error"] < 2e-3
    said = capsys.readouterr()
    assert "pile N = 64: release" in said.err and "wall-clock to rest" in said.out


def test_agreement_energy_drift_of_the_torus_in_both_precisions():
    """``bench/agreement.py``'s energy error of the torus, on the CPU for a short run: small,
    and larger in float32 than in float64. At ``h = 5e-5`` the scheme's own drift (second
    order: 1.5e-6 here, 6e-5 at ``h = 5e-4``) is well below single precision's round-off
    (about 1.5e-5), so the comparison says which precision the error comes from; at
    ``h = 5e-4`` the two were within a few per cent of each other, either way round."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("agreement", os.path.join(ROOT, "bench", "agreement.py"))
    agreement = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agreement)
    e64 = agreement.energy_drift(agreement.torus_builder, "cpu", 5e-5, 0.5, np.float64)
    e32 = agreement.energy_drift(agreement.torus_builder, "cpu", 5e-5, 0.5, np.float32)
    assert 0 < e64 < 1e-5 and 3 * e64 < e32 < 1e-3, (e64, e32)


def test_the_frictional_spheres_workload_is_the_block_without_its_bonds(tmp_path):
    """``spheres-friction``: the ``block-friction`` particles, law and wall, no bonds; a
    ``granular bench`` row of it."""
    from granular import benchmark

    bonded = block_impact_builder(3, gap=0.05, friction=True).finalize("cpu")
    loose = block_impact_builder(3, gap=0.05, friction=True, bonded=False).finalize("cpu")
    assert loose.n == bonded.n == 27 and bonded.n_bonds > 0 and loose.n_bonds == 0
    np.testing.assert_array_equal(loose.state().x, bonded.state().x)
    np.testing.assert_array_equal(loose.state().v, bonded.state().v)
    assert loose.law is not None and loose.law.kernel is bonded.law.kernel
    path = tmp_path / "bench.json"
    assert benchmark.main(["--backend", "cpu", "--workload", "spheres-friction", "--n", "3", "--min-time", "0.05",
                           "--json", str(path)]) == 0  # fmt: skip
    (row,) = json.loads(path.read_text())["results"]
    assert row["workload"] == "spheres-friction" and row["N"] == 27 and row["bonds"] == 0 and row["ms_per_step"] > 0


def _peers():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import peers
    finally:
        sys.path.pop(0)
    return peers


@pytest.mark.parametrize("workload", ["spheres-friction", "block-friction", "block"])
def test_the_lammps_comparison_sets_up_the_same_configuration(workload, tmp_path):
    """``bench/peers.py`` gives LAMMPS granular's positions, velocities, masses, bonds and
    law (read back from the files it writes); it runs LAMMPS where ``lmp`` is installed."""
    import inspect
    import shutil

    from granular.particles.shapes import BLOCK_MATERIAL, lattice_bonds

    peers = _peers()
    data = tmp_path / "data.txt"
    peers.lammps_data(workload, 3, str(data))
    text = data.read_text()
    atoms = text.split("Atoms")[1].split("Velocities")[0].strip().splitlines()[1:]
    rows = np.array([[float(v) for v in line.split()] for line in atoms if line.strip()])
    bonded = workload != "spheres-friction"
    model = block_impact_builder(3, gap=0.05, friction=workload != "block", bonded=bonded).finalize("cpu")
    xyz = rows[:, -3:] if bonded else rows[:, 4:7]
    np.testing.assert_allclose(xyz, model.state().x, rtol=0, atol=1e-15)
    diameter, density = (rows[:, 3], rows[:, 4]) if bonded else (rows[:, 2], rows[:, 3])
    np.testing.assert_allclose(density * np.pi / 6 * diameter**3, 1.0, rtol=1e-15)  # mass 1, as granular's block
    if bonded:
        bonds = text.split("Bonds")[1].strip().splitlines()
        pairs = np.array([[int(w) - 1 for w in line.split()[2:4]] for line in bonds if line.strip()])
        np.testing.assert_array_equal(pairs, lattice_bonds((3, 3, 3)))
        assert len(pairs) == model.n_bonds
    inp = peers.lammps_input(workload, 3, 10, str(data))
    if workload == "block":  # paper 003's F = kpp δ^{3/2}: LAMMPS's hertz k_N sqrt(R*) δ^{3/2}, R* = 1/4
        kpp = inspect.signature(block_impact_builder).parameters["kpp"].default
        assert f"pair_coeff * * hertz {2 * kpp:.17g} 0.0 tangential linear_nohistory 0.0 0.0" in inp
        # the wall: granular's K/r (δ/r)^{3/2} with r = 1/2 is LAMMPS's k_N sqrt(r) δ^{3/2} for k_N = 8K
        assert f"wall/gran granular hertz {8 * kpp:.17g} 0.0 tangential" in inp
    else:
        assert f"hertz/material {BLOCK_MATERIAL['young']:.17g} 0.5 0.3 damping tsuji" in inp
        assert "tangential mindlin NULL 1.0 0.5" in inp
    assert "fix wall all wall/gran granular" in inp
    # the timed run keeps the lists of the warm-up (no untimed rebuild at its start)
    assert inp.rstrip().splitlines()[-2:] == [f"run {peers.WARMUP}", "run 10 pre no"]
    lmp, mpirun = shutil.which("lmp"), shutil.which("mpirun")
    if lmp and mpirun:
        ms, builds, build_ms = peers.run_lammps(workload, 3, 1, 10, lmp, mpirun, str(tmp_path))
        assert ms > 0 and builds >= 0 and (builds == 0 or build_ms >= 0)
        # the same skin and test: both codes rebuild as often in the same window
        ms, builds, build_ms = peers.run_lammps(workload, 3, 1, 400, lmp, mpirun, str(tmp_path))
        state = model.state()
        integrator = ExplicitIntegrator("verlet")
        integrator.advance(model, state, peers.H, peers.WARMUP)
        nl = model.neighbors_of(state)
        before = nl.builds
        integrator.advance(model, state, peers.H, 400)
        assert builds == nl.builds - before > 0


def test_spread_spheres_list_no_pair_in_both_codes(tmp_path, capsys):
    """``--spacing`` (``granular bench``, ``bench/peers.py``): the frictional spheres ``s``
    apart in both codes, with no pair in the neighbour list above 1.2; a bonded block,
    a spacing below the diameter, or a spacing for another workload is refused by name."""
    from granular import benchmark
    from granular.particles.integrators import ExplicitIntegrator

    model = block_impact_builder(3, gap=0.05, friction=True, bonded=False, spacing=1.5).finalize("cpu")
    x = model.state().x
    np.testing.assert_allclose(np.diff(np.unique(x[:, 0])), 1.5, rtol=1e-15)
    state = model.state()
    integ = ExplicitIntegrator("verlet")
    integ.advance(model, state, 1e-3, 3)
    assert int(integ.engine(model, state).neighbors.count.sum()) == 0  # nothing listed
    touching = block_impact_builder(3, gap=0.05, friction=True, bonded=False).finalize("cpu")
    state = touching.state()
    integ = ExplicitIntegrator("verlet")
    integ.advance(touching, state, 1e-3, 3)
    assert int(integ.engine(touching, state).neighbors.count.sum()) > 0
    with pytest.raises(ValueError, match="spacing"):
        block_impact_builder(3, friction=True, spacing=1.5)  # bonded
    with pytest.raises(ValueError, match="spacing"):
        block_impact_builder(3, friction=True, bonded=False, spacing=0.9)
    for bad in ("0.5", "wide"):
        with pytest.raises(SystemExit):
            benchmark.build_parser().parse_args(["--spacing", bad])
        assert "--spacing" in capsys.readouterr().err
    path = tmp_path / "bench.json"
    assert benchmark.main(["--backend", "cpu", "--workload", "spheres-friction", "--n", "3", "--steps", "5",
                           "--spacing", "1.5", "--json", str(path)]) == 0  # fmt: skip
    (row,) = json.loads(path.read_text())["results"]
    assert row["spacing"] == 1.5 and row["N"] == 27
    assert benchmark.main(["--backend", "cpu", "--workload", "spheres-friction,block", "--spacing", "2"]) == 2
    assert "--spacing" in capsys.readouterr().err
    peers = _peers()
    data = tmp_path / "data.txt"
    peers.lammps_data("spheres-friction", 3, str(data), 1.5)
    atoms = data.read_text().split("Atoms")[1].split("Velocities")[0].strip().splitlines()[1:]
    xyz = np.array([[float(v) for v in line.split()[4:7]] for line in atoms if line.strip()])
    np.testing.assert_allclose(xyz, x, rtol=0, atol=1e-15)
    assert peers.main(["--workload", "block", "--spacing", "2"]) == 2
    assert "--spacing" in capsys.readouterr().err


def test_a_fixed_window_times_exactly_the_steps_after_the_warm_up():
    """``granular bench --steps`` (the window ``bench/peers.py`` gives every code): the
    steps timed are exactly those asked for, on a run from the initial state, after a
    first untimed run through the same window."""
    from granular import benchmark
    from granular.particles.shapes import block_impact_builder

    model = block_impact_builder(3, gap=0.05, friction=True, bonded=False).finalize("cpu")
    r = benchmark.measure(model, 1e-3, warmup=5, steps=7)
    assert r["steps"] == 7
    assert r["ms_per_step"] > 0


@pytest.mark.parametrize("bad", ["0", "-3", "ten"])
def test_a_window_of_no_steps_is_refused_by_name(bad, capsys):
    from granular import benchmark

    with pytest.raises(SystemExit):
        benchmark.build_parser().parse_args(["--steps", bad])
    assert "--steps" in capsys.readouterr().err


def test_the_busy_machine_script_times_idle_and_loaded_runs(tmp_path):
    """``bench/busy_machine.py`` at a tiny size: a row per round and set-up, with finite
    positive times idle and loaded and their ratio (printed, never a speed asserted)."""
    out = tmp_path / "busy.json"
    args = ["--n", "3", "--windows", "2", "--steps", "2", "--rounds", "1", "--set-ups", "measured,one",
            "--json", str(out)]  # fmt: skip
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "busy_machine.py"), *args], capture_output=True,
                       text=True, timeout=PATIENCE, cwd=ROOT, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(out.read_text())["results"]
    assert [row["setup"] for row in rows] == ["measured", "one"]
    for row in rows:
        assert row["n"] == 27 and 0 < row["idle_ms"] < np.inf and 0 < row["loaded_ms"] < np.inf
        assert row["ratio"] == pytest.approx(row["loaded_ms"] / row["idle_ms"])
    bad = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "busy_machine.py"), "--set-ups", "busy"],
                         capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT, check=False)  # fmt: skip
    assert bad.returncode == 2 and "--set-ups" in bad.stderr


def test_the_step_pieces_script_times_each_piece_per_particle():
    """``bench/step_pieces.py`` at a tiny size, the pieces that compile in seconds: one
    line per piece with a finite positive time per particle (printed, never a speed
    asserted); an unknown piece and ``--spacing`` with another workload are refused by
    name."""
    script = os.path.join(ROOT, "bench", "step_pieces.py")
    args = ["--n", "4", "--spacing", "3", "--pieces", "advance,kick,wall", "--reps", "1", "--windows", "1", "--no-step"]
    r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "N = 64, spacing 3" in r.stdout
    times = dict(re.findall(r"^\s+(advance|kick|wall|step)\s+([0-9.]+)", r.stdout, re.M))
    assert sorted(times) == ["advance", "kick", "wall"]
    assert all(0 < float(t) < np.inf for t in times.values())
    for bad, name in ((["--pieces", "advance,rotate"], "--pieces"), (["--workload", "block", "--spacing", "2"],
                                                                      "--spacing")):  # fmt: skip
        b = subprocess.run([sys.executable, script, *bad], capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT,
                           check=False)  # fmt: skip
        assert b.returncode == 2 and name in b.stderr
    # the bond pass, of a bonded workload only
    r = subprocess.run([sys.executable, script, "--workload", "block", "--n", "4", "--pieces", "bonds", "--reps", "1",
                        "--windows", "1", "--no-step"], capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT,
                       check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert 0 < float(re.search(r"^\s+bonds\s+([0-9.]+)", r.stdout, re.M).group(1)) < np.inf
    b = subprocess.run([sys.executable, script, "--workload", "spheres", "--pieces", "bonds"], capture_output=True,
                       text=True, timeout=PATIENCE, cwd=ROOT, check=False)  # fmt: skip
    assert b.returncode == 2 and "bonds applies to the bonded workloads" in b.stderr


def test_the_particle_lanes_script_keeps_the_bits_of_the_engines_advance():
    """``bench/particle_lanes.py`` at a tiny size: the lanes form of the particles' end of
    a step and first part of the next leaves the same bits as the engine's scalar body
    after one pass (exit 0, "same bits ... yes"), with and without the second half kick,
    with the dashpots' velocities (the dissipative law) and without (Hertz), and flags
    both rows made not finite; it prints a finite positive time per particle for each loop (never
    a speed asserted); a negative batch is refused by name."""
    script = os.path.join(ROOT, "bench", "particle_lanes.py")
    for workload, scheme in (("spheres-friction", "verlet"), ("spheres", "exact")):
        args = ["--workload", workload, "--n", "4", "--scheme", scheme, "--warm", "80", "--batch", "0,5",
                "--reps", "1", "--windows", "1"]  # fmt: skip
        r = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=PATIENCE, cwd=ROOT,
                           check=False)  # fmt: skip
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert "same bits after one pass: yes (all arrays equal)" in r.stdout
        assert "rows flagged not finite by the lanes: 2 (2 made so)" in r.stdout
        times = re.findall(r"^\s+(engine \(scalar\)|lanes, all rows|lanes, 5 rows a call)\s+([0-9.]+)$", r.stdout, re.M)
        assert [name for name, _ in times] == ["engine (scalar)", "lanes, all rows", "lanes, 5 rows a call"]
        assert all(0 < float(t) < np.inf for _, t in times)
    bad = subprocess.run([sys.executable, script, "--batch", "64,-1"], capture_output=True, text=True,
                         timeout=PATIENCE, cwd=ROOT, check=False)  # fmt: skip
    assert bad.returncode == 2 and "--batch" in bad.stderr
