"""``ModelBuilder`` (host lists, easy to fill) → ``finalize(backend)`` → ``Model``.

``Model`` holds what does not change during a run, on one backend:

=============  ========  ===================================================
``mass``       (N,)      particle mass ``m`` [M], > 0
``inertia``    (N,)      scalar moment of inertia ``J`` [M L²], > 0
``radius``     (N,)      radius [L], > 0
``forces``     list      interaction families (:mod:`granular.particles.forces`)
``bonds``                the :class:`~granular.particles.forces.Bonds` family or ``None``
=============  ========  ===================================================

and the initial conditions, from which :meth:`Model.state` makes a fresh
:class:`~granular.particles.state.State`. Every input is checked when it is added; an error names
the argument, the particle and what is allowed.

Example::

    b = ModelBuilder()
    i = b.add_particle(x=[0, 0, 0], rotvec=[0, 2.35, 0], omega=[0.2, 0, 0.2])
    b.add_pendulum(i, rho0=[0, 0, 1], g=1.0)
    model = b.finalize("cpu")
    state = model.state()
"""

from __future__ import annotations

import numbers

import numpy as np

from kernels import contact_laws
from kernels.layout import DIAGNOSTICS, Dynamics, Particles

from .. import rotations
from ..backend import Backend, resolve_backend
from .forces import Bonds, ParticleContacts, PendulumPotential, UniformGravity, Walls
from .forces.bonds import empty_bond_args
from .forces.contacts import no_contact_args, no_wall_args
from .forces.fields import field_args
from .forces.laws import LAWS, MATERIAL_LAWS, VELOCITIES, hertz_law, material_law
from .forces.materials import PAIR_FIELDS, Material, check_material, pair_problems, sphere_mass
from .placement import overlap_problem, wall_problem
from .state import State

#: Tolerance on ``| |q| - 1 |`` for a quaternion given as orientation.
UNIT_QUATERNION_TOL = 1e-8


def _vectors(name, value, n, width=3, allow_broadcast=True):
    """``value`` as a finite float64 ``(n, width)`` array, or a ``ValueError`` naming ``name``."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {value!r} ({exc})") from None
    if a.ndim == 1 and allow_broadcast and a.shape == (width,):
        a = np.broadcast_to(a, (n, width)).copy()
    if a.shape != (n, width):
        raise ValueError(f"{name}: expected shape ({n}, {width}) or ({width},), got {a.shape}")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        if n == 1 and np.ndim(value) == 1:  # one vector, not a per-particle array
            raise ValueError(f"{name}: must be {width} finite numbers, got {a[0].tolist()}")
        raise ValueError(f"{name}: non-finite value for particle {int(np.argmax(bad))} of this call: {a[bad][0]}")
    return a


def _scalars(name, value, n, positive=True):
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {value!r} ({exc})") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected a scalar or shape ({n},), got {a.shape}")
    bad = ~np.isfinite(a) | ((a <= 0) if positive else False)
    if np.any(bad):
        k = int(np.argmax(bad))
        rule = "finite and > 0" if positive else "finite"
        raise ValueError(f"{name}: must be {rule}; particle {k} of this call has {float(a[k])!r}")
    return a


def _nonnegative(name, value, n, what="bond", allow_inf=False):
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected numbers, got {value!r} ({exc})") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected a scalar or shape ({n},), got {a.shape}")
    ok = (a >= 0) & (np.isfinite(a) | (allow_inf & (a == np.inf)))
    if not ok.all():
        k = int(np.argmax(~ok))
        rule = "> 0 (inf: never)" if allow_inf else "finite and >= 0"
        raise ValueError(f"{name}: must be {rule}; {what} {k} of this call has {float(a[k])!r}")
    return a


def _check_duplicate_bonds(keys, first) -> None:
    """``ValueError`` naming the first repeated pair among ``keys`` (``(a << 32) | b``)."""
    uniq, counts = np.unique(keys, return_counts=True)
    if (counts > 1).any():
        dup_key = uniq[np.argmax(counts > 1)]
        where = np.flatnonzero(keys == dup_key)
        i, j = int(dup_key) >> 32, int(dup_key) & 0xFFFFFFFF
        raise ValueError(f"bonds: bond {first + int(where[1])} duplicates bond {first + int(where[0])} "
                         f"(particles {i}, {j})")  # fmt: skip


def _orientations(n, orientation, alpha, rotvec):
    given = [(k, v) for k, v in (("orientation", orientation), ("alpha", alpha), ("rotvec", rotvec)) if v is not None]
    if len(given) > 1:
        raise ValueError(f"give at most one of orientation (quaternion), alpha (RRP), rotvec; got {[k for k, _ in given]}")
    if not given:
        q = np.zeros((n, 4))
        q[:, 0] = 1.0
        return q
    key, value = given[0]
    if key == "orientation":
        q = _vectors("orientation", value, n, width=4)
        norm = np.linalg.norm(q, axis=1)
        bad = np.abs(norm - 1.0) > UNIT_QUATERNION_TOL
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(
                f"orientation: must be a unit quaternion (q0, q1, q2, q3) with | |q| - 1 | <= "
                f"{UNIT_QUATERNION_TOL}; particle {k} of this call has |q| = {float(norm[k])!r}"
            )
        return q / norm[:, None]
    if key == "alpha":
        return rotations.quat_from_rrp(_vectors("alpha", value, n))
    return rotations.quat_from_rotvec(_vectors("rotvec", value, n))


class ModelBuilder:
    """Collect particles, bonds, contacts, walls and fields on the host, then build a :class:`Model`.

    Every input is checked when it is added (an error names the argument, the particle
    or bond, and what is allowed); :meth:`finalize` checks the whole (placement included:
    :mod:`granular.particles.placement`) and moves it to a backend as a :class:`Model`.
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
        self._bonds = []  # (a, b, ka, ks, km, strain_max, angle_max) arrays per call
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
        self._velocity = "predicted"
        self._replica_counts = None  # particles of each replica (a model of replicas)
        self._replica_walls = None  # walls of each replica
        self._replica_names = None  # what errors call each replica
        self._replica_kpp = None  # each replica's Hertz stiffness, where they differ
        self._replica_materials = None  # each replica's materials (same names), where they differ

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
        xa = np.array(x, dtype=np.float64)
        if xa.ndim != 2 or xa.shape[1] != 3:
            raise ValueError(f"x: expected shape (K, 3), got {xa.shape}")
        k = xa.shape[0]
        xa = _vectors("x", xa, k, allow_broadcast=False)
        self._x.append(xa)
        self._v.append(_vectors("v", v, k))
        self._omega.append(_vectors("omega", omega, k))
        self._q.append(_orientations(k, orientation, alpha, rotvec))
        radius = _scalars("radius", radius, k)
        mat = -1
        if material is not None:
            if material not in self._materials:
                raise ValueError(f"material: no material named {material!r}; defined: {sorted(self._materials)}")
            mat, m = self._materials[material]
            m_s, j_s = sphere_mass(m, radius)
            if inertia is None:  # a solid sphere of the mass it has: 2/5 m r²
                inertia = j_s if mass is None else 0.4 * _scalars("mass", mass, k) * radius * radius
            mass = m_s if mass is None else mass
        self._mass.append(_scalars("mass", 1.0 if mass is None else mass, k))
        self._inertia.append(_scalars("inertia", 1.0 if inertia is None else inertia, k))
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
        p = np.asarray(pairs)
        if p.ndim != 2 or p.shape[1] != 2 or (p.size and p.dtype.kind not in "iu"):
            raise ValueError(f"bonds: expected integer pairs of shape (B, 2), got shape {p.shape} dtype {p.dtype}")
        p = p.astype(np.int64)
        nb = len(p)
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
        _check_duplicate_bonds(keys, first)  # within this call; across calls at finalize()
        self._bond_keys.append(keys)
        stiff = [_nonnegative(name, val, nb) for name, val in (("ka", ka), ("ks", ks), ("km", km))]
        thresholds = [_nonnegative(n, v, nb, allow_inf=True) for n, v in (("strain_max", strain_max), ("angle_max", angle_max))]
        for name, t in zip(("strain_max", "angle_max"), thresholds):
            if (t == 0).any():
                raise ValueError(f"{name}: must be > 0 (inf: never); bond {int(np.argmax(t == 0))} of this call has 0.0")
        self._bonds.append((lo, hi, *stiff, *thresholds))
        self._bond_count += nb
        return np.arange(first, first + nb, dtype=np.int64)

    def add_material(self, name, young=None, poisson=0.3, density=1.0, restitution=1.0, friction=0.0,
                     rolling_friction=0.0, twisting_friction=0.0, *, stiffness=None, tangential_stiffness=None,
                     tangential_damping=0.0, surface_energy=0.0, damping=0.0) -> int:  # fmt: skip
        """Define a material for a contact law with materials; return its index.

        Particles (:meth:`add_particles`) and walls (:meth:`add_wall`) name it. Once any
        particle has a material, every contact follows the law of :meth:`set_contacts`
        (default the dissipative law ``"hertz-mindlin"``;
        :mod:`granular.particles.forces.laws`, ``docs/contacts.md``), and every particle
        and wall needs a material. Each law needs some of the fields: ``young`` for
        ``"hertz-mindlin"`` and ``"jkr"``, ``stiffness`` for ``"linear"``; the others have
        defaults.

        Parameters
        ----------
        name : str
            Non-empty name, not defined before.
        young : float
            Young's modulus ``E`` [M/(L T²)], > 0.
        poisson : float, optional
            Poisson's ratio ``ν`` [-], in (-1, 0.5]. Default 0.3.
        density : float, optional
            Density ``ρ`` [M/L³], > 0: the default mass and inertia of spheres of the
            material. Default 1.
        restitution : float, optional
            Coefficient of restitution ``e`` [-], in [0.01, 1] (1: elastic). Default 1.
        friction, rolling_friction, twisting_friction : float, optional
            Sliding, rolling and twisting friction coefficients ``μ``, ``μ_r``, ``μ_t``
            [-], >= 0. Default 0.
        stiffness, tangential_stiffness : float, optional
            The linear law's normal and tangential spring stiffnesses ``k_n``, ``k_t``
            [M/T²], > 0 (``k_t`` default ``2/7 k_n``).
        tangential_damping : float, optional
            The linear law's tangential dashpot as a fraction ``x_γt`` of the normal one,
            >= 0. Default 0.
        surface_energy : float, optional
            JKR's surface energy ``γ`` of one surface [M/T²], >= 0 (the work of adhesion
            is ``2γ``, the pull-off force ``3πγR*``). Default 0.
        damping : float, optional
            JKR's damping coefficient ``d`` [1/(L T)], >= 0: the normal dashpot is
            ``d m* a``. Default 0.

        Returns
        -------
        int
            Index of the material (0, 1, ... in the order of definition).

        Raises
        ------
        ValueError
            A bad or repeated name, or a value out of range (the message names the
            material and the field).
        """
        self._open("add_material")
        if not isinstance(name, str) or not name:
            raise ValueError(f"material name: must be a non-empty string, got {name!r}")
        if name in self._materials:
            raise ValueError(f"material {name!r}: defined twice")
        m = Material(young, poisson, density, restitution, friction, rolling_friction, twisting_friction,
                     stiffness=stiffness, tangential_stiffness=tangential_stiffness,
                     tangential_damping=tangential_damping, surface_energy=surface_energy, damping=damping)
        check_material(name, m)
        self._materials[name] = (len(self._materials), m)
        return len(self._materials) - 1

    def set_pair(self, a, b, **values) -> None:
        """Give the pair of materials ``a``, ``b`` its own restitution or friction
        coefficients in place of the mixing rule's geometric means.

        ``E*`` and ``G*`` still follow from the two materials. A second call for the same
        pair adds to (or replaces) the values of the first; ``a == b`` sets the values
        of contacts between two bodies of one material.

        Parameters
        ----------
        a, b : str
            Names of materials defined by :meth:`add_material`.
        **values : float
            Any of ``restitution`` (in [0.01, 1]; 1: elastic), ``friction``,
            ``rolling_friction``, ``twisting_friction`` (>= 0).

        Raises
        ------
        ValueError
            An unknown material or value name, no value, or a value out of range (the
            message names the pair and the field).

        Examples
        --------
        >>> b = ModelBuilder()
        >>> b.add_material("glass", 7e10, 0.25, 2500.0, restitution=0.9, friction=0.4)
        0
        >>> b.add_material("steel", 2e11, 0.3, 7800.0, restitution=0.9, friction=0.2)
        1
        >>> b.set_pair("glass", "steel", restitution=0.7, friction=0.15)
        """
        self._open("set_pair")
        for name in (a, b):
            if name not in self._materials:
                raise ValueError(f"pair ({a!r}, {b!r}): no material named {name!r}; defined: {sorted(self._materials)}")
        if not values:
            raise ValueError(f"pair ({a!r}, {b!r}): give at least one of {', '.join(PAIR_FIELDS)}")
        problems = pair_problems(values)
        if problems:
            field, msg = problems[0]
            raise ValueError(f"pair ({a!r}, {b!r}): {field}: {msg}")
        key = tuple(sorted((self._materials[a][0], self._materials[b][0])))
        self._pairs[key] = {**self._pairs.get(key, {}), **{k: float(v) for k, v in values.items()}}

    def set_contacts(self, kpp=None, bonded_contacts=True, search="cells", skin=None, velocity="predicted",
                     allow_initial_overlap=False, law=None) -> None:  # fmt: skip
        """Set the contact between particles (and the law at the walls).

        Paper 003's law (``law="hertz"``, the default with ``kpp``) is
        ``U^pp = (2/5) K^pp [1 - r/(r_i + r_j)]_+^{5/2}`` (the factor of (56) as
        ``docs/physics.md`` reads it). With materials (:meth:`add_material`) a law with
        materials acts instead (then ``kpp`` must be left out): ``"hertz-mindlin"`` (the
        default), ``"linear"`` or ``"jkr"`` (:mod:`granular.particles.forces.laws`); it acts
        even without this call, which then only sets the other options. :meth:`finalize`
        refuses particles that overlap at the start unless ``allow_initial_overlap`` (and
        coincident ones always: their contact has no direction). A second call replaces
        every setting of the first.

        Parameters
        ----------
        kpp : float, optional
            Contact stiffness ``K^pp`` [M L²/T²], >= 0; also the default stiffness of the
            walls. Required without materials.
        bonded_contacts : bool, optional
            Whether bonded pairs also interact by contact (default, as in the paper);
            ``False`` leaves bonded pairs out.
        search : {"cells", "all-pairs"}, optional
            ``"cells"`` (default): a neighbour list with the margin ``skin``;
            ``"all-pairs"``: every pair, no list (not with materials); see
            :class:`~granular.particles.forces.ParticleContacts`.
        skin : float, optional
            Neighbour-list margin [L], finite and >= 0. Default 0.4 × the largest radius.
        velocity : {"predicted", "half"}, optional
            The velocity the dissipative law's damping and friction see
            (``docs/contacts.md``). Default ``"predicted"``.
        allow_initial_overlap : bool, optional
            Accept particles that overlap at the start. Default ``False``.
        law : {"hertz", "hertz-mindlin", "linear", "jkr"}, optional
            The contact law (default: ``"hertz"`` with ``kpp``, ``"hertz-mindlin"`` with
            materials).

        Raises
        ------
        ValueError
            ``kpp`` not finite and >= 0, or an unknown ``search``, ``velocity`` or
            ``law``, or a ``skin`` not finite and >= 0.
        """
        self._open("set_contacts")
        if law is not None and law not in LAWS:
            raise ValueError(f"law: must be one of {', '.join(LAWS)}, got {law!r}")
        if velocity not in VELOCITIES:
            raise ValueError(f"velocity: must be one of {sorted(VELOCITIES)}, got {velocity!r}")
        self._velocity = velocity
        self._contacts_set = True
        self._allow_overlap = bool(allow_initial_overlap)
        self._kpp = None if kpp is None else float(_nonnegative("kpp", kpp, 1, what="value")[0])
        self._bonded_contacts = bool(bonded_contacts)
        if search not in ("cells", "all-pairs"):
            raise ValueError(f"search: must be 'cells' or 'all-pairs', got {search!r}")
        if skin is not None and (isinstance(skin, bool) or not isinstance(skin, numbers.Real)
                                 or not (np.isfinite(skin) and skin >= 0)):  # fmt: skip
            raise ValueError(f"skin: must be finite and >= 0, got {skin!r}")
        self._contact_search = (search, skin)
        self._contact_law = law

    def add_wall(self, normal, offset=0.0, k=None, material=None, allow_initial_overlap=False) -> int:
        """Add a planar wall ``n·x = offset``; return its id.

        ``n = normal/|normal|`` points into the allowed side. Without materials the wall
        acts by the contact law (56)-(57) with the distance of the centre from the plane
        in place of ``r`` and the particle's radius as the reach (``docs/physics.md``);
        with materials, by the dissipative law. :meth:`finalize` refuses particles that
        start inside or behind the wall unless ``allow_initial_overlap``.

        Parameters
        ----------
        normal : array_like, (3,) float
            Normal of the plane [-], finite and non-zero (normalised here).
        offset : float, optional
            Offset ``c`` of the plane ``n·x = c`` along the unit normal [L]. Default 0.
        k : float, optional
            Stiffness [M L²/T²], >= 0. Default: the contact stiffness ``kpp`` of
            :meth:`set_contacts` as it is at :meth:`finalize` (an error there if there is
            none and no materials).
        material : str, optional
            The wall's material under the dissipative law (:meth:`add_material`);
            required with materials, refused without.
        allow_initial_overlap : bool, optional
            Accept particles that start inside or behind this wall. Default ``False``.

        Returns
        -------
        int
            Id of the wall (0, 1, ... in the order of the calls).

        Raises
        ------
        ValueError
            ``normal`` not 3 finite numbers or of zero length, ``offset`` not finite,
            ``k`` not finite and >= 0, or an unknown ``material``; the message names the
            wall.
        """
        self._open("add_wall")
        wid = len(self._walls)
        mat = -1
        if material is not None:
            if material not in self._materials:
                raise ValueError(f"wall {wid}: material: no material named {material!r}; defined: "
                                 f"{sorted(self._materials)}")  # fmt: skip
            mat = self._materials[material][0]
        try:
            nrm = np.asarray(normal, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"wall {wid}: normal must be 3 numbers, got {normal!r}") from None
        if nrm.shape != (3,) or not np.isfinite(nrm).all():
            raise ValueError(f"wall {wid}: normal must be 3 finite numbers, got {normal!r}")
        length = float(np.linalg.norm(nrm))
        if length == 0.0:
            raise ValueError(f"wall {wid}: normal has zero length")
        off = float(offset)
        if not np.isfinite(off):
            raise ValueError(f"wall {wid}: offset must be finite, got {offset!r}")
        kk = None if k is None else float(_nonnegative(f"wall {wid}: k", k, 1, what="value")[0])
        self._walls.append((nrm / length, off, kk, mat))
        self._wall_overlap.append(bool(allow_initial_overlap))
        return wid

    def finalize(self, backend="auto", dtype=np.float64) -> Model:
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

        Returns
        -------
        Model
            The model, on ``backend``.

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
        bonds = None
        if len(self._bond_keys) > 1:
            _check_duplicate_bonds(cat(self._bond_keys), 0)
        if self._bonds:
            cols = [cat([c[i] for c in self._bonds]) for i in range(7)]
            a, b = cols[0], cols[1]
            # Orient every bond by its reference geometry (end a has the lexicographically
            # smaller initial position), not by particle index, so that every bond quantity,
            # the bending rotation included, is computed the same way whatever the numbering.
            diff = x0[b] - x0[a]
            first = np.argmax(diff != 0, axis=1)
            flip = diff[np.arange(len(a)), first] < 0
            a, b = np.where(flip, b, a), np.where(flip, a, b)
            rest = np.linalg.norm(x0[a] - x0[b], axis=1)
            if (rest == 0).any():
                k = int(np.argmax(rest == 0))
                raise ValueError(
                    f"bonds: bond {k} (particles {a[k]}, {b[k]}) has zero rest length: the particles start at the same position"
                )
            bonds = Bonds(be, self._n, a, b, x0, q0, *cols[2:], dtype=dtype)
            forces.append(bonds)
        dissipative = self._law(be, dtype)
        if self._kpp is None and dissipative is None and self._contacts_set:
            raise ValueError("set_contacts: give kpp (the Hertz law U^pp), or materials for the dissipative law")
        ks = []
        if self._walls:
            # a wall without k takes its replica's contact stiffness
            wall_kpp = [self._kpp] * len(self._walls)
            if self._replica_kpp is not None:
                wall_kpp = np.repeat(self._replica_kpp, self._replica_walls).tolist()
            for wid, (_, _, k, _) in enumerate(self._walls):
                if k is None and self._kpp is None and dissipative is None:
                    raise ValueError(f"wall {wid}: no stiffness k given and no contact stiffness set (set_contacts)")
                ks.append((wall_kpp[wid] or 0.0) if k is None else k)
        law = dissipative
        if law is None and (self._kpp is not None or self._walls):
            law = hertz_law(be, self._n, self._kpp, ks, replica=replica, first_wall=first_wall,
                            kpp_replicas=self._replica_kpp, dtype=dtype)  # fmt: skip
        kernels = be.kernels.for_law(law.kernel if law is not None else contact_laws.hertz)
        if self._kpp is not None or dissipative is not None:
            search, skin = self._contact_search
            radius_dev = be.asarray(cat(self._radius), dtype=dtype)
            kpp = self._kpp or 0.0
            if self._replica_kpp is not None:
                kpp = float(np.max(self._replica_kpp))
            forces.append(ParticleContacts(be, self._n, law, kpp, bonds, self._bonded_contacts, search, skin,
                                           radius_dev, replica=replica, kernels=kernels))  # fmt: skip
        if self._walls:
            planes = [np.concatenate([n, [c]]) for n, c, _, _ in self._walls]
            forces.append(Walls(be, self._n, planes, ks, dtype=dtype, mat=law.wall_mat_host, first=first_wall,
                                replica=replica))  # fmt: skip
        self._check_placement(x0, cat(self._radius), contacts=self._kpp is not None or dissipative is not None)
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
        if replica is not None:
            model.replica = replica
            model.replica_count = len(self._replica_counts)
        return model


    def _check_placement(self, x, radius, contacts) -> None:
        """Overlapping or coincident particles (with contacts) and particles inside walls,
        as scene files check them (:mod:`granular.particles.placement`); with replicas,
        within each replica (replicas may overlap each other)."""
        if self._replica_counts is None:
            self._check_system(x, radius, contacts, range(len(self._walls)), "")
            return
        lo = w0 = 0
        for r, (n, nw) in enumerate(zip(self._replica_counts, self._replica_walls)):
            self._check_system(x[lo:lo + n], radius[lo:lo + n], contacts, range(w0, w0 + nw),
                               f"replica {self._replica_names[r]}: ", first_wall=w0)  # fmt: skip
            lo += n
            w0 += nw

    def _check_system(self, x, radius, contacts, walls, where, first_wall=0) -> None:
        """The checks of one system (a replica: its particles ``x``, its walls, named from
        ``first_wall`` on as in its own builder)."""
        problem = None
        if contacts:
            problem = overlap_problem(x, radius, self._allow_overlap,
                                      "set_contacts(..., allow_initial_overlap=True)")  # fmt: skip
        for wid in walls:
            n, c, _, _ = self._walls[wid]
            local = wid - first_wall
            if problem is None and not self._wall_overlap[wid]:
                problem = wall_problem(n, c, x, radius, f"add_wall(..., allow_initial_overlap=True) for wall {local}")
                if problem is not None:
                    problem = (problem[0], f"wall {local}: {problem[1]}")
        if problem is not None:
            raise ValueError(where + problem[1])

    def _law(self, be, dtype):
        """The law with materials when any particle has a material (then all must, and
        every wall), else ``None`` (paper 003's law, or no contacts)."""
        mat = np.concatenate(self._mat)
        name = self._contact_law
        if not (mat >= 0).any():
            for wid, w in enumerate(self._walls):
                if w[3] >= 0:
                    raise ValueError(f"wall {wid}: has a material but no particle has one; give the particles "
                                     "materials (the dissipative law), or leave the wall's out")  # fmt: skip
            if self._pairs or self._replica_pairs:
                raise ValueError("set_pair: values were given to pairs of materials but no particle has a material")
            if name is not None and name != "hertz":
                raise ValueError(f"law: the {name} contact law needs materials (add_material, and a material for "
                                 "every particle and wall)")  # fmt: skip
            return None
        if name == "hertz":
            raise ValueError("law: paper 003's hertz law takes kpp, not materials; choose a law with materials "
                             f"({', '.join(MATERIAL_LAWS)}) or leave the particles' materials out")  # fmt: skip
        name = name or "hertz-mindlin"
        spec = MATERIAL_LAWS[name]
        if (mat < 0).any():
            i = int(np.argmax(mat < 0))
            raise ValueError(f"particle {i} has no material; with materials every particle needs one (the contact "
                             "law acts between every pair)")  # fmt: skip
        for wid, w in enumerate(self._walls):
            if w[3] < 0:
                raise ValueError(f"wall {wid}: material: with materials every wall needs one")
        if self._kpp is not None:
            raise ValueError(f"kpp: with materials the {name} law replaces U^pp; leave kpp out")
        names = sorted(self._materials, key=lambda k: self._materials[k][0])
        mats = [self._materials[k][1] for k in names]
        for table in [mats] + list(self._replica_materials or []):
            for k, m in zip(names, table):
                check_material(k, m, spec.needs)
        for given in [self._pairs] + list(self._replica_pairs or []):
            for (a, b), values in given.items():
                bad = sorted(set(values) - set(spec.pair_fields))
                if bad:
                    raise ValueError(f"pair ({names[a]!r}, {names[b]!r}): {bad[0]}: not a value of a pair under the "
                                     f"{name} law; allowed: {', '.join(spec.pair_fields)}")  # fmt: skip
        wall_mat = np.asarray([w[3] for w in self._walls], dtype=np.int64)
        per, per_pairs = self._replica_materials, self._replica_pairs
        if per is not None or per_pairs is not None:  # replica r's materials are r * M + m (a block of pair rows each)
            count = len(self._replica_counts)
            per = per if per is not None else [mats] * count
            m = len(names)
            mat = mat + m * np.repeat(np.arange(count), self._replica_counts)
            wall_mat = wall_mat + m * np.repeat(np.arange(count), self._replica_walls)
        return material_law(name, be, mats, names, mat, wall_mat, velocity=self._velocity, dtype=dtype,
                            per_replica=per, pairs=self._pairs, per_replica_pairs=per_pairs)  # fmt: skip


class Model:
    """Fixed per-particle parameters and interaction families on one backend.

    Made by :meth:`ModelBuilder.finalize`, which checks the inputs; :meth:`state` makes a
    fresh :class:`~granular.particles.state.State` at the initial conditions.

    The attributes (arrays on ``backend``, of float dtype ``dtype``):

    =============  ==============  =======================================================
    ``n``          int             number of particles ``N``
    ``n_bonds``    int             number of bonds ``B``
    ``mass``       (N,) float      particle mass ``m`` [M]
    ``inertia``    (N,) float      scalar moment of inertia ``J`` [M L²]
    ``radius``     (N,) float      radius [L]
    ``forces``     list            interaction families (:mod:`granular.particles.forces`), in
                                   the order gravity, pendulum, bonds, contacts, walls
    ``bonds``                      the :class:`~granular.particles.forces.Bonds` family or ``None``
    ``law``                        the contact law of the contacts and walls
                                   (:class:`~granular.particles.forces.laws.ContactLaw`), or
                                   ``None`` without either
    ``kernels``                    the step kernels, compiled for the law
                                   (:func:`kernels.cpu.for_law`)
    ``backend``                    the :class:`~granular.backend.Backend` of every array
    ``dtype``      numpy.dtype     float64 (default) or float32
    =============  ==============  =======================================================

    Parameters
    ----------
    backend : Backend
        The backend of every array.
    dtype : {numpy.float64, numpy.float32}
        Float dtype of the arrays.
    mass, inertia, radius : array_like, (N,) float
        Masses [M], scalar moments of inertia [M L²] and radii [L].
    forces : list
        Interaction families (:mod:`granular.particles.forces`).
    initial : tuple of ndarray
        Host initial conditions ``(x, v, q, omega)``: (N, 3) [L], (N, 3) [L/T], (N, 4)
        unit quaternions [-], (N, 3) spatial angular velocities [1/T].
    bonds : Bonds, optional
        The bond family (also in ``forces``), or ``None``.
    law : ContactLaw, optional
        The contact law, or ``None`` (no contacts, no walls).
    kernels : namespace, optional
        The step kernels for ``law`` (default: compiled for it, or for paper 003's law).
    """

    def __init__(self, backend: Backend, dtype, mass, inertia, radius, forces, initial, bonds=None, law=None,
                 kernels=None):  # fmt: skip
        xp = backend.xp
        self.law = law
        if kernels is None:
            kernels = backend.kernels.for_law(law.kernel if law is not None else contact_laws.hertz)
        self.kernels = kernels
        self.bonds = bonds
        self.n_bonds = 0 if bonds is None else bonds.count
        self.backend = backend
        self.dtype = np.dtype(dtype)
        self.n = len(mass)
        self.mass = xp.asarray(mass, dtype=dtype)
        self.inertia = xp.asarray(inertia, dtype=dtype)
        self.radius = xp.asarray(radius, dtype=dtype)
        self.forces = list(forces)
        self._initial = initial  # host arrays (x, v, q, omega)
        self.replica = None  # (N,) int32, each particle's replica, in a model of replicas (ModelBuilder.replicas)
        self.replica_count = 0
        self._static_args = None
        self._diag_rows = None
        self._zeros = None

    def state(self) -> State:
        """Make a new state at the model's initial conditions (forces not yet evaluated).

        Returns
        -------
        State
            Copies of the initial ``x``, ``v``, ``q``, ``omega`` on the model's backend in
            its dtype; zero forces (``forces_valid`` false), intact bonds, ``time = 0``,
            ``step = 0``; with a contact law that keeps history, no history (the wall
            contacts' (N, W, H) and a neighbour list without any); with one that
            dissipates, zero dissipated energies (N, 4). Every call gives an independent
            state.
        """
        x, v, q, omega = self._initial
        walls = self.force("walls")
        history = self.law.history if self.law is not None else 0
        n_walls = 0 if walls is None else walls.per_particle
        state = State.allocate(self.backend.xp, self.n, self.dtype, x, v, q, omega, self.n_bonds,
                               walls=n_walls if history else 0, history=history,
                               dissipation=self.law is not None and self.law.dissipates)  # fmt: skip
        contacts = self.force("contacts")
        state.neighbors = contacts.new_list() if contacts is not None else None
        return state

    def force(self, kind: str):
        """Return the interaction family of ``kind``, or ``None``.

        Parameters
        ----------
        kind : {"gravity", "pendulum", "bonds", "contacts", "walls"}
            The family's ``kind``.

        Returns
        -------
        object or None
            The family (a class of :mod:`granular.particles.forces`), ``None`` if the
            model has none of that kind.
        """
        for f in self.forces:
            if f.kind == kind:
                return f
        return None

    # ------------------------------------------------------------ kernel arguments

    def kernel_args(self, cfg=None) -> dict:
        """Internal plumbing of the step loop: the kernels' argument bundles.

        The bundles of :mod:`kernels.layout` (device views): ``par``, ``bonds``,
        ``walls``, ``fields`` (fixed), ``contacts`` and ``grid`` (``cfg``'s neighbour list:
        a state's own, new arrays after a regrow)."""
        be, dt = self.backend, self.dtype
        if self._static_args is None:
            dev = be.kernels.to_device
            bonds = self.bonds.kernel_args() if self.bonds is not None else empty_bond_args(be, self.n, dt)
            walls = self.force("walls")
            self._static_args = {
                "par": Particles(dev(self.mass), dev(self.inertia), dev(self.radius)),
                "bonds": bonds,
                "walls": walls.kernel_args() if walls is not None else no_wall_args(be, dt),
                "fields": field_args(be, self.n, self.force("gravity"), self.force("pendulum"), dt),
            }
        contacts = self.force("contacts")
        if contacts is not None:
            pair = contacts.kernel_args(cfg)
        else:
            pair = no_contact_args(be, dt, self.law.args() if self.law is not None else None)
        return dict(self._static_args, contacts=pair[0], grid=pair[1])

    def neighbors_of(self, cfg):
        """The neighbour list of ``cfg`` (a state's own; the contact family's scratch list
        for another configuration), or ``None`` without one."""
        contacts = self.force("contacts")
        return contacts.list_of(cfg) if contacts is not None else None

    def dynamics(self, cfg, step=False) -> Dynamics:
        """Internal plumbing of the step loop: the ``Dynamics`` bundle of ``cfg``.

        ``cfg`` is a state or configuration (an object with ``x``, ``q``, ``F``, ``RM``,
        ``broken`` and optionally ``v``, ``omega``, ``released``, ``wall_springs``,
        ``dissipated``, ``neighbors``; missing velocities count as zero, missing history
        as none). With a law that reads velocities, ``step``: the bundle of the step loop
        (the law's own ``vp``, ``wp``, written by the advance pass); else the force pass
        sees ``v`` and ``Ω`` themselves."""
        dev = self.backend.kernels.to_device
        xp = self.backend.xp
        if self._zeros is None:
            self._zeros = (xp.zeros((self.n, 3), dtype=self.dtype), xp.zeros(self.n_bonds, dtype=self.dtype))
        v = getattr(cfg, "v", None)
        omega = getattr(cfg, "omega", None)
        released = getattr(cfg, "released", None)
        v = self._zeros[0] if v is None else v
        omega = self._zeros[0] if omega is None else omega
        law = self.law_arrays(cfg)
        if self.law is not None and self.law.vp is not None:
            vp, wp = (self.law.vp, self.law.wp) if step else (v, omega)
        else:
            vp = wp = law["none3"]
        return Dynamics(
            dev(cfg.x), dev(v), dev(cfg.q), dev(omega), dev(cfg.F), dev(cfg.RM), dev(cfg.broken),
            dev(self._zeros[1] if released is None else released), dev(vp), dev(wp), dev(law["hist"]),
            dev(law["live"]), dev(law["whist"]), dev(law["dissip"]), dev(law["nbr"]), dev(law["count"]), dev(law["x_ref"]),
        )  # fmt: skip

    def law_arrays(self, cfg=None) -> dict:
        """Internal plumbing of the step loop: the contact law's arrays of a ``Dynamics`` bundle.

        One-row or empty placeholders where the law keeps no history and dissipates
        nothing; else ``cfg``'s neighbour list's ``nbr``, ``count``, ``x_ref``, ``hist``,
        ``live``, and ``cfg``'s ``wall_springs`` and ``dissipated``."""
        xp = self.backend.xp
        if getattr(self, "_law_none", None) is None:
            dt = self.dtype
            self._law_none = {"none3": xp.zeros((0, 3), dt), "hist": xp.zeros((0, 1, 1), dt),
                              "live": xp.zeros((0, 1), np.uint8),
                              "whist": xp.zeros((0, 0, 1), dt), "dissip": xp.zeros((0, 4), dt),
                              "nbr": xp.zeros((0, 1), np.int32), "count": xp.zeros(0, np.int32),
                              "x_ref": xp.zeros((0, 3), dt)}  # fmt: skip
        out = dict(self._law_none)
        law = self.law
        if law is None:
            return out
        walls = self.force("walls")
        if law.history:
            nl = self.neighbors_of(cfg)
            if nl is not None:
                out.update(nbr=nl.nbr, count=nl.count, x_ref=nl.x_ref, hist=nl.hist, live=nl.live)
            ws = getattr(cfg, "wall_springs", None)
            if ws is None or ws.shape[0] != self.n:
                ws = xp.zeros((self.n, 0 if walls is None else walls.per_particle, law.history), self.dtype)
            out["whist"] = ws
        if law.dissipates:
            ds = getattr(cfg, "dissipated", None)
            if ds is None or ds.shape[0] != self.n:
                ds = xp.zeros((self.n, 4), self.dtype)
            out["dissip"] = ds
        return out

    def accumulate_family(self, family: int, cfg) -> None:
        """Internal plumbing of the step loop: add one family's force and moment at ``cfg`` to ``cfg.F``, ``cfg.RM``."""
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        kern.family_forces(family, self.dynamics(cfg), a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"])

    # ----------------------------------------------------------------- diagnostics

    def diagnostics_rows(self, cfg):
        """Internal plumbing of the step loop: per-particle diagnostics at ``cfg``.

        A backend array (N, len(DIAGNOSTICS)) in the model's dtype: kinetic energies,
        potential energies by kind, momenta, broken bonds and released energy
        (:data:`kernels.layout.DIAGNOSTICS`). A neighbour list is brought up to date for
        ``cfg.x`` first."""
        contacts = self.force("contacts")
        if contacts is not None:
            contacts.ensure_list(cfg)
        if self._diag_rows is None:
            self._diag_rows = self.backend.xp.zeros((self.n, len(DIAGNOSTICS)), dtype=self.dtype)
        a = self.kernel_args(cfg)
        kern = self.kernels
        kern.set_stream(0)
        kern.diagnostics(self.dynamics(cfg), a["par"], a["bonds"], a["contacts"], a["walls"], a["fields"],
                         kern.to_device(self._diag_rows))  # fmt: skip
        return self._diag_rows

    def diagnostics(self, cfg) -> dict:
        """Internal plumbing of the step loop: totals over particles of :meth:`diagnostics_rows`.

        A dict of host floats (one read-back), summed in float64."""
        rows = self.diagnostics_rows(cfg)
        sums = self.backend.to_host(rows.sum(axis=0, dtype=np.float64))
        return {name: float(sums[k]) for k, name in enumerate(DIAGNOSTICS)}

    def family_energies(self, keys, cfg) -> dict:
        """Internal plumbing of the step loop: the totals of :meth:`diagnostics` named by ``keys``."""
        d = self.diagnostics(cfg)
        return {k: d[k] for k in keys}

    def potential_energies(self, cfg) -> dict:
        """Internal plumbing of the step loop: ``U_<kind>`` of every family the model has, at ``cfg``."""
        d = self.diagnostics(cfg)
        return {k: d[k] for f in self.forces for k in f.energy_keys}

    def __repr__(self) -> str:
        kinds = ", ".join(f.kind for f in self.forces) or "none"
        return f"Model(N={self.n}, backend={self.backend.name}, dtype={self.dtype}, forces: {kinds})"
