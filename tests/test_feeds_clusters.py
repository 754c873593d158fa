"""Bonded clusters inserted as units (:class:`granular.particles.feeds.Cluster`), and the
stable step checked against what an insertion brings
(:func:`granular.particles.feeds.check_stable_step`)."""

import csv
import tomllib

import numpy as np
import pytest

import granular as gr
from granular.errors import StepSizeError
from granular.particles.feeds import Box, Cluster, Insertion, Obstacles, Outlet, check_stable_step, resize
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.shapes import add_torus
from granular.run.scene import SceneError, build_model, parse_scene, scene_feeds

GLASS = dict(young=1e7, poisson=0.3, density=2500.0, restitution=0.5, friction=0.5, rolling_friction=0.02)
BINDER = dict(ka=0.5, ks=0.5, km=1e-4)
REGION = ([-0.02, -0.02, 0.02], [0.02, 0.02, 0.05])


def floor_model(x=((0.0, 0.0, 0.01),)):
    b = gr.ModelBuilder()
    b.add_material("glass", **GLASS)
    b.add_particles(np.asarray(x, dtype=float), radius=0.002, material="glass")
    b.set_contacts()
    b.add_wall([0, 0, 1], 0.0, material="glass")
    b.set_gravity([0, 0, -9.81])
    return b.finalize("cpu")


def chain(**family):
    """Three glass beads in a bent chain, bonded 0-1, 1-2."""
    x = [[0.0, 0.0, 0.0], [0.004, 0.0, 0.0], [0.006, 0.0035, 0.0]]
    return Cluster(x, 0.002, "glass", bonds=[[0, 1], [1, 2]], family=family or BINDER)


def torus(n=6):
    t = gr.ModelBuilder()
    t.add_material("glass", **GLASS)
    add_torus(t, n, 0.012, mass=None, inertia=None, material="glass", **BINDER)
    return Cluster.from_builder(t)


def rows(out):
    with open(out / "series.csv") as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def test_inserted_clusters_touch_nothing_and_start_at_rest():
    """Copies of a torus put into a box with grains in it: every particle clear of the
    grains, the floor and the other copies; each copy the template turned rigidly; the
    bonds in the model, intact, without energy or force."""
    k = np.arange(4) * 0.008 - 0.012
    lattice = np.stack(np.meshgrid(k, k, [0.026], indexing="ij"), -1).reshape(-1, 3)
    model = floor_model(lattice)
    state = model.state()
    cl = torus()
    ins = Insertion(Box(*REGION), cluster=cl, total=12, seed=2)
    add = ins.draw(0.0, Obstacles(model, state, ins.radius[1]))
    copies = len(add["x"]) // cl.n
    assert add is not None and copies >= 3 and len(add["x"]) == copies * cl.n and ins.count == copies
    r = cl.radius[0]
    x = add["x"]
    d = np.linalg.norm(x[:, None] - lattice[None], axis=2)
    assert (d >= r + 0.002).all()  # clear of the grains
    assert (x[:, 2] >= r).all()  # and of the floor
    own = np.repeat(np.arange(copies), cl.n)
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    assert (d[own[:, None] != own[None]] >= 2 * r).all()  # and of the other copies
    for c in range(copies):  # each copy a rigid motion of the template: the same distances
        p = x[own == c]
        np.testing.assert_allclose(np.linalg.norm(p[:, None] - p[None], axis=2),
                                   np.linalg.norm(cl.x[:, None] - cl.x[None], axis=2), atol=1e-15)  # fmt: skip
    n0 = model.n
    resize(model, state, add=add)
    assert model.n == n0 + copies * cl.n and model.n_bonds == copies * cl.n
    assert not np.asarray(state.broken).any() and np.asarray(state.released).shape == (copies * cl.n,)
    totals = model.diagnostics(state)
    scale = 0.5 * BINDER["ka"]
    for key in ("U_a", "U_s", "U_m"):
        assert abs(totals[key]) < 1e-24 * scale, (key, totals[key])
    # the forces of a fresh evaluation: gravity alone on the cluster's particles
    ExplicitIntegrator("verlet").prepare(model, state)
    m = np.asarray(model.mass)[n0:]
    F = np.asarray(state.F)[n0:]
    np.testing.assert_allclose(F[:, 2], -9.81 * m, rtol=1e-9)
    assert np.abs(F[:, :2]).max() < 1e-9 * 9.81 * m.max()


def pour(tmp_path, name, until, dt=2e-5, outlet=True, **kw):
    model = floor_model()
    feeds = [Insertion(Box(*REGION), cluster=chain(), rate=400.0, total=60, seed=1, velocity=(0, 0, -1.0))]
    if outlet:
        feeds.append(Outlet(Box([0.0, 0.0, -1.0], [1.0, 1.0, 0.006])))
    sim = gr.Simulation(model, model.state(), tmp_path / name, dt=dt, overwrite=True, feeds=feeds, feed_every=2e-3,
                        series_every=0.01, **kw)  # fmt: skip
    sim.run(until=until)
    return model, sim


def test_a_run_with_cluster_insertions_resumed_is_the_same_run(tmp_path):
    model, whole = pour(tmp_path, "whole", 0.06, checkpoint_every=0.02)
    _, half = pour(tmp_path, "half", 0.03, checkpoint_every=0.02)
    fresh = floor_model()
    feeds = [Insertion(Box(*REGION), cluster=chain(), rate=400.0, total=60, seed=1, velocity=(0, 0, -1.0)),
             Outlet(Box([0.0, 0.0, -1.0], [1.0, 1.0, 0.006]))]  # fmt: skip
    again = gr.Simulation.resume(fresh, tmp_path / "half", feeds=feeds, feed_every=2e-3)
    again.run(until=0.06)
    assert fresh.n == model.n and np.array_equal(fresh.ids, model.ids) and fresh.n_bonds == model.n_bonds > 0
    np.testing.assert_array_equal(fresh.bonds.host["rest_length"], model.bonds.host["rest_length"])
    for k in ("x", "v", "q", "omega", "dissipated", "wall_springs", "broken", "released"):
        assert np.array_equal(getattr(again.state, k), getattr(whole.state, k)), k
    a, b = rows(tmp_path / "whole")[-1], rows(tmp_path / "half")[-1]
    assert a["inserted"] == b["inserted"] == 3 * 24 and a["removed"] > 0 and a["E_removed"] == b["E_removed"]


def test_the_ledger_closes_with_clusters_at_second_order(tmp_path):
    """total + dissipated - E_inserted + E_removed holds (the bonds enter with no energy:
    what a cluster brings is its kinetic and gravity energy), its drift falling as dt²."""
    drift = []
    for dt in (2e-5, 1e-5):
        pour(tmp_path, f"dt{dt}", 0.06, dt=dt)
        rs = rows(tmp_path / f"dt{dt}")
        E = [r["total"] + sum(v for k, v in r.items() if k.startswith("dissipated_")) - r["E_inserted"]
             + r["E_removed"] for r in rs]  # fmt: skip
        scale = max(abs(r["E_inserted"]) for r in rs)
        drift.append(max(abs(e - E[0]) for e in E) / scale)
        assert rs[-1]["inserted"] == 3 * 24 and max(r["U_a"] for r in rs) > 0  # the bonds worked
    assert drift[0] < 2e-2
    assert 3.0 < drift[0] / drift[1] < 5.5  # second order


SCENE = """
[run]
dt = 2e-5
duration = 0.01
feed_every = 0.002
[materials.glass]
young = 1e7
density = 2500.0
restitution = 0.5
friction = 0.5
[bond_families.binder]
ka = 0.5
ks = 0.5
km = 1e-4
[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.002]]
radius = 0.002
material = "glass"
[[particles]]
kind = "torus"
name = "ring"
template = true
n = 8
ring_diameter = 0.012
material = "glass"
bonds = "binder"
[[particles]]
kind = "agglomerate"
name = "clump"
template = true
count = 6
radius = 0.0015
material = "glass"
[[bonds]]
kind = "touching"
factor = 1.01
family = "binder"
groups = ["clump"]
[[walls]]
normal = [0, 0, 1]
offset = 0.0
material = "glass"
[fields]
gravity = [0, 0, -9.81]
[[insert]]
box = [[-0.03, -0.03, 0.02], [0.03, 0.03, 0.06]]
cluster = "ring"
rate = 500.0
[[insert]]
box = [[-0.03, -0.03, 0.02], [0.03, 0.03, 0.06]]
cluster = "clump"
total = 3
"""


def test_a_scene_inserts_template_groups_with_their_bonds():
    scene = parse_scene(tomllib.loads(SCENE))
    model, _ = build_model(scene, "cpu")
    assert model.n == 1 and model.n_bonds == 0  # the templates are not placed
    ring, clump = scene_feeds(scene)
    assert ring.cluster.n == 8 and ring.cluster.n_bonds == 8 and ring.rate == 500.0
    assert clump.cluster.n == 6 and clump.cluster.n_bonds > 0 and clump.total == 3


@pytest.mark.parametrize("change,path", [
    ({"cluster": "nothing"}, "insert[0].cluster"),
    ({"radius": 0.001}, "insert[0].radius"),
    ({"material": "glass"}, "insert[0].material"),
    ({"cluster": None}, "insert[0].radius"),
])  # fmt: skip
def test_bad_cluster_inserts_name_the_field(change, path):
    data = tomllib.loads(SCENE)
    data["insert"][0].update(change)
    if change.get("cluster", 1) is None:
        del data["insert"][0]["cluster"]
    with pytest.raises(SceneError) as info:
        parse_scene(data)
    assert [p for p, _ in info.value.errors] == [path]


def test_a_template_group_needs_a_name():
    data = tomllib.loads(SCENE)
    del data["particles"][1]["name"]
    data["insert"] = data["insert"][1:]
    with pytest.raises(SceneError) as info:
        parse_scene(data)
    assert info.value.errors[0][0] == "particles[1].name"


def test_bad_clusters_name_the_field():
    box = Box(*REGION)
    with pytest.raises(ValueError, match="^bonds: bond 0 names particle 5"):
        Cluster([[0, 0, 0], [0.004, 0, 0]], 0.002, "glass", bonds=[[0, 5]])
    with pytest.raises(ValueError, match="^material or density"):
        Cluster([[0, 0, 0], [0.004, 0, 0]], 0.002, bonds=[[0, 1]])
    with pytest.raises(ValueError, match="^cluster: radius"):
        Cluster([[0, 0, 0], [0.004, 0, 0]], -1.0, "glass")
    with pytest.raises(ValueError, match="^family: "):
        Cluster([[0, 0, 0], [0.004, 0, 0]], 0.002, "glass", bonds=[[0, 1]], family={"stiffness": 1.0})
    with pytest.raises(ValueError, match="^radius: a cluster's particles carry their own"):
        Insertion(box, 0.002, cluster=chain(), total=1)
    with pytest.raises(ValueError, match="^region: .* too small for the cluster"):
        Insertion(Box([0, 0, 0], [0.008, 0.008, 0.008]), cluster=torus(), total=1)
    b = gr.ModelBuilder()
    b.add_particles([[0, 0, 0], [1, 0, 0], [2, 0, 0]], radius=0.4)
    b.add_bonds([[0, 1], [1, 2]], ka=1.0)
    with pytest.raises(ValueError, match="^cluster: a bond joins particle 1 to particle 2"):
        Cluster.from_builder(b, [0, 1])
    assert Cluster.from_builder(b, [0, 1, 2]).n_bonds == 2
    model = floor_model()
    ins = Insertion(box, cluster=Cluster([[0, 0, 0]], 0.002, "steel"), total=1)
    with pytest.raises(ValueError, match="no material named 'steel'"):
        ins.draw(0.0, Obstacles(model, model.state()))


def test_an_insertion_of_too_small_particles_is_refused_unless_allowed():
    """dt = 2e-5 suits the 2 mm beads; beads of 20 µm need a step some 30 times smaller:
    refused, naming the insertion, its radius and the largest step allowed."""
    model = floor_model()
    state = model.state()
    fine = Insertion(Box(*REGION), 2e-5, "glass", rate=100.0)
    coarse = Insertion(Box(*REGION), 0.002, "glass", rate=100.0)
    assert check_stable_step(model, state, [coarse], 2e-5)[0][1].h_max > 2e-5
    with pytest.raises(StepSizeError) as info:
        check_stable_step(model, state, [coarse, fine], 2e-5)
    text = str(info.value)
    assert text.startswith("feeds[1]: ") and "radius 2e-05" in text and "below dt = 2e-05" in text
    assert "dt at most" in text and "allow_unstable_step" in text
    est = check_stable_step(model, state, [fine], 2e-5, allow_unstable_step=True)[0][1]
    assert est.h_max < 2e-5 and fine.step_checked == (2e-5, "verlet")


def test_a_simulation_refuses_an_unstable_insertion_unless_allowed(tmp_path):
    """The Python path checks the insertions at its first run: refused with the
    insertion's radius, and run when allowed."""
    fine = Insertion(Box(*REGION), 2e-5, "glass", rate=100.0)
    model = floor_model()
    sim = gr.Simulation(model, model.state(), tmp_path / "a", dt=2e-5, feeds=[fine])
    with pytest.raises(StepSizeError, match="radius 2e-05"):
        sim.run(steps=2)
    model = floor_model()
    fine = Insertion(Box(*REGION), 2e-5, "glass", rate=100.0)
    sim = gr.Simulation(model, model.state(), tmp_path / "b", dt=2e-5, feeds=[fine], allow_unstable_step=True)
    assert sim.run(steps=2)["steps"] == 2


def test_granular_run_refuses_an_unstable_insertion(tmp_path, capsys):
    from granular import cli

    data = SCENE.replace('cluster = "ring"\nrate = 500.0', 'radius = 2e-5\nmaterial = "glass"\nrate = 500.0')
    path = tmp_path / "s.toml"
    path.write_text(data)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "insert[0]: " in err and "radius 2e-05" in err and "--allow-unstable-step" in err, err
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet", "--allow-unstable-step",
                     "--steps", "2"]) == 0  # fmt: skip


def test_the_gpu_kernels_insert_clusters_as_the_cpu_does(gpu_backend, tmp_path):
    """On the GPU backend (the simulator in CI) the bonds of inserted clusters act as on
    the CPU: the same run twice bit for bit, and the CPU's to round-off."""
    runs = []
    for k, backend in enumerate(("cpu", gpu_backend, gpu_backend)):
        b = gr.ModelBuilder()
        b.add_material("glass", **GLASS)
        b.add_particles([[0.0, 0.0, 0.01]], radius=0.002, material="glass")
        b.set_contacts()
        b.add_wall([0, 0, 1], 0.0, material="glass")
        b.set_gravity([0, 0, -9.81])
        model = b.finalize(backend)
        ins = Insertion(Box([-0.012, -0.012, 0.003], [0.012, 0.012, 0.016]), cluster=chain(), rate=1000.0, seed=4,
                        velocity=(0, 0, -1.0))  # fmt: skip
        sim = gr.Simulation(model, model.state(), tmp_path / f"g{k}", dt=2e-5, feeds=[ins], feed_every=1e-3)
        sim.run(steps=250)
        be = model.backend
        runs.append((model.n, model.n_bonds, np.asarray(be.to_host(sim.state.x)), float(rows(tmp_path / f"g{k}")[-1]["U_a"])))
    assert runs[0][:2] == runs[1][:2] == runs[2][:2] and runs[0][1] >= 2 * 3 and runs[0][0] == 1 + 3 * runs[0][1] // 2
    assert np.array_equal(runs[1][2], runs[2][2]) and runs[1][3] == runs[2][3] and runs[1][3] > 0
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=0, atol=1e-12)
    assert runs[1][3] == pytest.approx(runs[0][3], rel=1e-6)
