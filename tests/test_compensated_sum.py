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


def _row_adder(width):
    """A loop adding rows of ``xs`` to the running sums of rows ``rows[k]`` of ``acc``
    through the direct pass's vector addition (``kernels.cpu._acc_add``), and the same
    through :func:`kernels.laws.compensated_add` one component at a time."""
    from kernels.cpu import _acc_add

    E = laws.acc_layout(width == 6)[1]

    if width == 3:

        @njit(error_model="numpy")
        def lanes(acc, rows, xs):
            for k in range(rows.shape[0]):
                _acc_add(acc, rows[k], (xs[k, 0], xs[k, 1], xs[k, 2]))

    else:

        @njit(error_model="numpy")
        def lanes(acc, rows, xs):
            for k in range(rows.shape[0]):
                _acc_add(acc, rows[k], (xs[k, 0], xs[k, 1], xs[k, 2], xs[k, 3], xs[k, 4], xs[k, 5]))

    @njit(error_model="numpy")
    def scalar(acc, rows, xs):
        for k in range(rows.shape[0]):
            i = rows[k]
            for c in range(xs.shape[1]):
                acc[i, c], acc[i, E + c] = cadd(acc[i, c], acc[i, E + c], xs[k, c])

    return lanes, scalar


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("width", [3, 6])
def test_the_direct_pass_adds_in_vector_lanes_with_the_same_bits(rng, dtype, width):
    """The direct pass's running sums (force 3, or force and moment 6, their corrections
    from column 4 or 8 on: ``acc_layout``) take all their components in one vector
    operation: the same bits as the scalar compensated addition of each, the unused lanes
    left at zero, and the compiled loop holds packed additions."""
    lanes, scalar = _row_adder(width)
    m = 3000
    rows = rng.integers(0, 40, size=m)
    xs = (rng.normal(size=(m, width)) * 10.0 ** rng.uniform(-6, 6, size=(m, 1))).astype(dtype)
    xs[::5] = -xs[::5][::-1]  # cancellations against earlier terms
    cols, E = laws.acc_layout(width == 6)
    a = np.zeros((40, cols), dtype=dtype)
    b = a.copy()
    lanes(a, rows, xs)
    scalar(b, rows, xs)
    np.testing.assert_array_equal(a, b)
    assert a[:, E:].any()  # the corrections were exercised
    assert not a[:, width:E].any() and not a[:, E + width :].any()
    asm = lanes.inspect_asm(lanes.signatures[0])
    packed = "vaddpd" if dtype == np.float64 else "vaddps"
    assert packed in asm, "the running sums are no longer added in vector lanes"
