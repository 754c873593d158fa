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
as the row itself.

Cell coordinates are clamped to ±1e12 cells (a blown-up or non-finite position lands in
an edge cell, where the distance test still decides), so the integer arithmetic cannot
overflow.
"""

from types import SimpleNamespace

from . import laws


def build(jit, history=0):
    """Compile the grid bodies with ``jit``; ``history``: the floats of history a contact
    keeps (the contact law's ``HISTORY``: carried through a build when not 0)."""
    cell_hash = jit(laws.cell_hash)

    cell_of = jit(laws.cell_of)

    @jit
    def replica_of(i, grid):
        """Particle ``i``'s replica (0 for a single system)."""
        return grid.replica[i] if grid.replica.shape[0] > 0 else 0

    @jit
    def bucket_of(i, x, grid):
        """Bucket of particle ``i``'s cell (in its replica)."""
        T = x.dtype.type
        inv = grid.inv_cell
        return cell_hash(cell_of(T, x[i, 0], inv), cell_of(T, x[i, 1], inv), cell_of(T, x[i, 2], inv),
                         replica_of(i, grid), grid.mask)  # fmt: skip

    @jit
    def keep_body(i, contacts):
        """Before a build: copy row ``i`` of the list and its springs to the ``_old``
        arrays (the listed slots only)."""
        k = min(contacts.count[i], contacts.nbr.shape[1])
        contacts.count_old[i] = contacts.count[i]
        for p in range(k):
            contacts.nbr_old[i, p] = contacts.nbr[i, p]
            for c in range(contacts.hist.shape[2]):
                contacts.hist_old[i, p, c] = contacts.hist[i, p, c]

    @jit
    def carry_springs(i, contacts):
        """After a build: the springs of row ``i``'s pairs that were listed before the
        build (a merge of the two sorted rows), zero for new pairs; so a contact that
        persists through a rebuild keeps its springs bit for bit."""
        T = contacts.hist.dtype.type
        nbr, old = contacts.nbr, contacts.nbr_old
        k_new = min(contacts.count[i], nbr.shape[1])
        k_old = min(contacts.count_old[i], old.shape[1])
        width = contacts.hist.shape[2]
        q = 0
        for p in range(k_new):
            j = nbr[i, p]
            while q < k_old and old[i, q] < j:
                q += 1
            if q < k_old and old[i, q] == j:
                for c in range(width):
                    contacts.hist[i, p, c] = contacts.hist_old[i, q, c]
                contacts.live[i, p] = 1 if contacts.hist_old[i, q, width - 1] != T(0.0) else 0
            else:
                for c in range(width):
                    contacts.hist[i, p, c] = T(0.0)
                contacts.live[i, p] = 0

    @jit
    def build_body(i, x, radius, contacts, grid):
        """Row ``i`` of the Verlet list: every ``j != i`` with ``|x_i - x_j| < r_i + r_j +
        skin``, sorted by index, at most ``nbr.shape[1]`` stored and the true number in
        ``count[i]``; ``x_ref[i] = x_i``. Returns ``count[i]``."""
        T = x.dtype.type
        inv = grid.inv_cell
        nbr = contacts.nbr
        cap = nbr.shape[1]
        members = grid.members
        depth = members.shape[1]
        skin = contacts.skin
        cx = cell_of(T, x[i, 0], inv)
        cy = cell_of(T, x[i, 1], inv)
        cz = cell_of(T, x[i, 2], inv)
        ri = replica_of(i, grid)
        replicas = grid.replica.shape[0] > 0
        n = 0
        for dz in range(-1, 2):
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    ccx = cx + dx
                    ccy = cy + dy
                    ccz = cz + dz
                    b = cell_hash(ccx, ccy, ccz, ri, grid.mask)
                    filled = min(grid.bucket_count[b], depth)
                    for p in range(filled):
                        j = members[b, p]
                        if j == i:
                            continue
                        if cell_of(T, x[j, 0], inv) != ccx or cell_of(T, x[j, 1], inv) != ccy:
                            continue
                        if cell_of(T, x[j, 2], inv) != ccz:
                            continue
                        if replicas and grid.replica[j] != ri:  # another replica's particle in this cell
                            continue
                        d1 = x[i, 0] - x[j, 0]
                        d2 = x[i, 1] - x[j, 1]
                        d3 = x[i, 2] - x[j, 2]
                        cut = radius[i] + radius[j] + skin
                        if d1 * d1 + d2 * d2 + d3 * d3 < cut * cut:
                            if n < cap:
                                slot = n
                                while slot > 0 and nbr[i, slot - 1] > j:
                                    nbr[i, slot] = nbr[i, slot - 1]
                                    slot -= 1
                                nbr[i, slot] = j
                            n += 1
        contacts.count[i] = n
        for c in range(3):
            contacts.x_ref[i, c] = x[i, c]
        if history > 0:
            carry_springs(i, contacts)
        return n

    return SimpleNamespace(cell_hash=cell_hash, cell_of=cell_of, bucket_of=bucket_of, build_body=build_body,
                           keep_body=keep_body)  # fmt: skip
