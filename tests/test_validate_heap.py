"""The heap study's measurements (``granular validate heap``): the flank fit on a heap of
known slope, Zhou et al.'s correlation and the conversion of the rolling friction, and a
small pour through the study's machinery."""

import math

import numpy as np
import pytest

from granular.validation import heap


def _slot_heap(angle_deg, d=0.005, half=0.1, depth=0.02, n=40_000, seed=0):
    """Grain centres drawn uniformly in a slot under the surface of a symmetric heap of
    slope ``angle_deg``, ``z + r <= (half - |x|) tan(angle)`` (overlapping: only the
    tops matter)."""
    rng = np.random.default_rng(seed)
    r = 0.5 * d
    x = np.column_stack([rng.uniform(-half, half, n), rng.uniform(-0.5 * depth, 0.5 * depth, n),
                         rng.uniform(0.0, half, n)])  # fmt: skip
    surface = (half - np.abs(x[:, 0])) * math.tan(math.radians(angle_deg))
    keep = x[:, 2] + r <= surface
    return x[keep], np.full(int(keep.sum()), r)


@pytest.mark.parametrize("angle", [20.0, 35.0])
def test_the_flank_fit_recovers_a_known_slope(angle):
    x, radius = _slot_heap(angle)
    angles, height = heap.slot_angles(x, radius)
    assert height == pytest.approx(float((x[:, 2] + radius).max()))
    # the highest grain tops sample a staircase under the surface: within a degree
    assert angles == pytest.approx([angle, angle], abs=1.0)


def test_the_flank_fit_tells_the_two_sides_apart():
    x, radius = _slot_heap(30.0)
    # the right side lowered to 0.6 of its surface: a flank of slope 0.6 tan(30°)
    surface = (0.1 - np.abs(x[:, 0])) * math.tan(math.radians(30.0))
    keep = (x[:, 0] < 0) | (x[:, 2] + radius <= 0.6 * surface)
    angles, _ = heap.slot_angles(x[keep], radius[keep])
    assert angles[0] == pytest.approx(30.0, abs=1.0)
    assert angles[1] == pytest.approx(math.degrees(math.atan(0.6 * math.tan(math.radians(30.0)))), abs=1.5)


def test_zhou_correlation():
    # the correlation's prefactor at unit arguments, and its powers
    assert heap.zhou_angle(1.0, 1.0, 1.0, 1.0, 1.0) == pytest.approx(68.61)
    assert heap.zhou_angle(0.5, 1.0, 1.0, 1.0, 1.0) == pytest.approx(68.61 * 0.5**0.27)
    assert heap.zhou_angle(1.0, 1.0, 1.0, 1.0, 32.0) == pytest.approx(68.61 / 2.0)
    value = 68.61 * 0.4**0.27 * 0.3**0.22 * 0.05**0.06 * 0.1**0.12 * 3.0**-0.2
    assert heap.zhou_angle(0.4, 0.3, 0.05, 0.1, 3.0) == pytest.approx(value, rel=1e-12)


def test_rolling_lengths_follow_the_couple_limit():
    # |M_r| <= μ_r R* F_n: R* = r/2 between equal grains, r against a wall
    assert heap.rolling_lengths(0.1, 2.5) == pytest.approx((0.125, 0.25))
    mm = heap.rolling_lengths(heap.GRAIN["rolling_friction"], 0.5 * heap.D * 1e3)
    expected = heap.zhou_angle(0.3, 0.3, mm[0], mm[1], heap.D * 1e3)
    assert heap.correlation(0.3) == pytest.approx(expected)
    assert heap.correlation(0.6) > heap.correlation(0.3)


def test_a_small_pour(monkeypatch):
    """A few grains poured through the study's machinery: the ledger is in the series,
    the energy balance closes and what entered is what is there plus what ran off."""
    monkeypatch.setattr(heap, "SETTLE_CHUNK", 0.05)
    h = heap.pour(0.5, 6.0 * heap.D, 0.04, t_settle=0.05)
    assert h["ledger"]
    assert h["inserted"] == pytest.approx(heap.RATE * 0.04, abs=1.0)
    assert h["grains"] == 1 + h["inserted"] - h["removed"]
    assert h["energy_drift"] < 0.02
    assert len(h["angles"]) == 2
