"""Neighbour-list build on a hash grid, in place in fixed-size arrays (no host work).

Space is cut into cubic cells at least one contact cutoff (``2 r_max + skin``) wide; a
particle's cell ``(floor(x/cell), ...)`` is hashed into one of a power-of-two number of
buckets, each holding up to ``M`` particle ids (:class:`kernels.layout.Grid`). There is
no bounding box, so a build needs no reduction over positions and no host decision:
binning is a counting pass into the buckets (atomic slots on the GPU, a serial pass on
the CPU), and :func:`build_body` scans, for each particle, the buckets of the 27 cells
around its own. A bucket can hold particles of several cells (hash collisions); a
candidate is accepted only while scanning its own cell, so it is found once. In a model
of independent replicas the replica is a fourth cell coordinate: particles of different
replicas never share a cell, so they are never neighbours, wherever they are in space.

Each row of the list is kept sorted by particle index (insertion as candidates are
found), so the list is the same set in the same order whichever way the buckets were
filled, and the contact sums over it equal those of the brute-force search bit for bit.
Overflow of a bucket or of a row is reported (``REPORT_BUCKET``, ``REPORT_NEIGHBORS``)
and the host regrows the arrays and builds again; nothing is ever dropped silently.

With a contact law that keeps history each row carries the springs of its contacts
(``Contacts.hist``); a build first copies the rows and springs aside (:func:`keep_body`)
and each new row takes the springs of the partners it shares with its old row
(:func:`carry_springs`, a merge of two sorted rows), on the device, in the same launch
as the row itself. (The CPU's sorted cell list below keeps each row's partners just before
it builds the row, and moves the springs within the row: :func:`carry_in_place`.)

On the CPU a single system (no replicas) is searched through a sorted cell list instead:
the particles' bounding box is cut into a dense grid of cells at least one cutoff wide
(wider where the box would need more cells than the arrays hold), the particles are
counting-sorted by cell (stable, so by index within a cell; each thread sorts a range of
cells, ``sort_place``) with a copy of their positions and radii in that order
(``Grid.cell``, ``order``, ``start``, ``xs``), and a row scans the nine
runs of three consecutive cells around its own: contiguous memory, no hash collisions to
test. The rows are the same sets in the same order as the hash grid's.

In a periodic box (``Contacts.period``) the period along a periodic axis is cut into
``floor(L / cell)`` equal cells (:func:`build` ``axis_cells``; one cell, scanned once,
where that is fewer than three), a particle is binned by its image in the box, the
scanned cells wrap around the axis, and the distance test takes the minimum image.

Cell coordinates are clamped to ±1e12 cells (a blown-up or non-finite position lands in
an edge cell, where the distance test still decides), so the integer arithmetic cannot
overflow.
"""

import math
from types import SimpleNamespace

from . import laws


def build(jit, history=0):
    """Compile the grid bodies with ``jit``; ``history``: the floats of history a contact
    keeps (the contact law's ``HISTORY``: carried through a build when not 0)."""
    cell_hash = jit(laws.cell_hash)

    cell_of = jit(laws.cell_of)
    min_image = jit(laws.min_image)
    periodic_cell = jit(laws.periodic_cell)

    @jit
    def replica_of(i, grid):
        """Particle ``i``'s replica (0 for a single system)."""
        return grid.replica[i] if grid.replica.shape[0] > 0 else 0

    @jit
    def axis_cells(T, period, c, inv):
        """Cells along periodic axis ``c`` for cells at least ``1 / inv`` wide: the period
        cut into ``floor(L inv)`` equal cells (at most 2^20), or into one where that is
        fewer than three (then the one cell is scanned once, not as three neighbours)."""
        m = period[c, 1] * inv
        n = 1 << 20 if not (m < T(1048576.0)) else int(m)
        return n if n >= 3 else 1

    @jit
    def cell_at(T, v, c, inv, period):
        """Hash-grid cell coordinate of position component ``v`` along axis ``c``:
        ``floor(v inv)``, or along a periodic axis (``period[c, 1] > 0``) the cell of its
        image in the box, in ``[0, axis_cells)``."""
        if period.shape[0] > 0 and period[c, 1] > T(0.0):
            return periodic_cell(T, v, period[c, 0], period[c, 2], axis_cells(T, period, c, inv))
        return cell_of(T, v, inv)

    @jit
    def axis_span(T, cc, c, n_axis, period):
        """The cells to scan around cell ``cc`` along axis ``c``: ``(first, stop, n)`` with
        ``n`` the cells of a periodic axis (coordinates wrapped into ``[0, n)`` by
        :func:`wrap_cell`) or 0 (not periodic: no wrap). A periodic axis of one cell is
        scanned once."""
        if period.shape[0] > 0 and period[c, 1] > T(0.0):
            if n_axis < 3:
                return 0, 1, 1
            return cc - 1, cc + 2, n_axis
        return cc - 1, cc + 2, 0

    @jit
    def wrap_cell(a, n):
        """Cell coordinate ``a`` wrapped into ``[0, n)`` (``n`` 0: unchanged)."""
        if n == 0:
            return a
        if a < 0:
            return a + n
        if a >= n:
            return a - n
        return a

    @jit
    def separation2(T, i, j, x, period):
        """``|x_i - x_j|²``, by the minimum image along the periodic axes."""
        d1 = x[i, 0] - x[j, 0]
        d2 = x[i, 1] - x[j, 1]
        d3 = x[i, 2] - x[j, 2]
        if period.shape[0] > 0:
            d1 = min_image(T, d1, period[0, 1], period[0, 2])
            d2 = min_image(T, d2, period[1, 1], period[1, 2])
            d3 = min_image(T, d3, period[2, 1], period[2, 2])
        return d1 * d1 + d2 * d2 + d3 * d3

    @jit
    def bucket_of(i, x, grid, period):
        """Bucket of particle ``i``'s cell (in its replica)."""
        T = x.dtype.type
        inv = grid.inv_cell
        return cell_hash(cell_at(T, x[i, 0], 0, inv, period), cell_at(T, x[i, 1], 1, inv, period),
                         cell_at(T, x[i, 2], 2, inv, period), replica_of(i, grid), grid.mask)  # fmt: skip

    @jit
    def keep_body(i, contacts):
        """Before a build: copy row ``i`` of the list, its held flags and the springs of
        its held slots to the ``_old`` arrays (the listed slots only). A slot not held has
        no springs (all zero: a contact that opens releases them, a build clears the slots
        it does not carry), so only the held ones are copied: in a loose packing most
        listed pairs do not touch, and each slot's springs are a cache line."""
        k = min(contacts.count[i], contacts.nbr.shape[1])
        contacts.count_old[i] = contacts.count[i]
        for p in range(k):
            contacts.nbr_old[i, p] = contacts.nbr[i, p]
            held = contacts.live[i, p]
            contacts.live_old[i, p] = held
            if held != 0:
                for c in range(contacts.hist.shape[2]):
                    contacts.hist_old[i, p, c] = contacts.hist[i, p, c]

    @jit
    def carry_springs(i, contacts):
        """After a build: the springs of row ``i``'s pairs that were held before the
        build (a merge of the two sorted rows), zero for the others; so a contact that
        persists through a rebuild keeps its springs bit for bit. A held pair whose slot
        did not move (most of them: a rebuild changes few rows) is not copied, since the
        build writes only the row, not the springs. Only slots that held
        springs before the build are cleared (the others are zero already), the slots
        past the new row's end included, so every slot not held stays zero."""
        T = contacts.hist.dtype.type
        nbr, old, live_old = contacts.nbr, contacts.nbr_old, contacts.live_old
        k_new = min(contacts.count[i], nbr.shape[1])
        k_old = min(contacts.count_old[i], old.shape[1])
        width = contacts.hist.shape[2]
        q = 0
        for p in range(k_new):
            j = nbr[i, p]
            while q < k_old and old[i, q] < j:
                q += 1
            if q < k_old and old[i, q] == j and live_old[i, q] != 0:
                if q != p:
                    for c in range(width):
                        contacts.hist[i, p, c] = contacts.hist_old[i, q, c]
                # held: its last float (the overlap) is not 0, as every writer of a slot
                # keeps it (reading it back would cost the cache line the copy saved)
                contacts.live[i, p] = 1
            else:
                if p < k_old and live_old[i, p] != 0:
                    for c in range(width):
                        contacts.hist[i, p, c] = T(0.0)
                contacts.live[i, p] = 0
        for p in range(k_new, k_old):
            if live_old[i, p] != 0:
                for c in range(width):
                    contacts.hist[i, p, c] = T(0.0)
                contacts.live[i, p] = 0

    @jit
    def keep_row(i, contacts):
        """Before a build through the sorted cell list: row ``i``'s partners, held flags
        and count aside in the ``_old`` arrays, not its springs (:func:`carry_in_place`
        moves those within the row)."""
        k = min(contacts.count[i], contacts.nbr.shape[1])
        contacts.count_old[i] = contacts.count[i]
        for p in range(k):
            contacts.nbr_old[i, p] = contacts.nbr[i, p]
            contacts.live_old[i, p] = contacts.live[i, p]

    @jit
    def move_spring(i, p, q, hist):
        """The springs of slot ``q`` of row ``i`` into its slot ``p``."""
        for c in range(hist.shape[2]):
            hist[i, p, c] = hist[i, q, c]

    @jit
    def clear_spring(i, p, hist):
        """Slot ``p`` of row ``i`` to zero springs."""
        T = hist.dtype.type
        for c in range(hist.shape[2]):
            hist[i, p, c] = T(0.0)

    @jit
    def carry_in_place(i, contacts):
        """After a build through the sorted cell list: what :func:`carry_springs` gives
        (each pair held before the build keeps its springs bit for bit, every other slot
        is zero), with the springs moved within the row instead of from a copy. The old
        row (:func:`keep_row`) and the new one are both sorted, so the slot a held pair
        moves to is an increasing function of the slot it leaves: the moves to an earlier
        slot, made in increasing order, and those to a later one, in decreasing order,
        never overwrite springs still to be moved. Then the slots that held springs and
        received none are cleared. A row whose partners all kept their slots (most rows
        of a rebuild) is left as it is."""
        nbr, old, live, live_old, hist = contacts.nbr, contacts.nbr_old, contacts.live, contacts.live_old, contacts.hist
        k_new = min(contacts.count[i], nbr.shape[1])
        k_old = min(contacts.count_old[i], old.shape[1])
        same = k_new == k_old
        q = 0
        for p in range(k_new):  # moves to an earlier slot, and whether any slot changed
            j = nbr[i, p]
            while q < k_old and old[i, q] < j:
                q += 1
            if q < k_old and old[i, q] == j:
                if q != p:
                    same = False
                    if q > p and live_old[i, q] != 0:
                        move_spring(i, p, q, hist)
            else:
                same = False
        if same:
            return
        q = k_old - 1
        for p in range(k_new - 1, -1, -1):  # moves to a later slot
            j = nbr[i, p]
            while q >= 0 and old[i, q] > j:
                q -= 1
            if q >= 0 and old[i, q] == j and q < p and live_old[i, q] != 0:
                move_spring(i, p, q, hist)
        q = 0
        for p in range(k_new):  # the held flags; a slot that held springs and got none is cleared
            j = nbr[i, p]
            while q < k_old and old[i, q] < j:
                q += 1
            if q < k_old and old[i, q] == j and live_old[i, q] != 0:
                live[i, p] = 1
            else:
                if p < k_old and live_old[i, p] != 0:
                    clear_spring(i, p, hist)
                live[i, p] = 0
        for p in range(k_new, k_old):
            if live_old[i, p] != 0:
                clear_spring(i, p, hist)
                live[i, p] = 0

    @jit
    def insert(i, j, n, nbr):
        """Put ``j`` into row ``i``, which holds ``n`` partners, keeping it sorted by index
        (stored while the row has room; the count goes on past it). Returns ``n + 1``."""
        if n < nbr.shape[1]:
            slot = n
            while slot > 0 and nbr[i, slot - 1] > j:
                nbr[i, slot] = nbr[i, slot - 1]
                slot -= 1
            nbr[i, slot] = j
        return n + 1

    @jit
    def finish_row(i, n, x, contacts):
        """Row ``i`` is built with ``n`` partners: its count, its reference position and
        (with history) its springs carried from the row before. Returns ``n``."""
        contacts.count[i] = n
        for c in range(3):
            contacts.x_ref[i, c] = x[i, c]
        if history > 0:
            carry_springs(i, contacts)
        return n

    @jit
    def build_body(i, x, radius, contacts, grid):
        """Row ``i`` of the Verlet list: every ``j != i`` with ``|x_i - x_j| < r_i + r_j +
        skin``, sorted by index, at most ``nbr.shape[1]`` stored and the true number in
        ``count[i]``; ``x_ref[i] = x_i``. Returns ``count[i]``."""
        T = x.dtype.type
        inv = grid.inv_cell
        nbr = contacts.nbr
        members = grid.members
        depth = members.shape[1]
        skin = contacts.skin
        period = contacts.period
        cx = cell_at(T, x[i, 0], 0, inv, period)
        cy = cell_at(T, x[i, 1], 1, inv, period)
        cz = cell_at(T, x[i, 2], 2, inv, period)
        x0, x1, nx = axis_span(T, cx, 0, axis_cells(T, period, 0, inv) if period.shape[0] > 0 else 0, period)
        y0, y1, ny = axis_span(T, cy, 1, axis_cells(T, period, 1, inv) if period.shape[0] > 0 else 0, period)
        z0, z1, nz = axis_span(T, cz, 2, axis_cells(T, period, 2, inv) if period.shape[0] > 0 else 0, period)
        ri = replica_of(i, grid)
        replicas = grid.replica.shape[0] > 0
        n = 0
        for az in range(z0, z1):
            ccz = wrap_cell(az, nz)
            for ay in range(y0, y1):
                ccy = wrap_cell(ay, ny)
                for ax in range(x0, x1):
                    ccx = wrap_cell(ax, nx)
                    b = cell_hash(ccx, ccy, ccz, ri, grid.mask)
                    filled = min(grid.bucket_count[b], depth)
                    for p in range(filled):
                        j = members[b, p]
                        if j == i:
                            continue
                        if cell_at(T, x[j, 0], 0, inv, period) != ccx or cell_at(T, x[j, 1], 1, inv, period) != ccy:
                            continue
                        if cell_at(T, x[j, 2], 2, inv, period) != ccz:
                            continue
                        if replicas and grid.replica[j] != ri:  # another replica's particle in this cell
                            continue
                        cut = radius[i] + radius[j] + skin
                        if separation2(T, i, j, x, period) < cut * cut:
                            n = insert(i, j, n, nbr)
        return finish_row(i, n, x, contacts)

    @jit
    def sorted_cell(T, v, lo, inv, cells):
        """Cell coordinate of one position component in the sorted cell list, clamped to
        ``[0, cells)`` (a NaN or infinity goes to an edge cell, where the distance test
        still decides)."""
        c = (v - lo) * inv
        if not (c > T(0.0)):
            return 0
        if c >= T(cells - 1):
            return cells - 1
        return int(c)

    @jit
    def cells_across(T, extent):
        """Cells of the sorted list along an axis ``extent`` cells long (at most 2^20:
        the float is compared before it becomes an integer, so it cannot overflow)."""
        if not (extent < T(1048575.0)):
            return 1 << 20
        return int(extent) + 1

    @jit
    def sorted_axis(T, v, c, grid, period):
        """Cell of position component ``v`` along axis ``c`` in the sorted cell list:
        :func:`sorted_cell` from the box's low corner, or along a periodic axis the cell of
        its image in the period."""
        if period.shape[0] > 0 and period[c, 1] > T(0.0):
            return periodic_cell(T, v, period[c, 0], period[c, 2], grid.cells[c])
        return sorted_cell(T, v, grid.box[c], grid.box[3], grid.cells[c])

    @jit
    def sorted_index(T, i, x, grid, period):
        """Particle ``i``'s cell in the sorted cell list (row-major, ``x`` fastest)."""
        nx, ny = grid.cells[0], grid.cells[1]
        return (sorted_axis(T, x[i, 2], 2, grid, period) * ny + sorted_axis(T, x[i, 1], 1, grid, period)) * nx \
            + sorted_axis(T, x[i, 0], 0, grid, period)

    @jit
    def sort_box(x, grid, period):
        """The sorted cell list's cells (serial, deterministic): the bounding box of the
        finite coordinates (along a periodic axis the period itself, cut into equal
        cells, :func:`axis_cells`), cells at least ``1 / inv_cell`` wide (and wider while
        the grid would have more cells than ``start`` holds). Returns False where the
        list cannot be used (replicas, or no arrays): the hash grid serves then."""
        n = x.shape[0]
        cap = grid.start.shape[0] - 2
        if cap < 1 or grid.replica.shape[0] > 0 or grid.order.shape[0] < n or grid.cell.shape[0] < n:
            grid.cells[3] = 0
            return False
        T = x.dtype.type
        lo0 = lo1 = lo2 = T(0.0)
        hi0 = hi1 = hi2 = T(0.0)
        seen = False
        for i in range(n):
            a, b, c = x[i, 0], x[i, 1], x[i, 2]
            if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
                continue
            if not seen:
                lo0, lo1, lo2, hi0, hi1, hi2 = a, b, c, a, b, c
                seen = True
            else:
                lo0, hi0 = min(lo0, a), max(hi0, a)
                lo1, hi1 = min(lo1, b), max(hi1, b)
                lo2, hi2 = min(lo2, c), max(hi2, c)
        periodic = period.shape[0] > 0
        # a hair wider than the cutoff: a pair just inside it is never two cells apart by rounding
        width = (T(1.0) / grid.inv_cell) * T(1.000001)
        while True:
            inv = T(1.0) / width
            nx = cells_across(T, (hi0 - lo0) * inv)
            ny = cells_across(T, (hi1 - lo1) * inv)
            nz = cells_across(T, (hi2 - lo2) * inv)
            if periodic:
                if period[0, 1] > T(0.0):
                    nx = axis_cells(T, period, 0, inv)
                if period[1, 1] > T(0.0):
                    ny = axis_cells(T, period, 1, inv)
                if period[2, 1] > T(0.0):
                    nz = axis_cells(T, period, 2, inv)
            if nx * ny * nz <= cap or not (width < T(1.0e300)):
                break
            width = width * T(1.25)
        if nx * ny * nz > cap:  # extents near the largest float: one cell
            nx = ny = nz = 1
        grid.cells[0], grid.cells[1], grid.cells[2], grid.cells[3] = nx, ny, nz, 1
        grid.box[0], grid.box[1], grid.box[2], grid.box[3] = lo0, lo1, lo2, inv
        return True

    @jit
    def sort_index(lo, hi, x, grid, period):
        """Particles ``[lo, hi)``'s cells in the sorted cell list into ``grid.cell``
        (after :func:`sort_box`)."""
        T = x.dtype.type
        for i in range(lo, hi):
            grid.cell[i] = sorted_index(T, i, x, grid, period)

    @jit
    def sort_place(c0, c1, x, radius, grid):
        """The counting sort of the particles in cells ``[c0, c1)`` (their cells from
        :func:`sort_index`), stable: each cell's particles in index order. The first place
        of cell ``c0`` is the number of particles in the cells before it, counted here, so
        disjoint ranges of cells can be sorted at once (they write disjoint parts of
        ``start``, ``order`` and ``xs``). Afterwards ``start[c + 1]`` is the end of cell
        ``c``, and ``start[0] = 0``."""
        n = x.shape[0]
        ncell = grid.cells[0] * grid.cells[1] * grid.cells[2]
        start, cell, order, xs = grid.start, grid.cell, grid.order, grid.xs
        for c in range(c0, c1):
            start[c + 1] = 0
        below = 0
        for i in range(n):
            c = cell[i]
            if c < c0:
                below += 1
            elif c < c1:
                start[c + 1] += 1
        k = below
        for c in range(c0, c1):  # start[c + 1]: the first place of cell c
            m = start[c + 1]
            start[c + 1] = k
            k += m
        # placing in increasing index moves start[c + 1] to the end of cell c (the
        # beginning of cell c + 1), which leaves cell c at start[c]:start[c + 1]
        for i in range(n):
            c = cell[i]
            if c >= c0 and c < c1:
                k = start[c + 1]
                start[c + 1] = k + 1
                order[k] = i
                xs[k, 0] = x[i, 0]
                xs[k, 1] = x[i, 1]
                xs[k, 2] = x[i, 2]
                xs[k, 3] = radius[i]
        if c0 == 0:
            start[0] = 0
        if c1 == ncell:
            start[ncell + 1] = n

    @jit
    def sort_cells(x, radius, grid, period):
        """Bin every particle into the sorted cell list, serially (:func:`sort_box`,
        :func:`sort_index`, :func:`sort_place` over every cell). Afterwards the
        particles of cell ``c`` are ``order[start[c]:start[c + 1]]``, their positions and
        radii ``xs`` (``x y z r``) in the same rows, so a scan reads one row of four
        floats per candidate. Returns False where the list cannot be used (replicas, or
        no arrays): the hash grid serves then."""
        if not sort_box(x, grid, period):
            return False
        sort_index(0, x.shape[0], x, grid, period)
        sort_place(0, grid.cells[0] * grid.cells[1] * grid.cells[2], x, radius, grid)
        return True

    @jit
    def scan_run(i, k0, k1, n, xi, yi, zi, ri, skin, nbr, order, xs):
        """Add to row ``i`` (``n`` partners so far) the particles ``order[k0:k1]`` of the
        sorted cell list within the cutoff (no periodic axis); returns the new count. The
        distance is tested first: ``i`` itself passes it and is skipped only then, so a
        rejected candidate costs no load of its index."""
        for k in range(k0, k1):
            d1 = xi - xs[k, 0]
            d2 = yi - xs[k, 1]
            d3 = zi - xs[k, 2]
            cut = ri + xs[k, 3] + skin  # the hash grid's sum, in its order
            if d1 * d1 + d2 * d2 + d3 * d3 < cut * cut:
                j = order[k]
                if j != i:
                    n = insert(i, j, n, nbr)
        return n

    @jit
    def scan_run_periodic(i, k0, k1, n, xi, yi, zi, ri, skin, nbr, order, xs, period):
        """:func:`scan_run` with the distance by the minimum image along the periodic
        axes."""
        T = xs.dtype.type
        for k in range(k0, k1):
            d1 = min_image(T, xi - xs[k, 0], period[0, 1], period[0, 2])
            d2 = min_image(T, yi - xs[k, 1], period[1, 1], period[1, 2])
            d3 = min_image(T, zi - xs[k, 2], period[2, 1], period[2, 2])
            cut = ri + xs[k, 3] + skin
            if d1 * d1 + d2 * d2 + d3 * d3 < cut * cut:
                j = order[k]
                if j != i:
                    n = insert(i, j, n, nbr)
        return n

    @jit
    def finish_sorted_row(i, n, x, contacts):
        """Row ``i`` is built through the sorted cell list with ``n`` partners: its count,
        its reference position and (with history) its springs moved in place. A row that
        outgrew its array gets its old partners back and keeps its springs where they
        were, its count ``n`` reporting the overflow (:func:`restore_counts` then gives
        it its old count: every row is then whole, old or new, for the regrow). Returns
        ``n``."""
        contacts.count[i] = n
        for c in range(3):
            contacts.x_ref[i, c] = x[i, c]
        if history > 0:
            if n <= contacts.nbr.shape[1]:
                carry_in_place(i, contacts)
            else:
                for p in range(min(contacts.count_old[i], contacts.nbr.shape[1])):
                    contacts.nbr[i, p] = contacts.nbr_old[i, p]
        return n

    @jit
    def restore_counts(i, contacts):
        """After a build through the sorted cell list that overflowed: row ``i``, if it
        outgrew its array (:func:`finish_sorted_row`), back to its old count."""
        if contacts.count[i] > contacts.nbr.shape[1]:
            contacts.count[i] = contacts.count_old[i]

    @jit
    def sorted_body(i, x, radius, contacts, grid):
        """Row ``i`` of the Verlet list from the sorted cell list (:func:`sort_cells`):
        what :func:`build_body` gives, the nine runs of three cells around ``i``'s own
        scanned in place of 27 hash buckets (along a periodic ``x`` three runs of one
        cell, wrapped). With history the row's partners and flags are first kept aside
        (:func:`keep_row`) and its springs then moved within the row
        (:func:`carry_in_place`): no keeping pass over every row before the build, and no
        copy of the springs. Returns ``count[i]``."""
        T = x.dtype.type
        nbr = contacts.nbr
        skin = contacts.skin
        period = contacts.period
        nx, ny, nz = grid.cells[0], grid.cells[1], grid.cells[2]
        xi, yi, zi = x[i, 0], x[i, 1], x[i, 2]
        cx = sorted_axis(T, xi, 0, grid, period)
        cy = sorted_axis(T, yi, 1, grid, period)
        cz = sorted_axis(T, zi, 2, grid, period)
        ri = radius[i]
        x0, x1, px = axis_span(T, cx, 0, nx, period)
        y0, y1, py = axis_span(T, cy, 1, ny, period)
        z0, z1, pz = axis_span(T, cz, 2, nz, period)
        if px == 0:
            x0 = max(x0, 0)
            x1 = min(x1, nx)
        if py == 0:
            y0 = max(y0, 0)
            y1 = min(y1, ny)
        if pz == 0:
            z0 = max(z0, 0)
            z1 = min(z1, nz)
        order, start, xs = grid.order, grid.start, grid.xs
        if history > 0:  # the row aside as it was (its springs stay where they are)
            keep_row(i, contacts)
        n = 0
        if period.shape[0] == 0:  # the common case: runs of three cells, no image to take
            for az in range(z0, z1):
                for ay in range(y0, y1):
                    row = (az * ny + ay) * nx
                    n = scan_run(i, start[row + x0], start[row + x1], n, xi, yi, zi, ri, skin, nbr, order, xs)
            return finish_sorted_row(i, n, x, contacts)
        for az in range(z0, z1):
            z = wrap_cell(az, pz)
            for ay in range(y0, y1):
                row = (z * ny + wrap_cell(ay, py)) * nx
                if px == 0:
                    n = scan_run_periodic(i, start[row + x0], start[row + x1], n, xi, yi, zi, ri, skin, nbr, order,
                                          xs, period)  # fmt: skip
                else:
                    for ax in range(x0, x1):
                        c = row + wrap_cell(ax, px)
                        n = scan_run_periodic(i, start[c], start[c + 1], n, xi, yi, zi, ri, skin, nbr, order, xs,
                                              period)  # fmt: skip
        return finish_sorted_row(i, n, x, contacts)

    return SimpleNamespace(cell_hash=cell_hash, cell_of=cell_of, bucket_of=bucket_of, build_body=build_body,
                           keep_body=keep_body, sort_cells=sort_cells, sort_box=sort_box, sort_index=sort_index,
                           sort_place=sort_place, sorted_body=sorted_body, restore_counts=restore_counts)  # fmt: skip
