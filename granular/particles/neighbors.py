"""Contact candidates in O(N): a Verlet neighbour list built on a hash grid, in place.

Each particle keeps the sorted list of every other particle closer than
``r_i + r_j + skin`` (both directions, so the contact kernel gathers without atomics).
The list stays valid while no particle has moved more than ``skin/2`` from where it was
at the last build: then a pair within contact range now was within ``r_i + r_j + skin``
at the build. The step kernels check that bound for every particle at every step (a
status bit), and the block loop of :mod:`granular.particles.integrators.engine` rebuilds the list
on the device at the start of a block when the displacements measured at the end of the
previous one say it is due. How the build works is in :mod:`kernels.grid`: cells one
cutoff wide, hashed into a fixed number of buckets, so a build is three launches in
fixed arrays, no host round trip, no sort and no bounding box.

Contact history (a contact law that keeps it, :mod:`kernels.contact_laws`): ``hist``
(N, capacity, H) holds the history (springs) of each listed pair, parallel to ``nbr``; a
build carries it to the new rows on the device (:mod:`kernels.grid`), and a regrow copies
it with the rows. The list, with its history, belongs to a state
(:attr:`granular.particles.state.State.neighbors`): it is saved in checkpoints and
restored by a rewind with the rest of the state.

Capacity: the list is a fixed ``(N, capacity)`` int32 array and each bucket holds at most
``depth`` particles. A build reports the largest row and bucket it found; when either
exceeds the arrays, the host grows them (to 1.5× what was found) and builds again, so no
candidate is ever dropped.
"""

from __future__ import annotations

import math

import numpy as np

from kernels import contact_laws
from kernels.laws import CONTACT_SLOT, CONTACTS_LIST, acc_layout
from kernels.layout import REPORT_BUCKET, REPORT_NEIGHBORS, REPORT_SIZE, Contacts, Grid

from ..rotations import array_module

#: Initial particles per bucket; the buckets number the next power of two >= N.
BUCKET_DEPTH = 8


def _aligned_zeros(xp, shape, dtype, align=64):
    """Zeros whose data start on an ``align``-byte boundary (a float64 contact slot is
    then exactly one cache line). CuPy's allocations already are; NumPy's need not be."""
    if xp is not np:
        return xp.zeros(shape, dtype=dtype)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    start = -raw.ctypes.data % align
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def period_rows(xp, period, dtype):
    """A periodic box as the kernels take it (``Contacts.period``): ``period`` (3, 3) rows
    ``(lo, L, 1/L)`` (``L = 0``: not periodic) as an ``xp`` array of ``dtype``, or (0, 3)
    for ``None`` (no periodic axis)."""
    if period is None or len(period) == 0:
        return xp.zeros((0, 3), dtype=dtype)
    return xp.asarray(np.asarray(period, dtype=np.float64).reshape(3, 3), dtype=dtype)


def min_image(d, period):
    """Separations ``d`` (..., 3) by the minimum image of the periodic box ``period``
    (host rows ``(lo, L, 1/L)``, :func:`period_rows`; empty: unchanged), halves rounded
    away from zero as the kernels do (:func:`kernels.laws.min_image`)."""
    if period is None or len(period) == 0:
        return d
    xp = array_module(d)
    p = xp.asarray(period)
    a = d * p[:, 2]
    k = xp.where(xp.abs(a) > 0.5, xp.copysign(xp.floor(xp.abs(a) + 0.5), a), 0.0)
    return d - k * p[:, 1]


def box_coordinates(x, period):
    """Host positions ``x`` (..., 3) put into ``[0, L)`` from the box's ``lo`` along the
    periodic axes of ``period`` (host rows ``(lo, L, 1/L)``), left as they are along the
    others (a k-d tree with ``boxsize`` takes them so); empty ``period``: unchanged."""
    if period is None or len(period) == 0:
        return x
    p = np.asarray(period, dtype=np.float64).reshape(3, 3)
    size = p[:, 1]
    inside = np.where(size > 0, np.mod(x - p[:, 0], np.where(size > 0, size, 1.0)), x)
    return np.where((size > 0) & (inside >= size), 0.0, inside)  # mod's round-up to L


def _buckets_for(n: int) -> int:
    return 1 << max(6, int(math.ceil(math.log2(max(n, 1)))))


class NeighborList:
    """Verlet list over all particles; see the module docstring.

    Arrays (backend): ``nbr`` (N, capacity) int32 neighbour indices, rows sorted;
    ``count`` (N,) int32; ``x_ref`` (N, 3) positions at the last build; ``bucket_count``
    (buckets,) int32 and ``members`` (buckets, depth) int32, the hash grid; with
    ``history`` floats of history per contact, ``hist`` (N, capacity, history) and
    ``live`` (N, capacity) uint8 (1 where a slot holds history).
    ``builds`` counts builds, ``regrows`` capacity increases; ``generation`` changes
    whenever the arrays are replaced (a bound :class:`kernels.program.Program` must be
    rebound) and ``version`` whenever the list is rebuilt outside a block.
    ``law``: the contact law's fields of the ``Contacts`` bundle
    (:meth:`granular.particles.forces.laws.ContactLaw.args`); ``kernels``: the law's
    kernels (:func:`kernels.cpu.for_law`), which build the list.
    """

    def __init__(self, backend, radius, skin: float, capacity: int = 16, history: int = 0, replica=None, law=None,
                 kernels=None, period=None):  # fmt: skip
        if not (skin >= 0 and math.isfinite(skin)):
            raise ValueError(f"skin: must be finite and >= 0, got {skin!r}")
        self.backend = backend
        self.radius = radius
        self.n = int(radius.shape[0])
        self.dtype = np.dtype(radius.dtype)
        self.skin = float(skin)
        self.max_radius = float(backend.to_host(radius).max())
        self.cutoff = 2.0 * self.max_radius + self.skin
        self.inv_cell = self.dtype.type(1.0 / self.cutoff)
        self.capacity = max(1, int(capacity))
        self.depth = BUCKET_DEPTH
        self.buckets = _buckets_for(self.n)
        self.history = int(history)
        # each particle's replica (a model of independent replicas), else none: part of the cell
        self.replica_host = None if replica is None else np.asarray(replica, np.int32)
        self.replica = backend.xp.asarray(np.zeros(0, np.int32) if replica is None else self.replica_host)
        self.law = law if law is not None else placeholder_law(backend, self.dtype)
        # a periodic box (Contacts.period): (3, 3) rows (lo, L, 1/L), or (0, 3)
        self.period = period_rows(backend.xp, period, self.dtype)
        self.period_host = backend.to_host(self.period).astype(np.float64)
        if kernels is None:  # a list of its own (no contact law): built by any law's kernels
            kernels = backend.kernels.for_law(contact_laws.hertz)
        self.kernels = kernels
        xp = backend.xp
        self.count = xp.zeros(self.n, dtype=np.int32)
        self.x_ref = xp.zeros((self.n, 3), dtype=self.dtype)
        self.bucket_count = xp.zeros(self.buckets, dtype=np.int32)
        # the CPU's sorted cell list (kernels.grid, sort_cells) for a single system: up to
        # 2 N + 64 cells; the GPU and a model of replicas use the hash grid alone
        sorted_list = backend.name == "cpu" and self.replica_host is None
        cells = 2 * self.n + 64 if sorted_list else 0
        self.order = xp.zeros(self.n if sorted_list else 0, dtype=np.int32)
        self.cell = xp.zeros(self.n if sorted_list else 0, dtype=np.int32)  # each particle's cell
        self.start = xp.zeros(cells + 2 if sorted_list else 0, dtype=np.int32)
        self.xs = xp.zeros((self.n if sorted_list else 0, 4), dtype=self.dtype)  # x y z r
        self.cells = xp.zeros(4, dtype=np.int64)
        self.box = xp.zeros(4, dtype=self.dtype)
        self._report = xp.zeros(REPORT_SIZE, dtype=np.float64)
        self.builds = 0
        self.regrows = 0
        self.generation = 0
        self.version = 0
        self.count_old = xp.zeros(self.n if self.history else 0, dtype=np.int32)
        self.valid = False
        self.nbr = self.hist = self.live = None
        self._allocate(self.capacity, self.depth)

    def _allocate(self, capacity, depth, carry=None) -> None:
        """New arrays of ``capacity`` slots per row; ``carry``: ``(nbr, count, hist)`` whose
        rows (and springs) are copied into the new arrays."""
        xp = self.backend.xp
        self.capacity, self.depth = int(capacity), int(depth)
        self.nbr = xp.zeros((self.n, self.capacity), dtype=np.int32)
        self.members = xp.zeros((self.buckets, self.depth), dtype=np.int32)
        h = self.history
        rows = self.n if h else 0
        width = self.capacity if h else 1
        # a float64 slot of springs is then exactly one cache line, as a result slot is
        self.hist = _aligned_zeros(xp, (rows, width, max(h, 1)), self.dtype)
        self.live = xp.zeros((rows, width), dtype=np.uint8)
        self.nbr_old = xp.zeros((rows, width), dtype=np.int32)
        self.hist_old = _aligned_zeros(xp, (rows, width, max(h, 1)), self.dtype)
        self.live_old = xp.zeros((rows, width), dtype=np.uint8)
        # the slots of the per-pair passes: on the CPU for every law (kernels.cpu, the
        # direct pass: each pair evaluated once, slots only for pairs that cross a
        # chunk), on the GPU where the backend evaluates each pair once
        # (PER_CONTACT_PASS) and the law keeps history; empty: each end evaluates its own
        kern = self.backend.kernels
        pairs = self.n if getattr(kern, "DIRECT_PASS", False) or (kern.PER_CONTACT_PASS and h) else 0
        self.res = _aligned_zeros(xp, (pairs, self.capacity if pairs else 1, CONTACT_SLOT), self.dtype)
        self.got = xp.zeros((pairs, self.capacity if pairs else 1), dtype=np.uint8)
        # the direct pass's running sums (force, moment, each with its compensation; a law
        # without moments keeps the force's alone, a 64-byte row in float64)
        width = acc_layout(self.kernels.law.MOMENTS)[0]
        self.acc = _aligned_zeros(xp, (self.n if getattr(kern, "DIRECT_PASS", False) else 0, width), self.dtype)
        if carry is not None and h:
            # the springs of the held slots of each row (a slot not held has none; the
            # build's copy of the rows keeps the held ones only, and its flags past a
            # row's end are left from older builds)
            nbr, count, hist, live = carry
            k = min(nbr.shape[1], self.capacity)
            held = (live[:, :k] != 0) & (xp.arange(k)[None, :] < count[:, None])
            self.nbr[:, :k] = nbr[:, :k]
            self.hist[:, :k] = xp.where(held[:, :, None], hist[:, :k], 0)
            self.live[:, :k] = (held & (hist[:, :k, h - 1] != 0)).astype(np.uint8)
            self.count[...] = xp.minimum(count, k)
        self.generation += 1
        self._bundles = None
        self.valid = False

    def resize(self, capacity: int, depth: int | None = None) -> None:
        """Start over with rows of ``capacity`` entries and buckets of ``depth`` particles
        (for example to reserve room for a dense packing ahead of time); the list must be
        built again."""
        if int(capacity) < 1 or (depth is not None and int(depth) < 1):
            raise ValueError(f"capacity and depth: must be >= 1, got {capacity!r} and {depth!r}")
        carry = (self.nbr, self.count, self.hist, self.live) if self.history else None
        self._allocate(int(capacity), self.depth if depth is None else int(depth), carry)

    def bundles(self, mode=CONTACTS_LIST):
        """The ``Contacts`` and ``Grid`` argument bundles (device views) for ``mode``
        (:data:`kernels.laws.CONTACTS_LIST`), with the law's fields (:attr:`law`)."""
        if self._bundles is None or self._bundles[0].mode != mode:
            dev = self.backend.kernels.to_device
            half = self.dtype.type(0.5 * self.skin)
            law = self.law
            contacts = Contacts(mode, dev(self.nbr), dev(self.count), dev(self.x_ref), self.dtype.type(self.skin),
                                half * half, law["vel"], law["mat"], law["pair"], law["nmat"], dev(self.hist),
                                dev(self.live), dev(self.nbr_old), dev(self.count_old), dev(self.hist_old),
                                dev(self.live_old),
                                dev(self.res), dev(self.got), dev(self.acc), dev(self.period))  # fmt: skip
            grid = Grid(self.inv_cell, np.int64(self.buckets - 1), dev(self.bucket_count), dev(self.members),
                        dev(self.replica), dev(self.order), dev(self.start), dev(self.xs), dev(self.cells),
                        dev(self.box), dev(self.cell))  # fmt: skip
            self._bundles = (contacts, grid)
        return self._bundles

    def outgrown(self, report) -> bool:
        """Whether a build that wrote ``report`` outgrew the arrays."""
        return int(report[REPORT_NEIGHBORS]) > self.capacity or int(report[REPORT_BUCKET]) > self.depth

    def overflowed(self, report, restored=False) -> bool:
        """Whether a build that wrote ``report`` outgrew the arrays; if so they are
        grown (to 1.5× the largest row or bucket found) and must be built again.

        The new arrays start from the rows and springs as they were before the build
        that overflowed (the hash grid's own copy of them), or from the arrays as they
        are now: with ``restored`` (a block whose rebuild overflowed has been undone, its
        state, rows and springs included, restored to the block's start, where it runs
        again), and after a build through the CPU's sorted cell list, which moves the
        springs within each row and leaves every row whole, old or new."""
        if not self.outgrown(report):
            return False
        rows, fill = int(report[REPORT_NEIGHBORS]), int(report[REPORT_BUCKET])
        capacity = max(self.capacity, int(math.ceil(1.5 * rows)) + 1) if rows > self.capacity else self.capacity
        depth = max(self.depth, int(math.ceil(1.5 * fill)) + 1) if fill > self.depth else self.depth
        carry = None
        if self.history:
            in_place = restored or self.sorted_list_used()
            carry = ((self.nbr, self.count, self.hist, self.live) if in_place
                     else (self.nbr_old, self.count_old, self.hist_old, self.live_old))  # fmt: skip
        self._allocate(capacity, depth, carry)
        self.regrows += 1
        return True

    def sorted_list_used(self) -> bool:
        """Whether the last binning went into the CPU's sorted cell list (not the hash
        grid)."""
        return self.backend.name == "cpu" and int(self.cells[3]) != 0

    def clear_past_ends(self) -> None:
        """Zero the springs and held flags of the slots past each row's end. A restored
        state (a block or step undone) holds the rows' listed slots as they were saved;
        a rebuild since may have held springs in slots past a row's restored end, and a
        later build, which finds every slot not held at zero, would hand them to a new
        pair there. Only such held slots are written (a slot not held has no springs)."""
        if not self.history:
            return
        xp = self.backend.xp
        past = xp.arange(self.capacity)[None, :] >= xp.minimum(self.count, self.capacity)[:, None]
        stale = past & (self.live != 0)
        self.live[stale] = 0
        self.hist[stale] = 0

    def build(self, x) -> None:
        """Build the list at ``x`` now (eager; the host waits for the result and grows the
        arrays as long as something overflowed)."""
        kern = self.kernels
        while True:
            contacts, grid = self.bundles()
            self._report.fill(0.0)
            kern.set_stream(0)
            kern.rebuild(kern.to_device(x), kern.to_device(self.radius), contacts, grid, kern.to_device(self._report))
            if not self.overflowed(self.backend.to_host(self._report)):
                break
        self.valid = True
        self.builds += 1
        self.version += 1

    def moved(self, x) -> float:
        """Largest displacement since the last build (inf if never built)."""
        if not self.valid:
            return math.inf
        d = min_image(x - self.x_ref, self.period_host)
        with np.errstate(over="ignore", invalid="ignore"):
            worst = float((d * d).sum(axis=1).max()) if self.n else 0.0
        return math.sqrt(worst) if worst == worst else math.inf

    def update(self, x) -> bool:
        """Rebuild if a particle moved more than ``skin/2`` since the last build (or never
        built); returns whether it rebuilt."""
        if self.moved(x) <= 0.5 * self.skin:
            return False
        self.build(x)
        return True

    def invalidate(self) -> None:
        self.valid = False

    def pairs(self) -> np.ndarray:
        """Host array (P, 2) of the listed pairs ``i < j`` (for tests and analysis)."""
        nbr, count = self.backend.to_host(self.nbr), self.backend.to_host(self.count)
        rows = np.repeat(np.arange(self.n), count)
        cols = np.concatenate([nbr[i, : count[i]] for i in range(self.n)]) if self.n else np.zeros(0, int)
        p = np.stack([rows, cols], axis=1)
        return np.unique(np.sort(p[p[:, 0] != p[:, 1]], axis=1), axis=0)

    def snapshot(self, into=None) -> dict:
        """Device copies of the list and its springs (``nbr``, ``count``, ``x_ref``,
        ``hist``, ``live``, and whether the list is valid), reusing ``into`` when the shapes match."""
        arrays = {"nbr": self.nbr, "count": self.count, "x_ref": self.x_ref, "hist": self.hist, "live": self.live}
        if into is None or any(into[k].shape != a.shape for k, a in arrays.items()):
            into = {k: a.copy() for k, a in arrays.items()}
        else:
            for k, a in arrays.items():
                into[k][...] = a
        into["valid"] = self.valid
        return into

    def restore_snapshot(self, snap) -> None:
        """Put a :meth:`snapshot` back (the arrays are reallocated if a regrow changed them)."""
        if snap["nbr"].shape != self.nbr.shape:
            self._allocate(snap["nbr"].shape[1], self.depth)
        for k in ("nbr", "count", "x_ref", "hist", "live"):
            getattr(self, k)[...] = snap[k]
        self.valid = snap["valid"]
        self.version += 1

    def copy(self) -> "NeighborList":
        """An independent copy: the list, its history and its counters (same backend)."""
        new = NeighborList.__new__(NeighborList)
        new.__dict__.update(self.__dict__)
        xp = self.backend.xp
        for k in ("nbr", "count", "x_ref", "bucket_count", "members", "live", "nbr_old", "count_old", "live_old", "got",
                  "_report", "order", "start", "xs", "cells", "box", "cell"):  # fmt: skip
            setattr(new, k, getattr(self, k).copy())
        for k in ("hist", "hist_old", "res", "acc"):  # aligned as _allocate makes them
            a = getattr(self, k)
            b = _aligned_zeros(xp, a.shape, a.dtype)
            b[...] = a
            setattr(new, k, b)
        new._bundles = None
        return new

    def springs(self):
        """Host arrays ``(pairs (P, 2) int64, springs (P, H))`` of every listed pair
        ``i < j`` whose springs are not all zero (each pair once, from row ``i``): the
        contact history in a form that does not depend on the list's layout (checkpoints)."""
        be = self.backend
        if not self.history:
            return np.zeros((0, 2), dtype=np.int64), np.zeros((0, 0))
        nbr, count, hist = be.to_host(self.nbr), be.to_host(self.count), be.to_host(self.hist)
        k = np.minimum(count, self.capacity)
        slot = np.arange(self.capacity)[None, :] < k[:, None]
        rows = np.broadcast_to(np.arange(self.n)[:, None], nbr.shape)
        keep = slot & (nbr > rows) & (hist != 0).any(axis=2)
        pairs = np.stack([rows[keep], nbr[keep]], axis=1).astype(np.int64)
        return pairs, hist[keep].astype(np.float64)

    def set_springs(self, x, pairs, springs) -> None:
        """Build the list at ``x`` and put the springs of ``pairs`` (from :meth:`springs`)
        into both rows of each pair. ``ValueError`` if a pair is not listed (it cannot be
        touching at ``x``)."""
        self.build(x)
        if not self.history or not len(pairs):
            return
        be = self.backend
        nbr, count = be.to_host(self.nbr), be.to_host(self.count)
        h = self.history
        if springs.shape[1:] != (h,):
            raise ValueError(f"contact history: {springs.shape[1] if springs.ndim == 2 else springs.shape} floats per "
                             f"contact, the contact law keeps {h}")  # fmt: skip
        hist = np.zeros((self.n, self.capacity, h), dtype=self.dtype)
        k = np.minimum(count, self.capacity)
        slot = np.arange(self.capacity)[None, :] < k[:, None]
        keys = np.where(slot, np.arange(self.n, dtype=np.int64)[:, None] * self.n + nbr, -1).ravel()
        order = np.argsort(keys, kind="stable")
        for a, b in ((0, 1), (1, 0)):
            want = pairs[:, a] * self.n + pairs[:, b]
            pos = np.searchsorted(keys[order], want)
            pos = np.minimum(pos, len(keys) - 1)
            found = keys[order][pos] == want
            if not found.all():
                i = int(np.argmax(~found))
                raise ValueError(f"contact history: the pair ({pairs[i, a]}, {pairs[i, b]}) is not a neighbour pair "
                                 "at the restored positions")  # fmt: skip
            hist.reshape(-1, h)[order[pos]] = springs
        self.hist[...] = be.asarray(hist)
        self.live[...] = be.asarray((hist[..., h - 1] != 0).astype(np.uint8))

    @property
    def bytes(self) -> int:
        arrays = (self.nbr, self.count, self.x_ref, self.bucket_count, self.members, self.hist, self.live, self.nbr_old,
                  self.count_old, self.hist_old, self.live_old, self.res, self.got, self.acc, self.order, self.start, self.xs,
                  self.cells, self.box, self.cell)  # fmt: skip
        return int(sum(a.nbytes for a in arrays))


def placeholder_law(backend, dtype) -> dict:
    """A contact law's fields of the ``Contacts`` bundle where there is no law (one-row
    stand-ins, never read)."""
    xp, dev = backend.xp, backend.kernels.to_device
    return {"vel": np.int64(0), "mat": dev(xp.zeros(1, dtype=np.int32)), "pair": dev(xp.zeros((1, 1), dtype=dtype)),
            "nmat": np.int64(1)}  # fmt: skip
