"""How many threads the CPU blocks run on: all of them on an idle machine, fewer when
other work holds the cores.

Each step of the CPU engine is a few parallel sections, each ending when its slowest
thread is done. With another busy process on a 2-core machine, one of the two threads
waits for a time slice at every section's end: the Hertz spheres at N = 10^4 went from
0.72 ms per step idle to 2.0 ms (median; up to 3.1), where one thread takes 1.4 ms idle
or loaded. Numba's OpenMP layer spins before it sleeps; a passive wait policy
(``OMP_WAIT_POLICY=PASSIVE``) cut the loaded case to 1.5 ms but cost 34 % idle, and
shorter spins (``GOMP_SPINCOUNT`` 10^4, 10^5) changed nothing loaded (measured on this
project's 2-core machine, ``docs/engine.md``).

So the engine measures instead: :class:`ThreadTuner` times the blocks (seconds per step,
blocks without a neighbour rebuild), runs now and then one block on the other candidate
thread counts (all, half, one), and keeps the fastest, switching only for a clear gain.
The stepping time between such trials doubles while they confirm the choice, from
:attr:`ThreadTuner.shortest` to :attr:`ThreadTuner.longest` seconds and never less than
:attr:`ThreadTuner.blocks_between` blocks, so an idle machine loses almost nothing (one
block in a minute, or in 16), and starts again from the shortest after a switch.

Results do not depend on the count: every row of every pass is computed alone, whichever
thread or chunk it falls in (bit for bit; ``tests/test_threads.py``).
``GRANULAR_THREADS=fixed`` turns the tuning off (all of Numba's threads, always).
"""

from __future__ import annotations

import os

__all__ = ["ThreadTuner", "tuning_enabled"]


def tuning_enabled() -> bool:
    """False when ``GRANULAR_THREADS=fixed``."""
    return os.environ.get("GRANULAR_THREADS", "").strip().lower() != "fixed"


class ThreadTuner:
    """Picks the thread count of each block from measured seconds per step.

    ``most``: the threads available (Numba's). Call :meth:`choose` before a block and
    :meth:`record` after it with the count used, the steps and the seconds."""

    shortest = 1.0  # seconds of blocks between trials, after a switch
    longest = 64.0  # at most this many seconds between trials
    gain = 0.85  # switch when the other count takes at most this share of the time
    weight = 0.3  # of a new measurement in the running estimate
    blocks_between = 16  # blocks at least between two trials

    def __init__(self, most: int):
        self.most = max(1, int(most))
        self.candidates = sorted({self.most, max(1, self.most // 2), 1}, reverse=True)
        self.current = self.most
        self.cost = {}  # running seconds per step of each count
        self.interval = self.shortest
        self.since = 0.0  # seconds of blocks since the last trial
        self.trial = None  # the count under trial, or None
        self.switches = 0
        self._tick = 0
        self._when = {}  # when each count was last measured (a counter)
        self._started = False  # a block was run (the first is no measurement)
        self._block = 0.0  # seconds of the last block on the current count

    def choose(self) -> int:
        """The thread count of the next block."""
        # trials at least `blocks_between` blocks apart: a trial on the slower count costs at
        # most about one block's time in that many (large systems run blocks of seconds)
        due = self.since >= max(self.interval, self.blocks_between * self._block)
        if len(self.candidates) > 1 and due and self.current in self.cost:
            others = [c for c in self.candidates if c != self.current]
            self.trial = min(others, key=lambda c: self._when.get(c, -1))  # the one tried longest ago
            return self.trial
        return self.current

    def record(self, threads: int, steps: int, seconds: float, comparable: bool = True) -> None:
        """A block of ``steps`` steps on ``threads`` threads took ``seconds``;
        ``comparable``: False for a block that did more than step (a rebuild, a redo),
        whose time says nothing of the thread count."""
        trial, self.trial = self.trial, None
        if trial is None:
            self.since += seconds
            self._block = seconds
        if not comparable or steps < 1 or not seconds > 0:
            return  # a trial that measured nothing is tried again at the next block
        per = seconds / steps
        if not self._started:  # the first block starts the threads and loads the compiled code
            self._started = True
            return
        self._tick += 1
        self._when[threads] = self._tick
        if trial is None or threads == self.current:
            old = self.cost.get(threads)
            self.cost[threads] = per if old is None else (1 - self.weight) * old + self.weight * per
            return
        self.cost[threads] = per  # a trial: this machine's state now, not an average with older ones
        self.since = 0.0
        if per <= self.gain * self.cost[self.current]:
            self.current = threads
            self.switches += 1
            self.interval = self.shortest
        else:
            self.interval = min(self.longest, 2 * self.interval)
