"""Prescribed motion of the planar walls, placed on the device at each step's time.

A wall moves rigidly: a translation ``D(t)`` whose velocity is tabulated (rows ``t_j``,
``v_j``, linear between rows and held constant before the first and after the last, so one
row is a constant velocity) and a rotation at a constant angular velocity ``ω`` about an
axis through the point ``p(t) = p_0 + D(t)``. At ``t = 0`` the wall is where the model put
it (``n_0·x = c_0``); at time ``t`` a point ``y`` of the wall's reference pose is at
``x(t) = p_0 + D(t) + R(ω t) (y - p_0)`` (``R(ω t)`` the rotation by the angle ``|ω| t`` about ``ω``), and its velocity is the
rigid field ``u(x) = Ḋ(t) + ω × (x - p(t))``. The plane is then ``n·x = c`` with
``n = R n_0`` and ``c = n·(p(t) + R (c_0 n_0 - p_0))``.

The time comes from the walls' clock ``(t_0, k, h)``, ``t = t_0 + k h`` (the state's clock,
:mod:`granular.particles.integrators.engine`): the host writes it before a block and
every step of the block adds one to ``k`` (:func:`tick`), so a wall is at the same place at
the same step whatever the block length. :func:`place` writes ``planes`` (the plane at
``t``, which every wall contact reads) and ``frame`` (W, 13), in the run's precision like
``planes`` (so that a float32 force pass stays single precision): ``p(t)`` (3), ``Ḋ(t)``
(3), ``ω`` (3), the translation's mean velocity over the step that ended at ``t``,
``(D(t) - D(t - h)) / h`` (3), which stretches the contact springs by the wall's actual
displacement (``docs/geometry.md``), 1 for a moving wall (the host writes the
flag, and ``p`` of a wall at rest: its centre), and ``R(ω t)`` (9, row by row), which
takes a triangle mesh's reference pose to where it is (:mod:`kernels.meshes`).

The rows of ``motion`` and ``frame`` are the planar walls' (W, the rows of ``planes``)
followed by the triangle meshes' (a mesh moves as a rigid body: only its frame changes,
its triangles stay in their reference pose).

Layout of ``motion`` (W, 9) float64: ``p_0`` (3), ``ω`` (3), the wall's first and
end row of ``table`` (two integers as floats), and 1.0 for a moving wall; ``table`` (K, 7)
float64 rows ``(t_j, v_j (3), D(t_j) (3))``; ``ref`` (W, 4) float64 the reference
planes ``(n_0, c_0)``. With no moving wall ``clock`` is (0,) and nothing here runs.
"""

import math

# columns of ``motion``
MOTION_P0 = 0
MOTION_OMEGA = 3
MOTION_FIRST = 6
MOTION_END = 7
MOTION_MOVING = 8
MOTION_WIDTH = 9
# columns of ``frame``
FRAME_P = 0
FRAME_U = 3
FRAME_OMEGA = 6
FRAME_DRIFT = 9
FRAME_MOVING = 12
FRAME_R = 13
FRAME_WIDTH = 22


def translation(table, lo, hi, t):
    """``(D(t), Ḋ(t))`` (six floats) of the rows ``table[lo:hi]`` (none: at rest)."""
    if hi <= lo:
        return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    j = lo
    if t > table[lo, 0]:
        while j + 1 < hi and table[j + 1, 0] <= t:
            j += 1
    s = t - table[j, 0]
    if t <= table[lo, 0] or j + 1 == hi:  # held velocity before the first row, after the last
        return (table[j, 4] + table[j, 1] * s, table[j, 5] + table[j, 2] * s, table[j, 6] + table[j, 3] * s,
                table[j, 1], table[j, 2], table[j, 3])  # fmt: skip
    f = s / (table[j + 1, 0] - table[j, 0])  # linear velocity within the row's interval
    d1 = table[j, 4] + s * (table[j, 1] + 0.5 * f * (table[j + 1, 1] - table[j, 1]))
    d2 = table[j, 5] + s * (table[j, 2] + 0.5 * f * (table[j + 1, 2] - table[j, 2]))
    d3 = table[j, 6] + s * (table[j, 3] + 0.5 * f * (table[j + 1, 3] - table[j, 3]))
    return (d1, d2, d3, table[j, 1] + f * (table[j + 1, 1] - table[j, 1]),
            table[j, 2] + f * (table[j + 1, 2] - table[j, 2]), table[j, 3] + f * (table[j + 1, 3] - table[j, 3]))  # fmt: skip


def rotate(w1, w2, w3, t, y1, y2, y3):
    """``R(ω t) y``: Rodrigues' formula about the unit axis ``ω/|ω|`` by ``|ω| t``."""
    s = math.sqrt(w1 * w1 + w2 * w2 + w3 * w3)
    if s == 0.0:
        return y1, y2, y3
    a1, a2, a3 = w1 / s, w2 / s, w3 / s
    th = s * t
    c, sn = math.cos(th), math.sin(th)
    ad = a1 * y1 + a2 * y2 + a3 * y3
    x1 = a2 * y3 - a3 * y2
    x2 = a3 * y1 - a1 * y3
    x3 = a1 * y2 - a2 * y1
    k = (1.0 - c) * ad
    return c * y1 + sn * x1 + k * a1, c * y2 + sn * x2 + k * a2, c * y3 + sn * x3 + k * a3


def build(jit):
    """:func:`place` and :func:`tick` compiled with ``jit`` (a namespace)."""
    trans = jit(translation)
    rot = jit(rotate)

    @jit
    def place_wall(w, t, hc, walls):
        """Wall ``w``'s plane and frame at time ``t`` (``hc``: the step, 0 outside steps)."""
        m, tab = walls.motion, walls.table
        lo, hi = int(m[w, MOTION_FIRST]), int(m[w, MOTION_END])
        w1, w2, w3 = m[w, MOTION_OMEGA], m[w, MOTION_OMEGA + 1], m[w, MOTION_OMEGA + 2]
        d = trans(tab, lo, hi, t)
        e1, e2, e3 = d[3], d[4], d[5]
        if hc > 0.0:
            b = trans(tab, lo, hi, walls.clock[0] + (walls.clock[1] - 1.0) * hc)
            e1 = (d[0] - b[0]) / hc
            e2 = (d[1] - b[1]) / hc
            e3 = (d[2] - b[2]) / hc
        p1, p2, p3 = m[w, 0] + d[0], m[w, 1] + d[1], m[w, 2] + d[2]
        T = walls.frame.dtype.type
        if w < walls.planes.shape[0]:  # a planar wall (the rows after the planes are meshes)
            ref = walls.ref
            n = rot(w1, w2, w3, t, ref[w, 0], ref[w, 1], ref[w, 2])
            c0 = ref[w, 3]
            q = rot(w1, w2, w3, t, c0 * ref[w, 0] - m[w, 0], c0 * ref[w, 1] - m[w, 1], c0 * ref[w, 2] - m[w, 2])
            walls.planes[w, 0] = T(n[0])
            walls.planes[w, 1] = T(n[1])
            walls.planes[w, 2] = T(n[2])
            walls.planes[w, 3] = T(n[0] * (p1 + q[0]) + n[1] * (p2 + q[1]) + n[2] * (p3 + q[2]))
        f = walls.frame
        for col in range(3):  # R's columns: the images of the axes
            a = rot(w1, w2, w3, t, 1.0 if col == 0 else 0.0, 1.0 if col == 1 else 0.0, 1.0 if col == 2 else 0.0)
            f[w, FRAME_R + col] = T(a[0])
            f[w, FRAME_R + 3 + col] = T(a[1])
            f[w, FRAME_R + 6 + col] = T(a[2])
        f[w, 0], f[w, 1], f[w, 2] = T(p1), T(p2), T(p3)
        f[w, 3], f[w, 4], f[w, 5] = T(d[3]), T(d[4]), T(d[5])
        f[w, 6], f[w, 7], f[w, 8] = T(w1), T(w2), T(w3)
        f[w, 9], f[w, 10], f[w, 11] = T(e1), T(e2), T(e3)

    @jit
    def place(walls):
        """Every moving wall at the clock's time (serial: a few walls)."""
        if walls.clock.shape[0] == 0:
            return
        hc = walls.clock[2]
        t = walls.clock[0] + walls.clock[1] * hc
        for w in range(walls.motion.shape[0]):
            if walls.motion[w, MOTION_MOVING] != 0.0:
                place_wall(w, t, hc, walls)

    @jit
    def tick(walls):
        """One step on: ``k += 1``, then :func:`place`."""
        if walls.clock.shape[0] == 0:
            return
        walls.clock[1] += 1.0
        place(walls)

    from types import SimpleNamespace

    return SimpleNamespace(place=place, tick=tick, place_wall=place_wall)
