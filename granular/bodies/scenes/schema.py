"""The ``[bodies]`` table of a scene file, first pass: pydantic models per scheme.

A scene with a ``[bodies]`` table runs one of the batched single-body schemes instead of a
particle system (``docs/scenes.md``, section ``[bodies]``). The models here are
discriminated on ``scheme`` and use ``extra="forbid"``: they check the scalar parameters,
the choices and the nested tables, and unknown keys are errors. Array-valued keys
(``inertia``, ``omega``, ``orientation``, ...), which may be given once (shared by every
body) or as a list with one entry per body, are typed ``Any`` here and checked by
:mod:`granular.bodies.scenes.config`, which also runs this pass and reports the problems of
both at once as ``(path, message)`` pairs with paths starting ``bodies.``.
"""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ...checks import field_path, schema_message

#: Largest batch a scene may ask for.
MAX_BODIES = 10_000_000
#: Tolerance of ``| |q| - 1 |`` for quaternions given in a scene (they are then normalised).
UNIT_TOL = 1e-9
#: Schemes implemented in modules that may be missing in an installation: scheme -> module.
OPTIONAL_MODULES = {
    "livens": ("granular.bodies.livens.rigid", "granular.bodies.livens.comparators"),
    "rolling_ball": ("granular.bodies.rolling_ball", "granular.bodies.rolling_ball.rails",
                     "granular.bodies.rolling_ball.integrators"),
}
SCHEMES = ("directors", "nontwisting", "ulvc", "livens", "rolling_ball")
#: Named load presets of paper 000 (Sect. 6): the follower moment m⊥ = -f(t)(M1 d1 + M2 d2).
LOAD_PRESETS = ("none", "case1", "case2", "case3")

Finite = Annotated[float, Field(allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Vec3 = Annotated[list[Finite], Field(min_length=3, max_length=3)]
PositiveVec3 = Annotated[list[Positive], Field(min_length=3, max_length=3)]
Iterations = Annotated[int, Field(ge=1, le=1000)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ----------------------------------------------------------------------------- tables


class RandomTable(_Strict):
    """``[bodies.random]``: seeded perturbation of the initial angular velocity."""

    seed: int = 0
    distribution: Literal["uniform", "normal"] = "normal"
    omega_scale: NonNegative


class _Common(_Strict):
    """Keys of every scheme. Array-valued keys are ``Any`` here and checked by
    :mod:`granular.bodies.scenes.config` (shared value or one entry per body)."""

    count: Annotated[int, Field(ge=1, le=MAX_BODIES)] | None = None
    spacing: Positive = 3.0
    orientation: Any = None
    rotvec: Any = None
    omega: Any = None
    omega_body: Any = None
    random: RandomTable | None = None


class MomentTable(_Strict):
    """``[bodies.moment]``: a user moment ``f(t) (spatial + Σ_k material_k d_k)`` (68)."""

    material: Annotated[list[Finite], Field(min_length=2, max_length=3)] | None = None
    spatial: Vec3 | None = None
    time: Literal["constant", "ramp"] = "constant"


class DirectorsTable(_Common):
    """``scheme = "directors"``: the standard rigid body in directors, paper 000 (85)-(91)."""

    scheme: Literal["directors"]
    variant: Literal["em", "dla"] = "em"
    inertia: Any
    load: Any = "none"
    moment: MomentTable | None = None
    newton_rtol: Positive = 1e-10
    newton_max_iter: Iterations = 25


class NonTwistingTable(DirectorsTable):
    """``scheme = "nontwisting"``: the body on the non-twisting frame, paper 000 (92)-(110)."""

    scheme: Literal["nontwisting"]
    a: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0


class ULVCTable(_Common):
    """``scheme = "ulvc"``: unified local velocity coordinates, paper 001."""

    scheme: Literal["ulvc"]
    variant: Literal["rk4", "reference"] = "rk4"
    stages: Literal["munthe-kaas", "paper"] = "munthe-kaas"
    mass: Any = 1.0
    inertia: Any
    projection: Literal["hexahedral", "tetrahedral"] = "hexahedral"
    l: PositiveVec3 = [1.0, 1.0, 1.0]
    position: Any = None
    velocity: Any = None
    gravity: Vec3 | None = None
    torque_body: Vec3 | None = None
    torque_spatial: Vec3 | None = None


class LivensTable(_Common):
    """``scheme = "livens"``: unit-quaternion rigid body with Livens' principle, paper 002."""

    scheme: Literal["livens"]
    variant: Literal["eml", "reml", "null-eml", "mpl", "emh", "mph"] = "eml"
    inertia: Any
    mass: Any = 0.0
    center_of_mass: Any = None
    gravity: Vec3 = [0.0, 0.0, 0.0]
    position: Any = None
    newton_rtol: Positive = 1e-9
    newton_max_iter: Iterations = 25


class _PlanarRail(_Strict):
    center: Vec3 = [0.0, 0.0, 0.0]
    u: Vec3 = [1.0, 0.0, 0.0]
    v: Vec3 = [0.0, 0.0, 1.0]


class CircleRailTable(_PlanarRail):
    kind: Literal["circle"]
    radius: Positive


class EllipseRailTable(_PlanarRail):
    kind: Literal["ellipse"]
    a: Positive
    b: Positive


class FigureEightRailTable(_PlanarRail):
    kind: Literal["figure_eight"]
    a: Positive
    b: Positive


class LineRailTable(_Strict):
    kind: Literal["line"]
    direction: Vec3
    center: Vec3 = [0.0, 0.0, 0.0]


class ConstantSpeedTable(_Strict):
    kind: Literal["constant_speed"]
    theta0: Finite = 0.0
    speed: Finite


class RestTable(_Strict):
    kind: Literal["rest"]
    theta0: Finite = 0.0


class SinusoidalTable(_Strict):
    kind: Literal["sinusoidal"]
    amplitude: Finite
    frequency: Finite
    phase: Finite = 0.0
    center: Finite = 0.0


RailTable = Annotated[
    Union[CircleRailTable, EllipseRailTable, FigureEightRailTable, LineRailTable], Field(discriminator="kind")
]
ActuationTable = Annotated[Union[ConstantSpeedTable, RestTable, SinusoidalTable], Field(discriminator="kind")]
RAIL_KINDS = ("circle", "ellipse", "figure_eight", "line")
ACTUATION_KINDS = ("constant_speed", "rest", "sinusoidal")


class MassTable(_Strict):
    """``[[bodies.masses]]``: a point mass on a rail fixed in the ball, moved by ``θ(t)``."""

    mass: Positive
    rail: RailTable
    actuation: ActuationTable


class RollingBallTable(_Common):
    """``scheme = "rolling_ball"``: ball rolling on a plane, actuated by internal masses, paper 004."""

    scheme: Literal["rolling_ball"]
    variant: Literal["rk4"] = "rk4"
    radius: Positive = 1.0
    shell_mass: Positive = 1.0
    inertia: Any
    shell_com: Vec3 = [0.0, 0.0, 0.0]
    gravity: NonNegative = 9.81
    external_force: Vec3 | None = None
    masses: list[MassTable] = []
    xy: Any = None


BodiesTable = Annotated[
    Union[DirectorsTable, NonTwistingTable, ULVCTable, LivensTable, RollingBallTable], Field(discriminator="scheme")
]
_ADAPTER = TypeAdapter(BodiesTable)
_TAGS = set(SCHEMES) | set(RAIL_KINDS) | set(ACTUATION_KINDS)

def scheme_unavailable(scheme: str) -> str | None:
    """Why ``scheme`` cannot run in this installation (its module does not import), or None."""
    for mod in OPTIONAL_MODULES.get(scheme, ()):
        try:
            importlib.import_module(mod)
        except Exception as exc:  # a module still being written may fail in any way
            return f"{mod} could not be imported ({type(exc).__name__}: {exc})"
    return None


# ----------------------------------------------------------------------------- errors


def _inserted(k, loc) -> bool:
    """The tags pydantic inserts for the discriminated unions (the scheme first, then a
    rail's or an actuation's kind) and validator names (e.g. ``function-after[...]``)."""
    part = loc[k]
    if (k == 0 and part in SCHEMES) or (k > 0 and loc[k - 1] in ("rail", "actuation") and part in _TAGS):
        return True
    return "[" in str(part)


def _path(loc) -> str:
    """``bodies.a.b[1]`` from a pydantic location."""
    return field_path(loc, root="bodies", skip=_inserted)


def _message(err) -> str:
    kind = err["type"]
    if kind == "union_tag_not_found":
        tags = ACTUATION_KINDS if err["loc"][-1:] == ("actuation",) else RAIL_KINDS
        return f"required field 'kind' is missing; allowed: {', '.join(repr(t) for t in tags)}"
    if kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        key = str(ctx.get("discriminator", "kind")).strip("'")
        return f"unknown {key} {ctx.get('tag')!r}; allowed: {ctx.get('expected_tags')}"
    return schema_message(err, "the schema for this scheme")


def make_rail(R, r):
    """The :mod:`granular.bodies.rolling_ball.rails` object of a rail table (module ``R``)."""
    if r.kind == "circle":
        return R.CircleRail(r.radius, center=r.center, u=r.u, v=r.v)
    if r.kind == "ellipse":
        return R.EllipseRail(r.a, r.b, center=r.center, u=r.u, v=r.v)
    if r.kind == "figure_eight":
        return R.FigureEightRail(r.a, r.b, center=r.center, u=r.u, v=r.v)
    return R.LineRail(r.direction, center=r.center)


def make_actuation(R, a):
    """The actuation object of an actuation table (module ``R`` = :mod:`granular.bodies.rolling_ball.rails`)."""
    if a.kind == "constant_speed":
        return R.ConstantSpeed(a.theta0, a.speed)
    if a.kind == "rest":
        return R.at_rest(a.theta0)
    return R.Sinusoidal(a.amplitude, a.frequency, a.phase, a.center)
