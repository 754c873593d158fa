"""Fragments: connected components of intact bonds (and touching contacts), on the CPU
and on the GPU kernels (under the CUDA simulator here), against SciPy's independent
component search; the run folder's fragment columns, point data and ``fragments.csv``."""

import csv

import numpy as np
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

import granular as gr
from granular.particles.fragments import fragments, summary
from kernels import components


def reference_labels(n, a, b, keep):
    """Smallest particle index of each component, by SciPy's graph search."""
    g = coo_matrix((np.ones(int(keep.sum())), (a[keep], b[keep])), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    smallest = np.full(comp.max() + 1, n)
    np.minimum.at(smallest, comp, np.arange(n))
    return smallest[comp]


def random_graph(rng, n, m, p_broken):
    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    b = np.where(a == b, (b + 1) % n, b)
    broken = (rng.random(m) < p_broken).astype(np.int8)
    return a.astype(np.int64), b.astype(np.int64), broken


def no_geometry(n):
    return np.zeros((n, 3)), np.ones(n)


@pytest.mark.parametrize("seed", range(6))
def test_the_cpu_labels_equal_an_independent_component_search(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    a, b, broken = random_graph(rng, n, int(rng.integers(0, 2 * n)), rng.random())
    got = components.label_cpu(a, b, broken, *no_geometry(n))
    assert np.array_equal(got, reference_labels(n, a, b, broken == 0))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_the_gpu_kernels_give_the_same_labels(seed, monkeypatch):
    if not gr.backend.cuda_simulator_enabled():
        pytest.skip("runs the GPU kernels under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(20, 120))
    a, b, broken = random_graph(rng, n, int(rng.integers(n // 2, 2 * n)), 0.3)
    x, r = no_geometry(n)
    got = components.label_cuda(np, lambda v: v, a, b, broken, x, r)
    assert np.array_equal(got, components.label_cpu(a, b, broken, x, r))
    assert np.array_equal(got, reference_labels(n, a, b, broken == 0))


def touching(x, r):
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    i, j = np.nonzero((d < r[:, None] + r[None]) & ~np.eye(len(x), dtype=bool))
    return i, j


def neighbour_rows(x, r, reach):
    """Every pair within ``reach`` of contact, as rows (a neighbour list with a skin)."""
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    near = (d < r[:, None] + r[None] + reach) & ~np.eye(len(x), dtype=bool)
    count = near.sum(axis=1).astype(np.int32)
    nbr = np.zeros((len(x), max(1, count.max())), dtype=np.int32)
    for i in range(len(x)):
        nbr[i, : count[i]] = np.nonzero(near[i])[0]
    return nbr, count


@pytest.mark.parametrize("gpu", [False, pytest.param(True, marks=pytest.mark.gpu)])
def test_touching_pairs_join_fragments_and_near_ones_do_not(gpu):
    if gpu and not gr.backend.cuda_simulator_enabled():
        pytest.skip("runs the GPU kernels under the CUDA simulator (NUMBA_ENABLE_CUDASIM=1)")
    rng = np.random.default_rng(7)
    n = 60
    x = rng.uniform(0, 6, (n, 3))
    r = rng.uniform(0.3, 0.6, n)
    a, b, broken = random_graph(rng, n, 20, 0.5)
    nbr, count = neighbour_rows(x, r, 0.4)  # listed pairs include some that do not touch
    i, j = touching(x, r)
    assert count.sum() > len(i)
    keep = broken == 0
    ref = reference_labels(n, np.concatenate([a[keep], i]), np.concatenate([b[keep], j]),
                           np.ones(int(keep.sum()) + len(i), dtype=bool))  # fmt: skip
    if gpu:
        got = components.label_cuda(np, lambda v: v, a, b, broken, x, r, nbr, count)
    else:
        got = components.label_cpu(a, b, broken, x, r, nbr, count)
    assert np.array_equal(got, ref)


def chain(backend="cpu", n=8):
    """``n`` particles on a line, neighbours bonded, masses 1, 2, ..., n."""
    b = gr.ModelBuilder()
    b.add_particles(np.c_[np.arange(n, dtype=float), np.zeros(n), np.zeros(n)], mass=np.arange(1.0, n + 1),
                    v=np.c_[np.zeros(n), np.arange(n, dtype=float), np.zeros(n)])  # fmt: skip
    b.add_bonds(np.c_[np.arange(n - 1), np.arange(1, n)], ka=1.0, strain_max=0.5)
    return b.finalize(backend)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_a_broken_chain_falls_into_its_pieces(backend):
    if backend == "gpu" and not gr.backend.cuda_simulator_enabled():
        pytest.skip("GPU backend under the CUDA simulator only here")
    model = chain(backend)
    state = model.state()
    whole = fragments(model, state)
    assert whole.count == 1 and whole.damage == 0.0 and whole.largest_fraction == 1.0
    broken = np.zeros(7, dtype=state.broken.dtype)
    broken[[2, 5]] = 1  # pieces {0,1,2}, {3,4,5}, {6,7}
    state.broken[:] = model.backend.xp.asarray(broken)
    f = fragments(model, state)
    m = np.arange(1.0, 9)
    assert f.count == 3 and f.damage == pytest.approx(2 / 7)
    # heaviest first; {3, 4, 5} and {6, 7} both weigh 15: the one with the smaller index first
    assert f.mass.tolist() == [15.0, 15.0, 6.0]
    assert f.fragment.tolist() == [2, 2, 2, 0, 0, 0, 1, 1]
    assert f.particles.tolist() == [3, 2, 3]
    xs = np.arange(8.0)
    assert f.center[2, 0] == pytest.approx((m[:3] * xs[:3]).sum() / 6.0)
    assert f.velocity[0, 1] == pytest.approx((m[3:6] * xs[3:6]).sum() / 15.0)  # v_y = index
    assert f.velocity[1, 1] == pytest.approx((m[6:] * xs[6:]).sum() / 15.0)
    assert f.largest_fraction == pytest.approx(15 / 36)
    s = summary(model, state)
    assert s == {"damage": pytest.approx(2 / 7), "fragments": 3.0, "largest_fragment": pytest.approx(15 / 36)}
    masses, cumulative = f.sizes_cumulative()
    assert masses.tolist() == [6.0, 15.0, 15.0] and cumulative[-1] == pytest.approx(1.0)


def test_equal_fragments_are_numbered_by_their_smallest_particle():
    b = gr.ModelBuilder()
    b.add_particles(np.c_[np.arange(5.0), np.zeros(5), np.zeros(5)], mass=1.0)
    b.add_bonds([[4, 3], [1, 0]], ka=1.0, strain_max=0.5)
    m = b.finalize("cpu")
    f = fragments(m, m.state())
    assert f.fragment.tolist() == [0, 0, 2, 1, 1]


def test_contacts_option_needs_a_neighbour_list():
    model = chain()
    with pytest.raises(ValueError, match="contacts"):
        fragments(model, model.state(), contacts=True)


def test_a_run_with_breakable_bonds_writes_damage_fragments_and_fragments_csv(tmp_path):
    """Two bonded spheres thrown at a floor: the bond breaks, and the run folder says so
    in ``series.csv``, the frames' point data and ``fragments.csv``."""
    from granular.io import read_series

    b = gr.ModelBuilder()
    b.add_material("grain", young=1e5, restitution=0.5, friction=0.3)
    ids = b.add_particles([[0.0, 0.0, 0.6], [0.0, 0.0, 1.65]], radius=0.5, material="grain",
                          v=[[0.0, 0.0, -1.0], [0.0, 0.0, 0.0]])  # fmt: skip
    b.add_bonds([[int(ids[0]), int(ids[1])]], ka=50.0, ks=50.0, km=5.0, strain_max=0.01)
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="grain")
    model = b.finalize("cpu")
    out = tmp_path / "run"
    sim = gr.Simulation(model, model.state(), out, {"dt": 1e-3, "duration": 0.3, "output_every": 0.1})
    sim.run()
    data = read_series(out / "series.csv")
    assert data["damage"][0] == 0.0 and data["damage"][-1] == 1.0
    assert data["fragments"][0] == 1.0 and data["fragments"][-1] == 2.0
    assert data["largest_fragment"][0] == 1.0 and data["largest_fragment"][-1] == pytest.approx(0.5)
    with open(out / "fragments.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["particles"]) for r in rows] == [1, 1]
    assert sum(float(r["mass"]) for r in rows) == pytest.approx(float(model.mass.sum()))
    import meshio

    frames = sorted((out / "frames").glob("*.vtu"))
    first, last = meshio.read(frames[0]), meshio.read(frames[-1])
    assert first.point_data["fragment"].tolist() == [0, 0]
    assert sorted(last.point_data["fragment"].tolist()) == [0, 1]


def test_per_replica_fragments_equal_each_replica_alone():
    """In a model of replicas the fragmentation of each replica is that of its own model."""
    from granular.particles.fragments import per_replica

    def builder(n):
        b = gr.ModelBuilder()
        b.add_particles(np.c_[np.arange(n, dtype=float), np.zeros(n), np.zeros(n)], mass=np.arange(1.0, n + 1))
        b.add_bonds(np.c_[np.arange(n - 1), np.arange(1, n)], ka=1.0, strain_max=0.5)
        return b

    sizes = (5, 8, 3)
    merged = gr.ModelBuilder.replicas([builder(n) for n in sizes]).finalize("cpu")
    state = merged.state()
    cuts = [[1], [0, 3, 5], []]
    flags = np.concatenate([np.isin(np.arange(n - 1), c) for n, c in zip(sizes, cuts)]).astype(state.broken.dtype)
    # the merged model orders bonds by replica as given
    state.broken[:] = flags
    got = per_replica(merged, state)
    for r, (n, c) in enumerate(zip(sizes, cuts)):
        alone = builder(n).finalize("cpu")
        s = alone.state()
        s.broken[np.asarray(c, dtype=np.int64)] = 1
        ref = summary(alone, s)
        assert got["damage"][r] == pytest.approx(ref["damage"])
        assert got["fragments"][r] == ref["fragments"]
        assert got["largest_fragment"][r] == pytest.approx(ref["largest_fragment"])
