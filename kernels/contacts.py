"""The loops around a contact law (:mod:`kernels.contact_laws`), compiled once per law.

Particle ``i`` visits its candidate partners (its neighbour row, sorted by index, or,
for the brute-force search of a law without history, every other particle in index
order) and its walls, asks the law whether each is in contact, evaluates it, and adds the
force and moment to compensated running sums; it writes only its own rows. The pair is
evaluated in a canonical orientation (``d = x_lo - x_hi``, ``lo < hi``) from the same
inputs with the same operations by whichever end evaluates it, so the two ends get exact
negatives. The canonical order of a pair is that of the positions (lexicographic), not
of the indices, so a pair's terms do not depend on the particles' numbering; a particle
adds its terms in row (index) order with compensated sums.

Three ways to sum the pairs, with the same bits:

* :func:`pair_sum`, each end evaluating each of its pairs (the GPU's way: no buffer);
* :func:`pair_pass` then :func:`gather` (the GPU's with ``GRANULAR_CONTACT_PASS=per-pair``):
  the lower index evaluates each pair once and writes both ends' terms into their slots
  (``contacts.res``) and the updated history into both ends' copies; each end then adds
  its slots in row order;
* the direct pass (the CPU's, every law): over chunks of rows, :func:`cross_pass` leaves
  the pairs that cross into a later chunk in the slots; then, row by row in each chunk,
  :func:`direct_start` and :func:`direct_sum` evaluate each pair in the chunk once and add
  its term on the higher end straight into that end's running sums (``contacts.acc``),
  which hold the terms of its lower partners, added in row order as the rows go by.

History (``HISTORY`` floats per contact) lives in slots parallel to the neighbour rows
(both ends hold identical copies, ``contacts.hist``), with a byte per slot saying whether
it is held (``contacts.live``), and in ``dyn.whist`` per particle and wall. The energy a
contact dissipates is booked to the pair's lower index (a wall contact's to its
particle), in ``dyn.dissip`` by kind. A contact that opens releases its history: the law
says what that dissipates.

Material-pair parameters come from ``contacts.pair``, row :func:`pair_row` of the two
bodies' materials (a wall has a material too).
"""

import math
from types import SimpleNamespace

from . import laws
from . import meshes as mesh_loops
from .contact_laws.interface import EVALUATE, NONE, RELEASE
from .walls import FRAME_MOVING


def build(jit, law, bond_fns, meshes=False, acc_add=None):
    """The loops for ``law`` (a module of :mod:`kernels.contact_laws`), compiled with ``jit``;
    ``bond_fns``: the namespace of :func:`kernels.bonds.build` (whether a bond is intact);
    ``meshes``: the wall loops also meet the triangle meshes (:mod:`kernels.meshes`;
    without, stand-ins that find none, so that a model without meshes compiles none of
    that code); ``acc_add(acc, i, xs)``: the direct pass's compensated addition of the
    numbers ``xs`` to row ``i`` of its running sums (``kernels.cpu._acc_add``, in vector
    lanes), by default :func:`kernels.laws.compensated_add` on each."""
    L = law.build(jit)
    # the law's functions as plain names (a compiled function reads them as globals)
    law_body, law_params, law_load, law_store = L.body, L.params, L.load, L.store
    law_contact, law_pair, law_release, law_energy = L.contact, L.pair, L.release, L.energy
    law_wall_contact, law_wall, law_wall_release, law_wall_energy = (
        L.wall_contact,
        L.wall,
        L.wall_release,
        L.wall_energy,
    )
    law_moving = L.moving
    law_orient = L.orient
    cadd = jit(laws.compensated_add)
    E = laws.acc_layout(law.MOMENTS)[1]
    if acc_add is None:

        @jit
        def acc_add(acc, i, xs):
            for k in range(len(xs)):
                acc[i, k], acc[i, E + k] = cadd(acc[i, k], acc[i, E + k], xs[k])

    H = law.HISTORY
    U = H + 9  # the stored energy's place in a law's result
    D = H + 10  # the first dissipated energy's
    MOMENTS = law.MOMENTS
    DISSIPATES = law.DISSIPATES
    ODD = law.ODD
    ORIENTED = law.ORIENTED
    min_image = jit(laws.min_image)
    CONTACTS_LIST = laws.CONTACTS_LIST
    CONTACTS_ALL_PAIRS = laws.CONTACTS_ALL_PAIRS

    @jit
    def pair_row(ma, mb, nmat):
        """Row of the pair table for materials ``ma``, ``mb``. In a model of replicas with
        their own materials a material index is ``r * nmat + m`` and replica ``r``'s
        block of ``nmat²`` rows starts at ``r * nmat²``; for one system (``mb < nmat``)
        this is ``ma * nmat + mb`` (no integer division on that path)."""
        if mb >= nmat:
            mb = mb % nmat
        return ma * nmat + mb

    M = mesh_loops.build(jit, L, H, pair_row) if meshes else mesh_loops.none(jit)
    mesh_sum, mesh_energy, mesh_load_of = M.mesh_sum, M.mesh_energy, M.mesh_load
    near_mesh = M.near
    rigid_view = jit(mesh_loops.rigid_view)

    bond_terms, bond_breaks = bond_fns.bond_terms, bond_fns.bond_breaks

    @jit
    def bonded(T, i, j, update, dyn, bonds):
        """Whether an intact bond joins ``i`` and ``j`` (scan of ``i``'s CSR list): a
        bonded pair has no contact (``skip_contacts``) until its bond breaks. In a step
        (``update``) a bond that breaks in this very evaluation counts as broken: after a
        per-bond pass (the CPU's) its flag is already set; where each end evaluates its
        bonds in the force kernel (the GPU's) by the bond's own test
        (:func:`kernels.bonds.build` ``bond_breaks``, the same inputs as its end ``a`` uses
        to set the flag), so both ends agree whichever thread reads the flag first. The
        grains of a broken bond collide from that step on."""
        for p in range(bonds.offsets[i], bonds.offsets[i + 1]):
            k = bonds.incident[p]
            if bonds.a[k] == j or bonds.b[k] == j:
                if dyn.broken[k] != 0:
                    return False
                # with a per-bond pass (a (B, 9) buffer) the bonds broke before the contacts:
                # the flag is final; otherwise the bond's own test, as its end a makes it
                if update and bonds.can_break and bonds.terms.shape[0] == 0:
                    t = bond_terms(T, k, dyn.x, dyn.q, bonds)
                    if bond_breaks(T, k, update, bonds, t):
                        return False
                return True
        return False

    @jit
    def first(i, j, x):
        """Whether ``i`` comes first in the pair's canonical order: the lexicographic
        order of the positions (then the indices, for coincident or non-finite ones), so
        that a pair is evaluated the same way whatever the particles' numbering. For a
        law whose pair term is exactly odd in ``d`` (``ODD``: no moments, no history, the
        force ``c(|d|²) d``), each end evaluates from its own side (``d = x_i - x_j``): the
        terms are the same bits negated, with no comparisons."""
        if ODD:
            return True
        for c in range(3):
            if x[i, c] < x[j, c]:
                return True
            if x[j, c] < x[i, c]:
                return False
        return i < j

    @jit
    def offset(i, j, x, period):
        """``x_i - x_j`` (the minimum image in a periodic box, :func:`kernels.laws.min_image`)
        and its square, without the canonical order: only a pair in contact needs it
        (:func:`canonical`). The square is the same bits either way round (a difference
        and the minimum image are exactly odd in ``d``). (No branch merges ``i`` and ``j``
        into one variable: Numba's parallel loop index is unsigned.)"""
        d1 = x[i, 0] - x[j, 0]
        d2 = x[i, 1] - x[j, 1]
        d3 = x[i, 2] - x[j, 2]
        if period.shape[0] > 0:
            T = x.dtype.type
            d1 = min_image(T, d1, period[0, 1], period[0, 2])
            d2 = min_image(T, d2, period[1, 1], period[1, 2])
            d3 = min_image(T, d3, period[2, 1], period[2, 2])
        return d1, d2, d3, d1 * d1 + d2 * d2 + d3 * d3

    @jit
    def canonical(i, j, x, d1, d2, d3):
        """For the pair ``(i, j)`` at :func:`offset` ``d``: whether ``i`` comes first
        (:func:`first`); the sign ``-1.0`` where the canonical order differs from the order
        by index, else ``1.0``; and ``d = x_lo - x_hi`` in the canonical order (``-d``
        exactly when ``j`` comes first). A law's oriented history (its first ``ORIENTED``
        floats: the tangential spring, a displacement of ``a`` relative to ``b``) is stored
        in the order by index, which never changes, and seen by the law in the canonical
        order: multiplied by the sign on the way in and out (exact). So a contact whose
        canonical order flips (the centres pass each other in ``x``, or one is wrapped
        into a periodic box) keeps its spring."""
        T = x.dtype.type
        fi = first(i, j, x)
        sign = T(1.0) if (i < j) == fi else T(-1.0)
        if fi:
            return fi, sign, d1, d2, d3
        return fi, sign, -d1, -d2, -d3

    @jit
    def orient_slot(a, i, s, sign):
        """The oriented floats of slot ``s`` of row ``i`` of ``a`` multiplied by ``sign``
        (after :func:`law_store` wrote the law's history in the canonical order)."""
        for c in range(ORIENTED):
            a[i, s, c] = sign * a[i, s, c]

    @jit
    def row_of(i, j, contacts):
        """The pair-table row of the pair ``(i, j)``, materials in canonical order."""
        if i < j:
            return pair_row(contacts.mat[i], contacts.mat[j], contacts.nmat)
        return pair_row(contacts.mat[j], contacts.mat[i], contacts.nmat)

    @jit
    def ordered(T, fi, me, j, dyn, par):
        """The law's bodies of ``i`` (``me``) and particle ``j`` in the pair's canonical
        order (``fi``: ``i`` comes first)."""
        other = law_body(T, j, dyn, par)
        if fi:
            return me, other
        return other, me

    @jit
    def in_order(T, fi, me, j, d1, d2, d3, dist2, reach, p, hist, h, dyn, par):
        """The law on the pair of ``i`` (its body ``me``) and particle ``j``, at ``d``
        and with ``hist`` in the canonical order (:func:`canonical`; ``fi``: ``i``
        comes first): the bodies go in that order and the terms come back to ``i`` and
        ``j``. Returns the law's result and the force and moment on ``i`` (6) and on
        ``j`` (6). One inlined copy of the law whichever comes first."""
        lo, hi = ordered(T, fi, me, j, dyn, par)
        r = law_pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h)
        a = (r[0], r[1], r[2], r[3], r[4], r[5])
        b = (-r[0], -r[1], -r[2], r[6], r[7], r[8])
        if fi:
            return r, a, b
        return r, b, a

    @jit
    def evaluate(T, i, j, s, update, h, me, dyn, par, bonds, contacts, acc):
        """Add partner ``j`` (slot ``s`` of ``i``'s row; -1: no slot) to ``i``'s running
        sums ``acc = (F 3 + corrections 3, M 3 + corrections 3, U, correction, four
        dissipated energies, touching)``; with ``update`` (a step) the slot's history is
        replaced by the law's new history, or released when the contact opened."""
        x, radius = dyn.x, par.radius
        d1, d2, d3, dist2 = offset(i, j, x, contacts.period)
        reach = radius[i] + radius[j]
        held = False
        if H > 0 and s >= 0:
            held = contacts.live[i, s] != 0
        what = law_contact(T, dist2, reach, held)
        if what == NONE or (what == RELEASE and not update):
            return acc
        if bonds.skip_contacts and bonded(T, i, j, update, dyn, bonds):
            return acc
        p = law_params(contacts.pair, row_of(i, j, contacts))
        fi, sign, d1, d2, d3 = canonical(i, j, x, d1, d2, d3)
        hist = law_orient(law_load(contacts.hist, i, s), sign)
        if what == RELEASE:  # the contact opened in this step: its history's energy is released
            rel = law_release(T, radius[i], radius[j], p, hist)
            for c in range(H):
                contacts.hist[i, s, c] = T(0.0)
            contacts.live[i, s] = 0
            if DISSIPATES and i < j:
                return (acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7], acc[8], acc[9], acc[10],
                        acc[11], acc[12], acc[13], acc[14] + rel[0], acc[15] + rel[1], acc[16] + rel[2],
                        acc[17] + rel[3], acc[18])  # fmt: skip
            return acc
        r, on_i, on_j = in_order(T, fi, me, j, d1, d2, d3, dist2, reach, p, hist, h, dyn, par)
        g1, g2, g3, g4, g5, g6 = on_i
        f1, c1 = cadd(acc[0], acc[1], g1)
        f2, c2 = cadd(acc[2], acc[3], g2)
        f3, c3 = cadd(acc[4], acc[5], g3)
        m1, e1, m2, e2, m3, e3 = acc[6], acc[7], acc[8], acc[9], acc[10], acc[11]
        if MOMENTS:
            m1, e1 = cadd(m1, e1, g4)
            m2, e2 = cadd(m2, e2, g5)
            m3, e3 = cadd(m3, e3, g6)
        u, cu = cadd(acc[12], acc[13], T(0.5) * r[U])
        dn, df, dr, dt = acc[14], acc[15], acc[16], acc[17]
        if DISSIPATES and i < j:
            dn += r[D]
            df += r[D + 1]
            dr += r[D + 2]
            dt += r[D + 3]
        if update and H > 0:
            law_store(contacts.hist, i, s, r)
            orient_slot(contacts.hist, i, s, sign)
            contacts.live[i, s] = 1 if r[H + 8] != T(0.0) else 0
        return f1, c1, f2, c2, f3, c3, m1, e1, m2, e2, m3, e3, u, cu, dn, df, dr, dt, acc[18] + 1

    @jit
    def pair_sum(i, update, h, dyn, par, bonds, contacts):
        """Contact force and moment on ``i`` from its partners (compensated sums in row
        order), half of each pair's stored energy, the energy each kind dissipated in this
        step in the pairs of which ``i`` is the lower index (each pair's booked once), and
        the number of partners in contact: ``(F 3, M 3, U, D 4, count)``. Over
        ``nbr[i, :count[i]]`` (a superset of the partners in contact, in index order) or,
        for the brute-force search, every other particle in index order: the same terms in
        the same order, so the two searches agree bit for bit."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        acc = (z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, 0)
        me = law_body(T, i, dyn, par)
        if contacts.mode == CONTACTS_LIST:
            # A row that overflowed in a rebuild of this block holds only the first
            # ``capacity`` entries; the block is redone after the regrow, and until then
            # the row is read within bounds.
            for s in range(min(contacts.count[i], contacts.nbr.shape[1])):
                acc = evaluate(T, i, contacts.nbr[i, s], s, update, h, me, dyn, par, bonds, contacts, acc)
        elif H == 0 and contacts.mode == CONTACTS_ALL_PAIRS:
            for j in range(x.shape[0]):
                if j != i:
                    acc = evaluate(T, i, j, -1, update, h, me, dyn, par, bonds, contacts, acc)
        return (acc[0] + acc[1], acc[2] + acc[3], acc[4] + acc[5], acc[6] + acc[7], acc[8] + acc[9],
                acc[10] + acc[11], acc[12] + acc[13], acc[14], acc[15], acc[16], acc[17], acc[18])  # fmt: skip

    @jit
    def slot_of(j, i, contacts):
        """The slot of ``i`` in ``j``'s row (-1: absent). Rows are sorted, so for ``i < j``
        the scan stops at ``i``'s place among the first entries (``i`` is absent only from
        a row that overflowed, whose block is redone after the regrow)."""
        for k in range(min(contacts.count[j], contacts.nbr.shape[1])):
            m = contacts.nbr[j, k]
            if m >= i:
                return k if m == i else -1
        return -1

    @jit
    def pair_once(i, j, s, need_q, h, me, dyn, par, bonds, contacts):
        """The pair ``(i, j > i)`` of slot ``s`` of ``i``'s row, evaluated once, with the
        inputs and operations of :func:`pair_sum`: ``(kind, a 6, b 6, D 4, q)`` with
        ``kind`` 0 (not in contact), 1 (evaluated: ``a`` the force and moment on ``i``,
        ``b`` on ``j``, ``D`` the energies the pair dissipated in the step) or 2 (the
        contact opened: ``D`` the energies its history released). The new history (or
        its release) goes into both ends' copies; ``q`` is ``i``'s slot in ``j``'s row,
        looked up where the history needs it or ``need_q`` (else -1)."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        hist, live = contacts.hist, contacts.live
        radius = par.radius
        d1, d2, d3, dist2 = offset(i, j, x, contacts.period)
        reach = radius[i] + radius[j]
        held = False
        if H > 0:
            held = live[i, s] != 0
        what = law_contact(T, dist2, reach, held)
        if what != NONE and bonds.skip_contacts and bonded(T, i, j, True, dyn, bonds):
            what = NONE
        if what == NONE:
            return 0, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, -1
        q = -1
        if H > 0 or need_q:
            q = slot_of(j, i, contacts)
        p = law_params(contacts.pair, pair_row(contacts.mat[i], contacts.mat[j], contacts.nmat))
        fi, sign, d1, d2, d3 = canonical(i, j, x, d1, d2, d3)
        hh = law_orient(law_load(hist, i, s), sign)
        if what == RELEASE:
            rel = law_release(T, radius[i], radius[j], p, hh)
            for c in range(H):
                hist[i, s, c] = z
            live[i, s] = 0
            if q >= 0:
                for c in range(H):
                    hist[j, q, c] = z
                live[j, q] = 0
            return 2, z, z, z, z, z, z, z, z, z, z, z, z, rel[0], rel[1], rel[2], rel[3], q
        r, on_i, on_j = in_order(T, fi, me, j, d1, d2, d3, dist2, reach, p, hh, h, dyn, par)
        a1, a2, a3, a4, a5, a6 = on_i
        b1, b2, b3, b4, b5, b6 = on_j
        dn = df = dr = dt = z
        if DISSIPATES:
            dn, df, dr, dt = r[D], r[D + 1], r[D + 2], r[D + 3]
        if H > 0:
            held_now = 1 if r[H + 8] != z else 0
            law_store(hist, i, s, r)
            orient_slot(hist, i, s, sign)
            live[i, s] = held_now
            if q >= 0:
                law_store(hist, j, q, r)
                orient_slot(hist, j, q, sign)
                live[j, q] = held_now
        return 1, a1, a2, a3, a4, a5, a6, b1, b2, b3, b4, b5, b6, dn, df, dr, dt, q

    @jit
    def pair_pass(i, h, dyn, par, bonds, contacts):
        """Per-pair pass of a step (``contacts.res`` not empty): ``i`` evaluates the law
        once for each listed partner ``j > i`` (:func:`pair_once`) and writes both ends'
        terms (force, moment) into their slots ``res[i, s]`` and ``res[j, s']``
        (``nbr[j, s'] = i``) with ``got = 1``, and the pair's dissipated energy into
        ``i``'s ledger. Only ``i`` writes the slots of a pair ``(i, j > i)``, so threads
        never write the same slot. :func:`gather` then adds the slots in row order: the
        terms and the order of :func:`pair_sum`, hence the same bits."""
        T = dyn.x.dtype.type
        z = T(0.0)
        res, got, nbr = contacts.res, contacts.got, contacts.nbr
        me = law_body(T, i, dyn, par)
        dn = df = dr = dt = z
        for s in range(min(contacts.count[i], nbr.shape[1])):
            j = nbr[i, s]
            if j < i:
                continue
            r = pair_once(i, j, s, True, h, me, dyn, par, bonds, contacts)
            if r[0] == 0:
                continue
            dn += r[13]
            df += r[14]
            dr += r[15]
            dt += r[16]
            if r[0] == 2:
                continue
            res[i, s, 0] = r[1]
            res[i, s, 1] = r[2]
            res[i, s, 2] = r[3]
            res[i, s, 3] = r[4]
            res[i, s, 4] = r[5]
            res[i, s, 5] = r[6]
            got[i, s] = 1
            q = r[17]
            if q >= 0:
                res[j, q, 0] = r[7]
                res[j, q, 1] = r[8]
                res[j, q, 2] = r[9]
                res[j, q, 3] = r[10]
                res[j, q, 4] = r[11]
                res[j, q, 5] = r[12]
                got[j, q] = 1
        if DISSIPATES:
            dyn.dissip[i, 0] += dn
            dyn.dissip[i, 1] += df
            dyn.dissip[i, 2] += dr
            dyn.dissip[i, 3] += dt

    @jit
    def cross_pass(i, hi, h, dyn, par, bonds, contacts):
        """The direct pass's first half, for a chunk of rows ending at ``hi``: ``i``
        evaluates its pairs with partners ``j >= hi`` (in later chunks), once each
        (:func:`pair_once`), and leaves them in slots: ``res[j, q]`` the force and
        moment on ``j`` (``got = 1``) and the rolling and twisting dissipation (columns
        6, 7); ``res[i, s]`` the force and moment on ``i`` and the normal and friction
        dissipation, with ``got[i, s]`` 1 (evaluated) or 2 (the contact opened: only the
        dissipation). Only ``i`` writes them: no two threads write one slot. The row is
        sorted, so it is read from its end down to its first partner below ``hi`` (most
        rows have none beyond: one entry read); each pair writes slots of its own, so
        the order changes no bit."""
        T = dyn.x.dtype.type
        res, got, nbr = contacts.res, contacts.got, contacts.nbr
        m = min(contacts.count[i], nbr.shape[1])
        if m == 0 or nbr[i, m - 1] < hi:
            return
        me = law_body(T, i, dyn, par)
        for s in range(m - 1, -1, -1):
            j = nbr[i, s]
            if j < hi:
                break
            r = pair_once(i, j, s, True, h, me, dyn, par, bonds, contacts)
            if r[0] == 0:
                continue
            q = r[17]
            got[i, s] = r[0]
            res[i, s, 0] = r[1]
            res[i, s, 1] = r[2]
            res[i, s, 2] = r[3]
            res[i, s, 3] = r[4]
            res[i, s, 4] = r[5]
            res[i, s, 5] = r[6]
            if DISSIPATES:
                res[i, s, 6] = r[13]
                res[i, s, 7] = r[14]
            if q >= 0:
                if DISSIPATES:
                    res[j, q, 6] = r[15]
                    res[j, q, 7] = r[16]
                if r[0] == 1:
                    res[j, q, 0] = r[7]
                    res[j, q, 1] = r[8]
                    res[j, q, 2] = r[9]
                    res[j, q, 3] = r[10]
                    res[j, q, 4] = r[11]
                    res[j, q, 5] = r[12]
                    got[j, q] = 1

    @jit
    def add_terms(acc, k, f1, f2, f3, m1, m2, m3):
        """A pair's force ``f`` and, for a law with moments, moment ``m`` on ``k`` added to
        ``k``'s running sums (``acc_add``: one vector operation for 3 or 6 numbers)."""
        if MOMENTS:
            acc_add(acc, k, (f1, f2, f3, m1, m2, m3))
        else:
            acc_add(acc, k, (f1, f2, f3))

    @jit
    def direct_start(j, lo, contacts):
        """Before the direct pass over a chunk ``[lo, hi)``: ``j``'s running sums
        (``contacts.acc``: force and moment, then their compensations from
        column ``E`` on, :func:`kernels.laws.acc_layout`) start from the
        terms of its partners below ``lo``, which the cross pass left in its slots, in
        row order (they come first in the sorted row)."""
        res, got, nbr, acc = contacts.res, contacts.got, contacts.nbr, contacts.acc
        T = res.dtype.type
        for c in range(acc.shape[1]):
            acc[j, c] = T(0.0)
        for s in range(min(contacts.count[j], nbr.shape[1])):
            if nbr[j, s] >= lo:
                break
            if got[j, s] != 1:
                continue
            got[j, s] = 0
            add_terms(acc, j, res[j, s, 0], res[j, s, 1], res[j, s, 2], res[j, s, 3], res[j, s, 4], res[j, s, 5])

    @jit
    def direct_sum(i, hi, h, dyn, par, bonds, contacts):
        """What :func:`pair_sum` returns in a step (force 3, moment 3, the four
        dissipated energies of the pairs of which ``i`` is the lower index), for ``i`` of
        a chunk ending at ``hi``, with each pair evaluated once: ``i``'s running sums
        hold its partners below it (:func:`direct_start`, then the chunk's earlier rows);
        ``i`` adds its partners ``j > i`` in row order, evaluating those in the chunk
        (:func:`pair_once`) and adding their terms on ``j`` to ``j``'s running sums,
        and reading those beyond ``hi`` from the slots of :func:`cross_pass`. Each
        particle so adds its terms in row order, as :func:`pair_sum` does: the same bits,
        for any cut of the rows into chunks. The chunk's later rows are not read after
        ``i``'s turn, so the caller may move ``i`` on at once."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        res, got, nbr, acc = contacts.res, contacts.got, contacts.nbr, contacts.acc
        me = law_body(T, i, dyn, par)
        dn = df = dr = dt = z
        for s in range(min(contacts.count[i], nbr.shape[1])):
            j = nbr[i, s]
            if j < i:
                continue
            if j < hi:
                r = pair_once(i, j, s, False, h, me, dyn, par, bonds, contacts)
                if r[0] == 0:
                    continue
                if DISSIPATES:
                    dn += r[13]
                    df += r[14]
                    dr += r[15]
                    dt += r[16]
                if r[0] == 2:
                    continue
                add_terms(acc, i, r[1], r[2], r[3], r[4], r[5], r[6])
                add_terms(acc, j, r[7], r[8], r[9], r[10], r[11], r[12])
                continue
            g = got[i, s]
            if g == 0:
                continue
            got[i, s] = 0
            if DISSIPATES:
                dn += res[i, s, 6]
                df += res[i, s, 7]
                q = slot_of(j, i, contacts)
                if q >= 0:
                    dr += res[j, q, 6]
                    dt += res[j, q, 7]
            if g != 1:
                continue
            add_terms(acc, i, res[i, s, 0], res[i, s, 1], res[i, s, 2], res[i, s, 3], res[i, s, 4], res[i, s, 5])
        return (acc[i, 0] + acc[i, E], acc[i, 1] + acc[i, E + 1], acc[i, 2] + acc[i, E + 2],
                acc[i, 3] + acc[i, E + 3], acc[i, 4] + acc[i, E + 4], acc[i, 5] + acc[i, E + 5], dn, df, dr, dt)  # fmt: skip

    @jit
    def gather(i, contacts):
        """The force and moment :func:`pair_sum` returns in a step, from the slots the
        per-pair pass filled, added in row order; the slots are cleared for the next step."""
        res, got = contacts.res, contacts.got
        T = res.dtype.type
        z = T(0.0)
        f1 = c1 = f2 = c2 = f3 = c3 = m1 = e1 = m2 = e2 = m3 = e3 = z
        for s in range(min(contacts.count[i], contacts.nbr.shape[1])):
            if got[i, s] == 0:
                continue
            got[i, s] = 0
            f1, c1 = cadd(f1, c1, res[i, s, 0])
            f2, c2 = cadd(f2, c2, res[i, s, 1])
            f3, c3 = cadd(f3, c3, res[i, s, 2])
            if MOMENTS:
                m1, e1 = cadd(m1, e1, res[i, s, 3])
                m2, e2 = cadd(m2, e2, res[i, s, 4])
                m3, e3 = cadd(m3, e3, res[i, s, 5])
        return f1 + c1, f2 + c2, f3 + c3, m1 + e1, m2 + e2, m3 + e3

    @jit
    def wall_range(i, walls):
        """The walls particle ``i`` meets: ``first[r]:first[r+1]`` of its replica ``r``,
        or all of them for a single system."""
        if walls.first.shape[0] > 0:
            r = walls.replica[i]
            return walls.first[r], walls.first[r + 1]
        return 0, walls.planes.shape[0]

    @jit
    def wall_sum(i, update, h, dyn, par, walls, contacts):
        """The law between ``i`` and each planar wall it meets; the history in
        ``dyn.whist[i, k]`` (``k`` the wall's place among them). Returns what
        :func:`pair_sum` returns (all of each wall contact's energies). With ``update``
        (a step) the largest ``|f|`` of its wall contacts raises ``dyn.wpeak[i]`` (the
        running maximum; (0,): not kept). Against a moving wall (:mod:`kernels.walls`) the
        law sees the particle's motion relative to the wall's rigid velocity field, and
        with ``update`` the wall's work ``h (f·u_c - M_wall·ω)`` (``u_c`` the wall's
        velocity at the contact point) is added to ``dyn.wwork[i]``."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        whist = dyn.whist
        planes = walls.planes
        f1 = f2 = f3 = m1 = m2 = m3 = z
        c1 = c2 = c3 = e1 = e2 = e3 = z
        u = cu = dn = df = dr = dt = z
        peak = z
        touching = 0
        lo, hi = wall_range(i, walls)
        moves = walls.clock.shape[0] > 0
        work = z
        for w in range(lo, hi):
            k = w - lo
            n1 = planes[w, 0]
            n2 = planes[w, 1]
            n3 = planes[w, 2]
            dist = n1 * x[i, 0] + n2 * x[i, 1] + n3 * x[i, 2] - planes[w, 3]
            held = False
            if H > 0:
                held = whist[i, k, H - 1] != z
            what = law_wall_contact(T, dist, par.radius[i], held)
            if what == NONE or (what == RELEASE and not update):
                continue
            p = law_params(contacts.pair, pair_row(contacts.mat[i], walls.mat[w], contacts.nmat))
            hist = law_load(whist, i, k)
            if what == RELEASE:  # the contact opened: its history's energy is released
                rel = law_wall_release(T, par.radius[i], p, hist)
                dn += rel[0]
                df += rel[1]
                dr += rel[2]
                dt += rel[3]
                for c in range(H):
                    whist[i, k, c] = z
                continue
            touching += 1
            me = law_body(T, i, dyn, par)  # read only for a wall in contact: most particles touch none
            mine = me
            fr = walls.frame
            moving = moves and fr[w, FRAME_MOVING] != z
            u1 = u2 = u3 = o1 = o2 = o3 = z
            if moving:  # the particle seen from the wall: its velocities less the wall's field at x_i
                mine, u1, u2, u3, o1, o2, o3 = rigid_view(T, me, x[i, 0], x[i, 1], x[i, 2], fr, w, law_moving)
            r = law_wall(T, n1, n2, n3, dist, mine, p, hist, h)
            if moving and update:  # power into the particle at the contact point x_i - dist n
                uc1 = u1 - dist * (o2 * n3 - o3 * n2)
                uc2 = u2 - dist * (o3 * n1 - o1 * n3)
                uc3 = u3 - dist * (o1 * n2 - o2 * n1)
                work += h * (r[0] * uc1 + r[1] * uc2 + r[2] * uc3 - (r[6] * o1 + r[7] * o2 + r[8] * o3))
            f1, c1 = cadd(f1, c1, r[0])
            f2, c2 = cadd(f2, c2, r[1])
            f3, c3 = cadd(f3, c3, r[2])
            if MOMENTS:
                m1, e1 = cadd(m1, e1, r[3])
                m2, e2 = cadd(m2, e2, r[4])
                m3, e3 = cadd(m3, e3, r[5])
            u, cu = cadd(u, cu, r[U])
            if DISSIPATES:
                dn += r[D]
                df += r[D + 1]
                dr += r[D + 2]
                dt += r[D + 3]
            if update and H > 0:
                law_store(whist, i, k, r)
            if update:
                fm = T(math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]))
                if fm > peak:  # noqa: PLR1730 (a comparison, not max: a NaN never raises it, on any backend)
                    peak = fm
        if walls.tri.shape[0] > 0 and near_mesh(T, i, dyn, walls):  # the triangle meshes (kernels.meshes)
            ms = mesh_sum(T, i, law_body(T, i, dyn, par), update, h, dyn, par, walls, contacts, contacts.mat[i],
                          contacts.nmat, U, D, MOMENTS, DISSIPATES)  # fmt: skip
            f1, c1 = cadd(f1, c1, ms[0])
            f2, c2 = cadd(f2, c2, ms[1])
            f3, c3 = cadd(f3, c3, ms[2])
            m1, e1 = cadd(m1, e1, ms[3])
            m2, e2 = cadd(m2, e2, ms[4])
            m3, e3 = cadd(m3, e3, ms[5])
            u, cu = cadd(u, cu, ms[6])
            dn += ms[7]
            df += ms[8]
            dr += ms[9]
            dt += ms[10]
            touching += ms[11]
            if ms[12] > peak:  # noqa: PLR1730
                peak = ms[12]
            work += ms[13]
        if peak > z and dyn.wpeak.shape[0] > 0 and peak > dyn.wpeak[i]:  # (0,): no maximum kept
            dyn.wpeak[i] = peak
        if work != z and dyn.wwork.shape[0] > 0:
            dyn.wwork[i] += work
        return f1 + c1, f2 + c2, f3 + c3, m1 + e1, m2 + e2, m3 + e3, u + cu, dn, df, dr, dt, touching

    @jit
    def wall_load(i, w, dyn, par, walls, contacts, out):
        """Particle ``i``'s load on wall ``w`` into ``out[i]``: the force on the wall (3)
        and its moment about the wall's centre (3; ``p(t)`` of a moving wall, else its
        ``center``, the origin by default), from the law at the current configuration
        without update (the velocities ``dyn.vp``, ``dyn.wp``; a moving wall seen as
        :func:`wall_sum` sees it); zeros where ``i`` does not meet ``w``."""
        x = dyn.x
        T = x.dtype.type
        for c in range(6):
            out[i, c] = T(0.0)
        lo, hi = wall_range(i, walls)
        if w < lo or w >= hi:
            return
        k = w - lo
        planes = walls.planes
        n1, n2, n3 = planes[w, 0], planes[w, 1], planes[w, 2]
        dist = n1 * x[i, 0] + n2 * x[i, 1] + n3 * x[i, 2] - planes[w, 3]
        held = False
        if H > 0:
            held = dyn.whist[i, k, H - 1] != T(0.0)
        if law_wall_contact(T, dist, par.radius[i], held) != EVALUATE:
            return
        p = law_params(contacts.pair, pair_row(contacts.mat[i], walls.mat[w], contacts.nmat))
        me = law_body(T, i, dyn, par)
        mine = me
        fr = walls.frame
        c1, c2, c3 = fr[w, 0], fr[w, 1], fr[w, 2]  # p(t) of a moving wall, a wall's centre otherwise
        if walls.clock.shape[0] > 0 and fr[w, FRAME_MOVING] != T(0.0):
            y1, y2, y3 = x[i, 0] - c1, x[i, 1] - c2, x[i, 2] - c3
            o1, o2, o3 = fr[w, 6], fr[w, 7], fr[w, 8]
            s1, s2, s3 = o2 * y3 - o3 * y2, o3 * y1 - o1 * y3, o1 * y2 - o2 * y1
            u1, u2, u3 = fr[w, 3] + s1, fr[w, 4] + s2, fr[w, 5] + s3
            mine = law_moving(T, me, u1, u2, u3, o1, o2, o3, u1, u2, u3)
        r = law_wall(T, n1, n2, n3, dist, mine, p, law_load(dyn.whist, i, k), T(0.0))
        f1, f2, f3 = -r[0], -r[1], -r[2]  # on the wall, at the contact point x_i - dist n
        a1 = x[i, 0] - dist * n1 - c1
        a2 = x[i, 1] - dist * n2 - c2
        a3 = x[i, 2] - dist * n3 - c3
        out[i, 0] = f1
        out[i, 1] = f2
        out[i, 2] = f3
        out[i, 3] = a2 * f3 - a3 * f2 + r[6]
        out[i, 4] = a3 * f1 - a1 * f3 + r[7]
        out[i, 5] = a1 * f2 - a2 * f1 + r[8]

    @jit
    def energies(i, dyn, par, bonds, contacts, walls):
        """Stored energy of ``i``'s contacts with their history as it is (half of each
        pair's, all of each wall's; compensated sums) and the number of partners and walls
        in contact: ``(U_pp, U_pw, count)``. No update."""
        x = dyn.x
        T = x.dtype.type
        z = T(0.0)
        radius = par.radius
        me = law_body(T, i, dyn, par)
        upp = cpp = upw = cpw = z
        touching = 0
        n = 0
        if contacts.mode == CONTACTS_LIST:
            n = min(contacts.count[i], contacts.nbr.shape[1])
        elif H == 0 and contacts.mode == CONTACTS_ALL_PAIRS:
            n = x.shape[0]
        for s in range(n):
            j = s
            slot = -1
            if contacts.mode == CONTACTS_LIST:
                j = contacts.nbr[i, s]
                slot = s
            elif j == i:
                continue
            d1, d2, d3, dist2 = offset(i, j, x, contacts.period)
            reach = radius[i] + radius[j]
            held = False
            if H > 0 and slot >= 0:
                held = contacts.live[i, slot] != 0
            if law_contact(T, dist2, reach, held) != EVALUATE:
                continue
            if bonds.skip_contacts and bonded(T, i, j, False, dyn, bonds):
                continue
            touching += 1
            p = law_params(contacts.pair, row_of(i, j, contacts))
            fi, sign, d1, d2, d3 = canonical(i, j, x, d1, d2, d3)
            hist = law_orient(law_load(contacts.hist, i, slot), sign)
            lo, hi = ordered(T, fi, me, j, dyn, par)
            e = law_energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist)
            upp, cpp = cadd(upp, cpp, T(0.5) * e)
        planes = walls.planes
        lo, hi = wall_range(i, walls)
        for w in range(lo, hi):
            k = w - lo
            n1 = planes[w, 0]
            n2 = planes[w, 1]
            n3 = planes[w, 2]
            dist = n1 * x[i, 0] + n2 * x[i, 1] + n3 * x[i, 2] - planes[w, 3]
            held = False
            if H > 0:
                held = dyn.whist[i, k, H - 1] != z
            if law_wall_contact(T, dist, radius[i], held) != EVALUATE:
                continue
            touching += 1
            p = law_params(contacts.pair, pair_row(contacts.mat[i], walls.mat[w], contacts.nmat))
            upw, cpw = cadd(upw, cpw, law_wall_energy(T, n1, n2, n3, dist, me, p, law_load(dyn.whist, i, k)))
        if walls.tri.shape[0] > 0 and near_mesh(T, i, dyn, walls):
            um = mesh_energy(T, i, me, dyn, par, walls, contacts, contacts.mat[i], contacts.nmat)
            upw, cpw = cadd(upw, cpw, um[0])
            touching += um[1]
        return upp + cpp, upw + cpw, touching

    @jit
    def mesh_load(i, dyn, par, walls, contacts, out, out_tri):
        """Particle ``i``'s loads on the meshes (:mod:`kernels.meshes` ``mesh_load``)."""
        T = dyn.x.dtype.type
        mesh_load_of(T, i, law_body(T, i, dyn, par), dyn, par, walls, contacts, contacts.mat[i], contacts.nmat, out,
                     out_tri)  # fmt: skip

    return SimpleNamespace(law=L, pair_row=pair_row, bonded=bonded, pair_sum=pair_sum, pair_pass=pair_pass,
                           gather=gather, cross_pass=cross_pass, direct_start=direct_start, direct_sum=direct_sum,
                           wall_load=wall_load, mesh_load=mesh_load,
                           wall_range=wall_range, wall_sum=wall_sum, energies=energies)  # fmt: skip

