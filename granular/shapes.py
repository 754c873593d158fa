"""Geometry helpers that fill a :class:`~granular.model.ModelBuilder`: particle-binder
solids from the papers and lattices for large scenes."""

from __future__ import annotations

import math

import numpy as np


def ring_positions(n_p: int, ring_diameter: float, center=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0)) -> np.ndarray:
    """``n_p`` points evenly on a circle of diameter ``ring_diameter`` about ``center`` in
    the plane with unit ``normal``; (n_p, 3). The first point lies along the in-plane
    direction closest to ``-e1`` (towards a wall at lower ``x``), so for the default
    normal particle 0 is the one nearest a wall with normal ``e1``."""
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
              ka=200.0, ks=200.0, km=10.0, strain_max=np.inf, angle_max=np.inf):  # fmt: skip
    """The particle-binder torus of paper 003, Sect. 4.1: a closed chain of ``n_p`` spheres
    of diameter ``D_p = D_t sin(π/n_p)`` (neighbours touch) on a ring of diameter
    ``D_t = ring_diameter``, each bonded to its two neighbours. Returns
    ``(particle_ids, bond_ids, D_p)``."""
    x = ring_positions(n_p, ring_diameter, center, normal)
    d_p = ring_diameter * math.sin(math.pi / n_p)
    ids = builder.add_particles(x, v=velocity, omega=omega, mass=mass, inertia=inertia, radius=0.5 * d_p)
    pairs = np.stack([ids, np.roll(ids, -1)], axis=1)
    bonds = builder.add_bonds(pairs, ka=ka, ks=ks, km=km, strain_max=strain_max, angle_max=angle_max)
    return ids, bonds, d_p
