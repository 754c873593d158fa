"""Neighbour search (cell list + Verlet skin) against its brute-force twin."""

import numba
import numpy as np
import pytest

import granular as gr
from granular.backend import get_backend
from granular.particles.forces import forces_at
from granular.particles.neighbors import NeighborList
from granular.validation import torus_setup as T
from kernels import contact_laws


def brute_pairs(x, r, skin):
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    cut = r[:, None] + r[None] + skin
    i, j = np.nonzero((d < cut) & ~np.eye(len(x), dtype=bool))
    p = np.stack([i, j], axis=1)
    return np.unique(np.sort(p, axis=1), axis=0)


def listed(be, x, r, skin, capacity=16):
    nl = NeighborList(be, be.asarray(r), skin, capacity=capacity)
    nl.build(be.asarray(x))
    return nl


@pytest.mark.parametrize("seed", range(4))
def test_finds_exactly_the_brute_force_pairs(seed, backend):
    rng = np.random.default_rng(seed)
    n = 60 if backend.simulated else 400
    x = rng.uniform(0, 6, size=(n, 3))
    r = rng.uniform(0.2, 0.5, n)
    nl = listed(backend, x, r, skin=0.1)
    np.testing.assert_array_equal(nl.pairs(), brute_pairs(x, r, 0.1))


def test_particles_on_cell_boundaries(backend):
    """A lattice with spacing equal to the cell size: every particle sits on a cell face."""
    r = 0.5
    skin = 0.0
    cell = 2 * r + skin
    g = np.arange(4) * cell
    x = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    x = x + 1e-15 * (np.arange(len(x)) % 3)[:, None]  # some a hair inside, some exactly on
    rr = np.full(len(x), r)
    # neighbours at exactly the cutoff are not within (strict <); nudge half of them inside
    x2 = x.copy()
    x2[::2, 0] -= 1e-12
    for xx in (x, x2):
        nl = listed(backend, xx, rr, skin=1e-9)
        np.testing.assert_array_equal(nl.pairs(), brute_pairs(xx, rr, 1e-9))


def test_overflowing_cluster_regrows_without_dropping(backend):
    rng = np.random.default_rng(3)
    cluster = rng.normal(scale=0.05, size=(40, 3))  # 40 particles all within reach of each other
    far = rng.uniform(10, 20, size=(30, 3))
    x = np.concatenate([cluster, far])
    r = np.full(len(x), 0.5)
    nl = listed(backend, x, r, skin=0.05, capacity=2)
    assert nl.regrows >= 1 and nl.capacity >= 39
    np.testing.assert_array_equal(nl.pairs(), brute_pairs(x, r, 0.05))


def test_sparse_scene_uses_a_bounded_grid():
    x = np.array([[0.0, 0.0, 0.0], [1e6, 1e6, 1e6], [1e6 + 0.5, 1e6, 1e6]])
    nl = listed(get_backend("cpu"), x, np.full(3, 0.5), skin=0.1)
    np.testing.assert_array_equal(nl.pairs(), [[1, 2]])


def test_rebuild_only_after_half_the_skin():
    be = get_backend("cpu")
    x = np.random.default_rng(0).uniform(0, 5, size=(50, 3))
    nl = NeighborList(be, np.full(50, 0.3), skin=0.2)
    assert nl.update(x) and nl.builds == 1
    y = x.copy()
    y[7, 0] += 0.099
    assert not nl.update(y)
    y[7, 0] += 0.002  # now 0.101 > skin/2
    assert nl.update(y) and nl.builds == 2


def dense_model(be, search, n, seed=1):
    rng = np.random.default_rng(seed)
    b = gr.ModelBuilder()
    b.add_particles(rng.uniform(0, 2.5, size=(n, 3)), radius=rng.uniform(0.25, 0.4, n))
    b.add_bonds(np.array([[k, k + 1] for k in range(0, n - 1, 3)]), ka=50.0)
    b.set_contacts(300.0, bonded_contacts=bool(seed % 2), search=search, skin=0.07, allow_initial_overlap=True)
    return b.finalize(be)


def test_cell_list_and_all_pairs_forces_agree(backend):
    n = 40 if backend.simulated else 300
    out = []
    for search in ("cells", "all-pairs"):
        m = dense_model(backend, search, n)
        s = m.state()
        F, RM, E = forces_at(m, s.x, s.q)
        out.append((m.backend.to_host(F), E["U_pp"]))
    assert out[0][1] > 0
    np.testing.assert_array_equal(out[0][0], out[1][0])  # same pair sums, different supersets and orders
    assert out[0][1] == pytest.approx(out[1][1], rel=1e-14)


def test_torus_impact_same_trajectory_with_and_without_skin():
    runs = {}
    for label, search, skin in (("all-pairs", "all-pairs", None), ("skin 0", "cells", 0.0), ("skin", "cells", 0.03)):
        b = T.torus_builder()
        b.set_contacts(T.K_PP, search=search, skin=skin)
        m = b.finalize("cpu")
        s = m.state()
        gr.ExplicitIntegrator("verlet").run(m, s, 1e-3, 1000)
        runs[label] = (s.x.copy(), s.v.copy(), s.q.copy())
        if search == "cells":
            runs[label + " builds"] = s.neighbors.builds
    for label in ("skin 0", "skin"):
        for a, b_ in zip(runs[label], runs["all-pairs"]):
            np.testing.assert_allclose(a, b_, rtol=0, atol=1e-13)
    assert runs["skin 0 builds"] > 900  # rebuilt (nearly) every step
    assert runs["skin builds"] < runs["skin 0 builds"] / 5


def test_absurd_positions_are_binned_without_overflow():
    """The hash grid clamps cell coordinates: a particle at 1e300 or NaN lands in an edge
    cell, the build finishes and the finite pairs are still exactly the brute-force ones."""
    be = get_backend("cpu")
    nl = NeighborList(be, np.full(4, 0.5), skin=0.1)
    for bad in ([[0, 0, 0], [1e300, 0, 0], [1, 0, 0], [-1e300, 5, 0]], [[0, 0, 0], [np.nan, 0, 0], [1, 0, 0], [0, 0.5, 0]]):
        x = np.array(bad, dtype=float)
        nl.build(x)
        finite = np.isfinite(x).all(axis=1) & (np.abs(x).max(axis=1) < 1e10)
        keep = np.flatnonzero(finite)
        expected = brute_pairs(x[keep], np.full(len(keep), 0.5), 0.1)
        np.testing.assert_array_equal(nl.pairs(), keep[expected])


def test_a_non_finite_position_stops_the_step_naming_the_particle():
    b = gr.ModelBuilder()
    b.add_particles(np.array([[0.0, 0, 0], [0.9, 0, 0], [3.0, 0, 0]]), radius=0.5)
    b.set_contacts(100.0, allow_initial_overlap=True)
    m = b.finalize("cpu")
    s = m.state()
    s.x[2, 1] = np.nan
    before = s.x.copy()
    with pytest.raises(gr.NonFiniteError, match="particle 2"):
        gr.ExplicitIntegrator().advance(m, s, 1e-3, 10)
    np.testing.assert_array_equal(s.x, before)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_cpu_sorted_cell_list_gives_the_hash_grids_rows(dtype):
    """On the CPU a single system is searched through a sorted cell list, a model of
    replicas through the hash grid: the same rows, entry for entry, for a lattice whose
    particles sit on cell faces, a random cloud, and a cloud with a few particles far away
    (the cells then widen to stay within the arrays)."""
    be = get_backend("cpu")
    rng = np.random.default_rng(11)
    g = np.arange(6.0)
    lattice = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3)
    cloud = rng.uniform(0, 9, (700, 3))
    far = np.concatenate([rng.uniform(0, 5, (300, 3)), rng.uniform(-1e7, 1e7, (5, 3))])
    for x in (lattice, cloud, far):
        x = x.astype(dtype)
        r = rng.uniform(0.3, 0.55, len(x)).astype(dtype)
        alone = NeighborList(be, r, 0.1, capacity=8)
        alone.build(x)
        assert alone.cells[3] == 1  # the sorted list was used
        hashed = NeighborList(be, r, 0.1, capacity=8, replica=np.zeros(len(x), np.int32))
        hashed.build(x)
        assert hashed.cells[3] == 0
        assert alone.capacity == hashed.capacity and alone.count.sum() > len(x) // 2
        np.testing.assert_array_equal(alone.count, hashed.count)
        used = np.arange(alone.capacity)[None, :] < alone.count[:, None]
        np.testing.assert_array_equal(np.where(used, alone.nbr, -1), np.where(used, hashed.nbr, -1))
        if dtype == np.float64:
            np.testing.assert_array_equal(alone.pairs(), brute_pairs(x, r, 0.1))


def test_the_sorted_list_carries_the_springs_as_the_hash_grid_does():
    """The CPU's sorted cell list moves each row's springs within the row (``kernels/grid.py``
    ``carry_in_place``); the hash grid carries them from a copy of every row
    (``carry_springs``). Through rebuilds that change most rows (springs moving to earlier
    and to later slots, pairs joining and leaving) and one whose rows outgrow the arrays,
    both give the same rows, springs and held flags, whole arrays compared, and every pair
    still listed keeps its own springs bit for bit."""
    be = get_backend("cpu")
    kern = be.kernels.for_law(contact_laws.hertz_mindlin)
    h = contact_laws.hertz_mindlin.HISTORY
    rng = np.random.default_rng(5)
    n = 600
    x = rng.uniform(0, 9, (n, 3))
    r = rng.uniform(0.4, 0.6, n)
    alone = NeighborList(be, r, 0.3, capacity=24, history=h, kernels=kern)
    hashed = NeighborList(be, r, 0.3, capacity=24, history=h, kernels=kern, replica=np.zeros(n, np.int32))

    def spring(i, j):
        return 1.0 + i + 1e-3 * j + 1e-7 * np.arange(h)  # its last float (the overlap) not 0

    alone.build(x)
    hashed.build(x)
    assert alone.sorted_list_used() and not hashed.sorted_list_used()
    held = {}
    for i in range(n):
        for p in range(alone.count[i]):
            j = int(alone.nbr[i, p])
            if rng.uniform() < 0.5:
                held[(i, j)] = p
                for nl in (alone, hashed):
                    nl.hist[i, p] = spring(i, j)
                    nl.live[i, p] = 1
    moves = {"earlier": 0, "later": 0}
    for step, (shift, target) in enumerate(((0.25, None), (0.4, None), (0.0, 0.55))):
        x = x + rng.normal(0.0, shift, x.shape)
        if target is not None:  # the cloud squeezed: rows outgrow the arrays
            x = 4.5 + target * (x - 4.5)
        for nl in (alone, hashed):
            nl.build(x)
        if target is not None:
            assert alone.regrows == 1 and hashed.regrows >= 1 and alone.capacity == hashed.capacity > 24
        np.testing.assert_array_equal(alone.count, hashed.count)
        np.testing.assert_array_equal(alone.live, hashed.live)
        np.testing.assert_array_equal(alone.hist, hashed.hist)
        listed = np.arange(alone.capacity)[None, :] < alone.count[:, None]
        np.testing.assert_array_equal(alone.nbr[listed], hashed.nbr[listed])
        now = {}
        for i in range(n):
            for p in range(alone.count[i]):
                j = int(alone.nbr[i, p])
                if (i, j) in held:
                    assert alone.live[i, p] == 1
                    np.testing.assert_array_equal(alone.hist[i, p], spring(i, j))
                    was = held[(i, j)]
                    moves["earlier"] += p < was
                    moves["later"] += p > was
                    now[(i, j)] = p
                else:
                    assert alone.live[i, p] == 0 and not alone.hist[i, p].any()
        assert len(now) > 100, (step, len(now))
        held = now
        assert (alone.live[~listed] == 0).all() and not alone.hist[~listed].any()
    assert moves["earlier"] > 20 and moves["later"] > 20, moves


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two threads")
def test_the_sorted_cell_list_sorts_alike_on_one_thread_and_two():
    """On two threads each thread places the particles of a range of cells
    (``kernels/grid.py`` ``sort_place``, first place counted from the cells before the
    range): the same ``start``, ``order`` and ``xs`` as the serial sort, and the same rows,
    for a random cloud large enough for the parallel build (700 particles, 512 cells)."""
    be = get_backend("cpu")
    rng = np.random.default_rng(11)
    x = rng.uniform(0, 9, (700, 3))
    r = rng.uniform(0.3, 0.55, len(x))
    built = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            nl = NeighborList(be, r, 0.1, capacity=32)
            nl.build(x)
            built.append(nl)
    finally:
        numba.set_num_threads(before)
    one, two = built
    cells = int(np.prod(one.cells[:3]))
    assert one.cells[3] == two.cells[3] == 1 and cells > 100
    np.testing.assert_array_equal(one.start[: cells + 2], two.start[: cells + 2])
    assert one.start[cells] == len(x) and np.all(np.diff(one.start[: cells + 1]) >= 0)
    np.testing.assert_array_equal(one.order, two.order)
    np.testing.assert_array_equal(one.xs, two.xs)
    np.testing.assert_array_equal(one.xs[:, 3], r[one.order])
    np.testing.assert_array_equal(one.count, two.count)
    np.testing.assert_array_equal(one.nbr, two.nbr)
    np.testing.assert_array_equal(one.pairs(), brute_pairs(x, r, 0.1))
