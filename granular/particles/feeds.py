"""Particles that enter and leave a run: insertion regions, outlets, and the edit that
carries a running state over to a model of another particle set.

A :class:`Insertion` pours particles into a region (:class:`Box`, :class:`Cylinder`) at a
rate (particles or mass per unit time) or all at once, up to a total; an :class:`Outlet`
takes out the particles whose centres are in a region (or outside it: the domain). A
run applies them between its blocks of steps, every ``every`` steps
(:class:`granular.run.simulation.Simulation`'s ``feeds``), so the inserted count follows
its rate to within what one such interval brings.

How a particle set changes (:func:`resize`): the model is built again from the builder it
was made from (``Model.builder``), without the particles that leave and with those that
enter appended, and the state is carried over by its checkpoint arrays
(:func:`~granular.particles.system.state_arrays`): every particle that stays keeps its
position, velocity, orientation, spin, springs (its pair and wall contacts' history),
dissipated energy and image counters bit for bit, and keeps its order. The model and the
state are edited in place, so references to them stay good. Particles that enter come
after those present; a particle's number (``Model.ids``, the frames' ``id``) never
changes.

Placement: an inserted particle starts clear of everything present, particles, walls and
meshes where they are now, and the other particles of the same insertion, with a gap of
``gap`` (default 0: touching at most). Candidate centres are drawn uniformly in the
region, shrunk by the radius; a particle that finds no room in ``attempts`` draws waits
for the next event (its radius is kept, so the sequence of particles does not depend on
when they find room). Every draw comes from the insertion's own random generator
(``seed``), whose state a checkpoint keeps: the same seed gives the same particles,
bit for bit, resumed or not.

The ledger (:class:`Ledger`): what the particles brought and took away, as ``series.csv``
columns, so that the balances still close. At each edit the conserved sum of the energy
check (``total + U_released + dissipated - work_walls``) and the momentum are taken
before and after, and the differences are booked: ``E_inserted``, ``E_removed``,
``P_inserted_*``, ``P_removed_*``, with the counts ``inserted``, ``removed`` and the masses
``mass_inserted``, ``mass_removed``. ``total + U_released + dissipated - work_walls -
E_inserted + E_removed`` is what the scheme conserves in an open system (a particle
taken out while it touches others takes its share of their springs' energy with it).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from kernels.layout import FAMILY_GRAVITY

from .forces.laws import reach
from .forces.materials import sphere_mass
from .forces.meshes import closest_points
from .neighbors import box_coordinates, min_image
from .placement import near_pairs
from .statefile import restore_state, state_arrays

__all__ = ["Box", "Cylinder", "Insertion", "Ledger", "Obstacles", "Outlet", "match", "particle_set", "resize", "restore_feeds"]


def _vector(name, value) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.isfinite(v).all():
        raise ValueError(f"{name}: expected 3 finite numbers, got {value!r}")
    return v


def _positive(name, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number > 0, got {value!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name}: must be a finite number > 0, got {value!r}")
    return v


class Box:
    """The axis-aligned box ``lo <= x <= hi`` [L]."""

    def __init__(self, lo, hi):
        self.lo, self.hi = _vector("lo", lo), _vector("hi", hi)
        if not (self.hi > self.lo).all():
            raise ValueError(f"box: hi must exceed lo along every axis, got lo {self.lo.tolist()}, hi {self.hi.tolist()}")

    def contains(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        return ((x >= self.lo) & (x <= self.hi)).all(axis=1)

    def fits(self, radius) -> bool:
        """Whether a sphere of ``radius`` fits inside."""
        return bool((self.hi - self.lo > 2.0 * radius).all())

    def sample(self, rng, radius) -> np.ndarray:
        """A centre drawn uniformly among those of a sphere of ``radius`` inside (three draws)."""
        u = rng.random(3)
        return self.lo + radius + u * (self.hi - self.lo - 2.0 * radius)

    def __repr__(self):
        return f"Box(lo={self.lo.tolist()}, hi={self.hi.tolist()})"


class Cylinder:
    """The cylinder of radius ``radius`` and length ``length`` [L] about the axis through
    ``center`` along ``axis``."""

    def __init__(self, center, axis, radius, length):
        self.center = _vector("center", center)
        a = _vector("axis", axis)
        if np.linalg.norm(a) == 0:
            raise ValueError("axis: must not be zero")
        self.axis = a / np.linalg.norm(a)
        self.radius, self.length = _positive("radius", radius), _positive("length", length)
        # two unit vectors across the axis
        helper = np.eye(3)[int(np.argmin(np.abs(self.axis)))]
        self._u = np.cross(self.axis, helper)
        self._u /= np.linalg.norm(self._u)
        self._w = np.cross(self.axis, self._u)

    def contains(self, x) -> np.ndarray:
        d = np.asarray(x, dtype=np.float64).reshape(-1, 3) - self.center
        along = d @ self.axis
        across = d - along[:, None] * self.axis
        return (np.abs(along) <= 0.5 * self.length) & ((across * across).sum(axis=1) <= self.radius**2)

    def fits(self, radius) -> bool:
        return self.radius > radius and self.length > 2.0 * radius

    def sample(self, rng, radius) -> np.ndarray:
        u = rng.random(3)
        rho = (self.radius - radius) * math.sqrt(u[0])  # uniform over the disc
        phi = 2.0 * math.pi * u[1]
        along = (u[2] - 0.5) * (self.length - 2.0 * radius)
        return self.center + along * self.axis + rho * (math.cos(phi) * self._u + math.sin(phi) * self._w)

    def __repr__(self):
        return (f"Cylinder(center={self.center.tolist()}, axis={self.axis.tolist()}, radius={self.radius:g}, "
                f"length={self.length:g})")  # fmt: skip


def _region(value):
    if not isinstance(value, (Box, Cylinder)):
        raise ValueError(f"region: a Box or a Cylinder, got {type(value).__name__}")
    return value


class Insertion:
    """Particles poured into ``region`` during a run.

    Parameters
    ----------
    region : Box or Cylinder
        Where the centres are drawn (each particle wholly inside).
    radius : float or (float, float)
        The radius [L], or the bounds of a uniform distribution of radii.
    material : str, optional
        A material of the model's builder (mass ``ρ 4/3 π r³``, inertia ``2/5 m r²``);
        else ``density`` gives them.
    density : float, optional
        [M/L³] without a material.
    rate, mass_rate : float, optional
        Particles per unit time [1/T], or mass per unit time [M/T], from ``start`` to
        ``stop``. Neither: all of ``total`` as soon as there is room.
    total : int, optional
        The most particles it inserts (required without a rate).
    start, stop : float
        The times [T] between which it pours (default from 0, without end).
    velocity : (3,) float
        The velocity the particles start with [L/T] (default at rest).
    orientation : {"random", "identity"}
        Uniformly random orientations (default) or all the identity.
    seed : int
        Of its random generator (radii, positions, orientations).
    attempts : int
        Candidate centres a particle draws at one event before it waits for the next.
    gap : float
        The least distance [L] between an inserted particle's surface and anything else.
    """

    def __init__(self, region, radius, material=None, *, density=None, rate=None, mass_rate=None, total=None,
                 start=0.0, stop=math.inf, velocity=(0.0, 0.0, 0.0), orientation="random", seed=0, attempts=50,
                 gap=0.0):  # fmt: skip
        self.region = _region(region)
        r = np.atleast_1d(np.asarray(radius, dtype=np.float64))
        if r.shape not in ((1,), (2,)) or not np.isfinite(r).all() or (r <= 0).any() or r[-1] < r[0]:
            raise ValueError(f"radius: a radius > 0 or bounds (lo, hi) with 0 < lo <= hi, got {radius!r}")
        self.radius = (float(r[0]), float(r[-1]))
        if not self.region.fits(self.radius[1]):
            raise ValueError(f"region: {self.region!r} is too small for a particle of radius {self.radius[1]:g}")
        if (material is None) == (density is None):
            raise ValueError("material or density: give one (the particles' mass and inertia come from it)")
        if material is not None and not isinstance(material, str):
            raise ValueError(f"material: a material's name, got {material!r}")
        self.material = material
        self.density = None if density is None else _positive("density", density)
        if rate is not None and mass_rate is not None:
            raise ValueError("rate and mass_rate: give one of them")
        self.rate = None if rate is None else _positive("rate", rate)
        self.mass_rate = None if mass_rate is None else _positive("mass_rate", mass_rate)
        if total is not None and (isinstance(total, bool) or int(total) != total or total < 1):
            raise ValueError(f"total: a whole number >= 1, got {total!r}")
        self.total = None if total is None else int(total)
        if self.rate is None and self.mass_rate is None and self.total is None:
            raise ValueError("total: required without a rate or mass_rate (how many particles to insert)")
        self.start, self.stop = float(start), float(stop)
        if not (math.isfinite(self.start) and self.stop > self.start):
            raise ValueError(f"start, stop: need a finite start before stop, got {start!r}, {stop!r}")
        self.velocity = _vector("velocity", velocity)
        if orientation not in ("random", "identity"):
            raise ValueError(f"orientation: 'random' or 'identity', got {orientation!r}")
        self.orientation = orientation
        if isinstance(attempts, bool) or int(attempts) != attempts or attempts < 1:
            raise ValueError(f"attempts: a whole number >= 1, got {attempts!r}")
        self.attempts = int(attempts)
        self.gap = float(gap)
        if not (math.isfinite(self.gap) and self.gap >= 0):
            raise ValueError(f"gap: a distance >= 0, got {gap!r}")
        self.seed = int(seed)
        self.active = True  # whether it pours (a stage may stop it: granular.run.stages)
        self.rng = np.random.default_rng(self.seed)
        self.count = 0  # particles inserted so far
        self.mass = 0.0  # their mass
        self.pending = None  # the radius of the next particle, drawn, not yet placed

    # ------------------------------------------------------------------ state
    def get_state(self) -> dict:
        """What a checkpoint keeps (JSON-able)."""
        return {"kind": "Insertion", "rng": self.rng.bit_generator.state, "count": self.count, "mass": self.mass,
                "pending": self.pending}  # fmt: skip

    def set_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.count, self.mass, self.pending = int(state["count"]), float(state["mass"]), state["pending"]

    # ------------------------------------------------------------------ the particles
    def _masses(self, builder, radius):
        if self.material is not None:
            if self.material not in builder._materials:
                raise ValueError(f"material: no material named {self.material!r} in the model; defined: "
                                 f"{sorted(builder._materials)}")  # fmt: skip
            return sphere_mass(builder._materials[self.material][1], radius)
        m = self.density * 4.0 / 3.0 * math.pi * radius**3
        return m, 0.4 * m * radius * radius

    def _next_radius(self) -> float:
        if self.pending is None:
            lo, hi = self.radius
            self.pending = lo if lo == hi else float(lo + (hi - lo) * self.rng.random())
        return self.pending

    def wanted(self, time) -> int | None:
        """How many particles are due at ``time`` (None: as many as the mass rate allows,
        decided particle by particle)."""
        if time < self.start:
            return 0
        left = math.inf if self.total is None else self.total - self.count
        if self.rate is not None:
            t = min(time, self.stop) - self.start
            return int(max(0, min(left, math.floor(self.rate * t * (1 + 1e-12)) - self.count)))
        if self.mass_rate is not None:
            return None
        return int(left)

    def due(self, time) -> bool:
        """Whether a particle may be due at ``time`` (a cheap test before the obstacles
        are gathered)."""
        if time < self.start or (self.total is not None and self.count >= self.total):
            return False
        if self.mass_rate is not None:
            return True  # decided by the next particle's mass
        return self.wanted(time) > 0

    def draw(self, time, obstacles) -> dict | None:
        """The particles due at ``time`` that find room among ``obstacles`` (an
        :class:`Obstacles`): a dict of host arrays ``x``, ``v``, ``q``, ``omega``,
        ``radius``, ``mass``, ``inertia`` and ``material`` (or None for none)."""
        builder = obstacles.builder
        wanted = self.wanted(time)
        target_mass = None
        if wanted is None:
            t = min(time, self.stop) - self.start
            target_mass = self.mass_rate * t if t >= 0 else 0.0
            wanted = math.inf if self.total is None else self.total - self.count
        out = {"x": [], "radius": [], "mass": [], "inertia": []}
        while len(out["x"]) < wanted:
            r = self._next_radius()
            m, inertia = self._masses(builder, r)
            if target_mass is not None and self.mass + float(m) > target_mass * (1 + 1e-12):
                break
            placed = None
            for _ in range(self.attempts):
                c = self.region.sample(self.rng, r)
                if obstacles.clear(c, r + self.gap):
                    placed = c
                    break
            if placed is None:
                break  # no room now: this particle waits for the next event
            obstacles.add(placed, r)
            out["x"].append(placed)
            out["radius"].append(r)
            out["mass"].append(float(m))
            out["inertia"].append(float(inertia))
            self.pending = None
            self.count += 1
            self.mass += float(m)
        k = len(out["x"])
        if k == 0:
            return None
        q = np.zeros((k, 4))
        if self.orientation == "random":  # Shoemake's uniform quaternions
            u = self.rng.random((k, 3))
            a, b = np.sqrt(1 - u[:, 0]), np.sqrt(u[:, 0])
            q = np.stack([a * np.cos(2 * np.pi * u[:, 1]), a * np.sin(2 * np.pi * u[:, 1]),
                          b * np.sin(2 * np.pi * u[:, 2]), b * np.cos(2 * np.pi * u[:, 2])], axis=1)  # fmt: skip
        else:
            q[:, 0] = 1.0
        return {"x": np.array(out["x"]), "v": np.tile(self.velocity, (k, 1)), "q": q, "omega": np.zeros((k, 3)),
                "radius": np.array(out["radius"]), "mass": np.array(out["mass"]),
                "inertia": np.array(out["inertia"]), "material": self.material}  # fmt: skip

    def __repr__(self):
        how = (f"rate={self.rate:g}" if self.rate else f"mass_rate={self.mass_rate:g}" if self.mass_rate
               else f"total={self.total}")  # fmt: skip
        return f"Insertion({self.region!r}, radius={self.radius}, {how})"


class Outlet:
    """Takes out the particles whose centres are inside ``region`` (``inside=True``), or
    outside it (``inside=False``: the particles that left the domain)."""

    def __init__(self, region, inside=True):
        self.region = _region(region)
        self.inside = bool(inside)
        self.active = True  # whether it takes particles out (a stage may close it)

    def leaving(self, x) -> np.ndarray:
        """A mask of the particles at ``x`` (host, (N, 3)) that leave."""
        inside = self.region.contains(x)
        return inside if self.inside else ~inside

    def get_state(self) -> dict:
        return {"kind": "Outlet"}

    def set_state(self, state) -> None:
        pass

    def __repr__(self):
        return f"Outlet({self.region!r}, inside={self.inside})"


class Obstacles:
    """What an inserted particle must keep clear of: the particles where they are now
    (a k-d tree, toroidal along periodic axes), the walls' planes and the meshes where
    they are now, and the particles placed at this event."""

    def __init__(self, model, state, reach_new=0.0):
        from scipy.spatial import cKDTree

        be = model.backend
        self.builder = model.builder
        self.period = model.period if model.period.shape[0] else None
        x = np.asarray(be.to_host(state.x), dtype=np.float64)
        r = np.asarray(be.to_host(model.radius), dtype=np.float64)
        self.rmax = float(r.max()) if len(r) else 0.0
        self.x, self.r = x, r
        boxsize = None if self.period is None else self.period[:, 1]
        self.tree = cKDTree(box_coordinates(x, self.period), boxsize=boxsize) if len(x) else None
        walls = model.force("walls")
        self.planes = np.zeros((0, 4)) if walls is None else walls.planes_now()
        self.meshes = []
        if walls is not None:
            for m, spec in enumerate(walls.meshes):
                self.meshes.append((spec["mesh"], walls.mesh_vertices_now(m)))
        self.placed_x, self.placed_r = [], []
        # a law that pulls before the surfaces touch (JKR): keep out of its reach too
        self.reach = float(reach(model.law, max(self.rmax, 1e-300))) if model.law is not None else 0.0
        # the particles placed at this event, binned in cubes wider than any two of them
        # with their clearance (``reach_new``: the largest radius plus gap to come)
        self._edge = max(2.0 * (max(self.rmax, float(reach_new)) + self.reach), 1e-300)
        self._counts = None
        if self.period is not None:
            size = self.period[:, 1]
            self._counts = np.where(size > 0, np.maximum(1, np.floor(size / self._edge)), 0).astype(np.int64)
        self._grid = {}

    def _cell(self, c):
        """The cube of the point ``c``: integers along each axis (a periodic axis of
        length ``L`` is cut into ``floor(L / edge)`` equal cells, numbered modulo)."""
        if self.period is None:
            return tuple(int(k) for k in np.floor(c / self._edge))
        w = box_coordinates(c, self.period)
        out = []
        for a in range(3):
            n = int(self._counts[a])
            if n:
                out.append(int(w[a] / (self.period[a, 1] / n)) % n)
            else:
                out.append(int(math.floor(c[a] / self._edge)))
        return tuple(out)

    def _near_placed(self, c):
        """Indices of the placed particles in the cubes around ``c``'s."""
        k = self._cell(c)
        keys = set()
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    key = [k[0] + dx, k[1] + dy, k[2] + dz]
                    if self._counts is not None:
                        for a in range(3):
                            if self._counts[a]:
                                key[a] %= int(self._counts[a])
                    keys.add(tuple(key))
        for key in keys:
            yield from self._grid.get(key, ())

    def clear(self, c, r) -> bool:
        """Whether a sphere of radius ``r`` at ``c`` touches nothing (nor comes within
        the contact law's reach of anything)."""
        r = r + self.reach
        if self.tree is not None:
            for j in self.tree.query_ball_point(box_coordinates(c, self.period), r + self.rmax):
                d = min_image((c - self.x[j])[None], self.period)[0]
                if float(np.sqrt(d @ d)) < r + self.r[j]:
                    return False
        for j in self._near_placed(c):
            d = min_image((c - self.placed_x[j])[None], self.period)[0]
            if float(np.sqrt(d @ d)) < r + self.placed_r[j]:
                return False
        for n0, n1, n2, off in self.planes:
            n = np.array([n0, n1, n2])
            if float(c @ n / np.linalg.norm(n) - off / np.linalg.norm(n)) < r:
                return False
        if self.meshes:
            for mesh, vertices in self.meshes:
                t = mesh.triangles
                _, d = closest_points(np.repeat(c[None], len(t), axis=0), vertices[t[:, 0]], vertices[t[:, 1]],
                                      vertices[t[:, 2]])  # fmt: skip
                if float(d.min()) < r:
                    return False
        return True

    def add(self, c, r) -> None:
        c = np.asarray(c, dtype=np.float64)
        if 2.0 * (float(r) + self.reach) > self._edge * (1 + 1e-12):
            raise ValueError(f"a placed particle of radius {r:g} is wider than the bins of {self._edge:g}")
        self._grid.setdefault(self._cell(c), []).append(len(self.placed_x))
        self.placed_x.append(c)
        self.placed_r.append(float(r))


class Ledger:
    """What entered and left an open system (see the module docstring): counts, masses,
    energies and momenta, cumulative; ``columns()`` gives the ``series.csv`` columns."""

    FIELDS = ("inserted", "removed", "mass_inserted", "mass_removed", "E_inserted", "E_removed")

    def __init__(self):
        self.values = dict.fromkeys(self.FIELDS, 0.0)
        self.P_inserted = np.zeros(3)
        self.P_removed = np.zeros(3)

    def columns(self) -> dict:
        out = {k: float(v) for k, v in self.values.items()}
        for c, a in enumerate("xyz"):
            out[f"P_inserted_{a}"] = float(self.P_inserted[c])
        for c, a in enumerate("xyz"):
            out[f"P_removed_{a}"] = float(self.P_removed[c])
        return out

    def get_state(self) -> dict:
        return {**self.values, "P_inserted": self.P_inserted.tolist(), "P_removed": self.P_removed.tolist()}

    def set_state(self, state) -> None:
        self.values = {k: float(state[k]) for k in self.FIELDS}
        self.P_inserted = np.array(state["P_inserted"], dtype=np.float64)
        self.P_removed = np.array(state["P_removed"], dtype=np.float64)


#: State arrays with a row per particle (those that are not placeholders are carried row by row).
_PER_PARTICLE = ("x", "v", "q", "omega", "F", "RM", "wall_springs", "dissipated", "wall_contact_peak", "wall_work",
                 "image")  # fmt: skip


def _rebuilt(model, keep, add):
    """The model of the particles ``keep`` of ``model`` and those of ``add`` after them
    (its builder's copy, finalized on the same backend and dtype without the placement
    checks), with the particles' numbers carried."""
    nb, _ = model.builder._subset(keep)
    k = 0 if add is None else len(add["x"])
    if k:
        material = add.get("material")
        names = np.full(k, material, dtype=object) if material is None or isinstance(material, str) else \
            np.asarray(material, dtype=object)  # fmt: skip
        start = 0
        while start < k:  # one call per run of particles of the same material, in order
            stop = start + 1
            while stop < k and names[stop] == names[start]:
                stop += 1
            sl = slice(start, stop)
            nb.add_particles(add["x"][sl], v=add["v"][sl], orientation=add["q"][sl], omega=add["omega"][sl],
                             mass=add["mass"][sl], inertia=add["inertia"][sl], radius=add["radius"][sl],
                             material=names[start])  # fmt: skip
            start = stop
    new = nb.finalize(model.backend, model.dtype, placement=False)
    next_id = model.next_id
    new.ids = np.concatenate([model.ids[keep], np.arange(next_id, next_id + k, dtype=np.int64)])
    new.next_id = next_id + k
    return new


def restore_feeds(feeds, ledger, saved) -> None:
    """Put a checkpoint's ``meta["feeds"]`` (``saved``: the ledger and each feed's state)
    back into ``ledger`` and ``feeds`` (a run resumed with the same feeds, in the same
    order); nothing without one."""
    if ledger is None or not saved:
        return
    if len(saved["each"]) != len(feeds):
        raise ValueError(f"feeds: the checkpoint has {len(saved['each'])} insertions and outlets, this run "
                         f"{len(feeds)}; resume with the feeds it was run with, in the same order")  # fmt: skip
    ledger.set_state(saved["ledger"])
    for f, st in zip(feeds, saved["each"]):
        if type(f).__name__ != st.get("kind", type(f).__name__):
            raise ValueError(f"feeds: the checkpoint's feed is a {st['kind']}, this run's a {type(f).__name__}")
        f.set_state(st)


def particle_set(model) -> dict:
    """The arrays that say which particles a model holds (a checkpoint's, for
    :func:`match`): ``particle_ids`` and each particle's ``particle_radius``,
    ``particle_mass``, ``particle_inertia`` and ``particle_material`` (its material's
    index in the builder, -1 for none), and ``particle_next_id``."""
    be, b = model.backend, model.builder
    mat = np.concatenate(b._mat) if b is not None and b._mat else np.full(model.n, -1, np.int32)
    return {"particle_ids": np.asarray(model.ids, dtype=np.int64),
            "particle_radius": np.asarray(be.to_host(model.radius), dtype=np.float64),
            "particle_mass": np.asarray(be.to_host(model.mass), dtype=np.float64),
            "particle_inertia": np.asarray(be.to_host(model.inertia), dtype=np.float64),
            "particle_material": np.asarray(mat, dtype=np.int32),
            "particle_next_id": np.array([model.next_id], dtype=np.int64)}  # fmt: skip


def match(model, arrays) -> None:
    """Edit ``model`` (as its scene or script builds it, at the start of the run) in
    place to hold the particles of a checkpoint's ``arrays`` (:func:`particle_set`):
    those of the start that are still there, then those inserted since, in the
    checkpoint's order, with the masses, inertias, radii and materials they had (bit for
    bit). A checkpoint without them is left alone."""
    if "particle_ids" not in arrays:
        return
    ids = np.asarray(arrays["particle_ids"], dtype=np.int64)
    n0 = model.n
    first = ids < n0
    if first.any() and (np.diff(ids[first]) <= 0).any() or (first[1:] & ~first[:-1]).any():
        raise ValueError("checkpoint: its particle numbers are not those of a run of this scene")
    keep = np.zeros(n0, dtype=bool)
    keep[ids[first]] = True
    inserted = ~first
    names = {index: name for name, (index, _) in model.builder._materials.items()}
    k = int(inserted.sum())
    add = None
    if k:
        x = np.asarray(arrays["x"], dtype=np.float64)[inserted]
        add = {"x": x, "v": np.zeros((k, 3)), "q": np.tile([1.0, 0.0, 0.0, 0.0], (k, 1)), "omega": np.zeros((k, 3)),
               "radius": np.asarray(arrays["particle_radius"])[inserted],
               "mass": np.asarray(arrays["particle_mass"])[inserted],
               "inertia": np.asarray(arrays["particle_inertia"])[inserted],
               "material": [names.get(int(m)) for m in np.asarray(arrays["particle_material"])[inserted]]}  # fmt: skip
    new = _rebuilt(model, keep, add)
    new.ids = ids.copy()
    new.next_id = int(np.asarray(arrays["particle_next_id"])[0])
    model.__dict__.clear()
    model.__dict__.update(new.__dict__)


def _touching(model, x, keep) -> bool:
    """Whether a particle that leaves (``~keep``) touches one that stays, or comes within
    the contact law's reach of it, at the positions ``x`` (host)."""
    r = np.asarray(model.backend.to_host(model.radius), dtype=np.float64)
    extra = float(reach(model.law, float(r.max()))) if model.law is not None else 0.0
    pairs, d = near_pairs(x, 2.0 * float(r.max()) + extra, model.period if model.period.shape[0] else None)
    if not len(pairs):
        return False
    mixed = keep[pairs[:, 0]] != keep[pairs[:, 1]]
    gap = np.linalg.norm(d, axis=1) - r[pairs[:, 0]] - r[pairs[:, 1]]
    return bool((mixed & (gap < extra)).any())


def resize(model, state, keep=None, add=None) -> None:
    """Edit the particle set of a run in place: keep the particles of the mask ``keep``
    (default all), then append those of ``add`` (a dict of host arrays ``x``, ``v``,
    ``q``, ``omega``, ``radius``, ``mass``, ``inertia`` and a ``material`` name or None,
    as :meth:`Insertion.draw` gives), and carry the state over (module docstring).
    ``model`` and ``state`` are changed in place. The forces stay as they were for the
    particles that stay, so that taking out a particle that touches nothing changes
    nothing else, bit for bit; where a particle that leaves touched one that stays, they
    are evaluated again (at the step's velocities, not its predicted ones). Those that
    enter touch nothing: gravity is their force."""

    builder = model.builder
    if builder is None:
        raise ValueError("the model was not made by ModelBuilder.finalize: its particle set cannot be edited")
    n = model.n
    keep = np.ones(n, dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if keep.shape != (n,):
        raise ValueError(f"keep: expected a mask of shape ({n},), got {keep.shape}")
    if not keep.any() and not add:
        raise ValueError("the edit would leave no particles; a model needs at least one")
    kept_bonds = builder._subset(keep)[1]
    k = 0 if add is None else len(add["x"])
    arrays = state_arrays(model, state)
    new = _rebuilt(model, keep, add)
    out = dict(arrays)
    for name in _PER_PARTICLE:
        a = arrays[name]
        if a.shape[0] != n or n == 0:
            continue
        rows = a[keep]
        if k:
            fill = np.zeros((k,) + a.shape[1:], dtype=a.dtype)
            if name in ("x", "v", "q", "omega"):
                fill[...] = add[name]
            rows = np.concatenate([rows, fill])
        out[name] = rows
    for name in ("broken", "released"):
        out[name] = arrays[name][kept_bonds] if len(kept_bonds) else arrays[name][:0]
    if "contact_pairs" in arrays:
        index = np.cumsum(keep) - 1
        pairs = np.asarray(arrays["contact_pairs"], dtype=np.int64).reshape(-1, 2)
        ok = keep[pairs[:, 0]] & keep[pairs[:, 1]] if len(pairs) else np.zeros(0, dtype=bool)
        out["contact_pairs"] = index[pairs[ok]]
        springs = np.asarray(arrays["contact_springs"])
        out["contact_springs"] = springs.reshape(len(pairs), -1)[ok] if len(pairs) else springs
    if not keep.all() and bool(arrays["counters"][1]) and _touching(model, arrays["x"], keep):
        out["counters"] = np.array(arrays["counters"])
        out["counters"][1] = 0  # a particle that left pressed on one that stays: evaluate the forces again
    fresh = new.state()
    # placeholders the new state may size differently (a walls' history width, per-particle rows)
    for name in _PER_PARTICLE:
        target = getattr(fresh, name)
        if out[name].shape != target.shape:
            if target.size == 0 or out[name].size == 0:
                out[name] = np.zeros(target.shape, dtype=target.dtype)
    restore_state(new, fresh, out)
    if k and bool(arrays["counters"][1]) and new.force("gravity") is not None:
        # the forces stay valid (a new evaluation at the same configuration would see v
        # in place of the step's predicted velocities, and the step would not be the
        # same): an inserted particle touches nothing, so gravity is all it feels
        xp = new.backend.xp
        cfg = SimpleNamespace(x=fresh.x, q=fresh.q, F=xp.zeros_like(fresh.F), RM=xp.zeros_like(fresh.RM),
                              broken=fresh.broken)  # fmt: skip
        new.accumulate_family(FAMILY_GRAVITY, cfg)
        fresh.F[-k:] = cfg.F[-k:]
    model.__dict__.clear()
    model.__dict__.update(new.__dict__)
    state.__dict__.update(fresh.__dict__)
    state._engine = None
