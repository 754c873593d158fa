"""The compensated addition every force sum goes through (kernels.laws.compensated_add):
its correction is the exact rounding error of each addition, the same as Neumaier's
branch would give, and a particle's few terms come out correctly rounded."""

from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from kernels import laws

cadd = njit(laws.compensated_add)


def _neumaier(s, c, x):
    """Neumaier's form, with the comparison of magnitudes, written out independently."""
    t = s + x
    if abs(s) >= abs(x):
        return t, c + ((s - t) + x)
    return t, c + ((x - t) + s)


def _operands(rng, dtype, count):
    """Pairs over a wide range of magnitudes, both signs, either one larger, with exact
    ties and cancellations mixed in."""
    lo, hi = (-60, 60) if dtype == np.float64 else (-30, 30)
    a = rng.normal(size=count) * 2.0 ** rng.integers(lo, hi, size=count)
    b = rng.normal(size=count) * 2.0 ** rng.integers(lo, hi, size=count)
    b[::7] = -a[::7]  # exact cancellation
    b[1::7] = a[1::7]  # equal magnitudes
    b[2::7] = -a[2::7] * (1.0 + 2.0**-20)  # near cancellation
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_correction_is_the_exact_rounding_error_of_each_addition(rng, dtype):
    a, b = _operands(rng, dtype, 20000)
    zero = dtype(0.0)
    for s, x in zip(a, b):
        t, e = cadd(s, zero, x)
        assert dtype(t) == t and dtype(e) == e  # computed in the operands' precision
        # exact: the rounded sum and its correction add up to the true sum
        assert Fraction(float(t)) + Fraction(float(e)) == Fraction(float(s)) + Fraction(float(x)), (s, x)
        tn, en = _neumaier(s, zero, x)
        assert t == tn and e == en, (s, x, e, en)


def _nearest(dtype, exact):
    """``exact`` correctly rounded to ``dtype`` (no double rounding through float64)."""
    f = dtype(float(exact))
    near = [np.nextafter(f, dtype(-np.inf)), f, np.nextafter(f, dtype(np.inf))]
    return min(near, key=lambda g: (abs(Fraction(float(g)) - exact), int(np.asarray(g).view(f"u{g.itemsize}")) & 1))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_particles_terms_are_summed_correctly_rounded(rng, dtype):
    """Six to thirty terms of mixed signs and magnitudes (a particle's contacts): the sum
    plus its correction is the correctly rounded sum, whatever the order of the terms;
    plain summation is not."""
    plain_wrong = 0
    for trial in range(400):
        m = int(rng.integers(6, 31))
        terms = (rng.normal(size=m) * 10.0 ** rng.uniform(-3, 3, size=m)).astype(dtype)
        exact = sum((Fraction(float(v)) for v in terms), Fraction(0))
        want = _nearest(dtype, exact)
        for order in (terms, terms[::-1], rng.permutation(terms)):
            s = c = dtype(0.0)
            for v in order:
                s, c = cadd(s, c, v)
            assert s + c == want, (trial, order)
        p = dtype(0.0)
        for v in terms:
            p = p + v
        plain_wrong += bool(p != want)
    assert plain_wrong > 40  # the test's sums are ones where compensation matters


def test_fast2sum_without_the_ordering_would_fail_this_test(rng):
    """The check above can fail: ``(s - t) + x`` taken whatever the magnitudes is not the
    exact error when ``|x| > |s|``."""
    a, b = _operands(rng, np.float64, 2000)
    inexact = 0
    for s, x in zip(a, b):
        t = s + x
        e = (s - t) + x
        inexact += Fraction(float(t)) + Fraction(float(e)) != Fraction(float(s)) + Fraction(float(x))
    assert inexact > 100
