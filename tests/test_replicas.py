"""Independent replicas in one model (granular.particles.replicas): each replica's
trajectory equals its system run alone bit for bit, replicas that overlap in space do not
interact, walls act on their own replica only, and the per-replica diagnostics equal the
single runs' totals."""

import numpy as np
import pytest

import granular as gr
from granular.particles.analysis import _configuration
from granular.particles.builder import ModelBuilder
from granular.particles.replicas import replica_diagnostics, replicate
from granular.particles.shapes import BLOCK_MATERIAL, add_block, add_torus

H = 5e-4


def torus(v, spin=0.0, wall=0.0, n=24, strain_max=np.inf, kpp=2100.0):
    """A small bonded torus moving at ``v`` toward the wall ``x = wall``."""
    b = ModelBuilder()
    d = 3.0 * np.sin(np.pi / n)
    add_torus(b, n, 3.0, center=(wall + 1.5 + 1.5 * d, 0.0, 0.0), velocity=(v, 0.0, 0.0), omega=(0.0, 0.0, spin),
              strain_max=strain_max)  # fmt: skip
    b.set_contacts(kpp)
    b.add_wall([1.0, 0.0, 0.0], wall, k=2100.0)
    return b


def block(v, friction=True, restitution=None):
    """A 3x3x3 bonded block with the dissipative law falling onto the wall ``z = 0``."""
    b = ModelBuilder()
    material = None
    if friction:
        b.add_material("binder", **dict(BLOCK_MATERIAL, **({} if restitution is None else
                                                            {"restitution": restitution})))  # fmt: skip
        material = "binder"
    add_block(b, 3, origin=(0.0, 0.0, 0.55), velocity=(0.3, 0.0, v), material=material)
    if friction:
        b.set_contacts(bonded_contacts=True)
        b.add_wall([0.0, 0.0, 1.0], 0.0, material="binder")
    else:
        b.set_contacts(2100.0)
        b.add_wall([0.0, 0.0, 1.0], 0.0, k=2100.0)
    b.set_gravity([0.0, 0.0, -1.0])
    return b


def falling_block(g):
    """The dissipative block with gravity ``(0, 0, g)`` (none for ``g = 0``)."""
    b = block(-0.5)
    b._gravity = None if g == 0.0 else np.array([0.0, 0.0, g])
    return b


def run(model, steps):
    state = model.state()
    gr.ExplicitIntegrator("verlet").advance(model, state, H, steps)
    return state


def host(model, state):
    be = model.backend
    return {k: np.asarray(be.to_host(getattr(state, k))) for k in ("x", "v", "q", "omega", "F", "RM")}


@pytest.mark.parametrize("make, values, steps", [
    (torus, (-1.0, -2.0, -0.5), 1200),
    (lambda v: torus(-1.5, kpp=v), (2100.0, 500.0, 8000.0), 1200),
    (block, (-1.0, -0.4, -1.5), 800),
    (lambda e: block(-1.0, restitution=e), (0.3, 0.5, 0.9), 800),
    (falling_block, (-1.0, -20.0, 0.0), 800),
], ids=["torus-hertz", "torus-own-kpp", "block-dissipative", "block-own-materials", "block-own-gravity"])  # fmt: skip
def test_each_replica_equals_its_system_run_alone_bitwise(make, values, steps):
    builders = [make(v) for v in values]
    model = replicate(builders).finalize("cpu")
    assert model.replica_count == len(values)
    together = host(model, run(model, steps))
    lo = 0
    touched = 0
    for b in builders:
        single = b.finalize("cpu")
        alone = host(single, run(single, steps))
        n = single.n
        for k, a in alone.items():
            np.testing.assert_array_equal(together[k][lo:lo + n], a, err_msg=k)
        touched += int((alone["x"] @ np.array([1.0, 0, 0] if single.law is None else [0, 0, 1.0]) < 0.6).any())
        lo += n
    assert touched == len(values)  # every replica reached its wall within the run


def test_replicas_on_top_of_each_other_do_not_interact():
    # two tori in the same place moving through each other: as a single system they
    # would collide; as replicas each moves as if alone
    a, b = torus(-1.0, wall=-50.0), torus(1.0, wall=-50.0)
    model = replicate([a, b]).finalize("cpu")
    state = run(model, 600)
    together = host(model, state)
    nl = state.neighbors
    pairs = nl.pairs()
    assert len(pairs) and (model.replica[pairs[:, 0]] == model.replica[pairs[:, 1]]).all()
    for r, bb in enumerate((a, b)):
        single = bb.finalize("cpu")
        alone = host(single, run(single, 600))
        np.testing.assert_array_equal(together["x"][r * single.n:(r + 1) * single.n], alone["x"])


def test_replicas_through_each_other_with_the_dissipative_law():
    a, b = block(-1.0), block(-1.0)
    model = replicate([a, b]).finalize("cpu")  # the same block twice, in the same place
    state = run(model, 400)
    single = a.finalize("cpu")
    alone = run(single, 400)
    x = np.asarray(state.x)
    np.testing.assert_array_equal(x[:single.n], np.asarray(alone.x))
    np.testing.assert_array_equal(x[single.n:], np.asarray(alone.x))
    d = replica_diagnostics(model, state)
    np.testing.assert_array_equal(d["dissipated_normal"][0], d["dissipated_normal"][1])
    assert d["dissipated_normal"][0] > 0


def test_walls_act_on_their_own_replica_only():
    # replica 0 has its wall at x = 0, replica 1 at x = -10: replica 1 passes x = 0 freely
    a, b = torus(-1.0, wall=0.0), torus(-1.0, wall=0.0)
    b._walls[0] = (b._walls[0][0], -10.0, b._walls[0][2], b._walls[0][3])
    model = replicate([a, b]).finalize("cpu")
    state = run(model, 2000)
    x = np.asarray(state.x)
    n = model.n // 2
    assert x[:n, 0].min() > -0.2  # bounced off x = 0
    assert x[n:, 0].min() < -0.3  # went on through where replica 0's wall is


def test_replica_diagnostics_are_the_single_runs_totals():
    values = (-1.0, -1.7)
    builders = [torus(v, strain_max=0.02) for v in values]
    model = replicate(builders).finalize("cpu")
    state = run(model, 1500)
    d = replica_diagnostics(model, state)
    for r, b in enumerate(builders):
        single = b.finalize("cpu")
        s = run(single, 1500)
        cfg = _configuration(single, s)
        total = single.diagnostics(cfg)
        for k in ("kinetic_translational", "kinetic_rotational", "U_a", "U_pw", "U_pp", "P_x", "broken_bonds",
                  "U_released"):
            assert d[k][r] == pytest.approx(total[k], rel=1e-12, abs=1e-12), k
        m = float(np.asarray(single.mass).sum())
        assert d["v_cm_x"][r] == pytest.approx(float((np.asarray(s.v)[:, 0] * np.asarray(single.mass)).sum()) / m)
        F_wall = gr.forces_by_family(single, s)["walls"][0].sum(axis=0)
        np.testing.assert_allclose([d["wall_force_x"][r], d["wall_force_y"][r], d["wall_force_z"][r]], F_wall,
                                   rtol=1e-12, atol=1e-12)  # fmt: skip
    assert d["broken_bonds"][1] > d["broken_bonds"][0]  # the faster torus broke more bonds


@pytest.mark.parametrize("change, match", [
    (lambda b: b.set_contacts(2100.0, bonded_contacts=False), "bonded_contacts"),
    (lambda b: b.add_material("steel", young=1e5), "materials"),
])  # fmt: skip
def test_model_wide_settings_must_agree(change, match):
    a, b = torus(-1.0), torus(-1.0)
    change(b)
    with pytest.raises(ValueError, match=match):
        replicate([a, b])


def test_replicas_with_their_own_gravity_book_its_energy():
    """Each replica's gravitational energy and weight are those of its own field: the
    diagnostics per replica equal the single runs', and the model's total is their sum."""
    values = (-1.0, -20.0, 0.0)
    builders = [falling_block(g) for g in values]
    model = replicate(builders).finalize("cpu")
    state = run(model, 300)
    d = replica_diagnostics(model, state)
    total = 0.0
    for r, b in enumerate(builders):
        single = b.finalize("cpu")
        u = single.diagnostics(_configuration(single, run(single, 300)))["U_gravity"]
        assert d["U_gravity"][r] == pytest.approx(u, rel=1e-12, abs=1e-300)
        total += u
    assert d["U_gravity"][2] == 0.0 and d["U_gravity"][1] != 0.0
    assert model.diagnostics(_configuration(model, state))["U_gravity"] == pytest.approx(total, rel=1e-12)


def test_bad_replica_input_is_named():
    with pytest.raises(ValueError, match="at least one"):
        replicate([])
    with pytest.raises(ValueError, match="no particles"):
        replicate([torus(-1.0), ModelBuilder()])
    with pytest.raises(ValueError, match="replica 1: .*overlap"):
        b = torus(-1.0)
        b.add_particles(b._x[0][6:7] + [0.05, 0.0, 0.0], radius=0.2)  # into a torus particle
        replicate([torus(-1.0), b]).finalize("cpu")
    model = torus(-1.0).finalize("cpu")
    with pytest.raises(ValueError, match="no replicas"):
        replica_diagnostics(model, model.state())


@pytest.mark.gpu
def test_replicas_on_the_gpu_equal_their_systems_alone(gpu_backend):
    # the CUDA kernels (the simulator in CI): the replica cell key, the per-replica walls
    # and stiffness, each replica against its system alone on the same backend
    builders = [torus(-2.0, n=12, kpp=2100.0), torus(-1.0, n=12, kpp=900.0)]
    builders[1].set_gravity([0.0, -0.5, 0.0])  # and gravity per replica (none for the first)
    steps = 40 if gpu_backend.simulated else 1000
    for b in builders:  # start touching the wall
        b._walls[0] = (b._walls[0][0], 0.15, b._walls[0][2], b._walls[0][3])
        b._wall_overlap[0] = True
    model = replicate(builders).finalize(gpu_backend)
    together = host(model, run(model, steps))
    lo = 0
    for b in builders:
        single = b.finalize(gpu_backend)
        alone = host(single, run(single, steps))
        for k in ("x", "v", "omega"):
            np.testing.assert_array_equal(together[k][lo:lo + single.n], alone[k], err_msg=k)
        assert np.abs(alone["F"][:, 0]).max() > 0
        lo += single.n


def test_a_joined_builder_is_closed_and_walls_take_their_replicas_stiffness():
    a, b = torus(-1.0, kpp=2100.0), torus(-1.0, kpp=500.0)
    for x in (a, b):  # walls without their own k
        x._walls[0] = (x._walls[0][0], x._walls[0][1], None, x._walls[0][3])
    joined = replicate([a, b])
    for call in (lambda: joined.add_particles([[9.0, 9.0, 9.0]]), lambda: joined.add_wall([0, 0, 1.0], -5.0),
                 lambda: joined.set_contacts(100.0), lambda: joined.set_gravity([0, 0, -1.0])):
        with pytest.raises(ValueError, match="joins replicas"):
            call()
    model = joined.finalize("cpu")
    np.testing.assert_array_equal(np.asarray(model.force("walls").k), [2100.0, 500.0])


def test_the_stable_step_of_replicas_is_that_of_the_worst_replica():
    # twins in the same place are not a contact of zero distance: the estimate of two
    # replicas equals the smaller of their own
    a, b = torus(-1.0, kpp=2100.0), torus(-1.0, kpp=8000.0)
    model = replicate([a, b]).finalize("cpu")
    both = gr.estimate_stable_step(model).h_max
    alone = min(gr.estimate_stable_step(x.finalize("cpu")).h_max for x in (a, b))
    assert np.isfinite(both) and both == pytest.approx(alone, rel=1e-12)


def test_the_stable_step_of_replicas_counts_each_replicas_own_fall():
    """The collision speed the estimate assumes is the largest of the replicas' own free
    falls: replica 0 in a strong sideways field (no wall ahead: it falls over its own
    width), replica 1 high above its floor in a weaker downward one. Measured along the
    strongest field alone, replica 1's fall would be missed."""
    from granular.particles.stability import estimate_stable_step

    sideways, high = falling_block(0.0), falling_block(0.0)
    sideways._gravity = np.array([-50.0, 0.0, 0.0])
    high._gravity = np.array([0.0, 0.0, -10.0])
    high._x = [a + np.array([0.0, 0.0, 20.0]) for a in high._x]
    alone = [estimate_stable_step(b.finalize("cpu")).assumed["speed"] for b in (sideways, high)]
    assert alone[1] > 1.3 * alone[0]
    model = replicate([sideways, high]).finalize("cpu")
    assert estimate_stable_step(model).assumed["speed"] == pytest.approx(max(alone), rel=1e-12)
