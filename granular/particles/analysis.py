"""Forces by interaction and the list of active contacts, for analysis (force chains,
contact networks, checks of a law); host arrays, evaluated on demand, not every step.

:func:`forces_by_family` splits ``state.F`` and ``state.RM`` into the families of the
model (gravity, pendulum, bonds, contacts, walls) with the same kernels the step uses.
:func:`contact_list` gives every touching particle pair and particle-wall contact with
its overlap, normal, contact point and the force and moments of the model's contact law
(:mod:`kernels.contact_laws`: the law's own scalar functions, run here as plain Python),
evaluated at the state as it stands: history (springs) as stored, dashpots at the
state's velocities. For every particle the contact list's forces and moments add up to
the ``contacts`` and ``walls`` families of :func:`forces_by_family`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from kernels.contact_laws import EVALUATE
from kernels.walls import FRAME_MOVING

from .neighbors import min_image
from .placement import near_pairs

__all__ = ["ContactList", "contact_list", "forces_by_family"]


def _configuration(model, state):
    xp = model.backend.xp
    return SimpleNamespace(x=state.x, v=state.v, q=state.q, omega=state.omega, F=xp.zeros_like(state.F),
                           RM=xp.zeros_like(state.RM), broken=state.broken, released=state.released,
                           wall_springs=state.wall_springs, dissipated=state.dissipated,
                           neighbors=getattr(state, "neighbors", None))  # fmt: skip


def forces_by_family(model, state) -> dict:
    """Force and spatial moment of each interaction family at ``state``.

    Returns
    -------
    dict
        ``{kind: (F, RM)}`` for each family of the model, in the order of
        ``model.forces`` (``"gravity"``, ``"pendulum"``, ``"bonds"``, ``"contacts"``,
        ``"walls"``): host float64 arrays (N, 3), force [M L/T²] and spatial moment
        [M L²/T²] on each particle. Their sum is the total the step uses (``state.F``,
        ``state.RM`` after a step; with the dissipative law the step's dashpots see
        predicted velocities, these the state's own).
    """
    be = model.backend
    out = {}
    for family in model.forces:
        cfg = _configuration(model, state)
        family.accumulate(model, cfg)
        out[family.kind] = (np.asarray(be.to_host(cfg.F), dtype=np.float64),
                            np.asarray(be.to_host(cfg.RM), dtype=np.float64))  # fmt: skip
    return out


@dataclass
class ContactList:
    """Active contacts: ``C`` rows, each a particle pair or a particle and a wall.

    Attributes
    ----------
    pairs : ndarray, (C, 2) int64
        ``(i, j)`` with ``i < j`` for a particle pair; ``(i, w)`` for particle ``i`` on
        wall ``w`` (then ``wall`` is True).
    wall : ndarray, (C,) bool
        Whether the row is a wall contact.
    overlap : ndarray, (C,)
        ``δ = r_i + r_j - |x_i - x_j|`` (wall: ``r_i - (n·x_i - c)``) [L].
    normal : ndarray, (C, 3)
        Unit normal from ``j`` (or the wall) towards ``i``.
    point : ndarray, (C, 3)
        Contact point: the middle of the overlap on the line of centres (wall: the
        centre's projection on the plane) [L].
    force_normal, force_tangential : ndarray, (C, 3)
        Normal and tangential parts of the force on ``i`` [M L/T²]; ``j`` gets minus
        their sum. Tangential forces come only with a law with friction.
    moment_i, moment_j : ndarray, (C, 3)
        Spatial moment on ``i`` and on ``j`` [M L²/T²] (zero for the frictionless law;
        ``moment_j`` is zero for walls).
    """

    pairs: np.ndarray
    wall: np.ndarray
    overlap: np.ndarray
    normal: np.ndarray
    point: np.ndarray
    force_normal: np.ndarray
    force_tangential: np.ndarray
    moment_i: np.ndarray
    moment_j: np.ndarray

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def force(self) -> np.ndarray:
        """Total contact force on ``i`` (C, 3)."""
        return self.force_normal + self.force_tangential

    def per_particle(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Force and moment on each of ``n`` particles summed over the contacts (N, 3) each."""
        F, M = np.zeros((n, 3)), np.zeros((n, 3))
        i, j, pp = self.pairs[:, 0], self.pairs[:, 1], ~self.wall
        np.add.at(F, i, self.force)
        np.add.at(F, j[pp], -self.force[pp])
        np.add.at(M, i, self.moment_i)
        np.add.at(M, j[pp], self.moment_j[pp])
        return F, M


def wall_loads(model, state) -> tuple[np.ndarray, np.ndarray]:
    """The load of the particles on each wall: the force on it [M L/T²] and the moment
    about its centre (its ``center``; the origin by default; a moving wall's centre moves
    with it) [M L²/T²], summed over its contacts at ``state`` (the velocities ``v``,
    ``Ω`` in the dashpots, moving walls seen in their frame), each (W, 3) host float64.

    Examples
    --------
    A sphere 0.001 into the floor at ``x = 0.5`` pushes it down by the Hertz wall force
    (``(1e4/0.5) 0.002^1.5``, as :func:`contact_list` shows) and turns it about the
    origin by ``0.5`` times that:

    >>> import granular as gr
    >>> b = gr.ModelBuilder()
    >>> _ = b.add_particles([[0.5, 0, 0.499]], radius=0.5, mass=2.0)
    >>> b.set_contacts(kpp=1e4)
    >>> b.add_wall([0, 0, 1], 0.0, allow_initial_overlap=True)
    0
    >>> model = b.finalize("cpu")
    >>> F, M = gr.wall_loads(model, model.state())
    >>> F.round(6).tolist(), M.round(6).tolist()
    ([[0.0, 0.0, -1.788854]], [[0.0, 0.894427, 0.0]])
    """
    loads = model.wall_loads(state)
    return loads[:, :3].copy(), loads[:, 3:].copy()


def mesh_loads(model, state) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The load of the particles on each triangle mesh at ``state``: the force on it
    [M L/T²] and its moment about the mesh's centre (its ``center``, by default its area
    centroid; a moving mesh's centre moves with it) [M L²/T²], each (M, 3), and the force on
    each triangle (T, 3), the meshes' triangles in the order they were added; host float64,
    from the contacts the force pass chooses (``docs/geometry.md``).

    Examples
    --------
    A sphere resting 0.001 into a flat mesh feels the same force as on a planar wall:

    >>> import granular as gr
    >>> b = gr.ModelBuilder()
    >>> _ = b.add_particles([[0.3, 0.2, 0.499]], radius=0.5, mass=2.0)
    >>> b.set_contacts(kpp=1e4)
    >>> floor = gr.TriangleMesh.rectangle([0, 0, 0], [2, 0, 0], [0, 2, 0], divisions=(4, 4))
    >>> b.add_mesh(floor, allow_initial_overlap=True)
    0
    >>> model = b.finalize("cpu")
    >>> F, M, per_triangle = gr.mesh_loads(model, model.state())
    >>> F.round(6).tolist(), int((per_triangle[:, 2] != 0).sum())
    ([[0.0, 0.0, -1.788854]], 1)
    """
    loads, per_tri = model.mesh_loads(state)
    return loads[:, :3].copy(), loads[:, 3:].copy(), per_tri


def _touching_pairs(model, x, r, reach=0.0, broken=None):
    """Particle pairs ``i < j`` closer than ``r_i + r_j + reach``, less the ones joined by
    an intact bond (``broken``: the bonds' flags; none broken if not given) that the
    contacts leave out; in a periodic box by the minimum image."""
    if len(x) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    pairs, d = near_pairs(x, 2 * r.max() + reach, model.period)
    if not len(pairs):
        return pairs.reshape(0, 2)
    d = np.linalg.norm(d, axis=1)
    pairs = pairs[d < r[pairs[:, 0]] + r[pairs[:, 1]] + reach]
    contacts = model.force("contacts")
    replica = model.replica
    if replica is not None:  # independent replicas: only pairs within one
        pairs = pairs[replica[pairs[:, 0]] == replica[pairs[:, 1]]]
    if contacts.skip_bonded and model.bonds is not None:
        a, b = model.bonds.host["a"], model.bonds.host["b"]
        if broken is not None:
            intact = np.asarray(broken) == 0
            a, b = a[intact], b[intact]
        bonded = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
        pairs = pairs[[(int(i), int(j)) not in bonded for i, j in pairs]].reshape(-1, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def contact_list(model, state) -> ContactList:
    """Every active contact of ``state`` with its geometry, force and moments
    (:class:`ContactList`), evaluated as :mod:`granular.particles.analysis` describes. Empty
    when the model has no contacts.

    Examples
    --------
    Two spheres of radius 0.5 pressed together, the first also into the floor:

    >>> import granular as gr
    >>> b = gr.ModelBuilder()
    >>> ids = b.add_particles([[0, 0, 0.45], [0.9, 0, 0.5]], radius=0.5)
    >>> b.set_contacts(kpp=100.0, allow_initial_overlap=True)
    >>> b.add_wall([0, 0, 1], 0.0, allow_initial_overlap=True)
    0
    >>> model = b.finalize("cpu")
    >>> c = gr.contact_list(model, model.state())
    >>> c.pairs.tolist(), c.wall.tolist(), c.overlap.round(6).tolist()
    ([[0, 1], [0, 0]], [False, True], [0.098612, 0.05])
    >>> c.force_normal[1].round(4).tolist()        # the wall pushes particle 0 up: (100/0.5) 0.1^1.5
    [0.0, 0.0, 6.3246]
    """
    be = model.backend
    x = np.asarray(be.to_host(state.x), dtype=np.float64)
    r = np.asarray(be.to_host(model.radius), dtype=np.float64)
    rows = []
    if model.force("contacts") is not None:
        rows += _particle_rows(model, state, x, r)
    walls = model.force("walls")
    if walls is not None:
        rows += _wall_rows(model, state, x, r, walls)
    if not rows:
        z = np.zeros((0, 3))
        return ContactList(np.zeros((0, 2), np.int64), np.zeros(0, bool), np.zeros(0), z, z, z, z, z, z)
    cols = list(zip(*rows))
    pairs = np.array(cols[0], dtype=np.int64).reshape(-1, 2)
    wall = np.array(cols[1], dtype=bool)
    overlap = np.array(cols[2], dtype=np.float64)
    normal, point, force, mi, mj = (np.array(c, dtype=np.float64).reshape(-1, 3) for c in cols[3:])
    fn = (force * normal).sum(axis=1, keepdims=True) * normal
    return ContactList(pairs, wall, overlap, normal, point, fn, force - fn, mi, mj)


def _host_law(model, state):
    """The model's law as plain Python functions (its ``build`` with no compiler) and what
    they read on the host: body values, the pair table, the stored history."""
    be = model.backend
    law = model.law
    L = law.kernel.build(lambda f: f)
    v = np.asarray(be.to_host(state.v), np.float64)
    w = np.asarray(be.to_host(state.omega), np.float64)
    dyn = SimpleNamespace(x=np.asarray(be.to_host(state.x), np.float64), vp=v, wp=w)
    par = SimpleNamespace(radius=np.asarray(be.to_host(model.radius), np.float64),
                          mass=np.asarray(be.to_host(model.mass), np.float64))  # fmt: skip
    stored = {}
    nl = getattr(state, "neighbors", None)
    if law.history and nl is not None:
        found, springs = nl.springs()
        stored = {(int(i), int(j)): tuple(s) for (i, j), s in zip(found, springs)}
    whist = np.asarray(be.to_host(state.wall_springs), np.float64)
    return SimpleNamespace(L=L, law=law, dyn=dyn, par=par, stored=stored, whist=whist, table=law.pair_host,
                           mat=law.mat_host, wall_mat=law.wall_mat_host, nmat=law.nmat)  # fmt: skip


def _row(h, ma, mb):
    """The pair-table row of materials ``ma``, ``mb`` (:func:`kernels.contacts.build`'s ``pair_row``)."""
    return int(ma) * h.nmat + int(mb) % h.nmat


def _particle_rows(model, state, x, r) -> list:
    T = np.float64
    h = _host_law(model, state)
    H = h.law.history
    rows = []
    broken = model.backend.to_host(state.broken) if model.n_bonds else None
    for i, j in _touching_pairs(model, x, r, reach=model.force("contacts").skin, broken=broken):
        d = min_image(x[i] - x[j], model.period)
        dist2 = float(d @ d)
        reach = r[i] + r[j]
        held = (int(i), int(j)) in h.stored
        if h.L.contact(T, dist2, reach, held) != EVALUATE:
            continue
        dist = float(np.sqrt(dist2))
        delta = reach - dist
        n = d / dist
        xj = x[i] - d if model.period.shape[0] else x[j]  # j's image next to i in a periodic box
        point = xj + (r[j] - 0.5 * delta) * n
        hist = h.stored.get((int(i), int(j)), (0.0,) * H) if H else 0
        p = h.L.params(h.table, _row(h, h.mat[i], h.mat[j]))
        out = h.L.pair(T, d[0], d[1], d[2], dist2, reach, h.L.body(T, i, h.dyn, h.par), h.L.body(T, j, h.dyn, h.par),
                       p, hist, T(0.0))  # fmt: skip
        rows.append(((i, j), False, delta, n, point, out[0:3], out[3:6], out[6:9]))
    return rows


def _wall_rows(model, state, x, r, walls) -> list:
    T = np.float64
    zero = (0.0, 0.0, 0.0)
    h = _host_law(model, state)
    H = h.law.history
    rows = []
    first, replica = walls.first_host, walls.replica_host
    frame = None
    if walls.moving:  # the walls where they are at the state's time, with their velocity fields
        model._place_walls(state, walls.kernel_args())
        frame = np.asarray(model.backend.to_host(walls.frame), dtype=np.float64)
        moving = frame[:, FRAME_MOVING] != 0.0
    for w, plane in enumerate(walls.planes_now()):
        n, c = plane[:3], plane[3]
        s = x @ n - c
        meets = np.ones(len(x), dtype=bool)
        if len(first):  # replicas: the wall meets its replica's particles
            rep = int(np.searchsorted(first, w, side="right")) - 1
            meets &= replica == rep
        for i in np.flatnonzero(meets):
            local = w - (int(first[replica[i]]) if len(first) else 0)
            dist = float(s[i])
            hist = tuple(h.whist[i, local]) if H else 0
            held = bool(H and hist[H - 1] != 0)
            if h.L.wall_contact(T, dist, r[i], held) != EVALUATE:
                continue
            point = x[i] - dist * n
            p = h.L.params(h.table, _row(h, h.mat[i], h.wall_mat[w]))
            me = h.L.body(T, i, h.dyn, h.par)
            if frame is not None and moving[w]:  # seen from the wall (kernels.contacts, wall_sum)
                o = frame[w, 6:9]
                u = frame[w, 3:6] + np.cross(o, x[i] - frame[w, :3])
                me = h.L.moving(T, me, *u, *o, *u)
            out = h.L.wall(T, n[0], n[1], n[2], dist, me, p, hist, T(0.0))
            rows.append(((i, w), True, r[i] - dist, n, point, out[0:3], out[3:6], zero))
    return rows
