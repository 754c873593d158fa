"""Per-particle kernel bodies, written once and compiled for each backend.

:func:`build` takes a decorator (``numba.njit`` for the CPU, ``numba.cuda.jit(device=True)``
for the GPU) and returns the laws of :mod:`kernels.laws` and the per-particle bodies
below compiled with it. A body reads and writes entry ``i`` of its arrays only, so the
CPU loop (``prange``) and the GPU grid around it need no synchronisation and the result
does not depend on the order in which particles are visited.

Array arguments (``N`` particles, float64 unless said): ``x, v, F``: (N, 3); ``q``:
(N, 4) unit quaternions; ``om`` (Ω), ``RM``: (N, 3) spatial; ``m``, ``J``: (N,);
``status``: (N,) int32.
"""

from types import SimpleNamespace

from . import laws


def build(jit):
    """Compile the laws and bodies with ``jit``; returns a namespace of them."""
    quat_multiply = jit(laws.quat_multiply)
    quat_from_rrp = jit(laws.quat_from_rrp)
    quat_rotate = jit(laws.quat_rotate)
    rrp_increment = jit(laws.rrp_increment)
    pendulum_moment = jit(laws.pendulum_moment)
    is_finite = jit(laws.is_finite)

    SCHEME_CAMPELLO = laws.SCHEME_CAMPELLO
    STATUS_OK = laws.STATUS_OK
    STATUS_ROTATION_DOMAIN = laws.STATUS_ROTATION_DOMAIN
    STATUS_NOT_FINITE = laws.STATUS_NOT_FINITE

    @jit
    def advance_body(i, scheme, h, x, v, q, om, F, RM, m, J, x1, v1, q1, om1, status):
        """First part of a step of maps (23), (25) or (27) for particle ``i``.

        (23)/(25): half kick ``v + h F/2m``, ``Ω + h RM/2J``; drift (a): ``x + h v + h² F/2m``;
        rotation (b): ``q_{k+1} = q(Δα) ⊗ q_k``, i.e. ``R_{k+1} = R(Δα) R_k`` (spatial
        increment, ``α_{k+1} = α_k ⊕ Δα``). The second half kick is :func:`finish_body`.
        (27): full kick (c, d) with forces at ``k``, then (a) ``x + h v_{k+1}`` and (b)
        ``Δα = h Ω_{k+1}``.
        Writes the new state to ``x1, v1, q1, om1`` and ``status[i]``.
        """
        if scheme == SCHEME_CAMPELLO:
            a = h / m[i]
            b = h / J[i]
        else:
            a = 0.5 * h / m[i]
            b = 0.5 * h / J[i]
        vx = v[i, 0] + a * F[i, 0]
        vy = v[i, 1] + a * F[i, 1]
        vz = v[i, 2] + a * F[i, 2]
        wx = om[i, 0] + b * RM[i, 0]
        wy = om[i, 1] + b * RM[i, 1]
        wz = om[i, 2] + b * RM[i, 2]
        x1[i, 0] = x[i, 0] + h * vx
        x1[i, 1] = x[i, 1] + h * vy
        x1[i, 2] = x[i, 2] + h * vz
        v1[i, 0] = vx
        v1[i, 1] = vy
        v1[i, 2] = vz
        om1[i, 0] = wx
        om1[i, 1] = wy
        om1[i, 2] = wz
        d1, d2, d3, rho = rrp_increment(scheme, h, wx, wy, wz)
        if rho < 1.0:
            status[i] = STATUS_OK
        elif rho >= 1.0:
            status[i] = STATUS_ROTATION_DOMAIN
        else:  # rho is NaN: the state or the forces at k were not finite
            status[i] = STATUS_NOT_FINITE
        p0, p1, p2, p3 = quat_from_rrp(d1, d2, d3)
        n0, n1, n2, n3 = quat_multiply(p0, p1, p2, p3, q[i, 0], q[i, 1], q[i, 2], q[i, 3])
        # The product of unit quaternions is unit up to round-off; renormalising keeps
        # |q| = 1 to round-off after any number of steps instead of a random walk.
        inv = 1.0 / (n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3) ** 0.5
        q1[i, 0] = n0 * inv
        q1[i, 1] = n1 * inv
        q1[i, 2] = n2 * inv
        q1[i, 3] = n3 * inv

    @jit
    def finish_body(i, scheme, h, x1, v1, q1, om1, F1, RM1, m, J, status):
        """Second half kick of (23c,d)/(25c,d) with the forces at ``k+1``; finiteness check.

        Map (27) has no second kick; only the check runs.
        """
        if scheme != SCHEME_CAMPELLO:
            a = 0.5 * h / m[i]
            b = 0.5 * h / J[i]
            for c in range(3):
                v1[i, c] += a * F1[i, c]
                om1[i, c] += b * RM1[i, c]
        ok = True
        for c in range(3):
            ok = ok and is_finite(x1[i, c]) and is_finite(v1[i, c]) and is_finite(om1[i, c])
            ok = ok and is_finite(F1[i, c]) and is_finite(RM1[i, c])
        for c in range(4):
            ok = ok and is_finite(q1[i, c])
        if not ok and status[i] == STATUS_OK:
            status[i] = STATUS_NOT_FINITE

    @jit
    def gravity_body(i, m, g1, g2, g3, F):
        """Uniform field: ``F_i += m_i g``; ``U = -Σ m_i g·x_i``."""
        F[i, 0] += m[i] * g1
        F[i, 1] += m[i] * g2
        F[i, 2] += m[i] * g3

    @jit
    def pendulum_body(k, index, rho0, mg, e1, e2, e3, q, RM, U):
        """Pendulum (39) on particle ``index[k]``: adds its moment to ``RM``, energy to ``U[k]``."""
        i = index[k]
        p1, p2, p3 = quat_rotate(q[i, 0], q[i, 1], q[i, 2], q[i, 3], rho0[k, 0], rho0[k, 1], rho0[k, 2])
        r1, r2, r3, u = pendulum_moment(p1, p2, p3, mg[k], e1, e2, e3)
        RM[i, 0] += r1
        RM[i, 1] += r2
        RM[i, 2] += r3
        U[k] = u

    return SimpleNamespace(
        quat_multiply=quat_multiply,
        quat_from_rrp=quat_from_rrp,
        quat_rotate=quat_rotate,
        rrp_increment=rrp_increment,
        pendulum_moment=pendulum_moment,
        advance_body=advance_body,
        finish_body=finish_body,
        gravity_body=gravity_body,
        pendulum_body=pendulum_body,
    )
