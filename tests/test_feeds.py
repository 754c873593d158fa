"""Particles entering and leaving a run (:mod:`granular.particles.feeds`): the rate, the
placement, the seed, the ledger's balances, the carried state and resuming."""

import csv
import math

import numpy as np
import pytest

import granular as gr
from granular import cli
from granular.io import load_checkpoint
from granular.particles.feeds import Box, Cylinder, Insertion, Obstacles, Outlet, Surface, resize
from granular.particles.integrators import ExplicitIntegrator

GLASS = dict(young=1e7, poisson=0.3, density=2500.0, restitution=0.5, friction=0.5, rolling_friction=0.02)


def floor_model(x=((0.0, 0.0, 0.01),), gravity=True, walls=True, backend="cpu"):
    b = gr.ModelBuilder()
    b.add_material("glass", **GLASS)
    b.add_particles(np.asarray(x, dtype=float), radius=0.002, material="glass")
    b.set_contacts()
    if walls:
        b.add_wall([0, 0, 1], 0.0, material="glass")
    if gravity:
        b.set_gravity([0, 0, -9.81])
    return b.finalize(backend)


def rows(out):
    with open(out / "series.csv") as fh:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def pour(tmp_path, name="run", rate=2000.0, until=0.1, seed=1, every=2e-3, dt=2e-5, outlet=None, **kw):
    model = floor_model()
    state = model.state()
    feeds = [Insertion(Box([-0.02, -0.02, 0.03], [0.02, 0.02, 0.06]), (0.0015, 0.002), "glass", rate=rate,
                       total=kw.pop("total", 400), seed=seed)]  # fmt: skip
    if outlet is not None:
        feeds.append(outlet)
    sim = gr.Simulation(model, state, tmp_path / name, dt=dt, overwrite=True, feeds=feeds, feed_every=every,
                        series_every=kw.pop("series_every", 0.01), **kw)  # fmt: skip
    sim.run(until=until)
    return model, state, sim


def test_the_inserted_count_follows_the_rate_to_one_event(tmp_path):
    """rate 2000/s, an edit every 2 ms: at every row, the count is rate t rounded down,
    less at most what one interval brings (here exact: there is room)."""
    model, state, _ = pour(tmp_path)
    for r in rows(tmp_path / "run"):
        due = math.floor(2000.0 * r["time"] + 1e-9)
        assert due - 2000.0 * 2e-3 - 1 <= r["inserted"] <= due
    assert model.n == 1 + 200 and state.x.shape == (201, 3)
    assert np.array_equal(model.ids, np.arange(201))


def test_a_mass_rate_is_followed_to_one_particle(tmp_path):
    model = floor_model()
    ins = Insertion(Box([-0.02, -0.02, 0.03], [0.02, 0.02, 0.06]), (0.0015, 0.002), "glass", mass_rate=0.05, seed=4)
    sim = gr.Simulation(model, model.state(), tmp_path / "m", dt=2e-5, feeds=[ins], feed_every=2e-3, series_every=0.01)
    sim.run(until=0.06)
    m_max = 2500.0 * 4 / 3 * math.pi * 0.002**3
    for r in rows(tmp_path / "m"):
        assert 0.05 * (r["time"] - 2e-3) - m_max <= r["mass_inserted"] <= 0.05 * r["time"] + 1e-12


def test_inserted_particles_touch_nothing(tmp_path):
    """A crowded box (a lattice of 125 grains, a floor, a mesh, a periodic axis): every
    particle one insertion puts in is clear of the others, of the grains present, of the
    floor and of the mesh."""
    b = gr.ModelBuilder()
    b.add_material("glass", **GLASS)
    k = np.arange(5) * 0.006 - 0.012
    lattice = np.stack(np.meshgrid(k, k, k + 0.02, indexing="ij"), -1).reshape(-1, 3)
    b.add_particles(lattice, radius=0.002, material="glass")
    b.set_contacts()
    b.add_wall([0, 0, 1], 0.0, material="glass")
    b.add_mesh(gr.TriangleMesh.box([-0.002, -0.02, 0.018], [0.002, 0.02, 0.022]), material="glass",
               allow_initial_overlap=True)  # fmt: skip
    b.set_periodic(y=(-0.015, 0.015))
    model = b.finalize("cpu")
    state = model.state()
    ins = Insertion(Box([-0.015, -0.015, 0.0], [0.015, 0.015, 0.04]), (0.001, 0.0025), "glass", total=150, seed=7)
    add = ins.draw(0.0, Obstacles(model, state, 0.0025))
    assert add is not None and 20 < len(add["x"]) <= 150
    x_all = np.concatenate([lattice, add["x"]])
    r_all = np.concatenate([np.full(len(lattice), 0.002), add["radius"]])
    n0 = len(lattice)
    d = x_all[n0:, None, :] - x_all[None, :, :]
    d[..., 1] -= 0.03 * np.round(d[..., 1] / 0.03)  # the periodic axis
    gap = np.linalg.norm(d, axis=2) - (add["radius"][:, None] + r_all[None, :])
    gap[np.arange(len(add["x"])), n0 + np.arange(len(add["x"]))] = np.inf
    assert gap.min() >= 0.0
    assert (add["x"][:, 2] >= add["radius"]).all()  # the floor
    inside_post = (np.abs(add["x"][:, 0]) < 0.002 + add["radius"]) & (np.abs(add["x"][:, 2] - 0.02) < 0.002 + add["radius"])
    assert not inside_post.any()  # the mesh (a post along y through the box)
    # the ones that found no room wait: the next draw goes on with the same radius
    assert ins.count == len(add["x"]) and ins.pending is not None or ins.count == 150


def test_the_same_seed_gives_the_same_particles_bit_for_bit(tmp_path):
    _, a, _ = pour(tmp_path, "a", until=0.05)
    _, b, _ = pour(tmp_path, "b", until=0.05)
    _, c, _ = pour(tmp_path, "c", until=0.05, seed=2)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.v, b.v) and np.array_equal(a.q, b.q)
    assert a.x.shape != c.x.shape or not np.array_equal(a.x, c.x)


def test_a_run_resumed_across_insertions_and_removals_is_the_same_run(tmp_path):
    """Pour with an outlet under a hole in nothing (particles falling below z = 0.02 in
    a corner leave); stop mid-way, resume from the checkpoint into the scene's model
    (the initial one particle), run on: the same particles, states and ledger, bit for
    bit."""

    def outlet():
        return Outlet(Box([0.0, 0.0, -1.0], [1.0, 1.0, 0.02]))

    model, whole, _ = pour(tmp_path, "whole", until=0.08, outlet=outlet(), checkpoint_every=0.02)
    _, _, sim = pour(tmp_path, "half", until=0.04, outlet=outlet(), checkpoint_every=0.02)
    fresh = floor_model()
    feeds = [Insertion(Box([-0.02, -0.02, 0.03], [0.02, 0.02, 0.06]), (0.0015, 0.002), "glass", rate=2000.0,
                       total=400, seed=1), outlet()]  # fmt: skip
    again = gr.Simulation.resume(fresh, tmp_path / "half", feeds=feeds, feed_every=2e-3)
    again.run(until=0.08)
    assert fresh.n == model.n and np.array_equal(fresh.ids, model.ids)
    for k in ("x", "v", "q", "omega", "dissipated", "wall_springs"):
        assert np.array_equal(getattr(again.state, k), getattr(whole, k)), k
    a, b = rows(tmp_path / "whole")[-1], rows(tmp_path / "half")[-1]
    assert a["removed"] > 0 and a["inserted"] == b["inserted"] and a["E_removed"] == b["E_removed"]


def test_the_energy_ledger_closes_to_the_schemes_accuracy(tmp_path):
    """total + dissipated - E_inserted + E_removed holds, its drift falling as dt²
    (grains poured onto a floor; an outlet takes out those in one corner)."""
    drift = []
    for dt in (2e-5, 1e-5):
        pour(tmp_path, f"dt{dt}", until=0.12, dt=dt, outlet=Outlet(Box([0.0, 0.0, -1.0], [1.0, 1.0, 0.004])))
        E = []
        for r in rows(tmp_path / f"dt{dt}"):
            dis = sum(v for k, v in r.items() if k.startswith("dissipated_"))
            E.append(r["total"] + dis - r["E_inserted"] + r["E_removed"])
        scale = max(abs(r["E_inserted"]) for r in rows(tmp_path / f"dt{dt}"))
        drift.append(max(abs(e - E[0]) for e in E) / scale)
        assert rows(tmp_path / f"dt{dt}")[-1]["removed"] > 0
    assert drift[0] < 2e-2
    assert 3.0 < drift[0] / drift[1] < 5.5  # second order


def test_momentum_in_free_space_is_what_came_in_less_what_went_out(tmp_path):
    """No gravity, no walls: grains shot in at 1 m/s collide with each other and leave
    through an outlet downstream; P = P_inserted - P_removed at every row, to round-off."""
    model = floor_model(x=[(0.0, 0.0, -0.5)], gravity=False, walls=False)
    ins = Insertion(Box([-0.01, -0.01, -0.01], [0.01, 0.01, 0.01]), 0.002, "glass", rate=3000.0, velocity=(1.0, 0.2, 0),
                    seed=3)  # fmt: skip
    ins2 = Insertion(Box([0.01, -0.01, -0.01], [0.03, 0.01, 0.01]), 0.002, "glass", rate=3000.0,
                     velocity=(-0.5, 0, 0.1), seed=5)  # fmt: skip
    out = Outlet(Box([-0.05, -0.05, -0.05], [0.05, 0.05, 0.05]), inside=False)
    sim = gr.Simulation(model, model.state(), tmp_path / "p", dt=2e-5, feeds=[ins, ins2, out], feed_every=1e-3,
                        series_every=0.005)  # fmt: skip
    sim.run(until=0.15)
    rs = rows(tmp_path / "p")
    assert rs[-1]["removed"] > 50 and rs[-1]["contacts"] >= 0
    for r in rs:
        for a in "xyz":
            expected = r[f"P_inserted_{a}"] - r[f"P_removed_{a}"]
            assert r[f"P_{a}"] == pytest.approx(expected, abs=1e-13 * max(1.0, r["mass_inserted"]))


def test_removing_an_untouched_particle_leaves_the_others_bit_for_bit():
    """Grains settling on a floor, and one far away: taken out mid-run (the set
    renumbered, the springs carried by pair), the others go on exactly as without it."""
    x = [(0.0, 0.0, 0.0021), (0.0041, 0.0, 0.0021), (0.002, 0.0, 0.0058), (0.5, 0.5, 0.3)]
    integ = ExplicitIntegrator("verlet")
    ref = floor_model(x)
    s_ref = ref.state()
    s_ref.v[2] = [0.05, 0.02, -0.1]
    integ.advance(ref, s_ref, 2e-5, 1500)
    model = floor_model(x)
    state = model.state()
    state.v[2] = [0.05, 0.02, -0.1]
    integ.advance(model, state, 2e-5, 700)
    resize(model, state, keep=np.array([True, True, True, False]))
    assert model.n == 3 and np.array_equal(model.ids, [0, 1, 2])
    integ.advance(model, state, 2e-5, 800)
    assert float(np.abs(state.wall_springs).max()) > 0  # wall springs were carried
    for k in ("x", "v", "q", "omega"):
        assert np.array_equal(getattr(state, k), getattr(s_ref, k)[:3]), k
    assert np.array_equal(state.dissipated, s_ref.dissipated[:3])


def test_a_closed_run_refuses_an_edit_and_bad_feeds_name_the_field(tmp_path):
    model = floor_model()
    sim = gr.Simulation(model, model.state(), tmp_path / "c", dt=2e-5)
    sim.run(steps=2)
    with pytest.raises(ValueError, match="closed"):
        sim.runner.system.edit(keep=np.array([True]))
    box = Box([0, 0, 0], [0.01, 0.01, 0.01])
    with pytest.raises(ValueError, match="hi must exceed lo"):
        Box([0, 0, 0], [0.01, 0.0, 0.01])
    with pytest.raises(ValueError, match="too small"):
        Insertion(box, 0.006, "glass", total=1)
    with pytest.raises(ValueError, match="material or density"):
        Insertion(box, 0.001, total=1)
    with pytest.raises(ValueError, match="total: required"):
        Insertion(box, 0.001, "glass")
    with pytest.raises(ValueError, match="rate and mass_rate"):
        Insertion(box, 0.001, "glass", rate=1.0, mass_rate=1.0)
    with pytest.raises(ValueError, match="radius"):
        Insertion(box, (0.002, 0.001), "glass", total=1)
    with pytest.raises(ValueError, match="feed_every"):
        gr.Simulation(model, model.state(), tmp_path / "d", dt=2e-5, feeds=[], feed_every=0.0)
    ins = Insertion(box, 0.001, "steel", total=1)
    with pytest.raises(ValueError, match="no material named 'steel'"):
        ins.draw(0.0, Obstacles(model, model.state()))


def test_a_cylinder_region_draws_inside_itself():
    rng = np.random.default_rng(0)
    cyl = Cylinder([0.1, 0.2, 0.3], [1.0, 1.0, 0.0], 0.05, 0.2)
    pts = np.array([cyl.sample(rng, 0.01) for _ in range(2000)])
    d = pts - cyl.center
    along = d @ cyl.axis
    across = np.linalg.norm(d - along[:, None] * cyl.axis, axis=1)
    assert np.abs(along).max() <= 0.09 and across.max() <= 0.04 and cyl.contains(pts).all()
    # uniform over the disc: half the points within 1/sqrt(2) of the radius they may reach
    assert abs(np.mean(across < 0.04 / math.sqrt(2)) - 0.5) < 0.04


def test_the_gpu_kernels_pour_as_the_cpu_does(gpu_backend, tmp_path):
    """On the GPU backend (the simulator in CI) the same seed gives the same particles,
    bit for bit, run after run; and the CPU's, to round-off (the placements see the
    positions, which agree to the last bits)."""
    runs = []
    for k, backend in enumerate(("cpu", gpu_backend, gpu_backend)):
        model = floor_model(backend=backend)
        ins = Insertion(Box([-0.01, -0.01, 0.02], [0.01, 0.01, 0.03]), (0.0015, 0.002), "glass", rate=3000.0,
                        seed=4)  # fmt: skip
        sim = gr.Simulation(model, model.state(), tmp_path / f"g{k}", dt=2e-5, feeds=[ins], feed_every=1e-3)
        sim.run(steps=300)
        runs.append((model.n, np.asarray(model.backend.to_host(sim.state.x)),
                     np.asarray(model.backend.to_host(model.radius))))  # fmt: skip
    assert runs[0][0] == runs[1][0] == runs[2][0] == 1 + 18
    assert np.array_equal(runs[1][1], runs[2][1]) and np.array_equal(runs[1][2], runs[2][2])
    assert np.array_equal(runs[0][2], runs[1][2])
    np.testing.assert_allclose(runs[1][1], runs[0][1], rtol=0, atol=1e-12)


def test_a_surface_region_pours_over_a_mesh_faces_by_area(tmp_path):
    """Insertion over a mesh (a tilted strip of two triangles of areas 1 : 3): every
    centre lies over a face, between r and depth - r along its normal; the faces are
    drawn by area; the region holds the centres and not a point above the layer."""
    t = np.radians(30.0)
    u, n = np.array([np.cos(t), 0.0, np.sin(t)]), np.array([-np.sin(t), 0.0, np.cos(t)])
    v = np.array([0.0, 1.0, 0.0])
    a = np.array([0.0, 0.0, 0.1])
    verts = np.array([a, a + 0.02 * u, a + 0.02 * u + 0.02 * v, a + 0.08 * u + 0.02 * v])
    # two triangles: (0, 1, 2) of area 0.0002 and (1, 3, 2) of area 0.0006, normals +n
    mesh = gr.TriangleMesh(verts, [[0, 1, 2], [1, 3, 2]], name="strip")
    region = Surface(mesh, depth=0.01)
    assert np.allclose(region.normal, n)
    rng = np.random.default_rng(2)
    c = np.array([region.sample(rng, 0.002) for _ in range(4000)])
    h = (c - a) @ n
    assert h.min() >= 0.002 - 1e-15 and h.max() <= 0.008 + 1e-15
    along = (c - a) @ u
    assert along.min() >= 0.0 and along.max() <= 0.08
    assert region.contains(c).all() and not region.contains(c + 0.011 * n).any()
    first = np.mean(along <= 0.02)  # triangle (0, 1, 2) lies at along <= 0.02, (1, 3, 2) beyond
    assert abs(first - 0.25) < 0.03  # drawn by area: 1 / (1 + 3)
    # a scene pours over a mesh that is only a region (present = false)
    scene = """
name = "inlet"
[run]
dt = 2e-5
steps = 600
feed_every = 2e-3
series_every = 2e-3
backend = "cpu"
[materials.glass]
young = 1e7
density = 2500.0
restitution = 0.5
friction = 0.5
[[particles]]
kind = "explicit"
x = [[0.0, 0.5, 0.01]]
radius = 0.002
material = "glass"
[contacts]
law = "hertz-mindlin"
[[meshes]]
name = "inlet"
shape = { kind = "rectangle", center = [0.0, 0.0, 0.2], u = [0.02, 0.0, 0.0], v = [0.0, 0.02, 0.0] }
material = "glass"
present = false
[[insert]]
surface = { mesh = "inlet", depth = 0.006 }
radius = 0.002
material = "glass"
rate = 1000.0
[fields]
gravity = [0.0, 0.0, -9.81]
"""
    path = tmp_path / "inlet.toml"
    path.write_text(scene)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert rows(tmp_path / "o")[-1]["inserted"] == 12
    arrays, meta = load_checkpoint(str(tmp_path / "o" / "checkpoints" / "checkpoint.npz"))
    x = arrays["x"][1:]
    assert (np.abs(x[:, :2]) <= 0.02).all() and (x[:, 2] < 0.2 + 0.006).all()  # poured over the inlet, falling
    assert meta["setup"]["absent"] == ["inlet"]  # a region only: not a boundary of the run
    bad = scene.replace('mesh = "inlet", depth', 'mesh = "outlet", depth')
    path.write_text(bad)
    assert cli.main(["run", str(path), "--out", str(tmp_path / "p"), "--quiet"]) == 2
