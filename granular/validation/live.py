"""What ``granular validate`` prints while a study runs: each figure as it is measured,
with the time so far and an estimate of the time left.

A study is a sequence of measurements, each ending in a :class:`~.report.Check`; the
checks are told to :class:`LiveChecks` as they are made. The estimate comes from the
last run of the same study, mode and backend on this machine (its number of checks and
its seconds without compilation, kept in the user's cache directory beside the compiled
kernels): the first run says it has none. A line every :attr:`LiveChecks.quiet_after`
seconds without a check says the study is still measuring.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from kernels.cache import user_cache_base

from ..compiling import WATCH, compile_seconds
from ..run.progress import json_event
from . import report


def _history_path(name: str, mode: str, backend: str) -> str:
    return os.path.join(user_cache_base(), "validate", f"{name}-{mode}-{backend}.json")


def _fmt(seconds: float) -> str:
    s = int(round(max(seconds, 0.0)))
    return f"{s} s" if s < 120 else f"{s // 60} min {s % 60:02d} s"


class LiveChecks:
    """Context manager: print each check of study ``name`` (``mode``: quick, full, long)
    on ``stream`` as it is made, ``[k/K] ok|FAIL name: value (elapsed, about T left)``;
    ``quiet``: print nothing, but still learn the study's length for the next estimate;
    ``log_json``: JSON lines on stdout instead (``start``, ``figure`` with ``index``,
    ``check``, ``value``, ``passed``, ``elapsed_s``, ``eta_s``; ``progress`` while measuring)."""

    quiet_after = 20.0

    def __init__(self, name, mode="full", backend="cpu", stream=None, quiet=False, history=None, log_json=False):
        self.name, self.mode, self.backend = name, mode, backend
        self.stream = stream or sys.stderr
        self.quiet, self.log_json = quiet, log_json
        self.history = _history_path(name, mode, backend) if history is None else history
        self.expected = None  # (checks, seconds) of the last run
        self.count = 0
        self._t0 = self._c0 = 0.0
        self._last = 0.0
        self._stop = threading.Event()
        self._ticker = None
        self._lock = threading.Lock()

    # ----------------------------------------------------------------- context

    def __enter__(self):
        self.expected = self._load()
        self._t0 = self._last = time.monotonic()
        self._c0 = compile_seconds()
        if self.log_json:
            k, secs = self.expected or (None, None)
            json_event("start", study=self.name, mode=self.mode, backend=self.backend, figures_expected=k,
                       seconds_expected=secs)  # fmt: skip
        if self.log_json or not self.quiet:
            self._ticker = threading.Thread(target=self._tick, name="granular-validate-live", daemon=True)
            self._ticker.start()
        if not self.quiet and not self.log_json:
            if self.expected:
                k, secs = self.expected
                guess = f"{k} figures; about {_fmt(secs)} here last time, once the kernels were compiled"
            else:
                guess = "no estimate yet (the first run of this study here)"
            self._print(f"granular validate {self.name} ({self.mode}, {self.backend}): {guess}; "
                        "each figure is printed as it is measured")  # fmt: skip
        report._LIVE.append(self._tell)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._tell in report._LIVE:
            report._LIVE.remove(self._tell)
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if exc_type is None and self.count:
            self._save(self.count, self.stepping())
        return False

    # ----------------------------------------------------------------- the figures

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def stepping(self) -> float:
        """Seconds so far less those spent compiling kernels."""
        return self.elapsed() - (compile_seconds() - self._c0)

    def rest(self):
        """Seconds left by the last run's length, or None without one."""
        return None if not self.expected else max(0.0, self.expected[1] - self.stepping())

    def left(self) -> str:
        if not self.expected:
            return ""
        k, secs = self.expected
        rest = secs - self.stepping()
        if self.count >= k:
            return ", the last figure"
        return f", about {_fmt(rest)} left" if rest > 0 else ", longer than last time"

    def _tell(self, check) -> None:
        self.count += 1
        if self.log_json:
            with self._lock:
                json_event("figure", index=self.count, check=check.name, value=check.value, passed=check.passed,
                           elapsed_s=round(self.elapsed(), 3), eta_s=self.rest())  # fmt: skip
                self._last = time.monotonic()
            return
        if self.quiet:
            return
        total = f"/{self.expected[0]}" if self.expected else ""
        mark = "ok  " if check.passed else "FAIL"
        try:
            value = f"{float(check.value):.4g}"
        except (TypeError, ValueError):
            value = str(check.value)
        self._print(f"  [{self.count}{total}] {mark} {check.name}: {value}  ({_fmt(self.elapsed())}{self.left()})")

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            if time.monotonic() - self._last >= self.quiet_after:
                what = "compiling kernels" if WATCH.compiling else "measuring"
                if self.log_json:
                    with self._lock:
                        json_event("progress", state=what, elapsed_s=round(self.elapsed(), 3), eta_s=self.rest())
                        self._last = time.monotonic()
                else:
                    self._print(f"  ... still {what} ({_fmt(self.elapsed())}{self.left()})")

    def _print(self, line: str) -> None:
        with self._lock:
            print(line, file=self.stream, flush=True)
            self._last = time.monotonic()

    # ----------------------------------------------------------------- the estimate

    def _load(self):
        if not self.history:
            return None
        try:
            with open(self.history) as fh:
                d = json.load(fh)
            k, secs = int(d["checks"]), float(d["seconds"])
            return (k, secs) if k > 0 and secs >= 0 else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _save(self, checks: int, seconds: float) -> None:
        if not self.history:
            return
        try:
            os.makedirs(os.path.dirname(self.history), exist_ok=True)
            tmp = f"{self.history}.{os.getpid()}.part"
            with open(tmp, "w") as fh:
                json.dump({"checks": checks, "seconds": round(seconds, 3)}, fh)
            os.replace(tmp, self.history)
        except OSError:
            pass
