"""Particles that enter and leave a run: insertion regions, outlets, and the edit that
carries a running state over to a model of another particle set.

A :class:`Insertion` pours particles into a region (:class:`Box`, :class:`Cylinder`, or
the layer over a triangle mesh's faces, :class:`Surface`) at a rate (particles or mass per unit time) or all at once, up to a total; an :class:`Outlet`
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

Bonded clusters (:class:`Cluster`: a torus, an agglomerate, a specimen; a template of
particles and the bonds among them): an insertion with ``cluster`` puts in whole copies.
A copy's rotation is drawn first and kept until it finds room (as a sphere's radius is);
its centre of mass is drawn in the region shrunk by the copy's reach, and every particle
of the copy must be clear of everything as above. It starts as a rigid body at the
insertion's velocity. Its bonds enter with it (``add["bonds"]``: builder bond calls in
the new particles' numbering), intact, with their rest state taken where the copy was
placed: they hold no energy and exert no force, so what a cluster brings to the ledger
is its kinetic and gravity energy. ``rate`` and ``total`` count copies, ``mass_rate``
mass, the ledger's ``inserted`` particles. A checkpoint keeps where each particle that
entered was placed and the bonds among them (:func:`particle_set`, :func:`match`).

The stable step (:func:`check_stable_step`): particles smaller, stiffer or lighter than
any present may need a smaller step. Before a run starts with an insertion, the
stable-step estimate is taken again with what it brings (:func:`insertion_step`: its
smallest sphere or one copy of its cluster, at its velocity, next to the particles
present); a ``dt`` above it is refused, naming the insertion, unless
``allow_unstable_step``.

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

from .. import rotations
from ..errors import StepSizeError
from .builder import ModelBuilder
from .forces.laws import reach
from .forces.materials import sphere_mass
from .forces.meshes import closest_points
from .neighbors import box_coordinates, min_image
from .placement import near_pairs
from .stability import estimate_stable_step
from .statefile import restore_state, state_arrays

__all__ = ["Box", "Cluster", "Cylinder", "Insertion", "Ledger", "Obstacles", "Outlet", "Surface", "match", "particle_set", "resize", "restore_feeds",
           "check_stable_step", "insertion_step"]


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


class Surface:
    """The layer of thickness ``depth`` [L] over the faces of a triangle mesh, on the side
    its normals point to (``(b - a) × (c - a)``, right-handed about ``a, b, c``): an
    insertion draws its centres over the faces, each face by its area, at a height between
    ``radius`` and ``depth - radius`` (the particle wholly in the layer); an outlet takes
    out the centres in the layer. The mesh is where it is at ``t = 0`` (a region does not
    follow a moving mesh)."""

    def __init__(self, mesh, depth):
        tri = np.asarray(mesh.vertices, dtype=np.float64)[np.asarray(mesh.triangles)]
        if len(tri) == 0:
            raise ValueError("surface: the mesh has no triangles")
        self.name = getattr(mesh, "name", "mesh")
        self.depth = _positive("depth", depth)
        self.a, self.ab, self.ac = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
        cross = np.cross(self.ab, self.ac)
        area = np.linalg.norm(cross, axis=1)
        if not (area > 0).all():
            raise ValueError(f"surface: mesh {self.name!r} has triangles of zero area (first: {int(np.argmin(area))})")
        self.normal = cross / area[:, None]
        self.cum = np.cumsum(area) / area.sum()

    def contains(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
        out = np.zeros(len(x), dtype=bool)
        # the Gram matrix of each face's edges, for the projection's barycentric coordinates
        d00, d01, d11 = (self.ab * self.ab).sum(1), (self.ab * self.ac).sum(1), (self.ac * self.ac).sum(1)
        det = d00 * d11 - d01 * d01
        step = max(1, (1 << 20) // len(self.a))  # points per chunk: (P, T, 3) temporaries of 24 MiB at most
        for lo in range(0, len(x), step):
            r = x[lo:lo + step, None, :] - self.a[None]  # (P, T, 3)
            h = (r * self.normal[None]).sum(-1)
            d20, d21 = (r * self.ab[None]).sum(-1), (r * self.ac[None]).sum(-1)
            v = (d11 * d20 - d01 * d21) / det
            w = (d00 * d21 - d01 * d20) / det
            on = (h >= 0) & (h <= self.depth) & (v >= 0) & (w >= 0) & (v + w <= 1)
            out[lo:lo + step] = on.any(axis=1)
        return out

    def fits(self, radius) -> bool:
        return self.depth >= 2.0 * radius

    def sample(self, rng, radius) -> np.ndarray:
        """A centre over a face drawn by area, uniformly on it, at a height in
        ``[radius, depth - radius]`` (four draws)."""
        u = rng.random(4)
        t = min(int(np.searchsorted(self.cum, u[0], side="right")), len(self.cum) - 1)
        v, w = u[1], u[2]
        if v + w > 1.0:
            v, w = 1.0 - v, 1.0 - w
        h = radius + u[3] * (self.depth - 2.0 * radius)
        return self.a[t] + v * self.ab[t] + w * self.ac[t] + h * self.normal[t]

    def __repr__(self):
        return f"Surface(mesh {self.name!r}, {len(self.a)} faces, depth={self.depth:g})"


#: The columns of a bond family as :class:`~granular.particles.builder.ModelBuilder`
#: keeps them after a bond's ends: ``ka, ks, km, strain_max, angle_max, form, kt`` and
#: the four of ``crit`` (a checkpoint's ``bond_family`` rows).
_FAMILY_WIDTH = 11


def _family_rows(call) -> np.ndarray:
    """(B, 11) float64: a builder bond call's family columns."""
    a = call[0]
    cols = [np.asarray(c, dtype=np.float64).reshape(len(a), -1) for c in call[2:]]
    return np.concatenate(cols, axis=1)


def _family_call(a, b, rows):
    """A builder bond call of the pairs ``a``, ``b`` with the family ``rows`` ((B, 11))."""
    rows = np.asarray(rows, dtype=np.float64).reshape(len(a), _FAMILY_WIDTH)
    return (np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), rows[:, 0].copy(), rows[:, 1].copy(),
            rows[:, 2].copy(), rows[:, 3].copy(), rows[:, 4].copy(), rows[:, 5].astype(np.int8), rows[:, 6].copy(),
            rows[:, 7:11].copy())  # fmt: skip


class Cluster:
    """A bonded cluster that an :class:`Insertion` puts in whole: a template of particles
    and the bonds among them (a torus, an agglomerate, a specimen read from a file).

    Each copy is the template turned about its centre of mass (by a random rotation, or
    none) and moved to a point of the insertion's region; its particles keep their
    positions relative to each other, so every bond starts at its rest length and rest
    angles and holds no energy (its rest state is taken where the copy is placed).

    Parameters
    ----------
    x : array_like, (K, 3) float
        The particles' centres [L], in any frame (the copies are placed by their centre
        of mass).
    radius : float or array_like, (K,) float
        Radii [L], > 0.
    material : str or sequence of str, optional
        A material of the run's builder, for all particles or one per particle: the
        contact law's material, and (without ``mass``) the density of solid spheres.
    density : float, optional
        [M/L³] of solid spheres, without a material.
    mass, inertia : float or array_like, (K,) float, optional
        Given explicitly in place of solid spheres' (``inertia`` default ``2/5 m r²``).
    orientation : array_like, (K, 4) float, optional
        The particles' orientations in the template (default the identity).
    bonds : array_like, (B, 2) int, optional
        Pairs of particles (0 .. K-1) to bond.
    family : dict, optional
        The bonds' keywords: those of :meth:`ModelBuilder.add_bonds
        <granular.particles.builder.ModelBuilder.add_bonds>` (``ka``, ``ks``, ``km``,
        ``strain_max``, ``angle_max``), or, with ``form="parallel"``, those of
        :meth:`~granular.particles.builder.ModelBuilder.add_parallel_bonds`.

    :meth:`from_builder` takes a cluster, bonds included, from a builder (a torus made by
    :func:`~granular.particles.shapes.add_torus`, a packing bonded where it touches).
    """

    def __init__(self, x, radius, material=None, *, density=None, mass=None, inertia=None, orientation=None,
                 bonds=None, family=None):  # fmt: skip
        xa = np.asarray(x, dtype=np.float64)
        if xa.ndim != 2 or xa.shape[1] != 3 or len(xa) < 1 or not np.isfinite(xa).all():
            raise ValueError(f"x: expected the (K, 3) finite centres of K >= 1 particles, got shape {xa.shape}")
        k = len(xa)
        names = [material] * k if material is None or isinstance(material, str) else list(material)
        if len(names) != k or not all(m is None or isinstance(m, str) for m in names):
            raise ValueError(f"material: a material's name, or one per particle ({k}), got {material!r}")
        if mass is None and (density is None) == all(m is None for m in names):
            raise ValueError("material or density: give one (the particles' mass and inertia come from it), "
                             "or give mass")  # fmt: skip
        if density is not None and any(m is not None for m in names):
            raise ValueError("material or density: give one, not both")
        t = ModelBuilder()
        try:
            t.add_particles(xa, radius=radius, orientation=orientation,
                            mass=1.0 if mass is None else mass, inertia=1.0 if inertia is None else inertia)  # fmt: skip
        except ValueError as exc:
            raise ValueError(f"cluster: {exc}") from None
        self.density = None if density is None else _positive("density", density)
        self._init(xa, t._radius[0], t._q[0], names, None if mass is None else t._mass[0],
                   None if inertia is None else t._inertia[0], [])  # fmt: skip
        if bonds is not None:
            fam = dict(family or {})
            form = fam.pop("form", "paper")
            try:
                if form == "parallel":
                    t.add_parallel_bonds(np.asarray(bonds), **fam)
                elif form == "paper":
                    t.add_bonds(np.asarray(bonds), **fam)
                else:
                    raise ValueError(f"family: form 'paper' or 'parallel', got {form!r}")
            except TypeError as exc:
                raise ValueError(f"family: {exc}") from None
            self.bonds = list(t._bonds)
        elif family is not None:
            raise ValueError("family: given without bonds (the pairs it bonds)")

    def _init(self, x, radius, q, names, mass, inertia, bonds):
        self.x = np.asarray(x, dtype=np.float64)
        self.radius = np.asarray(radius, dtype=np.float64)
        self.q = np.asarray(q, dtype=np.float64)
        self.material = list(names)
        self.mass, self.inertia = mass, inertia
        self.bonds = bonds  # builder bond calls (a, b, *family columns), a < b local
        # the extent about the centre of the spheres' volume (the centre of mass of one density)
        w = self.radius**3 if mass is None else np.asarray(mass, dtype=np.float64)
        c = (w[:, None] * self.x).sum(axis=0) / w.sum()
        self.extent = float((np.linalg.norm(self.x - c, axis=1) + self.radius).max())

    @classmethod
    def from_builder(cls, builder, particles=None) -> Cluster:
        """The cluster of ``builder``'s particles ``particles`` (indices; default all) and
        the bonds among them, with the masses, inertias, orientations and materials
        (by name) they have there. A bond from one of them to a particle left out, and a
        pendulum, are refused."""
        n = builder.particle_count
        if n == 0:
            raise ValueError("cluster: the builder has no particles")
        mask = np.ones(n, dtype=bool)
        if particles is not None:
            idx = np.asarray(particles)
            if idx.dtype.kind not in "iu" or idx.ndim != 1 or not len(idx) or ((idx < 0) | (idx >= n)).any():
                raise ValueError(f"particles: indices of the builder's particles (0..{n - 1}), got {particles!r}")
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
        for call in builder._bonds:
            a, b = call[0], call[1]
            split = mask[a] != mask[b]
            if split.any():
                k = int(np.argmax(split))
                raise ValueError(f"cluster: a bond joins particle {int(a[k])} to particle {int(b[k])}, one of them "
                                 "not in the cluster")  # fmt: skip
        sub, _ = builder._subset(mask)
        if sub._pendula:
            raise ValueError("cluster: a particle of it hangs on a pendulum")
        cat = np.concatenate
        names = {index: name for name, (index, _) in builder._materials.items()}
        mats = [names.get(int(m)) for m in cat(sub._mat)]
        out = cls.__new__(cls)
        out.density = None
        out._init(cat(sub._x), cat(sub._radius), cat(sub._q), mats, cat(sub._mass), cat(sub._inertia),
                  list(sub._bonds))  # fmt: skip
        return out

    @property
    def n(self) -> int:
        """Particles of one copy."""
        return len(self.x)

    @property
    def n_bonds(self) -> int:
        return int(sum(len(c[0]) for c in self.bonds))

    @property
    def can_break(self) -> bool:
        """Whether a bond of it can break (as :class:`~granular.particles.forces.Bonds` decides)."""
        if not self.bonds:
            return False
        rows = np.concatenate([_family_rows(c) for c in self.bonds])
        return bool(np.isfinite(rows[:, 3]).any() or np.isfinite(rows[:, 4]).any()
                    or (rows[rows[:, 5] != 0, 7:11] > 0).any())  # fmt: skip

    def resolve(self, builder) -> SimpleNamespace:
        """The template in the run's terms: masses and inertias (from the materials of
        ``builder`` where not given), the centres relative to the centre of mass ``x``,
        the extent about it, and the bond calls."""
        m = np.empty(self.n)
        inertia = np.empty(self.n)
        for i, name in enumerate(self.material):
            if self.mass is not None:
                continue
            if name is not None:
                if name not in builder._materials:
                    raise ValueError(f"material: no material named {name!r} in the model; defined: "
                                     f"{sorted(builder._materials)}")  # fmt: skip
                mi, ji = sphere_mass(builder._materials[name][1], self.radius[i])
                m[i], inertia[i] = float(mi), float(ji)
            else:
                m[i] = self.density * 4.0 / 3.0 * math.pi * self.radius[i] ** 3
                inertia[i] = 0.4 * m[i] * self.radius[i] ** 2
        if self.mass is not None:
            m = np.asarray(self.mass, dtype=np.float64).copy()
            inertia = 0.4 * m * self.radius**2 if self.inertia is None else np.asarray(self.inertia, np.float64).copy()
        for name in self.material:
            if name is not None and name not in builder._materials:
                raise ValueError(f"material: no material named {name!r} in the model; defined: "
                                 f"{sorted(builder._materials)}")  # fmt: skip
        com = (m[:, None] * self.x).sum(axis=0) / m.sum()
        x = self.x - com
        extent = float((np.linalg.norm(x, axis=1) + self.radius).max())
        return SimpleNamespace(x=x, radius=self.radius, mass=m, inertia=inertia, q=self.q, material=self.material,
                               extent=extent, total=float(m.sum()), bonds=self.bonds)  # fmt: skip

    def __repr__(self):
        return f"Cluster({self.n} particles, {self.n_bonds} bonds)"


def _region(value):
    if not isinstance(value, (Box, Cylinder, Surface)):
        raise ValueError(f"region: a Box, a Cylinder or a Surface, got {type(value).__name__}")
    return value


class Insertion:
    """Particles poured into ``region`` during a run.

    Parameters
    ----------
    region : Box, Cylinder or Surface
        Where the centres are drawn (each particle wholly inside; over a mesh's faces
        for a :class:`Surface`).
    radius : float or (float, float)
        The radius [L], or the bounds of a uniform distribution of radii (not with
        ``cluster``).
    material : str, optional
        A material of the model's builder (mass ``ρ 4/3 π r³``, inertia ``2/5 m r²``);
        else ``density`` gives them.
    cluster : Cluster, optional
        Insert copies of this bonded cluster in place of single spheres: each copy is
        placed whole (every particle clear of everything, the copy wholly inside the
        region), turned about its centre of mass by a random rotation (``orientation``
        ``"random"``) or not, and moves off as a rigid body at ``velocity``; its bonds
        join the model, at rest. ``rate`` and ``total`` count copies, ``mass_rate``
        mass; the ledger counts particles.
    density : float, optional
        [M/L³] without a material.
    rate, mass_rate : float, optional
        Particles (or clusters) per unit time [1/T], or mass per unit time [M/T], from
        ``start`` to ``stop``. Neither: all of ``total`` as soon as there is room.
    total : int, optional
        The most particles (or clusters) it inserts (required without a rate).
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

    def __init__(self, region, radius=None, material=None, *, cluster=None, density=None, rate=None,
                 mass_rate=None, total=None, start=0.0, stop=math.inf, velocity=(0.0, 0.0, 0.0), orientation="random",
                 seed=0, attempts=50, gap=0.0):  # fmt: skip
        self.region = _region(region)
        self.cluster = cluster
        if cluster is not None:
            if not isinstance(cluster, Cluster):
                raise ValueError(f"cluster: a Cluster, got {type(cluster).__name__}")
            for name, value in (("radius", radius), ("material", material), ("density", density)):
                if value is not None:
                    raise ValueError(f"{name}: a cluster's particles carry their own; leave {name} out")
            self.radius = (float(cluster.radius.min()), float(cluster.radius.max()))
            if not self.region.fits(cluster.extent):
                raise ValueError(f"region: {self.region!r} is too small for the cluster (it reaches "
                                 f"{cluster.extent:g} from its centre)")  # fmt: skip
        elif radius is None:
            raise ValueError("radius: required (or give a cluster)")
        else:
            r = np.atleast_1d(np.asarray(radius, dtype=np.float64))
            if r.shape not in ((1,), (2,)) or not np.isfinite(r).all() or (r <= 0).any() or r[-1] < r[0]:
                raise ValueError(f"radius: a radius > 0 or bounds (lo, hi) with 0 < lo <= hi, got {radius!r}")
            self.radius = (float(r[0]), float(r[-1]))
            if not self.region.fits(self.radius[1]):
                raise ValueError(f"region: {self.region!r} is too small for a particle of radius {self.radius[1]:g}")
        if cluster is None and (material is None) == (density is None):
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
        self.count = 0  # particles (clusters) inserted so far
        self.mass = 0.0  # their mass
        self.pending = None  # the radius of the next particle (a cluster's rotation), drawn, not yet placed
        self.step_checked = None  # (dt, scheme) of the last stable-step check passed (check_stable_step)

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
        if self.cluster is not None:
            return self._draw_clusters(time, obstacles)
        wanted, target_mass = self._target(time)
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

    def _target(self, time):
        """``(wanted, target_mass)``: how many are due (by the rate or total), or, with a
        mass rate, the mass due (``wanted`` then the most the total allows)."""
        wanted = self.wanted(time)
        target_mass = None
        if wanted is None:
            t = min(time, self.stop) - self.start
            target_mass = self.mass_rate * t if t >= 0 else 0.0
            wanted = math.inf if self.total is None else self.total - self.count
        return wanted, target_mass

    def _next_rotation(self) -> np.ndarray:
        """The rotation of the next cluster (a unit quaternion), drawn once and kept until
        it is placed."""
        if self.orientation != "random":
            return np.array([1.0, 0.0, 0.0, 0.0])
        if self.pending is None:  # Shoemake's uniform quaternion
            u = self.rng.random(3)
            a, b = math.sqrt(1 - u[0]), math.sqrt(u[0])
            self.pending = [a * math.cos(2 * math.pi * u[1]), a * math.sin(2 * math.pi * u[1]),
                            b * math.sin(2 * math.pi * u[2]), b * math.cos(2 * math.pi * u[2])]  # fmt: skip
        return np.asarray(self.pending, dtype=np.float64)

    def _draw_clusters(self, time, obstacles) -> dict | None:
        """:meth:`draw` for a cluster: whole copies, each clear of everything, and their
        bonds (``bonds``: one builder bond call in the new particles' numbering)."""
        t = self.cluster.resolve(obstacles.builder)
        if not self.region.fits(t.extent):
            raise ValueError(f"region: {self.region!r} is too small for the cluster (it reaches {t.extent:g} from "
                             "its centre of mass)")  # fmt: skip
        wanted, target_mass = self._target(time)
        k = self.cluster.n
        xs, qs, copies = [], [], 0
        while copies < wanted:
            if target_mass is not None and self.mass + t.total > target_mass * (1 + 1e-12):
                break
            rot = self._next_rotation()
            arms = t.x @ rotations.quat_to_matrix(rot).T
            placed = None
            for _ in range(self.attempts):
                c = self.region.sample(self.rng, t.extent)
                p = c + arms
                if all(obstacles.clear(p[i], t.radius[i] + self.gap) for i in range(k)):
                    placed = p
                    break
            if placed is None:
                break  # no room now: this cluster waits for the next event, turned the same way
            for i in range(k):
                obstacles.add(placed[i], t.radius[i])
            xs.append(placed)
            qs.append(rotations.quat_multiply(rot, t.q))
            self.pending = None
            self.count += 1
            self.mass += t.total
            copies += 1
        if not copies:
            return None
        n = copies * k
        bonds = []
        if t.bonds:
            rows = np.concatenate([_family_rows(c) for c in t.bonds])
            a0 = np.concatenate([c[0] for c in t.bonds])
            b0 = np.concatenate([c[1] for c in t.bonds])
            shift = np.repeat(np.arange(copies, dtype=np.int64) * k, len(a0))
            bonds = [_family_call(np.tile(a0, copies) + shift, np.tile(b0, copies) + shift, np.tile(rows, (copies, 1)))]
        return {"x": np.concatenate(xs), "v": np.tile(self.velocity, (n, 1)), "q": np.concatenate(qs),
                "omega": np.zeros((n, 3)), "radius": np.tile(t.radius, copies), "mass": np.tile(t.mass, copies),
                "inertia": np.tile(t.inertia, copies), "material": list(t.material) * copies,
                "bonds": bonds}  # fmt: skip

    def __repr__(self):
        how = (f"rate={self.rate:g}" if self.rate else f"mass_rate={self.mass_rate:g}" if self.mass_rate
               else f"total={self.total}")  # fmt: skip
        what = f"cluster={self.cluster!r}" if self.cluster is not None else f"radius={self.radius}"
        return f"Insertion({self.region!r}, {what}, {how})"


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

    FIELDS = ("inserted", "removed", "mass_inserted", "mass_removed", "E_inserted", "E_removed", "E_setup")

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

    def pad(self, row, feeds) -> dict:
        """Give ``row`` (a ``series.csv`` row of the open system) every column its series
        has or may come to have: the bond energies ``U_m``, ``U_a``, ``U_s`` where an
        insertion brings bonded clusters (and ``U_released``, ``damage``, ``fragments``,
        ``largest_fragment`` where they can break), and every column an earlier row had
        (the bonds of a run whose bonded particles all left), 0.0 where the model has
        none now."""
        for f in feeds or ():
            cluster = getattr(f, "cluster", None)
            if cluster is not None and cluster.bonds:
                for k in ("U_m", "U_a", "U_s") + (("U_released", "damage", "fragments", "largest_fragment")
                                                   if cluster.can_break else ()):  # fmt: skip
                    row.setdefault(k, 0.0)
        seen = getattr(self, "seen", None)
        if seen:
            for k in seen:
                row.setdefault(k, 0.0)
        self.seen = list(row)
        return row

    def get_state(self) -> dict:
        return {**self.values, "P_inserted": self.P_inserted.tolist(), "P_removed": self.P_removed.tolist()}

    def set_state(self, state) -> None:
        self.values = {k: float(state.get(k, 0.0)) for k in self.FIELDS}
        self.P_inserted = np.array(state["P_inserted"], dtype=np.float64)
        self.P_removed = np.array(state["P_removed"], dtype=np.float64)


#: State arrays with a row per particle (those that are not placeholders are carried row by row).
_PER_PARTICLE = ("x", "v", "q", "omega", "F", "RM", "wall_springs", "dissipated", "wall_contact_peak", "wall_work",
                 "image")  # fmt: skip


def _rebuilt(model, keep, add):
    """The model of the particles ``keep`` of ``model`` and those of ``add`` after them
    (its builder's copy, finalized on the same backend and dtype without the placement
    checks), with the particles' numbers carried."""
    nb = _builder_with(model, keep, add)
    k = 0 if add is None else len(add["x"])
    new = nb.finalize(model.backend, model.dtype, placement=False)
    next_id = model.next_id
    new.ids = np.concatenate([model.ids[keep], np.arange(next_id, next_id + k, dtype=np.int64)])
    new.next_id = next_id + k
    # the first number given to a particle that entered (the particles of the model the
    # run started with have those below it)
    new.first_entered = getattr(model, "first_entered", next_id)
    return new


def _builder_with(model, keep, add):
    """A copy of ``model``'s builder with the particles ``keep`` and those of ``add``
    (and their bonds) after them."""
    nb, _ = model.builder._subset(keep)
    k = 0 if add is None else len(add["x"])
    n0 = nb._n
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
        for call in add.get("bonds") or ():  # a cluster's bonds, in the new particles' numbering
            a, b = np.asarray(call[0], dtype=np.int64) + n0, np.asarray(call[1], dtype=np.int64) + n0
            if len(a) and (min(a.min(), b.min()) < n0 or max(a.max(), b.max()) >= n0 + k):
                raise ValueError(f"add: a bond names a particle outside the {k} that enter")
            nb._bonds.append((a, b, *call[2:]))
            nb._bond_keys.append((np.minimum(a, b) << np.int64(32)) | np.maximum(a, b))
            nb._bond_count += len(a)
    return nb


def _probe(model, state, ins):
    """The particles ``ins`` brings that are hardest on the step: its smallest sphere,
    or one copy of its cluster (unturned), at rest relative to the insertion's velocity,
    placed clear of the particles present where there is room (a draw of its own
    generator, seeded 0: the insertion's is left alone), else at the region's centre of
    draws. An ``add`` dict (:func:`resize`)."""
    obstacles = Obstacles(model, state, ins.radius[1] + ins.gap)
    builder = model.builder
    if ins.cluster is not None:
        t = ins.cluster.resolve(builder)
        arms, radius, mass, inertia, q = t.x, t.radius, t.mass, t.inertia, t.q
        material, bonds, reach_ = list(t.material), [tuple(c) for c in t.bonds], t.extent
    else:
        r = ins.radius[0]
        m, j = ins._masses(builder, r)
        arms, radius, mass, inertia = np.zeros((1, 3)), np.array([r]), np.array([float(m)]), np.array([float(j)])
        q, material, bonds, reach_ = np.array([[1.0, 0.0, 0.0, 0.0]]), ins.material, [], r
    rng = np.random.default_rng(0)
    centre = None
    for _ in range(200):
        c = ins.region.sample(rng, reach_)
        if all(obstacles.clear(c + arms[i], radius[i] + ins.gap) for i in range(len(arms))):
            centre = c
            break
    if centre is None:
        centre = ins.region.sample(np.random.default_rng(0), reach_)
    k = len(arms)
    return {"x": centre + arms, "v": np.tile(ins.velocity, (k, 1)), "q": np.asarray(q, dtype=np.float64),
            "omega": np.zeros((k, 3)), "radius": radius, "mass": mass, "inertia": inertia, "material": material,
            "bonds": bonds}  # fmt: skip


def insertion_step(model, state, ins, scheme="verlet"):
    """The stable-step estimate (:func:`~granular.particles.stability.estimate_stable_step`)
    of the particles present, where they are now, together with what the insertion
    ``ins`` brings (:func:`_probe`: its smallest sphere or a copy of its cluster, at its
    velocity). Returns ``(estimate, n)``: particles from ``n`` on are the insertion's."""
    be = model.backend
    add = _probe(model, state, ins)
    probe = _builder_with(model, np.ones(model.n, dtype=bool), add).finalize("cpu", model.dtype, placement=False)
    host = lambda a: np.asarray(be.to_host(a))  # noqa: E731
    k_bonds = sum(len(c[0]) for c in add["bonds"])
    at = SimpleNamespace(x=np.concatenate([host(state.x), add["x"]]), v=np.concatenate([host(state.v), add["v"]]),
                         omega=np.concatenate([host(state.omega), add["omega"]]),
                         broken=np.concatenate([host(state.broken), np.zeros(k_bonds, dtype=np.int8)]))  # fmt: skip
    return estimate_stable_step(probe, at, scheme), model.n


def check_stable_step(model, state, feeds, dt, scheme="verlet", allow_unstable_step=False, names=None) -> list:
    """Check the step ``dt`` against what each insertion of ``feeds`` brings (smaller,
    stiffer or lighter particles than any present lower the stable step): the estimate
    of :func:`insertion_step` must not be below ``dt``. Raises
    :class:`~granular.errors.StepSizeError` naming the insertion (``names[k]``, default
    ``feeds[k]``), its particles and the largest ``dt`` allowed, unless
    ``allow_unstable_step``. Each insertion is checked once for a ``(dt, scheme)``.
    Returns the estimates made, as ``(insertion, estimate)``."""
    out = []
    for k, ins in enumerate(feeds or ()):
        if not isinstance(ins, Insertion) or ins.step_checked == (float(dt), scheme):
            continue
        est, n = insertion_step(model, state, ins, scheme)
        out.append((ins, est))
        if dt > est.h_max and not allow_unstable_step:
            name = names[k] if names is not None else f"feeds[{k}]"
            what = (f"its cluster ({ins.cluster.n} particles of radius {ins.radius[0]:g} to {ins.radius[1]:g})"
                    if ins.cluster is not None else f"its smallest particles (radius {ins.radius[0]:g})")  # fmt: skip
            where = ("at a particle it brings" if est.particle is not None and est.particle >= n
                     else "" if est.particle is None else f"at particle {est.particle}")  # fmt: skip
            raise StepSizeError(f"{name}: {ins!r}: with {what} the stable-step estimate is {est.h_max:.3g}, from "
                                f"the {est.mode} {where}, below dt = {dt:g}. Allowed: dt at most {est.h_max:.3g} "
                                "(or larger, softer or heavier particles); or give allow_unstable_step=True "
                                "to run it anyway")  # fmt: skip
        ins.step_checked = (float(dt), scheme)
    return out


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
    out = {"particle_ids": np.asarray(model.ids, dtype=np.int64),
           "particle_radius": np.asarray(be.to_host(model.radius), dtype=np.float64),
           "particle_mass": np.asarray(be.to_host(model.mass), dtype=np.float64),
           "particle_inertia": np.asarray(be.to_host(model.inertia), dtype=np.float64),
           "particle_material": np.asarray(mat, dtype=np.int32),
           "particle_next_id": np.array([model.next_id], dtype=np.int64)}  # fmt: skip
    entered = np.asarray(model.ids) >= getattr(model, "first_entered", model.next_id)
    if b is not None and entered.any():
        # where the particles that entered were placed (a bond's rest state), and the
        # bonds among them (those of the clusters), in the model's order
        out["particle_x0"] = np.concatenate(b._x)[entered]
        out["particle_q0"] = np.concatenate(b._q)[entered]
        calls = [c for c in b._bonds if len(c[0])]
        if calls:
            a = np.concatenate([c[0] for c in calls])
            bb = np.concatenate([c[1] for c in calls])
            both = entered[a] & entered[bb]
            if both.any():
                out["bond_ids"] = np.stack([model.ids[a[both]], model.ids[bb[both]]], axis=1).astype(np.int64)
                out["bond_family"] = np.concatenate([_family_rows(c) for c in calls])[both]
    return out


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
        q = np.tile([1.0, 0.0, 0.0, 0.0], (k, 1))
        if "particle_x0" in arrays:  # where they were placed: the rest state of their bonds
            x, q = np.asarray(arrays["particle_x0"], dtype=np.float64), np.asarray(arrays["particle_q0"], np.float64)
        add = {"x": x, "v": np.zeros((k, 3)), "q": q, "omega": np.zeros((k, 3)),
               "radius": np.asarray(arrays["particle_radius"])[inserted],
               "mass": np.asarray(arrays["particle_mass"])[inserted],
               "inertia": np.asarray(arrays["particle_inertia"])[inserted],
               "material": [names.get(int(m)) for m in np.asarray(arrays["particle_material"])[inserted]]}  # fmt: skip
        if "bond_ids" in arrays:
            local = np.searchsorted(ids[inserted], np.asarray(arrays["bond_ids"], dtype=np.int64))
            add["bonds"] = [_family_call(local[:, 0], local[:, 1], arrays["bond_family"])]
    new = _rebuilt(model, keep, add)
    new.ids = ids.copy()
    new.next_id = int(np.asarray(arrays["particle_next_id"])[0])
    new.first_entered = n0
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


def _pressing(model, add) -> bool:
    """Whether two of the particles that enter (a cluster's) overlap, or come within the
    contact law's reach of each other: then they push or pull at once."""
    if model.law is None and model.force("contacts") is None:
        return False
    x, r = np.asarray(add["x"], dtype=np.float64), np.asarray(add["radius"], dtype=np.float64)
    if len(x) < 2:
        return False
    extra = float(reach(model.law, float(r.max()))) if model.law is not None else 0.0
    pairs, d = near_pairs(x, 2.0 * float(r.max()) + extra, model.period if model.period.shape[0] else None)
    if not len(pairs):
        return False
    gap = np.linalg.norm(d, axis=1) - r[pairs[:, 0]] - r[pairs[:, 1]]
    return bool((gap < extra).any())


def resize(model, state, keep=None, add=None) -> None:
    """Edit the particle set of a run in place: keep the particles of the mask ``keep``
    (default all), then append those of ``add`` (a dict of host arrays ``x``, ``v``,
    ``q``, ``omega``, ``radius``, ``mass``, ``inertia``, a ``material`` name or None (or
    one per particle), and optionally ``bonds``: builder bond calls ``(a, b, *family)``
    among them in their own numbering 0 .. K-1, as :meth:`Insertion.draw` gives), and
    carry the state over (module docstring); new bonds enter intact.
    ``model`` and ``state`` are changed in place. The forces stay as they were for the
    particles that stay, so that taking out a particle that touches nothing changes
    nothing else, bit for bit; where a particle that leaves touched one that stays, they
    are evaluated again (at the step's velocities, not its predicted ones). Those that
    enter touch nothing: gravity is their force (a cluster's bonds start at rest, with no
    force); where a cluster's own particles press on each other, the forces are
    evaluated again."""

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
    k_bonds = sum(len(c[0]) for c in (add or {}).get("bonds") or ())
    for name in ("broken", "released"):  # a cluster's bonds enter intact, having released nothing
        rows = arrays[name][kept_bonds] if len(kept_bonds) else arrays[name][:0]
        if k_bonds:
            rows = np.concatenate([rows, np.zeros((k_bonds,) + rows.shape[1:], dtype=rows.dtype)])
        out[name] = rows
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
    if k and bool(out["counters"][1]) and _pressing(new, add):
        out["counters"] = np.array(out["counters"])
        out["counters"][1] = 0  # a cluster's particles press on each other: evaluate the forces again
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
