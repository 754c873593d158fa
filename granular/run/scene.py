"""Scene files: a TOML schema, validated field by field, turned into a model.

The schema is documented in ``docs/scenes.md``; the paper cases live in ``scenes/``.
Every bad field gives one line naming its path (``particles[0].radius``), the value and
what is allowed; unknown keys are errors, so a typo never passes silently. Semantic
checks (group names, bond families, overlaps, counts) follow the same format.

    scene = load_scene("scenes/torus_impact.toml")     # SceneError on bad input
    model, run = build_model(scene, backend="cpu")     # the Model and the [run] table
"""

from __future__ import annotations

import functools
import math
import os
import tomllib
from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from ..backend import get_backend
from ..bodies.scenes.validate import validate_bodies
from ..errors import SceneError
from ..particles.health import ENERGY_TOLERANCE
from ..particles.builder import ModelBuilder
from ..particles.feeds import Box, Cluster, Cylinder, Insertion, Outlet, Surface
from ..particles.forces.meshes import TriangleMesh
from ..particles.packing import Specimen, dense_packing
from ..particles.placement import near_pairs, overlap_problem, wall_problem
from ..particles.shapes import PackingError, add_tori, add_torus, random_packing
from ..particles.strengths import draw_strengths
from ..resources import NEIGHBOR_CAPACITY, ResourceError, check_memory
from .scene_contacts import contact_errors
from .scene_errors import schema_errors

#: Largest number of particles a scene may ask for (a 10^8-particle state needs ~20 GB).
MAX_PARTICLES = 100_000_000

Finite = Annotated[float, Field(allow_inf_nan=False)]
Vec3 = Annotated[list[Finite], Field(min_length=3, max_length=3)]
Quat = Annotated[list[Finite], Field(min_length=4, max_length=4)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ----------------------------------------------------------------------------- tables


class RunTable(_Strict):
    """``[run]``: integrator, step, duration, output cadence, backend and precision, and
    what joins particles into the fragments the run writes (``fragments``: intact bonds,
    or touching contacts too)."""

    integrator: Literal["exact", "verlet", "campello"] = "verlet"
    dt: Positive
    duration: Positive | None = None
    steps: Annotated[int, Field(gt=0)] | None = None
    output_every: Positive | None = None
    series_every: Positive | None = None
    checkpoint_every: Positive | None = None
    backend: Literal["auto", "cpu", "gpu"] = "auto"
    precision: Literal["float64", "float32"] = "float64"
    allow_unstable_step: bool = False
    energy_tolerance: Positive = ENERGY_TOLERANCE
    graphs: bool = True  # replay blocks of steps as CUDA graphs on a GPU (false: launch every kernel)
    fragments: Literal["bonds", "contacts"] = "bonds"  # "contacts": touching particles join fragments too
    feed_every: Positive | None = None  # time between the edits of [[insert]] and [[outlets]] (default 100 steps)

    @model_validator(mode="after")
    def _one_length(self):
        if (self.duration is None) == (self.steps is None):
            raise ValueError("give exactly one of duration (time) or steps")
        return self


class BondFamily(_Strict):
    """``[bond_families.NAME]``: paper 003's binder (``form = "paper"``: stiffnesses ``ka``,
    ``ks``, ``km`` [M L²/T²]) or parallel bonds (``form = "parallel"``: the binder's
    ``young`` and ``shear_modulus`` or ``poisson``, ``radius_ratio``, and strengths:
    ``tensile_strength`` and ``shear_strength``, optionally scattered per bond by
    ``strength_law`` ``"weibull"`` (``strength_modulus``) or ``"normal"``
    (``strength_cov``) with ``strength_seed``, or the combined criterion's
    ``critical_force = [F_nc, F_sc]`` and ``critical_moment = [M_tc, M_bc]``); breakage
    thresholds ``strain_max``, ``angle_max`` for either."""

    form: Literal["paper", "parallel"] = "paper"
    ka: NonNegative = 0.0
    ks: NonNegative = 0.0
    km: NonNegative = 0.0
    strain_max: Annotated[float, Field(gt=0)] = math.inf
    angle_max: Annotated[float, Field(gt=0)] = math.inf
    young: Positive | None = None
    shear_modulus: Positive | None = None
    poisson: Annotated[float, Field(gt=-1.0, le=0.5, allow_inf_nan=False)] | None = None
    radius_ratio: Positive = 1.0
    tensile_strength: Annotated[float, Field(gt=0)] = math.inf
    shear_strength: Annotated[float, Field(gt=0)] = math.inf
    strength_law: Literal["weibull", "normal"] | None = None
    strength_modulus: Positive | None = None
    strength_cov: NonNegative | None = None
    strength_seed: Annotated[int, Field(ge=0)] = 0
    critical_force: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=2, max_length=2)] | None = None
    critical_moment: Annotated[list[Annotated[float, Field(gt=0)]], Field(min_length=2, max_length=2)] | None = None

    @model_validator(mode="after")
    def _one_form(self):
        given = self.model_fields_set
        paper, parallel = {"ka", "ks", "km"}, set(BondFamily.model_fields) - {"form", "ka", "ks", "km", "strain_max",
                                                                              "angle_max"}  # fmt: skip
        if self.form == "paper" and given & parallel:
            raise ValueError(f"{sorted(given & parallel)} belong to form = \"parallel\"; this family has form = \"paper\"")
        if self.form == "parallel":
            if given & paper:
                raise ValueError(f"{sorted(given & paper)} belong to form = \"paper\"; a parallel family takes young, "
                                 "shear_modulus or poisson, radius_ratio and strengths")  # fmt: skip
            if self.young is None or (self.shear_modulus is None) == (self.poisson is None):
                raise ValueError("a parallel bond family needs young and exactly one of shear_modulus, poisson")
            combined = self.critical_force is not None or self.critical_moment is not None
            if combined and {"tensile_strength", "shear_strength"} & given:
                raise ValueError("critical_force, critical_moment replace tensile_strength and shear_strength")
            if self.strength_law == "weibull" and self.strength_modulus is None:
                raise ValueError("strength_law = \"weibull\" needs strength_modulus")
            if self.strength_law == "normal" and self.strength_cov is None:
                raise ValueError("strength_law = \"normal\" needs strength_cov")
        return self

    def add(self, builder, pairs):
        """Bond ``pairs`` of ``builder`` with this family; returns the bond ids."""
        if self.form == "paper":
            return builder.add_bonds(pairs, ka=self.ka, ks=self.ks, km=self.km, strain_max=self.strain_max,
                                     angle_max=self.angle_max)  # fmt: skip
        strengths = {}
        if self.critical_force is None and self.critical_moment is None:
            for k, name in enumerate(("tensile_strength", "shear_strength")):
                mean = getattr(self, name)
                if self.strength_law is not None and math.isfinite(mean):
                    mean = draw_strengths(mean, len(pairs), self.strength_law, modulus=self.strength_modulus,
                                          cov=self.strength_cov, seed=self.strength_seed + k)  # fmt: skip
                strengths[name] = mean
        return builder.add_parallel_bonds(pairs, self.young, shear_modulus=self.shear_modulus, poisson=self.poisson,
                                          radius_ratio=self.radius_ratio, critical_force=self.critical_force,
                                          critical_moment=self.critical_moment, strain_max=self.strain_max,
                                          angle_max=self.angle_max, **strengths)  # fmt: skip


class MaterialTable(_Strict):
    """``[materials.NAME]``: a material of a contact law with materials (``docs/contacts.md``):
    ``young`` for ``hertz-mindlin`` and ``jkr``, ``stiffness`` for ``linear``."""

    young: Positive | None = None
    poisson: Annotated[float, Field(gt=-1.0, le=0.5, allow_inf_nan=False)] = 0.3
    density: Positive = 1.0
    restitution: Annotated[float, Field(ge=0.01, le=1.0, allow_inf_nan=False)] = 1.0
    friction: NonNegative = 0.0
    rolling_friction: NonNegative = 0.0
    twisting_friction: NonNegative = 0.0
    stiffness: Positive | None = None
    tangential_stiffness: Positive | None = None
    tangential_damping: NonNegative = 0.0
    surface_energy: NonNegative = 0.0
    damping: NonNegative = 0.0


class MaterialPair(_Strict):
    """``[[material_pairs]]``: a pair of materials with its own restitution and friction
    coefficients in place of the mixing rule (``ModelBuilder.set_pair``)."""

    materials: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=2, max_length=2)]
    restitution: Annotated[float, Field(ge=0.01, le=1.0, allow_inf_nan=False)] | None = None
    friction: NonNegative | None = None
    rolling_friction: NonNegative | None = None
    twisting_friction: NonNegative | None = None
    surface_energy: NonNegative | None = None

    def values(self) -> dict:
        return {k: v for k, v in self.model_dump().items() if k != "materials" and v is not None}


class _Group(_Strict):
    name: Annotated[str, Field(min_length=1)] | None = None
    template: bool = False  # true: not placed at the start; a cluster [[insert]] puts in copies of (by name)
    mass: Positive = 1.0
    inertia: Positive = 1.0
    material: Annotated[str, Field(min_length=1)] | None = None
    velocity: Vec3 = [0.0, 0.0, 0.0]
    omega: Vec3 = [0.0, 0.0, 0.0]


class ExplicitParticles(_Group):
    """``kind = "explicit"``: positions listed; per-particle arrays allowed."""

    kind: Literal["explicit"]
    x: Annotated[list[Vec3], Field(min_length=1)]
    v: list[Vec3] | None = None
    w: list[Vec3] | None = None
    radius: Positive | list[Positive] = Field(0.5, description="a number > 0 (the radius of every particle) or a "
                                              "list of numbers > 0, one per particle")
    orientation: list[Quat] | None = None
    rotvec: list[Vec3] | None = None


class LatticeParticles(_Group):
    """``kind = "lattice"``: a simple-cubic block of ``shape`` particles."""

    kind: Literal["lattice"]
    shape: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=3, max_length=3)]
    spacing: Positive = 1.0
    origin: Vec3 = [0.0, 0.0, 0.0]
    radius: Positive | None = None


class TorusParticles(_Group):
    """``kind = "torus"``: the particle-binder ring of paper 003, Sect. 4.1."""

    kind: Literal["torus"]
    n: Annotated[int, Field(ge=3)] = 80
    ring_diameter: Positive = 3.0
    center: Vec3 = [0.0, 0.0, 0.0]
    normal: Vec3 = [0.0, 0.0, 1.0]
    bonds: str | None = None


class RandomParticles(_Group):
    """``kind = "random"``: non-overlapping spheres placed at random in a box."""

    kind: Literal["random"]
    count: Annotated[int, Field(ge=1)]
    box: Annotated[list[Vec3], Field(min_length=2, max_length=2)]
    radius: Positive | Annotated[list[Positive], Field(min_length=2, max_length=2)] = Field(
        0.5, description="a number > 0 (one radius) or a list [low, high] of two numbers > 0 (radii drawn "
        "uniformly between them)")
    seed: int = 0
    max_attempts: Annotated[int, Field(ge=1)] = 200

    @field_validator("box")
    @classmethod
    def _box(cls, b):
        if not all(hi > lo for lo, hi in zip(b[0], b[1])):
            raise ValueError("box must be [[x0, y0, z0], [x1, y1, z1]] with x1 > x0, y1 > y0, z1 > z0")
        return b


class AgglomerateParticles(_Group):
    """``kind = "agglomerate"``: a dense random packing of spheres in a sphere, cylinder or
    box (:func:`granular.particles.packing.dense_packing`), made here from ``count``,
    ``shape``, ``size``, ``radius``, ``distribution`` and ``seed``, or read from a
    ``specimen`` file (:meth:`~granular.particles.packing.Specimen.save`; a relative path
    is taken from the scene file's folder), its container's centre at ``center``. Bond its grains with
    ``[[bonds]] kind = "touching"``. A packing made here is made on the run's backend (on
    a GPU, on the device: the same to round-off as the CPU's, not bit for bit; a specimen
    file gives the same grains everywhere)."""

    kind: Literal["agglomerate"]
    specimen: Annotated[str, Field(min_length=1)] | None = None
    count: Annotated[int, Field(ge=1)] | None = None
    shape: Literal["sphere", "cylinder", "box"] = "sphere"
    size: Annotated[list[Positive], Field(min_length=1, max_length=3)] | None = None
    radius: Positive | Annotated[list[Positive], Field(min_length=2, max_length=2)] = Field(
        0.5, description="a number > 0 (one radius) or a list [low, high] of two numbers > 0 (radii drawn from "
        "the distribution between them)")
    distribution: Literal["uniform", "lognormal"] = "uniform"
    seed: Annotated[int, Field(ge=0)] = 0
    center: Vec3 = [0.0, 0.0, 0.0]

    @model_validator(mode="after")
    def _made_or_read(self):
        made = {"count", "shape", "size", "radius", "distribution", "seed"} & self.model_fields_set
        if (self.specimen is None) == (self.count is None):
            raise ValueError("give either specimen (a file) or count (a packing made here)")
        if self.specimen is not None and made:
            raise ValueError(f"{sorted(made)} describe a packing made here; a specimen file has its own")
        return self


class ToriParticles(_Group):
    """``kind = "tori"``: ``count`` tori at random non-overlapping places and orientations."""

    kind: Literal["tori"]
    count: Annotated[int, Field(ge=1)]
    box: Annotated[list[Vec3], Field(min_length=2, max_length=2)]
    n: Annotated[int, Field(ge=3)] = 80
    ring_diameter: Positive = 3.0
    seed: int = 0
    bonds: str | None = None

    @field_validator("box")
    @classmethod
    def _box(cls, b):
        if not all(hi > lo for lo, hi in zip(b[0], b[1])):
            raise ValueError("box must be [[x0, y0, z0], [x1, y1, z1]] with x1 > x0, y1 > y0, z1 > z0")
        return b


ParticleGroup = Annotated[
    Union[ExplicitParticles, LatticeParticles, TorusParticles, RandomParticles, ToriParticles, AgglomerateParticles],
    Field(discriminator="kind"),
]


class ExplicitBonds(_Strict):
    kind: Literal["explicit"]
    pairs: Annotated[list[Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=2, max_length=2)]],
                     Field(min_length=1)]  # fmt: skip
    family: str


class NeighborBonds(_Strict):
    """Bond every pair of particles whose centres are at most ``cutoff`` apart."""

    kind: Literal["neighbors"]
    cutoff: Positive
    family: str
    groups: list[str] | None = None


class TouchingBonds(_Strict):
    """Bond every pair of particles whose centres are at most ``factor`` times the sum
    of their radii apart (``factor`` >= 1; a little above 1 for a packing whose grains
    touch within a tolerance)."""

    kind: Literal["touching"]
    factor: Annotated[float, Field(ge=1.0, le=2.0)] = 1.0
    family: str
    groups: list[str] | None = None


BondSet = Annotated[Union[ExplicitBonds, NeighborBonds, TouchingBonds], Field(discriminator="kind")]


class ContactsTable(_Strict):
    law: Literal["hertz", "hertz-mindlin", "linear", "jkr"] | None = None
    kpp: NonNegative | None = None
    velocity: Literal["predicted", "half"] = "predicted"
    bonded: bool = True
    allow_initial_overlap: bool = False
    search: Literal["cells", "all-pairs"] = "cells"
    skin: NonNegative | None = None


VelocityRow = Annotated[list[Finite], Field(min_length=4, max_length=4)]


class _Moving(_Strict):
    """The prescribed rigid motion of a wall or a mesh (``ModelBuilder.add_wall``): a
    constant velocity or rows ``[t, vx, vy, vz]``, a steady rotation about ``center``."""

    velocity: Vec3 | Annotated[list[VelocityRow], Field(min_length=1)] | None = Field(
        None, description="3 numbers [vx, vy, vz] (a constant velocity) or rows [[t, vx, vy, vz], ...] (a table, "
        "times strictly increasing)")  # fmt: skip
    angular_velocity: Vec3 | None = None
    center: Vec3 | None = None


class Wall(_Moving):
    normal: Vec3
    offset: Finite = 0.0
    k: NonNegative | None = None
    material: Annotated[str, Field(min_length=1)] | None = None
    allow_initial_overlap: bool = False
    name: Annotated[str, Field(min_length=1)] | None = None  # what [[stages]] call it (add, remove, motions)
    present: bool = True  # false: not in the model until a stage adds it

    @field_validator("normal")
    @classmethod
    def _normal(cls, n):
        if math.hypot(*n) == 0.0:
            raise ValueError("normal has zero length")
        return n


class RectangleShape(_Strict):
    """A rectangle ``center + s u + t v`` (``|s|, |t| <= 1``) in ``divisions`` squares."""

    kind: Literal["rectangle"]
    center: Vec3 = [0.0, 0.0, 0.0]
    u: Vec3
    v: Vec3
    divisions: Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(min_length=2, max_length=2)] = [1, 1]


class BoxShape(_Strict):
    """The surface of the box ``lo <= x <= hi``."""

    kind: Literal["box"]
    lo: Vec3
    hi: Vec3


class CylinderShape(_Strict):
    """A faceted cylinder about ``axis`` through ``center``, closed by flat caps (a drum)."""

    kind: Literal["cylinder"]
    radius: Positive
    length: Positive
    segments: Annotated[int, Field(ge=3, le=100000)] = 48
    center: Vec3 = [0.0, 0.0, 0.0]
    axis: Vec3 = [0.0, 0.0, 1.0]
    caps: bool = True


class AnnulusShape(_Strict):
    """A flat ring between two circles about ``axis`` through ``center``: a plate with a
    round hole (a hopper's bottom and outlet)."""

    kind: Literal["annulus"]
    outer: Positive
    inner: Positive
    segments: Annotated[int, Field(ge=3, le=100000)] = 64
    center: Vec3 = [0.0, 0.0, 0.0]
    axis: Vec3 = [0.0, 0.0, 1.0]


MeshShape = Annotated[Union[RectangleShape, BoxShape, CylinderShape, AnnulusShape], Field(discriminator="kind")]


class MeshTable(_Moving):
    """A rigid triangle mesh (``ModelBuilder.add_mesh``): a file read by meshio (a relative
    path from the scene file's folder) in ``units``, or a ``shape``; then scaled, rotated
    (``[axis_x, axis_y, axis_z, degrees]``) and translated."""

    file: Annotated[str, Field(min_length=1)] | None = None
    shape: MeshShape | None = Field(None, description="an inline table with kind = 'rectangle', 'box' or 'cylinder'")
    units: Literal["m", "cm", "mm", "um", "in", "ft"] = "m"
    scale: Annotated[float, Field(gt=0, allow_inf_nan=False)] | Vec3 = Field(
        1.0, description="a number or 3 numbers [sx, sy, sz]")
    rotation: Annotated[list[Finite], Field(min_length=4, max_length=4)] | None = None
    translation: Vec3 = [0.0, 0.0, 0.0]
    k: NonNegative | None = None
    material: Annotated[str, Field(min_length=1)] | None = None
    smooth_angle: Annotated[float, Field(gt=0.0, lt=90.0)] = 20.0
    allow_initial_overlap: bool = False
    name: Annotated[str, Field(min_length=1)] | None = None  # what [[stages]] call it (add, remove, motions)
    present: bool = True  # false: not in the model until a stage adds it

    @model_validator(mode="after")
    def _one_source(self):
        if (self.file is None) == (self.shape is None):
            raise ValueError("give either file (a mesh file) or shape (an inline table), one of them")
        return self

    def triangles(self, folder):
        """The :class:`~granular.TriangleMesh` this table describes, transformed."""
        sh = self.shape
        if sh is None:
            path = self.file if os.path.isabs(self.file) else os.path.join(folder or os.getcwd(), self.file)
            mesh = TriangleMesh.read(path, units=self.units)
        elif sh.kind == "rectangle":
            mesh = TriangleMesh.rectangle(sh.center, sh.u, sh.v, divisions=sh.divisions)
        elif sh.kind == "box":
            mesh = TriangleMesh.box(sh.lo, sh.hi)
        elif sh.kind == "annulus":
            mesh = TriangleMesh.annulus(sh.outer, sh.inner, sh.segments, center=sh.center, axis=sh.axis)
        else:
            mesh = TriangleMesh.cylinder(sh.radius, sh.length, sh.segments, center=sh.center, axis=sh.axis,
                                         caps=sh.caps)  # fmt: skip
        return mesh.transformed(self.scale, self.rotation, self.translation)


class Pendulum(_Strict):
    group: str
    rho0: Vec3 = [0.0, 0.0, 1.0]
    g: Positive = 1.0
    vertical: Vec3 = [0.0, 0.0, 1.0]


class FieldsTable(_Strict):
    gravity: Vec3 | None = None
    pendulum: list[Pendulum] = []


Span = Annotated[list[Finite], Field(min_length=2, max_length=2)]


class PeriodicTable(_Strict):
    """``[periodic]``: the box ``[lo, hi)`` along each periodic axis
    (:meth:`~granular.particles.builder.ModelBuilder.set_periodic`)."""

    x: Span | None = Field(None, description="[lo, hi] of the periodic box along x, or left out: not periodic")
    y: Span | None = Field(None, description="[lo, hi] of the periodic box along y, or left out: not periodic")
    z: Span | None = Field(None, description="[lo, hi] of the periodic box along z, or left out: not periodic")


class CylinderRegion(_Strict):
    """A cylinder: its ``center``, ``axis`` (default z), ``radius`` and ``length``."""

    center: Vec3
    axis: Vec3 = [0.0, 0.0, 1.0]
    radius: Positive
    length: Positive


Box2 = Annotated[list[Vec3], Field(min_length=2, max_length=2)]


class SurfaceRegion(_Strict):
    """The layer of thickness ``depth`` over the faces of the ``[[meshes]]`` table named
    ``mesh`` (on the side its normals point to), where it is at t = 0; the mesh may be
    ``present = false``, a region only."""

    mesh: Annotated[str, Field(min_length=1)]
    depth: Positive


class InsertTable(_Strict):
    """``[[insert]]``: particles poured in during the run
    (:class:`~granular.particles.feeds.Insertion`), into a ``box`` ``[lo, hi]`` or a
    ``cylinder``: spheres of ``radius`` and ``material`` (or ``density``), or copies of
    the bonded ``cluster``, a ``[[particles]]`` group (with its bonds) marked
    ``template = true``."""

    name: Annotated[str, Field(min_length=1)] | None = None
    box: Box2 | None = Field(None, description="[[lo], [hi]]: the region's corners (or give cylinder or surface)")
    cylinder: CylinderRegion | None = None
    surface: SurfaceRegion | None = None
    radius: Positive | Annotated[list[Positive], Field(min_length=2, max_length=2)] | None = Field(
        None, description="a number > 0, or [lo, hi]: radii drawn uniformly between them (or give cluster)")
    material: Annotated[str, Field(min_length=1)] | None = None
    density: Positive | None = None
    cluster: Annotated[str, Field(min_length=1)] | None = None  # a [[particles]] group with template = true
    rate: Positive | None = None
    mass_rate: Positive | None = None
    total: Annotated[int, Field(ge=1)] | None = None
    start: NonNegative = 0.0
    stop: Positive | None = None
    velocity: Vec3 = [0.0, 0.0, 0.0]
    orientation: Literal["random", "identity"] = "random"
    seed: Annotated[int, Field(ge=0)] = 0
    attempts: Annotated[int, Field(ge=1)] = 50
    gap: NonNegative = 0.0


class OutletTable(_Strict):
    """``[[outlets]]``: particles whose centres are in a ``box`` or ``cylinder`` (or, with
    ``inside = false``, outside it) leave the run (:class:`~granular.particles.feeds.Outlet`)."""

    name: Annotated[str, Field(min_length=1)] | None = None
    box: Box2 | None = Field(None, description="[[lo], [hi]]: the region's corners (or give cylinder or surface)")
    cylinder: CylinderRegion | None = None
    surface: SurfaceRegion | None = None
    inside: bool = True


class StageMotion(_Moving):
    """``[[stages.motions]]``: the wall or mesh ``name`` moves so from the stage's start
    (the velocity table's times and the rotation's ``center`` counted from then); a
    velocity of zeros stops it."""

    name: Annotated[str, Field(min_length=1)]


class StageTable(_Strict):
    """``[[stages]]``: one stage of the run: how long it lasts (``duration``, or ``until``
    an absolute time; ``kinetic_below``, ``until_inserted``, ``until_removed`` end it
    early), which ``[[insert]]`` and ``[[outlets]]`` (by name) act in it (default: every
    one), and what changes at its start: walls and meshes put in (``add``) or taken away
    (``remove``) by name, new motions (``[[stages.motions]]``), ``gravity``."""

    name: Annotated[str, Field(min_length=1)] | None = None
    duration: Positive | None = None
    until: Positive | None = None
    kinetic_below: Positive | None = None
    until_inserted: Annotated[int, Field(ge=1)] | None = None  # ends once this many particles entered in it
    until_removed: Annotated[int, Field(ge=1)] | None = None  # ends once this many particles left in it
    insert: list[str] | None = None
    outlets: list[str] | None = None
    add: list[str] = []  # walls and meshes (by name) put in at its start
    remove: list[str] = []  # walls and meshes (by name) taken away at its start
    motions: list[StageMotion] = []
    gravity: Vec3 | None = None  # the field from its start on


class Scene(_Strict):
    """A whole scene file."""

    name: str = "scene"
    description: str = ""
    run: RunTable
    particles: list[ParticleGroup] = []
    bodies: dict[str, Any] | None = None  # batched single-body schemes: granular.bodies.scenes
    materials: dict[str, MaterialTable] = {}
    material_pairs: list[MaterialPair] = []
    bond_families: dict[str, BondFamily] = {}
    bonds: list[BondSet] = []
    contacts: ContactsTable | None = None
    walls: list[Wall] = []
    meshes: list[MeshTable] = []
    periodic: PeriodicTable | None = Field(None, description="the periodic box: x, y, z as [lo, hi] (a table)")
    insert: list[InsertTable] = []
    outlets: list[OutletTable] = []
    stages: list[StageTable] = []
    fields: FieldsTable = FieldsTable()
    _folder: str | None = PrivateAttr(default=None)  # the scene file's folder (relative paths)


def _feed_region(table, path, scene=None, source="scene"):
    if sum(r is not None for r in (table.box, table.cylinder, table.surface)) != 1:
        raise SceneError([(path, "give the region as box = [[lo], [hi]], a cylinder table or a surface table, one "
                           "of them")])  # fmt: skip
    try:
        if table.box is not None:
            return Box(table.box[0], table.box[1])
        if table.surface is not None:
            names = [m.name or f"mesh {k}" for k, m in enumerate(scene.meshes)]
            if table.surface.mesh not in names:
                raise SceneError([(f"{path}.surface.mesh", f"no [[meshes]] table named {table.surface.mesh!r}; "
                                   f"named: {names}")])  # fmt: skip
            mt = scene.meshes[names.index(table.surface.mesh)]
            folder = scene._folder or (os.path.dirname(os.path.abspath(source)) if os.path.isfile(source) else None)
            return Surface(mt.triangles(folder), table.surface.depth)
        c = table.cylinder
        return Cylinder(c.center, c.axis, c.radius, c.length)
    except ValueError as exc:
        raise SceneError([(path, str(exc))]) from None


def scene_feeds(scene: Scene, source: str = "scene"):
    """The insertions and outlets of ``scene`` (``[[insert]]``, ``[[outlets]]``), or None
    for a scene without them (a closed run); :class:`SceneError` naming the table."""
    if not scene.insert and not scene.outlets:
        return None
    feeds, errors = [], []
    for k, t in enumerate(scene.outlets):
        try:
            feeds.append(Outlet(_feed_region(t, f"outlets[{k}]", scene, source), inside=t.inside))
        except SceneError as exc:
            errors.extend(exc.errors)
    clusters = {}
    for k, t in enumerate(scene.insert):
        try:
            if t.material is not None and t.material not in scene.materials:
                raise ValueError(f"material: no material named {t.material!r}; defined: {sorted(scene.materials)}")
            region = _feed_region(t, f"insert[{k}]", scene, source)
            cluster = None
            if t.cluster is not None:
                if t.cluster not in clusters:
                    clusters[t.cluster] = scene_cluster(scene, t.cluster, source)
                cluster = clusters[t.cluster]
            radius = t.radius if t.radius is None or isinstance(t.radius, (int, float)) else tuple(t.radius)
            feeds.append(Insertion(region, radius, t.material, cluster=cluster, density=t.density, rate=t.rate,
                                   mass_rate=t.mass_rate, total=t.total, start=t.start,
                                   stop=math.inf if t.stop is None else t.stop, velocity=t.velocity,
                                   orientation=t.orientation, seed=t.seed, attempts=t.attempts, gap=t.gap))  # fmt: skip
        except SceneError as exc:
            errors.extend(exc.errors)
        except ValueError as exc:
            errors.append((f"insert[{k}]", str(exc)))
    if errors:
        raise SceneError(errors, source)
    return feeds


def _insert_errors(scene: Scene, templates: set) -> list:
    """The ``[[insert]]`` tables' fields that do not fit together: a cluster names a
    template group and takes no radius, material or density; spheres need a radius."""
    errors = []
    for k, t in enumerate(scene.insert):
        if t.cluster is None:
            if t.radius is None:
                errors.append((f"insert[{k}].radius", "required: the spheres' radius (or give cluster, the name of a "
                               "template group)"))  # fmt: skip
            continue
        if t.cluster not in templates:
            errors.append((f"insert[{k}].cluster", f"no template group named {t.cluster!r} (a [[particles]] group "
                           f"with a name and template = true); template groups: {sorted(templates)}"))  # fmt: skip
        for name in ("radius", "material", "density"):
            if getattr(t, name) is not None:
                errors.append((f"insert[{k}].{name}", "a cluster's particles carry their own (the template group's); "
                               f"leave {name} out"))  # fmt: skip
    return errors


def scene_cluster(scene: Scene, name: str, source: str = "scene"):
    """The :class:`~granular.particles.feeds.Cluster` of the template group ``name``: its
    particles, built as the group says, and the bonds among them (its own, a torus's, and
    those of the ``[[bonds]]`` tables whose ``groups`` name it)."""
    group = next(g for g in scene.particles if g.name == name)
    bonds = [bs.model_copy(update={"groups": [name]}) for bs in scene.bonds
             if not isinstance(bs, ExplicitBonds) and bs.groups and name in bs.groups]  # fmt: skip
    alone = scene.model_copy(update={"particles": [group.model_copy(update={"template": False})], "bonds": bonds,
                                     "walls": [], "meshes": [], "insert": [], "outlets": [], "stages": [],
                                     "periodic": None, "fields": FieldsTable()})  # fmt: skip
    alone._folder = scene._folder
    try:
        b, _ = scene_builder(alone, source)
    except SceneError as exc:
        k = next(i for i, g in enumerate(scene.particles) if g.name == name)
        raise SceneError([(p.replace("particles[0]", f"particles[{k}]"), m) for p, m in exc.errors], source) from None
    return Cluster.from_builder(b)


def touching_pairs(x, radius, members, factor, period=None) -> np.ndarray:
    """Pairs ``i < j`` of ``members`` with ``|x_i - x_j| <= factor (r_i + r_j)``, sorted (in
    a periodic box ``period`` by the minimum image)."""
    xm, rm = x[members], radius[members]
    if len(members) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    cand, d = near_pairs(xm, 2.0 * factor * rm.max(), period)
    if not len(cand):
        return np.zeros((0, 2), dtype=np.int64)
    d = np.linalg.norm(d, axis=1)
    keep = cand[d <= factor * (rm[cand[:, 0]] + rm[cand[:, 1]])]
    pairs = np.sort(members[keep], axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


# ----------------------------------------------------------------------------- loading


def parse_scene(data: dict, source: str = "scene") -> Scene:
    """Validate a scene given as a dict (as from TOML); :class:`SceneError` lists every
    problem, one line per bad field, naming its path (``particles[0].radius``), what is
    allowed and the value given."""
    if not isinstance(data, dict) or not data:
        raise SceneError([("(top level)", "the scene is empty; it needs at least [run] and [[particles]]")], source)
    try:
        scene = Scene.model_validate(data)
    except ValidationError as exc:
        raise SceneError(schema_errors(exc, data, Scene), source) from None
    _check_references(scene, source)
    return scene


def load_scene(path) -> Scene:
    """Read and validate a TOML scene file."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise SceneError([("(file)", f"no such file: {path}")], str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise SceneError([("(syntax)", f"not valid TOML: {exc}")], str(path)) from None
    scene = parse_scene(data, str(path))
    scene._folder = os.path.dirname(os.path.abspath(path))
    return scene


def _check_references(scene: Scene, source: str) -> None:
    errors = []
    if scene.bodies is not None:
        if scene.particles or scene.bonds or scene.walls or scene.meshes or scene.contacts is not None:
            errors.append(("bodies", "a scene holds either [bodies] (single-body schemes) or particles, bonds, "
                           "contacts and walls, not both"))  # fmt: skip
        else:
            errors.extend(validate_bodies(scene.bodies))
        if scene.run.fragments != "bonds":
            errors.append(("run.fragments", "a [bodies] scene has no fragments; leave the key out"))
        if errors:
            raise SceneError(errors, source)
        return
    if not scene.particles:
        raise SceneError([("particles", "List should have at least 1 item (or give a [bodies] table)")], source)
    names = [g.name for g in scene.particles if g.name is not None]
    templates = {g.name for g in scene.particles if g.template and g.name is not None}
    dup = {n for n in names if names.count(n) > 1}
    for k, g in enumerate(scene.particles):
        if g.name in dup:
            errors.append((f"particles[{k}].name", f"group name {g.name!r} is used twice"))
        if g.template and g.name is None:
            errors.append((f"particles[{k}].name", "a template group (template = true) needs a name: the "
                           "cluster of an [[insert]] names it"))  # fmt: skip
        if isinstance(g, (TorusParticles, ToriParticles)) and g.bonds is not None:
            if g.bonds not in scene.bond_families:
                errors.append((f"particles[{k}].bonds", f"no bond family {g.bonds!r}; defined: {sorted(scene.bond_families)}"))
            elif scene.bond_families[g.bonds].form != "paper":
                errors.append((f"particles[{k}].bonds", f"bond family {g.bonds!r} is a parallel family; a torus takes "
                               "paper 003's binder (form = \"paper\")"))  # fmt: skip
    if all(g.template for g in scene.particles) and not errors:
        errors.append(("particles", "every group is a template (template = true); a run needs at least one "
                       "particle placed at the start"))  # fmt: skip
    for k, b in enumerate(scene.bonds):
        if b.family not in scene.bond_families:
            errors.append((f"bonds[{k}].family", f"no bond family {b.family!r}; defined: {sorted(scene.bond_families)}"))
        if isinstance(b, (NeighborBonds, TouchingBonds)):
            for gname in b.groups or []:
                if gname not in names:
                    errors.append((f"bonds[{k}].groups", f"no particle group named {gname!r}; named groups: {names}"))
    for k, p in enumerate(scene.fields.pendulum):
        if p.group not in names:
            errors.append((f"fields.pendulum[{k}].group", f"no particle group named {p.group!r}; named groups: {names}"))
        elif p.group in templates:
            errors.append((f"fields.pendulum[{k}].group", f"group {p.group!r} is a template (template = true): it is "
                           "not placed, a cluster [[insert]] puts in copies of it"))  # fmt: skip
    errors.extend(_insert_errors(scene, templates))
    errors.extend(contact_errors(scene))
    if scene.run.fragments == "contacts" and scene.contacts is None and not scene.materials:
        errors.append(("run.fragments", ('"contacts" joins touching particles through the neighbour list of the '
                                          "particle contacts, and the scene has none: give a [contacts] table or "
                                          '[materials] (a contact law), or count fragments by intact bonds '
                                          '(fragments = "bonds", the default)')))  # fmt: skip
    total = sum(_group_count(g) for g in scene.particles)
    if total > MAX_PARTICLES:
        errors.append(("particles", f"the scene asks for {total} particles; at most {MAX_PARTICLES} are allowed"))
    if errors:
        raise SceneError(errors, source)


def _group_count(g) -> int:
    if isinstance(g, ExplicitParticles):
        return len(g.x)
    if isinstance(g, LatticeParticles):
        return math.prod(g.shape)
    if isinstance(g, TorusParticles):
        return g.n
    if isinstance(g, ToriParticles):
        return g.n * g.count
    if isinstance(g, AgglomerateParticles) and g.specimen is not None:
        return 0  # known once the file is read (the model is checked again then)
    return g.count


# ----------------------------------------------------------------------------- building


def _per_particle(path, value, n, errors):
    if value is None:
        return None
    if len(value) != n:
        errors.append((path, f"has {len(value)} entries, expected one per particle ({n})"))
        return None
    return np.asarray(value, dtype=np.float64)


def _specimen(g: AgglomerateParticles, path: str, folder, backend="cpu"):
    """The packing of an agglomerate group, positions centred at ``g.center`` and spread
    by ``1 + max_overlap``: a packing relaxed to within its overlap tolerance becomes one
    whose grains touch within that tolerance but never overlap. A relative ``specimen``
    path is taken from ``folder`` (the scene file's; else the working directory). A
    packing made here is made on ``backend`` (the run's: on a GPU, on the device)."""
    try:
        if g.specimen is not None:
            where = g.specimen
            if folder is not None and not os.path.isabs(where):
                where = os.path.join(folder, where)
            spec = Specimen.load(where)
        else:
            radius = g.radius if isinstance(g.radius, float) else tuple(g.radius)
            spec = _packing(g.count, g.shape, None if g.size is None else tuple(g.size), radius, g.distribution,
                            g.seed, get_backend(backend).name)  # fmt: skip
    except PackingError as exc:
        field = "specimen" if g.specimen is not None else exc.field
        raise SceneError([(f"{path}.{field}", str(exc))]) from None
    # the container's centre at center
    return spec.x * (1.0 + spec.max_overlap) + np.asarray(g.center), spec.radius.copy()


@functools.lru_cache(maxsize=4)
def _packing(count, shape, size, radius, distribution, seed, backend):
    """:func:`dense_packing` of an agglomerate group, kept for the next group or replica
    that asks for the same one (a packing depends on its arguments only): the replicas of
    an ensemble share one packing instead of making it once each."""
    return dense_packing(count, shape, size=size, radius=radius, distribution=distribution, seed=seed,
                         backend=backend)  # fmt: skip


def _random_packing(g: RandomParticles, path: str):
    try:
        return random_packing(g.count, g.box, g.radius, seed=g.seed, max_attempts=g.max_attempts)
    except PackingError as exc:
        raise SceneError([(f"{path}.{exc.field}", str(exc))]) from None


def build_model(scene: Scene, backend=None, source: str = "scene", precision=None):
    """Fill a :class:`ModelBuilder` from ``scene`` and finalize it on ``backend`` (default:
    the scene's ``run.backend``). Returns ``(model, scene.run)``; :class:`SceneError` for
    problems only visible once particles exist (overlaps, bond distances)."""
    be = get_backend(backend or scene.run.backend)
    dtype = np.dtype(precision or scene.run.precision)
    _check_memory(scene, sum(_group_count(g) for g in scene.particles), _known_bonds(scene) + _lattice_bonds(scene),
                  be, dtype, source)  # fmt: skip
    b, n_bonds = scene_builder(scene, source, be)
    _check_memory(scene, b.particle_count, n_bonds, be, dtype, source)
    try:
        model = b.finalize(be, dtype=dtype)
    except ValueError as exc:
        raise SceneError([("(model)", str(exc))], source) from None
    return model, scene.run


def scene_builder(scene: Scene, source: str = "scene", backend="cpu"):
    """A :class:`ModelBuilder` filled from ``scene`` (not finalised) and its number of
    bonds; :class:`SceneError` for problems only visible once particles exist (overlaps,
    bond distances). :func:`build_model` finalises it; an ensemble of particle scenes
    joins one per replica (:meth:`ModelBuilder.replicas`). ``backend``: where packings
    of agglomerate groups are made."""
    n_bonds = _known_bonds(scene)
    b = ModelBuilder()
    errors = []
    groups = {}
    fam = scene.bond_families
    for name, m in scene.materials.items():
        try:
            b.add_material(name, **m.model_dump())
        except ValueError as exc:
            errors.append((f"materials.{name}", str(exc)))
    failed = {p.split(".", 1)[1] for p, _ in errors if p.startswith("materials.")}
    for k, pair in enumerate(scene.material_pairs):
        if failed & set(pair.materials):
            continue  # its material's own error says it
        try:
            b.set_pair(*pair.materials, **pair.values())
        except ValueError as exc:
            errors.append((f"material_pairs[{k}]", str(exc)))
    if errors:
        raise SceneError(errors, source)
    for k, g in enumerate(scene.particles):
        path = f"particles[{k}]"
        if g.template:
            continue  # not placed: a cluster [[insert]] puts in copies (scene_cluster)
        given = g.model_fields_set
        common = dict(mass=g.mass if "mass" in given or g.material is None else None,
                      inertia=g.inertia if "inertia" in given or g.material is None else None)  # fmt: skip
        if g.material is not None:
            common["material"] = g.material
        errors_before = len(errors)
        try:
            if isinstance(g, ExplicitParticles):
                n = len(g.x)
                v = _per_particle(path + ".v", g.v, n, errors)
                w = _per_particle(path + ".w", g.w, n, errors)
                radius = g.radius
                if isinstance(radius, list):
                    radius = _per_particle(path + ".radius", radius, n, errors)
                q = _per_particle(path + ".orientation", g.orientation, n, errors)
                rv = _per_particle(path + ".rotvec", g.rotvec, n, errors)
                if q is not None and rv is not None:
                    errors.append((path, "give orientation or rotvec, not both"))
                if len(errors) > errors_before:
                    continue
                ids = b.add_particles(np.asarray(g.x, float), v=g.velocity if v is None else v,
                                      omega=g.omega if w is None else w, orientation=q, rotvec=rv,
                                      radius=radius, **common)  # fmt: skip
            elif isinstance(g, LatticeParticles):
                idx = np.stack(np.meshgrid(*(np.arange(s) for s in g.shape), indexing="ij"), axis=-1).reshape(-1, 3)
                x = np.asarray(g.origin) + g.spacing * idx
                radius = g.radius if g.radius is not None else 0.5 * g.spacing
                ids = b.add_particles(x, v=g.velocity, omega=g.omega, radius=radius, **common)
            elif isinstance(g, TorusParticles):
                f = fam[g.bonds] if g.bonds else BondFamily()
                ids, _, _ = add_torus(b, g.n, g.ring_diameter, center=g.center, normal=g.normal,
                                      velocity=g.velocity, omega=g.omega, ka=f.ka, ks=f.ks, km=f.km,
                                      strain_max=f.strain_max, angle_max=f.angle_max, bonded=g.bonds is not None,
                                      **common)  # fmt: skip
            elif isinstance(g, ToriParticles):
                f = fam[g.bonds] if g.bonds else BondFamily()
                ids = add_tori(b, g.count, g.box, g.seed, g.n, g.ring_diameter, velocity=g.velocity, omega=g.omega,
                               ka=f.ka, ks=f.ks, km=f.km, strain_max=f.strain_max, angle_max=f.angle_max,
                               bonded=g.bonds is not None, **common)  # fmt: skip
            elif isinstance(g, AgglomerateParticles):
                folder = scene._folder or (os.path.dirname(os.path.abspath(source)) if os.path.isfile(source) else None)
                x, radii = _specimen(g, path, folder, backend)
                ids = b.add_particles(x, v=g.velocity, omega=g.omega, radius=radii, **common)
            else:
                x, radii = _random_packing(g, path)
                ids = b.add_particles(x, v=g.velocity, omega=g.omega, radius=radii, **common)
        except SceneError as exc:
            errors.extend(exc.errors)
            continue
        except ValueError as exc:
            errors.append((path, str(exc)))
            continue
        if g.name:
            groups[g.name] = ids
    if errors:
        raise SceneError(errors, source)

    period = None  # the box first: bonds by neighbourhood are found across its faces
    if scene.periodic is not None:
        try:
            b.set_periodic(scene.periodic.x, scene.periodic.y, scene.periodic.z)
            period = b._period_rows()
        except ValueError as exc:
            errors.append(("periodic", str(exc)))
    x_all = np.concatenate(b._x) if b._x else np.zeros((0, 3))
    r_all = np.concatenate(b._radius) if b._radius else np.zeros(0)
    for k, bs in enumerate(scene.bonds):
        f = fam[bs.family]
        path = f"bonds[{k}]"
        if isinstance(bs, ExplicitBonds):
            pairs = np.asarray(bs.pairs, dtype=np.int64)
        else:
            placed = [groups[n] for n in bs.groups if n in groups] if bs.groups else None
            if bs.groups and not placed:
                continue  # the bonds of template groups only (scene_cluster)
            members = np.concatenate(placed) if bs.groups else np.arange(len(x_all))
            if isinstance(bs, TouchingBonds):
                pairs = touching_pairs(x_all, r_all, members, bs.factor, period)
                what = f"no two particles are within {bs.factor} times the sum of their radii"
            else:
                found = near_pairs(x_all[members], bs.cutoff, period)[0]
                pairs = members[found] if len(found) else np.zeros((0, 2), dtype=np.int64)
                what = f"no pair of particles is within {bs.cutoff}"
            if not len(pairs):
                field = ".factor" if isinstance(bs, TouchingBonds) else ".cutoff"
                errors.append((path + field, f"{what}; no bonds were made"))
                continue
        try:
            f.add(b, pairs)
            n_bonds += 0 if isinstance(bs, ExplicitBonds) else len(pairs)
        except ValueError as exc:
            errors.append((path, str(exc)))
    if scene.contacts is not None:
        b.set_contacts(scene.contacts.kpp, bonded_contacts=scene.contacts.bonded, search=scene.contacts.search,
                       skin=scene.contacts.skin, velocity=scene.contacts.velocity,
                       allow_initial_overlap=scene.contacts.allow_initial_overlap, law=scene.contacts.law)  # fmt: skip
        errors.extend(_overlap_errors(x_all, r_all, scene.contacts.allow_initial_overlap, period))
    elif scene.materials:
        errors.extend(_overlap_errors(x_all, r_all, False, period))
    for k, w in enumerate(scene.walls):
        try:
            kpp = scene.contacts.kpp if scene.contacts is not None else None
            b.add_wall(w.normal, w.offset, k=w.k if w.k is not None else kpp, material=w.material,
                       allow_initial_overlap=w.allow_initial_overlap, velocity=w.velocity,
                       angular_velocity=w.angular_velocity, center=w.center, name=w.name,
                       present=w.present)  # fmt: skip
        except ValueError as exc:
            errors.append((f"walls[{k}]", str(exc)))
            continue
        if not w.allow_initial_overlap and w.present:
            errors.extend(_wall_errors(k, w, x_all, r_all))
    folder = scene._folder or (os.path.dirname(os.path.abspath(source)) if os.path.isfile(source) else None)
    for k, mt in enumerate(scene.meshes):
        try:
            kpp = scene.contacts.kpp if scene.contacts is not None else None
            b.add_mesh(mt.triangles(folder), material=mt.material, k=mt.k if mt.k is not None else kpp,
                       smooth_angle=mt.smooth_angle, allow_initial_overlap=mt.allow_initial_overlap,
                       velocity=mt.velocity, angular_velocity=mt.angular_velocity, center=mt.center, name=mt.name,
                       present=mt.present)  # fmt: skip
        except ValueError as exc:
            errors.append((f"meshes[{k}]", str(exc)))
    if any(st.add or st.remove or st.motions or st.gravity is not None for st in scene.stages):
        b.expect_changes()  # the series has the columns the stages' changes fill from the first row
    if scene.fields.gravity is not None:
        try:
            b.set_gravity(scene.fields.gravity)
        except ValueError as exc:
            errors.append(("fields.gravity", str(exc)))
    for k, p in enumerate(scene.fields.pendulum):
        try:
            b.add_pendulum(groups[p.group], rho0=p.rho0, g=p.g, vertical=p.vertical)
        except ValueError as exc:
            errors.append((f"fields.pendulum[{k}]", str(exc)))
    if errors:
        raise SceneError(errors, source)
    return b, n_bonds


def _overlap_errors(x, r, allowed, period=None) -> list:
    """Coincident particles (always an error with contacts: their contact has no direction)
    and, unless ``allowed``, overlapping ones (:func:`~granular.particles.placement.overlap_problem`;
    across the boundary of a periodic box ``period``)."""
    problem = overlap_problem(x, r, allowed, period=period)
    if problem is None:
        return []
    return [("particles" if problem[0] == "coincident" else "contacts.allow_initial_overlap", problem[1])]


def _wall_errors(k, wall, x, r) -> list:
    """Particles that start inside wall ``k`` (:func:`~granular.particles.placement.wall_problem`)."""
    problem = wall_problem(wall.normal, wall.offset, x, r, "allow_initial_overlap = true in this [[walls]] table")
    return [] if problem is None else [(f"walls[{k}].allow_initial_overlap", problem[1])]


def _known_bonds(scene) -> int:
    """Bonds of the tori and explicit bond sets (known before any particle is placed)."""
    total = 0
    for g in scene.particles:
        if isinstance(g, TorusParticles) and g.bonds:
            total += g.n
        elif isinstance(g, ToriParticles) and g.bonds:
            total += g.n * g.count
    return total + sum(len(bs.pairs) for bs in scene.bonds if isinstance(bs, ExplicitBonds))


def _lattice_bonds(scene) -> int:
    """Estimate of the neighbour bonds of lattice groups: lattice vectors within the cutoff
    (halved) per particle, the interior count (other groups: found when built)."""
    lattices = {g.name: g for g in scene.particles if isinstance(g, LatticeParticles)}
    unnamed = [g for g in scene.particles if isinstance(g, LatticeParticles) and g.name is None]
    total = 0
    for bs in scene.bonds:
        if not isinstance(bs, NeighborBonds):
            continue
        members = [lattices[n] for n in bs.groups if n in lattices] if bs.groups else list(lattices.values()) + unnamed
        for g in members:
            m = int(bs.cutoff / g.spacing)
            if m > 20:  # many neighbours: the ball's volume in lattice cells
                per = int(2.0 / 3.0 * math.pi * (bs.cutoff / g.spacing) ** 3)
            else:
                k = np.arange(-m, m + 1)
                d2 = k[:, None, None] ** 2 + k[None, :, None] ** 2 + k[None, None, :] ** 2
                per = int(((d2 > 0) & (d2 * g.spacing**2 <= bs.cutoff**2)).sum()) // 2
            total += per * math.prod(g.shape)
    return total


def _check_memory(scene, n, bonds, backend, dtype, source) -> None:
    capacity = NEIGHBOR_CAPACITY if scene.contacts is not None and scene.contacts.search == "cells" else 0
    try:
        check_memory(n, bonds, capacity, dtype, backend, what=source, history=bool(scene.materials))
    except ResourceError as exc:
        raise SceneError([("particles", str(exc))], source) from None
