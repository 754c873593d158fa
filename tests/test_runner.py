"""The one run loop (granular.run.Runner) on a toy system: triggers, the order of the
writers' hooks, the health check and the kept state, failures, stops, and the particle
engine and a body scheme driven through it."""

import numpy as np
import pytest

import granular as gr
from granular.errors import HealthError, IntegrationError
from granular.particles.system import ParticleSystem
from granular.run import AtStep, Callback, Periodic, Runner
from granular.run.simulation import run_sampled


class Toy:
    """x grows by dt each step; ``fail_at``: the step that raises; ``bad_at``: the step
    from which the health check complains."""

    def __init__(self, fail_at=None, bad_at=None):
        self.backend = gr.get_backend("cpu")
        self.n, self.label = 1, "toy"
        self.x, self.k = 0.0, 0
        self.fail_at, self.bad_at = fail_at, bad_at
        self.kept = (0.0, 0)
        self.calls = []

    time = property(lambda self: self.x)
    step_count = property(lambda self: self.k)

    def prepare(self, dt):
        self.calls.append("prepare")

    def advance(self, dt, k):
        self.calls.append(("advance", k))
        for _ in range(k):
            if self.fail_at is not None and self.k + 1 == self.fail_at:
                raise IntegrationError("boom", step=self.k + 1)
            self.x += dt
            self.k += 1

    def series_row(self):
        return {"time": self.x, "step": float(self.k)}

    def check(self, row):
        return "too far" if self.bad_at is not None and self.k >= self.bad_at else None

    def keep(self):
        self.kept = (self.x, self.k)

    def rewind(self):
        self.x, self.k = self.kept


class Log:
    def __init__(self, trigger, name, log, checked=True):
        self.trigger, self.name, self.log, self.checked = trigger, name, log, checked

    def begin(self, runner, resumed):
        self.log.append((self.name, "begin", runner.system.step_count))

    def write(self, runner, row):
        self.log.append((self.name, "write", runner.system.step_count, row is not None))

    def close(self):
        self.log.append((self.name, "close"))

    def end(self, runner):
        self.log.append((self.name, "end", runner.system.step_count))


def test_periodic_and_at_step_triggers():
    p = Periodic(4)
    assert [p.next(k, 10) for k in (0, 3, 4, 9)] == [4, 4, 8, 10]
    assert [k for k in range(11) if p.due(k, 10)] == [0, 4, 8, 10]
    q = Periodic(4, at_end=False, phase=1)
    assert [k for k in range(1, 11) if q.due(k, 10)] == [1, 5, 9] and q.next(1, 10) == 5
    assert Periodic(0).next(3, 10) == 10 and Periodic(0, at_end=False).due(10, 10) is False
    a = AtStep(6)
    assert a.next(2, 10) == 6 and a.next(6, 10) == 10 and a.due(6, 10) and not a.due(5, 10)


def test_writers_are_called_at_their_triggers_and_the_end_hooks_in_order():
    log = []
    s = Toy()
    r = Runner(s, 0.5, [Log(Periodic(3), "series", log), Log(Periodic(5, at_end=False), "ckpt", log)],
               handle_signals=False).run(10)  # fmt: skip
    assert s.step_count == 10 and s.time == 5.0 and r.finished and not r.interrupted
    writes = [(w[0], w[2]) for w in log if w[1] == "write"]
    assert writes == [("series", 3), ("ckpt", 5), ("series", 6), ("series", 9), ("series", 10), ("ckpt", 10)]  # attach order
    assert [w for w in log if w[1] != "write"] == [("series", "begin", 0), ("ckpt", "begin", 0), ("series", "close"),
                                                   ("ckpt", "close"), ("series", "end", 10), ("ckpt", "end", 10)]  # fmt: skip
    assert s.kept == (5.0, 10)  # every checked event keeps the state


def test_a_failed_health_check_puts_back_the_kept_state_before_the_end_hooks():
    log = []
    s = Toy(bad_at=7)
    with pytest.raises(HealthError, match="health check failed at step 8 .*too far") as info:
        Runner(s, 1.0, [Log(Periodic(4), "series", log)], handle_signals=False).run(20)
    assert info.value.step == 8
    assert s.step_count == 4  # the last state that passed
    assert log[-1] == ("series", "end", 4)


def test_a_failed_step_runs_the_end_hooks_on_the_last_kept_state():
    log = []
    s = Toy(fail_at=6)
    with pytest.raises(IntegrationError, match="boom"):
        Runner(s, 1.0, [Log(Periodic(2), "frames", log)], handle_signals=False).run(10)
    assert s.step_count == 4 and log[-1] == ("frames", "end", 4)


def test_unchecked_writers_get_no_row_and_no_health_check():
    log = []
    s = Toy(bad_at=1)
    Runner(s, 1.0, [Log(Periodic(1), "watch", log, checked=False)], handle_signals=False).run(5)
    assert s.step_count == 5
    assert [w[3] for w in log if w[1] == "write"] == [False] * 5


def test_a_stop_request_ends_the_run_cleanly():
    log = []
    s = Toy()
    runner = Runner(s, 1.0, [Log(Periodic(100), "ckpt", log)], handle_signals=False)

    def stop(r):
        r.stop_requested = True

    runner.writers.append(Callback(AtStep(3), stop))
    runner.run(1000)
    assert runner.interrupted and not runner.finished and s.step_count == 3
    assert log[-1] == ("ckpt", "end", 3)


def test_run_sampled_matches_the_integrators_own_loop_bit_for_bit():
    def torus():
        b = gr.ModelBuilder()
        gr.shapes.add_torus(b, n_p=24, ring_diameter=2.0, center=(2.0, 0, 0), velocity=(-1, 0, 0))
        b.set_contacts(2100.0)
        b.add_wall([1, 0, 0], 0.0, 2100.0)
        return b.finalize("cpu")

    model = torus()
    a, b = model.state(), model.state()
    integ = gr.ExplicitIntegrator("verlet")
    seen_a, seen_b = [], []
    integ.prepare(model, a)
    integ.run(model, a, 1e-3, 250, callback=lambda s: seen_a.append(s.x.copy()), every=40)
    run_sampled(model, b, gr.ExplicitIntegrator("verlet"), 1e-3, 250, 40, lambda s: seen_b.append(s.x.copy()))
    assert len(seen_a) == len(seen_b) == 6 and b.step == 250
    assert all(np.array_equal(x, y) for x, y in zip(seen_a, seen_b))
    assert np.array_equal(a.x, b.x) and np.array_equal(a.omega, b.omega)
    assert isinstance(ParticleSystem(model, b, integ).label, str)


def test_without_checked_writers_a_failed_step_leaves_the_state_of_the_step_before():
    s = Toy(fail_at=6)
    with pytest.raises(IntegrationError):
        Runner(s, 1.0, [Callback(2, lambda r: None)], handle_signals=False).run(10)
    assert s.step_count == 5  # not rewound to the start: nothing was ever checked


def test_a_writer_whose_begin_fails_leaves_the_others_closed():
    log = []

    class Broken:
        trigger = Periodic(1)

        def begin(self, runner, resumed):
            raise OSError("damaged frames.pvd")

    first = Log(Periodic(1), "series", log)
    with pytest.raises(OSError, match="damaged"):
        Runner(Toy(), 1.0, [first, Broken()], handle_signals=False).run(3)
    assert ("series", "close") in log


def test_a_numpy_integer_is_a_cadence():
    seen = []
    Runner(Toy(), 1.0, [Callback(np.int64(2), lambda r: seen.append(r.system.step_count))],
           handle_signals=False).run(6)  # fmt: skip
    assert seen == [2, 4, 6]


def test_an_error_in_flight_is_not_hidden_by_a_writer_that_fails_to_close():
    class BadClose:
        trigger = Periodic(1)
        checked = False

        def write(self, runner, row):
            raise KeyError("in flight")

        def close(self):
            raise OSError("close failed")

    with pytest.raises(KeyError, match="in flight"):
        Runner(Toy(), 1.0, [BadClose()], handle_signals=False).run(3)
    good = Toy()

    class CloseOnly(BadClose):
        def write(self, runner, row):
            pass

    with pytest.raises(OSError, match="close failed"):  # with nothing in flight, the close error is raised
        Runner(good, 1.0, [CloseOnly()], handle_signals=False).run(3)
    assert good.step_count == 3


def test_run_steps_is_relative_until_is_absolute_and_end_is_an_absolute_step():
    s = Toy()
    r = Runner(s, 0.25, [], handle_signals=False)
    r.run(steps=4)
    assert s.k == 4
    r.run(steps=4)  # four more, not "up to step 4"
    assert s.k == 8
    r.run(until=3.0)  # t = 3.0 is step 12
    assert (s.k, s.x) == (12, 3.0)
    r.run(until=3.1)  # the first step at or after t = 3.1
    assert s.k == 13
    r.run(20)
    assert s.k == 20
    for kwargs, match in ((dict(steps=0), "steps: must be a whole number >= 1"),
                          (dict(steps=2.5), "steps: must be a whole number"),
                          (dict(until=1.0), "until: t = 1.0 is not after the current time"),
                          (dict(until=float("nan")), "until: must be a finite time"),
                          (dict(steps=1, until=9.0), "not both"), (dict(), "give steps .* or until"),
                          (dict(end=30, steps=1), "give one of end"), (dict(end=25.5), "end: the absolute step")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            r.run(**kwargs)
    assert s.k == 20


def test_a_signal_while_the_last_files_are_written_lets_them_finish():
    """Ctrl-C during the writers' end hooks (the final checkpoint, run.json, plots) is
    held until they are done: no KeyboardInterrupt half-way through the files, the run
    is a finished run, and the previous handler is back afterwards."""
    import os
    import signal

    class SignalsAtEnd:
        trigger = Periodic(0)

        def __init__(self):
            self.finished = False

        def write(self, runner, row):
            pass

        def end(self, runner):
            os.kill(os.getpid(), signal.SIGINT)
            self.finished = True  # reached: the signal did not raise

    w = SignalsAtEnd()
    before = signal.getsignal(signal.SIGINT)
    runner = Runner(Toy(), 1.0, [w]).run(5)
    assert w.finished and not runner.interrupted and runner.system.step_count == 5
    assert signal.getsignal(signal.SIGINT) is before
