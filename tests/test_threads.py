"""The CPU blocks' thread count follows the machine's load (granular/particles/integrators/
threads.py) and never changes a result."""

import numba
import numpy as np
import pytest

from granular.particles.integrators import ExplicitIntegrator
from granular.particles.integrators.threads import ThreadTuner
from granular.particles.shapes import block_impact_builder


def _drive(tuner, cost_of, blocks, steps=200, rebuild_every=0):
    """Run ``blocks`` blocks whose seconds per step is ``cost_of(threads, block)``;
    returns the thread counts used."""
    used = []
    for b in range(blocks):
        k = tuner.choose()
        used.append(k)
        rebuilt = rebuild_every and b % rebuild_every == 0
        tuner.record(k, steps, steps * cost_of(k, b) * (3.0 if rebuilt else 1.0), comparable=not rebuilt)
    return used


def test_an_idle_machine_keeps_every_thread_and_tries_the_others_ever_more_rarely():
    t = ThreadTuner(2)
    used = _drive(t, lambda k, b: 0.7e-3 if k == 2 else 1.4e-3, 3000)  # 0.14 s blocks, 7 min
    assert t.current == 2 and t.switches == 0
    trials = used.count(1)
    assert 8 <= trials <= 14, trials  # after 1, 2, 4, ..., 64, 64, ... s of stepping
    assert t.interval == ThreadTuner.longest
    assert trials * 0.28 / (3000 * 0.14) < 0.01  # the trials cost under 1 % of the time


def test_a_loaded_machine_moves_to_fewer_threads_and_back_when_the_load_ends():
    t = ThreadTuner(2)

    def cost(k, b):
        loaded = 100 <= b < 600
        return (2.0e-3 if loaded else 0.7e-3) if k == 2 else 1.4e-3

    used = _drive(t, cost, 1200)  # loaded from 14 s to 2 min 34 s (blocks 100 to 600)
    assert used[90] == 2
    loaded = used[100:600]
    assert loaded.count(1) > 0.8 * len(loaded), "the busy machine keeps two threads"
    assert 1 in used[100:120], "the load was noticed late"
    assert used[-1] == 2 and t.current == 2, "the idle machine stays on one thread"
    assert t.switches == 2


def test_blocks_that_rebuilt_are_not_taken_as_measurements():
    t = ThreadTuner(2)
    # every block with a rebuild costs three times as much; two threads are faster
    _drive(t, lambda k, b: 0.7e-3 if k == 2 else 1.4e-3, 400, rebuild_every=3)
    assert t.current == 2 and t.switches == 0


def test_the_candidates_are_all_half_and_one():
    assert ThreadTuner(8).candidates == [8, 4, 1]
    assert ThreadTuner(2).candidates == [2, 1]
    one = ThreadTuner(1)
    assert one.candidates == [1] and _drive(one, lambda k, b: 1e-3, 50) == [1] * 50


def _run(monkeypatch, pattern=None):
    if pattern is None:
        monkeypatch.setenv("GRANULAR_THREADS", "fixed")
    else:
        monkeypatch.delenv("GRANULAR_THREADS", raising=False)
    model = block_impact_builder(9, gap=0.05, friction=True).finalize("cpu")  # 729 particles: the parallel path
    state = model.state()
    integ = ExplicitIntegrator("verlet", max_block=32)  # blocks enough to vary the threads
    eng = integ.engine(model, state)
    if pattern is None:
        assert eng.threads is None
    else:
        assert eng.threads is not None
        turns = iter(pattern * 1000)
        monkeypatch.setattr(eng.threads, "choose", lambda: next(turns))
    integ.advance(model, state, 1e-3, 300)
    return state, eng


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one thread: nothing to vary")
def test_the_thread_count_changes_no_bit(monkeypatch):
    fixed, _ = _run(monkeypatch)
    varied, eng = _run(monkeypatch, [2, 1, 1, 2, 1])
    assert eng.blocks > 5
    for name in ("x", "v", "q", "omega", "F", "RM"):
        np.testing.assert_array_equal(getattr(varied, name), getattr(fixed, name), err_msg=name)


def test_small_systems_and_fixed_threads_are_not_tuned(monkeypatch):
    monkeypatch.delenv("GRANULAR_THREADS", raising=False)
    small = block_impact_builder(3).finalize("cpu")
    assert ExplicitIntegrator("verlet").engine(small, small.state()).threads is None  # one thread anyway
    monkeypatch.setenv("GRANULAR_THREADS", "fixed")
    big = block_impact_builder(9).finalize("cpu")
    assert ExplicitIntegrator("verlet").engine(big, big.state()).threads is None


def test_the_first_block_on_a_count_and_compiling_blocks_are_not_measurements():
    """The first block starts the threads and loads the compiled code (a second or more):
    taken as a measurement, it moved an idle machine to one thread."""
    t = ThreadTuner(2)
    t.record(t.choose(), 200, 200 * 5e-3)  # the first block: loading, 5 ms per step
    assert t.cost == {}
    used = _drive(t, lambda k, b: 0.7e-3 if k == 2 else 1.4e-3, 100)
    assert t.current == 2 and t.switches == 0 and set(used) == {1, 2}


def test_benchmarks_measure_at_the_threads_asked_for(monkeypatch):
    from granular import benchmark

    monkeypatch.delenv("GRANULAR_THREADS", raising=False)
    seen = []
    real = benchmark.ExplicitIntegrator.engine

    def engine(self, model, state):
        eng = real(self, model, state)
        seen.append(eng)
        return eng

    monkeypatch.setattr(benchmark.ExplicitIntegrator, "engine", engine)
    model = block_impact_builder(9, gap=0.05).finalize("cpu")
    benchmark.measure(model, 1e-3, min_time=0.01, warmup=5)
    assert seen and all(e.threads is None for e in seen)
