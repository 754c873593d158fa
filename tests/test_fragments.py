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


def label_on_gpu(be, *arrays):
    """The GPU labels of host ``arrays``, on the device (CuPy on a GPU, NumPy under the
    simulator) and back."""
    dev = [None if a is None else be.asarray(a) for a in arrays]
    return be.to_host(components.label_cuda(be.xp, be.kernels.to_device, *dev))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_the_gpu_kernels_give_the_same_labels(seed, gpu_backend):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(20, 120))
    a, b, broken = random_graph(rng, n, int(rng.integers(n // 2, 2 * n)), 0.3)
    x, r = no_geometry(n)
    got = label_on_gpu(gpu_backend, a, b, broken, x, r)
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
def test_touching_pairs_join_fragments_and_near_ones_do_not(gpu, request):
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
        got = label_on_gpu(request.getfixturevalue("gpu_backend"), a, b, broken, x, r, nbr, count)
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
def test_a_broken_chain_falls_into_its_pieces(backend, request):
    if backend == "gpu":
        request.getfixturevalue("gpu_backend")  # skipped where no GPU backend is usable
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


def two_clusters(contacts=True):
    """Two bonded pairs at rest, the pairs touching (particles 1 and 2 overlap by 1 %, no
    bond between them): 2 fragments by bonds, 1 by contacts. Bonds that can break (but do
    not), and a contact stiffness too small to part the pairs in a few steps."""
    b = gr.ModelBuilder()
    b.add_particles(np.c_[0.99 * np.arange(4.0), np.zeros(4), np.zeros(4)], radius=0.5, mass=[1.0, 2.0, 3.0, 4.0])
    b.add_bonds([[0, 1], [2, 3]], ka=1.0, strain_max=0.5)
    if contacts:
        b.set_contacts(kpp=1e-3, allow_initial_overlap=True)
    return b.finalize("cpu")


def fragment_rows(out):
    with open(out / "fragments.csv") as fh:
        return [(int(r["particles"]), float(r["mass"])) for r in csv.DictReader(fh)]


@pytest.mark.parametrize("by", ["bonds", "contacts"])
def test_a_run_counts_fragments_by_bonds_or_by_touching_contacts(by, tmp_path):
    import meshio

    from granular.io import read_series

    model = two_clusters()
    out = tmp_path / by
    kwargs = {} if by == "bonds" else {"fragments": "contacts"}  # "bonds": the default
    sim = gr.Simulation(model, model.state(), out, {"dt": 1e-3, "steps": 10, "output_every": 5e-3}, **kwargs)
    assert sim.run_table.fragments == by
    sim.run()
    data = read_series(out / "series.csv")
    assert len(data["step"]) == 3 and (data["damage"] == 0.0).all()  # broken / initial bonds either way
    if by == "bonds":
        assert (data["fragments"] == 2.0).all() and data["largest_fragment"] == pytest.approx([0.7] * 3)
        assert fragment_rows(out) == [(2, 7.0), (2, 3.0)]
    else:
        assert (data["fragments"] == 1.0).all() and (data["largest_fragment"] == 1.0).all()
        assert fragment_rows(out) == [(4, 10.0)]
    last = meshio.read(max((out / "frames").glob("*.vtu")))
    assert last.point_data["fragment"].tolist() == ([1, 1, 0, 0] if by == "bonds" else [0, 0, 0, 0])


def test_a_resumed_run_keeps_counting_fragments_by_contacts(tmp_path):
    from granular.io import read_series

    model = two_clusters()
    out = tmp_path / "run"
    gr.Simulation(model, model.state(), out, {"dt": 1e-3, "steps": 10, "output_every": 5e-3},
                  fragments="contacts").run()  # fmt: skip
    sim = gr.Simulation.resume(model, out)
    assert sim.run_table.fragments == "contacts"
    sim.run(steps=10)
    data = read_series(out / "series.csv")
    assert data["step"][-1] == 20 and (data["fragments"] == 1.0).all()
    assert fragment_rows(out) == [(4, 10.0)]


def test_fragments_by_contacts_without_particle_contacts_are_refused(tmp_path):
    from granular.ensemble.particles import make_particle_spec
    from granular.errors import EnsembleSpecError, SceneError
    from granular.run.scene import parse_scene

    model = two_clusters(contacts=False)
    with pytest.raises(ValueError, match=r'run\.fragments: "contacts" joins touching .*ModelBuilder.set_contacts'):
        gr.Simulation(model, model.state(), tmp_path / "run", dt=1e-3, fragments="contacts")
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match=r"fragments: Input should be 'bonds' or 'contacts'"):
        gr.Simulation(model, model.state(), tmp_path / "run", dt=1e-3, fragments="touching")
    scene = {
        "run": {"dt": 1e-3, "steps": 10, "fragments": "contacts"},
        "bond_families": {"b": {"ka": 1.0, "strain_max": 0.5}},
        "particles": [{"kind": "explicit", "x": [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]], "radius": 0.5}],
        "bonds": [{"kind": "explicit", "pairs": [[0, 1]], "family": "b"}],
    }
    with pytest.raises(SceneError, match=r'run\.fragments: "contacts" joins .* give a \[contacts\] table or '
                       r"\[materials\]"):  # fmt: skip
        parse_scene(scene)
    scene["contacts"] = {"kpp": 1.0}
    assert parse_scene(scene).run.fragments == "contacts"
    with pytest.raises(EnsembleSpecError, match=r'run\.fragments = "contacts": an ensemble counts'):
        make_particle_spec(parse_scene(scene), 2, [], 0)


CLUSTERS_SCENE = """
name = "clusters"
[run]
dt = 1e-3
steps = 10
output_every = 5e-3
fragments = "contacts"
[bond_families.b]
ka = 1.0
strain_max = 0.5
[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.0], [0.99, 0.0, 0.0], [1.98, 0.0, 0.0], [2.97, 0.0, 0.0]]
radius = 0.5
[[bonds]]
kind = "explicit"
pairs = [[0, 1], [2, 3]]
family = "b"
[contacts]
kpp = 1e-3
allow_initial_overlap = true
"""


def test_a_scene_counts_fragments_by_contacts_and_its_resumed_run_too(tmp_path, capsys):
    """``[run] fragments = "contacts"`` in a scene file: ``granular run`` and ``--resume``
    (the checkpoint's scene holds the key; one written before the key existed counted by
    bonds and continues a scene that leaves it out)."""
    from granular.cli import main
    from granular.io import read_series
    from granular.run.folder import resume_problem

    scene, out = tmp_path / "clusters.toml", tmp_path / "run"
    scene.write_text(CLUSTERS_SCENE)
    assert main(["run", str(scene), "--out", str(out), "--quiet"]) == 0
    ckpt = out / "checkpoints" / "checkpoint.npz"
    assert main(["run", str(scene), "--resume", str(ckpt), "--steps", "20", "--quiet"]) == 0
    data = read_series(out / "series.csv")
    assert data["step"][-1] == 20 and (data["fragments"] == 1.0).all()
    assert [n for n, _ in fragment_rows(out)] == [4]
    scene.write_text(CLUSTERS_SCENE.replace('fragments = "contacts"\n', ""))
    assert main(["run", str(scene), "--resume", str(ckpt), "--steps", "30", "--quiet"]) == 2
    assert 'run.fragments: "contacts" in the checkpoint, "bonds" in the scene' in capsys.readouterr().err
    old = {"scene": {"run": {"dt": 1e-3, "steps": 10}}, "step": 10, "time": 0.01, "dt": 1e-3}
    assert resume_problem(old, {"run": {"dt": 1e-3, "steps": 10, "fragments": "bonds"}}, "c.npz", 20) is None
    assert "run.fragments" in resume_problem(old, {"run": {"dt": 1e-3, "steps": 10, "fragments": "contacts"}},
                                             "c.npz", 20)  # fmt: skip
