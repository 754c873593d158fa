"""The angle-of-repose measurement of ``granular validate pile`` on synthetic heaps of
known slope (the full study is a long validation run: ``granular validate pile``)."""

import numpy as np
import pytest

from granular.validation.pile import repose_angle


def cone(angle_deg, base=0.3, r=0.01, seed=0):
    """Grains of radius ``r`` on a jittered lattice filling a cone of base radius
    ``base`` and slope ``angle_deg`` around (0.5, 0.5)."""
    rng = np.random.default_rng(seed)
    height = base * np.tan(np.radians(angle_deg))
    g = np.arange(-base, base, 2 * r)
    x, y, z = np.meshgrid(g, g, np.arange(0.0, height, 2 * r), indexing="ij")
    pts = np.stack([x.ravel(), y.ravel(), z.ravel()], 1) + rng.uniform(-0.1, 0.1, (x.size, 3)) * r
    inside = pts[:, 2] + r <= height - np.tan(np.radians(angle_deg)) * np.hypot(pts[:, 0], pts[:, 1])
    pts = pts[inside & (pts[:, 2] >= 0)]
    pts[:, :2] += 0.5
    return pts, np.full(len(pts), r)


@pytest.mark.parametrize("angle", [20.0, 30.0, 40.0])
def test_the_slope_of_a_cone_is_recovered(angle):
    x, radius = cone(angle, r=0.004)
    angles, height = repose_angle(x, radius, (0.5, 0.5))
    assert np.isfinite(angles).all()
    assert abs(np.mean(angles) - angle) < 1.5
    assert np.ptp(angles) < 5.0
    assert abs(height - 0.3 * np.tan(np.radians(angle))) < 0.012  # within 1.5 grain diameters


def test_a_flat_layer_has_no_flank():
    rng = np.random.default_rng(1)
    x = np.column_stack([rng.uniform(0, 1, 4000), rng.uniform(0, 1, 4000), np.full(4000, 0.01)])
    angles, _ = repose_angle(x, np.full(4000, 0.01), (0.5, 0.5))
    assert np.isnan(angles).all() or np.nanmax(np.abs(angles)) < 2.0
