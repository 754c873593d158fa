"""``ModelBuilder`` (host lists, easy to fill) → ``finalize(backend)`` → ``Model``.

Every input is checked when it is added; an error names the argument, the particle and
what is allowed, and a call that raises leaves the builder as it was (every argument is
checked before anything is stored). The contact settings (materials, pairs of materials, the contact law,
walls) are :class:`granular.particles.builder_contacts.ContactSettings`.

Example::

    b = ModelBuilder()
    i = b.add_particle(x=[0, 0, 0], rotvec=[0, 2.35, 0], omega=[0.2, 0, 0.2])
    b.add_pendulum(i, rho0=[0, 0, 1], g=1.0)
    model = b.finalize("cpu")
    state = model.state()
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ..backend import resolve_backend
from .builder_contacts import ContactSettings
from .forces import Bonds, PendulumPotential, UniformGravity
from .forces.materials import sphere_mass
from .inputs import _check_duplicate_bonds, _nonnegative, _orientations, _scalars, _vectors
from .model import Model
from .setup import configured
from .neighbors import min_image

def _limits(nb, **limits) -> list:
    """Per-bond limits (breakage thresholds, strengths), each > 0 or ``inf`` (never)."""
    out = [_nonnegative(name, value, nb, allow_inf=True) for name, value in limits.items()]
    for name, t in zip(limits, out):
        if (t == 0).any():
            raise ValueError(f"{name}: must be > 0 (inf: never); bond {int(np.argmax(t == 0))} of this call has 0.0")
    return out


class ModelBuilder(ContactSettings):
    """Collect particles, bonds, contacts, walls and fields on the host, then build a :class:`Model`.

    Every input is checked when it is added (an error names the argument, the particle
    or bond, and what is allowed); a call that raises leaves the builder as it was, so a
    caller may correct the argument and go on. :meth:`finalize` checks the whole
    (placement included: :mod:`granular.particles.placement`) and moves it to a backend
    as a :class:`Model`.
    The builder takes no arguments. Particles are numbered ``0, 1, ...`` in the order
    they are added, bonds and walls likewise.

    Examples
    --------
    Two spheres on a floor, under gravity, with Hertz contacts (56)-(57) of paper 003:

    >>> import granular as gr
    >>> b = gr.ModelBuilder()
    >>> ids = b.add_particles([[0, 0, 0.5], [1.0, 0, 0.5]], radius=0.5, mass=1.0)
    >>> b.set_contacts(kpp=1e3)
    >>> b.add_wall([0, 0, 1], 0.0)                   # z = 0, stiffness kpp
    0
    >>> b.set_gravity([0, 0, -9.81])
    >>> model = b.finalize("cpu")
    >>> model.n, model.dtype
    (2, dtype('float64'))
    """

    def __init__(self):
        self._x, self._v, self._q, self._omega = [], [], [], []
        self._mass, self._inertia, self._radius = [], [], []
        self._n = 0
        self._gravity = None
        self._pendula = []  # (index array, rho0 array, mg array, vertical)
        self._bonds = []  # (a, b, ka, ks, km, strain_max, angle_max, form, kt, crit) arrays per call
        self._bond_keys = []  # per call: (a << 32) | b of each bond (a < b), for duplicate detection
        self._bond_count = 0
        self._kpp = None
        self._contact_law = None  # the law's name given to set_contacts (None: by the materials)
        self._bonded_contacts = True
        self._contact_search = ("cells", None)
        self._walls = []  # (normal (3,), offset, k or None, material index or -1)
        self._materials = {}  # name -> (index, Material)
        self._pairs = {}  # (i, j), i <= j -> values given to the pair in place of the mixing rule
        self._replica_pairs = None  # each replica's self._pairs, where they differ
        self._replica_gravity = None  # (R, 3) each replica's gravity, where they differ
        self._mat = []  # per add_particles call: (K,) material index, -1 for none
        self._contacts_set = False
        self._allow_overlap = False
        self._wall_overlap = []  # per wall: allow_initial_overlap
        self._wall_motion = []  # per wall: its WallMotion, or None (at rest)
        self._wall_names = []  # per wall: its name (granular.particles.setup)
        self._setup = None  # what a running model changed of this set-up (granular.particles.setup.Setup)
        self._keep_work = False  # the walls keep their work at rest (a model whose set-up may change)
        self._meshes = []  # per mesh: dict of mesh, k, mat, smooth, motion, overlap
        self._velocity = "predicted"
        self._replica_counts = None  # particles of each replica (a model of replicas)
        self._replica_walls = None  # walls of each replica
        self._replica_names = None  # what errors call each replica
        self._replica_kpp = None  # each replica's Hertz stiffness, where they differ
        self._replica_materials = None  # each replica's materials (same names), where they differ
        self._in_atomic = False  # inside _atomic(): an outer call undoes everything on failure
        self._period = None  # a periodic box: (3, 2) (lo, hi) per axis, NaN where not periodic

    @contextlib.contextmanager
    def _atomic(self):
        """Undo every change made to the builder inside the ``with`` block if it raises.

        For calls made of several builder calls (the helpers of
        :mod:`granular.particles.shapes`): each builder method is atomic on its own
        (it checks every argument before storing anything), and this makes their
        sequence atomic too. The snapshot is shallow and cheap (the containers are
        copied, not the arrays in them): builder methods only append to the lists and
        replace dictionary entries and attributes, they never change a stored array or
        tuple in place. Nested blocks take no snapshot of their own: the outermost one
        undoes everything.
        """
        if self._in_atomic:
            yield
            return
        saved = {k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in vars(self).items()}
        self._in_atomic = True
        try:
            yield
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        finally:
            self._in_atomic = False

    @classmethod
    def replicas(cls, builders, names=None) -> ModelBuilder:
        """One builder holding the systems of ``builders`` as independent replicas.

        Replica ``r`` is ``builders[r]``: its particles keep their order and follow those
        of the replicas before it, its bonds join its own particles, and its walls act on
        its particles only. Particles of different replicas never interact, wherever they
        are: the neighbour search puts the replica into the cell
        (:mod:`kernels.grid`), so replicas may overlap in space. Each replica's trajectory
        is that of its builder finalised alone, bit for bit (the sums of a particle are
        the same terms in the same order). The builders are left as they are.

        Parameters
        ----------
        builders : sequence of ModelBuilder
            At least one. They must agree on what is one setting for the whole model:
            the contact settings (``bonded_contacts``, search, skin, velocity; the
            Hertz stiffness ``kpp`` may differ, each replica keeps its own), the names
            of the materials (their values, and those given to pairs of them, may
            differ: each replica keeps its own) and pendula (none). Each replica keeps
            its own gravity (none: zero).
        names : sequence, optional
            What errors call each replica (default its position: ``replica 0`` ...),
            for example its index in an ensemble.

        Returns
        -------
        ModelBuilder
            Finalise it as usual; the model's ``replica`` ((N,) int32) and
            ``replica_count`` tell the replicas apart
            (:func:`granular.particles.replicas.replica_diagnostics`).

        Raises
        ------
        ValueError
            No builders, an empty or already replicated builder, or builders that
            disagree on a model-wide setting (named).
        """
        builders = list(builders)
        if not builders:
            raise ValueError("replicas: give at least one builder")
        first = builders[0]
        for r, b in enumerate(builders):
            if not isinstance(b, cls):
                raise ValueError(f"replicas: builder {r} is a {type(b).__name__}, not a ModelBuilder")
            if b._n == 0:
                raise ValueError(f"replicas: builder {r} has no particles")
            if b._replica_counts is not None:
                raise ValueError(f"replicas: builder {r} already holds replicas")
            if b._pendula:
                raise ValueError(f"replicas: builder {r} has pendula; replicas of pendulum systems are not supported")
            if (b._kpp is None) != (first._kpp is None):
                raise ValueError(f"replicas: builder {r} {'has no' if b._kpp is None else 'has a'} contact stiffness "
                                 f"kpp and builder 0 {'has' if b._kpp is None else 'has not'}; the contact law is one "
                                 "setting for all replicas")  # fmt: skip
            for name in ("_bonded_contacts", "_contact_search", "_contacts_set", "_velocity", "_allow_overlap",
                         "_contact_law"):  # fmt: skip
                if getattr(b, name) != getattr(first, name):
                    raise ValueError(f"replicas: builder {r} differs from builder 0 in {name[1:]} "
                                     f"({getattr(b, name)!r} against {getattr(first, name)!r}); it is one setting "
                                     "for all replicas")  # fmt: skip
            if {k: i for k, (i, _) in b._materials.items()} != {k: i for k, (i, _) in first._materials.items()}:
                raise ValueError(f"replicas: builder {r} names other materials than builder 0 "
                                 f"({sorted(b._materials)} against {sorted(first._materials)}); each replica may "
                                 "give its materials other values, under the same names")  # fmt: skip
        out = cls()
        for name in ("_kpp", "_bonded_contacts", "_contact_search", "_contacts_set", "_velocity", "_allow_overlap",
                     "_gravity", "_contact_law"):
            setattr(out, name, getattr(first, name))
        # each replica's gravity (none: zero), where they differ
        rows = [np.zeros(3) if b._gravity is None else np.asarray(b._gravity, dtype=np.float64) for b in builders]
        if any(not np.array_equal(g, rows[0]) for g in rows):
            out._gravity = rows[0]
            out._replica_gravity = np.stack(rows)
        out._materials = dict(first._materials)
        offset = 0
        for b in builders:
            for name in ("_x", "_v", "_q", "_omega", "_mass", "_inertia", "_radius", "_mat"):
                getattr(out, name).extend(a.copy() for a in getattr(b, name))
            for a, bb, *rest in b._bonds:
                out._bonds.append((a + offset, bb + offset, *rest))
                lo, hi = np.minimum(a, bb) + offset, np.maximum(a, bb) + offset
                out._bond_keys.append((lo.astype(np.int64) << 32) | hi.astype(np.int64))
            out._bond_count += b._bond_count
            out._walls.extend(b._walls)
            out._wall_overlap.extend(b._wall_overlap)
            out._wall_motion.extend(b._wall_motion)
            out._wall_names.extend(b._wall_names)
            if b._meshes:
                raise ValueError("replicas: triangle meshes (add_mesh) are not supported in a model of replicas yet")
            if b._setup is not None:
                raise ValueError("replicas: a builder declares absent walls or meshes (present=False) or expects "
                                 "changes of its set-up; a model of replicas keeps its set-up")  # fmt: skip
            offset += b._n
        out._n = offset
        order = sorted(first._materials, key=lambda k: first._materials[k][0])
        tables = [[b._materials[k][1] for k in order] for b in builders]
        out._replica_materials = tables if any(t != tables[0] for t in tables) else None
        out._pairs = dict(first._pairs)
        given = [dict(b._pairs) for b in builders]
        out._replica_pairs = given if any(g != given[0] for g in given) else None
        kpps = [b._kpp for b in builders]
        out._replica_kpp = kpps if first._kpp is not None and len(set(kpps)) > 1 else None
        out._replica_counts = [b._n for b in builders]
        out._replica_walls = [len(b._walls) for b in builders]
        out._replica_names = list(range(len(builders))) if names is None else list(names)
        if len(out._replica_names) != len(builders):
            raise ValueError(f"replicas: {len(out._replica_names)} names for {len(builders)} builders")
        return out

    def _open(self, what: str) -> None:
        """Refuse ``what`` on a builder that joins replicas (its replica layout is fixed)."""
        if self._replica_counts is not None:
            raise ValueError(f"{what}: this builder joins replicas (ModelBuilder.replicas); its layout is fixed. "
                             "Add to the replicas' own builders before joining them")  # fmt: skip

    @property
    def particle_count(self) -> int:
        """Number of particles added so far (the index the next particle gets)."""
        return self._n

    def add_particles(
        self,
        x,
        v=(0.0, 0.0, 0.0),
        *,
        orientation=None,
        alpha=None,
        rotvec=None,
        omega=(0.0, 0.0, 0.0),
        mass=None,
        inertia=None,
        radius=0.5,
        material=None,
    ) -> np.ndarray:
        """Add ``K`` spherical particles; return their indices.

        The orientation is given as at most one of ``orientation``, ``alpha`` and
        ``rotvec`` (the identity if none); every value must be finite.

        Parameters
        ----------
        x : array_like, (K, 3) float
            Centre positions [L].
        v : array_like, (K, 3) or (3,) float, optional
            Velocities [L/T]; a (3,) vector is given to every particle. Default zero.
        orientation : array_like, (K, 4) or (4,) float, optional
            Unit quaternions ``(q0, q1, q2, q3)``, scalar first [-]; ``| |q| - 1 |`` at
            most :data:`UNIT_QUATERNION_TOL`, then normalised.
        alpha : array_like, (K, 3) or (3,) float, optional
            Rescaled Rodrigues parameters, eq. (3) of paper 003 [-].
        rotvec : array_like, (K, 3) or (3,) float, optional
            Rotation vectors ``θ`` [rad].
        omega : array_like, (K, 3) or (3,) float, optional
            Spatial angular velocities ``Ω`` [1/T]. Default zero.
        mass : float or array_like, (K,) float, optional
            Masses ``m`` [M], > 0. Default: with ``material``, solid spheres of its density,
            ``ρ 4/3 π r³``; else 1.
        inertia : float or array_like, (K,) float, optional
            Scalar moments of inertia ``J`` [M L²], > 0. Default: with ``material``,
            a solid sphere's ``2/5 m r²`` (``m``: the given mass, else the density's
            ``ρ 4/3 π r³``); else 1.
        radius : float or array_like, (K,) float, optional
            Radii [L], > 0. Default 0.5.
        material : str, optional
            Name of a material of :meth:`add_material` (the dissipative contact law).

        Returns
        -------
        ndarray, (K,) int64
            Indices of the new particles, consecutive from :attr:`particle_count`.

        Raises
        ------
        ValueError
            A value of the wrong shape, non-finite, not > 0 where it must be, a quaternion
            that is not of unit length, more than one orientation form, or an unknown
            ``material``; the message names the argument and the particle of this call.
        """
        self._open("add_particles")
        # Every argument is checked before the builder changes: a call that raises leaves
        # it as it was.
        xa = np.array(x, dtype=np.float64)
        if xa.ndim != 2 or xa.shape[1] != 3:
            raise ValueError(f"x: expected shape (K, 3), got {xa.shape}")
        k = xa.shape[0]
        xa = _vectors("x", xa, k, allow_broadcast=False)
        va = _vectors("v", v, k)
        omega_a = _vectors("omega", omega, k)
        q = _orientations(k, orientation, alpha, rotvec)
        radius = _scalars("radius", radius, k)
        mat = -1
        if material is not None:
            if not isinstance(material, str) or material not in self._materials:
                raise ValueError(f"material: no material named {material!r}; defined: {sorted(self._materials)}")
            mat, m = self._materials[material]
            m_s, j_s = sphere_mass(m, radius)
            if inertia is None:  # a solid sphere of the mass it has: 2/5 m r²
                inertia = j_s if mass is None else 0.4 * _scalars("mass", mass, k) * radius * radius
            mass = m_s if mass is None else mass
        mass_a = _scalars("mass", 1.0 if mass is None else mass, k)
        inertia_a = _scalars("inertia", 1.0 if inertia is None else inertia, k)
        self._x.append(xa)
        self._v.append(va)
        self._omega.append(omega_a)
        self._q.append(q)
        self._mass.append(mass_a)
        self._inertia.append(inertia_a)
        self._radius.append(radius)
        self._mat.append(np.full(k, mat, dtype=np.int32))
        first = self._n
        self._n += k
        return np.arange(first, self._n, dtype=np.int64)

    def add_particle(self, x, v=(0.0, 0.0, 0.0), **kwargs) -> int:
        """Add one particle; return its index.

        Parameters
        ----------
        x : array_like, (3,) float
            Centre position [L].
        v : array_like, (3,) float, optional
            Velocity [L/T]. Default zero.
        **kwargs
            ``orientation`` (4,), ``alpha`` (3,), ``rotvec`` (3,), ``omega`` (3,),
            ``mass``, ``inertia``, ``radius`` (scalars) and ``material``, as in
            :meth:`add_particles` for ``K = 1``.

        Returns
        -------
        int
            Index of the new particle.

        Raises
        ------
        ValueError
            As :meth:`add_particles`.
        """
        for key in ("orientation", "alpha", "rotvec"):
            if kwargs.get(key) is not None and np.ndim(kwargs[key]) == 1:  # one particle's, shaped (4,) or (3,)
                kwargs[key] = np.asarray(kwargs[key], dtype=np.float64)[None, :]
        return int(self.add_particles(np.asarray(x, dtype=np.float64)[None, :], v, **kwargs)[0])

    def set_gravity(self, g) -> None:
        """Set a uniform gravitational acceleration for all particles.

        The field's energy is ``U_gravity = -Σ m_i g·x_i`` and its force ``F_i = m_i g``
        (:class:`~granular.particles.forces.UniformGravity`). A second call replaces the
        first.

        Parameters
        ----------
        g : array_like, (3,) float
            Acceleration [L/T²].

        Raises
        ------
        ValueError
            ``g`` is not 3 finite numbers.
        """
        self._open("set_gravity")
        self._gravity = _vectors("gravity", g, 1)[0]

    def set_periodic(self, x=None, y=None, z=None) -> None:
        """Make the box periodic along some axes: a particle that leaves it through one
        face comes back through the opposite one with the same velocity.

        Every separation of two particles (contacts, bonds, the neighbour search) is then
        the minimum image: a pair or bond across the boundary has the forces of the same
        pair in the middle of the box. Positions are kept in the box and the periods
        each particle crossed are counted in ``State.image``
        (:meth:`State.unwrapped <granular.particles.state.State.unwrapped>` gives the
        unwrapped positions; the diagnostics use them: gravity's energy, angular
        momentum). A second call replaces the first. See ``docs/geometry.md``.

        Parameters
        ----------
        x, y, z : (lo, hi) or None
            The box ``[lo, hi)`` along each periodic axis [L]; ``None``: not periodic
            along that axis (walls or meshes may bound it, or nothing).

        Raises
        ------
        ValueError
            No axis given; a bound that is not finite, or ``hi <= lo``. At
            :meth:`finalize`: a particle outside the box along a periodic axis; a box
            shorter than twice the contact cutoff ``2 r_max + skin`` along a periodic
            axis; replicas.
        """
        self._open("set_periodic")
        box = np.full((3, 2), np.nan)
        for c, (name, span) in enumerate((("x", x), ("y", y), ("z", z))):
            if span is None:
                continue
            try:
                lo, hi = (float(v) for v in span)
            except (TypeError, ValueError):
                raise ValueError(f"set_periodic: {name} must be (lo, hi), two numbers, or None; got {span!r}") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
                raise ValueError(f"set_periodic: {name} = ({lo!r}, {hi!r}) must be finite with hi > lo")
            box[c] = lo, hi
        if np.isnan(box).all():
            raise ValueError("set_periodic: give at least one periodic axis (x, y or z as (lo, hi))")
        self._period = box

    def _period_rows(self):
        """The periodic box as the kernels take it (3, 3) rows ``(lo, L, 1/L)``, ``L = 0``
        along an axis that is not periodic; ``None`` without a periodic axis."""
        if self._period is None:
            return None
        rows = np.zeros((3, 3))
        for c in range(3):
            lo, hi = self._period[c]
            if not np.isnan(lo):
                rows[c] = lo, hi - lo, 1.0 / (hi - lo)
        return rows

    def _check_periodic(self, x, radius, skin) -> None:
        """Particles inside the periodic box; the box at least two contact cutoffs long."""
        if self._period is None:
            return
        if self._replica_counts is not None:
            raise ValueError("set_periodic: a model of replicas cannot be periodic (give each run its own model)")
        cutoff = 2.0 * float(np.max(radius)) + float(skin)
        for c, name in enumerate("xyz"):
            lo, hi = self._period[c]
            if np.isnan(lo):
                continue
            out = (x[:, c] < lo) | (x[:, c] >= hi)
            if out.any():
                k = int(np.argmax(out))
                raise ValueError(f"set_periodic: particle {k} is at {name} = {x[k, c]:.9g}, outside the periodic box "
                                 f"[{lo:.9g}, {hi:.9g}) along {name} ({int(out.sum())} particle(s) in all); move it "
                                 "into the box (a position equal to hi is the image of lo)")  # fmt: skip
            if hi - lo <= 2.0 * cutoff:
                raise ValueError(f"set_periodic: the box is {hi - lo:.6g} long along {name}; it must be longer than "
                                 f"twice the contact cutoff 2 r_max + skin = {cutoff:.6g} (else a particle could touch "
                                 "two images of another)")  # fmt: skip

    def add_pendulum(self, particles, rho0=(0.0, 0.0, 1.0), g=1.0, vertical=(0.0, 0.0, 1.0)) -> None:
        """Make particles 3D pendula about fixed pivots, eq. (39): ``U = -m g e·Rρ0``.

        The particle's ``inertia`` is taken as the scalar inertia about the pivot; the
        potential acts on the rotation only (the position stands for the pivot and feels
        no force), with the spatial moment ``RM = m g (Rρ0) × e``
        (:class:`~granular.particles.forces.PendulumPotential`, ``docs/physics.md``). The
        weight ``m g`` uses the particle's mass at :meth:`finalize`. The invariants (41b),
        (41c) are :func:`~granular.particles.diagnostics.pendulum_invariants`.

        Parameters
        ----------
        particles : int or array_like, (K,) int
            Particle indices, each at most once over all pendulum calls.
        rho0 : array_like, (3,) or (K, 3) float, optional
            Body-frame vector pivot → centre of mass ``ρ0`` [L]. Default ``(0, 0, 1)``.
        g : float or array_like, (K,) float, optional
            Gravitational acceleration [L/T²], > 0. Default 1.
        vertical : array_like, (3,) float, optional
            The unit vector ``e`` of (39) [-] (norm 1 to 1e-12), shared by the ``K``
            pendula. Default ``(0, 0, 1)``.

        Raises
        ------
        ValueError
            Indices that are not integers or out of range, a particle already attached to
            a pendulum, a non-finite ``rho0``, ``g`` not > 0, or ``vertical`` not a unit
            vector.
        """
        self._open("add_pendulum")
        idx = np.atleast_1d(np.asarray(particles))
        if idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise ValueError(f"particles: expected integer indices, got {particles!r}")
        if ((idx < 0) | (idx >= self._n)).any():
            raise ValueError(f"particles: indices must be in [0, {self._n}), got {idx.tolist()}")
        used = np.concatenate([p[0] for p in self._pendula] + [idx])
        if len(np.unique(used)) != len(used):
            raise ValueError("particles: a particle can be attached to at most one pendulum")
        k = len(idx)
        r = _vectors("rho0", rho0, k)
        gg = _scalars("g", g, k)
        e = _vectors("vertical", vertical, 1)[0]
        if abs(np.linalg.norm(e) - 1.0) > 1e-12:
            raise ValueError(f"vertical: must be a unit vector, got {e.tolist()} (norm {np.linalg.norm(e)!r})")
        self._pendula.append((idx.astype(np.int64), r, gg, e))

    def add_bonds(self, pairs, ka=0.0, ks=0.0, km=0.0, strain_max=np.inf, angle_max=np.inf) -> np.ndarray:
        """Bond particle pairs with binder stiffnesses (paper 003, Sect. 4); return the bond ids.

        Each bond carries the energies U^m (44)-(50), U^a (51)-(52) and U^s (53)-(55) of
        :mod:`granular.particles.forces.bonds` (the shear energy in the reading of
        ``docs/physics.md``). Rest length, rest directions and reference relative rotation
        are taken from the initial configuration at :meth:`finalize`. A bond breaks for
        good when ``|r/r0 - 1| > strain_max`` or its relative rotation angle exceeds
        ``angle_max``.

        Parameters
        ----------
        pairs : array_like, (B, 2) int
            Particle indices of the bond ends; each unordered pair at most once (within
            a call here, across calls at :meth:`finalize`), no particle bonded to itself.
        ka : float or array_like, (B,) float, optional
            Axial stiffness ``K^a`` of ``U^a = ½ K^a (r/r0 - 1)²`` [M L²/T²], >= 0. Default 0.
        ks : float or array_like, (B,) float, optional
            Shear stiffness ``K^s`` of U^s [M L²/T²], >= 0. Default 0.
        km : float or array_like, (B,) float, optional
            Bending and torsion stiffness ``K^m`` of ``U^m = ½ K^m |θ|²`` [M L²/T²], >= 0.
            Default 0.
        strain_max : float or array_like, (B,) float, optional
            Breakage threshold on ``|r/r0 - 1|`` [-], > 0; ``inf`` (default): never.
        angle_max : float or array_like, (B,) float, optional
            Breakage threshold on the relative rotation angle ``|θ|`` [rad], > 0; ``inf``
            (default): never.

        Returns
        -------
        ndarray, (B,) int64
            Ids of the new bonds, consecutive after those of earlier calls.

        Raises
        ------
        ValueError
            ``pairs`` not integer of shape (B, 2), an index out of range, a particle
            bonded to itself, a pair repeated within the call, a stiffness not finite and
            >= 0, or a threshold not > 0; the message names the bond.
        """
        self._open("add_bonds")
        lo, hi, keys = self._bond_pairs(pairs)  # within this call; across calls at finalize()
        nb = len(lo)
        first = self._bond_count
        stiff = [_nonnegative(name, val, nb) for name, val in (("ka", ka), ("ks", ks), ("km", km))]
        thresholds = _limits(nb, strain_max=strain_max, angle_max=angle_max)
        self._bond_keys.append(keys)
        self._bonds.append((lo, hi, *stiff, *thresholds, np.zeros(nb, np.int8), np.zeros(nb), np.zeros((nb, 4))))
        self._bond_count += nb
        return np.arange(first, first + nb, dtype=np.int64)

    def _bond_pairs(self, pairs):
        """Checked ``(lo, hi, keys)`` of a call's pairs (see :meth:`add_bonds`)."""
        p = np.asarray(pairs)
        if p.ndim != 2 or p.shape[1] != 2 or (p.size and p.dtype.kind not in "iu"):
            raise ValueError(f"bonds: expected integer pairs of shape (B, 2), got shape {p.shape} dtype {p.dtype}")
        p = p.astype(np.int64)
        first = self._bond_count
        bad = ((p < 0) | (p >= self._n)).any(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            end = int(p[k][(p[k] < 0) | (p[k] >= self._n)][0])
            raise ValueError(f"bonds: bond {first + k} names particle {end}, but particles are 0..{self._n - 1}")
        same = p[:, 0] == p[:, 1]
        if same.any():
            k = int(np.argmax(same))
            raise ValueError(f"bonds: bond {first + k} joins particle {p[k, 0]} to itself")
        lo, hi = np.minimum(p[:, 0], p[:, 1]), np.maximum(p[:, 0], p[:, 1])
        keys = (lo << np.int64(32)) | hi  # unique per unordered pair (indices < 2^31)
        _check_duplicate_bonds(keys, first)
        return lo, hi, keys

    def add_parallel_bonds(self, pairs, young, shear_modulus=None, poisson=None, radius_ratio=1.0,
                           tensile_strength=np.inf, shear_strength=np.inf, critical_force=None,
                           critical_moment=None, strain_max=np.inf, angle_max=np.inf) -> np.ndarray:  # fmt: skip
        """Bond particle pairs with parallel bonds of a binder's elastic moduli; return the bond ids.

        A parallel bond (Potyondy & Cundall 2004) is a short elastic cylinder of radius
        ``R̄ = radius_ratio · min(r_a, r_b)`` and length ``L = r0`` (the initial distance of
        the centres) cementing the two particles. Its stiffnesses are those of the
        cylinder, with ``A = π R̄²``, ``I = π R̄⁴/4``, ``J = π R̄⁴/2``:

        ``k_n = E A / L``, ``k_s = G A / L``, ``k_b = E I / L``, ``k_t = G J / L``,

        in the energy of :func:`kernels.laws.parallel_bond` (axial, shear, bending,
        torsion; ``docs/physics.md``, "Parallel bonds"). It breaks for good, its energy
        booked as released, when

        * ``criterion "stress"`` (``tensile_strength``, ``shear_strength``): the largest
          tensile stress ``σ = F_n/A + M_b R̄/I`` exceeds ``σ_c`` or the largest shear
          stress ``τ = F_s/A + M_t R̄/J`` exceeds ``τ_c`` (Potyondy & Cundall's criterion);
        * ``critical_force=(F_nc, F_sc)``, ``critical_moment=(M_tc, M_bc)``: the sum
          ``F_n/F_nc + F_s/F_sc + M_t/M_tc + M_b/M_bc`` exceeds 1 (LAMMPS
          ``bond bpm/rotational``);
        * or its strain or angle passes ``strain_max`` or ``angle_max``, as for
          :meth:`add_bonds`.

        ``F_n = k_n (r - r0)`` is the axial force (positive in tension), ``F_s``, ``M_b``,
        ``M_t`` the magnitudes of the shear force, bending and twisting moments. Strengths
        may differ per bond (:func:`granular.particles.strengths.draw_strengths`).

        Parameters
        ----------
        pairs : array_like, (B, 2) int
            Particle indices of the bond ends, as for :meth:`add_bonds`.
        young : float or array_like, (B,) float
            The binder's Young's modulus ``E`` [M/(L T²)], > 0.
        shear_modulus : float or array_like, (B,) float, optional
            The binder's shear modulus ``G`` [M/(L T²)], > 0. Give it or ``poisson``.
        poisson : float, optional
            Poisson's ratio ``ν`` in (-1, 0.5]: ``G = E / (2 (1 + ν))``.
        radius_ratio : float or array_like, (B,) float, optional
            ``λ = R̄ / min(r_a, r_b)`` [-], > 0. Default 1.
        tensile_strength, shear_strength : float or array_like, (B,) float, optional
            ``σ_c``, ``τ_c`` [M/(L T²)], > 0; ``inf`` (default): never.
        critical_force : (float, float) or None, optional
            ``(F_nc, F_sc)`` [M L/T²] of the combined criterion (with ``critical_moment``,
            instead of the strengths).
        critical_moment : (float, float) or None, optional
            ``(M_tc, M_bc)`` [M L²/T²] of the combined criterion.
        strain_max, angle_max : float or array_like, (B,) float, optional
            As for :meth:`add_bonds`.

        Returns
        -------
        ndarray, (B,) int64
            Ids of the new bonds, consecutive after those of earlier calls.

        Raises
        ------
        ValueError
            Bad pairs (as for :meth:`add_bonds`), a modulus, ratio or strength not > 0,
            neither or both of ``shear_modulus`` and ``poisson``, ``poisson`` outside
            (-1, 0.5], or both the strengths and the combined criterion; the message names
            the argument.
        """
        self._open("add_parallel_bonds")
        lo, hi, keys = self._bond_pairs(pairs)
        nb = len(lo)
        e = _scalars("young", young, nb, what="bond")
        if (shear_modulus is None) == (poisson is None):
            raise ValueError("shear_modulus, poisson: give exactly one (G = E / (2 (1 + poisson)))")
        if poisson is not None:
            nu = float(poisson)
            if not -1.0 < nu <= 0.5:
                raise ValueError(f"poisson: must be in (-1, 0.5], got {poisson!r}")
            g = e / (2.0 * (1.0 + nu))
        else:
            g = _scalars("shear_modulus", shear_modulus, nb, what="bond")
        lam = _scalars("radius_ratio", radius_ratio, nb, what="bond")
        thresholds = _limits(nb, strain_max=strain_max, angle_max=angle_max)
        x = np.concatenate(self._x) if self._x else np.zeros((0, 3))
        radius = np.concatenate(self._radius)
        length = np.linalg.norm(x[lo] - x[hi], axis=1)
        if (length == 0).any():
            k = int(np.argmax(length == 0))
            raise ValueError(f"bonds: bond {self._bond_count + k} joins particles {lo[k]}, {hi[k]} at the same position")
        rbar = lam * np.minimum(radius[lo], radius[hi])
        area, inertia = np.pi * rbar**2, np.pi * rbar**4 / 4.0
        polar = 2.0 * inertia
        kn, ks, kb, kt = e * area / length, g * area / length, e * inertia / length, g * polar / length
        combined = critical_force is not None or critical_moment is not None
        strengths_given = np.isfinite(np.asarray(tensile_strength, float)).any() or np.isfinite(
            np.asarray(shear_strength, float)).any()  # fmt: skip
        crit = np.zeros((nb, 4))
        if combined:
            if strengths_given:
                raise ValueError("critical_force, critical_moment: the combined criterion replaces tensile_strength "
                                 "and shear_strength; give one or the other")  # fmt: skip
            fc = np.broadcast_to(np.asarray(critical_force if critical_force is not None else (np.inf, np.inf), float), (2,))
            mc = np.broadcast_to(np.asarray(critical_moment if critical_moment is not None else (np.inf, np.inf), float), (2,))
            for name, v in (("critical_force", fc), ("critical_moment", mc)):
                if not (v > 0).all() or np.isnan(v).any():
                    raise ValueError(f"{name}: both values must be > 0 (inf: never), got {v.tolist()}")
            crit[:] = [1.0 / fc[0], 1.0 / fc[1], 1.0 / mc[1], 1.0 / mc[0]]  # (F_n, F_s, M_b, M_t)
            form = 2
        else:
            sig, tau = _limits(nb, tensile_strength=tensile_strength, shear_strength=shear_strength)
            crit[:, 0] = 1.0 / (area * sig)
            crit[:, 1] = 1.0 / (area * tau)
            crit[:, 2] = rbar / (inertia * sig)
            crit[:, 3] = rbar / (polar * tau)
            form = 1
        first = self._bond_count
        self._bond_keys.append(keys)
        self._bonds.append((lo, hi, kn, ks, kb, *thresholds, np.full(nb, form, np.int8), kt, crit))
        self._bond_count += nb
        return np.arange(first, first + nb, dtype=np.int64)

    def finalize(self, backend="auto", dtype=np.float64, *, placement=True) -> Model:
        """Check the whole model, move it to ``backend`` and return the :class:`Model`.

        Builds the interaction families in the order gravity, pendulum, bonds, contacts,
        walls. Each bond is oriented by its reference geometry (end ``a`` has the
        lexicographically smaller initial position), so its quantities do not depend on
        the numbering. The builder is left as it is.

        Parameters
        ----------
        backend : {"auto", "cpu", "gpu"} or Backend, optional
            Where the arrays live and the kernels run (:func:`~granular.get_backend`).
            Default ``"auto"``.
        dtype : {numpy.float64, numpy.float32}, optional
            Float dtype of every array of the model and its states. Default float64.
        placement : bool, optional
            Check where the particles start: overlaps between particles (with contacts)
            and with walls and meshes. Default True. A run whose particle set changes
            (:mod:`granular.particles.feeds`) builds its model again with False: the
            particles of a running set press into each other and into the walls.

        Returns
        -------
        Model
            The model, on ``backend``; ``model.builder`` a copy of this builder as it
            was (what an edit of the particle set starts from), ``model.ids`` each
            particle's number (its index here).

        Raises
        ------
        ValueError
            No particles; a ``dtype`` other than float64 or float32; an unknown backend
            name; a bond repeated across :meth:`add_bonds` calls or of zero rest length;
            overlapping (without ``allow_initial_overlap``) or coincident particles when
            there are contacts; particles inside or behind a wall; ``set_contacts`` with
            neither ``kpp`` nor materials; a wall without stiffness; materials on some
            particles or walls but not all, or with ``kpp`` or ``search="all-pairs"``.
        BackendError
            ``backend="gpu"`` on a machine without a usable GPU.
        """
        if self._n == 0:
            raise ValueError("the model has no particles; add some with add_particles()")
        if self._setup is not None:  # a running model's set-up changed: the walls, meshes, gravity it has now
            model = configured(self, self._setup).finalize(backend, dtype, placement=placement)
            model.builder = self._copy()
            return model
        if np.dtype(dtype) not in (np.float64, np.float32):
            raise ValueError(f"dtype: must be float64 (default) or float32, got {np.dtype(dtype)}")
        dtype = np.dtype(dtype)
        be = resolve_backend(backend)
        cat = np.concatenate
        mass = cat(self._mass)
        replica = first_wall = None
        if self._replica_counts is not None:
            replica = np.repeat(np.arange(len(self._replica_counts), dtype=np.int32), self._replica_counts)
            first_wall = np.concatenate([[0], np.cumsum(self._replica_walls)]).astype(np.int64)
        forces = []
        if self._replica_gravity is not None:
            forces.append(UniformGravity(be, self._replica_gravity, replica))
        elif self._gravity is not None:
            forces.append(UniformGravity(be, self._gravity))
        if self._pendula:
            idx = cat([p[0] for p in self._pendula])
            vertical = cat([np.broadcast_to(p[3], (len(p[0]), 3)) for p in self._pendula])
            mg = mass[idx] * cat([p[2] for p in self._pendula])
            rho0 = cat([p[1] for p in self._pendula])
            forces.append(PendulumPotential(be, self._n, idx, rho0, mg, vertical, dtype=dtype))
        x0, q0 = cat(self._x), cat(self._q)
        period = self._period_rows()
        self._check_periodic(x0, cat(self._radius), 0.0)
        bonds = None
        if len(self._bond_keys) > 1:
            _check_duplicate_bonds(cat(self._bond_keys), 0)
        if self._bonds:
            cols = [cat([c[i] for c in self._bonds]) for i in range(10)]
            a, b = cols[0], cols[1]
            # Orient every bond by its reference geometry (end a has the lexicographically
            # smaller initial position), not by particle index, so that every bond quantity,
            # the bending rotation included, is computed the same way whatever the numbering.
            diff = min_image(x0[b] - x0[a], period)
            first = np.argmax(diff != 0, axis=1)
            flip = diff[np.arange(len(a)), first] < 0
            a, b = np.where(flip, b, a), np.where(flip, a, b)
            rest = np.linalg.norm(min_image(x0[a] - x0[b], period), axis=1)
            if (rest == 0).any():
                k = int(np.argmax(rest == 0))
                raise ValueError(
                    f"bonds: bond {k} (particles {a[k]}, {b[k]}) has zero rest length: the particles start at the same position"
                )
            bonds = Bonds(be, self._n, a, b, x0, q0, *cols[2:7], dtype=dtype, form=cols[7], kt=cols[8], crit=cols[9],
                          radius=cat(self._radius), period=period)  # fmt: skip
            forces.append(bonds)
        law, kernels, families = self._contact_families(be, dtype, bonds, replica, first_wall, period)
        forces += families
        for f in families:  # the box against the neighbour search's cutoff (its skin is known now)
            if getattr(f, "kind", None) == "contacts":
                self._check_periodic(x0, cat(self._radius), f.skin)
        if placement:
            self._check_placement(x0, cat(self._radius), contacts=self._kpp is not None or self._materials_used())
        model = Model(
            law=law,
            kernels=kernels,
            backend=be,
            dtype=np.dtype(dtype),
            mass=mass,
            inertia=cat(self._inertia),
            radius=cat(self._radius),
            forces=forces,
            initial=(x0, cat(self._v), q0, cat(self._omega)),
            bonds=bonds,
        )
        if period is not None:
            model.period = period
        if replica is not None:
            model.replica = replica
            model.replica_count = len(self._replica_counts)
        model.builder = self._copy()
        model.ids = np.arange(self._n, dtype=np.int64)
        return model

    def _copy(self) -> ModelBuilder:
        """A copy that later calls on either leave the other as it is (the containers
        are copied; the arrays in them are never changed in place: :meth:`_atomic`)."""
        out = ModelBuilder.__new__(ModelBuilder)
        out.__dict__.update({k: (v.copy() if isinstance(v, (list, dict)) else v) for k, v in vars(self).items()})
        out._in_atomic = False
        return out

    def _subset(self, keep) -> tuple[ModelBuilder, np.ndarray]:
        """A copy holding only the particles ``keep`` (a boolean mask over the
        particles), in their order, with the bonds between two kept particles; and the
        mask of the kept bonds (in the order of the model's bonds). Refused for a builder
        of replicas and for pendula on a removed particle."""
        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self._n,):
            raise ValueError(f"keep: expected a mask of shape ({self._n},), got {keep.shape}")
        if self._replica_counts is not None:
            raise ValueError("a model of replicas has a fixed particle layout: particles cannot be removed from it")
        new_index = np.cumsum(keep) - 1
        out = self._copy()
        cat = np.concatenate
        for name in ("_x", "_v", "_q", "_omega", "_mass", "_inertia", "_radius", "_mat"):
            arrays = getattr(self, name)
            setattr(out, name, [cat(arrays)[keep]] if arrays else [])
        out._n = int(keep.sum())
        pendula = []
        for idx, rho0, mg, vertical in self._pendula:
            if not keep[idx].all():
                raise ValueError(f"particle {int(idx[~keep[idx]][0])} hangs on a pendulum and cannot be removed")
            pendula.append((new_index[idx], rho0, mg, vertical))
        out._pendula = pendula
        bonds, keys, kept = [], [], []
        for call in self._bonds:
            a, b = call[0], call[1]
            ok = keep[a] & keep[b]
            kept.append(ok)
            if ok.any():
                lo, hi = new_index[a[ok]], new_index[b[ok]]
                bonds.append((lo, hi, *(c[ok] for c in call[2:])))
                keys.append((np.minimum(lo, hi).astype(np.int64) << 32) | np.maximum(lo, hi).astype(np.int64))
        out._bonds, out._bond_keys = bonds, keys
        out._bond_count = int(sum(len(k) for k in keys))
        return out, (cat(kept) if kept else np.zeros(0, dtype=bool))


