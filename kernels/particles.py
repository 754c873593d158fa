"""Per-particle integrator bodies, written once and compiled for each backend.

:func:`build` takes a decorator (``numba.njit(inline="always")`` for the CPU,
``numba.cuda.jit(device=True)`` for the GPU) and returns the laws of :mod:`kernels.laws`
and the bodies below compiled with it. A body reads and writes row ``i`` of the state
only (it may read other particles' positions and orientations, which no body of the same
launch writes), so the CPU loop (``prange``) and the GPU grid around it need no
synchronisation, and the result does not depend on the order in which particles are
visited.

A step of the explicit maps (23), (25), (27) is two launches over particles:
:func:`advance_body` (kick, drift and rotation, in place) and the force body of
:mod:`kernels.interactions` (forces at the new configuration, then the second kick). The
state is updated in place; a block of steps saves the state at its start
(:func:`save_body`) and restores it when a check failed, which is what makes a step
transactional. Argument bundles are the named tuples of :mod:`kernels.layout`.
"""

from types import SimpleNamespace

from . import laws
from .layout import BIT_NOT_FINITE, BIT_ROTATION, BIT_SKIN, REPORT_BIG


def build(jit, law):
    """Compile the laws and bodies with ``jit`` for the contact law ``law`` (a module of
    :mod:`kernels.contact_laws`: whether it reads velocities); returns a namespace."""
    quat_multiply = jit(laws.quat_multiply)
    quat_from_rrp = jit(laws.quat_from_rrp)
    quat_rotate = jit(laws.quat_rotate)
    rrp_increment = jit(laws.rrp_increment)
    pendulum_moment = jit(laws.pendulum_moment)
    is_finite = jit(laws.is_finite)
    min_image = jit(laws.min_image)
    wrap_coordinate = jit(laws.wrap_coordinate)

    SCHEME_CAMPELLO = laws.SCHEME_CAMPELLO
    CONTACTS_LIST = laws.CONTACTS_LIST
    VELOCITY_HALF = laws.VELOCITY_HALF
    VELOCITIES = law.VELOCITIES

    @jit
    def moved(T, i, x, contacts):
        """``x_i - x_ref_i``, the move since the last neighbour build (by the minimum
        image in a periodic box, where ``x_i`` may have been wrapped since)."""
        e1 = x[i, 0] - contacts.x_ref[i, 0]
        e2 = x[i, 1] - contacts.x_ref[i, 1]
        e3 = x[i, 2] - contacts.x_ref[i, 2]
        period = contacts.period
        if period.shape[0] > 0:
            e1 = min_image(T, e1, period[0, 1], period[0, 2])
            e2 = min_image(T, e2, period[1, 1], period[1, 2])
            e3 = min_image(T, e3, period[2, 1], period[2, 2])
        return e1, e2, e3

    @jit
    def advance_body(i, scheme, h, dyn, par, contacts, status):
        """First part of a step of maps (23), (25) or (27) for particle ``i``, in place.

        (23)/(25): half kick ``v + h F/2m``, ``Ω + h RM/2J``; drift (a): ``x + h v + h² F/2m``;
        rotation (b): ``q_{k+1} = q(Δα) ⊗ q_k``, i.e. ``R_{k+1} = R(Δα) R_k`` (spatial
        increment, ``α_{k+1} = α_k ⊕ Δα``). The second half kick follows the forces.
        (27): full kick (c, d) with forces at ``k``, then (a) ``x + h v_{k+1}`` and (b)
        ``Δα = h Ω_{k+1}``.

        In a periodic box (``contacts.period``) a particle that left the box along a
        periodic axis is put back into it (:func:`kernels.laws.wrap_coordinate`) and its
        image counter (``dyn.image``) changed by the periods crossed, so ``x + image L``
        is its unwrapped position.

        Sets status bits: the rotation domain ``ρ ≥ 1`` (or a NaN ``ρ``: not finite) and,
        with a neighbour list, a move of more than skin/2 since its last build.

        With a contact law that reads velocities it also writes the velocities the force
        pass gives the velocity-dependent forces (``vp``, ``wp``): in columns 0-2 for the
        dashpots the half-kicked ``v_{k+1/2}`` or the prediction ``v_{k+1/2} + h F_k/2m``
        of ``v_{k+1}`` (``contacts.vel``), for map (27) the kicked ``v_{k+1}`` itself; in
        columns 3-5 the drift velocity, which stretches the springs.
        """
        a, b = kick_factors(i, scheme, h, par)
        advance_with(i, scheme, h, a, b, dyn, par, contacts, status)

    @jit
    def kick_factors(i, scheme, h, par):
        """The kick's factors ``(h/2m, h/2J)`` of particle ``i``; ``(h/m, h/J)`` for map (27)."""
        T = par.mass.dtype.type
        if scheme == SCHEME_CAMPELLO:
            return h / par.mass[i], h / par.inertia[i]
        return T(0.5) * h / par.mass[i], T(0.5) * h / par.inertia[i]

    @jit
    def advance_with(i, scheme, h, a, b, dyn, par, contacts, status):
        """:func:`advance_body` with the kick's factors ``a``, ``b`` given
        (:func:`kick_factors`): the direct pass passes those its second half kick of the
        step before used, the same numbers, and saves their two divisions."""
        T = dyn.x.dtype.type
        x, v, q, om = dyn.x, dyn.v, dyn.q, dyn.omega
        vx = v[i, 0] + a * dyn.F[i, 0]
        vy = v[i, 1] + a * dyn.F[i, 1]
        vz = v[i, 2] + a * dyn.F[i, 2]
        wx = om[i, 0] + b * dyn.RM[i, 0]
        wy = om[i, 1] + b * dyn.RM[i, 1]
        wz = om[i, 2] + b * dyn.RM[i, 2]
        x[i, 0] = x[i, 0] + h * vx
        x[i, 1] = x[i, 1] + h * vy
        x[i, 2] = x[i, 2] + h * vz
        v[i, 0] = vx
        v[i, 1] = vy
        v[i, 2] = vz
        om[i, 0] = wx
        om[i, 1] = wy
        om[i, 2] = wz
        if VELOCITIES:
            if scheme == SCHEME_CAMPELLO or contacts.vel == VELOCITY_HALF:
                a = T(0.0)
                b = T(0.0)
            dyn.vp[i, 0] = vx + a * dyn.F[i, 0]
            dyn.vp[i, 1] = vy + a * dyn.F[i, 1]
            dyn.vp[i, 2] = vz + a * dyn.F[i, 2]
            dyn.wp[i, 0] = wx + b * dyn.RM[i, 0]
            dyn.wp[i, 1] = wy + b * dyn.RM[i, 1]
            dyn.wp[i, 2] = wz + b * dyn.RM[i, 2]
            dyn.vp[i, 3] = vx
            dyn.vp[i, 4] = vy
            dyn.vp[i, 5] = vz
            dyn.wp[i, 3] = wx
            dyn.wp[i, 4] = wy
            dyn.wp[i, 5] = wz
        d1, d2, d3, rho2 = rrp_increment(T, scheme, h, wx, wy, wz)
        bits = 0
        if rho2 >= T(1.0):
            bits = BIT_ROTATION
        elif not (rho2 < T(1.0)):  # ρ is NaN: the state or the forces at k were not finite
            bits = BIT_NOT_FINITE
        # q(Δα) ⊗ q_k with q(Δα) = (2, Δα)/sqrt(4 + |Δα|²) (quat_from_rrp): the product
        # (2, Δα) ⊗ q_k divided by its own length is that unit quaternion, with one square
        # root and one division fewer; the same normalisation keeps |q| = 1 to round-off
        # after any number of steps instead of a random walk.
        n0, n1, n2, n3 = quat_multiply(T(2.0), d1, d2, d3, q[i, 0], q[i, 1], q[i, 2], q[i, 3])
        inv = T(1.0) / (n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3) ** T(0.5)
        q[i, 0] = n0 * inv
        q[i, 1] = n1 * inv
        q[i, 2] = n2 * inv
        q[i, 3] = n3 * inv
        period = contacts.period
        if period.shape[0] > 0 and dyn.image.shape[0] > 0:  # a periodic box: back into it
            for c in range(3):
                w, k = wrap_coordinate(T, x[i, c], period[c, 0], period[c, 1], period[c, 2])
                if k != 0:
                    x[i, c] = w
                    dyn.image[i, c] += k
        if contacts.mode == CONTACTS_LIST:
            e1, e2, e3 = moved(T, i, x, contacts)
            if not (e1 * e1 + e2 * e2 + e3 * e3 <= contacts.skin_half2):
                bits |= BIT_SKIN
        if bits != 0:
            status[i] |= bits

    @jit
    def advance_rows(lo, hi, kick, scheme, h, dyn, par, contacts, status):
        """The end of the step and the start of the next for the rows ``[lo, hi)`` at
        once, their forces ``F``, ``RM`` stored: with ``kick`` the second half kick and
        then, always, the row's finiteness test (:func:`kick_body`), then
        :func:`advance_body`. Written so that LLVM evaluates several rows in the lanes of
        one vector register: the rows are read through one-dimensional views
        (``x[3 i + c]``, a constant stride counted from ``lo``), so that each array is one
        interleaved access of known shape. The same operations in the same order as
        :func:`kick_body`, :func:`kick_factors` and :func:`advance_with` for each row, so
        the same bits (each lane rounds as the scalar operation; no multiply-add is fused
        without fast-math; the finiteness test is a flag, whatever the order of its
        adds). For the direct pass with a neighbour list (the skin test is always made)
        outside a periodic box (no wrap), in a compiled function of its own
        (``kernels.cpu`` ``_advance_lanes``, where LLVM's limits on a vectorised loop's
        run-time checks are raised)."""
        T = dyn.x.dtype.type
        m = hi - lo
        x = dyn.x[lo:hi].reshape(-1)
        v = dyn.v[lo:hi].reshape(-1)
        om = dyn.omega[lo:hi].reshape(-1)
        F = dyn.F[lo:hi].reshape(-1)
        RM = dyn.RM[lo:hi].reshape(-1)
        q = dyn.q[lo:hi].reshape(-1)
        x_ref = contacts.x_ref[lo:hi].reshape(-1)
        mass = par.mass[lo:hi]
        inertia = par.inertia[lo:hi]
        st = status[lo:hi]
        vp = dyn.vp
        wp = dyn.wp
        if VELOCITIES:
            vp = dyn.vp[lo:hi].reshape(-1)
            wp = dyn.wp[lo:hi].reshape(-1)
        half = contacts.vel == VELOCITY_HALF
        skin_half2 = contacts.skin_half2
        second = kick and scheme != SCHEME_CAMPELLO  # map (27) has no second half kick
        for i in range(m):
            if scheme == SCHEME_CAMPELLO:
                a = h / mass[i]
                b = h / inertia[i]
            else:
                a = T(0.5) * h / mass[i]
                b = T(0.5) * h / inertia[i]
            f0 = F[3 * i]
            f1 = F[3 * i + 1]
            f2 = F[3 * i + 2]
            g0 = RM[3 * i]
            g1 = RM[3 * i + 1]
            g2 = RM[3 * i + 2]
            vx = v[3 * i]
            vy = v[3 * i + 1]
            vz = v[3 * i + 2]
            wx = om[3 * i]
            wy = om[3 * i + 1]
            wz = om[3 * i + 2]
            if second:  # (23c,d)/(25c,d)
                vx = vx + a * f0
                vy = vy + a * f1
                vz = vz + a * f2
                wx = wx + b * g0
                wy = wy + b * g1
                wz = wz + b * g2
            q0 = q[4 * i]
            q1 = q[4 * i + 1]
            q2 = q[4 * i + 2]
            q3 = q[4 * i + 3]
            x0 = x[3 * i]
            x1 = x[3 * i + 1]
            x2 = x[3 * i + 2]
            # kick_body's finiteness test of the row after the kick: a - a is 0 for a
            # finite a, NaN otherwise
            zero = (((x0 - x0) + (x1 - x1)) + ((x2 - x2) + (vx - vx))) + (((vy - vy) + (vz - vz)) + ((wx - wx) + (wy - wy)))
            zero += (((wz - wz) + (f0 - f0)) + ((f1 - f1) + (f2 - f2))) + (((g0 - g0) + (g1 - g1)) + (g2 - g2))
            zero += ((q0 - q0) + (q1 - q1)) + ((q2 - q2) + (q3 - q3))
            bits = 0
            if zero != T(0.0):  # NaN
                bits = BIT_NOT_FINITE
            vx = vx + a * f0
            vy = vy + a * f1
            vz = vz + a * f2
            wx = wx + b * g0
            wy = wy + b * g1
            wz = wz + b * g2
            x0 = x0 + h * vx
            x1 = x1 + h * vy
            x2 = x2 + h * vz
            x[3 * i] = x0
            x[3 * i + 1] = x1
            x[3 * i + 2] = x2
            v[3 * i] = vx
            v[3 * i + 1] = vy
            v[3 * i + 2] = vz
            om[3 * i] = wx
            om[3 * i + 1] = wy
            om[3 * i + 2] = wz
            if VELOCITIES:
                if scheme == SCHEME_CAMPELLO or half:
                    a = T(0.0)
                    b = T(0.0)
                vp[6 * i] = vx + a * f0
                vp[6 * i + 1] = vy + a * f1
                vp[6 * i + 2] = vz + a * f2
                wp[6 * i] = wx + b * g0
                wp[6 * i + 1] = wy + b * g1
                wp[6 * i + 2] = wz + b * g2
                vp[6 * i + 3] = vx
                vp[6 * i + 4] = vy
                vp[6 * i + 5] = vz
                wp[6 * i + 3] = wx
                wp[6 * i + 4] = wy
                wp[6 * i + 5] = wz
            d1, d2, d3, rho2 = rrp_increment(T, scheme, h, wx, wy, wz)
            if rho2 >= T(1.0):
                bits |= BIT_ROTATION
            elif not (rho2 < T(1.0)):
                bits |= BIT_NOT_FINITE
            n0, n1, n2, n3 = quat_multiply(T(2.0), d1, d2, d3, q0, q1, q2, q3)
            inv = T(1.0) / (n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3) ** T(0.5)
            q[4 * i] = n0 * inv
            q[4 * i + 1] = n1 * inv
            q[4 * i + 2] = n2 * inv
            q[4 * i + 3] = n3 * inv
            e1 = x0 - x_ref[3 * i]
            e2 = x1 - x_ref[3 * i + 1]
            e3 = x2 - x_ref[3 * i + 2]
            if not (e1 * e1 + e2 * e2 + e3 * e3 <= skin_half2):
                bits |= BIT_SKIN
            st[i] |= bits  # a store in every lane (the scalar body stores only a flag)

    @jit
    def row_zero(a, i):
        """``Σ_c (a[i, c] - a[i, c])`` over the first three columns: 0 when they are
        finite, NaN otherwise."""
        return (a[i, 0] - a[i, 0]) + (a[i, 1] - a[i, 1]) + (a[i, 2] - a[i, 2])

    @jit
    def kick_body(i, kick, scheme, h, dyn, par, status, f1, f2, f3, m1, m2, m3):
        """Store the force ``f`` and moment ``m`` at the new configuration; with ``kick``,
        the second half kick of (23c,d)/(25c,d) (map (27) has none); then the finiteness
        check of the particle's new state. Returns the kick's factors
        (:func:`kick_factors`; zeros where it made no kick)."""
        T = dyn.x.dtype.type
        F, RM = dyn.F, dyn.RM
        a = b = T(0.0)
        F[i, 0] = f1
        F[i, 1] = f2
        F[i, 2] = f3
        RM[i, 0] = m1
        RM[i, 1] = m2
        RM[i, 2] = m3
        v, om = dyn.v, dyn.omega
        if kick and scheme != SCHEME_CAMPELLO:
            a, b = kick_factors(i, scheme, h, par)  # the stored force and moment, in registers
            v[i, 0] += a * T(f1)
            v[i, 1] += a * T(f2)
            v[i, 2] += a * T(f3)
            om[i, 0] += b * T(m1)
            om[i, 1] += b * T(m2)
            om[i, 2] += b * T(m3)
        # a - a is 0 for a finite a and NaN otherwise, so the sum of them is 0 exactly when
        # every number of the row is finite, in whatever order it is added (one test, no
        # branch per number): six independent partial sums, not one chain of nineteen adds
        if not is_finite((row_zero(dyn.x, i) + row_zero(v, i)) + (row_zero(om, i) + row_zero(F, i))
                         + (row_zero(RM, i) + (row_zero(dyn.q, i) + (dyn.q[i, 3] - dyn.q[i, 3])))):  # fmt: skip
            status[i] |= BIT_NOT_FINITE
        return a, b

    @jit
    def save_body(i, src, dst):
        """Copy row ``i`` of every array of the ``Dynamics`` ``src`` to ``dst`` (particles
        for ``i < N``, bonds for ``i < B``); with the dissipative contact law also the
        neighbour row with its springs (its listed slots), the wall springs and the
        dissipated energies (one-row placeholders otherwise); with walls the running
        maximum of the wall contact force (``wpeak``), with moving walls their work, in a
        periodic box the image counters."""
        n = src.x.shape[0]
        if i < n:
            for c in range(3):
                dst.x[i, c] = src.x[i, c]
                dst.v[i, c] = src.v[i, c]
                dst.omega[i, c] = src.omega[i, c]
                dst.F[i, c] = src.F[i, c]
                dst.RM[i, c] = src.RM[i, c]
            for c in range(4):
                dst.q[i, c] = src.q[i, c]
        if i < src.broken.shape[0]:
            dst.broken[i] = src.broken[i]
            dst.released[i] = src.released[i]
        if i < src.count.shape[0]:
            k = min(src.count[i], src.nbr.shape[1])
            dst.count[i] = src.count[i]
            for p in range(k):
                dst.nbr[i, p] = src.nbr[i, p]
                for c in range(src.hist.shape[2]):
                    dst.hist[i, p, c] = src.hist[i, p, c]
                dst.live[i, p] = src.live[i, p]
            for c in range(3):
                dst.x_ref[i, c] = src.x_ref[i, c]
        if i < src.whist.shape[0]:
            for w in range(src.whist.shape[1]):
                for c in range(src.whist.shape[2]):
                    dst.whist[i, w, c] = src.whist[i, w, c]
        if i < src.dissip.shape[0]:
            for c in range(src.dissip.shape[1]):
                dst.dissip[i, c] = src.dissip[i, c]
        if i < src.wpeak.shape[0]:
            dst.wpeak[i] = src.wpeak[i]
        if i < src.wwork.shape[0]:
            dst.wwork[i] = src.wwork[i]
        if i < src.image.shape[0]:
            for c in range(3):
                dst.image[i, c] = src.image[i, c]

    @jit
    def report_values(i, dyn, par, contacts, status):
        """Particle ``i``'s share of a block report: its status bits, ``|x - x_ref|²``
        (with a neighbour list), ``|v|²`` and ``|F/m|²``, as float64 (non-finite values as
        :data:`kernels.layout.REPORT_BIG`)."""
        T = dyn.x.dtype.type
        d2 = T(0.0)
        if contacts.mode == CONTACTS_LIST:
            e1, e2, e3 = moved(T, i, dyn.x, contacts)
            d2 = e1 * e1 + e2 * e2 + e3 * e3
        v2 = T(0.0)
        a2 = T(0.0)
        for c in range(3):
            v2 += dyn.v[i, c] * dyn.v[i, c]
            a2 += dyn.F[i, c] * dyn.F[i, c]
        dd = float(d2)
        vv = float(v2)
        aa = float(a2) / (float(par.mass[i]) * float(par.mass[i]))
        if not (dd <= REPORT_BIG):
            dd = REPORT_BIG
        if not (vv <= REPORT_BIG):
            vv = REPORT_BIG
        if not (aa <= REPORT_BIG):
            aa = REPORT_BIG
        return status[i], dd, vv, aa

    return SimpleNamespace(
        quat_multiply=quat_multiply,
        quat_from_rrp=quat_from_rrp,
        quat_rotate=quat_rotate,
        rrp_increment=rrp_increment,
        pendulum_moment=pendulum_moment,
        is_finite=is_finite,
        advance_body=advance_body,
        advance_with=advance_with,
        advance_rows=advance_rows,
        kick_factors=kick_factors,
        kick_body=kick_body,
        save_body=save_body,
        report_values=report_values,
    )
