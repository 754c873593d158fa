"""Per-body kernels of paper 001 (kernels/bodies_ulvc.py) against the whole-array reference
(tests/reference_bodies/ulvc_array.py) on random batches, on the CPU and on the GPU backend
(the CUDA simulator in CI); blocks of steps equal single steps bit for bit; a failing
body is named and leaves the others untouched."""

import numpy as np
import pytest

from granular import rotations as rot
from granular.backend import get_backend
from granular.bodies.core import NonFiniteBodyError
from granular.bodies.ulvc import schemes as ulvc
from tests.reference_bodies import ulvc_array as ref

STEPS = 100


def random_inertia(rng, n):
    out = []
    for _ in range(n):
        a, b = rng.uniform(0.5, 3.0, 2)
        c = rng.uniform(abs(a - b) + 0.1, a + b - 0.05)
        Q = rot.so3_exp(rng.normal(size=3))
        out.append(Q @ np.diag([a, b, c]) @ Q.T)
    return np.array(out)


def random_batch(backend, rng, n, loaded, projection="hexahedral"):
    kw = {"l": rng.uniform(0.5, 2.0, (n, 3))} if projection == "hexahedral" else {"projection": "tetrahedral"}
    bodies = ulvc.ULVCBodies(rng.uniform(0.5, 2.0, n), random_inertia(rng, n), backend=backend, **kw)
    loads = None
    if loaded:
        loads = ulvc.PointLoads(points=rng.normal(size=(n, 2, 3)), force_body=rng.normal(size=(n, 2, 3)),
                                force_spatial=rng.normal(size=(1, 2, 3)), torque_body=rng.normal(size=(n, 3)),
                                torque_spatial=rng.normal(size=3), scale=lambda t: 1.0 + 0.5 * np.cos(3.0 * t),
                                backend=backend)  # fmt: skip
    state = bodies.state(R=backend.asarray(rot.so3_exp(rng.normal(size=(n, 3)))), x=rng.normal(size=(n, 3)),
                         U=rng.normal(size=(n, 3)), Omega=5.0 * rng.normal(size=(n, 3)))  # fmt: skip
    return bodies, loads, state


def rel_diff(a, b, backend):
    a, b = backend.to_host(a), backend.to_host(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("loaded", [False, True])
@pytest.mark.parametrize("stages", ["munthe-kaas", "paper"])
def test_lie_group_rk4_kernel_matches_array_reference(backend, rng, loaded, stages):
    n = 12 if backend.name == "cpu" else 4
    bodies, loads, s = random_batch(backend, rng, n, loaded)
    s_ref = s.copy()
    ulvc.LieGroupRK4(bodies, loads, stages=stages).advance(s, 0.01, STEPS)
    integ = ref.LieGroupRK4(loads, stages=stages)
    for _ in range(STEPS):
        integ.step(bodies, s_ref, 0.01)
    for name in ("R", "x", "w"):
        assert rel_diff(getattr(s, name), getattr(s_ref, name), backend) < 1e-13, name
    assert s.step == s_ref.step == STEPS and abs(s.t - s_ref.t) < 1e-15


@pytest.mark.parametrize("loaded", [False, True])
def test_newton_euler_kernel_matches_array_reference(backend, rng, loaded):
    n = 12 if backend.name == "cpu" else 4
    bodies, loads, s0 = random_batch(backend, rng, n, loaded, projection="tetrahedral")
    s = ulvc.to_newton_euler(bodies, s0)
    s_ref = s.copy()
    ulvc.NewtonEulerRK4(bodies, loads).advance(s, 0.01, STEPS)
    integ = ref.NewtonEulerRK4(loads)
    for _ in range(STEPS):
        integ.step(bodies, s_ref, 0.01)
    for name in ("R", "x", "v", "Omega"):
        assert rel_diff(getattr(s, name), getattr(s_ref, name), backend) < 1e-13, name


def test_blocks_equal_single_steps_bitwise(backend, rng):
    bodies, loads, s = random_batch(backend, rng, 5, True)
    scheme = ulvc.LieGroupRK4(bodies, loads)
    s1 = s.copy()
    scheme.advance(s, 0.02, 30)
    for _ in range(30):
        scheme.step(s1, 0.02)
    for name in ("R", "x", "w"):
        assert np.array_equal(backend.to_host(getattr(s, name)), backend.to_host(getattr(s1, name)))
    assert s.t == s1.t and s.step == s1.step == 30


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the simulator's threads overflow outside np.errstate
def test_a_failing_body_is_named_and_the_others_are_unaffected(backend, rng):
    """Body 2 spins so fast that RK4 overflows at h = 0.1; the error names it and the
    step; every body is left at the step before, equal to a run without body 2."""
    n = 5
    bodies = ulvc.ULVCBodies(1.0, [5.2988, 1.1775, 4.3568], n=n, backend=backend)
    om = rng.normal(size=(n, 3))
    om[2] = (0.01, 0.0, 100.0)
    scheme = ulvc.LieGroupRK4(bodies)
    s = scheme.state(Omega=om)
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(NonFiniteBodyError) as exc:
        scheme.advance(s, 0.1, 40)
    err = exc.value
    assert err.body == 2 and err.step == s.step + 1 and 1 < err.step < 40
    assert err.quantity in ("w", "R", "x") and "body 2" in str(err)
    assert np.isfinite(backend.to_host(s.w)).all()
    keep = [0, 1, 3, 4]
    others = ulvc.ULVCBodies(1.0, [5.2988, 1.1775, 4.3568], n=4, backend=backend)
    scheme4 = ulvc.LieGroupRK4(others)
    s4 = scheme4.state(Omega=om[keep])
    scheme4.advance(s4, 0.1, s.step)
    assert np.array_equal(backend.to_host(s.w)[keep], backend.to_host(s4.w))
    assert np.array_equal(backend.to_host(s.R)[keep], backend.to_host(s4.R))
    alone = ulvc.ULVCBodies(1.0, [5.2988, 1.1775, 4.3568], n=1, backend=backend)
    scheme1 = ulvc.LieGroupRK4(alone)
    s1 = scheme1.state(Omega=om[2])
    scheme1.advance(s1, 0.1, s.step)
    assert np.array_equal(backend.to_host(s.w)[2], backend.to_host(s1.w)[0])
    assert s.t == pytest.approx(0.1 * s.step)


def test_invariants_are_named_per_body_arrays(rng):
    bodies, loads, s = random_batch(get_backend("cpu"), rng, 6, False)
    inv = ulvc.LieGroupRK4(bodies).invariants(s)
    assert {"kinetic_energy", "energy", "linear_momentum", "angular_momentum", "det_R_minus_1"} <= set(inv)
    assert all(v.shape[0] == 6 for v in inv.values())
    assert np.allclose(inv["energy"], inv["kinetic_energy"])
    # dead loads: the energy adds their potential -Σ f·(x + R y)
    g = np.array([0.0, 0.0, -9.81])
    lg = ulvc.PointLoads(points=np.zeros((1, 3)), force_spatial=(bodies.mass[:, None] * g)[:, None, :])
    inv = ulvc.LieGroupRK4(bodies, lg).invariants(s)
    assert np.allclose(inv["energy"] - inv["kinetic_energy"], -bodies.mass * (s.x @ g), rtol=1e-14, atol=1e-14)
