"""A particle system's step kernels with their arguments bound once, run in blocks.

:class:`Program` holds the argument bundles of :mod:`kernels.layout` (device views made
once, not per launch) and runs the pieces of a block of steps on one backend's kernel
module (:mod:`kernels.cpu` or :mod:`kernels.cuda`):

* head: clear the status bits and the report, put the moving walls at the clock's time
  (:meth:`Program.set_wall_clock`), save the state (for a restore if the block fails)
  and, when asked, rebuild the neighbour list in place;
* ``K`` steps (two launches each on the GPU, one compiled call on the CPU);
* tail: reduce the per-particle results into the small report array.

Only :meth:`Program.read_report` waits for the device. On a real GPU every launch goes to
one non-blocking CuPy stream, and with ``graphs`` the head, the tail and the step counts
``1, 2, 4, ..., max_graph_steps`` are each captured once as a CUDA graph (through
``numba.cuda.external_stream``) and replayed, so a block costs a few graph launches of
host time whatever its length. A capture may not allocate or read back, which is why
every buffer here has a fixed address; :meth:`Program.rebind` (a capacity regrow) drops
the graphs. Under the CUDA simulator and on the CPU the same pieces run eagerly.
"""

from __future__ import annotations

import numpy as np

#: Longest step count captured as one graph; longer blocks replay several graphs.
MAX_GRAPH_STEPS = 256


def _pieces(k: int, largest: int):
    """``k`` as a sum of powers of two, each at most ``largest`` (largest first)."""
    out = []
    p = largest
    while k > 0:
        while p > k:
            p //= 2
        out.append(p)
        k -= p
    return out


class Program:
    """Bound kernels of one particle system.

    ``kernels``: :mod:`kernels.cpu` or :mod:`kernels.cuda`. ``bundles``: a dict with the
    named tuples ``dyn``, ``saved`` (a ``Dynamics`` of the same shapes), ``par``,
    ``bonds``, ``contacts``, ``grid``, ``walls``, ``fields``, ``flags`` (device views);
    ``report``: the report as a backend array (read back by :meth:`read_report`).
    ``stream``: a CuPy stream on a real GPU (``None`` otherwise); ``graphs``: capture
    and replay blocks (real GPU only); ``launch_stream``: the stream object handed to the
    kernel module (default: numba's view of ``stream``).
    """

    def __init__(self, kernels, bundles, report, stream=None, graphs=False, launch_stream=None):
        self.k = kernels
        self.report = report
        self.cupy_stream = stream
        self.launch_stream = 0 if launch_stream is None else launch_stream
        if stream is not None and launch_stream is None:
            from numba import cuda

            self.launch_stream = cuda.external_stream(stream.ptr)
        self._default_stream_event = None  # records an event on CuPy's default stream
        if stream is not None:
            try:
                import cupy

                self._default_stream_event = cupy.cuda.Stream.null.record
            except ImportError:  # a stand-in stream (tests)
                pass
        self.graphs_enabled = bool(graphs and stream is not None)
        self._graphs = {}
        self._warm = False  # kernels are compiled and loaded by a first eager block
        self.captures = 0
        self.replays = 0
        self.rebind(bundles)

    def rebind(self, bundles) -> None:
        """New argument bundles (after a regrow); captured graphs are dropped."""
        self.b = dict(bundles)
        self._graphs.clear()

    # ----------------------------------------------------------------- eager pieces

    def _on_stream(self):
        self.k.set_stream(self.launch_stream)

    def wait_for_host_work(self) -> None:
        """Make this program's stream wait for work queued on the default stream (e.g. a
        CuPy copy into the state) before its next launch."""
        if self._default_stream_event is not None:
            self.cupy_stream.wait_event(self._default_stream_event())

    def head(self, rebuild: bool) -> None:
        b = self.b
        self._on_stream()
        self.k.block_start(b["flags"].status, b["flags"].report)
        self.k.walls_place(b["walls"])
        self.k.save(b["dyn"], b["saved"])
        if rebuild:
            self.rebuild()

    def rebuild(self) -> None:
        b = self.b
        self._on_stream()
        self.k.rebuild(b["dyn"].x, b["par"].radius, b["contacts"], b["grid"], b["flags"].report)

    def steps(self, count: int, scheme: int, h) -> None:
        b = self.b
        self._on_stream()
        self.k.steps(count, scheme, h, b["dyn"], b["par"], b["bonds"], b["contacts"], b["walls"], b["fields"],
            b["flags"].status)  # fmt: skip

    def advance(self, scheme: int, h) -> None:
        b = self.b
        self._on_stream()
        self.k.advance(scheme, h, b["dyn"], b["par"], b["contacts"], b["flags"].status)
        self.k.walls_tick(b["walls"])

    def forces(self, kick: bool, scheme: int, h) -> None:
        b = self.b
        self._on_stream()
        self.k.forces(kick, scheme, h, b["dyn"], b["par"], b["bonds"], b["contacts"], b["walls"], b["fields"],
                      b["flags"].status)  # fmt: skip

    def set_wall_clock(self, t0: float, k: int, h: float) -> None:
        """The walls' clock ``(t_0, k, h)`` before a head or a block (moving walls only,
        :mod:`kernels.walls`): queued on the stream, outside any captured graph."""
        clock = self.b["walls"].clock
        if clock.shape[0]:
            self._on_stream()
            self.k.set_clock(clock, (float(t0), float(k), float(h)))

    def velocities(self) -> None:
        """``vp = v``, ``wp = Ω`` for a force evaluation outside a step."""
        self._on_stream()
        self.k.evaluation_velocities(self.b["dyn"])

    def tail(self) -> None:
        b = self.b
        self._on_stream()
        self.k.report(b["dyn"], b["par"], b["contacts"], b["flags"].status, b["flags"].report)

    def restore(self) -> None:
        """Copy the state saved by the last head back (the block is undone)."""
        self._on_stream()
        self.k.save(self.b["saved"], self.b["dyn"])

    def read_report(self) -> np.ndarray:
        """Wait for the queued work and return the report (host float64 copy)."""
        if self.cupy_stream is not None:
            return self.report.get(stream=self.cupy_stream)
        return np.array(self.report, dtype=np.float64)

    # ---------------------------------------------------------------------- blocks

    def block(self, count: int, scheme: int, h, rebuild: bool) -> None:
        """Queue one block: head (save, optional rebuild), ``count`` steps, tail."""
        b = self.b
        if getattr(self.k, "block", None) is not None:  # the CPU: one compiled call
            self.k.block(count, scheme, h, rebuild, b["dyn"], b["saved"], b["par"], b["bonds"], b["contacts"],
                         b["grid"], b["walls"], b["fields"], b["flags"].status, b["flags"].report)  # fmt: skip
            return
        if not (self.graphs_enabled and self._warm):
            self.head(rebuild)
            self.steps(count, scheme, h)
            self.tail()
            self._warm = True
            return
        self._replay(("head", rebuild), lambda: self.head(rebuild))
        for p in _pieces(count, MAX_GRAPH_STEPS):
            self._replay(("steps", p, scheme, float(h)), lambda p=p: self.steps(p, scheme, h))
        self._replay(("tail",), self.tail)

    def _replay(self, key, record) -> None:
        graph = self._graphs.get(key)
        if graph is None:
            s = self.cupy_stream
            s.begin_capture()
            try:
                record()
            finally:
                graph = s.end_capture()
            self._graphs[key] = graph
            self.captures += 1
        graph.launch(stream=self.cupy_stream)
        self.replays += 1

    @property
    def graph_count(self) -> int:
        return len(self._graphs)
