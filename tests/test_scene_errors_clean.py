"""Scene errors say one line per bad field, in the scene's words (issue 30, item 2).

pydantic reports a value that fails a union (a particle group's ``radius``: a number or a
list) once per member it tried, under the member's label (``constrained-float``,
``list[constrained-float]``). A scene error must instead be one line naming the field as
the scene file spells it (``particles[0].radius``) with what is allowed and the value:
checked here for every field of every table and group kind of the schema, and for the
union fields value by value, through the Python loader and ``granular run``.
"""

import copy
import subprocess
import sys
import types
from typing import Annotated, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from granular.run import scene as sc
from granular.run.scene import SceneError, parse_scene
from patience import PATIENCE

#: what pydantic's own machinery looks like in a message or a path
INTERNALS = ("constrained-", "function-", "list[", "dict[", "union[", "tagged-union", "nullable[")

GROUPS = [
    {"kind": "explicit", "name": "g", "x": [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]},
    {"kind": "lattice", "shape": [2, 1, 1], "origin": [10.0, 0.0, 0.0]},
    {"kind": "torus", "n": 6, "center": [20.0, 0.0, 0.0]},
    {"kind": "random", "count": 2, "box": [[30.0, 0.0, 0.0], [35.0, 5.0, 5.0]]},
    {"kind": "tori", "count": 1, "n": 6, "box": [[40.0, 0.0, 0.0], [50.0, 10.0, 10.0]]},
    {"kind": "agglomerate", "count": 3, "center": [60.0, 0.0, 0.0]},
]

#: a scene with every table of the schema (valid as far as the schema goes)
FULL = {
    "name": "t",
    "description": "every table",
    "run": {"dt": 1e-3, "steps": 10},
    "materials": {"glass": {"young": 1e5}},
    "material_pairs": [{"materials": ["glass", "glass"], "friction": 0.1}],
    "bond_families": {"b": {"ka": 1.0}},
    "particles": GROUPS,
    "bonds": [{"kind": "explicit", "pairs": [[0, 1]], "family": "b"},
              {"kind": "neighbors", "cutoff": 1.0, "family": "b"},
              {"kind": "touching", "factor": 1.01, "family": "b"}],  # fmt: skip
    "contacts": {"law": "hertz-mindlin"},
    "walls": [{"normal": [0.0, 0.0, 1.0], "offset": -5.0, "name": "floor", "present": True}],
    "meshes": [{"shape": {"kind": "rectangle", "center": [0.0, 0.0, -9.0], "u": [1.0, 0.0, 0.0], "v": [0.0, 1.0, 0.0]}},
               {"shape": {"kind": "box", "lo": [100.0, 100.0, 100.0], "hi": [101.0, 101.0, 101.0]}},
               {"shape": {"kind": "cylinder", "radius": 1.0, "length": 1.0, "center": [200.0, 0.0, 0.0]}},
               {"shape": {"kind": "annulus", "outer": 2.0, "inner": 1.0, "center": [300.0, 0.0, 0.0]}}],
    "periodic": {"x": [-50.0, 50.0], "y": [-50.0, 50.0], "z": [-50.0, 50.0]},
    "insert": [{"box": [[-1.0, -1.0, 5.0], [1.0, 1.0, 6.0]], "radius": [0.1, 0.2], "material": "glass", "rate": 10.0},
               {"cylinder": {"center": [0.0, 0.0, 5.0], "radius": 1.0, "length": 1.0}, "radius": 0.1,
                "material": "glass", "total": 5},
               {"surface": {"mesh": "mesh 0", "depth": 1.0}, "radius": 0.1, "material": "glass", "total": 3}],
    "outlets": [{"box": [[-1.0, -1.0, -9.0], [1.0, 1.0, -8.0]], "name": "drain"}],
    "stages": [{"name": "fill", "duration": 1.0, "outlets": [], "until_inserted": 5, "remove": ["floor"]},
               {"until": 3.0, "kinetic_below": 1.0, "until_removed": 2, "add": ["floor"], "gravity": [0.0, 0.0, -2.0],
                "motions": [{"name": "floor", "velocity": [0.0, 0.0, 1.0]}]}],
    "fields": {"gravity": [0.0, 0.0, -1.0], "pendulum": [{"group": "g"}]},
}

#: (path in messages, keys into FULL, the table's model): every table of the schema
TABLES = [
    ("", (), sc.Scene),
    ("run", ("run",), sc.RunTable),
    ("materials.glass", ("materials", "glass"), sc.MaterialTable),
    ("material_pairs[0]", ("material_pairs", 0), sc.MaterialPair),
    ("bond_families.b", ("bond_families", "b"), sc.BondFamily),
    *((f"particles[{k}]", ("particles", k), cls) for k, cls in enumerate(
        [sc.ExplicitParticles, sc.LatticeParticles, sc.TorusParticles, sc.RandomParticles, sc.ToriParticles,
         sc.AgglomerateParticles])),
    ("bonds[0]", ("bonds", 0), sc.ExplicitBonds),
    ("bonds[1]", ("bonds", 1), sc.NeighborBonds),
    ("bonds[2]", ("bonds", 2), sc.TouchingBonds),
    ("contacts", ("contacts",), sc.ContactsTable),
    ("walls[0]", ("walls", 0), sc.Wall),
    ("meshes[0]", ("meshes", 0), sc.MeshTable),
    ("meshes[0].shape", ("meshes", 0, "shape"), sc.RectangleShape),
    ("meshes[1].shape", ("meshes", 1, "shape"), sc.BoxShape),
    ("meshes[2].shape", ("meshes", 2, "shape"), sc.CylinderShape),
    ("meshes[3].shape", ("meshes", 3, "shape"), sc.AnnulusShape),
    ("periodic", ("periodic",), sc.PeriodicTable),
    ("insert[0]", ("insert", 0), sc.InsertTable),
    ("insert[1].cylinder", ("insert", 1, "cylinder"), sc.CylinderRegion),
    ("insert[2].surface", ("insert", 2, "surface"), sc.SurfaceRegion),
    ("outlets[0]", ("outlets", 0), sc.OutletTable),
    ("stages[0]", ("stages", 0), sc.StageTable),
    ("stages[1].motions[0]", ("stages", 1, "motions", 0), sc.StageMotion),
    ("fields", ("fields",), sc.FieldsTable),
    ("fields.pendulum[0]", ("fields", "pendulum", 0), sc.Pendulum),
]


def _node(data, keys):
    for k in keys:
        data = data[k]
    return data


def _errors(data) -> list:
    with pytest.raises(SceneError) as info:
        parse_scene(data, "bad.toml")
    return info.value.errors


def _clean(path, message):
    """No pydantic internals in the path or the message, and one line."""
    for bit in INTERNALS:
        assert bit not in path and bit not in message, f"{path}: {message}"
    assert "\n" not in message


def test_the_full_scene_passes_the_schema():
    sc.Scene.model_validate(copy.deepcopy(FULL))


def test_every_table_of_the_schema_is_swept():
    models = {obj for obj in vars(sc).values()
              if isinstance(obj, type) and issubclass(obj, BaseModel) and obj.__module__ == sc.__name__
              and not obj.__name__.startswith("_")}  # fmt: skip
    assert models == {cls for _, _, cls in TABLES}


FIELDS = [(where, keys, name, cls) for where, keys, cls in TABLES for name in cls.model_fields
          if not (name == "kind" and "kind" in cls.model_fields and where.startswith(("particles", "bonds", "meshes")))
          and name != "bodies"]  # fmt: skip


def _alternatives(tp) -> list:
    """The types a value of annotation ``tp`` may have (unions split, ``None`` left out)."""
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, types.UnionType):
        return [a for m in get_args(tp) if m is not type(None) for a in _alternatives(m)]
    return [tp]


def _bad_value(cls, name):
    """A value no alternative of the field accepts: a number for a table, else a table."""
    alts = _alternatives(cls.model_fields[name].annotation)
    tables = any(isinstance(a, type) and issubclass(a, BaseModel) or get_origin(a) is dict for a in alts)
    return 7 if tables else {"bad": 1}


@pytest.mark.parametrize("where,keys,name,cls", FIELDS, ids=[f"{w or 'top'}.{n}" for w, _, n, _ in FIELDS])
def test_a_bad_value_of_any_field_is_one_clean_line(where, keys, name, cls):
    data = copy.deepcopy(FULL)
    value = _bad_value(cls, name)
    _node(data, keys)[name] = value
    errors = _errors(data)
    path = f"{where}.{name}" if where else name
    assert len(errors) == 1, errors
    assert errors[0][0] == path
    _clean(*errors[0])
    assert errors[0][1].endswith(f"(got {value!r})")


def test_every_union_field_says_what_it_allows():
    """A value that fits no member of a union is told the field's description."""
    unions = [(cls, name) for _, _, cls in TABLES for name, f in cls.model_fields.items()
              if len(_alternatives(f.annotation)) > 1
              and not all(isinstance(a, type) and issubclass(a, BaseModel) for a in _alternatives(f.annotation))]
    assert (sc.ExplicitParticles, "radius") in unions and (sc.RandomParticles, "radius") in unions
    for cls, name in unions:
        assert cls.model_fields[name].description, f"{cls.__name__}.{name} has no description"


def _group(k, **values):
    data = copy.deepcopy(FULL)
    data["particles"][k].update(values)
    return data


EXPLICIT, LATTICE, TORUS, RANDOM, TORI = range(5)

#: (scene, the one line expected): the union fields value by value, and their neighbours
EXACT = [
    (_group(EXPLICIT, radius=-1), "particles[0].radius: Input should be greater than 0 (got -1)"),
    (_group(EXPLICIT, radius=0.0), "particles[0].radius: Input should be greater than 0 (got 0.0)"),
    (_group(EXPLICIT, radius=[0.5, -1]), "particles[0].radius[1]: Input should be greater than 0 (got -1)"),
    (_group(EXPLICIT, radius=[0.5, "a"]),
     "particles[0].radius[1]: Input should be a valid number, unable to parse string as a number (got 'a')"),
    (_group(EXPLICIT, radius="big"), "particles[0].radius: must be a number > 0 (the radius of every particle) "
                                     "or a list of numbers > 0, one per particle (got 'big')"),
    (_group(EXPLICIT, radius=float("inf")), "particles[0].radius: Input should be a finite number (got inf)"),
    (_group(RANDOM, radius=-1), "particles[3].radius: Input should be greater than 0 (got -1)"),
    (_group(RANDOM, radius=[0.1, -0.2]), "particles[3].radius[1]: Input should be greater than 0 (got -0.2)"),
    (_group(RANDOM, radius=[0.1, 0.2, 0.3]),
     "particles[3].radius: List should have at most 2 items after validation, not 3 (got [0.1, 0.2, 0.3])"),
    (_group(RANDOM, radius={"low": 0.1}), "particles[3].radius: must be a number > 0 (one radius) or a list "
                                          "[low, high] of two numbers > 0 (radii drawn uniformly between them) "
                                          "(got {'low': 0.1})"),
    (_group(LATTICE, radius=-1), "particles[1].radius: Input should be greater than 0 (got -1)"),
    (_group(TORUS, ring_diameter=-1), "particles[2].ring_diameter: Input should be greater than 0 (got -1)"),
    (_group(TORI, count=0), "particles[4].count: Input should be greater than or equal to 1 (got 0)"),
    (_group(EXPLICIT, mass=-1), "particles[0].mass: Input should be greater than 0 (got -1)"),
]


@pytest.mark.parametrize("data,line", EXACT, ids=[line.split(":")[0] + f"-{k}" for k, (_, line) in enumerate(EXACT)])
def test_exact_one_line_message(data, line):
    errors = _errors(data)
    assert [f"{p}: {m}" for p, m in errors] == [line]
    _clean(*errors[0])


def test_two_bad_union_values_are_two_lines_in_order():
    data = _group(EXPLICIT, radius=-1)
    data["particles"][RANDOM]["radius"] = "x"
    errors = _errors(data)
    assert [p for p, _ in errors] == ["particles[0].radius", "particles[3].radius"]
    for e in errors:
        _clean(*e)


CLI = [
    ('[[particles]]\nkind = "explicit"\nx = [[0, 0, 0]]\nradius = -1\n',
     "particles[0].radius: Input should be greater than 0 (got -1)"),
    ('[[particles]]\nkind = "random"\ncount = 3\nbox = [[0, 0, 0], [4, 4, 4]]\nradius = [0.2, -1]\n',
     "particles[0].radius[1]: Input should be greater than 0 (got -1)"),
    ('[[particles]]\nkind = "explicit"\nx = [[0, 0, 0]]\nradius = "big"\n',
     "particles[0].radius: must be a number > 0 (the radius of every particle) or a list of numbers > 0, one "
     "per particle (got 'big')"),
]


@pytest.mark.parametrize("body,line", CLI, ids=["explicit", "random", "neither"])
def test_granular_run_prints_one_clean_line(tmp_path, body, line):
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\ndt = 0.001\nsteps = 10\n" + body)
    out = subprocess.run([sys.executable, "-m", "granular", "run", str(bad), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=PATIENCE)  # fmt: skip
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines[-2:] == [f"{bad}: 1 error(s)", f"  {line}"], out.stderr
    for bit in INTERNALS:
        assert bit not in out.stderr
