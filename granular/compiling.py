"""Numba compilation seen from the commands: how long it took (kept apart from the
stepping rates) and a notice while it happens.

The kernels are compiled on first use and cached on disk (:mod:`kernels.cache`), so the
first run on a machine (or after an upgrade) spends tens of seconds compiling before and
between its first steps, and later runs load the compiled code in about a second. Every
Numba compilation in the process raises the ``numba:compile`` event (a load from the cache
does not); :data:`WATCH` listens to it from the import of this module on, and counts the
seconds spent in outermost compilations (a function compiled while another one compiles
counts once, inside its caller).

:class:`CompileNotice` tells a person at the console: one line when a compilation
starts (``granular: compiling the kernels for this run ...``) with the seconds so far on a
terminal, and the total at the end; or JSON-lines events (``compile``) for job scripts.
"""

from __future__ import annotations

import sys
import threading
import time

from numba.core import event

from kernels.cache import cache_dir

from .io import jsonio

__all__ = ["WATCH", "CompileNotice", "compile_seconds", "describe_cache"]


class _Watch(event.Listener):
    """Totals of the outermost Numba compilations of this process."""

    def __init__(self):
        self._depth = 0
        self._t0 = 0.0
        self.seconds = 0.0
        self.count = 0
        self.listeners = []

    @property
    def compiling(self) -> bool:
        return self._depth > 0

    def since(self) -> float:
        """Seconds spent in the compilation under way (0 when none is)."""
        return time.perf_counter() - self._t0 if self._depth else 0.0

    def on_start(self, ev):
        self._depth += 1
        if self._depth == 1:
            self._t0 = time.perf_counter()
            for fn in list(self.listeners):
                fn("start", self)

    def on_end(self, ev):
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._t0
            self.count += 1
            for fn in list(self.listeners):
                fn("end", self)


#: The process's compile totals (registered once, on import).
WATCH = _Watch()
event.register("numba:compile", WATCH)


def compile_seconds() -> float:
    """Seconds this process has spent compiling so far (finished compilations)."""
    return WATCH.seconds


def describe_cache() -> str:
    """Where the compiled kernels are kept, CPU and GPU (for the notice)."""
    return cache_dir() or "nowhere: no writable cache directory, so every run compiles"


class CompileNotice:
    """While active (a context manager), tell ``stream`` when kernels are being compiled.

    On a terminal: ``granular: compiling the kernels for this run (once: later runs load
    them from DIR) ... 12 s``, the seconds updated every second, the line cleared when the
    compilation ends (a progress bar takes the line over). Elsewhere (a log): the notice
    once, when the first compilation starts. With ``log_json``, the events
    ``{"event": "compile", "state": "start"}`` and ``{"event": "compile", "state": "end",
    "seconds": ...}`` on stdout instead; ``quiet`` prints nothing. ``total`` after the
    block: the seconds compiled while it was active."""

    def __init__(self, stream=None, quiet=False, log_json=False, what="the kernels for this run"):
        self.stream = stream or sys.stderr
        self.quiet, self.log_json = quiet, log_json
        self.what = what
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.announced = False
        self.total = 0.0
        self._start_total = 0.0
        self._ticker = None
        self._stop = threading.Event()
        self._width = 0

    # ------------------------------------------------------------------ context

    def __enter__(self):
        self._start_total = WATCH.seconds
        WATCH.listeners.append(self._on)
        return self

    def __exit__(self, *exc):
        if self._on in WATCH.listeners:
            WATCH.listeners.remove(self._on)
        self._stop_ticker()
        self.total = WATCH.seconds - self._start_total
        return False

    def so_far(self) -> float:
        """Seconds compiled since the block began (finished compilations)."""
        return WATCH.seconds - self._start_total

    # ------------------------------------------------------------------ events

    def _line(self) -> str:
        return (f"granular: compiling {self.what} (once: later runs load them from "
                f"{describe_cache()})")  # fmt: skip

    def _on(self, state, watch) -> None:
        if self.log_json:  # the JSON-lines events of granular.run.progress.json_event
            fields = {"state": state}
            if state == "end":
                fields["seconds"] = round(watch.seconds - self._start_total, 3)
            print(jsonio.dumps({"event": "compile", **fields}), file=sys.stdout, flush=True)
            return
        if self.quiet:
            return
        if state == "start":
            if self.tty:
                self._start_ticker()
            elif not self.announced:
                print(self._line() + " ...", file=self.stream, flush=True)
            self.announced = True
        elif self.tty:
            self._stop_ticker()

    # ------------------------------------------------------------------ the terminal line

    def _show(self) -> None:
        text = f"{self._line()} ... {WATCH.since():.0f} s"
        self._width = max(self._width, len(text))
        print("\r" + text, end="", file=self.stream, flush=True)

    def _start_ticker(self) -> None:
        self._stop_ticker()
        self._stop = threading.Event()
        self._show()

        def tick(stop=self._stop):
            while not stop.wait(1.0):
                if WATCH.compiling:
                    self._show()

        self._ticker = threading.Thread(target=tick, name="granular-compile-notice", daemon=True)
        self._ticker.start()

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            print("\r" + " " * self._width + "\r", end="", file=self.stream, flush=True)
