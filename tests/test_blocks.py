"""Device-resident blocks of steps: the same bits and the same errors as a loop of single
steps, whatever the block length; failures planted in the middle of a block; the
neighbour list after in-block rebuilds."""

import numpy as np
import pytest

import granular as gr
from granular.particles.shapes import BLOCK_MATERIAL
from granular.validation import torus_setup as T

FIELDS = ("x", "v", "q", "omega", "F", "RM", "broken", "released", "wall_contact_peak")


def snapshot(model, state):
    be = model.backend
    return {k: be.to_host(getattr(state, k)).copy() for k in FIELDS} | {"step": state.step, "time": state.time}


def assert_same(a, b):
    for k in FIELDS:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert (a["step"], a["time"]) == (b["step"], b["time"])


def breakable_torus(backend, small=None):
    """The paper's torus with breakable bonds, tilted and spinning (bonds, contacts
    between bonded neighbours, wall); a 12-particle ring under the CUDA simulator, which
    runs every thread as Python (``small``: the small ring whatever the backend)."""
    be = gr.get_backend(backend) if isinstance(backend, str) else backend
    if be.simulated if small is None else small:
        b = gr.ModelBuilder()
        gr.shapes.add_torus(b, n_p=12, ring_diameter=1.0, center=(0.65, 0, 0), normal=(0.2, 0.1, 1.0),
                            velocity=(-1.5, 0.2, 0.1), omega=(0.5, -0.3, 2.0), strain_max=0.02)  # fmt: skip
        b.set_contacts(T.K_PP)
        b.add_wall([1.0, 0.0, 0.0], 0.0, k=T.K_PP)
        return b.finalize(be)
    n = T.N_P
    v = np.tile([-1.5, 0.2, 0.1], (n, 1))
    return T.torus_builder(velocity=v, omega=(0.5, -0.3, 2.0), normal=(0.2, 0.1, 1.0), strain_max=0.02).finalize(be)


def step_by_step(model, h, steps, scheme="verlet"):
    s = model.state()
    integ = gr.ExplicitIntegrator(scheme)
    for _ in range(steps):
        integ.step(model, s, h)
    return s


@pytest.mark.parametrize("block", [1, 7, 64])
def test_blocks_equal_step_by_step_bitwise(block, backend):
    steps = 30 if backend.simulated else 600
    model = breakable_torus(backend)
    ref = snapshot(model, step_by_step(model, 1e-3, steps))
    s = model.state()
    gr.ExplicitIntegrator("verlet", max_block=block).advance(model, s, 1e-3, steps)
    assert_same(snapshot(model, s), ref)
    if not backend.simulated:
        assert ref["broken"].sum() > 0  # the impact broke bonds on the way


@pytest.mark.parametrize("scheme", ["exact", "campello"])
def test_other_maps_in_blocks(scheme):
    model = breakable_torus("cpu")
    ref = snapshot(model, step_by_step(model, 1e-3, 300, scheme))
    s = model.state()
    gr.ExplicitIntegrator(scheme, max_block=64).advance(model, s, 1e-3, 300)
    assert_same(snapshot(model, s), ref)


def test_time_is_steps_times_h_and_survives_a_change_of_h():
    model = breakable_torus("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator()
    integ.advance(model, s, 5e-4, 6000)
    assert s.time == 6000 * 5e-4 and s.step == 6000
    integ.advance(model, s, 1e-3, 10)
    assert s.time == 6000 * 5e-4 + 10 * 1e-3


def pendula(backend):
    """Three pendula falling from near the top; at h = 0.6 the fastest swings leave the
    rotation domain (ρ ≥ 1) part way down: particle 2 first, at step 5."""
    b = gr.ModelBuilder()
    idx = b.add_particles(np.zeros((3, 3)), rotvec=[[0, 2.9, 0], [0, 3.0, 0], [0, 2.6, 0]],
                          omega=[[0.05, 0, 0], [0.1, 0, 0], [0.0, 0, 0.05]])  # fmt: skip
    b.add_pendulum(idx, rho0=[0, 0, 1], g=1.0)
    return b.finalize(backend)


def colliding_ghosts(backend):
    """Two particles passing through each other without stiffness meet exactly at the
    origin after 8 steps of 1/8: the contact direction is 0/0, a NaN in the forces."""
    b = gr.ModelBuilder()
    b.add_particles(np.array([[5.0, 0, 0], [-1.0, 0, 0], [1.0, 0, 0]]), v=[[0, 0, 0], [1.0, 0, 0], [-1.0, 0, 0]])
    b.set_contacts(0.0)
    return b.finalize(backend)


@pytest.mark.parametrize("build,error,particle,step", [
    (pendula, gr.StepSizeError, 2, 5),
    (colliding_ghosts, gr.NonFiniteError, 1, 8),
])  # fmt: skip
def test_failure_in_a_block_is_the_step_by_step_failure(build, error, particle, step, backend):
    model = build(backend)
    h = 0.6 if build is pendula else 0.125
    s = model.state()
    with pytest.raises(error) as ref:
        for _ in range(200):
            gr.ExplicitIntegrator("exact").step(model, s, h)
    ref_state = snapshot(model, s)
    assert ref.value.particle == particle
    if step is not None:
        assert ref.value.step == step
    for block in (7, 64):
        s2 = model.state()
        with pytest.raises(error) as got:
            gr.ExplicitIntegrator("exact", max_block=block).advance(model, s2, h, 200)
        assert str(got.value) == str(ref.value)
        assert (got.value.step, got.value.particle) == (ref.value.step, ref.value.particle)
        np.testing.assert_equal(got.value.value, ref.value.value)  # NaN equals NaN here
        assert_same(snapshot(model, s2), ref_state)
        assert 1 < ref_state["step"] < 64  # the failure is in the middle of the first block


def falling_grains(backend):
    """Grains released from rest in strong gravity onto a wall."""
    rng = np.random.default_rng(5)
    n = 12 if backend.simulated else 60
    x = rng.uniform(0, 4, size=(n, 3)) + [0, 0, 2.0]
    x = x[np.argsort(x[:, 2])]
    keep = [0]
    for i in range(1, n):  # no initial overlaps
        if np.min(np.linalg.norm(x[keep] - x[i], axis=1)) > 0.45:
            keep.append(i)
    b = gr.ModelBuilder()
    b.add_particles(x[keep], radius=0.2)
    b.set_gravity([0, 0, -40.0])
    b.set_contacts(1e3, skin=0.02)
    b.add_wall([0, 0, 1], 0.0)
    return b.finalize(backend)


def brute_pairs(x, r, skin):
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    i, j = np.nonzero((d < r[:, None] + r[None] + skin) & ~np.eye(len(x), dtype=bool))
    return np.unique(np.sort(np.stack([i, j], axis=1), axis=1), axis=0)


def test_skin_crossing_inside_a_block_is_handled_and_the_list_is_exact(backend):
    """A particle that crosses skin/2 inside a block: the CPU rebuilds the list inside
    the block, before the forces of that step; the GPU's blocks are redone step by step.
    Either way the trajectory is the step-by-step one and the list is exact."""
    model = falling_grains(backend)
    steps = 60 if backend.simulated else 300
    ref = snapshot(model, step_by_step(model, 2e-3, steps))
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=64)
    eng = integ.engine(model, s)
    eng.safety = 0.0  # predict no motion: blocks run until a particle crosses skin/2
    integ.advance(model, s, 2e-3, steps)
    assert_same(snapshot(model, s), ref)
    if eng.rebuilds_in_block:  # rebuilt where a particle crossed skin/2, nothing redone
        assert eng.block_rebuilds >= 1 and eng.redone == 0
    else:
        assert eng.redone >= 1  # blocks had a particle cross skin/2 and were redone
    nl = s.neighbors
    be = model.backend
    x_ref, r = be.to_host(nl.x_ref), be.to_host(model.radius)
    np.testing.assert_array_equal(nl.pairs(), brute_pairs(x_ref, r, nl.skin))
    # every pair in contact now is listed (the list is valid at the current positions)
    x = be.to_host(s.x)
    touching = brute_pairs(x, r, 0.0)
    listed = {tuple(p) for p in nl.pairs()}
    assert all(tuple(p) in listed for p in touching)
    assert len(touching) > 0 or backend.simulated  # a short run there: the grains are still falling


def test_rebuilds_inside_blocks_keep_the_list_exact():
    model = breakable_torus("cpu")
    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=64)
    integ.advance(model, s, 1e-3, 400)
    eng = integ.engine(model, s)
    assert eng.block_rebuilds > 0
    nl = s.neighbors
    np.testing.assert_array_equal(nl.pairs(), brute_pairs(nl.x_ref, model.radius, nl.skin))


def cloud_positions(n):
    """``n`` points in a shell of radii 2.4-3 around the origin (seeded)."""
    rng = np.random.default_rng(2)
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    return 3.0 * d * rng.uniform(0.8, 1.0, size=(n, 1))


def converging_cloud(backend):
    """A cloud converging on its centre without contact stiffness: rows outgrow the
    neighbour list at a rebuild inside a block."""
    x = cloud_positions(16 if backend.simulated else 80)
    b = gr.ModelBuilder()
    b.add_particles(x, v=-x, radius=0.1)
    b.set_contacts(0.0, skin=0.6, allow_initial_overlap=True)
    return b.finalize(backend)


def test_neighbour_overflow_in_a_block_regrows_and_redoes_it(backend):
    steps = 90
    ref = snapshot(converging_cloud(backend), step_by_step(converging_cloud(backend), 1e-2, steps))
    model = converging_cloud(backend)
    s = model.state()
    s.neighbors.resize(capacity=4, depth=2)  # small, to outgrow
    integ = gr.ExplicitIntegrator("verlet", max_block=32)
    integ.advance(model, s, 1e-2, steps)
    assert_same(snapshot(model, s), ref)
    nl = s.neighbors
    assert integ.engine(model, s).regrows >= 1
    assert nl.capacity >= 0.6 * model.n


def frictional_cloud(backend, capacity):
    """:func:`converging_cloud` with the dissipative law (springs in the rows), its rows
    ``capacity`` wide: a block whose rebuild outgrows them is undone and runs again."""
    n = 120
    x = cloud_positions(n)
    b = gr.ModelBuilder()
    b.add_material("m", **BLOCK_MATERIAL)
    b.add_particles(x, v=-x, radius=0.1, mass=1.0, inertia=1.0, material="m")
    b.set_contacts(skin=0.6, allow_initial_overlap=True)
    model = b.finalize(backend)
    s = model.state()
    s.neighbors.resize(capacity=capacity, depth=2 if capacity < n else n)
    return model, s


def test_neighbour_overflow_in_a_block_with_springs_keeps_the_trajectory():
    """A block whose rebuild outgrows the rows is undone and regrown from the rows it
    started with (``NeighborList.overflowed(restored=True)``), not from the rows the
    overflowing build found mid-block: with the contacts' springs, the run equals one
    whose rows never outgrow, bit for bit (the rows of the build's copy put mid-block
    springs on the block's starting state, and the trajectories parted by 2e-2 in x).
    On the CPU, whose blocks rebuild inside their steps (a GPU block rebuilds at its
    start, after the save, where the build's copy and the restored rows are the same)."""
    backend = gr.get_backend("cpu")
    steps = 90
    out = []
    for capacity in (4, 200):
        model, s = frictional_cloud(backend, capacity)
        integ = gr.ExplicitIntegrator("verlet", max_block=8)
        integ.advance(model, s, 1e-2, steps)
        out.append((snapshot(model, s), integ.engine(model, s)))
    assert out[0][1].regrows >= 1 and out[1][1].regrows == 0
    assert_same(out[0][0], out[1][0])


def test_an_undone_block_keeps_no_springs_past_a_row_end():
    """Undoing a block restores each row's listed slots as saved at its start; the slots a
    rebuild in the block added past a row's end (held springs among them: the cloud
    converges, its rows grow) are cleared, so that every slot not held stays zero, as
    the builds assume (``NeighborList.clear_past_ends``). On the CPU (the simulator's
    16 particles neither lengthen a row nor hold a spring in its new slots)."""
    model, s = frictional_cloud(gr.get_backend("cpu"), 200)
    integ = gr.ExplicitIntegrator("verlet", max_block=16)
    integ.advance(model, s, 1e-2, 32)
    eng = integ.engine(model, s)
    nl = s.neighbors
    be = model.backend
    before = be.to_host(nl.count).copy()
    integ.advance(model, s, 1e-2, 16)  # one block, rebuilding as it goes
    grew = be.to_host(nl.count) > before
    assert grew.any() and eng.block_rebuilds > 0
    beyond = np.arange(nl.capacity)[None, :] >= before[:, None]  # past the rows' ends at the block's start
    assert (be.to_host(nl.live)[beyond] != 0).any()  # a contact the block made there holds springs
    eng._undo()
    count, live, hist = (be.to_host(a) for a in (nl.count, nl.live, nl.hist))
    np.testing.assert_array_equal(count, before)
    past = np.arange(nl.capacity)[None, :] >= np.minimum(count, nl.capacity)[:, None]
    assert not live[past].any() and not hist[past].any()


@pytest.mark.gpu
def test_cpu_and_gpu_blocks_agree(gpu_backend):
    steps = 30 if gpu_backend.simulated else 1000
    out = []
    for be in ("cpu", gpu_backend):
        m = breakable_torus(be, small=gpu_backend.simulated)
        s = m.state()
        gr.ExplicitIntegrator("verlet").advance(m, s, 1e-3, steps)
        out.append(snapshot(m, s))
    for k in ("x", "v", "q", "omega"):
        np.testing.assert_allclose(out[1][k], out[0][k], rtol=0, atol=1e-9, err_msg=k)


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["torus", "block"])
def test_graph_replay_equals_eager_launches(case, gpu_backend):
    if gpu_backend.simulated:
        pytest.skip("CUDA graphs need a real GPU (the simulator runs blocks eagerly)")
    out = []
    for graphs in (True, False):
        if case == "torus":
            m = breakable_torus(gpu_backend)
        else:
            m = gr.shapes.block_impact_builder(22, gap=0.05).finalize(gpu_backend)
        s = m.state()
        integ = gr.ExplicitIntegrator("verlet", graphs=graphs)
        integ.advance(m, s, 1e-3, 1000)
        if graphs:
            assert integ.engine(m, s).program.captures > 0
        out.append(snapshot(m, s))
    assert_same(out[0], out[1])


class _RecordingKernels:
    """Stands for :mod:`kernels.cuda` under CUDA graph capture: while a capture is open,
    launches are recorded instead of run, and a graph launch replays them (the CPU
    kernels do the work; ``block``, the CPU's one-call block, is hidden)."""

    def __init__(self, real):
        self.real, self.recording = real, None

    def __getattr__(self, name):
        if name == "block":
            raise AttributeError(name)
        fn = getattr(self.real, name)
        if not callable(fn) or name in ("set_stream", "to_device"):
            return fn

        def launch(*args):
            if self.recording is not None:
                self.recording.append((fn, args))
            else:
                fn(*args)

        return launch


class _Graph:
    def __init__(self, launches):
        self.launches = launches

    def launch(self, stream=None):
        for fn, args in self.launches:
            fn(*args)


class _Stream:
    """A CuPy stream's capture interface, recording through :class:`_RecordingKernels`."""

    def __init__(self, kernels):
        self.kernels = kernels

    def begin_capture(self):
        self.kernels.recording = []

    def end_capture(self):
        launches, self.kernels.recording = self.kernels.recording, None
        return _Graph(launches)

    def wait_event(self, event):
        pass


class _DeviceReport(np.ndarray):
    def get(self, stream=None):
        return np.array(self, dtype=np.float64)


def test_graph_capture_and_replay_logic_without_a_gpu():
    """The graph path of :class:`kernels.program.Program` (one eager warm-up block, then
    head, power-of-two step pieces and tail captured once each and replayed, dropped on
    a regrow) gives the trajectory of the eager path bit for bit."""
    from kernels.program import Program

    model = breakable_torus("cpu")
    cpu = model.kernels
    ref = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, ref, 1e-3, 700)

    s = model.state()
    integ = gr.ExplicitIntegrator("verlet", max_block=200)
    eng = integ.engine(model, s)
    kern = _RecordingKernels(cpu)
    eng.report = eng.report.view(_DeviceReport)
    eng.program = Program(kern, eng._bundles(), eng.report, stream=_Stream(kern), graphs=True, launch_stream=0)
    integ.advance(model, s, 1e-3, 700)
    assert_same(snapshot(model, s), snapshot(model, ref))
    p = eng.program
    assert p.captures >= 3 and p.replays > p.captures  # graphs were captured once and replayed
    keys = set(p._graphs)
    assert ("tail",) in keys and any(k[0] == "head" for k in keys)
    assert all(k[1] & (k[1] - 1) == 0 for k in keys if k[0] == "steps")  # powers of two


def test_program_stream_waits_for_host_work_after_a_regrow():
    """On a real GPU the program's launches go to a non-blocking stream, which is not
    ordered after the default stream where a regrow allocates and copies the rows and
    springs: after every such host work the program's stream must wait for it before its
    next launch (a stand-in stream logs the order)."""
    from kernels.program import Program

    log = []

    class Logged(_RecordingKernels):
        def __getattr__(self, name):
            fn = super().__getattr__(name)
            if name in ("set_stream", "to_device") or not callable(fn):
                return fn
            return lambda *a: (log.append("launch"), fn(*a))

    class LoggedStream(_Stream):
        def wait_event(self, event):
            log.append("wait")

    model = converging_cloud(gr.get_backend("cpu"))
    s = model.state()
    nl = s.neighbors
    nl.resize(capacity=4, depth=2)  # small, to outgrow inside blocks
    allocate = nl._allocate

    def logged_allocate(*args, **kw):
        log.append("host")
        return allocate(*args, **kw)

    nl._allocate = logged_allocate
    integ = gr.ExplicitIntegrator("verlet", max_block=32)
    eng = integ.engine(model, s)
    kern = Logged(model.kernels)
    eng.report = eng.report.view(_DeviceReport)
    eng.program = Program(kern, eng._bundles(), eng.report, stream=LoggedStream(kern), graphs=False, launch_stream=0)
    eng.program._default_stream_event = lambda: "event"
    integ.advance(model, s, 1e-2, 90)
    assert eng.regrows >= 1 and log.count("host") >= 1
    for k, what in enumerate(log):
        if what == "host":
            rest = log[k + 1 :]
            assert "wait" in rest and ("launch" not in rest or rest.index("wait") < rest.index("launch")), k
