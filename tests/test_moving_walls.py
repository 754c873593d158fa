"""Planar walls in prescribed motion (``ModelBuilder.add_wall(velocity=..., angular_velocity=...)``):
the law sees the particle relative to the wall, the wall's work closes the energy balance,
the walls are where the host formula puts them, and runs stay bit for bit the same for
every block length, through a checkpoint, and between the CPU and the simulator."""

import math

import numpy as np
import pytest
from scipy.integrate import quad

import granular as gr
from granular.particles.diagnostics import energies
from granular.particles.forces.motion import WallMotion
from granular.particles.system import restore_state, state_arrays

R = 0.01
RHO = 7800.0
MASS = 4.0 / 3.0 * math.pi * R**3 * RHO


def floor_model(backend, velocity=None, angular_velocity=None, center=None, x0=(0.0, 0.0, 0.999 * R),
                v0=(0.0, 0.0, 0.0), w0=(0.0, 0.0, 0.0), gravity=True, friction=0.5, rolling=0.0, twisting=0.0):  # fmt: skip
    b = gr.ModelBuilder()
    b.add_material("steel", density=RHO, young=2e8, poisson=0.3, restitution=0.5, friction=friction,
                   rolling_friction=rolling, twisting_friction=twisting)  # fmt: skip
    if gravity:
        b.set_gravity([0.0, 0.0, -9.81])
    b.add_particles([x0], v=v0, omega=w0, radius=R, mass=MASS, material="steel")
    b.set_contacts(law="hertz-mindlin")
    b.add_wall([0, 0, 1], 0.0, material="steel", velocity=velocity, angular_velocity=angular_velocity,
               center=center, allow_initial_overlap=True)  # fmt: skip
    return b.finalize(backend)


def host(model, a):
    return np.array(model.backend.to_host(a), dtype=np.float64)


def balance(model, state) -> float:
    """``total + dissipated - work_walls``."""
    d = model.diagnostics(state)
    e = energies(model, state, d)
    return e["total"] + sum(d[k] for k in d if k.startswith("dissipated_")) - d["work_walls"]


def test_a_sphere_set_on_a_moving_floor_rolls_at_two_sevenths_of_its_speed_and_the_energy_balance_closes():
    """Friction carries a sphere set at rest on a floor moving at ``V``: slipping ends
    when it rolls, the angular momentum about the contact point conserved in the floor's
    frame, at ``v = 2V/7`` (``ω l = 5V/7``, ``l`` the centre's height). The floor did
    work; what the sphere holds is half of it, friction took the rest, and ``total +
    dissipated - work`` stays where it started."""
    V = 0.1
    model = floor_model("cpu", velocity=[V, 0.0, 0.0])
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(model, s)
    e0 = balance(model, s)
    integ.advance(model, s, 1e-5, 10000)
    v, w, x = host(model, s.v)[0], host(model, s.omega)[0], host(model, s.x)[0]
    assert v[0] == pytest.approx(2.0 * V / 7.0, rel=2e-3)
    assert -w[1] * x[2] == pytest.approx(V - v[0], rel=1e-6)  # rolls: no slip at the contact point
    work = float(host(model, s.wall_work).sum())
    ke = 0.5 * MASS * v[0] ** 2 + 0.5 * 0.4 * MASS * R**2 * w[1] ** 2
    assert work == pytest.approx(2.0 * ke, rel=5e-3)  # a body brought up to a belt's speed: half is lost
    assert abs(balance(model, s) - e0) < 1e-4 * work


def test_the_contact_list_sees_a_moving_wall_as_the_kernels_do():
    """While the sphere still slips on a belt that also turns, the host's contact list
    gives the wall contact the force and moment of the kernels' wall family (the
    dashpots and friction against the wall's velocity field, not against a wall at rest)."""
    model = floor_model("cpu", velocity=[0.1, 0.0, 0.0], angular_velocity=[0.0, 0.0, 3.0], center=[0.02, 0.0, 0.0],
                        x0=(0.0, 0.0, 0.99922 * R))  # fmt: skip  (the overlap under its weight)
    s = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, s, 1e-5, 200)
    c = gr.contact_list(model, s)
    F, M = gr.forces_by_family(model, s)["walls"]
    assert c.wall.tolist() == [True] and abs(c.force_tangential[0]).max() > 1e-3 * abs(c.force_normal[0]).max()
    np.testing.assert_allclose(c.force[0], F[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(c.moment_i[0], M[0], rtol=1e-12, atol=1e-18)


def test_the_wall_loads_are_the_weight_of_what_rests_on_them_and_match_the_contacts(backend):
    """Two spheres at rest on a floor that turns about a vertical axis through
    ``center``, with a side wall at rest: the floor carries their weight, the moment
    about its centre is that of the weights' lever arms, and each wall's load is minus
    the sum of its contacts' forces in the contact list."""
    b = gr.ModelBuilder()
    b.add_material("steel", density=RHO, young=2e8, poisson=0.3, restitution=0.5, friction=0.5)
    b.set_gravity([0.0, 0.0, -9.81])
    x = [[0.03, 0.01, 0.99922 * R], [-0.02, 0.04, 0.99922 * R]]
    b.add_particles(x, radius=R, mass=MASS, material="steel")
    b.set_contacts(law="hertz-mindlin")
    b.add_wall([0, 0, 1], 0.0, material="steel", angular_velocity=[0, 0, 1e-3], center=[0.01, 0.02, 0.0],
               allow_initial_overlap=True)  # fmt: skip
    b.add_wall([1, 0, 0], -0.05, material="steel")
    model = b.finalize(backend)
    s = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, s, 1e-5, 20 if backend.simulated else 3000)  # settles
    F, M = gr.wall_loads(model, s)
    assert F.shape == (2, 3) and np.all(F[1] == 0.0)  # the side wall is not touched
    if not backend.simulated:  # the simulator takes too few steps to settle
        np.testing.assert_allclose(F[0], [0.0, 0.0, -2 * MASS * 9.81], rtol=0.02, atol=1e-4 * MASS * 9.81)
        arm = np.array(x)[:, :2] - [0.01, 0.02]
        np.testing.assert_allclose(M[0, :2], np.array([-arm[:, 1].sum(), arm[:, 0].sum()]) * (-F[0, 2] / 2),
                                   rtol=0.02, atol=1e-4 * MASS)  # fmt: skip
    c = gr.contact_list(model, s)
    np.testing.assert_allclose(F[0], -c.force[c.wall & (c.pairs[:, 1] == 0)].sum(axis=0), rtol=1e-10, atol=1e-14)


def test_a_floor_moving_along_its_normal_is_a_floor_at_rest_seen_from_it():
    """Galilean check, friction and spin included: a sphere thrown obliquely at a floor
    moving at ``U`` (no gravity) has, relative to the floor, the trajectory of the same
    sphere thrown at ``v0 - U`` against a floor at rest."""
    U = np.array([0.03, -0.02, 0.05])
    v0, w0 = np.array([0.2, 0.1, -0.3]), np.array([5.0, -3.0, 2.0])
    x0 = np.array([0.0, 0.0, 1.05 * R])
    h, steps = 1e-6, 3000
    moving = floor_model("cpu", velocity=U, x0=x0, v0=v0, w0=w0, gravity=False)
    still = floor_model("cpu", x0=x0, v0=v0 - U, w0=w0, gravity=False)
    sm, ss = moving.state(), still.state()
    gr.ExplicitIntegrator("verlet").advance(moving, sm, h, steps)
    gr.ExplicitIntegrator("verlet").advance(still, ss, h, steps)
    t = steps * h
    assert host(still, ss.wall_contact_peak)[0] > 0  # it hit the floor
    np.testing.assert_allclose(host(moving, sm.x)[0] - U * t, host(still, ss.x)[0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(host(moving, sm.v)[0] - U, host(still, ss.v)[0], rtol=0, atol=1e-11)
    np.testing.assert_allclose(host(moving, sm.omega)[0], host(still, ss.omega)[0], rtol=1e-11, atol=1e-9)
    # the floor itself went to U t
    n, c = moving.force("walls").planes_now()[0, :3], moving.force("walls").planes_now()[0, 3]
    assert c == pytest.approx(float(U @ n) * t, abs=1e-15)


def test_a_ball_on_a_turntable_circles_at_two_sevenths_of_its_rate():
    """A ball rolling without slipping on a turntable turning at ``Ω`` moves on a circle at
    the rate ``2Ω/7`` (a classical result of rolling on a rotating plane): once friction
    has brought it to rolling, its centre circles the turntable's centre at that rate."""
    omega = 4.0
    r0 = 0.05
    model = floor_model("cpu", angular_velocity=[0.0, 0.0, omega], x0=(r0, 0.0, 0.999 * R), friction=1.0)
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    h = 2e-5
    integ.advance(model, s, h, 5000)  # slipping ends well within this
    angles, times = [], []
    for _ in range(40):
        integ.advance(model, s, h, 2000)
        x = host(model, s.x)[0]
        angles.append(math.atan2(x[1], x[0]))
        times.append(s.time)
    rate = np.polyfit(times, np.unwrap(angles), 1)[0]
    radius = np.hypot(*host(model, s.x)[0, :2])
    assert rate == pytest.approx(2.0 * omega / 7.0, rel=2e-3)
    assert radius == pytest.approx(r0, rel=0.05)  # it circles the centre it started from, not away


def test_the_energy_balance_closes_on_a_turning_wall_with_rolling_and_twisting_resistance():
    """A sphere spinning on a turntable whose axis is off its centre, with rolling and
    twisting resistance: the wall's couples do work too (``-M_wall·ω``), and ``total +
    dissipated - work`` stays where it started while the work grows."""
    model = floor_model("cpu", angular_velocity=[0.0, 0.0, 6.0], center=[0.03, -0.01, 0.0], w0=(0.0, 0.0, -20.0),
                        friction=0.8, rolling=0.2, twisting=0.3)  # fmt: skip
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(model, s)
    e0 = balance(model, s)
    works = []
    for _ in range(5):
        integ.advance(model, s, 1e-5, 2000)
        works.append(float(host(model, s.wall_work).sum()))
        assert abs(balance(model, s) - e0) < 1e-3 * abs(works[-1])
    d = model.diagnostics(s)
    assert d["dissipated_rolling"] > 0 and d["dissipated_twisting"] > 0 and works[-1] > 0


def test_the_walls_are_where_the_host_formula_puts_them():
    """A wall tilting about an axis in its plane while it moves by a tabulated velocity:
    the plane the kernels placed at each step equals :meth:`WallMotion.plane_at`, and the
    displacement equals the integral of the interpolated velocity."""
    table = [[0.0, 0.0, 0.0, 0.0], [0.01, 0.2, 0.0, -0.1], [0.02, 0.0, 0.3, 0.0]]
    motion = WallMotion(table, [1.5, 0.5, 0.0], [0.1, 0.2, -0.05])
    for t in (-0.01, 0.0, 0.004, 0.013, 0.02, 0.05):
        for c in range(3):
            exact = quad(lambda s: np.interp(s, [r[0] for r in table], [r[c + 1] for r in table]), 0.0, t,
                         points=[0.01], epsabs=1e-15, epsrel=1e-13)[0]  # fmt: skip
            assert motion.displacement(t)[c] == pytest.approx(exact, abs=1e-14)
    b = gr.ModelBuilder()
    b.add_particles([[0.0, 0.0, 1.0]], radius=0.01, mass=1.0)
    b.set_contacts(kpp=1e3)
    b.add_wall([0, 0, 1], -0.5, velocity=table, angular_velocity=[1.5, 0.5, 0.0], center=[0.1, 0.2, -0.05])
    model = b.finalize("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    walls = model.force("walls")
    for _ in range(6):
        integ.advance(model, s, 1e-3, 7)
        n, c = motion.plane_at([0, 0, 1], -0.5, s.time)
        np.testing.assert_allclose(walls.planes_now()[0, :3], n, rtol=0, atol=1e-15)
        assert walls.planes_now()[0, 3] == pytest.approx(c, abs=1e-15)


def run_belt(backend, steps, block=256, state=None):
    model = floor_model(backend, velocity=[[0.0, 0.0, 0.0, 0.0], [0.01, 0.1, 0.05, 0.0]],
                        angular_velocity=[0.0, 0.0, 3.0])  # fmt: skip
    s = model.state() if state is None else state
    gr.ExplicitIntegrator("verlet", max_block=block).advance(model, s, 1e-5, steps)
    return model, s


def test_moving_walls_are_the_same_bit_for_bit_for_every_block_length_and_through_a_checkpoint():
    model, ref = run_belt("cpu", 600)
    for block in (1, 7):
        _, s = run_belt("cpu", 600, block)
        for k in ("x", "v", "omega", "wall_work", "dissipated"):
            np.testing.assert_array_equal(host(model, getattr(s, k)), host(model, getattr(ref, k)), err_msg=k)
    _, half = run_belt("cpu", 250)
    saved = state_arrays(model, half)
    again = model.state()
    restore_state(model, again, saved)
    gr.ExplicitIntegrator("verlet").advance(model, again, 1e-5, 350)
    for k in ("x", "v", "omega", "wall_work", "dissipated"):
        np.testing.assert_array_equal(host(model, getattr(again, k)), host(model, getattr(ref, k)), err_msg=k)
    assert float(host(model, ref.wall_work).sum()) != 0.0


def test_replicas_move_their_own_walls():
    """Two replicas on belts of different speeds, in one model: each moves as it does
    alone (the walls' motion is per wall, the work per particle)."""

    def belt(speed):
        b = gr.ModelBuilder()
        b.add_material("steel", density=RHO, young=2e8, poisson=0.3, restitution=0.5, friction=0.5)
        b.set_gravity([0.0, 0.0, -9.81])
        b.add_particles([[0.0, 0.0, 0.99922 * R]], radius=R, mass=MASS, material="steel")
        b.set_contacts(law="hertz-mindlin")
        b.add_wall([0, 0, 1], 0.0, material="steel", velocity=[speed, 0.0, 0.0], allow_initial_overlap=True)
        return b

    both = gr.replicate([belt(0.1), belt(0.2)]).finalize("cpu")
    s = both.state()
    gr.ExplicitIntegrator("verlet").advance(both, s, 1e-5, 2000)  # both roll by then, at 2V/7
    for k, speed in enumerate((0.1, 0.2)):
        alone = belt(speed).finalize("cpu")
        a = alone.state()
        gr.ExplicitIntegrator("verlet").advance(alone, a, 1e-5, 2000)
        for name in ("x", "v", "omega", "wall_work"):
            np.testing.assert_allclose(host(both, getattr(s, name))[k], host(alone, getattr(a, name))[0], rtol=1e-12,
                                       atol=1e-16, err_msg=name)  # fmt: skip
    assert host(both, s.v)[1, 0] > 1.5 * host(both, s.v)[0, 0] > 0


@pytest.mark.gpu
def test_the_gpu_kernels_move_the_walls_as_the_cpu_does(gpu_backend):
    steps = 60 if gpu_backend.simulated else 600
    cpu, a = run_belt("cpu", steps, 16)
    gpu, b = run_belt(gpu_backend, steps, 16)
    for k in ("x", "v", "omega", "wall_work"):
        np.testing.assert_allclose(host(gpu, getattr(b, k)), host(cpu, getattr(a, k)), rtol=1e-12, atol=1e-15,
                                   err_msg=k)  # fmt: skip
    np.testing.assert_allclose(gpu.force("walls").planes_now(), cpu.force("walls").planes_now(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("kw, message", [
    ({"velocity": [[0.0, 1, 0, 0], [0.0, 2, 0, 0]]}, "times must increase strictly; row 1"),
    ({"velocity": [1.0, 2.0]}, "velocity: must be 3 finite numbers, got \\[1.0, 2.0\\]"),
    ({"velocity": [[0.0, 1, 0]]}, "velocity must be 3 numbers or rows"),
    ({"angular_velocity": [0.0, math.inf, 0.0]}, "angular_velocity: must be 3 finite numbers"),
    ({"center": "x"}, "center: must be 3"),
])  # fmt: skip
def test_a_malformed_motion_is_refused_naming_the_wall(kw, message):
    b = gr.ModelBuilder()
    b.add_wall([0, 0, 1], 0.0, k=1.0)
    with pytest.raises(ValueError, match=r"wall 1: .*" + message.replace("(", r"\(")):
        b.add_wall([0, 0, 1], 0.0, k=1.0, **kw)
    assert len(b._walls) == 1  # nothing half-added


BELT_SCENE = """
name = "belt"
[run]
dt = 1e-5
duration = 0.004
output_every = 0.001
series_every = 0.0005
checkpoint_every = 0.002
backend = "cpu"
[materials.steel]
young = 2e8
density = 7800.0
restitution = 0.5
friction = 0.5
[[particles]]
kind = "explicit"
x = [[0.0, 0.0, 0.00999]]
radius = 0.01
material = "steel"
[contacts]
[[walls]]
normal = [0.0, 0.0, 1.0]
material = "steel"
allow_initial_overlap = true
velocity = [[0.0, 0.0, 0.0, 0.0], [0.002, 0.1, 0.0, 0.0]]
angular_velocity = [0.0, 0.0, 2.0]
[fields]
gravity = [0.0, 0.0, -9.81]
"""


def test_a_run_writes_the_moving_walls_at_each_frame_and_their_work(tmp_path):
    """``granular run`` of a scene with a moving wall: ``walls.pvd`` lists the walls at
    each frame's time where the host formula puts them, ``series.csv`` has
    ``work_walls``, and a resumed run continues both collections."""
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    import meshio

    from granular.io import read_series
    from patience import PATIENCE

    scene = tmp_path / "belt.toml"
    scene.write_text(BELT_SCENE)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "granular", "run", str(scene), "--out", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert not (out / "walls.vtu").exists()
    ds = ET.parse(out / "walls.pvd").getroot().find("Collection").findall("DataSet")
    frames = ET.parse(out / "frames.pvd").getroot().find("Collection").findall("DataSet")
    assert [d.get("timestep") for d in ds] == [d.get("timestep") for d in frames] and len(ds) == 5
    motion = WallMotion([[0.0, 0.0, 0.0, 0.0], [0.002, 0.1, 0.0, 0.0]], [0.0, 0.0, 2.0])
    for d in ds:
        mesh = meshio.read(out / d.get("file"))
        n, c = motion.plane_at([0, 0, 1], 0.0, float(d.get("timestep")))
        np.testing.assert_allclose(mesh.cell_data["normal"][0][0], n, atol=1e-12)
        np.testing.assert_allclose(mesh.points @ n, c, atol=1e-12)  # the square lies in the plane
    series = read_series(str(out / "series.csv"))
    assert series["work_walls"][-1] > 0  # the belt drives the sphere
    loads = read_series(str(out / "walls.csv"))
    assert list(loads) == ["time", "step"] + [f"wall0_{c}" for c in ("Fx", "Fy", "Fz", "Mx", "My", "Mz")]
    np.testing.assert_array_equal(loads["time"], series["time"])
    assert (loads["wall0_Fz"] < 0).all()  # the sphere presses on the belt
    # resume from the checkpoint at t = 0.002: the collections go on from there
    r = subprocess.run([sys.executable, "-m", "granular", "run", str(scene), "--resume",
                        str(out / "checkpoints" / "checkpoint.npz"), "--time", "0.006", "--quiet"],
                       capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert r.returncode == 0, r.stderr
    ds = ET.parse(out / "walls.pvd").getroot().find("Collection").findall("DataSet")
    assert [round(float(d.get("timestep")), 9) for d in ds] == [0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006]
    assert read_series(str(out / "walls.csv"))["time"][-1] == pytest.approx(0.006)
