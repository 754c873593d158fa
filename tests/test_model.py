"""Bad input gets an error naming the argument; good input lands on the backend."""

import numpy as np
import pytest

import granular as gr
from granular import rotations as rot


def builder_with(**kwargs):
    b = gr.ModelBuilder()
    args = dict(x=np.zeros((3, 3)))
    args.update(kwargs)
    x = args.pop("x")
    b.add_particles(x, **args)
    return b


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(x=np.zeros((3, 2))), r"x: expected shape \(K, 3\)"),
        (dict(x=[[0, 0, np.nan]]), "x: non-finite"),
        (dict(v=np.zeros((2, 3))), r"v: expected shape \(3, 3\)"),
        (dict(omega=[1.0, np.inf, 0.0]), "omega: non-finite"),
        (dict(orientation=[1.0, 0.0, 0.0]), r"orientation: expected shape \(3, 4\)"),
        (dict(orientation=[np.nan, 0.0, 0.0, 0.0]), "orientation: non-finite"),
        (dict(orientation=[1.0, 0.1, 0.0, 0.0]), "orientation: must be a unit quaternion"),
        (dict(alpha=[np.nan, 0, 0]), "alpha: non-finite"),
        (dict(rotvec=[0, 0, 1], alpha=[0, 0, 1]), "at most one of orientation"),
        (dict(mass=0.0), r"mass: must be finite and > 0; particle 0 of this call has 0.0"),
        (dict(mass=[1.0, -2.0, 1.0]), "mass: must be finite and > 0; particle 1"),
        (dict(inertia=[1.0, 1.0, np.nan]), "inertia: must be finite and > 0; particle 2"),
        (dict(radius=-1.0), "radius: must be finite and > 0"),
        (dict(mass=[1.0, 2.0]), r"mass: expected a scalar or shape \(3,\)"),
        (dict(mass="heavy"), "mass: expected numbers"),
    ],
)
def test_bad_particle_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        builder_with(**kwargs)


def test_bad_pendulum_input():
    b = builder_with()
    with pytest.raises(ValueError, match=r"particles: indices must be in \[0, 3\)"):
        b.add_pendulum(5)
    with pytest.raises(ValueError, match="vertical: must be a unit vector"):
        b.add_pendulum(0, vertical=[0, 0, 2])
    with pytest.raises(ValueError, match="g: must be finite and > 0"):
        b.add_pendulum(0, g=-1.0)
    b.add_pendulum([0, 1])
    with pytest.raises(ValueError, match="at most one pendulum"):
        b.add_pendulum(1)


def test_empty_model_and_dtype():
    with pytest.raises(ValueError, match="no particles"):
        gr.ModelBuilder().finalize("cpu")
    with pytest.raises(ValueError, match="dtype: must be float64"):
        builder_with().finalize("cpu", dtype=np.int32)


def test_orientation_forms_agree_and_arrays_have_documented_shapes(backend, rng):
    theta = rng.normal(size=(4, 3))
    forms = [dict(rotvec=theta), dict(alpha=rot.rrp_from_rotvec(theta)), dict(orientation=rot.quat_from_rotvec(theta))]
    qs = []
    for f in forms:
        b = gr.ModelBuilder()
        b.add_particles(rng.normal(size=(4, 3)), **f)
        model = b.finalize(backend)
        s = model.state()
        assert s.x.shape == (4, 3) and s.q.shape == (4, 4) and s.omega.shape == (4, 3)
        assert model.mass.shape == (4,) and model.inertia.shape == (4,) and model.radius.shape == (4,)
        assert s.x.dtype == np.float64 and s.status.dtype == np.int32
        qs.append(rot.quat_canonical(model.backend.to_host(s.q)))
    np.testing.assert_allclose(qs[1], qs[0], atol=1e-15)
    np.testing.assert_allclose(qs[2], qs[0], atol=1e-15)


def test_single_particle_helper_and_state_views():
    b = gr.ModelBuilder()
    i = b.add_particle([1.0, 2.0, 3.0], rotvec=[0.0, 0.0, np.pi / 2], mass=2.0)
    j = b.add_particle([0.0, 0.0, 0.0])
    assert (i, j) == (0, 1)
    s = b.finalize("cpu").state()
    np.testing.assert_allclose(s.R[0] @ [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(s.alpha[0], [0.0, 0.0, 2.0], atol=1e-15)  # 2 tan(π/4) e3
    c = s.copy()
    c.x[0, 0] = 99.0
    assert s.x[0, 0] == 1.0
