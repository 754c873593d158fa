"""Fragments of a bonded solid: the connected components of its intact bonds.

After an impact a particle-binder solid is in pieces. A *fragment* is a set of particles
joined by chains of intact bonds (a particle with no intact bond left is a fragment of
its own); with ``contacts=True`` touching particles (``|x_i - x_j| < r_i + r_j``, from
the neighbour list) are joined too, as a clump of loose grains resting on each other.
The components are labelled on the model's backend, on the device on a GPU
(:mod:`kernels.components`), and every figure here comes from those labels:

* the fragment of each particle, numbered by mass: fragment 0 is the heaviest, ties
  broken by the smallest particle index, so the numbering depends on the state only;
* per fragment: particle count, mass, centre of mass and velocity of the centre of mass;
* the *damage ratio* ``D = broken bonds / initial bonds`` and the mass fraction of the
  largest fragment, the two quantities impact studies plot against the impact velocity
  (e.g. Thornton, Yin & Adams, J. Phys. D 29 (1996) 424; Moreno-Atanasio & Ghadiri,
  Chem. Eng. Sci. 61 (2006) 2476).

A run of a model whose bonds can break writes these as columns of ``series.csv``
(``damage``, ``fragments``, ``largest_fragment``), the fragment number of each particle
in the ParaView frames (point data ``fragment``) and ``fragments.csv`` at the end
(:func:`write_csv`). The run's ``[run] fragments`` key (``Simulation(...,
fragments=...)``) says which fragments: ``"bonds"`` (the default) joins particles by
intact bonds only, ``"contacts"`` by touching contacts too (``contacts=True`` here; the
model needs particle contacts, whose neighbour list gives the touching pairs). The
damage ratio is broken / initial bonds either way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from kernels import components

from ..io._atomic import atomic_write_bytes
from .neighbors import min_image

__all__ = ["Fragments", "fragment_labels", "fragments", "numbers", "per_replica", "summary", "write_csv"]

#: Columns of ``fragments.csv``, one row per fragment (heaviest first).
CSV_COLUMNS = ("fragment", "particles", "mass", "x", "y", "z", "vx", "vy", "vz")


def fragment_labels(model, state, contacts: bool = False):
    """Component label of each particle: the smallest particle index of its fragment.

    Parameters
    ----------
    model : Model
        The model (its bonds, radii and neighbour list).
    state : State
        The state (which bonds are broken; positions for ``contacts``).
    contacts : bool, optional
        Also join particles that touch (from the state's neighbour list). Default False:
        intact bonds only.

    Returns
    -------
    array, (N,) int64
        Labels on the model's backend (a CuPy array on a GPU).

    Raises
    ------
    ValueError
        ``contacts=True`` for a model without a neighbour list (no particle contacts).
    """
    be = model.backend
    xp = be.xp
    if model.n_bonds:
        a, b = model.bonds.a, model.bonds.b
        broken = state.broken
    else:
        a = b = xp.zeros(0, dtype=np.int64)
        broken = xp.zeros(0, dtype=np.int8)
    nbr = count = None
    if contacts:
        nl = model.neighbors_of(state)
        if nl is None:
            raise ValueError("contacts: this model has no particle contacts (no neighbour list) to join fragments by")
        nbr, count = nl.nbr, nl.count
    period = model.period if model.period.shape[0] else None  # touching by the minimum image
    if be.name == "cpu":
        return components.label_cpu(a, b, broken, state.x, model.radius, nbr, count, period=period)
    be.synchronize()  # the step's stream has finished with the state
    return components.label_cuda(xp, be.kernels.to_device, a, b, broken, state.x, model.radius, nbr, count,
                                 period=period)  # fmt: skip


@dataclass
class Fragments:
    """The fragments of one state (host arrays, heaviest fragment first).

    ``fragment`` (N,) int64: the fragment of each particle; ``particles`` (F,) int64,
    ``mass`` (F,), ``center`` (F, 3), ``velocity`` (F, 3): count, mass [M], centre of mass
    [L] and its velocity [L/T] of each fragment (in a periodic box the centre of the
    fragment's particles each at its image nearest the fragment's first particle, put back
    into the box: right for a fragment shorter than half the box); ``bonds``, ``broken``:
    the model's bonds and how many are broken."""

    fragment: np.ndarray
    particles: np.ndarray
    mass: np.ndarray
    center: np.ndarray
    velocity: np.ndarray
    bonds: int
    broken: int

    @property
    def count(self) -> int:
        """Number of fragments (single particles included)."""
        return int(self.mass.shape[0])

    @property
    def damage(self) -> float:
        """Damage ratio: broken bonds / initial bonds (0 without bonds)."""
        return self.broken / self.bonds if self.bonds else 0.0

    @property
    def largest_fraction(self) -> float:
        """Mass of the largest fragment / total mass."""
        total = float(self.mass.sum())
        return float(self.mass[0]) / total if total > 0 else 0.0

    def sizes_cumulative(self):
        """The cumulative fragment-mass distribution: fragment masses ascending and the
        fraction of the total mass in fragments no heavier than each ``(m, P(≤ m))``."""
        m = np.sort(self.mass)
        return m, np.cumsum(m) / m.sum()


def _numbered(labels, m):
    """Fragment numbers by mass (heaviest first, ties by the smallest particle index) from
    component labels, and the fragments' masses in that order."""
    roots, inverse = np.unique(labels, return_inverse=True)  # roots ascending: smallest index of each
    mass = np.bincount(inverse, weights=m)
    order = np.lexsort((roots, -mass))
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[inverse].astype(np.int64), mass[order]


def summary(model, state, contacts: bool = False) -> dict:
    """The ``series.csv`` columns of fragmentation: ``damage`` (broken / initial bonds),
    ``fragments`` (their number, single particles included) and ``largest_fragment``
    (its mass fraction); fragments joined by intact bonds, and with ``contacts`` by
    touching contacts too (:func:`fragment_labels`)."""
    be = model.backend
    m = np.asarray(be.to_host(model.mass), dtype=np.float64)
    _, mass = _numbered(be.to_host(fragment_labels(model, state, contacts)), m)
    broken = int(be.to_host(state.broken).sum()) if model.n_bonds else 0
    return {"damage": broken / model.n_bonds if model.n_bonds else 0.0, "fragments": float(mass.size),
            "largest_fragment": float(mass[0] / mass.sum())}  # fmt: skip


def numbers(model, state, contacts: bool = False):
    """The fragment of each particle, numbered by mass (host, (N,) int64): the point data
    of a frame, without the per-fragment table of :func:`fragments`; ``contacts`` as in
    :func:`fragment_labels`."""
    m = np.asarray(model.backend.to_host(model.mass), dtype=np.float64)
    return _numbered(model.backend.to_host(fragment_labels(model, state, contacts)), m)[0]


def per_replica(model, state) -> dict:
    """:func:`summary` of each replica of a model of replicas (fragments never span two:
    replicas share no bond): ``damage``, ``fragments``, ``largest_fragment``, each (R,)."""
    be = model.backend
    rep = np.asarray(be.to_host(model.replica), dtype=np.int64)
    count = int(model.replica_count)
    m = np.asarray(be.to_host(model.mass), dtype=np.float64)
    labels = be.to_host(fragment_labels(model, state))
    roots, inverse = np.unique(labels, return_inverse=True)
    mass = np.bincount(inverse, weights=m)
    owner = rep[roots]  # a fragment's replica: that of its smallest particle
    number = np.bincount(owner, minlength=count).astype(np.float64)
    largest = np.zeros(count)
    np.maximum.at(largest, owner, mass)
    total = np.bincount(rep, weights=m, minlength=count)
    bonds = np.zeros(count)
    broken = np.zeros(count)
    if model.n_bonds:
        of_bond = rep[model.bonds.host["a"]]
        bonds = np.bincount(of_bond, minlength=count).astype(np.float64)
        broken = np.bincount(of_bond, weights=np.asarray(be.to_host(state.broken), dtype=np.float64), minlength=count)
    damage = np.divide(broken, bonds, out=np.zeros(count), where=bonds > 0)
    return {"damage": damage, "fragments": number, "largest_fragment": largest / total}


def fragments(model, state, contacts: bool = False) -> Fragments:
    """The fragments of ``state`` (see the module docstring), numbered by mass.

    Parameters
    ----------
    model, state, contacts
        As in :func:`fragment_labels`.

    Returns
    -------
    Fragments

    Examples
    --------
    >>> import granular as gr
    >>> from granular.particles.fragments import fragments
    >>> b = gr.ModelBuilder()
    >>> _ = b.add_particles([[0, 0, 0], [1, 0, 0], [3, 0, 0]], mass=[1.0, 2.0, 4.0])
    >>> _ = b.add_bonds([[0, 1]], ka=1.0)
    >>> model = b.finalize("cpu")
    >>> f = fragments(model, model.state())
    >>> f.count, f.fragment.tolist(), f.mass.tolist()
    (2, [1, 1, 0], [4.0, 3.0])
    """
    be = model.backend
    m = np.asarray(be.to_host(model.mass), dtype=np.float64)
    frag, mass = _numbered(be.to_host(fragment_labels(model, state, contacts)), m)
    x = np.asarray(be.to_host(state.x), dtype=np.float64)
    v = np.asarray(be.to_host(state.v), dtype=np.float64)
    f = mass.size
    period = model.period
    if period.shape[0] and len(x):
        # a periodic box: each particle at its image nearest its fragment's first particle
        # (a fragment through a face stays in one piece), the centre put back into the box
        _, first = np.unique(frag, return_index=True)
        ref = x[first][frag]
        x = ref + min_image(x - ref, period)
    count = np.bincount(frag, minlength=f).astype(np.int64)
    center = np.stack([np.bincount(frag, weights=m * x[:, c], minlength=f) for c in range(3)], axis=1)
    momentum = np.stack([np.bincount(frag, weights=m * v[:, c], minlength=f) for c in range(3)], axis=1)
    center /= mass[:, None]
    if period.shape[0]:
        size = period[:, 1]
        center = np.where(size > 0, period[:, 0] + np.mod(center - period[:, 0], np.where(size > 0, size, 1.0)), center)
    velocity = momentum / mass[:, None]
    broken = int(be.to_host(state.broken).sum()) if model.n_bonds else 0
    return Fragments(frag, count, mass, center, velocity, int(model.n_bonds), broken)


def write_csv(path, frags: Fragments) -> str:
    """``fragments.csv`` at ``path``: one row per fragment, heaviest first
    (:data:`CSV_COLUMNS`); written whole to a temporary file and renamed."""
    lines = [",".join(CSV_COLUMNS)]
    for k in range(frags.count):
        c, u = frags.center[k], frags.velocity[k]
        vals = (frags.mass[k], *c, *u)
        lines.append(f"{k},{int(frags.particles[k])}," + ",".join(repr(float(v)) for v in vals))
    atomic_write_bytes(os.fspath(path), ("\n".join(lines) + "\n").encode())
    return os.fspath(path)
