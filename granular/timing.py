"""The one timing harness of the benchmarks (``granular bench`` and every ``bench/`` script).

:func:`time_steps` times a step function the same way everywhere: the first call
(compilation, allocation, first touch, graph capture) is outside the timed region; the
device is synchronised inside it; the run grows until it lasts ``min_time`` seconds.
:func:`machine` describes where a figure was measured, and :func:`write_json` saves rows
with that description. Rates are printed, never asserted.
"""

from __future__ import annotations

import os
import platform
import sys
import time

from .io.jsonio import dumps
from .provenance import versions

__all__ = ["machine", "time_blocks", "time_steps", "write_json"]


def time_steps(advance, synchronize, first=1, min_time=1.0, warmup=1, max_steps=10**9) -> tuple[int, float]:
    """Time ``advance(k)`` (``k`` steps): ``(steps, seconds)`` over at least ``min_time``
    seconds (at least one call). ``warmup`` steps are taken first, untimed; then calls of
    ``first`` steps, doubling the call length each time, at most ``max_steps`` in all. Where the length of
    a call matters (a fixed launch size), use :func:`time_blocks`."""
    if warmup:
        advance(warmup)
    synchronize()
    steps, elapsed, k = 0, 0.0, max(1, min(int(first), max_steps))
    while True:
        t0 = time.perf_counter()
        advance(k)
        synchronize()
        elapsed += time.perf_counter() - t0
        steps += k
        if elapsed >= min_time or steps >= max_steps:
            return steps, elapsed
        k = min(2 * k, max_steps - steps)


def time_blocks(advance, synchronize, block, min_time=1.0, warmup=1) -> tuple[int, float]:
    """Like :func:`time_steps` with every call ``block`` steps long (a fixed launch size)."""
    if warmup:
        advance(warmup)
    synchronize()
    steps, elapsed = 0, 0.0
    while True:
        t0 = time.perf_counter()
        advance(block)
        synchronize()
        elapsed += time.perf_counter() - t0
        steps += block
        if elapsed >= min_time:
            return steps, elapsed


def machine(**extra) -> dict:
    """Where a figure was measured: Python, platform, cores, date, library versions
    (:func:`granular.provenance.versions`), Numba's thread count, and ``extra``."""
    out = {"python": sys.version.split()[0], "platform": platform.platform(), "cpu_count": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d"), "versions": versions()}  # fmt: skip
    try:
        import numba

        out["numba_threads"] = numba.get_num_threads()
    except ImportError:  # pragma: no cover - numba is a dependency
        out["numba_threads"] = None
    out.update(extra)
    return out


def write_json(path, rows, **meta) -> None:
    """``{"meta": machine(**meta), "results": rows}`` to ``path`` (standard JSON:
    :mod:`granular.io.jsonio`)."""
    with open(path, "w") as fh:
        fh.write(dumps({"meta": machine(**meta), "results": rows}, indent=2))
