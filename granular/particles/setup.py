"""Changes of a running model's set-up: walls and meshes taken away or put back, a new
prescribed motion from a given time on, a new gravity.

A model's builder (``Model.builder``) keeps every wall and mesh it was given, each by a
name (``add_wall(..., name=)``, ``add_mesh(..., name=)``; default ``"wall k"``,
``"mesh k"``), with the motions given there. A :class:`Setup` says what differs now:

- ``absent``: the names of the walls and meshes that are not in the model;
- ``motions``: new motions, in the order they were given, each from its time ``t0`` on
  (a translation velocity or its table, with times counted from ``t0``; a steady rotation
  about an axis through ``center``, a point of the axis at ``t0``);
- ``gravity``: the field now, in place of the builder's.

The builder's :meth:`~granular.particles.builder.ModelBuilder.finalize` builds the model
of its set-up (:func:`configured`). So a model with particles entering and leaving
(:mod:`granular.particles.feeds`) keeps its set-up, and a checkpoint, which stores the
set-up (:meth:`Setup.to_json`), gives the resumed run the same model.

**A new motion keeps the boundary where it is.** The kernels place a boundary at time
``t`` at ``x(t) = c + D(t) + R(ω t)(y - c)`` from its reference pose ``y`` (the pose at
``t = 0``; :mod:`kernels.walls`). A motion that starts at ``t0`` from the pose ``G`` the
boundary has then is laid out in those terms: its table's times shifted by ``t0``, the
rotation's point ``c = c_0 - D(t0)`` (``c_0`` the point given for ``t0``) and the
reference pose ``y = c + R(-ω t0)(G - c_0)``, so that ``x(t0) = G`` (to round-off) and
the boundary moves by the new motion from there. A motion of zeros stops it where it is.

**History.** The springs of the contacts with the walls and meshes that stay are carried
(the wall history's columns by name; a mesh's history slots by their mesh, the keys'
normals turned into the new reference pose where that pose turned). Those of a boundary
taken away are dropped; a boundary put back starts without history.

**Energy.** A change is an act from outside: taking away a wall that presses on a grain
releases the contact's stored energy, a new gravity changes the potential energy, and a
stopped wall stops working. A run books the change of the health check's conserved sum
(:func:`granular.particles.health.conserved_energy`) that the edit made as ``E_setup`` in
its ledger (:meth:`granular.particles.system.ParticleSystem.change_setup`), so the
balance holds across the change.
The forces are evaluated again after a change (a step's predicted velocities are not
kept), so a run changed at a step is the same whether or not it was stopped and resumed
there, but not the same as one that made no change.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kernels.meshes import HISTORY_SLOTS, SLOTS

from .forces.meshes import TriangleMesh, mesh_problem
from .forces.motion import WallMotion, rotation_matrix
from .placement import wall_problem
from .statefile import restore_state, state_arrays

__all__ = ["Setup", "boundary_names", "change_setup", "configured", "present", "restore_setup", "saved_setup"]


@dataclass
class Setup:
    """What differs from the builder's set-up (module docstring). JSON-able through
    :meth:`to_json` / :meth:`from_json`."""

    absent: list = field(default_factory=list)
    motions: list = field(default_factory=list)
    gravity: list | None = None

    def to_json(self) -> dict:
        return {"absent": list(self.absent), "motions": [dict(m) for m in self.motions], "gravity": self.gravity}

    @classmethod
    def from_json(cls, data) -> Setup:
        data = data or {}
        return cls(list(data.get("absent", [])), [dict(m) for m in data.get("motions", [])], data.get("gravity"))

    def copy(self) -> Setup:
        return Setup.from_json(self.to_json())


def boundary_names(builder) -> tuple[list, list]:
    """The names of the builder's walls and of its meshes, in their order."""
    walls = list(getattr(builder, "_wall_names", []))
    walls += [f"wall {k}" for k in range(len(walls), len(builder._walls))]
    meshes = [m.get("name") or f"mesh {k}" for k, m in enumerate(builder._meshes)]
    return walls, meshes


def _new_motion(spec, t0, what, default_center):
    """``(motion, R(ω t0), c, c_0)``: the motion ``spec`` starting at ``t0`` laid out in
    the kernels' time (module docstring): a :class:`WallMotion` about ``c``, the point
    of its axis at ``t = 0``, of ``c_0``, the point at ``t0``."""
    velocity = spec.get("velocity")
    rows = None
    if velocity is not None:
        v = np.asarray(velocity, dtype=np.float64)
        if v.ndim == 2:
            rows = v.copy()
            rows[:, 0] += t0
        else:
            rows = v
    c0 = np.asarray(default_center if spec.get("center") is None else spec["center"], dtype=np.float64)
    probe = WallMotion(rows, spec.get("angular_velocity"), np.zeros(3), what=what)
    c = c0 - probe.displacement(t0)
    motion = WallMotion(rows, spec.get("angular_velocity"), c, what=what)
    return motion, rotation_matrix(motion.omega, t0), c, c0


def _apply_motion(b, spec) -> None:
    """Give the boundary ``spec["name"]`` of builder ``b`` the motion ``spec`` from
    ``spec["t0"]``, its reference pose moved so that it is where it was then."""
    walls, meshes = boundary_names(b)
    name, t0 = spec["name"], float(spec["t0"])
    if name in walls:
        k = walls.index(name)
        nrm, off, kk, mat = b._walls[k]
        old = b._wall_motion[k]
        n_now, c_now = (nrm, off) if old is None else old.plane_at(nrm, off, t0)
        motion, R, c, c0 = _new_motion(spec, t0, f"wall {name!r}", np.zeros(3))
        n_ref = R.T @ n_now
        y = c + R.T @ (c_now * n_now - c0)
        b._walls[k] = (n_ref / np.linalg.norm(n_ref), float(n_ref @ y) / float(np.linalg.norm(n_ref)), kk, mat)
        b._wall_motion[k] = motion if motion.moves else None
        return
    k = meshes.index(name)
    m = dict(b._meshes[k])
    was = m["motion"]
    key = (id(m["mesh"]), repr(sorted(spec.items())), repr((was.rows.tolist(), was.omega.tolist(), was.center.tolist())))
    for mesh, k_, baked in _BAKED:  # the same mesh moved the same way: the same objects (their packing is kept)
        if k_ == key and mesh is m["mesh"]:
            m["mesh"], m["motion"] = baked
            b._meshes[k] = m
            return
    old = m["motion"]
    verts = _mesh_at(m["mesh"], old, t0)
    now = TriangleMesh(verts, m["mesh"].triangles, name=m["mesh"].name)
    motion, R, c, c0 = _new_motion(spec, t0, f"mesh {name!r}", now.center)
    new = TriangleMesh(c + (verts - c0) @ R, m["mesh"].triangles, name=m["mesh"].name)
    if not motion.moves:
        motion = WallMotion(None, None, new.center, what=f"mesh {name!r}")
    _BAKED.insert(0, (m["mesh"], key, (new, motion)))
    del _BAKED[16:]
    m["mesh"], m["motion"] = new, motion
    b._meshes[k] = m


#: Meshes laid out for their new motions (:func:`_apply_motion`), the last few: a run
#: builds its model again at each edit of its particles, and a mesh's packing is kept
#: for the same mesh object (:func:`granular.particles.forces.meshes.pack`).
_BAKED: list = []


def _mesh_at(mesh, motion, t):
    """A mesh's vertices at time ``t`` under ``motion`` (host float64)."""
    if motion is None or not motion.moves:
        return mesh.vertices
    R = rotation_matrix(motion.omega, t)
    return motion.center + motion.displacement(t) + (mesh.vertices - motion.center) @ R.T


def _turn(motion, t) -> np.ndarray:
    return np.eye(3) if motion is None or not motion.moves else rotation_matrix(motion.omega, t)


def configured(builder, setup: Setup):
    """A copy of ``builder`` with ``setup`` applied: gravity, the motions in their order,
    then the absent walls and meshes left out. The copy's own set-up is none."""
    b = builder._copy()
    b._setup = None
    b._walls, b._wall_motion, b._wall_overlap = list(b._walls), list(b._wall_motion), list(b._wall_overlap)
    b._wall_names = boundary_names(builder)[0]
    b._meshes = [dict(m, name=n) for m, n in zip(b._meshes, boundary_names(builder)[1])]
    if setup.gravity is not None:
        b._gravity = np.asarray(setup.gravity, dtype=np.float64)
    for spec in setup.motions:
        _apply_motion(b, spec)
    absent = set(setup.absent)
    keep = [k for k, n in enumerate(b._wall_names) if n not in absent]
    for name in ("_walls", "_wall_motion", "_wall_overlap", "_wall_names"):
        setattr(b, name, [getattr(b, name)[k] for k in keep])
    b._meshes = [m for m in b._meshes if m["name"] not in absent]
    return b


def present(builder, setup):
    """The names of the walls and the meshes present under ``setup``, in the model's order."""
    walls, meshes = boundary_names(builder)
    gone = set(setup.absent)
    return [n for n in walls if n not in gone], [n for n in meshes if n not in gone]


def check_change(builder, setup: Setup, add=(), remove=(), motions=None, gravity=None) -> Setup:
    """The set-up after a change (:func:`change_setup`'s arguments), checked:
    ``ValueError`` naming the boundary or the quantity."""
    walls, meshes = boundary_names(builder)
    known = walls + meshes
    if builder._replica_counts is not None:
        raise ValueError("a model of replicas keeps its walls: its set-up cannot change during a run")
    if builder._setup is None:
        raise ValueError("this model was not told that its set-up would change: call ModelBuilder.expect_changes() "
                         "before finalize (a scene whose stages change the set-up does), so that its series and "
                         "frames have the walls' and meshes' columns and collections from the start")  # fmt: skip
    new = setup.copy()
    for what, names in (("add", add), ("remove", remove)):
        if isinstance(names, str):
            raise ValueError(f"{what}: give a list of names, got the string {names!r}")
        for n in names:
            if n not in known:
                raise ValueError(f"{what}: no wall or mesh named {n!r}; named: {known}")
    both = set(add) & set(remove)
    if both:
        raise ValueError(f"add and remove both name {sorted(both)}")
    new.absent = [n for n in known if (n in new.absent or n in remove) and n not in add]
    for name, spec in (motions or {}).items():
        if name not in known:
            raise ValueError(f"motions: no wall or mesh named {name!r}; named: {known}")
        unknown = set(spec) - {"velocity", "angular_velocity", "center"}
        if unknown:
            raise ValueError(f"motions[{name!r}]: unknown keys {sorted(unknown)}; allowed: velocity, angular_velocity, "
                             "center")  # fmt: skip
        entry = {"name": name}
        for key in ("velocity", "angular_velocity", "center"):
            if spec.get(key) is not None:
                entry[key] = np.asarray(spec[key], dtype=np.float64).tolist()
        WallMotion(entry.get("velocity"), entry.get("angular_velocity"), entry.get("center"),
                   what=f"motions[{name!r}]")  # fmt: skip
        new.motions.append(entry)
    if gravity is not None:
        g = np.asarray(gravity, dtype=np.float64)
        if g.shape != (3,) or not np.isfinite(g).all():
            raise ValueError(f"gravity: must be 3 finite numbers, got {gravity!r}")
        if builder._gravity is None:
            raise ValueError("gravity: the model has no gravity field, so its series has no U_gravity column; call "
                             "ModelBuilder.expect_changes() (or set_gravity([0, 0, 0])) before finalize")  # fmt: skip
        new.gravity = g.tolist()
    return new


def change_setup(model, state, add=(), remove=(), motions=None, gravity=None) -> None:
    """Change the set-up of a running ``model`` at ``state.time`` (module docstring),
    in place: put back the walls and meshes named in ``add``, take away those in
    ``remove``, give those named in ``motions`` (a dict ``name -> {velocity,
    angular_velocity, center}``) their new motion from now on, and set ``gravity``.
    ``ValueError`` naming the boundary or quantity, with nothing changed: an unknown
    name, a malformed motion, a boundary put back where a particle overlaps it."""
    builder = model.builder
    if builder is None:
        raise ValueError("the model was not made by ModelBuilder.finalize: its set-up cannot change")
    old_setup = builder._setup or Setup()
    setup = check_change(builder, old_setup, add, remove, motions, gravity)
    t0 = float(state.time)
    for spec in setup.motions[len(old_setup.motions):]:
        spec["t0"] = t0
    nb = builder._copy()
    nb._setup = setup
    cfg = configured(builder, setup)
    _check_put_back(cfg, model, state, set(old_setup.absent) - set(setup.absent))
    arrays = state_arrays(model, state)
    new = nb.finalize(model.backend, model.dtype, placement=False)
    _carry(model, new)
    fresh = new.state()
    out = dict(arrays)
    out["wall_springs"] = _carried_history(builder, old_setup, setup, arrays["wall_springs"], fresh, t0)
    for name in ("wall_contact_peak", "wall_work"):
        target = getattr(fresh, name)
        if out[name].shape != target.shape:
            out[name] = np.zeros(target.shape, dtype=target.dtype)
    out["counters"] = np.array(arrays["counters"])
    out["counters"][1] = 0  # the forces of the new set-up: evaluated again
    restore_state(new, fresh, out)
    model.__dict__.clear()
    model.__dict__.update(new.__dict__)
    state.__dict__.update(fresh.__dict__)
    state._engine = None


#: What a running model holds beyond what ``finalize`` makes: each particle's number, the
#: next number, the first number of the particles that entered (granular.particles.feeds).
_CARRIED = ("ids", "next_id", "first_entered")


def _carry(model, new) -> None:
    for name in _CARRIED:
        if hasattr(model, name):
            setattr(new, name, getattr(model, name))


def _check_put_back(cfg, model, state, back) -> None:
    """Refuse to put back a boundary a particle overlaps now (unless it allows it)."""
    if not back:
        return
    be = model.backend
    x = np.asarray(be.to_host(state.x), dtype=np.float64)
    r = np.asarray(be.to_host(model.radius), dtype=np.float64)
    t = float(state.time)
    for k, name in enumerate(cfg._wall_names):
        if name in back and not cfg._wall_overlap[k]:
            nrm, off, _, _ = cfg._walls[k]
            motion = cfg._wall_motion[k]
            n, c = (nrm, off) if motion is None else motion.plane_at(nrm, off, t)
            problem = wall_problem(n, c, x, r, "allow_initial_overlap=True for it")
            if problem is not None:
                raise ValueError(f"add: wall {name!r}: {problem[1]}")
    for m in cfg._meshes:
        if m["name"] in back and not m["overlap"]:
            now = TriangleMesh(_mesh_at(m["mesh"], m["motion"], t), m["mesh"].triangles, name=m["mesh"].name)
            problem = mesh_problem(now, x, r)
            if problem is not None:
                raise ValueError(f"add: mesh {m['name']!r}: {problem}")


def _carried_history(builder, old_setup, setup, hist, fresh, t0):
    """The wall history of the new set-up: the planar walls' columns by name, the mesh
    slots by mesh (keys renumbered, their normals turned where a mesh's reference pose
    turned), zeros for what is new."""
    target = fresh.wall_springs
    out = np.zeros(target.shape, dtype=target.dtype)
    if hist.size == 0 or out.size == 0:
        return out
    old_walls, old_meshes = present(builder, old_setup)
    new_walls, new_meshes = present(builder, setup)
    for j, name in enumerate(old_walls):
        if name in new_walls:
            out[:, new_walls.index(name)] = hist[:, j]
    if not (old_meshes and new_meshes):
        return out
    ob, nb = hist.shape[1] - HISTORY_SLOTS, out.shape[1] - HISTORY_SLOTS
    before, after = configured(builder, old_setup), configured(builder, setup)
    turn = {}
    for name in new_meshes:
        if name in old_meshes:
            m0 = before._meshes[old_meshes.index(name)]["motion"]
            m1 = after._meshes[new_meshes.index(name)]["motion"]
            turn[name] = _turn(m1, t0).T @ _turn(m0, t0)
    keys_o, keys_n = ob + SLOTS + 1, nb + SLOTS + 1
    mesh_id = np.rint(hist[:, keys_o:keys_o + SLOTS, 0]).astype(np.int64) - 1
    for s in range(SLOTS):
        for i in np.flatnonzero(hist[:, ob + s, -1] != 0.0):
            name = old_meshes[mesh_id[i, s]] if 0 <= mesh_id[i, s] < len(old_meshes) else None
            if name not in turn:
                continue
            out[i, nb + s] = hist[i, ob + s]
            out[i, keys_n + s] = hist[i, keys_o + s]
            out[i, keys_n + s, 0] = new_meshes.index(name) + 1
            out[i, keys_n + s, 1:4] = turn[name] @ hist[i, keys_o + s, 1:4]
    return out


def saved_setup(model) -> dict | None:
    """What a checkpoint keeps of ``model``'s set-up (JSON-able), or None when it is the
    builder's."""
    b = getattr(model, "builder", None)
    setup = None if b is None else b._setup
    return None if setup is None else setup.to_json()


def restore_setup(model, saved) -> None:
    """Give ``model`` (as its scene or script builds it) the set-up a checkpoint kept
    (:func:`saved_setup`), in place; nothing for None. A state of the model made before
    is not one of the changed model: take a new one (``model.state()``)."""
    if not saved:
        return
    if model.builder is None:
        raise ValueError("checkpoint: the run changed its set-up, and this model was not made by "
                         "ModelBuilder.finalize: give the model the scene or script built")  # fmt: skip
    nb = model.builder._copy()
    nb._setup = Setup.from_json(saved)
    known = sum(boundary_names(nb), [])
    missing = [n for n in nb._setup.absent + [m["name"] for m in nb._setup.motions] if n not in known]
    if missing:
        raise ValueError(f"checkpoint: its set-up names walls or meshes this model does not have: {missing}; "
                         f"named: {known}")  # fmt: skip
    new = nb.finalize(model.backend, model.dtype, placement=False)
    _carry(model, new)
    model.__dict__.clear()
    model.__dict__.update(new.__dict__)
