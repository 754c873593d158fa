"""The hopper study's measurements (``granular validate hopper``): the Beverloo fit, the
bulk density, and the silo's plate with its outlet."""

import math

import numpy as np
import pytest

from granular import TriangleMesh
from granular.validation import hopper


@pytest.mark.parametrize("C,k", [(0.58, 1.5), (0.62, 2.4)])
def test_the_beverloo_fit_gives_back_c_and_k(C, k):
    d, rho_b = 0.003, 1500.0
    D = np.array([5.0, 6.0, 7.0, 8.0]) * d
    W = C * rho_b * math.sqrt(9.81) * (D - k * d) ** 2.5
    fit = hopper.beverloo(D, W, rho_b, d=d)
    assert (fit["C"], fit["k"]) == pytest.approx((C, k), rel=1e-9)
    assert fit["residual"] < 1e-12
    # a rate off the 5/2 law shows in the residual
    assert hopper.beverloo(D, W * np.array([1.0, 1.1, 1.0, 1.0]), rho_b, d=d)["residual"] > 0.01


def test_the_bulk_density_of_a_simple_cubic_packing():
    """Grains of diameter 2r on a cubic lattice of spacing 2r fill pi/6 of space."""
    r = 0.001
    k = np.arange(-30, 31) * 2 * r
    x = np.stack(np.meshgrid(k, k, np.arange(0, 25) * 2 * r + r, indexing="ij"), -1).reshape(-1, 3)
    rho = hopper.bulk_density(x, np.full(len(x), r))
    assert rho / hopper.GRAIN["density"] == pytest.approx(math.pi / 6, rel=0.03)


def test_the_plate_is_a_flat_ring_with_a_round_outlet():
    plate = TriangleMesh.annulus(0.03, 0.009, segments=64)
    v = plate.vertices
    assert np.allclose(v[:, 2], 0.0)
    rho = np.hypot(v[:, 0], v[:, 1])
    assert np.allclose(np.sort(rho)[:64], 0.009) and np.allclose(np.sort(rho)[64:], 0.03)
    a, b, c = (v[plate.triangles[:, j]] for j in range(3))
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1).sum()
    ring = 0.5 * 64 * math.sin(2 * math.pi / 64) * (0.03**2 - 0.009**2)  # two inscribed 64-gons
    assert area == pytest.approx(ring, rel=1e-12)
    with pytest.raises(ValueError, match="inner < outer"):
        TriangleMesh.annulus(0.01, 0.02)
