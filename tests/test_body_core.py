"""The interface every body scheme shares (granular/bodies/core.py): the registry, the
state's clock and step count, step/advance/run, invariants as named per-body arrays, and
one error family on the particle engine's IntegrationError."""

import math

import numpy as np
import pytest

from granular.bodies import core
from granular.bodies.core import REGISTRY, BodyError, NewtonError, NonFiniteBodyError, Scheme, scheme_class
from granular.bodies.directors import schemes as dirs
from granular.bodies.livens.rigid import EML
from granular.bodies.rolling_ball.ball import RollingBall
from granular.bodies.rolling_ball.disk import RollingDisk
from granular.bodies.rolling_ball.rails import CircleRail, ConstantSpeed
from granular.bodies.ulvc import schemes as ulvc
from granular.particles.integrators import IntegrationError, NonFiniteError


def test_every_registered_name_resolves_to_its_scheme():
    assert len(REGISTRY) == 15
    for name in REGISTRY:
        cls = scheme_class(name)
        assert issubclass(cls, Scheme) and cls.name == name, name
    with pytest.raises(ValueError, match="registered: .*ulvc rk4"):
        scheme_class("ulvc rk5")


def small_schemes():
    """One small instance of every registered scheme with its state."""
    n = 4
    J = np.diag([6.0, 8.0, 3.0])
    out = {}
    for name in ("directors em", "directors dla", "nontwisting em", "nontwisting dla"):
        sch = scheme_class(name)(J, n=n, moment=dirs.ExternalMoment(material=np.ones((n, 2)), profile=math.cos))
        out[name] = (sch, sch.state(np.eye(3), (1.0, 2.0, 0.0)))
    bodies = ulvc.ULVCBodies(1.0, (5.2988, 1.1775, 4.3568), n=n)
    for name in ("ulvc rk4", "ulvc reference"):
        sch = scheme_class(name)(bodies)
        out[name] = (sch, sch.state(Omega=(0.01, 0.0, 10.0)))
    for name in ("livens eml", "livens reml", "livens null-eml", "livens mpl", "livens emh", "livens mph"):
        sch = scheme_class(name)(J, n=n, mass=1.0, center_of_mass=(0.0, 0.0, 0.1), gravity=(0.0, 0.0, -9.81))
        out[name] = (sch, sch.state([1.0, 0.0, 0.0, 0.0], Omega=(1.0, 2.0, 3.0)))
    ball = RollingBall(1.0, 1.0, (0.6, 0.65, 0.7), masses=[0.2], rails=[CircleRail(0.5)],
                       actuations=[ConstantSpeed(0.0, 1.0)], n=n)  # fmt: skip
    for name in ("rolling_ball rk4", "rolling_ball dopri5"):
        sch = scheme_class(name)(ball)
        out[name] = (sch, sch.state(Omega=(0.1, 0.2, 0.3), track_work=True))
    disk = RollingDisk(1.0, 1.0, 0.6, masses=[0.2], rails=[CircleRail(0.5)], actuations=[ConstantSpeed(0.0, 1.0)],
                       n=n)  # fmt: skip
    sch = scheme_class("rolling_disk rk4")(disk)
    out["rolling_disk rk4"] = (sch, sch.state(psi_dot=0.5))
    return out


def test_one_interface_for_every_scheme():
    """step(state, h), advance, run with a callback; t and step on every state; invariants
    as per-body arrays including the scheme's conserved energy; body angular velocities."""
    for name, (sch, s) in small_schemes().items():
        assert s.t == 0.0 and s.step == 0 and s.n == 4
        sch.step(s, 0.01)
        sch.advance(s, 0.01, 3)
        seen = []
        sch.run(s, 0.01, 4, callback=lambda st: seen.append(st.step), every=2)
        assert s.step == 8 and seen == [6, 8] and s.t == pytest.approx(0.08, rel=1e-14), name
        inv = sch.invariants(s)
        assert sch.energy_key in inv, name
        assert all(v.shape[0] == 4 for v in inv.values()), name
        assert sch.body_angular_velocity(s).shape == (4, 3), name
        c = s.copy()
        assert all(np.array_equal(a, getattr(c, k)) and a is not getattr(c, k) for k, a in s.arrays().items())


def test_a_step_replaces_the_state_arrays_and_keeps_old_ones_valid():
    sch, s = small_schemes()["ulvc rk4"]
    w0 = s.w
    keep = w0.copy()
    sch.advance(s, 0.01, 5)
    assert s.w is not w0 and np.array_equal(w0, keep)


def test_one_error_family():
    for cls in (BodyError, NewtonError, NonFiniteBodyError, core.StepSizeError):
        assert issubclass(cls, IntegrationError)
    assert issubclass(NonFiniteBodyError, NonFiniteError)
    err = NewtonError("x", body=3, step=7, reason="not converged", residual=2.5, iterations=25, max_iter=25)
    assert (err.body, err.step, err.quantity, err.value, err.particle) == (3, 7, "newton residual", 2.5, 3)
    # a scheme's failure: body, step, quantity and value, state before the failing step
    sch = EML(np.diag([6.0, 8.0, 3.0]), n=2, max_iter=12)
    s = sch.state(np.tile([1.0, 0.0, 0.0, 0.0], (2, 1)), Omega=[[1.0, 2.0, 3.0], [3000.0, 1000.0, -2000.0]])
    with pytest.raises(NewtonError) as exc:
        sch.advance(s, 0.05, 5)
    e = exc.value
    assert e.body == 1 and e.step == s.step + 1 and e.quantity == "newton residual" and e.value > 0
    assert e.max_iter == 12 and "livens eml" in str(e) and "body 1" in str(e)


@pytest.mark.parametrize("h", [0.0, -1.0, float("nan"), float("inf"), "x", True])
def test_bad_step_sizes(h):
    sch, s = small_schemes()["rolling_disk rk4"]
    with pytest.raises(ValueError, match="h: the time step"):
        sch.step(s, h)
    with pytest.raises(ValueError, match="steps"):
        sch.advance(s, 0.01, -1)


def test_body_time_is_the_clock_not_a_running_sum():
    """``t = t0 + (step - step0) h``: 30 steps of 0.1 end at 3.0 exactly (a running sum
    gives 3.0000000000000013), for every scheme, whatever the blocks; a clock set by hand
    starts a new origin."""
    for name, (sch, s) in small_schemes().items():
        if name == "rolling_ball dopri5":
            continue  # adaptive: its steps are its own, t is set to each output time
        s.t, s.step = 0.0, 0
        sch.max_block = 7
        sch.advance(s, 0.1, 30)
        assert (s.t, s.step) == (3.0, 30), name
        s.t = 10.0  # by hand
        sch.advance(s, 0.1, 30)
        assert s.t == 10.0 + 30 * 0.1, name


def test_the_package_docstring_lists_every_module():
    """The table in granular.bodies' docstring names every module of the package (or its
    package, for ``scenes``), and every name in it is a module."""
    import importlib
    import re
    from pathlib import Path

    import granular.bodies as bodies

    listed = set(re.findall(r"^``([a-z_.]+)``\s", bodies.__doc__, flags=re.M))
    for name in listed:
        importlib.import_module(f"granular.bodies.{name}")
    root = Path(bodies.__file__).parent
    modules = {".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
               for p in root.rglob("*.py") if p.name != "__init__.py" or p.parent != root}  # fmt: skip
    missing = sorted(m for m in modules if not any(m == n or m.startswith(n + ".") for n in listed)
                     and m not in {"directors", "livens", "rolling_ball", "ulvc"})  # fmt: skip
    assert missing == []
