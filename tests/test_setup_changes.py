"""Changes of the set-up during a run (:mod:`granular.particles.setup`, a stage's ``add``,
``remove``, ``[[stages.motions]]`` and ``gravity``): a boundary given a new motion is
where it was when the motion starts; the history of the contacts with what stays is
carried; the ledger's ``E_setup`` keeps the energy balance; a staged run that changes its
set-up resumes bit for bit from a checkpoint in any stage; bad input names the field."""

import copy
import tomllib

import numpy as np
import pytest

import granular as gr
from granular.errors import SceneError
from granular.io import load_checkpoint
from granular.particles.builder import ModelBuilder
from granular.particles.forces.motion import rotation_matrix
from granular.particles.health import conserved_energy
from granular.particles.integrators import ExplicitIntegrator
from granular.particles.system import series_row
from granular.particles.setup import Setup, _carried_history, change_setup, configured
from granular.run.scene import parse_scene
from granular.run.stages import stage_plan
from kernels.meshes import HISTORY_SLOTS, SLOTS
from test_stages import rows, run

SCENE = """
name = "gate"
[run]
dt = 2e-5
duration = 0.08
series_every = 0.002
output_every = 0.04
checkpoint_every = 0.01
backend = "cpu"

[materials.glass]
young = 1e7
poisson = 0.3
density = 2500.0
restitution = 0.5
friction = 0.5
rolling_friction = 0.05

[[particles]]
kind = "random"
count = 20
box = [[0.0001, 0.0001, 0.0001], [0.0123, 0.0123, 0.045]]
radius = 0.002
seed = 4
material = "glass"

[contacts]
law = "hertz-mindlin"

[[walls]]
name = "floor"
normal = [0.0, 0.0, 1.0]
material = "glass"

[[walls]]
name = "back"
normal = [1.0, 0.0, 0.0]
material = "glass"

[[walls]]
name = "gate"
normal = [-1.0, 0.0, 0.0]
offset = -0.0124
material = "glass"

[[walls]]
name = "lid"
normal = [0.0, 0.0, -1.0]
offset = -0.05
material = "glass"
present = false

[[meshes]]
name = "side"
shape = { kind = "rectangle", center = [0.006, -0.0001, 0.01], u = [0.03, 0.0, 0.0], v = [0.0, 0.0, 0.03] }
material = "glass"
angular_velocity = [0.0, 0.0, 0.5]
center = [0.0, -0.0001, 0.0]

[fields]
gravity = [0.0, 0.0, -9.81]

[[stages]]
name = "settle"
duration = 0.02

[[stages]]
name = "open"
duration = 0.03
remove = ["gate"]
gravity = [2.0, -1.0, -12.0]
[[stages.motions]]
name = "side"
velocity = [[0.0, 0.0, 0.0, 0.0], [0.01, 0.0, -0.1, 0.0]]

[[stages]]
name = "press"
until = 0.08
add = ["lid"]
[[stages.motions]]
name = "lid"
velocity = [0.0, 0.0, -0.1]
[[stages.motions]]
name = "side"
velocity = [0.0, 0.0, 0.0]
angular_velocity = [0.0, 0.0, -0.3]
"""


@pytest.fixture
def scene(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(SCENE)
    return path


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The staged scene run through (one run for the tests that read it)."""
    d = tmp_path_factory.mktemp("whole")
    (d / "gate.toml").write_text(SCENE)
    assert run(d / "gate.toml", "--out", d / "o") == 0
    return d / "o"


def test_the_stages_change_the_setup_and_the_balance_holds(whole):
    rs = rows(whole)
    at = {round(r["time"], 6): r for r in rs}
    # the gate is taken away at 0.02 with grains pressing on it: their contacts' energy
    # (and the stronger gravity's) is booked, and the balance holds over the whole run
    assert at[0.02]["E_setup"] == 0.0 and at[0.022]["E_setup"] != 0.0
    e0 = conserved_energy(rs[0])
    drift = max(abs(conserved_energy(r) - e0) for r in rs)  # the steps' error at the impacts
    dissipated = rs[-1]["dissipated_normal"] + rs[-1]["dissipated_friction"] + rs[-1]["dissipated_rolling"]
    jump = max(abs(r["E_setup"]) for r in rs)
    assert drift < 0.02 * dissipated, (drift, dissipated)
    assert jump > 20 * drift  # without the ledger's column the balance would not hold
    # the grains flowed out through the open side: past where the gate was
    meta = load_checkpoint(str(whole / "checkpoints" / "checkpoint.npz"))
    x = meta[0]["x"]
    assert x[:, 0].max() > 0.0124 + 0.004
    assert meta[1]["setup"]["absent"] == ["gate"]  # the lid came in, the gate went
    assert meta[1]["stage"]["name"] == "press"


def test_stage_setup_after_the_run(whole):
    meta = load_checkpoint(str(whole / "checkpoints" / "checkpoint.npz"))[1]
    setup = Setup.from_json(meta["setup"])
    # gate removed at the second stage; the lid, absent from the start, put in at the third
    assert setup.gravity == [2.0, -1.0, -12.0]
    assert [m["name"] for m in setup.motions] == ["side", "lid", "side"]
    assert [round(m["t0"], 9) for m in setup.motions] == [0.02, 0.05, 0.05]


@pytest.mark.parametrize("stop", [0.01, 0.035, 0.065])
def test_a_run_that_changes_its_setup_resumes_bit_for_bit(whole, scene, tmp_path, stop):
    assert run(scene, "--out", tmp_path / "part", "--time", stop) == 0
    assert run(scene, "--resume", tmp_path / "part" / "checkpoints" / "checkpoint.npz") == 0
    a, ma = load_checkpoint(str(whole / "checkpoints" / "checkpoint.npz"))
    b, mb = load_checkpoint(str(tmp_path / "part" / "checkpoints" / "checkpoint.npz"))
    for k in ("x", "v", "q", "omega", "dissipated", "wall_springs", "wall_work", "contact_springs"):
        assert np.array_equal(a[k], b[k]), k
    assert ma["setup"] == mb["setup"]
    assert rows(whole)[-1] == rows(tmp_path / "part")[-1]


def _box(walls=True):
    b = ModelBuilder()
    b.add_material("g", density=2500, young=1e7, poisson=0.3, restitution=0.5, friction=0.5)
    x = np.stack(np.meshgrid(np.arange(3), np.arange(3), np.arange(3), indexing="ij"), -1).reshape(-1, 3)
    b.add_particles(x * 0.0205 + 0.0102, radius=0.01, material="g")
    b.set_gravity([3.0, 0.0, -9.81])  # the grains press on the floor and the right wall
    b.add_wall([0, 0, 1], 0.0, material="g", name="floor")
    b.add_wall([1, 0, 0], 0.0, material="g", name="left", velocity=[[0.0, 0.0, 0.0, 0.0], [0.1, 0.02, 0.0, 0.0]],
               angular_velocity=[0.0, 0.3, 0.0], center=[0.0, 0.0, 0.05])  # fmt: skip
    b.add_wall([-1, 0, 0], -0.062, material="g", name="right")
    b.expect_changes()
    if walls:
        b.add_mesh(gr.TriangleMesh.rectangle([0.03, -0.0001, 0.03], [0.06, 0, 0], [0, 0, 0.06], divisions=(2, 2)),
                   material="g", name="front", angular_velocity=[0.0, 1.0, 0.0])  # fmt: skip
    return b


def _settled(walls=True):
    m = _box(walls).finalize("cpu")
    s = m.state()
    integ = ExplicitIntegrator("verlet")
    integ.prepare(m, s)
    integ.advance(m, s, 2e-5, 3000)
    return m, s, integ


def test_a_new_motion_starts_where_the_boundary_is():
    m, s, integ = _settled()
    walls = m.force("walls")
    planes0 = walls.planes_now().copy()
    verts0 = walls.mesh_vertices_now(0).copy()
    change_setup(m, s, motions={"left": {"velocity": [0.0, 0.0, 0.05], "angular_velocity": [0.2, 0.0, 0.0]},
                                "front": {"angular_velocity": [0.0, 0.0, 2.0], "center": [0.0, 0.0, 0.0]}})  # fmt: skip
    integ.prepare(m, s)  # places the walls at the state's time
    walls = m.force("walls")
    assert np.allclose(walls.planes_now(), planes0, rtol=0, atol=1e-14)
    assert np.allclose(walls.mesh_vertices_now(0), verts0, rtol=0, atol=1e-14)
    t0 = s.time
    integ.advance(m, s, 2e-5, 500)
    # from t0 on the mesh turns about z through the origin at 2 rad/s
    th = 2.0 * (s.time - t0)
    R = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]])
    assert np.allclose(m.force("walls").mesh_vertices_now(0), verts0 @ R.T, rtol=0, atol=1e-12)
    # and a motion of zeros stops it where it is
    here = m.force("walls").mesh_vertices_now(0).copy()
    change_setup(m, s, motions={"front": {"velocity": [0.0, 0.0, 0.0]}})
    integ.prepare(m, s)
    integ.advance(m, s, 2e-5, 100)
    assert np.allclose(m.force("walls").mesh_vertices_now(0), here, rtol=0, atol=1e-14)


def test_the_history_of_what_stays_is_carried():
    m, s, integ = _settled(walls=False)
    floor = s.wall_springs[:, 0].copy()
    right = s.wall_springs[:, 2].copy()
    assert np.abs(floor).sum() > 0 and np.abs(right).sum() > 0
    change_setup(m, s, remove=["left"])
    assert s.wall_springs.shape[1] == 2
    assert np.array_equal(s.wall_springs[:, 0], floor) and np.array_equal(s.wall_springs[:, 1], right)
    assert m.builder._setup.absent == ["left"]
    change_setup(m, s, add=["left"])  # back, without history
    assert s.wall_springs.shape[1] == 3 and not s.wall_springs[:, 1].any()
    assert np.array_equal(s.wall_springs[:, 0], floor) and np.array_equal(s.wall_springs[:, 2], right)


def test_the_mesh_slots_follow_their_mesh():
    """Taking away the first mesh renumbers the second's slots; a mesh whose reference
    pose turns has its slot keys' normals turned with it (the same normal in the world)."""
    b = _box()
    b.add_mesh(gr.TriangleMesh.rectangle([0.03, 0.0621, 0.03], [0.06, 0, 0], [0, 0, 0.06]), material="g",
               name="back", angular_velocity=[0.0, 0.5, 0.0])  # fmt: skip
    t0 = 0.7
    old = Setup()
    new = Setup(absent=["front"], motions=[{"name": "back", "angular_velocity": [0.0, 0.0, 1.5], "t0": t0}])
    m_old = configured(b, old).finalize("cpu", placement=False)
    m_new = configured(b, new).finalize("cpu", placement=False)
    s_old, s_new = m_old.state(), m_new.state()
    h = s_old.wall_springs.copy()
    H = h.shape[2]
    ob = h.shape[1] - HISTORY_SLOTS
    rng = np.random.default_rng(1)
    n_ref = rng.normal(size=3)
    n_ref /= np.linalg.norm(n_ref)
    for i, mesh in ((0, 1), (1, 0)):  # particle 0 holds a slot of "back" (mesh 1), particle 1 of "front"
        h[i, ob + 1] = rng.normal(size=H)
        h[i, ob + 1, -1] = 1.0
        h[i, ob + SLOTS + 1 + 1, 0] = mesh + 1
        h[i, ob + SLOTS + 1 + 1, 1:4] = n_ref
    out = _carried_history(b, old, new, h, s_new, t0)
    nb = out.shape[1] - HISTORY_SLOTS
    assert np.array_equal(out[0, nb + 1], h[0, ob + 1])  # the spring itself: unchanged (world frame)
    assert out[0, nb + SLOTS + 2, 0] == 1.0  # "back" is mesh 0 now
    world = rotation_matrix([0.0, 0.5, 0.0], t0) @ n_ref
    assert np.allclose(rotation_matrix([0.0, 0.0, 1.5], t0) @ out[0, nb + SLOTS + 2, 1:4], world, atol=1e-14)
    assert not out[1].any()  # "front" went: its slot with it
    assert out[:, :3].tolist() == h[:, :3].tolist()  # the planar walls' columns


def test_simulation_change_books_the_energy(tmp_path):
    m, s, _ = _settled(walls=False)
    sim = gr.Simulation(m, s, tmp_path / "o", dt=2e-5, feeds=[], series_every=2e-4)
    sim.run(steps=200)

    def conserved():
        return conserved_energy({**series_row(sim.model, sim.state, states=False), **sim.ledger.columns()})

    before = conserved()
    sim.change(remove=["right"], gravity=[0.0, 0.0, -20.0])
    booked = sim.ledger.values["E_setup"]
    assert booked > 0.0  # a stronger field: more potential energy for grains above the floor
    assert abs(conserved() - before) < 1e-12 * abs(booked)  # the booking balances the change
    sim.run(steps=400)
    rs = rows(tmp_path / "o")
    assert rs[-1]["E_setup"] == booked
    e = [conserved_energy(r) for r in rs]
    assert max(e) - min(e) < 1e-3 * abs(booked)
    sim2 = gr.Simulation.resume(_box(walls=False).finalize("cpu"), tmp_path / "o")
    assert sim2.model.builder._setup.absent == ["right"] and sim2.model.force("walls").count == 2


def test_bad_changes_name_what_is_wrong(tmp_path):
    m, s, _ = _settled(walls=False)
    x0 = s.x.copy()
    with pytest.raises(ValueError, match="remove: no wall or mesh named 'nope'"):
        change_setup(m, s, remove=["nope"])
    with pytest.raises(ValueError, match="motions\\['left'\\]: unknown keys \\['speed'\\]"):
        change_setup(m, s, motions={"left": {"speed": 1.0}})
    with pytest.raises(ValueError, match="gravity: must be 3 finite numbers"):
        change_setup(m, s, gravity=[0.0, 1.0])
    change_setup(m, s, remove=["right"])
    s.x[0, 0] = 0.058  # a grain where the wall would come back
    with pytest.raises(ValueError, match="add: wall 'right': particle 0"):
        change_setup(m, s, add=["right"])
    assert m.force("walls").count == 2 and m.builder._setup.absent == ["right"]  # nothing changed
    s.x[...] = x0
    sim = gr.Simulation(m, s, tmp_path / "o", dt=2e-5)
    with pytest.raises(ValueError, match="feeds=\\[\\]"):
        sim.change(remove=["floor"])
    closed = gr.ModelBuilder()
    closed.add_particles([[0.0, 0.0, 1.0]], radius=0.5)
    closed.add_wall([0, 0, 1], 0.0, k=10.0, name="floor")
    m2 = closed.finalize("cpu")
    with pytest.raises(ValueError, match="expect_changes"):
        change_setup(m2, m2.state(), remove=["floor"])
    with pytest.raises(ValueError, match="name 'floor' is taken"):
        _box().add_wall([0, 0, 1], name="floor")
    with pytest.raises(ValueError, match="a model of replicas keeps its set-up"):
        gr.ModelBuilder.replicas([_box(walls=False), _box(walls=False)])


def test_bad_stage_changes_name_the_field():
    data = tomllib.loads(SCENE)
    bad = copy.deepcopy(data)
    bad["stages"][1]["remove"] = ["gates"]
    bad["stages"][2]["motions"][0]["name"] = "lids"
    with pytest.raises(SceneError) as info:
        stage_plan(parse_scene(bad), "bad.toml")
    text = str(info.value)
    assert "stages[1].remove[0]: no wall or mesh named 'gates'" in text
    assert "stages[2].motions[0].name: no wall or mesh named 'lids'" in text


def test_a_stage_ends_after_so_many_insertions(tmp_path):
    from test_stages import SCENE as FEEDS

    text = FEEDS.replace('name = "fill"\nduration = 0.04', 'name = "fill"\nduration = 0.04\nuntil_inserted = 30')
    assert text != FEEDS
    (tmp_path / "s.toml").write_text(text)
    assert run(tmp_path / "s.toml", "--out", tmp_path / "o") == 0
    rs = rows(tmp_path / "o")
    # the pour stops at the first edit that brings the 30th particle (4 per edit), long
    # before the stage's 0.04 s (80 particles)
    assert 30 <= rs[-1]["inserted"] < 30 + 4


def test_a_boundary_absent_from_the_start_comes_in_with_its_columns_and_frames(tmp_path):
    """The only wall and the only mesh are declared absent: the series has their
    columns and the frames their collections once a change puts them in; a run resumed
    after the last wall went writes on into the same series."""
    b = gr.ModelBuilder()
    b.add_material("g", density=2500, young=1e7, poisson=0.3, restitution=0.5, friction=0.5)
    b.add_particles([[0.0, 0.0, 0.02], [0.05, 0.0, 0.02]], radius=0.01, material="g")
    b.set_gravity([0.0, 0.0, -9.81])
    b.add_wall([0, 0, 1], 0.0, material="g", name="floor", present=False)
    b.add_mesh(gr.TriangleMesh.rectangle([0.05, 0.0, 0.0], [0.03, 0, 0], [0, 0.03, 0]), material="g", name="pad",
               present=False)  # fmt: skip
    m = b.finalize("cpu")
    assert m.force("walls") is None
    sim = gr.Simulation(m, m.state(), tmp_path / "o", dt=2e-5, feeds=[], series_every=1e-3, output_every=5e-3)
    sim.run(steps=200)
    sim.change(add=["floor", "pad"])
    sim.run(steps=4000)
    rs = rows(tmp_path / "o")
    assert rs[0]["U_pw"] == 0.0 and max(r["U_pw"] for r in rs) > 0.0  # the grains land on the floor and the pad
    assert (tmp_path / "o" / "walls.pvd").exists() and (tmp_path / "o" / "meshes.pvd").exists()
    sim.change(remove=["floor", "pad"])
    sim.run(steps=200)
    again = gr.Simulation.resume(b.finalize("cpu"), tmp_path / "o")
    assert again.model.force("walls") is None
    again.run(steps=200)
    assert rows(tmp_path / "o")[-1]["U_pw"] == 0.0


def test_inserted_clusters_survive_a_change_and_resume(tmp_path):
    """A change of the set-up keeps what the feeds know of the particles that entered
    (their bonds go on into the checkpoints), and the run resumes bit for bit."""
    from granular.particles.feeds import Box, Cluster, Insertion

    def build():
        b = gr.ModelBuilder()
        b.add_material("g", density=2500, young=1e7, poisson=0.3, restitution=0.5, friction=0.5)
        b.add_particles([[0.0, 0.0, 0.003]], radius=0.002, material="g")
        b.set_gravity([0.0, 0.0, -9.81])
        b.add_wall([0, 0, 1], 0.0, material="g", name="floor")
        b.expect_changes()
        return b.finalize("cpu")

    def feeds():
        pair = Cluster([[-0.002, 0.0, 0.0], [0.002, 0.0, 0.0]], 0.002, "g", bonds=[[0, 1]], family={"ka": 2.0})
        return [Insertion(Box([-0.02, -0.02, 0.01], [0.02, 0.02, 0.03]), cluster=pair, rate=500.0, seed=2)]

    m = build()
    sim = gr.Simulation(m, m.state(), tmp_path / "a", dt=2e-5, feeds=feeds(), feed_every=2e-3, checkpoint_every=4e-3)
    sim.run(steps=400)
    sim.change(gravity=[0.0, 0.0, -5.0])
    sim.run(steps=400)
    whole_x, whole_bonds = np.array(sim.state.x), m.n_bonds
    assert whole_bonds >= 4
    m2 = build()
    sim2 = gr.Simulation(m2, m2.state(), tmp_path / "b", dt=2e-5, feeds=feeds(), feed_every=2e-3)
    sim2.run(steps=400)
    sim2.change(gravity=[0.0, 0.0, -5.0])
    sim2.run(steps=200)
    again = gr.Simulation.resume(build(), tmp_path / "b", feeds=feeds())
    again.run(steps=200)
    assert again.model.n_bonds == whole_bonds
    assert np.array_equal(np.asarray(again.state.x), whole_x)


@pytest.mark.parametrize("stop", [0.014, 0.016])
def test_a_stage_ended_by_its_count_resumes_bit_for_bit(tmp_path, stop):
    """until_inserted ends the stage at the edit that brings the count, inside the run
    (no extra frames or rows); a run stopped there, or just before, and resumed ends it
    at the same step."""
    from test_stages import SCENE as FEEDS

    text = FEEDS.replace('name = "fill"\nduration = 0.04', 'name = "fill"\nduration = 0.04\nuntil_inserted = 30')
    text = text.replace("duration = 0.09", "duration = 0.03")
    path = tmp_path / "s.toml"
    path.write_text(text)
    assert run(path, "--out", tmp_path / "whole") == 0
    assert run(path, "--out", tmp_path / "part", "--time", stop) == 0
    assert run(path, "--resume", tmp_path / "part" / "checkpoints" / "checkpoint.npz") == 0
    a, ma = load_checkpoint(str(tmp_path / "whole" / "checkpoints" / "checkpoint.npz"))
    b, mb = load_checkpoint(str(tmp_path / "part" / "checkpoints" / "checkpoint.npz"))
    assert ma["stage"] == mb["stage"] and ma["stage"]["name"] == "drain"
    for k in ("x", "v", "particle_ids", "contact_springs"):
        assert np.array_equal(a[k], b[k]), k
    whole = rows(tmp_path / "whole")
    off = [r["time"] for r in whole if abs(r["time"] / 0.005 - round(r["time"] / 0.005)) > 1e-6]
    assert off == [pytest.approx(ma["stage"]["start"])]  # one row off the grid: the fill's end
    assert whole[-1] == rows(tmp_path / "part")[-1]


def test_the_gpu_backend_changes_the_setup_as_the_cpu_does(gpu_backend, tmp_path):
    """On the GPU backend (the simulator in CI), with graphs: a wall taken away, a mesh
    set turning and gravity changed between runs give the CPU's trajectory to round-off."""

    def build(backend):
        b = gr.ModelBuilder()
        b.add_material("g", density=2500, young=1e7, poisson=0.3, restitution=0.5, friction=0.5)
        x = np.stack(np.meshgrid(np.arange(3), np.arange(3), np.arange(2), indexing="ij"), -1).reshape(-1, 3)
        b.add_particles(x * 0.0205 + 0.0102, v=[0.2, 0.0, 0.0], radius=0.01, material="g")  # onto the right wall
        b.set_gravity([3.0, 0.0, -9.81])
        b.add_wall([0, 0, 1], 0.0, material="g", name="floor")
        b.add_wall([-1, 0, 0], -0.062, material="g", name="right")
        b.add_mesh(gr.TriangleMesh.rectangle([0.03, -0.0001, 0.03], [0.06, 0, 0], [0, 0, 0.06]), material="g",
                   name="front")  # fmt: skip
        b.expect_changes()
        return b.finalize(backend)

    out = []
    for k, backend in enumerate(("cpu", gpu_backend)):
        m = build(backend)
        sim = gr.Simulation(m, m.state(), tmp_path / f"r{k}", dt=2e-5, feeds=[])
        sim.run(steps=300)
        touching = np.abs(np.asarray(m.backend.to_host(sim.state.wall_springs))[:, 1]).sum()
        sim.change(remove=["right"], motions={"front": {"angular_velocity": [0.0, 1.0, 0.0]}}, gravity=[0, 0, -5.0])
        sim.run(steps=300)
        out.append((touching, np.asarray(m.backend.to_host(sim.state.x)), m.force("walls").count))
    assert out[0][0] > 0  # the grains pressed on the wall taken away
    assert out[0][2] == out[1][2] == 1
    assert np.allclose(out[0][1], out[1][1], rtol=0, atol=1e-12)
