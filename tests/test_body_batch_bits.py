"""A body's run does not depend on the batch around it: for every registered body scheme,
a batch built by ``scheme.state(...)`` from per-body inputs and each body built alone
(its own scheme and ``state(...)`` from the same inputs, not rows copied from the batch)
hold the same bits at t = 0 and after some steps, on the CPU and on the GPU backend (the
CUDA simulator in CI). Shared parameters (one inertia for the whole batch) are covered
too: a single (1, m, k) matrix against many vectors is where a batched product is most
tempted to take another path.
"""

import math

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies import schemes
from granular.bodies.directors import schemes as dirs
from granular.bodies.directors.dla import DirectorDLA, NonTwistingDLA
from granular.bodies.directors.nontwisting import NonTwistingEM, ramp
from granular.bodies.livens import comparators as cmp
from granular.bodies.livens import rigid as lr
from granular.bodies.rolling_ball import rails as R
from granular.bodies.rolling_ball.ball import HarmonicForce, RollingBall
from granular.bodies.rolling_ball.disk import RollingDisk, RollingDiskRK4
from granular.bodies.rolling_ball.integrators import RK4, DormandPrince
from granular.bodies.ulvc import schemes as ulvc

# ----------------------------------------------------------------- random inputs


def _unit_quaternions(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def _rotations(rng, n):
    return rot.quat_to_matrix(_unit_quaternions(rng, n))


def _inertia(rng, n):
    """Convected inertia tensors with principal moments obeying the strict triangle
    inequality (SPD Euler coefficients), as the director schemes need."""
    A = rng.normal(size=(n, 3, 3))
    return dirs.inertia_from_euler(A @ A.swapaxes(1, 2) + 0.5 * np.eye(3))


def _split_inertia(rng, n):
    """Inertia with D3 a principal axis (J13 = J23 = 0), for the non-twisting body."""
    E = np.zeros((n, 3, 3))
    a, b = rng.uniform(1.0, 3.0, n), rng.uniform(1.0, 3.0, n)
    c = rng.uniform(-0.4, 0.4, n)
    E[:, 0, 0], E[:, 1, 1], E[:, 0, 1], E[:, 1, 0] = a, b, c, c
    E[:, 2, 2] = rng.uniform(0.5, 1.5, n)
    return dirs.inertia_from_euler(E)


def _profile(t):
    return 1.0 + 0.5 * math.sin(3.0 * t)


# ------------------------------------------------------- builders, one per scheme
#
# Each builder takes the backend, the inputs of all N bodies (host arrays, leading axis
# N, or shared values without it) and a slice, and builds the scheme and its state for
# the bodies of the slice only. Returns (scheme, state, h, steps).


def _directors(cls, spatial):
    def build(be, P, sl):
        moment = dirs.ExternalMoment(spatial=P["ms"][sl] if spatial else None, material=P["mc"][sl],
                                     profile=_profile)  # fmt: skip
        sch = cls(inertia=P["J"][sl], backend=be, moment=moment)
        return sch, sch.state(P["d"][sl], P["w"][sl]), 0.005

    def inputs(rng, n):
        d = dirs.directors_from_matrix(_rotations(rng, n))
        return {"J": _inertia(rng, n), "d": d, "w": rng.normal(size=(n, 3)) * 4, "ms": rng.normal(size=(n, 3)),
                "mc": rng.normal(size=(n, 3))}  # fmt: skip

    return build, inputs


def _nontwisting(cls):
    def build(be, P, sl):
        moment = dirs.ExternalMoment(material=P["mc"][sl], profile=ramp)
        sch = cls(inertia=P["J"][sl], backend=be, moment=moment, a=0.3)
        return sch, sch.state(P["d"][sl], P["w"][sl]), 0.005

    def inputs(rng, n):
        d = dirs.directors_from_matrix(_rotations(rng, n))
        ab = rng.normal(size=(n, 2)) * 5
        w = ab[:, :1] * d[:, 0] + ab[:, 1:] * d[:, 1]  # ω·d3 = 0 (82)
        return {"J": _split_inertia(rng, n), "d": d, "w": w, "mc": rng.normal(size=(n, 2)) * 20}

    return build, inputs


def _livens(cls, shared_inertia=False, spatial=False):
    def build(be, P, sl):
        m = P["mass"][sl]
        J = P["J1"] if shared_inertia else P["J"][sl]
        sch = cls(J, n=len(m), mass=m, center_of_mass=P["c"][sl], gravity=P["g"][sl], backend=be)
        s = sch.state(P["q"][sl], omega=P["w"][sl]) if spatial else sch.state(P["q"][sl], Omega=P["w"][sl])
        return sch, s, 0.004

    def inputs(rng, n):
        return {"J": _inertia(rng, n), "J1": _inertia(rng, 1)[0], "mass": rng.uniform(0.5, 2.0, n),
                "c": rng.normal(size=(n, 3)) * 0.3, "g": rng.normal(size=(n, 3)) * 5, "q": _unit_quaternions(rng, n),
                "w": rng.normal(size=(n, 3)) * 5}  # fmt: skip

    return build, inputs


def _ulvc(cls, projection):
    def build(be, P, sl):
        if projection == "hexahedral":
            bodies = ulvc.ULVCBodies(P["m"][sl], P["J"][sl], l=P["l"][sl], backend=be)
        else:
            bodies = ulvc.ULVCBodies(P["m"][sl], P["J"][sl], projection="tetrahedral", vertices=P["v"][sl],
                                     backend=be)  # fmt: skip
        loads = ulvc.PointLoads(points=P["y"][sl], force_body=P["fb"][sl], force_spatial=P["fs"][sl],
                                torque_spatial=P["ts"][sl], scale=_profile, backend=be)  # fmt: skip
        sch = cls(bodies, loads)
        return sch, sch.state(R=P["R"][sl], x=P["x"][sl], U=P["U"][sl], Omega=P["W"][sl]), 1e-3

    def inputs(rng, n):
        tet = ulvc.regular_tetrahedron()
        return {"m": rng.uniform(0.5, 2.0, n), "J": _inertia(rng, n), "l": rng.uniform(0.5, 2.0, (n, 3)),
                "v": tet + rng.uniform(-0.1, 0.1, (n, 4, 3)), "y": rng.normal(size=(n, 2, 3)) * 0.3,
                "fb": rng.normal(size=(n, 2, 3)), "fs": rng.normal(size=(n, 2, 3)), "ts": rng.normal(size=(n, 3)),
                "R": _rotations(rng, n), "x": rng.normal(size=(n, 3)), "U": rng.normal(size=(n, 3)),
                "W": rng.normal(size=(n, 3)) * 5}  # fmt: skip

    return build, inputs


def _ball_inputs(rng, n):
    return {"r": rng.uniform(0.9, 1.1, n), "m0": rng.uniform(0.8, 1.2, n), "I": rng.uniform(0.55, 0.7, (n, 3)),
            "com": rng.uniform(-0.05, 0.05, (n, 3)), "masses": rng.uniform(0.05, 0.2, (n, 3)),
            "rho": rng.uniform(0.5, 0.7, n), "b": rng.uniform(0.3, 0.5, n), "lc": rng.uniform(-0.1, 0.1, (n, 3)),
            "speed": rng.uniform(0.5, 2.0, n), "amp": rng.uniform(0.2, 1.0, n), "Fa": rng.uniform(0, 0.05, (n, 3)),
            "Om": rng.normal(size=(n, 3)), "q": _unit_quaternions(rng, n), "xy": rng.normal(size=(n, 2))}  # fmt: skip


def _ball(be, P, sl):
    rails = [R.CircleRail(P["rho"][sl], u=(0.0, 1.0, 0.0), v=(0.0, 0.0, 1.0)),
             R.EllipseRail(0.6, P["b"][sl], center=(0.0, 0.1, -0.1), u=(0.6, 0.8, 0.0), v=(0, 0, 1.0)),
             R.LineRail((0.0, 0.3, 0.1), center=P["lc"][sl])]  # fmt: skip
    acts = [R.ConstantSpeed(0.1, P["speed"][sl]), R.Sinusoidal(P["amp"][sl], 1.3), R.Harmonic(0.2, 0.7, 0.5, 1.1, 0.4)]
    force = HarmonicForce((0.01, 0.0, 0.0), P["Fa"][sl], (0.7, 1.1, 0.3))
    return RollingBall(P["r"][sl], P["m0"][sl], P["I"][sl], P["com"][sl], P["masses"][sl], rails, acts, gravity=1.0,
                       external_force=force, backend=be)  # fmt: skip


def _rolling(cls):
    def build(be, P, sl):
        sch = cls(_ball(be, P, sl))
        return sch, sch.state(Omega=P["Om"][sl], q=P["q"][sl], xy=P["xy"][sl], track_work=True), 0.02

    return build, _ball_inputs


def _disk():
    def build(be, P, sl):
        rails = [R.CircleRail(P["rho"][sl]), R.FigureEightRail(0.6, 0.5, center=(0.05, 0.0, 0.1))]
        acts = [R.ConstantSpeed(-1.0, P["speed"][sl]), R.Sinusoidal(0.9, 1.7, 0.3)]
        disk = RollingDisk(1.0, P["m0"][sl], P["Iy"][sl], P["com"][sl], P["masses"][sl], rails, acts, gravity=1.0,
                           external_force_x=P["F"][sl], backend=be)  # fmt: skip
        sch = RollingDiskRK4(disk)
        return sch, sch.state(psi=P["psi"][sl], psi_dot=P["dpsi"][sl], x=P["x"][sl]), 0.02

    def inputs(rng, n):
        return {"rho": rng.uniform(0.5, 0.8, n), "speed": rng.uniform(0.5, 1.5, n), "m0": rng.uniform(0.8, 1.2, n),
                "Iy": rng.uniform(0.5, 0.7, n), "com": rng.uniform(-0.05, 0.05, (n, 2)),
                "masses": rng.uniform(0.05, 0.2, (n, 2)), "F": rng.uniform(-0.1, 0.1, n),
                "psi": rng.uniform(-1, 1, n), "dpsi": rng.normal(size=n), "x": rng.normal(size=n)}  # fmt: skip

    return build, inputs


#: registry name -> (builder, inputs); extra cases (shared inertia, spatial rates) as "name/case"
CASES = {
    "directors em": _directors(dirs.DirectorEM, spatial=True),
    "directors dla": _directors(DirectorDLA, spatial=False),
    "nontwisting em": _nontwisting(NonTwistingEM),
    "nontwisting dla": _nontwisting(NonTwistingDLA),
    "ulvc rk4": _ulvc(ulvc.LieGroupRK4, "hexahedral"),
    "ulvc reference": _ulvc(ulvc.NewtonEulerRK4, "tetrahedral"),
    "livens eml": _livens(lr.EML),
    "livens eml/shared inertia": _livens(lr.EML, shared_inertia=True),
    "livens reml": _livens(lr.REML, spatial=True),
    "livens null-eml": _livens(lr.NullEML),
    "livens mpl": _livens(cmp.MPL, spatial=True),
    "livens emh": _livens(cmp.EMH),
    "livens emh/shared inertia": _livens(cmp.EMH, shared_inertia=True),
    "livens mph": _livens(cmp.MPH, spatial=True),
    "rolling_ball rk4": _rolling(RK4),
    "rolling_ball dopri5": _rolling(DormandPrince),
    "rolling_disk rk4": _disk(),
}


def test_every_registered_scheme_is_covered():
    assert {c.split("/")[0] for c in CASES} == set(schemes())


def _differences(batch, alone, b, backend):
    """``{name: max |batch row b - alone row 0|}`` of the arrays whose bits differ."""
    out = {}
    for name, a in batch.arrays().items():
        x, y = backend.to_host(a)[b], backend.to_host(getattr(alone, name))[0]
        if not np.array_equal(x, y, equal_nan=True):
            out[name] = float(np.abs(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64)).max())
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_body_alone_equals_the_same_body_in_a_batch_bit_for_bit(case, backend):
    build, inputs = CASES[case]
    sim = backend.simulated  # the simulator runs each thread in Python: a small batch
    n, steps = (5, 3) if sim else (40, 60)
    P = inputs(np.random.default_rng(20261126), n)
    sch, s, h = build(backend, P, slice(None))
    assert s.n == n
    alone = []
    for b in range(n):
        one, s1, _ = build(backend, P, slice(b, b + 1))
        alone.append((one, s1))
    bad = {b: d for b, (_, s1) in enumerate(alone) if (d := _differences(s, s1, b, backend))}
    assert not bad, f"{case}: at t = 0, {len(bad)} of {n} bodies differ from the batch: {bad}"
    check = range(n) if not sim else (0, n - 1)
    sch.advance(s, h, steps)
    bad = {}
    for b in check:
        one, s1 = alone[b]
        one.advance(s1, h, steps)
        assert (s1.t, s1.step) == (s.t, s.step)
        if d := _differences(s, s1, b, backend):
            bad[b] = d
    assert not bad, f"{case}: after {steps} steps, {len(bad)} of {len(check)} bodies differ from the batch: {bad}"
