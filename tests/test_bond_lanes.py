"""The CPU's per-bond pass in vector lanes (kernels.bonds ``bond_lanes``) against the
scalar pass, bit for bit, and the series of the rotation vector it relies on."""

import platform

import numpy as np
import pytest
from numba import njit

from granular.backend import get_backend
from granular.particles.builder import ModelBuilder
from granular.particles.forces import bonds as bonds_module
from granular.particles.forces.bonds import bond_table
from granular.particles.integrators import ExplicitIntegrator
from kernels import bonds as bond_bodies, cpu, interactions, laws, particles
from kernels.contact_laws import hertz

_K = {"nogil": True, "_nrt": False, "error_model": "numpy"}


def _unit_quaternions(rng, angles):
    axis = rng.normal(size=(len(angles), 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    q = np.concatenate([np.cos(angles / 2)[:, None], np.sin(angles / 2)[:, None] * axis], axis=1)
    return q * rng.choice([-1.0, 1.0], size=(len(angles), 1))  # both signs of the same rotation


@pytest.mark.parametrize("dtype, ulps", [(np.float64, 4), (np.float32, 4)])
def test_the_series_is_the_rotation_vector_to_round_off_where_it_is_taken(rng, dtype, ulps):
    T = dtype
    log = njit(laws.quat_log)
    series = njit(laws.quat_log_series)
    # the tangent of half the angle, squared, from 1e-14 up to the threshold
    t = np.sqrt(np.geomspace(1e-14, laws.LOG_SERIES * 0.99, 400))
    q = _unit_quaternions(rng, 2.0 * np.arctan(t)).astype(T)
    worst = 0.0
    taken = 0
    for row in q:
        a = np.array(log(T, *row), dtype=np.float64)
        th1, th2, th3, t2 = series(T, *row)
        if not t2 < T(laws.LOG_SERIES):
            continue
        taken += 1
        b = np.array([th1, th2, th3], dtype=np.float64)
        worst = max(worst, np.abs(a - b).max() / (np.abs(a).max() * np.finfo(T).eps))
    assert taken == len(q)
    assert worst <= ulps, f"the series is {worst:.1f} ulps from atan2"
    # no rotation: the factor 2/|q0| exactly, as quat_log gives it
    for q0 in (1.0, -1.0, 0.9999999, -0.75):
        assert series(T, T(q0), T(0.0), T(0.0), T(0.0))[:3] == log(T, T(q0), T(0.0), T(0.0), T(0.0))
    # past the threshold the series is not taken (and is not claimed exact there)
    big = _unit_quaternions(rng, np.array([0.5, 1.0, 2.0, 3.0])).astype(T)
    assert all(not series(T, *row)[3] < T(laws.LOG_SERIES) for row in big)


def _bonded_model(rng, n=5, varied=False, shuffled=False):
    """A lattice of ``n³`` unit spheres bonded to their axis neighbours, with limits
    that some bonds pass once the particles are shaken (:func:`_shake`); ``varied``:
    each bond its own stiffnesses (the per-bond pass's table then has a row a bond);
    ``shuffled``: the bonds in random order (else axis by axis, along the lattice's rows)."""
    g = np.arange(n)
    x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3).astype(float)
    idx = np.arange(n**3).reshape(n, n, n)
    pairs = np.concatenate([np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1),
                            np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                            np.stack([idx[:, :, :-1].ravel(), idx[:, :, 1:].ravel()], 1)])  # fmt: skip
    if shuffled:
        pairs = pairs[rng.permutation(len(pairs))]
    b = ModelBuilder()
    b.add_particles(x, radius=0.5)
    nb = len(pairs)
    ka, ks, km = (rng.uniform(0.5, 1.5, nb) * k if varied else k for k in (200.0, 150.0, 10.0))
    b.add_bonds(pairs, ka=ka, ks=ks, km=km, strain_max=rng.uniform(0.01, 0.2, nb),
                angle_max=rng.uniform(0.05, 3.0, nb))  # fmt: skip
    b.set_contacts(100.0)
    model = b.finalize(get_backend("cpu"))
    state = model.state()
    ExplicitIntegrator("verlet").advance(model, state, 1e-4, 1)
    return model, state._engine.program.b


def _shake(rng, bundle):
    """Positions moved a little and orientations turned by angles from 1e-6 to 2.5 rad:
    bonds on both sides of the series' threshold, some past their limits."""
    dyn = bundle["dyn"]
    n = dyn.x.shape[0]
    dyn.x[:] += rng.normal(scale=0.03, size=(n, 3))
    angles = np.where(rng.random(n) < 0.7, np.geomspace(1e-6, 0.1, n), rng.uniform(0.2, 2.5, n))
    dyn.q[:] = _unit_quaternions(rng, rng.permutation(angles))
    dyn.broken[: len(dyn.broken) // 7] = 1  # some bonds broken before the step


@pytest.fixture(scope="module")
def passes():
    """The CPU's per-bond pass (``bond_range``: lanes where it can) and the scalar pass
    bond by bond, compiled once for the module's cases."""
    P = particles.build(cpu._jit, hertz)
    I = interactions.build(cpu._jit, P, hertz, cpu._prefetch_springs)
    pass_, body, buffer = I.bond_range, I.bond_eval_body, cpu._lane_buffer

    @njit(**_K)
    def by_lanes(lo, hi, update, dyn, bonds):
        pass_(lo, hi, update, dyn, bonds, buffer(dyn.x))

    @njit(**_K)
    def one_by_one(lo, hi, update, dyn, bonds):
        for k in range(lo, hi):
            body(k, update, dyn, bonds)

    return by_lanes, one_by_one


def _groups(bonds, lo, hi):
    """What :func:`kernels.bonds.build` ``bond_range`` meets in its lanes over ``[lo,
    hi)``: per group of ``LANES`` bonds, whether the ends are consecutive particles, and
    how many bonds have another row of the table than the group's first."""
    W = bond_bodies.LANES
    starts = [base if base + W <= hi else hi - W for base in range(lo, hi, W)] if hi - lo >= W else []
    lanes = np.arange(W)
    runs = [bool((bonds.a[s : s + W] == bonds.a[s] + lanes).all() and (bonds.b[s : s + W] == bonds.b[s] + lanes).all())
            for s in starts]  # fmt: skip
    others = [int((bonds.row[s : s + W] != bonds.row[s]).sum()) for s in starts]
    return runs, others


@pytest.mark.parametrize("varied, shuffled", [(False, False), (True, False), (False, True)])
def test_the_lanes_give_the_bits_of_the_scalar_pass(rng, passes, varied, shuffled):
    """The lanes read a bond's reference data and stiffnesses from the table of distinct
    rows, the scalar pass from the per-bond arrays: a lattice with shared stiffnesses
    (three rows, one per axis) and one with a row a bond; its bonds along the lattice's
    rows (groups of consecutive ends, groups sharing a row with a few others written
    over) and shuffled (each lane's ends and row gathered)."""
    _, bundle = _bonded_model(rng, varied=varied, shuffled=shuffled)
    dyn, bonds = bundle["dyn"], bundle["bonds"]
    _shake(rng, bundle)
    nb = bonds.terms.shape[0]
    W = bond_bodies.LANES
    assert nb > 3 * W and nb % W != 0  # full groups and a short one
    assert bonds.table.shape[0] == (nb if varied else 3)
    # whole, a range whose last group starts early, a range of one group and of less
    # than one (bond by bond), one bond, none
    ranges = ((0, nb, True), (5, nb - 3, True), (0, nb, False), (9, 9 + W, True), (3, 3 + W - 1, True),
              (7, 8, True), (40, 40, True))  # fmt: skip
    runs, others = [], []
    for lo, hi, _ in ranges:
        r, o = _groups(bonds, lo, hi)
        runs += r
        others += o
    if shuffled:
        assert not any(runs) and min(others) > W // 4
    elif varied:
        assert any(runs) and not all(runs) and min(others) > W // 4
    else:
        assert any(runs) and not all(runs) and 0 in others and any(0 < o <= W // 4 for o in others)
    by_lanes, one_by_one = passes
    series = njit(laws.quat_log_series)
    relative = njit(laws.quat_multiply)
    q = dyn.q
    t2 = []
    for k in range(nb):
        a, b = bonds.a[k], bonds.b[k]
        t = relative(*bonds.qref[k], q[a, 0], -q[a, 1], -q[a, 2], -q[a, 3])
        t2.append(series(np.float64, *relative(*q[b], *t))[3])
    t2 = np.array(t2)
    assert (t2 < laws.LOG_SERIES).sum() > nb // 4 and (t2 >= laws.LOG_SERIES).sum() > nb // 4

    kept = {k: getattr(dyn, k).copy() for k in ("broken", "released")}
    for lo, hi, update in ranges:
        results = []
        for run in (by_lanes, one_by_one):
            for k, a in kept.items():
                getattr(dyn, k)[:] = a
            bonds.terms[:] = np.nan
            run(lo, hi, update, dyn, bonds)
            results.append((bonds.terms.copy(), dyn.broken.copy(), dyn.released.copy()))
        (ta, ba, ra), (tb, bb, rb) = results
        assert np.array_equal(ta, tb, equal_nan=True), (lo, hi, update)
        assert np.array_equal(ba, bb) and np.array_equal(ra, rb, equal_nan=True), (lo, hi, update)
        if update and hi - lo > 100:  # the limits were met: bonds broke in the step
            assert ba.sum() > kept["broken"].sum()
    assert np.isnan(results[0][0][:40]).all()  # an empty range writes nothing

    if platform.machine() in ("x86_64", "AMD64"):
        asm = by_lanes.inspect_asm(by_lanes.signatures[0])
        assert "mulpd" in asm, "the lanes' loop was not vectorised"


@pytest.mark.parametrize("hashing", ["hash", "colliding"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_table_of_rows_gives_each_bond_its_numbers_bit_for_bit(rng, dtype, hashing, monkeypatch):
    """``bond_table``: ``table[row[k]]`` is bond ``k``'s ``(qref, n0_a, n0_b, rest
    length, ka, ks, km)`` in the model's precision, bit for bit; rows are told apart by
    their bits (``-0.0`` is not ``0.0``), equal rows are stored once, in the order of
    their first bond. Also when every row hashes alike (``colliding``): the check of the
    hashed rows against the bits falls back to comparing whole rows."""
    if hashing == "colliding":
        monkeypatch.setattr(bonds_module, "_row_hash", lambda bits: np.zeros(bits.shape[0], dtype=np.uint64))
    nb = 500
    km = 2.5  # a stiffness given once for every bond
    shared = np.c_[rng.normal(size=(7, 13)), np.full(7, km)]
    shared[4] = shared[3]
    shared[3, 5], shared[4, 5] = -0.0, 0.0  # rows 3 and 4 differ only in the sign of a zero
    pick = rng.permutation(np.arange(nb) % 7)
    data = shared[pick]
    row, table = bond_table(data[:, 4:7], data[:, 7:10], data[:, 0:4], data[:, 10], data[:, 11], data[:, 12], km,
                            dtype)  # fmt: skip
    assert row.dtype == np.int32 and table.dtype == dtype and table.shape == (7, 14)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    assert np.array_equal(table[row].view(bits), data.astype(dtype).view(bits))
    assert np.signbit(table[row][pick == 3, 5]).all() and not np.signbit(table[row][pick == 4, 5]).any()
    assert np.array_equal(row[np.sort(np.unique(pick, return_index=True)[1])], np.arange(7))  # first bond's order
    # every bond distinct: a row a bond
    cols = rng.normal(size=(nb, 14))
    row, table = bond_table(cols[:, 4:7], cols[:, 7:10], cols[:, 0:4], cols[:, 10], cols[:, 11], cols[:, 12],
                            cols[:, 13], dtype)
    assert table.shape == (nb, 14) and np.array_equal(table[row], cols.astype(dtype))
    row, table = bond_table(*(np.zeros((0, c)) for c in (3, 3, 4)), *(np.zeros(0),) * 4, dtype)
    assert row.shape == (0,) and table.shape == (0, 14)
