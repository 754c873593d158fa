"""The paper's torus impact (paper 003, Sect. 4.1) as a model.

Given by the paper: ``N_p = 80``, ``D_t = 3``, ``m = J = 1``, ``D_p = D_t sin(π/N_p)``,
``K^m = 10``, ``K^a = K^s = 200``, ``K^pp = 2100`` (also used for the wall),
``v0 = 1`` toward a wall with normal ``[1, 0, 0]`` at ``x = 0``.

Chosen here (the paper does not say): the ring lies in the ``x-y`` plane (it hits the
wall edge-on, like a wheel), and its nearest particle starts one particle diameter from
the wall (centre at ``x = 1.5 D_p``), so contact begins at ``t = D_p / v0 ≈ 0.118``.
"""

from __future__ import annotations

import math

import numpy as np

from .builder import ModelBuilder
from .shapes import add_torus

N_P = 80
D_T = 3.0
D_P = D_T * math.sin(math.pi / N_P)
K_M, K_A, K_S, K_PP = 10.0, 200.0, 200.0, 2100.0
V0 = 1.0


def torus_builder(wall=True, velocity=(-V0, 0.0, 0.0), omega=(0.0, 0.0, 0.0), normal=(0.0, 0.0, 1.0),
                  strain_max=np.inf, angle_max=np.inf, bonded_contacts=True) -> ModelBuilder:  # fmt: skip
    """A builder holding the paper's torus (and wall); velocities may be per particle."""
    b = ModelBuilder()
    center = (1.5 * D_P + 0.5 * D_T, 0.0, 0.0)
    add_torus(b, N_P, D_T, center=center, normal=normal, velocity=velocity, omega=omega,
              ka=K_A, ks=K_S, km=K_M, strain_max=strain_max, angle_max=angle_max)  # fmt: skip
    b.set_contacts(K_PP, bonded_contacts=bonded_contacts)
    if wall:
        b.add_wall([1.0, 0.0, 0.0], 0.0, k=K_PP)
    return b


def torus_model(backend="cpu", **kwargs):
    return torus_builder(**kwargs).finalize(backend)
