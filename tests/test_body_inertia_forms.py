"""One inertia convention for every body scheme (issue 30, item 9).

Every scheme of the registry takes its inertia as three principal moments (3,), a
tensor (3, 3), or per body (N, 3) or (N, 3, 3) (:func:`granular.bodies.core.inertia_tensors`):
equivalent forms (``J`` and ``diag(J)``, one shared value and the same value per body) give
the same bits, at the start and after some steps; any other shape is refused with one
error naming the argument, the shapes allowed and the shape given; a tensor that is not
symmetric or not positive definite is refused too.
"""

import numpy as np
import pytest

from granular.bodies import REGISTRY, scheme_class
from granular.bodies.core import INERTIA_SHAPES, inertia_tensors
from granular.bodies.rolling_ball.ball import RollingBall
from granular.bodies.ulvc import ULVCBodies

N = 2
M1 = [2.0, 3.0, 4.0]  # principal moments obeying the strict triangle inequality (the director schemes)
M2 = [2.5, 3.5, 4.5]


def _directors(name):
    def make(inertia):
        sch = scheme_class(name)(inertia=inertia, n=N)
        return sch, sch.state(np.eye(3), [1.0, -2.0, 0.0])  # ω·d3 = 0: also the non-twisting body's

    return make


def _ulvc(name):
    def make(inertia):
        sch = scheme_class(name)(ULVCBodies(1.0, inertia, n=N))
        return sch, sch.state(Omega=[0.1, 0.0, 2.0])

    return make


def _livens(name):
    def make(inertia):
        sch = scheme_class(name)(inertia, n=N, mass=1.0, center_of_mass=(0.0, 0.0, 0.1), gravity=(0.0, 0.0, -9.81))
        return sch, sch.state([1.0, 0.0, 0.0, 0.0], Omega=[1.0, 2.0, 3.0])

    return make


def _rolling(name):
    def make(inertia):
        sch = scheme_class(name)(RollingBall(1.0, 1.0, inertia, n=N))
        return sch, sch.state(Omega=[0.1, 0.2, 0.3])

    return make


#: registry name -> make(inertia) -> (scheme, state) of N bodies
MAKERS = {
    "directors em": _directors("directors em"),
    "directors dla": _directors("directors dla"),
    "nontwisting em": _directors("nontwisting em"),
    "nontwisting dla": _directors("nontwisting dla"),
    "ulvc rk4": _ulvc("ulvc rk4"),
    "ulvc reference": _ulvc("ulvc reference"),
    **{name: _livens(name) for name in REGISTRY if name.startswith("livens ")},
    "rolling_ball rk4": _rolling("rolling_ball rk4"),
    "rolling_ball dopri5": _rolling("rolling_ball dopri5"),
}

#: schemes without a 3D inertia argument, and why
NO_INERTIA = {"rolling_disk rk4": "the planar disk takes inertia_y, its one moment about the axle"}


def test_every_registered_scheme_is_covered():
    assert set(MAKERS) | set(NO_INERTIA) == set(REGISTRY)
    assert not set(MAKERS) & set(NO_INERTIA)


def _run(make, inertia):
    """Host arrays of the state at the start and after three steps, and the invariants."""
    sch, state = make(inertia)
    start = {k: np.array(sch.backend.to_host(a)) for k, a in state.arrays().items()}
    sch.advance(state, 1e-3, 3)
    after = {k: np.array(sch.backend.to_host(a)) for k, a in state.arrays().items()}
    inv = {k: np.array(sch.backend.to_host(a)) for k, a in sch.invariants(state).items()}
    return start, after, inv


def _same_bits(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert a[k].tobytes() == b[k].tobytes(), f"{k}: {a[k]} against {b[k]}"


SHARED = {
    "moments (3,)": M1,
    "tensor (3, 3)": np.diag(M1),
    "moments per body (N, 3)": [M1] * N,
    "tensor per body (N, 3, 3)": np.stack([np.diag(M1)] * N),
}
PER_BODY = {
    "moments per body (N, 3)": np.array([M1, M2]),
    "tensor per body (N, 3, 3)": np.stack([np.diag(M1), np.diag(M2)]),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_the_four_forms_give_the_same_bits(name):
    runs = {form: _run(MAKERS[name], J) for form, J in SHARED.items()}
    first = runs.pop("tensor (3, 3)")
    for form, run in runs.items():
        for a, b in zip(first, run):
            _same_bits(a, b)
    moments, tensors = (_run(MAKERS[name], J) for J in PER_BODY.values())
    for a, b in zip(moments, tensors):
        _same_bits(a, b)
    inv = moments[2]  # the two bodies differ: the per-body inertia reached each
    assert any(not np.array_equal(v[0], v[1]) for v in inv.values())


BAD_SHAPES = [np.eye(4), [1.0, 2.0], [[1.0, 2.0]], np.ones((N, 3, 4)), np.ones((N, 2, 3)), np.zeros((0, 3)),
              np.ones((1, 1, 3, 3))]  # fmt: skip


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("bad", BAD_SHAPES, ids=lambda a: str(np.shape(a)))
def test_a_bad_shape_is_one_clear_error(name, bad):
    message = f"inertia must have shape {INERTIA_SHAPES}, got {np.shape(bad)}"
    assert message.startswith("inertia must have shape (3,) (principal moments), (3, 3) (a tensor), (N, 3) or "
                              "(N, 3, 3) (one per body), got (")
    with pytest.raises(ValueError) as info:
        MAKERS[name](bad)
    assert str(info.value) == message


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_not_symmetric_or_not_definite_is_refused(name):
    skew = np.diag(M1) + np.triu(np.full((3, 3), 0.1), 1)
    with pytest.raises(ValueError, match=r"^inertia must be symmetric \(to 1e-12 relative\); got \[\[2.0, 0.1, 0.1\]"):
        MAKERS[name](skew)
    with pytest.raises(ValueError, match=r"^inertia must be symmetric .*; body 1 has"):
        MAKERS[name](np.stack([np.diag(M1), skew]))
    with pytest.raises(ValueError, match=r"positive definite"):
        MAKERS[name]([[2.0, 3.0, -4.0]] * N)
    with pytest.raises(ValueError, match=r"^inertia must be finite; body 1 has"):
        MAKERS[name]([M1, [2.0, np.nan, 4.0]])


def test_the_helper_diagonal_is_np_diag_bit_for_bit():
    rng = np.random.default_rng(3)
    m = rng.uniform(0.1, 10.0, (5, 3))
    J, per_body = inertia_tensors(m)
    assert per_body and J.tobytes() == np.stack([np.diag(r) for r in m]).tobytes()
    J, per_body = inertia_tensors(m[0])
    assert not per_body and J.shape == (1, 3, 3) and J[0].tobytes() == np.diag(m[0]).tobytes()
    with pytest.raises(ValueError, match=r"^euler must have shape .*, got \(2,\)$"):
        inertia_tensors([1.0, 2.0], "euler")
    with pytest.raises(ValueError, match=r"^inertia must be numbers of shape"):
        inertia_tensors([[1.0, 2.0, 3.0], [1.0, 2.0]])
