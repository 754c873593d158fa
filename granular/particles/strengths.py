"""Bond strengths that differ from bond to bond, drawn from a distribution with a seed.

A cemented granular solid does not break at one stress: the strengths of its bonds
scatter, and that scatter shapes the damage curve. Bonded-particle models draw them per
bond: Potyondy & Cundall (Int. J. Rock Mech. Min. Sci. 41 (2004) 1329) from a normal
distribution given by its mean and standard deviation, others from a Weibull
distribution (the weakest-link statistics of brittle materials, W. Weibull, J. Appl.
Mech. 18 (1951) 293), given by its mean and modulus ``m`` (a larger ``m``, less scatter).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["draw_strengths"]

LAWS = ("normal", "weibull")


def draw_strengths(mean, count, law="weibull", modulus=None, cov=None, seed=0) -> np.ndarray:
    """``count`` strengths of a given mean, one per bond.

    Parameters
    ----------
    mean : float
        Mean strength [the strength's unit], > 0.
    count : int
        Number of bonds, >= 0.
    law : {"weibull", "normal"}, optional
        ``"weibull"``: ``P(s) = 1 - exp(-(s/s0)^m)`` with ``s0 = mean / Γ(1 + 1/m)``;
        ``"normal"``: mean and standard deviation ``cov · mean``, redrawn below zero (so
        the mean of the result is slightly above ``mean`` for large ``cov``). Default
        ``"weibull"``.
    modulus : float, optional
        Weibull modulus ``m`` > 0 (``"weibull"`` only; required).
    cov : float, optional
        Coefficient of variation >= 0 (``"normal"`` only; required).
    seed : int, optional
        Seed of :func:`numpy.random.default_rng`: the same seed, the same strengths.

    Returns
    -------
    ndarray, (count,) float64
        The strengths, all > 0.

    Raises
    ------
    ValueError
        An unknown ``law``, a missing or out-of-range ``modulus`` or ``cov``, ``mean`` not
        > 0; the message names the argument.

    Examples
    --------
    >>> from granular.particles.strengths import draw_strengths
    >>> s = draw_strengths(2.0e6, 100000, "weibull", modulus=5.0, seed=1)
    >>> bool(abs(s.mean() / 2.0e6 - 1) < 0.01)
    True
    """
    mean = float(mean)
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"mean: must be finite and > 0, got {mean!r}")
    count = int(count)
    if count < 0:
        raise ValueError(f"count: must be >= 0, got {count}")
    rng = np.random.default_rng(seed)
    if law == "weibull":
        if modulus is None or cov is not None:
            raise ValueError("modulus: the Weibull law takes its modulus m (and no cov)")
        m = float(modulus)
        if not (math.isfinite(m) and m > 0):
            raise ValueError(f"modulus: must be finite and > 0, got {modulus!r}")
        return mean / math.gamma(1.0 + 1.0 / m) * rng.weibull(m, count)
    if law == "normal":
        if cov is None or modulus is not None:
            raise ValueError("cov: the normal law takes its coefficient of variation (and no modulus)")
        c = float(cov)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"cov: must be finite and >= 0, got {cov!r}")
        out = rng.normal(mean, c * mean, count)
        bad = out <= 0
        while bad.any():
            out[bad] = rng.normal(mean, c * mean, int(bad.sum()))
            bad = out <= 0
        return out
    raise ValueError(f"law: must be one of {LAWS}, got {law!r}")
