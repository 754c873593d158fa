"""The drum study's measurement (``granular validate drum``): the free surface's angle
of a bed whose surface is known, and the study's set-up (grains inside the drum, apart)."""

import math

import numpy as np
import pytest

from granular.validation import drum


@pytest.mark.parametrize("degrees", [0.0, 12.0, 31.0, 44.0])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_surface_angle_of_a_tilted_bed_is_its_tilt(degrees, sign):
    """Grains on a square lattice below a plane tilted by ``degrees`` (rising either way):
    the fitted surface is the plane, to the lattice's step."""
    rng = np.random.default_rng(1)
    d = 0.0045
    k = np.arange(-12, 13) * d
    gx, gz = np.meshgrid(k, k, indexing="ij")
    x = np.column_stack([gx.ravel(), np.zeros(gx.size), gz.ravel()])
    x[:, 0] += rng.uniform(-1e-4, 1e-4, len(x))
    top = sign * math.tan(math.radians(degrees)) * x[:, 0]
    x = x[x[:, 2] <= top]
    r = np.full(len(x), d / 2)
    angle = drum.surface_angle(x, r)
    # the highest grain in a bin sits up to one lattice step below the plane: a slope error
    # of about a step over the fitted width
    assert angle == pytest.approx(degrees, abs=math.degrees(d / (0.55 * drum.R)) + 0.5)


def test_too_few_grains_give_no_angle():
    assert math.isnan(drum.surface_angle(np.zeros((2, 3)), np.full(2, 0.002)))


def test_the_grains_start_inside_the_drum_and_apart():
    x, r = drum.fill()
    gap = np.linalg.norm(x[:, None] - x[None], axis=2) - (r[:, None] + r[None]) + np.eye(len(x))
    assert gap.min() > 0
    assert (np.hypot(x[:, 0], x[:, 2]) + r < drum.R * math.cos(math.pi / 64)).all()
    assert (np.abs(x[:, 1]) < drum.DEPTH / 2).all()  # inside the periodic slice


@pytest.mark.parametrize("degrees", [0.0, 18.0, 33.0])
def test_the_bed_angle_of_a_tilted_circular_segment_is_its_tilt(degrees):
    """Grains filling the drum below a chord through its middle region, tilted by
    ``degrees``: the centre of mass lies on the chord's perpendicular through the axis."""
    k = np.linspace(-drum.R, drum.R, 801)
    p = np.stack(np.meshgrid(k, k, indexing="ij"), axis=-1).reshape(-1, 2)
    t = math.radians(degrees)
    n = np.array([-math.sin(t), math.cos(t)])  # the chord's upward normal
    keep = (np.hypot(p[:, 0], p[:, 1]) < drum.R) & (p @ n < -0.3 * drum.R)
    x = np.column_stack([p[keep, 0], np.zeros(keep.sum()), p[keep, 1]])
    assert drum.bed_angle(x, np.ones(len(x))) == pytest.approx(degrees, abs=0.05)


def test_the_batch_error_is_the_spread_of_the_batch_means():
    samples = np.repeat(np.arange(1.0, 7.0), 10)  # six batches of ten equal samples
    assert drum.batch_error(samples) == pytest.approx(np.std(np.arange(1.0, 7.0), ddof=1) / math.sqrt(6))
    assert drum.batch_error(np.append(samples, np.nan)) == pytest.approx(drum.batch_error(samples))
    assert math.isnan(drum.batch_error([1.0, 2.0]))  # fewer samples than batches


def test_the_batch_error_grows_with_the_samples_correlation():
    """A correlated series (AR(1), coefficient 0.9): the mean's error is about
    sqrt((1 + 0.9) / (1 - 0.9)) = 4.4 times what independent samples would give; the
    batch means see it, the naive standard error does not."""
    rng = np.random.default_rng(3)
    ratios = []
    for _ in range(20):
        a = np.zeros(6000)
        noise = rng.normal(size=a.size)
        for k in range(1, a.size):
            a[k] = 0.9 * a[k - 1] + noise[k]
        ratios.append(drum.batch_error(a) / (a.std() / math.sqrt(a.size)))
    assert 3.0 < np.median(ratios) < 5.5


def test_the_trend_is_the_weighted_line_through_the_angles():
    fr = [1e-3, 1e-2, 1e-1]
    slope, error, intercept = drum.trend(fr, [30.0, 32.0, 34.0], [0.5, 0.5, 0.5])
    assert (slope, intercept) == pytest.approx((2.0, 36.0))
    assert error == pytest.approx(0.5 / math.sqrt(2.0))  # sigma / sqrt(sum (x - mean x)^2)
    # a point with a large error barely moves the line
    slope, _, _ = drum.trend(fr + [3e-2], [30.0, 32.0, 34.0, 50.0], [0.5, 0.5, 0.5, 1e3])
    assert slope == pytest.approx(2.0, abs=1e-3)
