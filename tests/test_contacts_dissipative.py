"""The dissipative contact law (``docs/contacts.md``): materials in scenes with named
errors; the springs as state (blocks equal single steps bit for bit, a rebuild keeps a
persisting spring, checkpoints resume bit for bit, CPU and GPU agree); the conservative
parts against finite differences; momentum in a free cluster; dissipated energy in
``series.csv`` and the frames; and, marked long, ``granular validate contacts``."""

import copy
import itertools
import math

import numpy as np
import pytest

import granular as gr
from granular.io import load_checkpoint, read_series, save_checkpoint
from granular.particles.system import DISSIPATED, frame_data, restore_state, state_arrays
from granular.run.scene import SceneError, build_model, parse_scene
from granular.validation import contacts as study
from kernels.contact_laws import hertz_mindlin

R = study.R
FIELDS = ("x", "v", "q", "omega", "F", "RM", "wall_springs", "dissipated", "wall_contact_peak")

SCENE = {
    "name": "t",
    "run": {"dt": 2e-7, "steps": 400, "backend": "cpu"},
    "materials": {
        "glass": {"young": 7e10, "poisson": 0.25, "density": 2500.0, "restitution": 0.7, "friction": 0.4,
                  "rolling_friction": 0.05, "twisting_friction": 0.05},
        "steel": {"young": 2e11, "poisson": 0.3, "density": 7800.0, "restitution": 0.9, "friction": 0.2},
    },
    "particles": [{"kind": "explicit", "name": "g", "x": [[0.0, 0.0, 0.01001], [0.0003, 0.0, 0.03003]], "radius": 0.01,
                   "velocity": [0.3, 0.0, -1.0], "omega": [0.0, 40.0, 0.0], "material": "glass"}],
    "contacts": {},
    "walls": [{"normal": [0.0, 0.0, 1.0], "offset": 0.0, "material": "steel"}],
    "fields": {"gravity": [0.0, 0.0, -9.81]},
}  # fmt: skip


def edit(path, value):
    d = copy.deepcopy(SCENE)
    node = d
    for key in path[:-1]:
        node = node[key]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


def test_scene_with_materials_builds_the_law():
    model, _ = build_model(parse_scene(copy.deepcopy(SCENE)), backend="cpu")
    assert model.law is not None and model.n == 2
    # mass and inertia of solid glass spheres
    m = 2500.0 * 4.0 / 3.0 * math.pi * R**3
    np.testing.assert_allclose(model.backend.to_host(model.mass), m, rtol=1e-14)
    np.testing.assert_allclose(model.backend.to_host(model.inertia), 0.4 * m * R * R, rtol=1e-14)


BAD = [
    (edit(("materials", "glass", "young"), -1.0), r"materials.glass.young: Input should be greater than 0"),
    (edit(("materials", "glass", "restitution"), 0.0), r"materials.glass.restitution: .*greater than or equal to 0.01"),
    (edit(("materials", "glass", "poisson"), 0.7), r"materials.glass.poisson: .*less than or equal to 0.5"),
    (edit(("materials", "glass", "friction"), -0.1), r"materials.glass.friction: .*greater than or equal to 0"),
    (edit(("materials", "glass", "frictoin"), 0.1), r"materials.glass.frictoin: unknown key"),
    (edit(("particles", 0, "material"), "rubber"), r"particles\[0\].material: no material 'rubber'; defined: \['glass', 'steel'\]"),
    (edit(("particles", 0, "material"), ...), r"particles\[0\].material: with \[materials\] every group names one"),
    (edit(("walls", 0, "material"), ...), r"walls\[0\].material: with \[materials\] every wall names one"),
    (edit(("walls", 0, "material"), "rubber"), r"walls\[0\].material: no material 'rubber'"),
    (edit(("contacts", "kpp"), 10.0), r"contacts.kpp: with \[materials\] the hertz-mindlin law replaces U\^pp"),
    (edit(("contacts", "search"), "all-pairs"), r"contacts.search: the hertz-mindlin law .* needs 'cells'"),
    (edit(("contacts", "velocity"), "full"), r"contacts.velocity: Input should be 'predicted' or 'half'"),
]  # fmt: skip


@pytest.mark.parametrize("data,match", BAD, ids=[f"case{k}" for k in range(len(BAD))])
def test_bad_materials_are_named_with_their_field(data, match):
    with pytest.raises(SceneError, match=match) as info:
        build_model(parse_scene(data), backend="cpu")
    assert len(info.value.errors) == 1, str(info.value)


def test_builder_refuses_mixed_laws():
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10)
    b.add_particles([[0.0, 0.0, 0.0]], radius=R, material="glass")
    b.add_particles([[1.0, 0.0, 0.0]], radius=R)
    b.set_contacts()
    with pytest.raises(ValueError, match="particle 1 has no material"):
        b.finalize("cpu")
    with pytest.raises(ValueError, match="material 'glass': defined twice"):
        b.add_material("glass", 7e10)


def test_mixing_and_the_tsuji_factor():
    from granular.particles.forces.materials import Material, mix, tsuji_alpha

    a, b = Material(7e10, 0.25, restitution=0.9, friction=0.4), Material(2e11, 0.3, restitution=0.4, friction=0.1)
    row = mix(a, b)
    assert row[hertz_mindlin.PAIR_ESTAR] == pytest.approx(1.0 / ((1 - 0.25**2) / 7e10 + (1 - 0.3**2) / 2e11), rel=1e-14)
    assert row[hertz_mindlin.PAIR_MU] == pytest.approx(0.2, rel=1e-14)
    assert row[hertz_mindlin.PAIR_ALPHA] == pytest.approx(tsuji_alpha(0.6), rel=1e-12)
    assert (mix(a, b) == mix(b, a)).all()
    # the factor grows as e falls; none for e = 1
    alphas = [tsuji_alpha(e) for e in (0.95, 0.7, 0.3, 0.1)]
    assert tsuji_alpha(1.0) == 0.0 and all(p < q for p, q in itertools.pairwise(alphas))


def test_the_tsuji_factor_is_the_same_number_whatever_blas_kernels_the_machine_has():
    """``α(e)`` comes from an ODE solve whose last digits follow the BLAS kernels OpenBLAS
    picks for the CPU; rounded to nine digits it is one number everywhere (each damped
    trajectory inherits it). Three of OpenBLAS's kernel sets, forced in fresh processes
    (the variable is ignored where NumPy has another BLAS), give the same ``α`` for the
    block's, the glass-steel pair's and other restitutions, and each still rebounds at
    its ``e`` to 1e-8."""
    import json
    import os
    import subprocess
    import sys

    from granular.particles.forces.materials import ALPHA_DIGITS, _rebound, tsuji_alpha

    es = (0.5, 0.8, 0.6, 0.3, 0.95)
    code = ("import json; from granular.particles.forces.materials import tsuji_alpha; "
            f"print(json.dumps([tsuji_alpha(e) for e in {es!r}]))")
    got = {}
    for core in ("Haswell", "Sandybridge", "Prescott"):
        env = dict(os.environ, OPENBLAS_CORETYPE=core)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False,
                           timeout=300)  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
        got[core] = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["Haswell"] == got["Sandybridge"] == got["Prescott"] == [tsuji_alpha(e) for e in es]
    for e, a in zip(es, got["Haswell"]):
        assert float(f"{a:.{ALPHA_DIGITS}g}") == a
        assert _rebound(a) == pytest.approx(e, abs=1e-8)


# ------------------------------------------------------------------ state, bits


def frictional_box(backend, n_side=None, spacing=2.01):
    """Spheres of two materials in a box of five walls under tilted gravity, thrown with
    spins: pair and wall contacts, friction, rolling, twisting, sliding and sticking."""
    be = gr.get_backend(backend) if isinstance(backend, str) else backend
    n_side = n_side or (2 if be.simulated else 4)
    rng = np.random.default_rng(7)
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10, 0.25, 2500.0, 0.6, 0.4, 0.05, 0.05)
    b.add_material("steel", 2e11, 0.3, 7800.0, 0.9, 0.2, 0.02, 0.02)
    g = (np.stack(np.meshgrid(*(np.arange(n_side),) * 3, indexing="ij"), -1).reshape(-1, 3) + 0.5) * spacing * R
    g += rng.uniform(-0.2, 0.2, size=g.shape) * (spacing - 2.0) * R
    n = len(g)
    half = n // 2
    v = rng.normal(scale=3.0, size=(n, 3))
    w = rng.normal(scale=80.0, size=(n, 3))
    b.add_particles(g[:half], v=v[:half], omega=w[:half], radius=R, material="glass")
    b.add_particles(g[half:], v=v[half:], omega=w[half:], radius=R * 0.98, material="steel")
    box = n_side * spacing * R
    for normal, offset in (([0, 0, 1], 0.0), ([1, 0, 0], 0.0), ([-1, 0, 0], -box), ([0, 1, 0], 0.0),
                           ([0, -1, 0], -box)):  # fmt: skip
        b.add_wall(normal, offset, material="steel")
    b.set_gravity([2.0, 1.0, -9.81])
    b.set_contacts(skin=0.002 * R)  # small: the list is rebuilt every few tens of steps
    return b.finalize(be)


def snapshot(model, s):
    be = model.backend
    out = {k: be.to_host(getattr(s, k)).copy() for k in FIELDS}
    out["pairs"], out["springs"] = s.neighbors.springs()
    return out | {"step": s.step, "time": s.time}


def assert_same(a, b):
    for k in FIELDS + ("pairs", "springs"):
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert (a["step"], a["time"]) == (b["step"], b["time"])


H = 2e-7


@pytest.fixture(scope="module")
def box_reference():
    """The frictional box by single steps on the CPU, and the list builds on the way."""
    model = frictional_box("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    nl = s.neighbors
    builds = nl.builds
    for _ in range(300):
        integ.step(model, s, H)
    return snapshot(model, s), nl.builds - builds


@pytest.mark.parametrize("block", [1, 7, 64])
def test_blocks_equal_single_steps_bitwise(block, box_reference):
    ref, builds = box_reference
    assert builds >= 3  # contacts persisted through rebuilds of the list
    model = frictional_box("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=block)
    integ.advance(model, s, H, 300)
    assert_same(snapshot(model, s), ref)
    if block > 1:
        assert integ.engine(model, s).block_rebuilds >= 1  # rebuilt on the device, inside blocks
    # the steps did something: sliding, rolling and twisting all dissipated, contacts persisted
    assert (ref["dissipated"].sum(axis=0) > 0).all(), ref["dissipated"].sum(axis=0)
    assert len(ref["pairs"]) > 0 and (ref["wall_springs"] != 0).any()


def test_pair_springs_agree_at_both_ends_and_survive_a_rebuild():
    model = frictional_box("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.advance(model, s, H, 200)
    nl = s.neighbors
    be = model.backend

    def by_row():
        nbr, count, hist = be.to_host(nl.nbr), be.to_host(nl.count), be.to_host(nl.hist)
        out = {}
        for i in range(model.n):
            for p in range(min(count[i], nl.capacity)):
                if (hist[i, p] != 0).any():
                    out[(i, int(nbr[i, p]))] = hist[i, p].copy()
        return out

    rows = by_row()
    assert rows, "no contact carries a spring"
    for (i, j), spring in rows.items():  # the same spring at both ends, bit for bit
        np.testing.assert_array_equal(rows[(j, i)], spring)
    pairs, springs = nl.springs()
    # a rebuild here (with a larger skin: other rows, other slots) keeps every spring bitwise
    nl.build(s.x)
    moved = by_row()
    assert moved.keys() == rows.keys()
    for key, spring in rows.items():
        np.testing.assert_array_equal(moved[key], spring)
    p2, s2 = nl.springs()
    np.testing.assert_array_equal(p2, pairs)
    np.testing.assert_array_equal(s2, springs)


def test_a_slot_not_held_has_no_springs_through_rebuilds_and_a_regrow():
    """A rebuild carries only the held slots' springs (``kernels/grid.py``: ``keep_body``
    and ``carry_springs`` on the hash grid, ``carry_in_place`` on the CPU's sorted cell
    list): that is exact because every slot not held, listed or past its row's end, holds
    zero springs. Checked over the whole arrays of a frictional block that hit
    a wall (contacts made, opened and rebuilt many times), then after a regrow."""
    from granular.particles.shapes import block_impact_builder
    from kernels.layout import REPORT_NEIGHBORS, REPORT_SIZE

    model = block_impact_builder(8, gap=0.05, friction=True, bonded=False).finalize("cpu")
    s = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, s, 1e-3, 400)
    nl = s.neighbors
    assert nl.builds >= 3

    def check():
        hist, live, count = nl.hist, nl.live, np.minimum(nl.count, nl.capacity)
        listed = np.arange(nl.capacity)[None, :] < count[:, None]
        assert live.any() and (live[listed] != 0).sum() < listed.sum()  # held and free slots both
        assert not hist[live == 0].any()
        assert not live[~listed].any() and not hist[~listed].any()  # nothing past a row's end
        np.testing.assert_array_equal(live[listed] != 0, hist[listed][:, -1] != 0)

    check()
    pairs, springs = nl.springs()
    nl.resize(nl.capacity + 5)
    nl.build(s.x)
    check()
    p2, s2 = nl.springs()
    np.testing.assert_array_equal(p2, pairs)
    np.testing.assert_array_equal(s2, springs)
    # a build that outgrew the rows: regrown from the rows as the sorted cell list's build
    # left them (it moves the springs within each row), not from the copy of the rows
    # whose flags and springs past a row's end are left from older, longer rows (planted)
    short = int(np.argmin(nl.count_old))
    assert nl.count_old[short] < nl.capacity and nl.sorted_list_used()
    nl.live_old[short, nl.count_old[short]:] = 1
    nl.hist_old[short, nl.count_old[short]:] = 0.5
    report = np.zeros(REPORT_SIZE)
    report[REPORT_NEIGHBORS] = nl.capacity + 1
    assert nl.overflowed(report)
    check()
    p3, s3 = nl.springs()
    np.testing.assert_array_equal(p3, pairs)
    np.testing.assert_array_equal(s3, springs)


def test_a_persisting_contact_keeps_its_spring_through_a_rebuild_in_a_run():
    """Two spheres roll over each other long enough for rebuilds to happen while they
    touch; the run with rebuilds equals one with a list that never needs them (a skin
    wider than the motion), bit for bit."""

    m, g = 2500.0 * 4.0 / 3.0 * math.pi * R**3, 9.81
    estar = 7e10 / (2 * (1 - 0.25**2))
    d_wall = (2 * m * g / (4 / 3 * estar * math.sqrt(R))) ** (2 / 3)  # resting overlaps under gravity
    d_pair = (m * g / (4 / 3 * estar * math.sqrt(R / 2))) ** (2 / 3)

    def model(skin):
        b = gr.ModelBuilder()
        b.add_material("glass", 7e10, 0.25, 2500.0, 0.5, 0.5, 0.1, 0.1)
        b.add_particles([[0.0, 0.0, R - d_wall], [0.0, 0.0, 3 * R - d_wall - d_pair]],
                        v=[[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]], omega=[[0.0, 0.0, 0.0], [0.0, 0.0, 300.0]], radius=R,
                        material="glass")  # fmt: skip
        b.add_wall([0, 0, 1], 0.0, material="glass", allow_initial_overlap=True)
        b.set_gravity([0.0, 0.0, -9.81])
        b.set_contacts(skin=skin, allow_initial_overlap=True)
        return b.finalize("cpu")

    runs = []
    for skin in (2e-6, 4 * R):
        m = model(skin)
        s = m.state()
        integ = gr.ExplicitIntegrator("verlet", max_block=16)
        integ.advance(m, s, 5e-7, 320)
        runs.append((snapshot(m, s), s.neighbors.builds, integ.engine(m, s).block_rebuilds))
    (a, builds_small, in_blocks), (b, builds_wide, _) = runs
    assert builds_wide == 1 and builds_small + in_blocks > 10  # the narrow skin rebuilt the list many times
    assert len(a["pairs"]) == 1  # still touching, spring not zero
    assert_same(a, b)


def test_checkpoint_resume_is_bitwise(tmp_path):
    scene = parse_scene(copy.deepcopy(SCENE))
    model, _ = build_model(scene, backend="cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=32)
    integ.advance(model, s, 2e-7, 300)
    path = str(tmp_path / "c.npz")
    save_checkpoint(path, state_arrays(model, s), {"step": s.step})
    assert len(state_arrays(model, s)["contact_pairs"]) == 1  # the two spheres touch: a spring to carry
    integ.advance(model, s, 2e-7, 500)
    ref = snapshot(model, s)
    # a fresh model and state, the springs from the file
    model2, _ = build_model(parse_scene(copy.deepcopy(SCENE)), backend="cpu")
    s2 = model2.state()
    arrays, _ = load_checkpoint(path)
    restore_state(model2, s2, arrays)
    gr.ExplicitIntegrator("verlet", max_block=32).advance(model2, s2, 2e-7, 500)
    assert_same(snapshot(model2, s2), ref)


def test_health_snapshot_restores_the_springs():
    """The run's last-good snapshot (taken at each output, put back on a failure) holds
    the neighbour list with its springs: advancing from a restored snapshot repeats the
    same steps bit for bit."""
    from granular.particles.health import Snapshot
    from granular.particles.system import STATE_ARRAYS

    model, _ = build_model(parse_scene(copy.deepcopy(SCENE)), backend="cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=16)
    integ.advance(model, s, 2e-7, 300)
    snap = Snapshot(s, STATE_ARRAYS, model)
    assert len(snap.springs["hist"]) and (snap.springs["hist"] != 0).any()
    integ.advance(model, s, 2e-7, 200)
    first = snapshot(model, s)
    snap.restore(s)
    integ.advance(model, s, 2e-7, 200)
    assert_same(snapshot(model, s), first)


def test_checkpoint_without_springs_is_refused_for_the_law():
    model, _ = build_model(parse_scene(copy.deepcopy(SCENE)), backend="cpu")
    s = model.state()
    arrays = state_arrays(model, s)
    del arrays["dissipated"]
    with pytest.raises(ValueError, match="has no 'dissipated'"):
        restore_state(model, model.state(), arrays)


@pytest.mark.gpu
def test_cpu_and_gpu_agree(gpu_backend):
    steps = 60 if gpu_backend.simulated else 300
    out = []
    for be in (gr.get_backend("cpu"), gpu_backend):
        model = frictional_box(be, n_side=2, spacing=2.001)  # touching within a few tens of steps
        s = model.state()
        gr.ExplicitIntegrator("verlet", max_block=8).advance(model, s, H, steps)
        out.append(snapshot(model, s))
    a, b = out
    assert len(a["pairs"]) >= 1 and (a["wall_springs"] != 0).any()
    if gpu_backend.simulated:  # the same source run as Python: the same bits
        for k in ("x", "v", "omega", "wall_springs", "dissipated", "wall_contact_peak", "pairs", "springs"):
            np.testing.assert_array_equal(b[k], a[k], err_msg=k)
    # A GPU rounds differently (fused multiply-adds, libdevice), and the stick/slip branches
    # of friction amplify it: on an H200 after 300 steps, one omega component differed by
    # 1.9e-12 of the largest (|dx| 1e-13 for the torus at 1000 steps). A law evaluated
    # differently on the GPU would differ by orders more than the 1e-10 allowed here.
    for k in ("x", "v", "omega", "wall_springs", "dissipated", "wall_contact_peak"):
        scale = np.abs(a[k]).max()
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-10 * max(scale, 1e-300), err_msg=k)
    np.testing.assert_array_equal(a["pairs"], b["pairs"])
    np.testing.assert_allclose(b["springs"], a["springs"], rtol=0, atol=1e-10 * np.abs(a["springs"]).max())


# ------------------------------------------------------------------ physics


def law(T, geometry, velocities, params, springs, h):
    return hertz_mindlin.contact_law(T, geometry, velocities, velocities, params, springs, h)


def test_conservative_parts_against_finite_differences():
    """Elastic forces are minus the gradient of the energy ``granular_energy``: the
    normal force of the overlap, the tangential force of the spring ``ξ``, the rolling
    couple of ``ψ`` and the twisting couple of ``φ`` (no damping, no slip, h = 0)."""
    T = np.float64
    estar, gstar, rstar, mstar = 4e10, 1.6e10, 0.005, 0.01
    params = (estar, gstar, 0.0, 0.0, 1e9, 1e9, 1e9)  # elastic, no limit reached
    xi = np.array([1e-7, -2e-7, 0.0])
    psi = np.array([2e-7, 3e-7, 0.0])  # in the tangent plane (the law turns a spring into it)
    phi = 2e-5
    delta = 2e-5
    n = (0.0, 0.0, 1.0)
    zero_v = (0.0,) * 9

    def energy(d, xi=xi, psi=psi, phi=phi):
        return hertz_mindlin.stored_energy(T, d, rstar, estar, gstar, *xi, *psi, phi)

    def call(d, xi=xi, psi=psi, phi=phi):
        return law(T, (*n, d, R - d / 2, R - d / 2, rstar, mstar), zero_v, params, (*xi, *psi, phi, d), 0.0)

    r = call(delta)
    # normal: F_n = -dU/d(position) = dU/dδ at fixed springs... only the Hertz part depends on δ alone
    eps = 1e-3 * delta
    un = lambda d: hertz_mindlin.stored_energy(T, d, rstar, estar, gstar, 0, 0, 0, 0, 0, 0, 0)
    fd = (un(delta + eps) - un(delta - eps)) / (2 * eps)
    assert r[2] == pytest.approx(fd, rel=1e-6)
    # tangential: F_t = -dU/dξ, rolling force F_r = -dU/dψ (couple R* n × F_r), twisting M = -dU/dφ
    kt = 8 * gstar * math.sqrt(rstar * delta)
    for c in range(2):
        e = np.zeros(3)
        e[c] = 1e-3 * np.abs(xi).max()
        fd = -(energy(delta, xi=xi + e) - energy(delta, xi=xi - e)) / (2 * e[c])
        assert r[c] == pytest.approx(fd, rel=1e-6)
        assert r[c] == pytest.approx(-kt * xi[c], rel=1e-12)
    # the rolling couple on a: R* n × F_r plus the moment of the tangential force about a's centre
    fr = []
    for c in range(3):
        e = np.zeros(3)
        e[c] = 1e-3 * np.abs(psi).max()
        fr.append(-(energy(delta, psi=psi + e) - energy(delta, psi=psi - e)) / (2 * e[c]))
    fr = np.array(fr)
    ft = np.array(r[0:3]) - np.array([0, 0, r[2]])
    la = R - delta / 2
    expect_ma = rstar * np.cross(n, fr) - la * np.cross(n, ft)
    fd_tw = -(energy(delta, phi=phi * 1.001) - energy(delta, phi=phi * 0.999)) / (0.002 * phi)
    expect_ma[2] += fd_tw
    np.testing.assert_allclose(r[3:6], expect_ma, rtol=1e-6, atol=1e-9 * np.abs(expect_ma).max())


def test_model_forces_are_the_energy_gradient():
    """With e = 1 and no friction the law is Hertz: the kernels' forces on a compressed
    cluster are minus the central-difference gradient of the model's U_pp + U_pw."""
    b = gr.ModelBuilder()
    b.add_material("glass", 7e10, 0.25, 2500.0)
    rng = np.random.default_rng(1)
    x = np.array([[0, 0, R], [2 * R, 0, R], [R, 1.7 * R, R], [R, 0.6 * R, 2.6 * R]]) * 1.0
    x[:, 2] -= 1e-5
    x += rng.normal(scale=1e-6, size=x.shape)
    b.add_particles(x, radius=R, material="glass")
    b.add_wall([0, 0, 1], 0.0, material="glass", allow_initial_overlap=True)
    b.set_contacts(allow_initial_overlap=True)
    model = b.finalize("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet")
    integ.prepare(model, s)
    F = s.F.copy()

    def energy(xx):
        t = model.state()
        t.x[...] = xx
        d = model.diagnostics(t)
        return d["U_pp"] + d["U_pw"]

    eps = 1e-9
    fd = np.zeros_like(x)
    for i in range(len(x)):
        for c in range(3):
            xp, xm = s.x.copy(), s.x.copy()
            xp[i, c] += eps
            xm[i, c] -= eps
            fd[i, c] = -(energy(xp) - energy(xm)) / (2 * eps)
    np.testing.assert_allclose(F, fd, rtol=0, atol=1e-5 * np.abs(F).max())
    assert np.abs(F).max() > 1.0


def test_free_cluster_conserves_momentum_with_friction():
    c = study.cluster(steps=800)
    assert c["dissipated_fraction"] > 1e-4, c
    assert c["P"] < 1e-13 and c["L"] < 1e-13, c
    assert c["energy"] < 2e-3, c


def test_friction_force_never_exceeds_coulomb_and_sliding_matches_impulse_theory():
    mu, e, vn = 0.3, 0.9, 1.0
    vt = 5.0 * mu * (1 + e)  # far in gross sliding
    got_v, got_w, ratio = study.oblique(vt, vn=vn, mu=mu, e=e, steps_per_contact=100)
    assert ratio <= 1 + 1e-9
    assert ratio > 0.999  # it did slide at the limit
    assert got_v == pytest.approx(vt - mu * (1 + e) * vn, abs=0.02)
    assert got_w == pytest.approx(2.5 * mu * (1 + e) * vn, abs=0.02)


@pytest.mark.parametrize("e", [0.2, 0.8])
def test_restitution_does_not_depend_on_speed(e):
    got = [study.restitution(e, v, steps_per_contact=200) for v in (0.01, 1.0)]
    assert got == pytest.approx([e, e], rel=0.01)


def test_elastic_impact_is_hertz():
    w = study.elastic_wall(1.0)
    assert w["t_c"] == pytest.approx(w["t_c_theory"], rel=0.01)
    assert w["F_max"] == pytest.approx(w["F_max_theory"], rel=0.01)


# ------------------------------------------------------------------ output


def test_series_and_frames_carry_the_dissipation(tmp_path):
    from granular.run.simulation import Simulation

    scene = parse_scene(edit(("run", "steps"), 600))
    model, run = build_model(scene, backend="cpu")
    s = model.state()
    sim = Simulation(model, s, tmp_path / "out", run)
    sim.run(steps=600)
    series = read_series(str(tmp_path / "out" / "series.csv"))
    for k in DISSIPATED + ("contacts",):
        assert k in series, k
    dissipated = sum(series[k] for k in DISSIPATED)
    assert dissipated[-1] > 0
    conserved = series["total"] + dissipated
    assert np.abs(conserved - conserved[0]).max() < 1e-3 * abs(conserved[0])
    assert series["contacts"].max() >= 1
    _, point, _, _ = frame_data(model, s)
    assert point["contacts"].shape == (2,) and point["contacts"].max() >= 1
    assert point["contact_force"].shape == (2, 3) and np.abs(point["contact_force"]).max() > 0


# ------------------------------------------------------------------ the study


def test_validate_contacts_quick_cli(tmp_path, capsys):
    import json

    from granular.cli import main

    rc = main(["validate", "contacts", "--quick", "--json", "--out", str(tmp_path)])
    report = json.loads(capsys.readouterr().out)
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    assert rc == 0 and report["passed"], failed
    names = " ".join(c["name"] for c in report["checks"])
    for key in ("contact time / Hertz", "peak force / Hertz", "damped impact", "gross sliding", "all angles",
                "mu F_n", "incline", "linear momentum", "angular momentum", "total + dissipated"):  # fmt: skip
        assert key in names, key
    assert (tmp_path / "contacts.json").is_file() and (tmp_path / "contacts.png").stat().st_size > 20_000


@pytest.mark.long
def test_full_contacts_study_passes():
    report = study.run(quick=False)
    assert report.passed, report.text()
    assert report.data["order_predicted"]["spin"][0]["order"] > 1.5


@pytest.mark.parametrize("law", ["hertz-mindlin", "linear"])
def test_dissipation_never_decreases_and_balances_the_energy(law):
    """A damped sliding impact (E = 1e8, ν = 0.3, ρ = 2500, R = 0.01, e = 0.5, μ = 0.3,
    1 m/s at 5° from the tangent onto a wall of the same material; rolling and twisting
    resistance on): each kind of dissipated energy is non-decreasing at every step, to
    round-off, and total plus dissipated energy is conserved to first order in h. (A
    spring reset on sliding to ``-(F_t + η_t v_t)/k_t`` stored ``η_t² v_t²/2k_t`` and booked
    about -0.34 of the incoming kinetic energy to friction at the first contact step.)"""
    from granular.particles.system import DISSIPATED

    def run(h):
        b = gr.ModelBuilder()
        mat = {"stiffness": 1e5, "tangential_damping": 1.0} if law == "linear" else {"young": 1e8, "poisson": 0.3}
        b.add_material("a", density=2500.0, restitution=0.5, friction=0.3, rolling_friction=0.1,
                       twisting_friction=0.1, **mat)  # fmt: skip
        th = math.radians(5.0)
        b.add_particles([[0.0, 0.0, 0.01 + 1e-7]], v=[[math.cos(th), 0.0, -math.sin(th)]],
                        omega=[[0.0, 0.0, 30.0]], radius=0.01, material="a")  # fmt: skip
        b.add_wall([0, 0, 1], 0.0, material="a")
        b.set_contacts(law=law)
        model = b.finalize("cpu")
        s = model.state()
        integ = gr.ExplicitIntegrator("verlet")
        e0 = None
        rows = []
        for _ in range(int(round(1.2e-3 / h))):
            integ.step(model, s, h)
            d = model.diagnostics(s)
            energy = d["kinetic_translational"] + d["kinetic_rotational"] + d["U_pp"] + d["U_pw"]
            rows.append([d[k] for k in DISSIPATED] + [energy])
            e0 = e0 if e0 is not None else 0.5 * float(model.mass[0])
        a = np.array(rows) / e0
        return a

    coarse, fine = run(4e-7), run(2e-7)
    for a in (coarse, fine):
        steps = np.diff(a[:, :4], axis=0)
        assert steps.min() >= -1e-15, f"a dissipated energy decreased by {-steps.min():.3g} of the impact energy"
        assert a[-1, 1] > 1e-3  # friction dissipated something
    drift = [np.ptp(a[:, 4] + a[:, :4].sum(axis=1)) for a in (coarse, fine)]
    assert drift[1] < 1e-3 and 1.6 < drift[0] / drift[1] < 2.5, drift  # first order in h


@pytest.mark.parametrize("law", ["hertz-mindlin", "linear"])
def test_particle_numbering_does_not_change_a_frictional_impact(law, rng):
    """27 spheres with friction, rolling and twisting resistance thrown together onto a
    floor: under a random renumbering the trajectory is the same bit for bit (a pair is
    evaluated in the order of its positions, not of its indices)."""
    g = (np.stack(np.meshgrid(*(np.arange(3),) * 3, indexing="ij"), -1).reshape(-1, 3) - 1.0) * 2.01 * R
    g += rng.uniform(-0.002, 0.002, g.shape) * R + [0.0, 0.0, 3.3 * R]
    v = -3.0 * (g - g.mean(axis=0)) / R + rng.normal(scale=0.3, size=g.shape)
    w = rng.normal(scale=50.0, size=g.shape)
    perm = rng.permutation(len(g))
    out = []
    for p in (np.arange(len(g)), perm):
        b = gr.ModelBuilder()
        mat = {"stiffness": 1e5, "tangential_damping": 0.5} if law == "linear" else {"young": 1e8}
        b.add_material("a", density=2500.0, restitution=0.6, friction=0.3, rolling_friction=0.05,
                       twisting_friction=0.05, **mat)  # fmt: skip
        b.add_particles(g[p], v=v[p], omega=w[p], radius=R, material="a")
        b.add_wall([0, 0, 1], 0.0, material="a")
        b.set_gravity([0.0, 0.0, -9.81])
        b.set_contacts(law=law)
        model = b.finalize("cpu")
        s = model.state()
        gr.ExplicitIntegrator("verlet").advance(model, s, 1e-6, 1500)
        inv = np.argsort(p)
        out.append({k: np.asarray(getattr(s, k))[inv] for k in ("x", "v", "q", "omega")})
    assert np.abs(out[0]["omega"]).max() > 0
    for k in ("x", "v", "q", "omega"):
        np.testing.assert_array_equal(out[1][k], out[0][k], err_msg=k)
