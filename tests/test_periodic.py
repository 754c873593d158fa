"""Periodic boxes: minimum-image contacts and bonds, wrapped positions with image counters,
the neighbour search around the periodic axes, and the pair springs' orientation.

What the geometry issue asks to be shown: a particle leaving one side enters the other
with the same velocity; a bonded pair across the boundary has the forces of the same pair
in the middle of the box; momentum is conserved to round-off in a periodic box with no
walls. Besides: the neighbour rows against a brute-force minimum-image search, the
simulator's hash grid against the CPU's sorted cell list, a frictional contact whose
canonical order flips (the spring must flip with it), checkpoints, scenes, bad input.
"""

import math
import tomllib

import numpy as np
import pytest

import granular as gr
from granular.particles.fragments import fragments
from granular.particles.neighbors import min_image
from granular.particles.statefile import _springs_by_index, restore_state, state_arrays
from granular.run.scene import SceneError, build_model, parse_scene

L = 1.0


def host(model, a):
    return np.asarray(model.backend.to_host(a), dtype=np.float64)


def glass(b, friction=0.4, rolling=0.05):
    b.add_material("glass", 7e8, 0.25, 2500.0, 0.7, friction, rolling, rolling)


# --------------------------------------------------------------------- wrap and images


def test_a_particle_leaving_one_side_enters_the_other_with_the_same_velocity():
    b = gr.ModelBuilder()
    v0 = np.array([3.13, -2.33, 0.0])
    b.add_particles([[0.9, 0.2, 0.5]], v=[v0], radius=0.05)
    b.set_periodic(x=(0.0, L), y=(0.0, L))
    m = b.finalize("cpu")
    s = m.state()
    h, n = 1e-3, 1000
    gr.ExplicitIntegrator("verlet").advance(m, s, h, n)
    x = host(m, s.x)[0]
    assert 0.0 <= x[0] < L and 0.0 <= x[1] < L
    np.testing.assert_array_equal(host(m, s.v)[0], v0)  # no force: the velocity is untouched by the wraps
    image = np.asarray(s.image)[0]
    unwrapped = np.array([0.9, 0.2, 0.5]) + v0 * h * n
    np.testing.assert_array_equal(image, np.floor(unwrapped / L).astype(int) * [1, 1, 0])
    np.testing.assert_allclose(host(m, s.unwrapped(m.period))[0], unwrapped, rtol=0, atol=1e-12)
    assert image[0] == 4 and image[1] == -3  # it crossed the box several times each way


# ------------------------------------------------------------ bonds across the boundary


def bonded_pair(center, period):
    b = gr.ModelBuilder()
    rng = np.random.default_rng(4)
    d = np.array([0.11, 0.03, -0.02])
    x = np.mod(np.array([center - d / 2, center + d / 2]), L)
    b.add_particles(x, v=rng.normal(0, 0.05, (2, 3)), omega=rng.normal(0, 2.0, (2, 3)), radius=0.05)
    b.add_bonds([[0, 1]], ka=50.0, ks=20.0, km=0.02)
    if period:
        b.set_periodic(x=(0.0, L), y=(0.0, L), z=(0.0, L))
    return b.finalize("cpu")


def test_a_bonded_pair_across_the_boundary_has_the_forces_of_the_pair_in_the_middle():
    runs = []
    for center in ([0.5, 0.5, 0.5], [0.999, 0.001, 0.5]):  # the second straddles two faces
        m = bonded_pair(np.array(center), period=True)
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 1e-3, 3000)
        x = host(m, s.x)
        runs.append(dict(d=min_image(x[1] - x[0], m.period), v=host(m, s.v), w=host(m, s.omega), F=host(m, s.F), q=host(m, s.q),
                         image=np.asarray(s.image).copy()))  # fmt: skip
    mid, edge = runs
    assert np.abs(edge["image"]).sum() > 0  # the pair did cross the boundary
    # positions near 1 and near 0.5 round differently (by ulps of the box); over 3000 steps
    # of a stiff bond that grows to ~1e-12 of the force, nowhere near a physical difference
    for k in ("d", "v", "w", "F", "q"):
        np.testing.assert_allclose(edge[k], mid[k], rtol=0, atol=1e-10 * max(1.0, np.abs(mid[k]).max()), err_msg=k)
    # and the middle of a periodic box is the open world
    m = bonded_pair(np.array([0.5, 0.5, 0.5]), period=False)
    s = m.state()
    gr.ExplicitIntegrator("verlet").advance(m, s, 1e-3, 3000)
    np.testing.assert_array_equal(host(m, s.v), mid["v"])


# ------------------------------------------------------------------------ contacts


def gas(n=150, backend="cpu", seed=1, gravity=None):
    """Frictional grains at random in a fully periodic box, with random velocities."""
    rng = np.random.default_rng(seed)
    r = 0.02
    b = gr.ModelBuilder()
    glass(b)
    side = int(math.ceil(n ** (1 / 3)))
    cells = (np.indices((side, side, side)).reshape(3, -1).T[:n] + 0.5) / side  # a jittered lattice
    x = (cells + rng.uniform(-0.1, 0.1, (n, 3)) / side) * [L, L, 0.4 * L]
    b.add_particles(x, v=rng.normal(0, 2.0, (n, 3)), omega=rng.normal(0, 20.0, (n, 3)), radius=r, material="glass")
    b.set_contacts()
    b.set_periodic(x=(0.0, L), y=(0.0, L), z=(0.0, 0.4 * L))
    if gravity is not None:
        b.set_gravity(gravity)
    return b.finalize(backend)


def test_momentum_is_conserved_to_round_off_in_a_periodic_box_without_walls():
    m = gas()
    s = m.state()
    integ = gr.ExplicitIntegrator("verlet")
    p0 = m.diagnostics(s)
    scale = float((host(m, m.mass)[:, None] * np.abs(host(m, s.v))).sum())
    integ.advance(m, s, 2e-5, 4000)
    p1 = m.diagnostics(s)
    for c in "xyz":
        assert abs(p1[f"P_{c}"] - p0[f"P_{c}"]) <= 1e-13 * scale, c
    assert np.abs(np.asarray(s.image)).sum() > 30  # grains went through the faces
    assert p1["dissipated_friction"] > 0  # and collided, with friction


def test_a_frictional_collision_across_the_boundary_is_the_collision_in_the_middle():
    """Two grains meeting obliquely, spinning, with friction and rolling resistance:
    across a corner of the box and in its middle, the same trajectory to round-off."""
    runs = []
    for at in ([0.5, 0.5, 0.2], [0.0, 0.0, 0.0]):
        b = gr.ModelBuilder()
        glass(b)
        at = np.array(at)
        rel = np.array([[-0.0201, -0.002, 0.0015], [0.0201, 0.002, -0.0015]])
        b.add_particles(np.mod(at + rel, [L, L, 0.4]), v=[[0.3, 0.0, 0.05], [-0.3, 0.02, 0.0]],
                        omega=[[0.0, 5.0, 0.0], [3.0, 0.0, -2.0]], radius=0.02, material="glass")  # fmt: skip
        b.set_contacts()
        b.set_periodic(x=(0.0, L), y=(0.0, L), z=(0.0, 0.4))
        m = b.finalize("cpu")
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 1e-6, 4000)
        x = host(m, s.x)
        runs.append(np.concatenate([min_image(x[1] - x[0], m.period), host(m, s.v).ravel(), host(m, s.omega).ravel(),
                                    host(m, s.dissipated).sum(axis=0)]))  # fmt: skip
    assert runs[0][-3] > 0  # friction worked
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9, atol=1e-13)


def test_a_spring_survives_a_flip_of_the_pairs_canonical_order():
    """A grain sliding over another so that their centres pass each other in x (the
    canonical order is by position, x first): the tangential spring must turn with the
    pair. The same collision turned by a quarter turn about y never flips; the two agree."""
    R, u, e = 0.01, 0.05, 1e-6

    def run(rot):
        b = gr.ModelBuilder()
        b.add_material("glass", 7e10, 0.25, 2500.0, 0.9, 0.5, 0.0, 0.0)
        xa, xb = np.zeros(3), np.array([-e, 0.0, 2 * R + 1e-9])
        va, vb = np.array([-u, 0.0, 0.0]), np.array([u, 0.0, -0.2])
        b.add_particles([rot @ xa, rot @ xb], v=[rot @ va, rot @ vb], radius=R, material="glass")
        b.set_contacts()
        m = b.finalize("cpu")
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 1e-7, 1000)
        return np.concatenate([(rot.T @ host(m, s.v).T).T.ravel(), (rot.T @ host(m, s.omega).T).T.ravel()])

    quarter = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    flipped, steady = run(np.eye(3)), run(quarter)
    assert abs(steady[0] + u) > 1e-3  # friction changed the tangential velocity
    np.testing.assert_allclose(flipped, steady, rtol=0, atol=1e-9 * np.abs(steady).max())


def test_the_neighbour_rows_are_the_brute_force_minimum_image_pairs():
    rng = np.random.default_rng(7)
    n, r = 400, 0.02
    b = gr.ModelBuilder()
    x = rng.uniform(0, 1, (n, 3)) * [L, 0.5, 0.3]
    b.add_particles(x, radius=r)
    b.set_contacts(kpp=1.0, skin=0.01, allow_initial_overlap=True)
    b.set_periodic(x=(0.0, L), z=(0.0, 0.3))  # y is open
    m = b.finalize("cpu")
    s = m.state()
    nl = m.neighbors_of(s)
    nl.build(s.x)
    got = {tuple(p) for p in nl.pairs().tolist()}
    d = min_image(x[:, None, :] - x[None, :, :], m.period)
    close = np.linalg.norm(d, axis=2) < 2 * r + 0.01
    i, j = np.nonzero(np.triu(close, 1))
    want = set(zip(i.tolist(), j.tolist()))
    assert got == want
    assert any(abs(x[a, 0] - x[c, 0]) > 0.5 for a, c in want)  # some pairs are across the boundary


def test_the_gpu_kernels_meet_a_periodic_box_as_the_cpu_does(gpu_backend):
    """The hash grid and the kernels of the simulator (or a GPU) against the CPU's sorted
    cell list, on frictional grains crossing the faces."""
    runs = []
    for backend in ("cpu", gpu_backend):
        m = gas(n=40, backend=backend, seed=3)
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 2e-5, 60)
        runs.append(np.concatenate([host(m, s.x).ravel(), host(m, s.v).ravel(), host(m, s.omega).ravel(),
                                    np.asarray(m.backend.to_host(s.image)).ravel()]))  # fmt: skip
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-12, atol=1e-14)


def test_gravity_along_a_periodic_axis_keeps_the_energy_continuous():
    """A grain falling along a periodic axis wraps many times; gravity's energy is taken
    at the unwrapped position, so kinetic + potential stays put."""
    b = gr.ModelBuilder()
    b.add_particles([[0.5, 0.5, 0.5]], radius=0.05)
    b.set_gravity([-9.81, 0.0, 0.0])
    b.set_periodic(x=(0.0, L))
    m = b.finalize("cpu")
    s = m.state()
    e0 = sum(m.diagnostics(s)[k] for k in ("kinetic_translational", "U_gravity"))
    gr.ExplicitIntegrator("verlet").advance(m, s, 1e-3, 2000)
    d = m.diagnostics(s)
    assert np.asarray(s.image)[0, 0] <= -15
    assert abs(d["kinetic_translational"] + d["U_gravity"] - e0) <= 1e-9 * d["kinetic_translational"]


# ------------------------------------------------------------------ checkpoints


def test_checkpoints_keep_the_image_counters_and_springs():
    m = gas(n=60, seed=5)
    s = m.state()
    integ = gr.ExplicitIntegrator("verlet")
    for _ in range(40):  # to a moment with grains through the faces and springs held
        integ.advance(m, s, 2e-5, 100)
        saved = state_arrays(m, s)
        if np.abs(saved["image"]).sum() > 0 and len(saved["contact_pairs"]) > 0:
            break
    assert np.abs(saved["image"]).sum() > 0 and len(saved["contact_pairs"]) > 0
    t = m.state()
    restore_state(m, t, saved)
    integ.advance(m, s, 2e-5, 200)
    gr.ExplicitIntegrator("verlet").advance(m, t, 2e-5, 200)
    for k in ("x", "v", "omega", "image"):
        np.testing.assert_array_equal(np.asarray(getattr(t, k)), np.asarray(getattr(s, k)), err_msg=k)


def test_springs_of_older_checkpoints_are_turned_to_the_order_by_index():
    b = gr.ModelBuilder()
    glass(b)
    b.add_particles([[0.0, 0.0, 0.0], [-0.001, 0.0, 0.039]], radius=0.02, material="glass")
    b.set_contacts(allow_initial_overlap=True)
    m = b.finalize("cpu")
    x = np.array([[0.0, 0.0, 0.0], [-0.001, 0.0, 0.039]])
    pairs = np.array([[0, 1]])
    springs = np.arange(1.0, 9.0)[None, :]
    turned = _springs_by_index(m, x, pairs, springs)  # particle 1 comes first by position
    np.testing.assert_array_equal(turned[0, :3], -springs[0, :3])
    np.testing.assert_array_equal(turned[0, 3:], springs[0, 3:])
    same = _springs_by_index(m, x[::-1], pairs, springs)
    np.testing.assert_array_equal(same, springs)


# ------------------------------------------------------------------- scenes, errors


PERIODIC_SCENE = """
[run]
dt = 2e-5
steps = 50

[materials.glass]
young = 7e8
density = 2500
restitution = 0.7
friction = 0.4

[[particles]]
kind = "explicit"
x = [[0.01, 0.5, 0.1], [0.99, 0.5, 0.1]]
radius = 0.02
material = "glass"

[contacts]
law = "hertz-mindlin"

[periodic]
x = [0.0, 1.0]
"""


def test_a_scene_overlapping_across_the_boundary_is_refused():
    with pytest.raises(SceneError, match="overlap"):
        build_model(parse_scene(tomllib.loads(PERIODIC_SCENE)), "cpu")


def test_a_scene_with_a_periodic_table_builds_a_periodic_model():
    scene = PERIODIC_SCENE.replace("[[0.01, 0.5, 0.1], [0.99, 0.5, 0.1]]", "[[0.03, 0.5, 0.1], [0.97, 0.5, 0.1]]")
    model = build_model(parse_scene(tomllib.loads(scene)), "cpu")
    model = model[0] if isinstance(model, tuple) else model
    np.testing.assert_array_equal(model.period[0], [0.0, 1.0, 1.0])
    assert model.period[1, 1] == 0.0 and model.period[2, 1] == 0.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda b: b.set_periodic(), "at least one periodic axis"),
        (lambda b: b.set_periodic(x=(1.0, 0.0)), r"x = \(1.0, 0.0\) must be finite with hi > lo"),
        (lambda b: b.set_periodic(y=(0.0, math.inf)), "y = "),
        (lambda b: b.set_periodic(z=3.0), "z must be \\(lo, hi\\)"),
    ],
)
def test_bad_periodic_boxes_are_refused_by_name(call, message):
    b = gr.ModelBuilder()
    b.add_particles([[0.5, 0.5, 0.5]], radius=0.05)
    with pytest.raises(ValueError, match=message):
        call(b)


def test_particles_outside_the_box_and_short_boxes_are_refused_at_finalize():
    b = gr.ModelBuilder()
    b.add_particles([[0.5, 0.5, 0.5], [1.0, 0.5, 0.5]], radius=0.05)
    b.set_periodic(x=(0.0, 1.0))
    with pytest.raises(ValueError, match=r"particle 1 is at x = 1, outside the periodic box \[0, 1\)"):
        b.finalize("cpu")
    b = gr.ModelBuilder()
    b.add_particles([[0.1, 0.1, 0.1]], radius=0.05)
    b.set_contacts(kpp=1.0, skin=0.02)
    b.set_periodic(y=(0.0, 0.2))
    with pytest.raises(ValueError, match="0.2 long along y; it must be longer than twice the contact cutoff"):
        b.finalize("cpu")


def test_fragments_are_joined_across_the_faces_and_centred_unwrapped():
    """Two grains touching across the face x = 0 and bonded to nothing: one fragment when
    touching joins fragments, its centre of mass where the pair is, not mid-box."""
    b = gr.ModelBuilder()
    glass(b)
    b.add_particles([[0.0195, 0.5, 0.2], [0.9805, 0.5, 0.2], [0.5, 0.5, 0.2]], radius=0.02, material="glass")
    b.add_bonds([[0, 2]], ka=1.0, strain_max=1e-9)  # a bond that can break: fragments are counted
    b.set_contacts(allow_initial_overlap=True)
    b.set_periodic(x=(0.0, L), y=(0.0, L), z=(0.0, 0.4))
    m = b.finalize("cpu")
    s = m.state()
    s.broken[...] = 1
    m.neighbors_of(s).build(s.x)
    f = fragments(m, s, contacts=True)
    assert f.count == 2 and sorted(f.particles.tolist()) == [1, 2]
    pair = int(np.argmax(f.particles == 2))
    # the pair's centre is on the face (x = 0, put back into the box: 0 or L), not mid-box
    assert min(f.center[pair][0], L - f.center[pair][0]) < 1e-12
    np.testing.assert_allclose(f.center[pair][1:], [0.5, 0.2])
    assert f.fragment[0] == f.fragment[1] != f.fragment[2]


def test_the_stable_step_of_a_bond_across_the_faces_is_that_of_the_bond_inside():
    steps = [gr.estimate_stable_step(bonded_pair(np.array(c), period=True)).h_max
             for c in ([0.5, 0.5, 0.5], [0.999, 0.001, 0.5])]  # fmt: skip
    assert math.isfinite(steps[0])
    assert steps[1] == pytest.approx(steps[0], rel=1e-12)
