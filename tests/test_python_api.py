"""The Python API as a user meets it: one test (or more) per finding of the API review,
each asserting what a user gets now (the run, the error, the docstring)."""

import os
import pydoc

import numpy as np
import pytest

import granular as gr
from granular.particles.analysis import contact_list, forces_by_family
from granular.particles.shapes import block_impact_builder, random_packing


def falling_ball(dt_wall=1e3):
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 1], radius=0.5)
    b.set_gravity([0, 0, -1])
    b.add_wall([0, 0, 1], 0.0, k=dt_wall)
    return b.finalize("cpu")


def two_particles(dtype=np.float64):
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 0], omega=[0.3, 0, 0.1])
    b.add_particle(x=[3, 0, 0], v=[0.1, 0.2, 0])
    b.set_gravity([0, 0, -1])
    return b.finalize("cpu", dtype=dtype)


# ---------------------------------------------------------------- 1. runs with output


def test_1_simulation_takes_a_dict_and_writes_the_run_folder(tmp_path):
    model = falling_ball()
    sim = gr.Simulation(model, model.state(), tmp_path / "run", {"dt": 1e-3, "output_every": 0.05})
    info = sim.run(steps=100)
    assert info["steps"] == 100 and info["finished"] and info["error"] is None
    for name in ("frames.pvd", "series.csv", "run.json", "checkpoints/checkpoint.npz"):
        assert (tmp_path / "run" / name).is_file(), name
    assert len(list((tmp_path / "run" / "frames").glob("*.vtu"))) == 3  # t = 0, 0.05, 0.1


def test_1_run_steps_is_relative_and_until_is_absolute(tmp_path):
    model = falling_ball()
    state = model.state()
    gr.ExplicitIntegrator().advance(model, state, 1e-3, 1000)  # a state already at step 1000
    sim = gr.Simulation(model, state, tmp_path / "run", dt=1e-3)
    assert sim.run(steps=500)["steps"] == 1500  # 500 more, not "up to step 500"
    assert state.step == 1500
    info = sim.run(until=1.75)
    assert state.step == 1750 and info["time"] == pytest.approx(1.75, abs=1e-12)
    with pytest.raises(ValueError, match="until: .*not after the current time"):
        sim.run(until=1.0)
    with pytest.raises(ValueError, match="not both"):
        sim.run(steps=1, until=2.0)


def test_1_run_table_duration_is_what_run_does_without_arguments(tmp_path):
    model = falling_ball()
    sim = gr.Simulation(model, model.state(), tmp_path / "run", {"dt": 1e-3, "duration": 0.2})
    assert sim.run()["steps"] == 200


def test_1_run_table_is_checked_like_a_scene(tmp_path):
    model = falling_ball()
    with pytest.raises(ValueError, match="integrater: unknown key"):
        gr.Simulation(model, model.state(), tmp_path / "a", {"dt": 1e-3, "integrater": "verlet"})
    with pytest.raises(ValueError, match="dt: Input should be greater than 0"):
        gr.Simulation(model, model.state(), tmp_path / "a", dt=-1e-3)
    with pytest.raises(ValueError, match="dt: the step size is required"):
        gr.Simulation(model, model.state(), tmp_path / "a")
    with pytest.raises(gr.StepSizeError, match="above the stable-step estimate"):
        gr.Simulation(model, model.state(), tmp_path / "a", dt=1.0)


def test_1_a_finished_run_is_not_replaced_without_overwrite(tmp_path):
    model = falling_ball()
    gr.Simulation(model, model.state(), tmp_path, dt=1e-3).run(steps=10)
    with pytest.raises(ValueError, match="holds a finished run .* overwrite=True"):
        gr.Simulation(model, model.state(), tmp_path, dt=1e-3)
    info = gr.Simulation(model, model.state(), tmp_path, dt=1e-3, overwrite=True).run(steps=20)
    assert info["steps"] == 20


def test_1_resuming_into_a_folder_without_a_run_gives_python_advice(tmp_path):
    model = falling_ball()
    with pytest.raises(ValueError, match="holds no run to continue") as err:
        gr.Simulation(model, model.state(), tmp_path / "empty", dt=1e-3, resume=True)
    assert "Simulation.resume(model, checkpoint)" in str(err.value) and "--out" not in str(err.value)


def test_1_checkpoint_save_load_and_resume_are_bit_for_bit(tmp_path):
    straight = falling_ball()
    s1 = straight.state()
    gr.Simulation(straight, s1, tmp_path / "a", dt=1e-3, series_every=0.05).run(steps=600)

    model = falling_ball()
    gr.Simulation(model, model.state(), tmp_path / "b", dt=1e-3, series_every=0.05).run(steps=250)
    sim = gr.Simulation.resume(model, tmp_path / "b")  # from the run folder's checkpoint, with its cadences
    assert sim.state.step == 250 and sim.dt == 1e-3
    sim.run(steps=350)
    for k in ("x", "v", "q", "omega", "F", "RM"):
        assert np.array_equal(getattr(sim.state, k), getattr(s1, k)), k
    assert sim.state.time == s1.time
    series = (tmp_path / "b" / "series.csv").read_text()
    assert series == (tmp_path / "a" / "series.csv").read_text()  # the same rows, as if it never stopped
    assert len(series.splitlines()) == 1 + 13  # header, t = 0, 0.05, ..., 0.6

    path = gr.save_state(tmp_path / "state.npz", model, sim.state, note="mine")
    back = gr.load_state(path, model)
    for k in ("x", "v", "q", "omega", "F", "RM"):
        assert np.array_equal(getattr(back, k), getattr(sim.state, k)), k
    assert (back.step, back.time, back.forces_valid) == (600, sim.state.time, True)
    gr.ExplicitIntegrator().advance(model, back, 1e-3, 10)
    gr.ExplicitIntegrator().advance(straight, s1, 1e-3, 10)
    assert np.array_equal(back.x, s1.x)
    other = two_particles()
    with pytest.raises(ValueError, match="checkpoint: array 'x' has shape"):
        gr.load_state(path, other)


# ------------------------------------------------- 2. forces by interaction, contacts


@pytest.mark.parametrize("friction", [False, True])
def test_2_forces_by_family_and_the_contact_list_add_up(friction):
    b = block_impact_builder(n=3, v0=2.0, gap=0.05, friction=friction)
    model = b.finalize("cpu")
    state = model.state()
    # oblique and spinning, so that friction and rolling act
    state.v[:, 1] += 0.7
    state.omega[:, 2] = 1.5
    gr.ExplicitIntegrator().advance(model, state, 1e-3, 150)
    fam = forces_by_family(model, state)
    assert list(fam) == [f.kind for f in model.forces] == ["bonds", "contacts", "walls"]
    if not friction:  # conservative: the families are the step's total, to round-off
        total = sum(f for f, _ in fam.values())
        assert np.allclose(total, state.F, rtol=0, atol=1e-12 * np.abs(state.F).max())
    cl = contact_list(model, state)
    assert len(cl) > 0 and cl.wall.any() and (~cl.wall).any()
    assert (cl.overlap > 0).all()
    assert np.allclose(np.linalg.norm(cl.normal, axis=1), 1.0)
    assert np.allclose((cl.force_tangential * cl.normal).sum(axis=1), 0.0, atol=1e-12)
    F, M = cl.per_particle(model.n)
    scale = np.abs(fam["contacts"][0]).max()
    assert np.allclose(F, fam["contacts"][0] + fam["walls"][0], rtol=0, atol=1e-12 * scale)
    assert np.allclose(M, fam["contacts"][1] + fam["walls"][1], rtol=0, atol=1e-12 * scale)
    if friction:
        assert np.abs(cl.force_tangential).max() > 1e-3 * np.abs(cl.force_normal).max()
        assert np.abs(M).max() > 0
    else:
        assert np.abs(cl.force_tangential).max() <= 1e-14 * scale and not M.any()
    pp = ~cl.wall
    i, j = cl.pairs[pp, 0], cl.pairs[pp, 1]
    x = state.x
    # the contact point lies on the line of centres, in the middle of the overlap
    assert np.allclose(cl.point[pp], x[j] + (model.radius[j] - cl.overlap[pp] / 2)[:, None] * cl.normal[pp])
    assert np.allclose(cl.point[pp], x[i] - (model.radius[i] - cl.overlap[pp] / 2)[:, None] * cl.normal[pp])


# ---------------------------------------------------------------- 3. body schemes


def test_3_body_schemes_are_found_by_name_from_python():
    from granular.bodies import scheme_class, schemes
    from granular.bodies.livens.rigid import EML

    assert scheme_class("livens eml") is EML and "ulvc rk4" in schemes()
    top = scheme_class("livens eml")(np.diag([6.0, 8.0, 3.0]), n=3, mass=1.0, center_of_mass=(0, 0, 0.1),
                                     gravity=(0, 0, -9.81))  # fmt: skip
    s = top.state([1, 0, 0, 0], Omega=(1.0, 2.0, 3.0))
    top.advance(s, 1e-3, 20)
    assert s.step == 20
    with pytest.raises(ValueError, match="unknown body scheme 'livens em'; registered:"):
        scheme_class("livens em")


# ---------------------------------------------------------------- 4. validation parity


def test_4_overlapping_particles_are_refused_unless_allowed():
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 0], radius=0.5)
    b.add_particle(x=[0.2, 0, 0], radius=0.5)
    b.set_contacts(kpp=100.0)
    with pytest.raises(ValueError, match=r"particles 0 and 1 overlap at the start .* allow_initial_overlap=True"):
        b.finalize("cpu")
    b.set_contacts(kpp=100.0, allow_initial_overlap=True)
    assert b.finalize("cpu").n == 2
    b = gr.ModelBuilder()
    b.add_particles(np.zeros((2, 3)))
    b.set_contacts(kpp=100.0, allow_initial_overlap=True)
    with pytest.raises(ValueError, match="start at the same position"):
        b.finalize("cpu")


def test_4_particles_inside_walls_are_refused_unless_allowed():
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, -1], radius=0.5)
    b.set_contacts(kpp=100.0)
    b.add_wall([0, 0, 1], 0.0, k=100.0)
    with pytest.raises(ValueError, match="wall 0: particle 0 starts behind the wall"):
        b.finalize("cpu")
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 0.3], radius=0.5)
    b.add_wall([0, 0, 1], 0.0, k=100.0, allow_initial_overlap=True)
    model = b.finalize("cpu")
    assert gr.diagnostics.energies(model, model.state())["U_pw"] > 0


# ---------------------------------------------------------------- 5. stale forces


@pytest.mark.parametrize("how", ["in place", "assigned"])
def test_5_editing_the_state_by_hand_never_leaves_stale_forces(how):
    integ = gr.ExplicitIntegrator()
    model = two_particles()
    state = model.state()
    integ.step(model, state, 1e-3)
    if how == "in place":
        state.x[0, 2] += 1.0
        state.q[1] = [np.cos(0.3), np.sin(0.3), 0, 0]
    else:
        x = state.x.copy()
        x[0, 2] += 1.0
        state.x = x
    assert state.edited()
    # the reference: a fresh state with the edited arrays and its forces evaluated anew
    ref = model.state()
    for k in ("x", "v", "q", "omega"):
        getattr(ref, k)[...] = getattr(state, k)
    ref.time, ref.step = state.time, state.step
    integ.step(model, state, 1e-3)
    integ.step(model, ref, 1e-3)
    for k in ("x", "v", "q", "omega", "F", "RM"):
        assert np.array_equal(getattr(state, k), getattr(ref, k)), k
    assert not state.edited()


def test_5_edits_reach_the_pendulum_moment():
    integ = gr.ExplicitIntegrator()
    b = gr.ModelBuilder()
    i = b.add_particle(x=[0, 0, 0], omega=[0.2, 0, 0.2])
    b.add_pendulum(i, rho0=[0, 0, 1], g=1.0)
    model = b.finalize("cpu")
    state = model.state()
    integ.step(model, state, 1e-2)
    moment = state.RM.copy()
    state.q[0] = [np.cos(0.4), 0, np.sin(0.4), 0]  # tilt it
    integ.prepare(model, state)
    assert not np.array_equal(state.RM, moment)


# ---------------------------------------------------------------- 6. argument checks


def test_6_steps_step_sizes_and_states_are_checked():
    integ = gr.ExplicitIntegrator()
    model = two_particles()
    state = model.state()
    for steps, match in ((-5, "steps: must be >= 0"), (2.5, "whole number"), (True, "whole number")):
        with pytest.raises(ValueError, match=match):
            integ.run(model, state, 1e-3, steps)
    with pytest.raises(ValueError, match="h: the time step must be a number, got '0.001'"):
        integ.step(model, state, "0.001")
    with pytest.raises(ValueError, match="dtype float64 .* differs from the model's float32"):
        integ.step(two_particles(np.float32), state, 1e-3)
    state.x = [[0, 0, 0], [3, 0, 0]]
    with pytest.raises(ValueError, match=r"state.x: is a builtins.list; .* needs numpy.ndarray"):
        integ.step(model, state, 1e-3)
    assert state.step == 0
    b = gr.ModelBuilder()
    with pytest.raises(ValueError, match=r"^gravity: must be 3 finite numbers, got \[0.0, nan, 0.0\]$"):
        b.set_gravity([0, np.nan, 0])


# ---------------------------------------------------------------- 9. docstrings, packing


def test_9_help_shows_the_attributes_and_every_public_function_has_a_docstring():
    text = pydoc.render_doc(gr.Model)
    for name in ("n_bonds", "mass", "radius", "backend", "dtype"):
        assert f"``{name}``" in text, name
    text = pydoc.render_doc(gr.State)
    assert "see the module docstring" not in text
    for name in ("x :", "v :", "q :", "omega :", "forces_valid :", "time :"):
        assert name in text, name
    for obj in (gr.ExplicitIntegrator.step, gr.ExplicitIntegrator.advance, gr.diagnostics.total_energy,
                gr.State.n, gr.Simulation.run, gr.save_state, gr.load_state, random_packing, contact_list,
                forces_by_family):  # fmt: skip
        doc = getattr(obj, "__doc__", None) or ""
        assert len(doc) > 20 and "module docstring" not in doc, obj


def test_9_random_packing_is_public_and_used_by_scenes():
    from granular.particles.shapes import PackingError
    from granular.run.scene import RandomParticles, _random_packing

    x, r = random_packing(200, [[0, 0, 0], [8, 8, 8]], radius=(0.3, 0.5), seed=3)
    d = np.linalg.norm(x[:, None] - x[None], axis=2) + np.eye(200) * 10
    assert (d >= r[:, None] + r[None, :]).all()
    assert ((x - r[:, None] >= 0) & (x + r[:, None] <= 8)).all()
    g = RandomParticles(kind="random", count=200, box=[[0, 0, 0], [8, 8, 8]], radius=[0.3, 0.5], seed=3)
    xs, rs = _random_packing(g, "particles[0]")
    assert np.array_equal(xs, x) and np.array_equal(rs, r)
    with pytest.raises(PackingError, match="could not place 1000"):
        random_packing(1000, [[0, 0, 0], [4, 4, 4]], radius=0.5)


# ---------------------------------------------------------------- 10. docs examples


def test_10_the_ensemble_docs_vary_fields_that_their_scenes_have():
    import re

    from granular.ensemble import make_spec
    from granular.run.scene import load_scene

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "docs", "ensemble.md"), encoding="utf-8").read()
    commands = re.findall(r"granular ensemble (scenes/\S+\.toml)([^\n]*(?:\\\n[^\n]*)*)", text)
    assert commands
    for scene_path, rest in commands:
        scene = load_scene(os.path.join(root, scene_path))
        for vary in re.findall(r'--vary "([^"]+)"', rest):
            if "file(" in vary:
                continue
            make_spec(scene, 4, [vary], 0, steps=1)  # raises for a field the scene does not give


def test_6_more_arguments_named_when_wrong():
    b = gr.ModelBuilder()
    with pytest.raises(ValueError, match="skin: must be finite and >= 0, got 'x'"):
        b.set_contacts(1.0, skin="x")
    with pytest.raises(ValueError, match="count: the number of tori must be a whole number >= 1, got 0"):
        gr.shapes.add_tori(b, 0, [[0, 0, 0], [10, 10, 10]])
    assert b.add_particle([0, 0, 0], orientation=np.array([[1.0, 0, 0, 0]])) == 0  # (1, 4) is one particle's
    model = b.finalize("cpu")
    with pytest.raises(ValueError, match="scheme: unknown explicit map 'typo'"):
        gr.estimate_stable_step(model, model.state(), "typo")
    assert gr.rotations.rrp_log.__doc__ != gr.rotations.rotvec_from_rrp.__doc__
    b = gr.ModelBuilder()
    b.add_material("float32", young=np.float32(1e7), poisson=np.float32(0.25))  # NumPy scalars are numbers
    with pytest.raises(ValueError, match="young: must be finite and > 0, got True"):
        b.add_material("bool", young=True)


def test_a_material_sphere_given_its_mass_gets_the_inertia_of_that_mass():
    b = gr.ModelBuilder()
    b.add_material("glass", young=1e7, density=2500.0)
    b.add_particles([[0, 0, 0]], radius=0.5, material="glass", mass=2.0)
    b.add_particles([[3, 0, 0]], radius=0.5, material="glass")
    b.set_contacts()
    model = b.finalize("cpu")
    m_density = 2500.0 * 4.0 / 3.0 * np.pi * 0.5**3
    assert np.allclose(model.mass, [2.0, m_density])
    assert np.allclose(model.inertia, [0.4 * 2.0 * 0.25, 0.4 * m_density * 0.25])


def test_5_a_block_with_neighbour_rebuilds_is_not_taken_for_an_edit():
    """Inside one advance, particles cross skin/2 inside blocks: the CPU rebuilds the list
    inside the block, the GPU redoes the block step by step from its start. Either way the
    state is the engine's own, not an edit: the trajectory equals a loop of single steps,
    bit for bit, with the dissipative law (whose forces depend on velocities)."""
    def model():
        b = block_impact_builder(n=3, v0=2.0, gap=0.02, friction=True)
        b.set_contacts(skin=0.002)  # tiny: skin failures inside blocks
        return b.finalize("cpu")

    m1, m2 = model(), model()
    s1, s2 = m1.state(), m2.state()
    for s in (s1, s2):
        s.v[:, 1] += 0.5
    blocks = gr.ExplicitIntegrator(max_block=64)
    blocks.advance(m1, s1, 1e-3, 300)
    eng = blocks.engine(m1, s1)
    assert eng.rebuilds_in_block and eng.block_rebuilds > 0 and eng.redone == 0
    assert eng.blocks > 2
    single = gr.ExplicitIntegrator()
    for _ in range(300):
        single.step(m2, s2, 1e-3)
    for k in ("x", "v", "q", "omega", "F", "RM"):
        assert np.array_equal(getattr(s1, k), getattr(s2, k)), k


def test_1_end_steps_follow_the_step_the_engine_takes_and_the_cli_rule(tmp_path):
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 0], v=[1, 0, 0])
    m32 = b.finalize("cpu", dtype=np.float32)
    sim = gr.Simulation(m32, m32.state(), tmp_path / "a", dt=0.0007)
    sim.run(until=0.7)
    sim.run(until=1.4)
    assert sim.state.step == 2000  # float32(0.0007) steps, not float64 ones
    model = falling_ball()
    sim = gr.Simulation(model, model.state(), tmp_path / "b", {"dt": 0.01, "duration": 0.012})
    assert sim.run()["steps"] == 1  # round(duration / dt), as granular run counts


def test_1_a_resumed_run_with_another_step_stores_it(tmp_path):
    import json

    model = falling_ball()
    gr.Simulation(model, model.state(), tmp_path, dt=1e-3).run(steps=10)
    sim = gr.Simulation.resume(model, tmp_path, dt=5e-4)
    sim.run(steps=10)
    assert sim.state.time == pytest.approx(0.015)
    info = json.loads((tmp_path / "run.json").read_text())
    assert info["scene"]["run"]["dt"] == 5e-4
    assert gr.Simulation.resume(model, tmp_path).dt == 5e-4
