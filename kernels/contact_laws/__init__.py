"""Contact laws: one module per law, plugged into the generic loops of :mod:`kernels.contacts`.

A contact law is what two touching bodies (two particles, or a particle and a wall) do to
each other: forces, moments, the history the contact keeps from step to step (springs),
its stored energy and the energy it dissipates. The loops around it (which pairs are
candidates, the canonical orientation of a pair, the compensated sums, the per-pair pass,
the history carried through neighbour rebuilds, the ledgers) are the same for every law
and live in :mod:`kernels.contacts`; they are compiled once per law, for the CPU and for
the GPU, from the same source, so no kernel branches on the law.

A law module defines

``NAME``
    its name in scenes and in ``ModelBuilder.set_contacts(law=...)``;
``HISTORY``
    floats kept per contact (0: none). By convention the last one is non-zero exactly
    while the contact holds history (a flag of 1, or the overlap at the last step);
``VELOCITIES``
    whether the law reads velocities (then the advance pass writes the velocities the
    force pass gives it, :mod:`kernels.particles`);
``MOMENTS``
    whether it exerts moments;
``DISSIPATES``
    whether it books dissipated energy, by kind: normal, friction, rolling, twisting
    (:data:`kernels.laws.DISSIPATION` columns);
``ODD``
    whether its pair term is exactly odd in the separation (the force ``c(|d|²) d``, no
    moments, no history): then each end evaluates the pair from its own side, with no
    canonical order to find (Hertz); otherwise the canonical orientation below;
``ORIENTED``
    how many leading floats of the history change sign when ``a`` and ``b`` trade
    places (a tangential spring, the displacement of ``a`` relative to ``b``: 3; none:
    0). The loops store the history in the pair's order by index and hand it to the law
    in the canonical order, so a spring survives a flip of the canonical order (two
    centres passing each other in ``x``, a particle wrapped into a periodic box);
``PARAMS``
    the names of its columns in the table of material-pair parameters;
``build(jit)``
    the law's scalar functions compiled with ``jit`` (a namespace), with these
    signatures (``T`` is the run's float type; vectors travel as components; ``p`` is
    the law's tuple of one material pair's parameters; ``hist`` its history tuple):

    ``body(T, k, dyn, par)``
        what the law reads of particle ``k`` (any value or tuple);
    ``params(table, row)``
        the parameters of row ``row`` of the pair table;
    ``orient(hist, sign)``
        ``hist`` with its ``ORIENTED`` leading floats multiplied by ``sign`` (±1);
    ``load(a, i, s)`` / ``store(a, i, s, r)``
        the history of slot ``a[i, s]`` as a tuple, and storing a result's history;
    ``contact(T, dist2, reach, held)``
        :data:`NONE`, :data:`EVALUATE` or :data:`RELEASE` for a pair at squared centre
        distance ``dist2`` with ``reach = r_a + r_b``, holding history or not;
    ``pair(T, d1, d2, d3, dist2, reach, lo, hi, p, hist, h)``
        the contact of the pair in its canonical orientation, ``d = x_lo - x_hi`` with
        ``lo < hi`` and ``lo``, ``hi`` their ``body`` values; returns a tuple of
        :data:`RESULT` floats plus ``HISTORY``: force on ``lo`` (3), moment on ``lo``
        (3), moment on ``hi`` (3), the new history (``HISTORY``), the stored energy
        after the step, and the energy dissipated in the step by kind (4). ``h = 0``:
        no update (analysis);
    ``release(T, r_a, r_b, p, hist)``
        the energy (4 kinds) dissipated when a contact holding ``hist`` opens;
    ``energy(T, d1, d2, d3, dist2, reach, lo, hi, p, hist)``
        the stored energy at the current configuration, without update;
    ``wall_contact(T, dist, r, held)``, ``wall(T, n1, n2, n3, dist, me, p, hist, h)``,
    ``wall_release(T, r, p, hist)``, ``wall_energy(T, n1, n2, n3, dist, me, p, hist)``
        the same against a planar wall with unit normal ``n`` into the allowed side at
        signed distance ``dist`` from particle ``me`` (the result in the layout of
        ``pair``, ``lo`` being the particle);
    ``moving(T, me, u1, u2, u3, o1, o2, o3, e1, e2, e3)``
        ``me`` seen from a moving wall whose rigid velocity field is ``u`` (the
        dashpots') and ``e`` (the drift's) at the particle's centre, turning at ``o``
        (:func:`interface.in_wall_frame` for the laws that read velocities; ``me``
        itself for a law that does not).

A law calls only functions compiled by its own ``build``. The host side of a law (its
parameters, their validation, the pair table) is
:mod:`granular.particles.forces.laws`.
"""

from . import hertz, hertz_mindlin, jkr, linear
from .interface import EVALUATE, NONE, RELEASE, RESULT

__all__ = ["EVALUATE", "LAWS", "NONE", "RELEASE", "RESULT", "get"]

#: The laws by name.
LAWS = {m.NAME: m for m in (hertz, hertz_mindlin, linear, jkr)}


def get(name: str):
    """The law module called ``name``; ``ValueError`` naming the known laws otherwise."""
    try:
        return LAWS[name]
    except KeyError:
        raise ValueError(f"contact law: unknown law {name!r}; known laws: {', '.join(sorted(LAWS))}") from None
