"""Paper 003's elastic contact, (56)-(57): ``U = (2/5) K [1 - s/ρ]_+^{5/2}``.

Between particles ``s`` is the centre distance and ``ρ = D_a/2 + D_b/2``; against a
planar wall ``s`` is the signed distance of the centre from the plane and ``ρ = D/2``
("a special case of particle-particle"). The force is ``K/ρ [1 - s/ρ]_+^{3/2}`` along the
separation; no moments, no history, no dissipation. ``K`` comes from the pair table: the
particles' ``K^pp`` (one per replica in a model of replicas) and each wall's own ``K``
(``granular.particles.forces.laws.Hertz``). The printed factor 5/2 of (56) contradicts
(57); 2/5 makes ``-dU/ds`` equal (57) (``docs/physics.md``).
"""

from .. import laws
from .interface import EVALUATE, NONE

NAME = "hertz"
HISTORY = 0
VELOCITIES = False
MOMENTS = False
DISSIPATES = False
#: The pair term is exactly odd in the separation (force ``c(|d|²) d``, no moments, no
#: history): either end may evaluate it from its own side (kernels.contacts.first).
ODD = True
#: Leading floats of the history that change sign with the pair's orientation (none).
ORIENTED = 0
PARAMS = ("k",)


def build(jit):
    overlap = jit(laws.hertz_overlap)
    hertz = jit(laws.hertz_force)

    @jit
    def force(T, distance, reach, k):
        o, inv = overlap(T, distance, reach)
        return hertz(T, o, inv, k)

    @jit
    def body(T, k, dyn, par):
        return par.radius[k]

    @jit
    def params(table, row):
        return table[row, 0]

    @jit
    def load(a, i, s):
        return 0

    @jit
    def orient(h, sign):
        return h

    @jit
    def store(a, i, s, r):
        return None

    @jit
    def contact(T, dist2, reach, held):
        if dist2 >= reach * reach:
            return NONE
        return EVALUATE

    @jit
    def pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h):
        dist = dist2 ** T(0.5)
        inv = T(1.0) / dist  # beside the overlap's square root, not after it
        f, u = force(T, dist, reach, p)
        c = f * inv
        z = T(0.0)
        return c * d1, c * d2, c * d3, z, z, z, z, z, z, u, z, z, z, z

    @jit
    def release(T, ra, rb, p, hist):
        z = T(0.0)
        return z, z, z, z

    @jit
    def energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist):
        f, u = force(T, dist2 ** T(0.5), reach, p)
        return u

    @jit
    def wall_contact(T, dist, r, held):
        if overlap(T, dist, r)[0] > T(0.0):  # the overlap the force finds
            return EVALUATE
        return NONE

    @jit
    def wall(T, n1, n2, n3, dist, me, p, hist, h):
        f, u = force(T, dist, me, p)
        z = T(0.0)
        return f * n1, f * n2, f * n3, z, z, z, z, z, z, u, z, z, z, z

    @jit
    def wall_release(T, r, p, hist):
        z = T(0.0)
        return z, z, z, z

    @jit
    def wall_energy(T, n1, n2, n3, dist, me, p, hist):
        f, u = force(T, dist, me, p)
        return u

    @jit
    def moving(T, me, u1, u2, u3, o1, o2, o3, e1, e2, e3):
        return me  # no velocities: a moving wall is where it is

    return _namespace(locals())


def _namespace(scope):
    from types import SimpleNamespace

    names = ("body", "params", "load", "orient", "store", "contact", "pair", "release", "energy", "wall_contact", "wall",
             "wall_release", "wall_energy", "moving")  # fmt: skip
    return SimpleNamespace(**{k: scope[k] for k in names})
