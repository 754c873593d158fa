"""Geometry helpers that fill a :class:`~granular.particles.builder.ModelBuilder`: particle-binder
solids from the papers and lattices for large scenes."""

from __future__ import annotations

import math

import numpy as np

from ..errors import PackingError
from .builder import ModelBuilder
from .forces.meshes import TriangleMesh


def ring_positions(n_p: int, ring_diameter: float, center=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)) -> np.ndarray:
    """``n_p`` points evenly on a circle of diameter ``ring_diameter`` about ``center``.

    The circle lies in the plane with unit normal ``normal``. The first point lies along
    the in-plane direction closest to ``-e1`` (towards a wall at lower ``x``), so for
    the default normal particle 0 is the one nearest a wall with normal ``e1`` (for a
    normal along ``e1``, along ``e2``); the others follow counter-clockwise about
    ``normal``.

    Parameters
    ----------
    n_p : int
        Number of points, >= 3.
    ring_diameter : float
        Diameter of the circle [L], > 0.
    center : array_like, (3,) float, optional
        Centre of the circle [L]. Default the origin.
    normal : array_like, (3,) float, optional
        Normal of the ring's plane [-], non-zero (normalised here). Default ``e3``.

    Returns
    -------
    ndarray, (n_p, 3) float64
        The points [L].

    Raises
    ------
    ValueError
        ``n_p < 3``, ``ring_diameter`` not > 0 or a zero ``normal``.
    """
    if n_p < 3:
        raise ValueError(f"n_p: a ring needs at least 3 particles, got {n_p}")
    if not ring_diameter > 0:
        raise ValueError(f"ring_diameter: must be > 0, got {ring_diameter}")
    nrm = np.asarray(normal, dtype=np.float64)
    if np.linalg.norm(nrm) == 0:
        raise ValueError("normal: has zero length")
    nrm = nrm / np.linalg.norm(nrm)
    e1 = np.array([-1.0, 0.0, 0.0])
    u = e1 - (e1 @ nrm) * nrm
    if np.linalg.norm(u) < 1e-12:  # ring plane perpendicular to e1
        u = np.array([0.0, 1.0, 0.0]) - nrm[1] * nrm
    u /= np.linalg.norm(u)
    w = np.cross(nrm, u)
    phi = 2.0 * math.pi * np.arange(n_p) / n_p
    r = 0.5 * ring_diameter
    return np.asarray(center, dtype=np.float64) + r * (np.cos(phi)[:, None] * u + np.sin(phi)[:, None] * w)


def add_torus(builder, n_p=80, ring_diameter=3.0, center=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0),
              velocity=(0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0), mass=1.0, inertia=1.0,
              ka=200.0, ks=200.0, km=10.0, strain_max=np.inf, angle_max=np.inf, bonded=True,
              material=None):  # fmt: skip
    """Add the particle-binder torus of paper 003, Sect. 4.1 to ``builder``.

    A closed chain of ``n_p`` spheres of diameter ``D_p = D_t sin(π/n_p)`` (neighbours
    touch) on a ring of diameter ``D_t = ring_diameter``, placed by
    :func:`ring_positions`, each bonded to its two neighbours (unless ``bonded`` is
    false): the ``k``-th bond joins spheres ``k`` and ``k + 1`` of the ring (the last
    one closes it).

    Parameters
    ----------
    builder : ModelBuilder
        The builder to add to.
    n_p : int, optional
        Number of spheres ``N_p``, >= 3. Default 80.
    ring_diameter : float, optional
        Ring diameter ``D_t`` [L], > 0. Default 3.
    center : array_like, (3,) float, optional
        Centre of the ring [L]. Default the origin.
    normal : array_like, (3,) float, optional
        Normal of the ring's plane [-]. Default ``e3``.
    velocity : array_like, (3,) or (n_p, 3) float, optional
        Velocities [L/T]. Default zero.
    omega : array_like, (3,) or (n_p, 3) float, optional
        Spatial angular velocities [1/T]. Default zero.
    mass : float, optional
        Mass of each particle [M]. Default 1 (also with ``material``: given explicitly,
        it is not taken from the density).
    inertia : float, optional
        Scalar moment of inertia of each particle [M L²]. Default 1 (likewise).
    ka, ks, km : float, optional
        Axial, shear and bending/torsion bond stiffnesses ``K^a``, ``K^s``, ``K^m``
        [M L²/T²] (:meth:`~granular.particles.builder.ModelBuilder.add_bonds`); defaults
        200, 200, 10 as in paper 003, Sect. 4.1.
    strain_max : float, optional
        Bond breakage threshold on ``|r/r0 - 1|`` [-]. Default ``inf`` (never).
    angle_max : float, optional
        Bond breakage threshold on the relative rotation angle [rad]. Default ``inf``.
    bonded : bool, optional
        Bond the neighbours. Default ``True``.
    material : str, optional
        Material of the spheres (:meth:`~granular.particles.builder.ModelBuilder.add_material`).

    Returns
    -------
    particle_ids : ndarray, (n_p,) int64
        Indices of the spheres, in ring order.
    bond_ids : ndarray, (n_p,) int64
        Ids of the bonds (empty, (0,), when ``bonded`` is false).
    D_p : float
        Sphere diameter [L].

    Raises
    ------
    ValueError
        As :func:`ring_positions` and the builder's methods; the builder is then left as
        it was (no sphere and no bond of the torus stays).
    """
    x = ring_positions(n_p, ring_diameter, center, normal)
    d_p = ring_diameter * math.sin(math.pi / n_p)
    with builder._atomic():  # a bad bond value takes the spheres out again
        ids = builder.add_particles(x, v=velocity, omega=omega, mass=mass, inertia=inertia, radius=0.5 * d_p,
                                    material=material)  # fmt: skip
        bonds = np.zeros(0, dtype=np.int64)
        if bonded:
            pairs = np.stack([ids, np.roll(ids, -1)], axis=1)
            bonds = builder.add_bonds(pairs, ka=ka, ks=ks, km=km, strain_max=strain_max, angle_max=angle_max)
    return ids, bonds, d_p


def lattice_bonds(shape) -> np.ndarray:
    """Nearest-neighbour pairs of a simple-cubic lattice numbered x fastest.

    Particle ``(i, j, k)`` is ``i + nx (j + ny k)``, as in :func:`lattice_positions`.

    Parameters
    ----------
    shape : sequence of 3 int
        ``(nx, ny, nz)``, particles along each axis.

    Returns
    -------
    ndarray, (B, 2) int64
        Particle pairs, first those along x, then y, then z (each with the smaller
        index first); ``B = (nx-1) ny nz + nx (ny-1) nz + nx ny (nz-1)``. Indices start
        at 0: add the first particle's index to bond a lattice added later.
    """
    nx, ny, nz = (int(s) for s in shape)
    idx = np.arange(nx * ny * nz, dtype=np.int64).reshape(nz, ny, nx)
    pairs = [
        np.stack([idx[:, :, :-1].ravel(), idx[:, :, 1:].ravel()], axis=1),
        np.stack([idx[:, :-1, :].ravel(), idx[:, 1:, :].ravel()], axis=1),
        np.stack([idx[:-1, :, :].ravel(), idx[1:, :, :].ravel()], axis=1),
    ]
    return np.concatenate(pairs)


def lattice_positions(shape, spacing=1.0, origin=(0.0, 0.0, 0.0)) -> np.ndarray:
    """Centres of a simple-cubic lattice, numbered x fastest.

    Parameters
    ----------
    shape : sequence of 3 int
        ``(nx, ny, nz)``, particles along each axis.
    spacing : float, optional
        Lattice spacing [L]. Default 1.
    origin : array_like, (3,) float, optional
        Centre of particle ``(0, 0, 0)`` [L]. Default the origin.

    Returns
    -------
    ndarray, (nx ny nz, 3) float64
        Centres [L]: particle ``i + nx (j + ny k)`` at ``origin + spacing (i, j, k)``.
    """
    nx, ny, nz = (int(s) for s in shape)
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    return np.asarray(origin, dtype=np.float64) + spacing * np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1)


def add_block(builder, shape, spacing=1.0, origin=(0.0, 0.0, 0.0), velocity=(0.0, 0.0, 0.0), mass=1.0, inertia=1.0,
              ka=200.0, ks=200.0, km=10.0, strain_max=np.inf, angle_max=np.inf, material=None):  # fmt: skip
    """Add a bonded simple-cubic block of touching spheres (diameter ``spacing``) to ``builder``.

    Particles are numbered x fastest (:func:`lattice_positions`), bonds join nearest
    neighbours (:func:`lattice_bonds`).

    Parameters
    ----------
    builder : ModelBuilder
        The builder to add to.
    shape : int or sequence of 3 int
        ``(nx, ny, nz)``, spheres along each axis; an int ``n`` for ``(n, n, n)``.
    spacing : float, optional
        Lattice spacing and sphere diameter [L]. Default 1.
    origin : array_like, (3,) float, optional
        Centre of the first sphere [L]. Default the origin.
    velocity : array_like, (3,) float, optional
        Velocity of every sphere [L/T]. Default zero.
    mass : float, optional
        Mass of each particle [M]. Default 1 (also with ``material``: given explicitly,
        it is not taken from the density).
    inertia : float, optional
        Scalar moment of inertia of each particle [M L²]. Default 1 (likewise).
    ka, ks, km : float, optional
        Axial, shear and bending/torsion bond stiffnesses ``K^a``, ``K^s``, ``K^m``
        [M L²/T²] (:meth:`~granular.particles.builder.ModelBuilder.add_bonds`); defaults
        200, 200, 10 as in paper 003, Sect. 4.1.
    strain_max : float, optional
        Bond breakage threshold on ``|r/r0 - 1|`` [-]. Default ``inf`` (never).
    angle_max : float, optional
        Bond breakage threshold on the relative rotation angle [rad]. Default ``inf``.
    material : str, optional
        Material of the spheres (:meth:`~granular.particles.builder.ModelBuilder.add_material`).

    Returns
    -------
    particle_ids : ndarray, (nx ny nz,) int64
        Indices of the spheres.
    bond_ids : ndarray, (B,) int64
        Ids of the bonds, in the order of :func:`lattice_bonds`.

    Raises
    ------
    ValueError
        As the builder's methods; the builder is then left as it was (no sphere and no
        bond of the block stays).
    """
    if isinstance(shape, (int, np.integer)):
        shape = (shape, shape, shape)
    first = builder.particle_count
    with builder._atomic():  # a bad bond value takes the spheres out again
        ids = builder.add_particles(lattice_positions(shape, spacing, origin), v=velocity, mass=mass,
                                    inertia=inertia, radius=0.5 * spacing, material=material)  # fmt: skip
        bonds = builder.add_bonds(first + lattice_bonds(shape), ka=ka, ks=ks, km=km, strain_max=strain_max,
                                  angle_max=angle_max)  # fmt: skip
    return ids, bonds


#: The dissipative material of the frictional block impact (``friction=True``): with
#: ``ν = 0.3``, ``E = (3/2) K^pp 2 (1 - ν²)`` gives two unit spheres the normal stiffness
#: of ``K^pp = 2100`` (``k_n = (4/3) E* sqrt(R*) = K^pp``); restitution 0.5, friction 0.5,
#: rolling and twisting resistance 0.1.
BLOCK_MATERIAL = {"young": 1.5 * 2100.0 * 2.0 * (1.0 - 0.3**2), "poisson": 0.3, "restitution": 0.5, "friction": 0.5,
                  "rolling_friction": 0.1, "twisting_friction": 0.1}  # fmt: skip


def block_impact_builder(n=10, v0=1.0, gap=1.0, kpp=2100.0, ka=200.0, ks=200.0, km=10.0, search="cells",
                         friction=False, bonded=True, mesh=None, spacing=1.0):  # fmt: skip
    """A builder of the ``block_impact`` scene: a bonded block moving toward a wall.

    An ``n``×``n``×``n`` bonded block (:func:`add_block`) of unit-diameter spheres (point
    contact, the torus' stiffnesses) moving at ``v0`` toward the wall ``x = 0`` (normal
    ``e1``), its nearest face ``gap`` diameters away; the contact law is (56)-(57) of
    paper 003 with stiffness ``kpp`` for pairs and wall. ``friction``: the same block
    with the dissipative contact law (:data:`BLOCK_MATERIAL`, for particles and wall)
    instead of ``kpp``, masses and inertias still 1.

    Parameters
    ----------
    n : int, optional
        Spheres along each edge. Default 10.
    v0 : float, optional
        Speed toward the wall [L/T]. Default 1.
    gap : float, optional
        Distance of the block's nearest face from the wall [L] (in diameters). Default 1.
    kpp : float, optional
        Contact stiffness of pairs and wall [M L²/T²] (not used with ``friction``).
        Default 2100.
    ka, ks, km : float, optional
        Axial, shear and bending/torsion bond stiffnesses [M L²/T²]. Defaults 200,
        200, 10.
    search : {"cells", "all-pairs"}, optional
        Contact search (:meth:`~granular.particles.builder.ModelBuilder.set_contacts`;
        ``"all-pairs"`` is refused at ``finalize`` with ``friction``). Default ``"cells"``.
    friction : bool, optional
        Use the dissipative law with :data:`BLOCK_MATERIAL`. Default ``False``.
    bonded : bool, optional
        Bond the spheres (:func:`add_block`); ``False``: the same touching spheres without
        bonds (the frictional-spheres workload of ``granular bench``). Default ``True``.
    mesh : int, optional
        The wall as a flat triangle mesh of ``2 mesh²`` triangles over the square
        ``-1 <= y, z <= n + 1`` of the plane ``x = 0`` (the mesh workload of ``granular
        bench``) instead of the planar wall. Default: the planar wall.
    spacing : float, optional
        Centre distance of neighbouring spheres [L], without bonds only (``bonded=False``).
        Default 1: touching. Above 1.2 no pair is within the neighbour list's reach (the
        skin is 0.2), so a step costs what the particles alone cost (``granular bench
        --spacing``).

    Returns
    -------
    ModelBuilder
        The builder, not yet finalised (more can be added, e.g. gravity).
    """

    if bonded and spacing != 1.0:
        raise ValueError(f"block_impact_builder: spacing applies to spheres without bonds (bonded=False), got "
                         f"spacing={spacing!r} with bonds")  # fmt: skip
    if not (np.isfinite(spacing) and spacing >= 1.0):
        raise ValueError(f"block_impact_builder: spacing must be a finite number >= 1 (the diameter), got {spacing!r}")
    b = ModelBuilder()
    material = None
    if friction:
        b.add_material("binder", **BLOCK_MATERIAL)
        material = "binder"
    if bonded:
        add_block(b, n, 1.0, origin=(0.5 + gap, 0.0, 0.0), velocity=(-v0, 0.0, 0.0), ka=ka, ks=ks, km=km,
                  material=material)  # fmt: skip
    else:
        b.add_particles(lattice_positions((n, n, n), spacing, (0.5 + gap, 0.0, 0.0)), v=(-v0, 0.0, 0.0), mass=1.0,
                        inertia=1.0, radius=0.5, material=material)  # fmt: skip
    if friction:
        b.set_contacts(search=search)
    else:
        b.set_contacts(kpp, search=search)
    if mesh is None:
        b.add_wall([1.0, 0.0, 0.0], 0.0, material=material, k=None if friction else kpp)
    else:
        half = 0.5 * n + 1.0
        c = 0.5 * (n - 1)
        plate = TriangleMesh.rectangle([0.0, c, c], [0.0, half, 0.0], [0.0, 0.0, half], divisions=(mesh, mesh))
        b.add_mesh(plate, material=material, k=None if friction else kpp)
    return b


def random_packing(count, box, radius=0.5, seed=0, max_attempts=200):
    """Non-overlapping spheres placed uniformly at random in a box (random sequential addition).

    The spheres are placed as the scene's ``kind = "random"`` group places them.

    Parameters
    ----------
    count : int
        Number of spheres (>= 1).
    box : array_like, (2, 3) float
        Corners ``[[x0, y0, z0], [x1, y1, z1]]`` [L]; spheres lie wholly inside.
    radius : float or (float, float), optional
        One radius [L], or the bounds of radii drawn uniformly at random. Default 0.5.
    seed : int, optional
        Seed of :func:`numpy.random.default_rng`: the same seed gives the same packing.
        Default 0.
    max_attempts : int, optional
        Tries per sphere before giving up (random sequential addition jams near a
        volume fraction of 0.38). Default 200.

    Returns
    -------
    x : ndarray, (count, 3) float64
        Centres [L].
    radius : ndarray, (count,) float64
        Radii [L].

    Raises
    ------
    PackingError
        (a ``ValueError``) when a sphere does not fit in the box or the box is full;
        ``field`` names the argument to change.

    Examples
    --------
    >>> import numpy as np
    >>> from granular.particles.shapes import random_packing
    >>> x, r = random_packing(50, [[0, 0, 0], [6, 6, 6]], radius=0.5, seed=1)
    >>> x.shape, bool((np.linalg.norm(x[:, None] - x[None], axis=2) + 2 * np.eye(50) >= 1.0).all())
    ((50, 3), True)
    """
    from scipy.spatial import cKDTree  # SciPy loads when a packing is made, not on import

    count = int(count)
    if count < 1:
        raise PackingError(f"count: must be >= 1, got {count}", "count")
    lo, hi = (np.asarray(c, dtype=np.float64) for c in np.asarray(box, dtype=np.float64).reshape(2, 3))
    if not (hi > lo).all():
        raise PackingError("box must be [[x0, y0, z0], [x1, y1, z1]] with x1 > x0, y1 > y0, z1 > z0", "box")
    rng = np.random.default_rng(seed)
    if np.ndim(radius):
        r_lo, r_hi = (float(v) for v in radius)
        radii = rng.uniform(r_lo, r_hi, count)
    else:
        radii = np.full(count, float(radius))
    if not (np.isfinite(radii).all() and (radii > 0).all()):
        raise PackingError(f"radius: must be finite and > 0, got {radius!r}", "radius")
    placed = np.empty((count, 3))
    rmax = radii.max()
    tree, in_tree = None, 0
    for k in range(count):
        r = radii[k]
        for _ in range(max_attempts):
            if not np.all(hi - lo > 2 * r):
                raise PackingError(f"the box is smaller than a particle of radius {r}", "box")
            p = rng.uniform(lo + r, hi - r)
            ok = True
            if tree is not None:
                for j in tree.query_ball_point(p, r + rmax):
                    if np.linalg.norm(placed[j] - p) < r + radii[j]:
                        ok = False
                        break
            if ok:
                recent = placed[in_tree:k]
                if len(recent) and np.any(np.linalg.norm(recent - p, axis=1) < r + radii[in_tree:k]):
                    ok = False
            if ok:
                break
        else:
            raise PackingError(f"could not place {count} non-overlapping particles in the box (placed {k} after "
                               f"{max_attempts} attempts for the next); enlarge the box or lower count", "count")  # fmt: skip
        placed[k] = p
        if k + 1 - in_tree >= 64 and k + 1 >= 2 * max(in_tree, 32):
            tree, in_tree = cKDTree(placed[: k + 1]), k + 1
    return placed, radii


def random_unit_vectors(rng, n) -> np.ndarray:
    """Unit vectors drawn uniformly on the sphere (normalised Gaussian samples).

    Parameters
    ----------
    rng : numpy.random.Generator
        The random generator.
    n : int
        Number of vectors.

    Returns
    -------
    ndarray, (n, 3) float64
        The unit vectors [-].
    """
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def torus_centers(count, box, clearance, rng, max_attempts=1000) -> np.ndarray:
    """``count`` random points in ``box`` at least ``clearance`` apart (rejection sampling).

    Points are drawn uniformly in the box shrunk by ``clearance/2`` on every side; a
    point closer than ``clearance`` to an earlier one is drawn again.

    Parameters
    ----------
    count : int
        Number of points.
    box : array_like, (2, 3) float
        Corners ``[[x0, y0, z0], [x1, y1, z1]]`` [L].
    clearance : float
        Smallest distance between points [L] (e.g. a torus' outer diameter).
    rng : numpy.random.Generator
        The random generator.
    max_attempts : int, optional
        Draws per point before giving up. Default 1000.

    Returns
    -------
    ndarray, (count, 3) float64
        The points [L].

    Raises
    ------
    ValueError
        The box is too small for one point, or ``count`` points do not fit.
    """
    lo, hi = np.asarray(box[0], float) + 0.5 * clearance, np.asarray(box[1], float) - 0.5 * clearance
    if np.any(hi < lo):
        raise ValueError(f"box: too small for one torus of outer diameter {clearance:g}")
    pts = []
    for _ in range(count):
        for _ in range(max_attempts):
            p = rng.uniform(lo, hi)
            if not pts or np.min(np.linalg.norm(np.asarray(pts) - p, axis=1)) >= clearance:
                pts.append(p)
                break
        else:
            raise ValueError(f"count: could not place {count} tori without overlap in the box (placed {len(pts)})")
    return np.asarray(pts)


def add_tori(builder, count, box, seed=0, n_p=80, ring_diameter=3.0, velocity=(0.0, 0.0, 0.0), omega=(0.0, 0.0, 0.0),
             mass=1.0, inertia=1.0, ka=200.0, ks=200.0, km=10.0, strain_max=np.inf, angle_max=np.inf,
             bonded=True, material=None):  # fmt: skip
    """Add ``count`` tori of paper 003 at random positions and orientations to ``builder``.

    Each torus is :func:`add_torus`; the centres are :func:`torus_centers` at least the
    outer diameter ``D_t + 1.01 D_p`` apart (so the tori do not overlap), the ring
    normals uniform on the sphere (:func:`random_unit_vectors`).

    Parameters
    ----------
    builder : ModelBuilder
        The builder to add to.
    count : int
        Number of tori, >= 1.
    box : array_like, (2, 3) float
        Corners ``[[x0, y0, z0], [x1, y1, z1]]`` of the region of the tori [L].
    seed : int, optional
        Seed of :func:`numpy.random.default_rng`: the same seed gives the same tori.
        Default 0.
    n_p : int, optional
        Spheres per torus, >= 3. Default 80.
    ring_diameter : float, optional
        Ring diameter ``D_t`` [L]. Default 3.
    velocity : array_like, (3,) float, optional
        Velocity of every sphere [L/T]. Default zero.
    omega : array_like, (3,) float, optional
        Spatial angular velocity of every sphere [1/T]. Default zero.
    mass : float, optional
        Mass of each particle [M]. Default 1 (also with ``material``: given explicitly,
        it is not taken from the density).
    inertia : float, optional
        Scalar moment of inertia of each particle [M L²]. Default 1 (likewise).
    ka, ks, km : float, optional
        Axial, shear and bending/torsion bond stiffnesses ``K^a``, ``K^s``, ``K^m``
        [M L²/T²] (:meth:`~granular.particles.builder.ModelBuilder.add_bonds`); defaults
        200, 200, 10 as in paper 003, Sect. 4.1.
    strain_max : float, optional
        Bond breakage threshold on ``|r/r0 - 1|`` [-]. Default ``inf`` (never).
    angle_max : float, optional
        Bond breakage threshold on the relative rotation angle [rad]. Default ``inf``.
    bonded : bool, optional
        Bond the neighbours of each torus. Default ``True``.
    material : str, optional
        Material of the spheres (:meth:`~granular.particles.builder.ModelBuilder.add_material`).

    Returns
    -------
    ndarray, (count n_p,) int64
        Indices of the spheres, torus by torus.

    Raises
    ------
    ValueError
        The tori do not fit in ``box`` (:func:`torus_centers`), or as :func:`add_torus`;
        the builder is then left as it was (no torus of the call stays).
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count: the number of tori must be a whole number >= 1, got {count!r}")
    rng = np.random.default_rng(seed)
    d_p = ring_diameter * math.sin(math.pi / n_p)
    centers = torus_centers(count, box, ring_diameter + d_p * 1.01, rng)
    normals = random_unit_vectors(rng, count)
    ids = []
    with builder._atomic():  # a failing torus takes the ones before it out again
        for c, nrm in zip(centers, normals):
            i, _, _ = add_torus(builder, n_p, ring_diameter, c, nrm, velocity=velocity, omega=omega, mass=mass,
                                inertia=inertia, ka=ka, ks=ks, km=km, strain_max=strain_max, angle_max=angle_max,
                                bonded=bonded, material=material)  # fmt: skip
            ids.append(i)
    return np.concatenate(ids)
