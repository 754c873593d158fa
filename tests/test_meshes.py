"""Triangle-mesh boundaries (``ModelBuilder.add_mesh``, :mod:`kernels.meshes`): a flat mesh
is the planar wall to round-off, a sphere on an edge or a vertex feels the closed-form
force, one flat or convex region gives one contact and a concave corner one per face,
history follows a contact across triangles, moving meshes carry particles and their work
closes the balance, files are read in their units, and the loads and frames are written."""

import math
import os

import numpy as np
import pytest

import granular as gr
from granular.particles.diagnostics import energies
from granular.particles.forces.meshes import TriangleMesh, closest_points, near_pairs

R = 0.01
RHO = 7800.0
MASS = 4.0 / 3.0 * math.pi * R**3 * RHO


def host(model, a):
    return np.array(model.backend.to_host(a), dtype=np.float64)


def sphere_model(boundary, x0, v0=(0.0, 0.0, 0.0), w0=(0.0, 0.0, 0.0), backend="cpu", gravity=True, friction=0.5,
                 rolling=0.0, law="hertz-mindlin", overlap=True, **motion):  # fmt: skip
    """One steel sphere and a ``boundary``: ``"wall"`` (the plane z = 0) or a TriangleMesh."""
    b = gr.ModelBuilder()
    mat = None
    if law == "hertz":
        b.add_particles([x0], v=v0, omega=w0, radius=R, mass=MASS)
        b.set_contacts(kpp=50.0)
    else:
        b.add_material("steel", density=RHO, young=2e8, poisson=0.3, restitution=0.5, friction=friction,
                       rolling_friction=rolling, twisting_friction=rolling)  # fmt: skip
        b.add_particles([x0], v=v0, omega=w0, radius=R, mass=MASS, material="steel")
        b.set_contacts(law=law)
        mat = "steel"
    if gravity:
        b.set_gravity([0.0, 0.0, -9.81])
    if isinstance(boundary, str):
        b.add_wall([0, 0, 1], 0.0, material=mat, allow_initial_overlap=overlap, **motion)
    else:
        b.add_mesh(boundary, material=mat, allow_initial_overlap=overlap, **motion)
    return b.finalize(backend)


def run(model, steps, h=1e-5):
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(model, s)
    integ.advance(model, s, h, steps)
    return s


def pose(model, s):
    return np.concatenate([host(model, s.x)[0], host(model, s.v)[0], host(model, s.omega)[0]])


def floor(div=(1, 1), half=0.2):
    return TriangleMesh.rectangle([0.0, 0.0, 0.0], [half, 0.0, 0.0], [0.0, half, 0.0], divisions=div)


@pytest.mark.parametrize("div", [(1, 1), (48, 48)])
@pytest.mark.parametrize(("v0", "w0"), [((0.0, 0.0, -0.5), (0.0, 0.0, 0.0)), ((0.3, 0.1, -0.5), (5.0, -3.0, 2.0))],
                         ids=["normal", "oblique-spinning"])  # fmt: skip
def test_a_flat_mesh_gives_the_impact_on_the_planar_wall_to_round_off(div, v0, w0):
    """A sphere dropped on a flat mesh (two triangles, or 4608 small ones whose edges and
    vertices it crosses while it slides, spins and rolls) bounces, slides and rolls as on
    the planar wall z = 0, with friction and its history: one contact wherever it is."""
    x0 = (0.0, 0.0, 1.05 * R)  # above the shared diagonal of the two triangles, a vertex of the fine mesh
    steps = 6000
    wall = pose(m := sphere_model("wall", x0, v0, w0, rolling=0.05), run(m, steps))
    mesh = pose(m := sphere_model(floor(div), x0, v0, w0, rolling=0.05), run(m, steps))
    if v0[0]:
        assert abs(wall[0] - x0[0]) > R  # it crossed edges of the fine mesh (squares of 0.83 R)
    np.testing.assert_allclose(mesh, wall, rtol=1e-11, atol=1e-13)


def test_a_sphere_rolling_across_a_finely_meshed_plane_keeps_its_speed_and_spin():
    """Rolling diagonally across a plane of 2048 triangles (edges every 0.6 R, vertices on
    its path), a sphere keeps the speed and spin it has on the planar wall: no bump at an
    edge or a vertex."""
    x0 = (-0.15, -0.15, 0.99922 * R)
    v0 = (0.2, 0.2, 0.0)
    w0 = (-0.2 / (0.99922 * R), 0.2 / (0.99922 * R), 0.0)
    steps = 20000
    mw = sphere_model("wall", x0, v0, w0)
    mm = sphere_model(floor((32, 32)), x0, v0, w0)
    wall, mesh = pose(mw, run(mw, steps)), pose(mm, run(mm, steps))
    assert mesh[0] - x0[0] > 0.035  # crossed about six cells, diagonally
    np.testing.assert_allclose(mesh[3:], wall[3:], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(mesh[:3], wall[:3], rtol=1e-11, atol=1e-13)


def hertz_wall_force(dist):
    """The Hertz force ``(4/3) E* √R δ^{3/2}`` on a sphere at rest whose centre is ``dist``
    from the contact point (steel on steel: ``1/E* = 2 (1 - ν²)/E``), checked against the
    planar wall's force at that distance."""
    estar = 2e8 / (2.0 * (1.0 - 0.3**2))
    f = 4.0 / 3.0 * estar * math.sqrt(R) * (R - dist) ** 1.5
    m = sphere_model("wall", (0.0, 0.0, dist), gravity=False)
    assert gr.forces_by_family(m, m.state())["walls"][0][0][2] == pytest.approx(f, rel=1e-12)
    return f


@pytest.mark.parametrize(
    ("x", "contact"),
    [((0.5 + 0.6 * R, 0.3, 1.0 + 0.6 * R), (0.5, 0.3, 1.0)),  # over the top edge x = 0.5, z = 1
     ((0.5 + 0.5 * R, 0.5 + 0.5 * R, 1.0 + 0.5 * R), (0.5, 0.5, 1.0)),  # over the corner
     ((0.2, 0.1, 1.0 + 0.8 * R), (0.2, 0.1, 1.0)),  # on the top face
     ((0.0, 0.0, 1.0 + 0.8 * R), (0.0, 0.0, 1.0))],  # on the diagonal two triangles of the face share
    ids=["edge", "vertex", "face", "face-diagonal"],
)
def test_a_sphere_on_an_edge_or_a_vertex_of_a_box_feels_the_closed_form_force(x, contact):
    """On a convex edge or corner of a meshed box the force is the wall law at the
    distance from the edge or corner, along the line from it to the centre, once."""
    box = TriangleMesh.box([-0.5, -0.5, 0.0], [0.5, 0.5, 1.0])
    m = sphere_model(box, x, gravity=False)
    F = gr.forces_by_family(m, m.state())["walls"][0][0]
    e = np.subtract(x, contact)
    d = float(np.linalg.norm(e))
    f = hertz_wall_force(d)
    np.testing.assert_allclose(F, f * e / d, rtol=1e-12, atol=1e-12 * f)
    Fm, Mm, per_tri = gr.mesh_loads(m, m.state())
    np.testing.assert_allclose(Fm[0], -F, rtol=1e-12, atol=1e-12 * f)
    assert np.count_nonzero(np.abs(per_tri).sum(1)) == 1  # one triangle holds the contact
    np.testing.assert_allclose(Mm[0], np.cross(np.subtract(contact, box.center), -F), rtol=1e-10, atol=1e-12 * f)


@pytest.mark.parametrize("x", [(0.5 + 0.6 * R, 0.3, 1.0 + 0.55 * R), (0.5 + 0.5 * R, 0.5 + 0.45 * R, 1.0 + 0.5 * R),
                               (0.5 - 0.8 * R, 0.1, 1.0 - 0.3)], ids=["edge", "vertex", "side-face"])  # fmt: skip
def test_the_mesh_force_is_minus_the_gradient_of_the_mesh_energy(x):
    """A sphere at rest on a meshed box (no history yet): the force of the mesh contacts
    equals the central difference of their stored energy (``U_pw``) in each direction."""
    box = TriangleMesh.box([-0.5, -0.5, 0.0], [0.5, 0.5, 1.0])

    def at(y):
        m = sphere_model(box, tuple(y), gravity=False)
        return m, m.state()

    m, s = at(x)
    F = gr.forces_by_family(m, s)["walls"][0][0]
    eps = 1e-7 * R
    grad = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        up = [energies(*a, a[0].diagnostics(a[1]))["U_pw"] for a in (at(np.add(x, e)), at(np.subtract(x, e)))]
        grad[k] = (up[0] - up[1]) / (2.0 * eps)
    assert np.linalg.norm(F) > 0
    np.testing.assert_allclose(F, -grad, rtol=1e-6, atol=1e-6 * np.linalg.norm(F))


def test_a_sphere_in_a_concave_corner_touches_both_faces():
    """Inside a meshed box, a sphere in the corner of the floor and a side feels both
    faces: the two planar walls' forces summed."""
    box = TriangleMesh.box([-0.5, -0.5, 0.0], [0.5, 0.5, 1.0])
    x = (0.5 - 0.8 * R, 0.1, 0.9 * R)
    m = sphere_model(box, x, gravity=False)
    F = gr.forces_by_family(m, m.state())["walls"][0][0]
    np.testing.assert_allclose(F, [-hertz_wall_force(0.8 * R), 0.0, hertz_wall_force(0.9 * R)], rtol=1e-12)


def test_the_spring_follows_a_contact_across_the_facets_of_a_drum():
    """A sphere resting in a faceted drum turning slowly is carried up the wall by friction
    and the spring follows it from facet to facet (64 facets, 5.6° apart, under the smooth
    angle): it never slips back, so it stays where a planar wall tangent to it would keep
    it, below the drum's axis, with the friction force below μ times the normal force."""
    drum = TriangleMesh.cylinder(0.1, 0.05, segments=64, axis=(0.0, 1.0, 0.0))
    x0 = (0.0, 0.0, -0.1 * math.cos(math.pi / 64) + 0.99922 * R)  # on the lowest facet's middle
    m = sphere_model(drum, x0, angular_velocity=[0.0, 0.5, 0.0], center=[0.0, 0.0, 0.0], friction=0.8,
                     rolling=0.3)  # fmt: skip
    s = run(m, 40000)  # 0.4 s: the drum turned by 0.2 rad, over three facets
    x = host(m, s.x)[0]
    angle = math.atan2(-x[0], -x[2])  # the sphere's angle from the bottom, the way the wall moves... (either sign)
    assert abs(angle) > 0.1
    springs = host(m, s.wall_springs)[0]
    assert np.count_nonzero(springs[:4, -1]) == 1  # one held mesh contact slot
    F, _, per_tri = gr.mesh_loads(m, s)
    assert np.count_nonzero(np.abs(per_tri).sum(1)) == 1
    n = -x / np.linalg.norm(x)  # towards the axis, the contact's normal to a round drum
    f = -F[0]
    fn = float(f @ n)
    assert fn > 0 and np.linalg.norm(f - fn * n) < 0.8 * fn


def test_a_sphere_on_a_mesh_belt_rolls_at_two_sevenths_of_its_speed_and_the_balance_closes():
    """As on a moving planar wall: the mesh moving at ``V`` brings the sphere to ``2V/7``
    rolling, and ``total + dissipated - work`` stays where it started; the mesh run equals
    the planar wall's to round-off."""
    V = 0.1
    x0 = (0.0, 0.0, 0.999 * R)
    mm = sphere_model(floor((6, 6)), x0, velocity=[V, 0.0, 0.0])
    s = mm.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(mm, s)
    d = mm.diagnostics(s)
    e0 = energies(mm, s, d)["total"]
    integ.advance(mm, s, 1e-5, 10000)
    v = host(mm, s.v)[0]
    assert v[0] == pytest.approx(2.0 * V / 7.0, rel=2e-3)
    d = mm.diagnostics(s)
    bal = energies(mm, s, d)["total"] + sum(d[k] for k in d if k.startswith("dissipated_")) - d["work_walls"]
    assert d["work_walls"] > 0 and abs(bal - e0) < 1e-4 * d["work_walls"]
    mw = sphere_model("wall", x0, velocity=[V, 0.0, 0.0])
    np.testing.assert_allclose(pose(mm, s), pose(mw, run(mw, 10000)), rtol=1e-11, atol=1e-13)


def test_a_mesh_run_is_the_same_bit_for_bit_for_every_block_length_and_through_a_checkpoint():
    """Sliding and spinning across a turning, meshed floor: the mesh slots' springs and
    keys are state, saved and restored with the rest."""
    from granular.particles.system import restore_state, state_arrays

    model = sphere_model(floor((16, 16)), (0.0, 0.0, 0.9995 * R), (0.2, 0.05, 0.0), (10.0, 0.0, 5.0),
                         angular_velocity=[0.0, 0.0, 2.0], center=[0.05, 0.0, 0.0])  # fmt: skip

    def advance(s, steps, block=256):
        gr.ExplicitIntegrator("verlet", max_block=block).advance(model, s, 1e-5, steps)
        return s

    def of(s):
        return np.concatenate([pose(model, s), host(model, s.wall_springs).ravel(), host(model, s.wall_work)])

    ref = of(advance(model.state(), 600))
    assert np.count_nonzero(host(model, model.state().wall_springs)) == 0 and np.count_nonzero(ref[9:-1]) > 4
    for block in (1, 7):
        np.testing.assert_array_equal(of(advance(model.state(), 600, block)), ref)
    saved = state_arrays(model, advance(model.state(), 250))
    again = model.state()
    restore_state(model, again, saved)
    np.testing.assert_array_equal(of(advance(again, 350)), ref)


def test_a_turning_mesh_is_the_turning_planar_wall():
    """A flat mesh turning about the vertical through a point off the sphere carries it
    round as the planar wall turning the same way does (the mesh's pose from the frame's
    rotation, the law in its velocity field)."""
    x0 = (0.03, 0.0, 0.999 * R)
    motion = {"angular_velocity": [0.0, 0.0, 3.0], "center": [0.0, 0.0, 0.0]}
    mm = sphere_model(floor((8, 8)), x0, **motion)
    mw = sphere_model("wall", x0, **motion)
    a, b = pose(mm, run(mm, 8000)), pose(mw, run(mw, 8000))
    assert np.hypot(a[3], a[4]) > 0.01  # it was carried
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.long
def test_paper_003s_law_without_history_meets_a_mesh_as_a_planar_wall():
    """The law without history (no mesh slots): a sphere on a fine flat mesh bounces as on
    the planar wall, and sits in a concave corner on both faces."""
    x0, v0 = (0.003, 0.002, 1.05 * R), (0.3, 0.1, -0.5)
    a = pose(m := sphere_model("wall", x0, v0, law="hertz"), run(m, 3000))
    b = pose(m := sphere_model(floor((48, 48)), x0, v0, law="hertz"), run(m, 3000))
    np.testing.assert_allclose(b, a, rtol=1e-11, atol=1e-13)
    box = TriangleMesh.box([-0.5, -0.5, 0.0], [0.5, 0.5, 1.0])
    m = sphere_model(box, (0.5 - 0.8 * R, 0.1, 0.9 * R), gravity=False, law="hertz")
    F = gr.forces_by_family(m, m.state())["walls"][0][0]
    assert F[0] < 0 < F[2] and F[1] == 0.0


def test_the_closest_points_of_the_kernels_and_of_the_host_agree():
    """Ericson's Voronoi regions (the kernels') against the host's projection and
    clamping, for random points around random triangles."""
    from kernels.meshes import closest

    rng = np.random.default_rng(3)
    tri = rng.normal(size=(200, 3, 3))
    y = rng.normal(size=(200, 3)) * 1.5
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    rows = np.concatenate([tri.reshape(-1, 9), n], axis=1)
    c_host, d_host = closest_points(y, tri[:, 0], tri[:, 1], tri[:, 2])
    for t in range(200):
        d, c1, c2, c3, *_ = closest(np.float64, *y[t], rows, t)
        assert d == pytest.approx(d_host[t], rel=1e-12, abs=1e-12)
        np.testing.assert_allclose([c1, c2, c3], c_host[t], atol=1e-12)


def test_the_bins_find_every_triangle_within_reach():
    rng = np.random.default_rng(5)
    mesh = TriangleMesh.cylinder(0.3, 0.2, segments=40)
    x = rng.uniform(-0.4, 0.4, size=(3000, 3))
    pi, pt = near_pairs(mesh, x, 0.05)
    v, t = mesh.vertices, mesh.triangles
    for i in rng.choice(3000, 60, replace=False):
        _, d = closest_points(np.repeat(x[i:i + 1], len(t), 0), v[t[:, 0]], v[t[:, 1]], v[t[:, 2]])
        assert set(np.flatnonzero(d < 0.05)) <= set(pt[pi == i])


@pytest.mark.parametrize("fmt", ["stl-ascii", "stl-binary", "obj"])
def test_mesh_files_are_read_in_their_units(tmp_path, fmt):
    import meshio

    box = TriangleMesh.box([0, 0, 0], [10, 20, 30])
    ext = "obj" if fmt == "obj" else "stl"
    path = str(tmp_path / f"box.{ext}")
    kw = {"binary": fmt == "stl-binary"} if ext == "stl" else {}
    meshio.write(path, meshio.Mesh(box.vertices, [("triangle", box.triangles)]), **kw)
    m = TriangleMesh.read(path, units="mm").welded()
    assert len(m) == 12 and len(m.vertices) == 8
    np.testing.assert_allclose(np.ptp(m.vertices, axis=0), [0.01, 0.02, 0.03], rtol=1e-6)


@pytest.mark.parametrize(
    ("make", "message"),
    [(lambda: TriangleMesh([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]]), "zero area"),
     (lambda: TriangleMesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 3]]), "indices"),
     (lambda: TriangleMesh.read("/nonexistent/anvil.stl"), "no file"),
     (lambda: floor().transformed(rotation=[0, 0, 0, 30]), "rotation"),
     (lambda: sphere_model(floor(), (0.0, 0.0, 0.5 * R), overlap=False), "touches triangle"),
     (lambda: gr.ModelBuilder().add_mesh(floor(), smooth_angle=95), "smooth_angle")],
    ids=["degenerate", "index", "file", "rotation", "overlap", "smooth-angle"],
)
def test_bad_meshes_are_refused_with_a_message_naming_the_problem(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_the_gpu_kernels_meet_meshes_as_the_cpu_does(gpu_backend):
    """The simulator's kernels (or a GPU's) against the CPU's, on a sphere bouncing on a
    moving, meshed floor with friction."""
    runs = []
    for backend in ("cpu", gpu_backend):
        m = sphere_model(floor((4, 4)), (0.01, 0.0, 1.02 * R), (0.1, 0.0, -0.3), backend=backend,
                         velocity=[0.05, 0.0, 0.0])  # fmt: skip
        s = m.state()
        integ = gr.ExplicitIntegrator("verlet")
        integ.prepare(m, s)
        integ.advance(m, s, 1e-5, 40)
        runs.append(np.concatenate([pose(m, s), host(m, s.wall_work), host(m, s.wall_springs).ravel()]))
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-12, atol=1e-14)


SCENE = """
[run]
dt = 1e-5
steps = 400
output_every = 0.001
series_every = 0.001

[materials.steel]
density = 7800
young = 2e8
poisson = 0.3
restitution = 0.5
friction = 0.5

[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.009992], [0.05, 0.0, 0.009992]]
radius = 0.01
mass = 0.0327
material = "steel"

[contacts]
law = "hertz-mindlin"

[fields]
gravity = [0, 0, -9.81]

[[meshes]]
file = "plate.stl"
units = "mm"
material = "steel"
allow_initial_overlap = true
velocity = [0.02, 0.0, 0.0]
"""


def test_a_run_writes_the_meshes_at_each_frame_and_their_loads(tmp_path):
    """``granular run`` on a scene with a meshed plate read from an STL file in mm and
    moving: the meshes' collection at each frame, where the plate is, with the force on
    each triangle, and the plate's load in walls.csv, the sum of those forces."""
    import meshio

    from granular.cli import main

    plate = floor((2, 2), half=100.0)  # mm
    meshio.write(str(tmp_path / "plate.stl"), meshio.Mesh(plate.vertices, [("triangle", plate.triangles)]))
    (tmp_path / "scene.toml").write_text(SCENE)
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "scene.toml"), "--out", str(out)]) == 0
    assert (out / "meshes.pvd").exists()
    frames = sorted(os.listdir(out / "meshes"))
    assert len(frames) >= 3
    last = meshio.read(str(out / "meshes" / frames[-1]))
    force = last.cell_data["force"][0]
    assert np.count_nonzero(np.abs(force).sum(1)) >= 1
    np.testing.assert_allclose(last.point_data["displacement"], [[0.02 * 400 * 1e-5, 0.0, 0.0]] * len(last.points),
                               rtol=1e-9, atol=1e-15)  # fmt: skip
    first = meshio.read(str(out / "meshes" / frames[0]))
    np.testing.assert_allclose(last.points - first.points, last.point_data["displacement"], atol=1e-15)
    import csv

    rows = list(csv.DictReader(open(out / "walls.csv")))
    assert float(rows[-1]["time"]) == pytest.approx(0.004)
    assert float(rows[-1]["mesh0_Fz"]) == pytest.approx(force[:, 2].sum(), rel=1e-9)
    assert float(rows[-1]["mesh0_Fz"]) < 0.0  # the spheres press on it
