"""Contact candidates in O(N): a Verlet neighbour list built from a cell list.

Each particle keeps the list of every other particle closer than ``r_i + r_j + skin``
(both directions, so the contact kernel gathers without atomics). The list stays valid
while no particle has moved more than ``skin/2`` from where it was at the last build:
then a pair within contact range now was within ``r_i + r_j + skin`` at the build. The
check costs one reduction per force evaluation; a rebuild bins the particles into cubic
cells at least one cutoff wide (sorted by cell with the backend's ``argsort``) and scans
the 27 cells around each particle (:func:`kernels.interactions.build`,
``neighbor_build_body``).

Capacity: the list is a fixed ``(N, capacity)`` int32 array. The build writes the true
count of every particle; if any exceeds the capacity the host grows it (to 1.5× the
largest count) and builds again, so no candidate is ever dropped.
"""

from __future__ import annotations

import math

import numpy as np

#: The grid has at most this many cells per particle (plus a floor); sparse scenes get
#: coarser cells instead of a huge, mostly empty grid.
CELLS_PER_PARTICLE = 4

#: A system wider than this many contact cutoffs is taken as blown up (a loud error).
MAX_SPAN = 1e9


class NeighborList:
    """Verlet list over all particles; see the module docstring.

    Arrays (backend): ``nbr`` (N, capacity) int32 neighbour indices; ``count`` (N,) int32;
    ``x_ref`` (N, 3) positions at the last build.
    """

    def __init__(self, backend, radius, skin: float, capacity: int = 16):
        if not (skin >= 0 and math.isfinite(skin)):
            raise ValueError(f"skin: must be finite and >= 0, got {skin!r}")
        xp = backend.xp
        self.backend = backend
        self.radius = radius
        self.n = int(radius.shape[0])
        self.skin = float(skin)
        self.max_radius = float(radius.max())
        self.capacity = max(1, int(capacity))
        self.nbr = xp.zeros((self.n, self.capacity), dtype=np.int32)
        self.count = xp.zeros(self.n, dtype=np.int32)
        self.x_ref = xp.zeros((self.n, 3), dtype=radius.dtype)
        self.valid = False
        self.builds = 0
        self.regrows = 0

    def update(self, x) -> bool:
        """Rebuild if a particle moved more than ``skin/2`` since the last build (or never
        built); returns whether it rebuilt."""
        if self.valid and self.n:
            d = x - self.x_ref
            with np.errstate(over="ignore", invalid="ignore"):  # a blown-up state rebuilds and fails there
                moved = float((d * d).sum(axis=1).max())
            if moved <= (0.5 * self.skin) ** 2:
                return False
        self.build(x)
        return True

    def invalidate(self) -> None:
        self.valid = False

    def build(self, x) -> None:
        xp = self.backend.xp
        n = self.n
        cutoff = 2.0 * self.max_radius + self.skin
        lo = self.backend.to_host(x.min(axis=0)).astype(np.float64)
        hi = self.backend.to_host(x.max(axis=0)).astype(np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            extent = np.maximum(hi - lo, 0.0)
            span = extent / cutoff
        if not (np.isfinite(span).all() and (span <= MAX_SPAN).all()):
            from .integrators import NonFiniteError

            raise NonFiniteError(
                f"neighbour search: the particles span {span.max():.3g} contact cutoffs (allowed at most "
                f"{MAX_SPAN:g}); positions are not finite or the state has blown up. The state is unchanged; "
                "reduce the step."
            )
        cell = cutoff
        dims = np.floor(extent / cell).astype(np.int64) + 1
        limit = max(CELLS_PER_PARTICLE * n, 64)
        while int(np.prod(dims)) > limit:  # coarser cells for sparse scenes
            cell *= 1.5
            dims = np.floor(extent / cell).astype(np.int64) + 1
        inv_cell = 1.0 / cell
        origin = xp.asarray(lo)
        ijk = xp.floor((x - origin) * inv_cell).astype(np.int64)
        dims_dev = xp.asarray(dims)
        ijk = xp.minimum(xp.maximum(ijk, 0), dims_dev - 1)
        lin = (ijk[:, 2] * int(dims[1]) + ijk[:, 1]) * int(dims[0]) + ijk[:, 0]
        order = xp.argsort(lin, kind="stable")
        sorted_lin = lin[order]
        cells = xp.arange(int(np.prod(dims)), dtype=np.int64)
        cell_start = xp.searchsorted(sorted_lin, cells, side="left")
        cell_end = xp.searchsorted(sorted_lin, cells, side="right")
        kern = self.backend.kernels
        while True:
            kern.neighbor_build(x, self.radius, self.skin, origin, inv_cell, dims_dev, order, cell_start, cell_end,
                                self.nbr, self.count)  # fmt: skip
            most = int(self.count.max()) if n else 0
            if most <= self.capacity:
                break
            self.capacity = int(math.ceil(1.5 * most))
            self.nbr = xp.zeros((n, self.capacity), dtype=np.int32)
            self.regrows += 1
        self.x_ref[...] = x
        self.valid = True
        self.builds += 1

    def pairs(self) -> np.ndarray:
        """Host array (P, 2) of the listed pairs ``i < j`` (for tests and analysis)."""
        nbr, count = self.backend.to_host(self.nbr), self.backend.to_host(self.count)
        rows = np.repeat(np.arange(self.n), count)
        cols = np.concatenate([nbr[i, : count[i]] for i in range(self.n)]) if self.n else np.zeros(0, int)
        p = np.stack([rows, cols], axis=1)
        return np.unique(np.sort(p[p[:, 0] != p[:, 1]], axis=1), axis=0)

    @property
    def bytes(self) -> int:
        return int(self.nbr.nbytes + self.count.nbytes + self.x_ref.nbytes)
