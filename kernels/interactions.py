"""Binder, contact, wall and field bodies (paper 003, Sect. 4), compiled once per backend
and contact law.

Every interaction is summed *per particle*: particle ``i`` evaluates each of its bonds
(:mod:`kernels.bonds`), its contacts with other particles and with walls
(:mod:`kernels.contacts`, around the law of :mod:`kernels.contact_laws`) and the fields,
and writes only its own rows. So no atomics are needed and runs repeat bit for bit on a
backend (CPU and GPU differ in the last bits: fused multiply-adds, libdevice).

The force body adds the families in a fixed order, each as a partial sum added to the
total: gravity, bonds, contacts (compensated), walls (compensated); moments: pendulum,
bonds, contacts, walls. The per-family body used for analysis adds the same partial
sums, so the total of the families equals the fused force bit for bit.
"""

from types import SimpleNamespace

from . import bonds as bond_bodies
from . import contacts as contact_loops
from .laws import SCHEME_CAMPELLO
from .layout import (
    DIAG,
    FAMILY_BONDS,
    FAMILY_CONTACTS,
    FAMILY_GRAVITY,
    FAMILY_PENDULUM,
    FAMILY_WALLS,
)


def build(jit, base, law, prefetch=None, meshes=False, acc_add=None):
    """Compile with ``jit`` for the contact law ``law`` (a module of
    :mod:`kernels.contact_laws`); ``base`` is the namespace of :func:`kernels.particles.build`;
    ``meshes``: the wall loops also meet triangle meshes; ``acc_add``: the direct pass's
    compensated addition to a row of running sums (:func:`kernels.contacts.build`)."""
    quat_rotate = base.quat_rotate
    kick_body = base.kick_body
    pendulum_moment = base.pendulum_moment
    B = bond_bodies.build(jit, base)
    C = contact_loops.build(jit, law, B, meshes=meshes, acc_add=acc_add)
    bond_sum, bond_terms = B.bond_sum, B.bond_terms
    pair_sum, gather, wall_sum, energies = C.pair_sum, C.gather, C.wall_sum, C.energies
    direct_sum = C.direct_sum
    MOMENTS = law.MOMENTS
    DISSIPATES = law.DISSIPATES
    # only a law with history has the per-pair pass's slots (``contacts.res``): for one
    # without, the gather is left out of the compiled code (a constant condition)
    SLOTS = law.HISTORY > 0

    KT, KR, UG, UP = DIAG["kinetic_translational"], DIAG["kinetic_rotational"], DIAG["U_gravity"], DIAG["U_pendulum"]
    UA, US, UM, UPP, UPW = DIAG["U_a"], DIAG["U_s"], DIAG["U_m"], DIAG["U_pp"], DIAG["U_pw"]
    PX, LX, NB, UR = DIAG["P_x"], DIAG["L_x"], DIAG["broken_bonds"], DIAG["U_released"]
    DN, NCONT, WW = DIAG["dissipated_normal"], DIAG["contacts"], DIAG["work_walls"]

    @jit
    def gravity_row(i, fields):
        """Where particle ``i``'s gravity starts in ``fields.gravity``: ``(3,)`` for one
        system, or ``(3R,)`` with each replica's row (``fields.replica[i]``); -1: none."""
        if fields.gravity.shape[0] == 0:
            return -1
        if fields.replica.shape[0] > 0:
            return 3 * fields.replica[i]
        return 0

    @jit
    def pendulum_term(i, q, fields):
        """Pendulum (39) on ``i`` if it is one: spatial moment ``m g (Rρ0) × e`` and ``U``."""
        T = q.dtype.type
        if fields.pendulum_of.shape[0] == 0 or fields.pendulum_of[i] < 0:
            return T(0.0), T(0.0), T(0.0), T(0.0)
        k = fields.pendulum_of[i]
        rho0, e = fields.rho0, fields.vertical
        p1, p2, p3 = quat_rotate(T, q[i, 0], q[i, 1], q[i, 2], q[i, 3], rho0[k, 0], rho0[k, 1], rho0[k, 2])
        return pendulum_moment(p1, p2, p3, fields.mg[k], e[k, 0], e[k, 1], e[k, 2])

    @jit
    def contact_terms(i, update, h, dyn, par, bonds, contacts):
        """``i``'s contact force and moment with other particles (from the per-pair pass's
        slots in a step where there are any, else evaluated here) and, in a step, the
        energy the pairs dissipated (booked here unless the per-pair pass did)."""
        T = dyn.x.dtype.type
        z = T(0.0)
        if SLOTS:
            if update and contacts.res.shape[0] > 0:
                g = gather(i, contacts)
                return g[0], g[1], g[2], g[3], g[4], g[5], z, z, z, z
        d = pair_sum(i, update, h, dyn, par, bonds, contacts)
        return d[0], d[1], d[2], d[3], d[4], d[5], d[7], d[8], d[9], d[10]

    @jit
    def forces_total(i, h, dyn, par, bonds, contacts, walls, fields, c):
        """The total force and moment on ``i`` given its contact terms ``c`` (force 3,
        moment 3, dissipated energies 4): the families added in their fixed order, the
        dissipation ledger booked. Returns ``(f1, f2, f3, m1, m2, m3)``."""
        x = dyn.x
        T = x.dtype.type
        f1 = f2 = f3 = m1 = m2 = m3 = T(0.0)
        g = fields.gravity
        k = gravity_row(i, fields)
        if k >= 0:
            mi = par.mass[i]
            f1 = f1 + mi * g[k]
            f2 = f2 + mi * g[k + 1]
            f3 = f3 + mi * g[k + 2]
        r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
        m1 = m1 + r1
        m2 = m2 + r2
        m3 = m3 + r3
        if bonds.a.shape[0] > 0:
            b1, b2, b3, b4, b5, b6 = bond_sum(i, True, dyn, bonds)
            f1 = f1 + b1
            f2 = f2 + b2
            f3 = f3 + b3
            m1 = m1 + b4
            m2 = m2 + b5
            m3 = m3 + b6
        dn = df = dr = dt = T(0.0)  # the ledger, read and written once (the same adds in the same order)
        if DISSIPATES:
            dn, df, dr, dt = dyn.dissip[i, 0], dyn.dissip[i, 1], dyn.dissip[i, 2], dyn.dissip[i, 3]
        if contacts.mode != 0:
            f1 = f1 + c[0]
            f2 = f2 + c[1]
            f3 = f3 + c[2]
            if MOMENTS:
                m1 = m1 + c[3]
                m2 = m2 + c[4]
                m3 = m3 + c[5]
            if DISSIPATES:
                dn = dn + c[6]
                df = df + c[7]
                dr = dr + c[8]
                dt = dt + c[9]
        if walls.planes.shape[0] > 0 or walls.tri.shape[0] > 0:
            w = wall_sum(i, True, h, dyn, par, walls, contacts)
            f1 = f1 + w[0]
            f2 = f2 + w[1]
            f3 = f3 + w[2]
            if MOMENTS:
                m1 = m1 + w[3]
                m2 = m2 + w[4]
                m3 = m3 + w[5]
            if DISSIPATES:
                dn = dn + w[7]
                df = df + w[8]
                dr = dr + w[9]
                dt = dt + w[10]
        if DISSIPATES:
            dyn.dissip[i, 0] = dn
            dyn.dissip[i, 1] = df
            dyn.dissip[i, 2] = dr
            dyn.dissip[i, 3] = dt
        return f1, f2, f3, m1, m2, m3

    @jit
    def forces_from(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status, c):
        """The body of :func:`forces_body` given ``i``'s contact terms ``c``
        (:func:`forces_total`), stored, with ``kick`` the second half kick, and the row's
        finiteness test. Returns the kick's factors (:func:`kernels.particles.build`
        ``kick_body``)."""
        f = forces_total(i, h, dyn, par, bonds, contacts, walls, fields, c)
        return kick_body(i, kick, scheme, h, dyn, par, status, f[0], f[1], f[2], f[3], f[4], f[5])

    @jit
    def forces_body(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """Total force and spatial moment on ``i`` at the current configuration (bonds
        break here, contacts update their history), stored in ``F``, ``RM``; with
        ``kick`` the second half kick of the step follows (:func:`kernels.particles.build`,
        ``kick_body``)."""
        T = dyn.x.dtype.type
        z = T(0.0)
        c = (z, z, z, z, z, z, z, z, z, z)
        if contacts.mode != 0:
            c = contact_terms(i, True, h, dyn, par, bonds, contacts)
        forces_from(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status, c)

    @jit
    def direct_body(i, hi, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """:func:`forces_body` with the contact terms of the direct pass
        (:func:`kernels.contacts.build` ``direct_sum``, ``i`` in a chunk ending at ``hi``);
        returns the kick's factors."""
        c = direct_sum(i, hi, h, dyn, par, bonds, contacts)
        return forces_from(i, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status, c)

    advance_with, kick_factors = base.advance_with, base.kick_factors
    direct_start = C.direct_start
    AHEAD = 4  # rows
    if prefetch is None:

        @jit
        def prefetch(k, contacts):
            return None

    @jit
    def direct_chunk(lo, hi, kick, fuse, scheme, h, dyn, par, bonds, contacts, walls, fields, status):
        """The direct pass over the chunk ``[lo, hi)`` (after the cross pass of every chunk):
        each row's forces (:func:`direct_body`), its second half kick with ``kick``, and
        with ``fuse`` the first part of the next step (:func:`kernels.particles.build`,
        ``advance_body``) at once: the pass reads no row of the chunk after its turn. The
        first half kick reuses the second's factors ``h/2m``, ``h/2J`` (the same numbers,
        two divisions fewer a particle)."""
        direct_begin(lo, hi, contacts)
        for i in range(lo, hi):
            if i + AHEAD < hi:
                prefetch(i + AHEAD, contacts)
            a, b = direct_body(i, hi, kick, scheme, h, dyn, par, bonds, contacts, walls, fields, status)
            if fuse:
                if not (kick and scheme != SCHEME_CAMPELLO):  # no second half kick: no factors yet
                    a, b = kick_factors(i, scheme, h, par)
                advance_with(i, scheme, h, a, b, dyn, par, contacts, status)

    @jit
    def direct_begin(lo, hi, contacts):
        """The running sums of the chunk ``[lo, hi)`` before its direct pass
        (:func:`direct_start` of each row)."""
        for j in range(lo, hi):
            direct_start(j, lo, contacts)

    @jit
    def direct_rows(r0, r1, hi, h, dyn, par, bonds, contacts, walls, fields):
        """Rows ``[r0, r1)`` of the direct pass over a chunk ending at ``hi`` (after
        :func:`direct_begin` of the whole chunk): each row's forces, stored in ``F``,
        ``RM``, as :func:`direct_chunk` makes them, without the second half kick, the
        finiteness test and the next step's advance. No later row of the chunk reads these
        rows, so the caller may finish them together afterwards (``kernels.cpu``:
        ``advance_rows`` of :func:`kernels.particles.build`, in vector lanes)."""
        F, RM = dyn.F, dyn.RM
        for i in range(r0, r1):
            if i + AHEAD < hi:
                prefetch(i + AHEAD, contacts)
            c = direct_sum(i, hi, h, dyn, par, bonds, contacts)
            f = forces_total(i, h, dyn, par, bonds, contacts, walls, fields, c)
            F[i, 0] = f[0]
            F[i, 1] = f[1]
            F[i, 2] = f[2]
            RM[i, 0] = f[3]
            RM[i, 1] = f[4]
            RM[i, 2] = f[5]

    @jit
    def family_forces_body(i, family, dyn, par, bonds, contacts, walls, fields):
        """Add one family's force and moment on ``i`` to ``F[i]``, ``RM[i]`` (no breakage,
        no update of the contacts' history): the same partial sums as :func:`forces_body`,
        for analysis and tests."""
        F, RM = dyn.F, dyn.RM
        T = dyn.x.dtype.type
        if family == FAMILY_GRAVITY:
            g = fields.gravity
            k = gravity_row(i, fields)
            if k >= 0:
                for c in range(3):
                    F[i, c] += par.mass[i] * g[k + c]
        elif family == FAMILY_PENDULUM:
            r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
            RM[i, 0] += r1
            RM[i, 1] += r2
            RM[i, 2] += r3
        elif family == FAMILY_BONDS:
            b1, b2, b3, b4, b5, b6 = bond_sum(i, False, dyn, bonds)
            F[i, 0] += b1
            F[i, 1] += b2
            F[i, 2] += b3
            RM[i, 0] += b4
            RM[i, 1] += b5
            RM[i, 2] += b6
        elif family == FAMILY_CONTACTS:
            if contacts.mode != 0:
                d = contact_terms(i, False, T(0.0), dyn, par, bonds, contacts)
                F[i, 0] += d[0]
                F[i, 1] += d[1]
                F[i, 2] += d[2]
                if MOMENTS:
                    RM[i, 0] += d[3]
                    RM[i, 1] += d[4]
                    RM[i, 2] += d[5]
        elif family == FAMILY_WALLS:
            if walls.planes.shape[0] > 0 or walls.tri.shape[0] > 0:
                d = wall_sum(i, False, T(0.0), dyn, par, walls, contacts)
                F[i, 0] += d[0]
                F[i, 1] += d[1]
                F[i, 2] += d[2]
                if MOMENTS:
                    RM[i, 0] += d[3]
                    RM[i, 1] += d[4]
                    RM[i, 2] += d[5]

    @jit
    def diagnostics_body(i, dyn, par, bonds, contacts, walls, fields, out):
        """Row ``i`` of the per-particle diagnostics (columns
        :data:`kernels.layout.DIAGNOSTICS`): kinetic energies ``½ m|v|²``, ``½ J|Ω|²``;
        ``U_gravity = -m g·x``; the pendulum energy; the energies of the intact bonds of
        which ``i`` is end ``a``; half of ``i``'s pair energies; its wall energy; momentum
        ``m v``; angular momentum about the origin ``x × m v + J Ω``; the broken bonds
        ending at ``a = i``; the energy those released; the energy its contacts
        dissipated; its contacts; the work the moving walls did on it. Sums over particles
        are the totals. In a periodic box ``x`` is the unwrapped position
        (``x + image L``), so gravity's energy and the angular momentum do not jump when a
        particle is wrapped."""
        x, v, om = dyn.x, dyn.v, dyn.omega
        T = x.dtype.type
        m = par.mass[i]
        J = par.inertia[i]
        for c in range(out.shape[1]):
            out[i, c] = T(0.0)
        out[i, KT] = T(0.5) * m * (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2])
        out[i, KR] = T(0.5) * J * (om[i, 0] * om[i, 0] + om[i, 1] * om[i, 1] + om[i, 2] * om[i, 2])
        # the unwrapped position (a periodic box: the image counters times the periods)
        x1, x2, x3 = x[i, 0], x[i, 1], x[i, 2]
        if i < dyn.image.shape[0] and contacts.period.shape[0] > 0:
            period = contacts.period
            x1 = x1 + T(dyn.image[i, 0]) * period[0, 1]
            x2 = x2 + T(dyn.image[i, 1]) * period[1, 1]
            x3 = x3 + T(dyn.image[i, 2]) * period[2, 1]
        g = fields.gravity
        k = gravity_row(i, fields)
        if k >= 0:
            out[i, UG] = -m * (g[k] * x1 + g[k + 1] * x2 + g[k + 2] * x3)
        r1, r2, r3, up = pendulum_term(i, dyn.q, fields)
        out[i, UP] = up
        ua = us = um = ur = T(0.0)
        nbroken = 0
        for p in range(bonds.offsets[i], bonds.offsets[i + 1]):
            k = bonds.incident[p]
            if bonds.a[k] != i:
                continue
            if dyn.broken[k] != 0:
                nbroken += 1
                ur += dyn.released[k]
                continue
            t = bond_terms(T, k, x, dyn.q, bonds)
            ua += t[9]
            us += t[10]
            um += t[11]
        out[i, UA] = ua
        out[i, US] = us
        out[i, UM] = um
        out[i, NB] = nbroken
        out[i, UR] = ur
        upp, upw, touching = energies(i, dyn, par, bonds, contacts, walls)
        out[i, UPP] = upp
        out[i, UPW] = upw
        out[i, NCONT] = touching
        if DISSIPATES:
            for c in range(4):
                out[i, DN + c] = dyn.dissip[i, c]
        if i < dyn.wwork.shape[0]:
            out[i, WW] = dyn.wwork[i]
        p1 = m * v[i, 0]
        p2 = m * v[i, 1]
        p3 = m * v[i, 2]
        out[i, PX] = p1
        out[i, PX + 1] = p2
        out[i, PX + 2] = p3
        out[i, LX] = x2 * p3 - x3 * p2 + J * om[i, 0]
        out[i, LX + 1] = x3 * p1 - x1 * p3 + J * om[i, 1]
        out[i, LX + 2] = x1 * p2 - x2 * p1 + J * om[i, 2]

    return SimpleNamespace(
        bonds=B,
        contacts=C,
        bond_terms=bond_terms,
        bond_sum=bond_sum,
        bond_eval_body=B.bond_eval_body,
        bond_lanes=B.bond_lanes,
        bond_range=B.bond_range,
        bond_measures_body=B.bond_measures_body,
        pair_pass=C.pair_pass,
        pendulum_term=pendulum_term,
        forces_body=forces_body,
        direct_body=direct_body,
        direct_chunk=direct_chunk,
        direct_begin=direct_begin,
        direct_rows=direct_rows,
        cross_pass=C.cross_pass,
        direct_start=C.direct_start,
        family_forces_body=family_forces_body,
        diagnostics_body=diagnostics_body,
    )
