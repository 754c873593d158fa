"""Progress for long commands: the bar or JSON events of a run, the ETA, the guard
against runs too long to finish, and the block size between looks at the clock.

:class:`Progress` prints a bar with steps/s and ETA on stderr (one line per update when
stderr is not a terminal), or JSON-lines events on stdout with ``log_json``
(``--quiet --log-json`` is the job-script combination). :func:`long_run_refused` stops a
run of more than :data:`LONG_RUN_STEPS` steps before it starts unless asked for.
"""

from __future__ import annotations

import math
import sys
import time

from ..compiling import compile_seconds
from ..io import jsonio

#: Runs of more steps than this start only with --allow-long-run (or a "y" at a terminal).
LONG_RUN_STEPS = 10**9
#: More steps than the step counter (int64) and the checkpoints hold.
MAX_STEPS = 2**62
#: Steps per second assumed when telling how long a long run would take.
ASSUMED_RATE = 1e5


def format_duration(seconds) -> str:
    """``"01:02:03"`` below a day, ``"3 d 04:05:06"`` below 1000 days, else ``"2.5e+03 years"``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "--:--:--"
    if seconds >= 1000 * 86400:
        return f"{seconds / (365.25 * 86400):.3g} years"
    s = int(round(seconds))
    days, s = divmod(s, 86400)
    hms = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{days} d {hms}" if days else hms


def long_run_refused(total, dt, args) -> str | None:
    """Why a run of ``total`` steps does not start (None: it does). Above
    :data:`LONG_RUN_STEPS` it starts only with ``--allow-long-run`` or a "y" at a terminal."""
    if total > MAX_STEPS:
        return (f"the run asks for {total:.3g} steps (t = {total * dt:.6g} at dt = {dt:g}); the step counter holds "
                f"at most {MAX_STEPS:.3g}. Give a shorter --time or --steps")  # fmt: skip
    if total <= LONG_RUN_STEPS or getattr(args, "allow_long_run", False):
        return None
    eta = format_duration(total / ASSUMED_RATE)
    text = (f"the run asks for {total:.3g} steps (t = {total * dt:.6g} at dt = {dt:g}); at {ASSUMED_RATE:.0e} "
            f"steps/s, fast for a small system, that takes {eta}")  # fmt: skip
    interactive = (
        sys.stdin.isatty()
        and sys.stderr.isatty()
        and not (getattr(args, "quiet", False) or getattr(args, "log_json", False))
    )
    if interactive:
        print(f"granular run: {text}.", file=sys.stderr)
        try:
            answer = input("Start it anyway? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return None
    return f"{text}. Give --allow-long-run to start it anyway, or a shorter --time or --steps"


def json_event(name, **fields) -> None:
    """One JSON-lines event ``{"event": name, **fields}`` on stdout (``--log-json`` of
    ``granular run`` and ``granular ensemble``), standard JSON (:mod:`granular.io.jsonio`:
    NumPy numbers as numbers, a non-finite value as the string ``"Infinity"``, ...; any
    other object as its ``str``)."""
    print(jsonio.dumps({"event": name, **fields}, default=str), file=sys.stdout, flush=True)


class Progress:
    """Progress bar on stderr (steps/s and ETA), or JSON lines with ``log_json``.

    ``quiet`` silences the human-readable bar; JSON events are printed whenever
    ``log_json`` is set (``--quiet --log-json`` is the job-script combination)."""

    def __init__(self, total_steps, quiet=False, log_json=False, stream=None, min_seconds=2.0):
        self.total = total_steps
        self.quiet, self.log_json = quiet, log_json
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.last = self.start
        self.min_seconds = min_seconds
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.shown = False
        self.mark = None

    def event(self, kind, **fields):
        if self.log_json:
            json_event(kind, **fields)

    def update(self, step, t, first_step):
        now = time.perf_counter()
        if self.mark is None:  # rates count from the first finished step (after JIT compilation)
            self.mark = (now, step, compile_seconds())
            return
        if now - self.last < 0.5 or now - self.start < self.min_seconds or step - self.mark[1] < 1:
            return
        self.last = now
        # kernels compiled since (the output's, at its first write) are not stepping time
        stepping = now - self.mark[0] - (compile_seconds() - self.mark[2])
        rate = (step - self.mark[1]) / stepping if stepping > 0 else 0.0
        left = (self.total - step) / rate if rate > 0 else math.inf
        if self.log_json:
            self.event("progress", step=step, time=t, steps_per_s=rate, eta_s=left if math.isfinite(left) else None)
            return
        if self.quiet:
            return
        frac = step / self.total if self.total else 1.0
        bar = "#" * int(30 * frac)
        line = (f"[{bar:<30}] {100 * frac:5.1f}%  step {step}/{self.total}  t={t:.6g}  {rate:,.0f} steps/s  "
                f"ETA {format_duration(left)}")  # fmt: skip
        if self.tty:
            print("\r" + line, end="", file=self.stream, flush=True)
        else:
            print(line, file=self.stream, flush=True)
        self.shown = True

    def close(self):
        if self.shown and self.tty and not self.quiet and not self.log_json:
            print(file=self.stream)


class Chunker:
    """How many steps to advance between looks at the clock: about ``seconds`` of work at
    the rate measured so far (at least one step)."""

    def __init__(self, seconds: float = 0.5):
        self.seconds = seconds
        self.rate = None
        self._t0 = None

    def steps(self, wanted: int) -> int:
        if self.rate is None:
            return min(wanted, 1)
        return max(1, min(wanted, int(self.rate * self.seconds)))

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def done(self, n: int) -> None:
        dt = time.perf_counter() - self._t0
        if dt > 0:
            rate = n / dt
            self.rate = rate if self.rate is None else 0.5 * (self.rate + rate)


__all__ = ["ASSUMED_RATE", "Chunker", "LONG_RUN_STEPS", "MAX_STEPS", "Progress", "format_duration", "json_event",
           "long_run_refused"]
