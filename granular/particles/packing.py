"""Dense random sphere packings in a container, for bonded-particle specimens.

:func:`dense_packing` makes the dense, isotropic, polydisperse assemblies of spheres that
bonded-particle models are built on (Potyondy & Cundall 2004, "A bonded-particle model
for rock", Int. J. Rock Mech. Min. Sci. 41:1329-1364, Sect. 3.1; the agglomerates of
Thornton and co-workers): the *radius-expansion* method with overlap relaxation.

Method
------
The final radii ``r_i`` are drawn first (:func:`draw_radii`). The particles then grow
together: at scale ``s`` particle ``i`` has radius ``s r_i``, and ``s`` starts where the
solid fraction is 0.2. The centres are placed uniformly at random inside the container
(overlaps allowed), then:

1. *relax*: the frictionless harmonic overlap energy

   .. math:: U = \\tfrac12 \\sum_{i<j} \\delta_{ij}^2 + \\tfrac12 \\sum_{i,w} \\delta_{iw}^2,
             \\qquad \\delta_{ij} = \\max(0, s r_i + s r_j - d_{ij}),

   over the pairs of particles and the pairs of a particle and a container wall (the
   sphere's surface; a cylinder's mantle and two caps; a box's six faces, each wall on
   its own), is minimised by FIRE, the fast inertial relaxation engine (Bitzek, Koskinen,
   Gähler, Moseler & Gumbsch, "Structural relaxation made simple", Phys. Rev. Lett. 97,
   170201, 2006; semi-implicit Euler steps and the half-step back-off of FIRE 2.0,
   Guénolé et al., Comput. Mater. Sci. 175, 109584, 2020; unit masses), until no overlap
   exceeds ``overlap_tol`` times the smallest radius: the round is *accepted*. The round
   *jams* instead when the energy stops decreasing (its lowest value falls by less than
   2 % over 200 steps) or after 800 steps: the particles cannot make room for this ``s``
   at this compression rate.
2. *grow*: after an accepted round ``s`` grows by the factor ``1 + ds`` (``ds`` = 0.01
   at first, up to 0.02 while rounds relax within 60 steps).
3. after a jammed round, the jammed positions with all radii smaller by the least factor
   ``1 - q`` that brings every overlap below ``overlap_tol / 2`` (times the smallest
   radius) are a relaxed packing; it is kept when denser than the last accepted one, else
   the last accepted positions come back. ``ds`` is halved, and never grows again.

The growth ends at ``s = 1`` when the container is given (``size``, or
``target_fraction``): the radii are then those asked for. If ``ds`` falls below
``overlap_tol / 2`` first, the particles jam before reaching their size, and
:class:`~granular.errors.PackingError` says so. With neither ``size`` nor
``target_fraction`` the growth goes on until it jams (until a jammed round needs
``q <= overlap_tol / 2``, or ``ds`` falls below that): a dense, mechanically stable
packing, near random close packing (about 0.64 in bulk for equal spheres, less by the
walls: 0.60 for 2000 equal spheres in a sphere, 0.61 for 10 000); then positions and
container are scaled by ``1 / s``, so that the radii are those asked for: the container
is fitted to the jammed packing.

Pairs are found through a Verlet list of the pairs closer than ``s (r_i + r_j)`` plus a
skin, built from a cell list (particles binned by ``floor(x / cell)`` and sorted by cell
by a stable counting sort), rebuilt at every change of ``s`` and whenever a particle has
moved more than half the skin since: O(N) work per step.

Determinism: the same arguments give the same specimen, bit for bit, whatever the number
of threads. The compiled loops (Numba, ``prange`` over particles) each write only their
own particle's row, every particle sums over its neighbours in the list's fixed order
(each pair is evaluated by both ends), and every global quantity (energy, FIRE's power
``F . v``, the largest overlap and displacement) is summed in a serial loop. Packings of
fewer than :data:`PARALLEL_ABOVE` particles are made on one thread: a parallel region per
half step costs more than it saves there, and much more on a machine whose cores are busy
(each region waits for its slowest thread to be scheduled).

On a GPU (``backend="gpu"``) the same loops (:mod:`kernels.packing`) run one thread per
particle (:mod:`kernels.packing_cuda`); the sort by cell and the prefix sums are CuPy's,
and the sums of each FIRE step are read back once per step. The growth rounds and FIRE
steps are the CPU's; the specimen equals the CPU's to round-off, not bit for bit (the
sums over particles are taken in another order), and the same seed repeats it on the
same device.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from kernels import packing as K

from ..backend import resolve_backend
from ..errors import BackendError, PackingError
from ..io._atomic import atomic_write

__all__ = ["SHAPES", "Specimen", "container_volume", "dense_packing", "draw_radii"]

#: Container shapes and the number of entries of ``size`` each takes.
SHAPES = {"sphere": 1, "cylinder": 2, "box": 3}
#: Radius laws of :func:`draw_radii`.
DISTRIBUTIONS = ("uniform", "lognormal")
#: Solid fraction at which the growth starts (or lower, where the container is emptier).
START_FRACTION = 0.2
#: Solid fraction of the container chosen when neither ``size`` nor ``target_fraction`` is
#: given; the container is fitted to the jammed packing afterwards.
NOMINAL_FRACTION = 0.6
#: Format tag of :meth:`Specimen.save` files.
FILE_FORMAT = "granular.specimen"
FILE_VERSION = 1

# growth: first increment of s, its cap while rounds relax within _FAST_ROUND steps
_DS0 = 0.01
_DS_MAX = 0.02
_FAST_ROUND = 60
# Verlet skin as a fraction of the mean radius (at the current scale)
_SKIN = 0.3
# rows split into this many ranges per thread, from PARALLEL_ABOVE particles on
_CHUNKS_PER_THREAD = 4
#: Packings of fewer particles are made on one thread: two parallel regions a FIRE step
#: cost more than they save there, far more on a machine whose cores are busy.
PARALLEL_ABOVE = 50_000
# steps of one relaxation round at most (then the round counts as jammed)
_ROUND_STEPS = 800

_CODES = {"sphere": 0, "cylinder": 1, "box": 2}


# ---------------------------------------------------------------------------------------
# compiled kernels (one signature each: float64 / int64 contiguous arrays)


_cell_rows = njit(cache=True)(K.cell_rows)
_neighbor_rows = njit(cache=True)(K.neighbor_rows)
_force_rows = njit(cache=True)(K.force_rows)
_advance_rows = njit(cache=True)(K.advance_rows)
_retreat_rows = njit(cache=True)(K.retreat_rows)
_stalled = njit(cache=True)(K.stalled)
_fire_control = njit(cache=True)(K.fire_control)


@njit(cache=True)
def _cell_sort(x, lo, inv_cell, dims, cid, start, order):
    """Cell of each particle (clamped to the grid), ``start`` (ncell + 1) and ``order``
    (particles by cell, then by index: a stable counting sort)."""
    n = x.shape[0]
    _cell_rows(0, n, x, lo, inv_cell, dims, cid)
    start[:] = 0
    for i in range(n):
        start[cid[i] + 1] += 1
    for c in range(start.shape[0] - 1):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    for i in range(n):
        c = cid[i]
        order[fill[c]] = i
        fill[c] += 1


@njit(parallel=True, cache=True)
def _parallel(kind, chunks, x, v, f, x_ref, rad, skin, cid, start, order, dims, nbr_start, nbr, count_only, code,
              geom, e_i, ov_i, dt, mix_a, mix_b, disp2):  # fmt: skip
    """The rows split into ``chunks`` ranges run by Numba's threads: ``kind`` 0 the
    neighbour list (:func:`_neighbor_rows`), 1 the forces (:func:`_force_rows`), 2 the
    FIRE step (:func:`_advance_rows`). Each range writes only its own rows."""
    n = x.shape[0]
    for c in prange(chunks):
        lo = c * n // chunks
        hi = (c + 1) * n // chunks
        if kind == 0:
            _neighbor_rows(lo, hi, x, rad, skin, cid, start, order, dims, nbr_start, nbr, count_only)
        elif kind == 1:
            _force_rows(lo, hi, x, rad, nbr_start, nbr, code, geom, f, e_i, ov_i)
        else:
            _advance_rows(lo, hi, x, v, f, x_ref, dt, mix_a, mix_b, disp2)


@njit(cache=True)
def _relax(x, v, f, e_i, ov_i, disp2, x_ref, rad, cid, start, order, dims, nbr_start, nbr, code, geom, move_max,
           tol_abs, max_steps, st, chunks):  # fmt: skip
    """FIRE steps until the largest overlap is <= ``tol_abs`` (status 0), a particle has
    moved more than ``move_max`` since the list was built (status 1: rebuild the list and
    call again), the energy stalls (status 2) or ``max_steps`` steps were made (status 3).

    ``st``: the state carried between calls of one round: ``dt``, ``alpha``, steps since
    the last restart (``P <= 0``), lowest energy in this window, lowest energy at the last
    window, steps in the window. ``chunks``: 1 runs the rows on this thread, more splits
    them among Numba's threads. Returns ``(status, steps, energy, overlap)``. Every sum
    over particles is a serial loop: the same bits for any number of threads."""
    n = x.shape[0]
    steps = 0
    move2 = move_max * move_max
    while True:
        if chunks > 1:
            _parallel(1, chunks, x, v, f, x_ref, rad, 0.0, cid, start, order, dims, nbr_start, nbr, False, code,
                      geom, e_i, ov_i, 0.0, 0.0, 0.0, disp2)  # fmt: skip
        else:
            _force_rows(0, n, x, rad, nbr_start, nbr, code, geom, f, e_i, ov_i)
        energy = 0.0
        ovmax = 0.0
        for i in range(n):
            energy += e_i[i]
            ovmax = max(ovmax, ov_i[i])
        if ovmax <= tol_abs:
            return 0, steps, energy, ovmax
        if _stalled(st, energy):
            return 2, steps, energy, ovmax
        if steps >= max_steps:
            return 3, steps, energy, ovmax
        p = 0.0  # FIRE
        vv = 0.0
        ff = 0.0
        for i in range(n):
            for a in range(3):
                p += f[i, a] * v[i, a]
                vv += v[i, a] * v[i, a]
                ff += f[i, a] * f[i, a]
        back = _fire_control(st, p)
        if back > 0.0:  # half a step back, then on from rest
            _retreat_rows(0, n, x, v, back)
            vv = 0.0
        dt = st[0]
        alpha = st[1]
        mix_b = alpha * math.sqrt(vv / ff) if ff > 0.0 else 0.0
        if chunks > 1:
            _parallel(2, chunks, x, v, f, x_ref, rad, 0.0, cid, start, order, dims, nbr_start, nbr, False, code,
                      geom, e_i, ov_i, dt, 1.0 - alpha, mix_b, disp2)  # fmt: skip
        else:
            _advance_rows(0, n, x, v, f, x_ref, dt, 1.0 - alpha, mix_b, disp2)
        steps += 1
        dmax = 0.0
        for i in range(n):
            dmax = max(dmax, disp2[i])
        if dmax > move2:
            return 1, steps, energy, ovmax


# ---------------------------------------------------------------------------------------
# geometry


def _check_size(shape, size):
    """``size`` as a tuple of floats with the right length for ``shape``."""
    want = SHAPES[shape]
    names = {"sphere": "(R,)", "cylinder": "(R, H)", "box": "(Lx, Ly, Lz)"}[shape]
    try:
        vals = np.atleast_1d(np.asarray(size, dtype=np.float64))
    except (TypeError, ValueError):
        raise PackingError(f"size: a {shape} takes {names} [L], got {size!r}", "size") from None
    if vals.ndim != 1 or vals.shape[0] != want or not (np.isfinite(vals).all() and (vals > 0).all()):
        raise PackingError(f"size: a {shape} takes {names} [L], all finite and > 0, got {size!r}", "size")
    return tuple(float(v) for v in vals)


def container_volume(shape, size) -> float:
    """Volume of a container [L^3].

    Parameters
    ----------
    shape : {"sphere", "cylinder", "box"}
        The container.
    size : tuple of float
        ``(R,)``, ``(R, H)`` or ``(Lx, Ly, Lz)`` [L].

    Returns
    -------
    float
        ``4/3 pi R^3``, ``pi R^2 H`` or ``Lx Ly Lz`` [L^3].
    """
    if shape == "sphere":
        return 4.0 / 3.0 * math.pi * size[0] ** 3
    if shape == "cylinder":
        return math.pi * size[0] ** 2 * size[1]
    return size[0] * size[1] * size[2]


def _size_for_volume(shape, volume, aspect):
    """A container of ``shape`` and ``volume``; ``aspect``: the proportions of a cylinder
    ``(R, H)`` or box ``(Lx, Ly, Lz)`` (scaled to the volume)."""
    if shape == "sphere":
        return ((3.0 * volume / (4.0 * math.pi)) ** (1.0 / 3.0),)
    k = (volume / container_volume(shape, aspect)) ** (1.0 / 3.0)
    return tuple(k * a for a in aspect)


def _half_extents(shape, size):
    if shape == "sphere":
        return np.full(3, size[0])
    if shape == "cylinder":
        return np.array([size[0], size[0], 0.5 * size[1]])
    return 0.5 * np.asarray(size, dtype=np.float64)


def _geom(shape, size):
    if shape == "sphere":
        return np.array([size[0], 0.0, 0.0])
    if shape == "cylinder":
        return np.array([size[0], size[0], 0.5 * size[1]])  # geom[2]: half height (caps)
    return 0.5 * np.asarray(size, dtype=np.float64)


def _wall_overlap(x, radius, shape, size) -> np.ndarray:
    """Largest overlap of each particle with the container's walls [L] (0 if none)."""
    if shape == "sphere":
        d = np.linalg.norm(x, axis=1) + radius - size[0]
        return np.maximum(d, 0.0)
    h = _half_extents(shape, size)
    faces = np.abs(x) + radius[:, None] - h
    if shape == "cylinder":
        faces[:, 0] = np.hypot(x[:, 0], x[:, 1]) + radius - size[0]
        faces[:, 1] = 0.0
    return np.maximum(faces.max(axis=1), 0.0)


def _random_inside(rng, count, shape, size, clearance):
    """``count`` points uniformly at random in the container shrunk by ``clearance`` (N,)."""
    if shape == "sphere":
        u = rng.normal(size=(count, 3))
        u /= np.linalg.norm(u, axis=1)[:, None]
        rho = (size[0] - clearance) * rng.random(count) ** (1.0 / 3.0)
        return u * rho[:, None]
    if shape == "cylinder":
        phi = 2.0 * math.pi * rng.random(count)
        rho = (size[0] - clearance) * np.sqrt(rng.random(count))
        z = (0.5 * size[1] - clearance) * rng.uniform(-1.0, 1.0, count)
        return np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])
    h = 0.5 * np.asarray(size, dtype=np.float64)
    return (h[None, :] - clearance[:, None]) * rng.uniform(-1.0, 1.0, (count, 3))


# ---------------------------------------------------------------------------------------
# radii


def _check_radius(radius):
    """``(r_min, r_max)`` from a radius or a pair, checked."""
    try:
        vals = np.asarray(radius, dtype=np.float64)
    except (TypeError, ValueError):
        raise PackingError(f"radius: a radius or a pair (r_min, r_max) [L], got {radius!r}", "radius") from None
    if vals.ndim == 0:
        vals = np.array([vals, vals])
    if vals.shape != (2,) or not (np.isfinite(vals).all() and (vals > 0).all()) or vals[0] > vals[1]:
        raise PackingError(f"radius: a radius or a pair (r_min, r_max) [L], finite, > 0, with r_min <= r_max; "
                           f"got {radius!r}", "radius")  # fmt: skip
    return float(vals[0]), float(vals[1]), np.ndim(radius) == 0


def draw_radii(count, radius=0.5, distribution="uniform", seed=0):
    """Radii drawn from one of the laws of :func:`dense_packing`.

    Parameters
    ----------
    count : int
        Number of radii (>= 1).
    radius : float or (float, float), optional
        One radius [L] (all equal, whatever ``distribution``), or the bounds
        ``(r_min, r_max)`` [L], finite, ``0 < r_min <= r_max``. Default 0.5.
    distribution : {"uniform", "lognormal"}, optional
        ``"uniform"``: uniform in ``[r_min, r_max]``. ``"lognormal"``: log-normal with
        median ``sqrt(r_min r_max)`` and ``sigma = ln(r_max / r_min) / 4`` (the range is
        the median +- 2 sigma in log space), truncated to ``[r_min, r_max]`` by drawing
        again the radii that fall outside. Default ``"uniform"``.
    seed : int or numpy.random.Generator, optional
        Seed of :func:`numpy.random.default_rng`, or the generator itself. Default 0.

    Returns
    -------
    radii : ndarray, (count,) float64
        The radii [L].
    law : dict
        The law, as :attr:`Specimen.distribution`: ``{"law": "constant", "radius": r}``,
        ``{"law": "uniform", "range": [r_min, r_max]}`` or ``{"law": "lognormal",
        "median": m, "sigma": sigma, "range": [r_min, r_max]}``.

    Raises
    ------
    PackingError
        A bad ``count``, ``radius`` or ``distribution`` (``field`` names it).
    """
    count = _check_count(count)
    if distribution not in DISTRIBUTIONS:
        raise PackingError(f"distribution: one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}", "distribution")
    r_lo, r_hi, single = _check_radius(radius)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if single or r_lo == r_hi:
        return np.full(count, r_lo), {"law": "constant", "radius": r_lo}
    if distribution == "uniform":
        return rng.uniform(r_lo, r_hi, count), {"law": "uniform", "range": [r_lo, r_hi]}
    median = math.sqrt(r_lo * r_hi)
    sigma = math.log(r_hi / r_lo) / 4.0
    radii = rng.lognormal(math.log(median), sigma, count)
    bad = np.flatnonzero((radii < r_lo) | (radii > r_hi))
    while bad.size:  # about 4.6 % outside +-2 sigma: a few passes
        radii[bad] = rng.lognormal(math.log(median), sigma, bad.size)
        bad = bad[(radii[bad] < r_lo) | (radii[bad] > r_hi)]
    return radii, {"law": "lognormal", "median": median, "sigma": sigma, "range": [r_lo, r_hi]}


def _check_count(count):
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) or count < 1:
        raise PackingError(f"count: an integer >= 1, got {count!r}", "count")
    return int(count)


# ---------------------------------------------------------------------------------------
# the specimen


@dataclass(eq=False)
class Specimen:
    """A dense packing of spheres in a container, as made by :func:`dense_packing`.

    Attributes
    ----------
    x : ndarray, (N, 3) float64
        Centres [L]; the container is centred at the origin.
    radius : ndarray, (N,) float64
        Radii [L].
    shape : str
        The container: ``"sphere"``, ``"cylinder"`` (axis ``z``) or ``"box"``.
    size : tuple of float
        ``(R,)`` for a sphere, ``(R, H)`` for a cylinder, ``(Lx, Ly, Lz)`` for a box [L].
    seed : int
        The seed that made it.
    distribution : dict
        The radius law (:func:`draw_radii`), e.g. ``{"law": "lognormal", "median": m,
        "sigma": s, "range": [r_min, r_max]}``.
    solid_fraction : float
        ``sum(4/3 pi r^3)`` over the container's volume [-].
    coordination : float
        Mean number of neighbours with a gap ``d_ij - r_i - r_j <= contact_tol (r_i +
        r_j)``: ``2 * pairs / N`` [-].
    max_overlap : float
        Largest overlap ``(r_i + r_j - d_ij) / min(r_i, r_j)`` over the pairs, and
        ``overlap / r_i`` over the walls; 0 if nothing overlaps [-].
    iterations : int
        FIRE steps taken.
    contact_tol : float
        The gap tolerance of ``coordination`` [-] (:func:`dense_packing` uses its
        ``overlap_tol`` unless told otherwise). Default 1e-3.
    """

    x: np.ndarray
    radius: np.ndarray
    shape: str
    size: tuple
    seed: int
    distribution: dict
    solid_fraction: float
    coordination: float
    max_overlap: float
    iterations: int
    contact_tol: float = 1e-3

    def __len__(self):
        return int(self.radius.shape[0])

    def pairs(self, factor=1.0) -> np.ndarray:
        """Pairs closer than ``factor`` times the sum of their radii.

        Parameters
        ----------
        factor : float, optional
            ``>= 1``: the pairs with ``d_ij <= factor (r_i + r_j)``. Default 1 (touching
            or overlapping).

        Returns
        -------
        ndarray, (P, 2) int64
            The pairs ``(i, j)``, ``i < j``, sorted lexicographically.

        Raises
        ------
        PackingError
            ``factor`` not a finite number >= 1 (``field`` ``"factor"``).
        """
        try:
            factor = float(factor)
        except (TypeError, ValueError):
            raise PackingError(f"factor: a number >= 1, got {factor!r}", "factor") from None
        if not (math.isfinite(factor) and factor >= 1.0):
            raise PackingError(f"factor: a finite number >= 1, got {factor!r}", "factor")
        return _pairs(self.x, self.radius, factor)

    def overlaps(self):
        """Largest relative overlap of the pairs and of the walls, as :attr:`max_overlap`."""
        p = _pairs(self.x, self.radius, 1.0)
        worst = 0.0
        if len(p):
            d = np.linalg.norm(self.x[p[:, 0]] - self.x[p[:, 1]], axis=1)
            ri, rj = self.radius[p[:, 0]], self.radius[p[:, 1]]
            worst = float(np.max((ri + rj - d) / np.minimum(ri, rj)))
        wall = _wall_overlap(self.x, self.radius, self.shape, self.size) / self.radius
        return max(worst, float(wall.max()) if len(wall) else 0.0, 0.0)

    def _metadata(self):
        return {"format": FILE_FORMAT, "version": FILE_VERSION, "shape": self.shape, "size": list(self.size),
                "seed": self.seed, "distribution": self.distribution, "solid_fraction": self.solid_fraction,
                "coordination": self.coordination, "max_overlap": self.max_overlap, "iterations": self.iterations,
                "contact_tol": self.contact_tol}  # fmt: skip

    def save(self, path):
        """Write the specimen to one ``.npz`` file (written whole or not at all).

        The arrays ``x`` and ``radius`` and a JSON string ``metadata`` (the other
        attributes) go to a temporary file in the same folder, which then replaces
        ``path`` (:func:`granular.io._atomic.atomic_write`).

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        str
            ``path``.
        """
        path = os.fspath(path)

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez(fh, x=np.ascontiguousarray(self.x, dtype=np.float64),
                         radius=np.ascontiguousarray(self.radius, dtype=np.float64),
                         metadata=np.array(json.dumps(self._metadata())))  # fmt: skip

        atomic_write(path, write)
        return path

    @classmethod
    def load(cls, path):
        """Read a specimen written by :meth:`save`.

        Parameters
        ----------
        path : str or os.PathLike
            The file.

        Returns
        -------
        Specimen

        Raises
        ------
        PackingError
            ``path`` is missing or not a specimen file (``field`` ``"path"``; the message
            names the file).
        """
        path = os.fspath(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                x = np.array(z["x"], dtype=np.float64)
                radius = np.array(z["radius"], dtype=np.float64)
                meta = json.loads(str(z["metadata"]))
            if meta.get("format") != FILE_FORMAT:
                raise ValueError(f"format {meta.get('format')!r}, not {FILE_FORMAT!r}")
            if meta.get("version") != FILE_VERSION:
                raise ValueError(f"version {meta.get('version')!r}, this code reads {FILE_VERSION}")
            if x.ndim != 2 or x.shape[1] != 3 or radius.shape != (x.shape[0],):
                raise ValueError(f"arrays of shapes {x.shape} and {radius.shape}")
            return cls(x=x, radius=radius, shape=meta["shape"], size=tuple(meta["size"]), seed=meta["seed"],
                       distribution=meta["distribution"], solid_fraction=meta["solid_fraction"],
                       coordination=meta["coordination"], max_overlap=meta["max_overlap"],
                       iterations=meta["iterations"], contact_tol=meta["contact_tol"])  # fmt: skip
        except Exception as exc:
            raise PackingError(f"{path}: not a specimen file written by Specimen.save ({exc})", "path") from exc


def _pairs(x, radius, factor):
    from scipy.spatial import cKDTree  # SciPy loads when pairs are asked for, not on import

    n = x.shape[0]
    if n < 2:
        return np.empty((0, 2), dtype=np.int64)
    p = cKDTree(x).query_pairs(2.0 * factor * float(radius.max()), output_type="ndarray").astype(np.int64)
    if len(p):
        d = np.linalg.norm(x[p[:, 0]] - x[p[:, 1]], axis=1)
        p = p[d <= factor * (radius[p[:, 0]] + radius[p[:, 1]])]
        p = p[np.lexsort((p[:, 1], p[:, 0]))]
    return np.ascontiguousarray(p.reshape(-1, 2))


# ---------------------------------------------------------------------------------------
# the packing


class _Lists:
    """Cell list and Verlet list of the growing packing (rebuilt by :meth:`build`)."""

    def __init__(self, n, shape, size, chunks):
        self.h = _half_extents(shape, size)
        self.lo = -self.h
        self.cid = np.empty(n, np.int64)
        self.order = np.empty(n, np.int64)
        self.nbr_start = np.zeros(n + 1, np.int64)
        self.nbr = np.empty(16, np.int64)
        self.start = np.zeros(2, np.int64)
        self.dims = np.ones(3, np.int64)
        self.n = n
        self.chunks = chunks

    def _rows(self, x, rad, skin, count_only):
        if self.chunks > 1:
            _parallel(0, self.chunks, x, x, x, x, rad, skin, self.cid, self.start, self.order, self.dims,
                      self.nbr_start, self.nbr, count_only, 0, rad, rad, rad, 0.0, 0.0, 0.0, rad)  # fmt: skip
        else:
            _neighbor_rows(0, self.n, x, rad, skin, self.cid, self.start, self.order, self.dims, self.nbr_start,
                           self.nbr, count_only)  # fmt: skip

    def build(self, x, rad, skin, rad_max):
        extent = 2.0 * self.h
        dims = _grid_dims(extent, 2.0 * rad_max + skin, self.n)
        self.dims = dims
        inv_cell = dims / extent
        if self.start.shape[0] != int(np.prod(dims)) + 1:
            self.start = np.zeros(int(np.prod(dims)) + 1, np.int64)
        _cell_sort(x, self.lo, inv_cell, dims, self.cid, self.start, self.order)
        self.nbr_start[:] = 0
        self._rows(x, rad, skin, True)
        np.cumsum(self.nbr_start, out=self.nbr_start)
        total = int(self.nbr_start[-1])
        if self.nbr.shape[0] < total:
            self.nbr = np.empty(int(total * 1.25) + 16, np.int64)
        self._rows(x, rad, skin, False)

    def shrink_needed(self, x, rad, shape, size, target):
        """Relative decrease of all radii after which no overlap (listed pairs, walls)
        exceeds ``target`` [L] (0 if none does)."""
        return _shrink_needed(self.nbr_start, self.nbr, x, rad, shape, size, target)


class _DeviceLists:
    """The cell and Verlet lists of :class:`_Lists` on a GPU: the cells and the rows by
    kernels (:mod:`kernels.packing_cuda`), the sort by cell and the prefix sums by the
    array module. Particles are sorted by the key ``cell N + index``, unique, so the order
    is that of the CPU's stable counting sort whatever sort the array module uses."""

    def __init__(self, be, n, shape, size):
        from kernels import packing_cuda

        self.be, self.kc = be, packing_cuda
        xp = be.xp
        self.h = _half_extents(shape, size)
        self.lo = be.asarray(-self.h)
        self.cid = xp.empty(n, np.int64)
        self.order = xp.empty(n, np.int64)
        self.nbr_start = xp.zeros(n + 1, np.int64)
        self.nbr = xp.empty(16, np.int64)
        self.start = xp.zeros(2, np.int64)
        self.dims = be.asarray(np.ones(3, np.int64))
        self.index = xp.arange(n, dtype=np.int64)
        self.n = n
        self.blocks = max(1, (n + packing_cuda.TPB - 1) // packing_cuda.TPB)

    def launch(self, kernel, *args):
        dv = self.be.kernels.to_device
        kernel[self.blocks, self.kc.TPB](*(a if isinstance(a, (bool, int, float)) else dv(a) for a in args))

    def build(self, x, rad, skin, rad_max):
        xp = self.be.xp
        extent = 2.0 * self.h
        dims = _grid_dims(extent, 2.0 * rad_max + skin, self.n)
        self.dims = self.be.asarray(dims)
        self.launch(self.kc.cells, x, self.lo, self.be.asarray(dims / extent), self.dims, self.cid)
        self.order = xp.argsort(self.cid * self.n + self.index)
        self.start = xp.zeros(int(np.prod(dims)) + 1, np.int64)
        self.start[1:] = xp.cumsum(xp.bincount(self.cid, minlength=int(np.prod(dims))))
        self.nbr_start[:] = 0
        self.launch(self.kc.neighbors, x, rad, skin, self.cid, self.start, self.order, self.dims, self.nbr_start,
                    self.nbr, True)  # fmt: skip
        self.nbr_start[:] = xp.cumsum(self.nbr_start)
        total = int(self.nbr_start[-1])
        if self.nbr.shape[0] < total:
            self.nbr = xp.empty(int(total * 1.25) + 16, np.int64)
        self.launch(self.kc.neighbors, x, rad, skin, self.cid, self.start, self.order, self.dims, self.nbr_start,
                    self.nbr, False)  # fmt: skip

    def shrink_needed(self, x, rad, shape, size, target):
        """:meth:`_Lists.shrink_needed` (on host copies: once per jammed round)."""
        h = self.be.to_host
        return _shrink_needed(h(self.nbr_start), h(self.nbr), h(x), h(rad), shape, size, target)


def _grid_dims(extent, cell, n):
    """Cells per axis of the packing's grid: cells no smaller than ``cell``, and no more
    than ``8 n + 64`` of them (sparse early stages get a coarser grid)."""
    dims = np.maximum(np.floor(extent / cell), 1).astype(np.int64)
    while int(np.prod(dims)) > 8 * n + 64:
        dims = np.maximum(dims // 2, 1)
    return dims


def _shrink_needed(nbr_start, nbr, x, rad, shape, size, target):
    """Relative decrease of all radii after which no overlap of a listed pair or with a
    wall exceeds ``target`` [L] (0 if none does); host arrays."""
    n = x.shape[0]
    counts = np.diff(nbr_start)
    i = np.repeat(np.arange(n), counts)
    j = nbr[: int(nbr_start[-1])]
    q = 0.0
    if len(i):
        sr = rad[i] + rad[j]
        q = float(np.max((sr - np.linalg.norm(x[i] - x[j], axis=1) - target) / sr))
    qw = float(np.max((_wall_overlap(x, rad, shape, size) - target) / rad))
    return max(q, qw, 0.0)


def _relax_device(lists, x, v, f, e_i, ov_i, disp2, x_ref, rad, code, geom, move_max, tol_abs, max_steps, st):
    """:func:`_relax` on a GPU: the rows by kernels, the sums by the array module (one
    read-back of six numbers per step), the FIRE control on the host. The displacement
    test comes after the next force pass (in the same read-back), so a list that is too
    old discards those forces: the next call rebuilds it and evaluates them again, as
    the CPU does."""
    xp, kc = lists.be.xp, lists.kc
    steps = 0
    move2 = move_max * move_max
    disp2[:] = 0.0
    while True:
        lists.launch(kc.forces, x, rad, lists.nbr_start, lists.nbr, code, geom, f, e_i, ov_i)
        sums = xp.stack([e_i.sum(), ov_i.max(), (f * v).sum(), (v * v).sum(), (f * f).sum(), disp2.max()])
        energy, ovmax, p, vv, ff, dmax = (float(c) for c in lists.be.to_host(sums))
        if dmax > move2:
            return 1, steps, energy, ovmax
        if ovmax <= tol_abs:
            return 0, steps, energy, ovmax
        if _stalled(st, energy):
            return 2, steps, energy, ovmax
        if steps >= max_steps:
            return 3, steps, energy, ovmax
        back = float(_fire_control(st, p))
        if back > 0.0:
            lists.launch(kc.retreat, x, v, back)
            vv = 0.0
        mix_b = st[1] * math.sqrt(vv / ff) if ff > 0.0 else 0.0
        lists.launch(kc.advance, x, v, f, x_ref, float(st[0]), 1.0 - float(st[1]), mix_b, disp2)
        steps += 1


def dense_packing(count, shape="sphere", size=None, radius=0.5, distribution="uniform", seed=0,
                  target_fraction=None, overlap_tol=1e-3, max_iterations=1_000_000, threads=None,
                  contact_tol=None, verbose=False, backend="cpu") -> Specimen:  # fmt: skip
    """A dense random packing of spheres in a container, by radius expansion and FIRE
    relaxation of the overlaps (the method: :mod:`granular.particles.packing`).

    Parameters
    ----------
    count : int
        Number of spheres, >= 1.
    shape : {"sphere", "cylinder", "box"}, optional
        The container, centred at the origin (a cylinder's axis along ``z``). Default
        ``"sphere"``.
    size : float or tuple of float, optional
        ``(R,)`` (or ``R``) for a sphere, ``(R, H)`` for a cylinder, ``(Lx, Ly, Lz)`` for a
        box [L]. The radii are those asked for, so the solid fraction is fixed by
        ``count``, ``radius`` and ``size``; the particles must then fit, relaxed, at full
        size. Default ``None``: with ``target_fraction``, the container of that solid
        fraction; without, the container fitted to the packing grown until it jams
        (densest). A cylinder then has ``H = 2 R``, a box is a cube.
    radius : float or (float, float), optional
        One radius [L], or the bounds ``(r_min, r_max)`` [L] of ``distribution``.
        Default 0.5.
    distribution : {"uniform", "lognormal"}, optional
        Law of the radii between ``r_min`` and ``r_max`` (:func:`draw_radii`):
        ``"uniform"``, uniform in ``[r_min, r_max]``; ``"lognormal"``, log-normal of median
        ``sqrt(r_min r_max)`` and ``sigma = ln(r_max / r_min) / 4`` (the range is +-2 sigma
        in log space), truncated to the range by drawing again. Default ``"uniform"``.
    seed : int, optional
        Seed of :func:`numpy.random.default_rng` (radii, then positions). The same
        arguments and seed give the same specimen bit for bit, whatever ``threads``.
        Default 0.
    target_fraction : float, optional
        Solid fraction of the container chosen when ``size`` is ``None`` [-], in
        ``(0, 0.9)``; it cannot be given with ``size`` (the fraction is then fixed).
    overlap_tol : float, optional
        Largest overlap left, a fraction of the smallest radius [-], in ``(0, 0.1]``.
        Default 1e-3.
    max_iterations : int, optional
        FIRE steps allowed in all, >= 1. Default 1 000 000.
    threads : int, optional
        Numba threads used (``1 .. numba.config.NUMBA_NUM_THREADS``) for packings of at
        least :data:`PARALLEL_ABOVE` particles (fewer are made on one thread); Numba's
        setting is restored afterwards. Default ``None``: Numba's current setting.
    contact_tol : float, optional
        Gap tolerance of :attr:`Specimen.coordination` [-], in ``[0, 1)``. Default
        ``None``: ``overlap_tol`` (the final decompression of a jammed packing opens its
        contacts by up to about ``overlap_tol / 2`` of the sum of the radii).
    verbose : bool, optional
        Print one line per growth round. Default ``False``.
    backend : {"cpu", "gpu", "auto"} or Backend, optional
        Where the relaxation runs: ``"gpu"`` on the device (one thread per particle, the
        sums by CuPy; :mod:`kernels.packing_cuda`), ``"auto"`` there when a GPU is usable.
        A GPU specimen is reproducible from its seed on the same device, but not equal to
        the CPU's bit for bit (the sums over particles are taken in another order).
        Default ``"cpu"``.

    Returns
    -------
    Specimen
        Centres, radii, container and the measured solid fraction, coordination and
        overlap.

    Raises
    ------
    PackingError
        (a ``ValueError``) a bad argument, or a container too small for the particles at
        full size; ``field`` names the argument to change (``"count"``, ``"shape"``,
        ``"size"``, ``"radius"``, ``"distribution"``, ``"target_fraction"``,
        ``"overlap_tol"``, ``"max_iterations"``, ``"threads"``, ``"contact_tol"``,
        ``"backend"``).

    Examples
    --------
    >>> from granular.particles.packing import dense_packing
    >>> spec = dense_packing(500, "sphere", radius=(0.4, 0.6), distribution="lognormal", seed=3)
    >>> spec.x.shape, spec.solid_fraction > 0.55, spec.max_overlap <= 1e-3
    ((500, 3), True, True)
    """
    count = _check_count(count)
    if shape not in SHAPES:
        raise PackingError(f"shape: one of {', '.join(SHAPES)}, got {shape!r}", "shape")
    if distribution not in DISTRIBUTIONS:
        raise PackingError(f"distribution: one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}", "distribution")
    r_lo, r_hi, _ = _check_radius(radius)
    if size is not None:
        size = _check_size(shape, size)
    if target_fraction is not None:
        if size is not None:
            raise PackingError("target_fraction: give size or target_fraction, not both (with size, count and "
                               "radius fix the solid fraction)", "target_fraction")  # fmt: skip
        if not (isinstance(target_fraction, (int, float, np.floating, np.integer)) and 0 < target_fraction < 0.9):
            raise PackingError(f"target_fraction: a number in (0, 0.9), got {target_fraction!r}", "target_fraction")
        target_fraction = float(target_fraction)
    if not (isinstance(overlap_tol, (int, float, np.floating, np.integer)) and 0 < overlap_tol <= 0.1):
        raise PackingError(f"overlap_tol: a number in (0, 0.1], got {overlap_tol!r}", "overlap_tol")
    overlap_tol = float(overlap_tol)
    if contact_tol is None:
        contact_tol = overlap_tol
    if not (isinstance(contact_tol, (int, float, np.floating, np.integer)) and 0 <= contact_tol < 1):
        raise PackingError(f"contact_tol: a number in [0, 1), got {contact_tol!r}", "contact_tol")
    if isinstance(max_iterations, (bool, np.bool_)) or not isinstance(max_iterations, (int, np.integer)) \
            or max_iterations < 1:  # fmt: skip
        raise PackingError(f"max_iterations: an integer >= 1, got {max_iterations!r}", "max_iterations")
    limit = numba.config.NUMBA_NUM_THREADS
    if threads is not None and (isinstance(threads, (bool, np.bool_)) or not isinstance(threads, (int, np.integer))
                                or not 1 <= threads <= limit):  # fmt: skip
        raise PackingError(f"threads: an integer in 1 .. {limit}, or None, got {threads!r}", "threads")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, (bool, np.bool_)):
        raise PackingError(f"seed: an integer, got {seed!r}", "seed")

    try:
        be = resolve_backend(backend)
    except (ValueError, BackendError) as exc:
        raise PackingError(f"backend: {exc}", "backend") from None

    rng = np.random.default_rng(seed)
    radii, law = draw_radii(count, (r_lo, r_hi), distribution, rng)
    solid = float(np.sum(4.0 / 3.0 * math.pi * radii**3))

    # the container, and how far s may grow
    field = "size"
    fit = False
    if size is None:
        aspect = {"sphere": (1.0,), "cylinder": (1.0, 2.0), "box": (1.0, 1.0, 1.0)}[shape]
        field = "target_fraction" if target_fraction is not None else "count"
        fit = target_fraction is None
        size = _size_for_volume(shape, solid / (target_fraction or NOMINAL_FRACTION), aspect)
    s_max = math.inf if fit else 1.0
    fraction_full = solid / container_volume(shape, size)
    if not fit:
        if r_hi > float(_half_extents(shape, size).min()):
            raise PackingError(f"{field}: the container {shape} {size} is smaller than a particle of radius {r_hi}",
                               field)  # fmt: skip
        if fraction_full > 0.9:
            raise PackingError(f"{field}: the particles fill {fraction_full:.3f} of the container at full size; a "
                               f"random packing holds less than 0.9 (equal spheres about 0.64)", field)  # fmt: skip

    geom = _geom(shape, size)
    code = _CODES[shape]
    s = min(1.0, (START_FRACTION / fraction_full) ** (1.0 / 3.0)) if not fit else \
        (START_FRACTION / fraction_full) ** (1.0 / 3.0)  # fmt: skip
    x = _random_inside(rng, count, shape, size, s * radii)
    radii = np.ascontiguousarray(radii)
    r_min = float(radii.min())
    r_mean = float(radii.mean())

    n = count
    volume = container_volume(shape, size)
    gpu = be.name == "gpu"
    xp = be.xp
    x = be.asarray(x)
    v = xp.zeros((n, 3))
    f = xp.zeros((n, 3))
    e_i = xp.zeros(n)
    ov_i = xp.zeros(n)
    disp2 = xp.zeros(n)
    x_ref = xp.empty((n, 3))
    st = np.zeros(6)
    geom_b = be.asarray(geom)
    old_threads = numba.get_num_threads()
    if threads is not None:
        numba.set_num_threads(int(threads))
    try:
        nthreads = numba.get_num_threads()
        chunks = _CHUNKS_PER_THREAD * nthreads if (n >= PARALLEL_ABOVE and nthreads > 1) else 1
        lists = _DeviceLists(be, n, shape, size) if gpu else _Lists(n, shape, size, chunks)
        iterations = 0
        ds = _DS0
        shrunk = False
        x_ok, s_ok = None, 0.0
        ds_min = 0.5 * overlap_tol
        while True:
            rad_h = s * radii
            rad = be.asarray(rad_h) if gpu else rad_h
            tol_abs = overlap_tol * s * r_min
            skin = _SKIN * s * r_mean
            st[:] = (K.DT0, K.ALPHA0, 0.0, math.inf, math.inf, 0.0)
            v[:] = 0.0
            round_steps = 0
            while True:  # one relaxation round, rebuilding the lists as needed
                lists.build(x, rad, skin, float(rad_h.max()))
                x_ref[:] = x
                budget = min(_ROUND_STEPS - round_steps, max_iterations - iterations)
                if gpu:
                    status, steps, energy, ovmax = _relax_device(lists, x, v, f, e_i, ov_i, disp2, x_ref, rad, code,
                                                                 geom_b, 0.5 * skin, tol_abs, budget, st)  # fmt: skip
                else:
                    status, steps, energy, ovmax = _relax(x, v, f, e_i, ov_i, disp2, x_ref, rad, lists.cid, lists.start,
                                                          lists.order, lists.dims, lists.nbr_start, lists.nbr, code,
                                                          geom, 0.5 * skin, tol_abs, budget, st, chunks)  # fmt: skip
                iterations += steps
                round_steps += steps
                if status != 1:
                    break
            if verbose:
                print(f"s {s:.6f} fraction {solid * s**3 / volume:.4f} ds {ds:.2e} status {status} steps "
                      f"{round_steps} energy {energy:.3e} overlap/tol {ovmax / tol_abs:.3g} total {iterations}")  # fmt: skip
            if status == 3 and iterations >= max_iterations:
                raise PackingError(f"max_iterations: {max_iterations} FIRE steps were not enough (at solid fraction "
                                   f"{solid * s**3 / volume:.3f})", "max_iterations")  # fmt: skip
            if status == 0:
                x_ok, s_ok = x.copy(), s
                if s >= s_max:
                    break
                if not shrunk and round_steps < _FAST_ROUND:
                    ds = min(1.5 * ds, _DS_MAX)
            else:
                # jammed at s (the energy stalls above the tolerance): the same positions with
                # all radii smaller by the factor 1 - q have no overlap above tol / 2
                q = lists.shrink_needed(x, rad, shape, size, 0.5 * tol_abs)
                s_dec = s * (1.0 - q)
                shrunk = True
                if q < 0.5 and s_dec > s_ok:  # a denser relaxed state than the last one
                    x_ok, s_ok = x.copy(), s_dec
                    if verbose:
                        print(f"  decompressed by {q:.2e} to fraction {solid * s_dec**3 / volume:.4f}")
                elif x_ok is None:
                    raise PackingError(f"{field}: the particles cannot be relaxed even at solid fraction "
                                       f"{solid * s**3 / volume:.3f}", field)  # fmt: skip
                else:
                    x[:] = x_ok
                ds *= 0.5
                if fit and q <= ds_min:  # jammed, to within the resolution
                    break
                if ds < ds_min:
                    if not fit:
                        raise PackingError(
                            f"{field}: the particles jam at {s_ok:.4f} times their radii (solid fraction "
                            f"{solid * s_ok**3 / volume:.3f}, asked {fraction_full:.3f}); enlarge the container "
                            f"or lower count or radius", field)  # fmt: skip
                    break
            s = min(s_ok * (1.0 + ds), s_max)
    finally:
        if threads is not None:
            numba.set_num_threads(old_threads)

    x = be.to_host(x_ok) if gpu else x_ok
    if fit:  # the container fitted to the jammed packing: radii as asked
        x = x / s_ok
        size = tuple(c / s_ok for c in size)
    spec = Specimen(x=np.ascontiguousarray(x), radius=radii.copy(), shape=shape, size=tuple(float(c) for c in size),
                    seed=int(seed), distribution=law, solid_fraction=solid / container_volume(shape, size),
                    coordination=0.0, max_overlap=0.0, iterations=int(iterations),
                    contact_tol=float(contact_tol))  # fmt: skip
    spec.coordination = 2.0 * len(spec.pairs(1.0 + contact_tol)) / n
    spec.max_overlap = spec.overlaps()
    return spec
