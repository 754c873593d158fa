"""The start configuration (issue 15, items 5 and 10): particles inside a wall are an
error unless allowed, like overlaps; coincident particles are reported at setup, naming
the pair, even when overlaps are allowed."""

import copy
import json

import pytest

from granular import cli
from granular.run.scene import SceneError, build_model, parse_scene

BASE = {
    "name": "t",
    "run": {"dt": 1e-3, "steps": 5},
    "particles": [{"kind": "explicit", "x": [[2.0, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]], "radius": 0.5}],
    "contacts": {"kpp": 10.0},
    "walls": [{"normal": [1.0, 0.0, 0.0], "offset": 0.0}, {"normal": [0.0, 1.0, 0.0], "offset": -5.0}],
}


def scene(x=None, **edits):
    d = copy.deepcopy(BASE)
    if x is not None:
        d["particles"][0]["x"] = x
    for key, value in edits.items():
        table, _, field = key.partition("__")
        node = d[table] if not table.startswith("wall") else d["walls"][int(table[4:])]
        node[field] = value
    return parse_scene(d)


def errors(sc):
    with pytest.raises(SceneError) as exc:
        build_model(sc, backend="cpu")
    return exc.value.errors


def test_inside_and_behind_a_wall_are_errors():
    errs = errors(scene(x=[[0.3, 0.0, 0.0], [4.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]))
    assert errs == [("walls[0].allow_initial_overlap", "particle 2 starts behind the wall: its centre is -1 from the "
                     "plane (radius 0.5), 2 particle(s) in all; move them or set allow_initial_overlap = true in this "
                     "[[walls]] table")]  # fmt: skip
    errs = errors(scene(x=[[0.3, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]]))
    assert errs[0][0] == "walls[0].allow_initial_overlap" and "particle 0 starts inside the wall" in errs[0][1]
    assert "its centre is 0.3 from the plane (radius 0.5), 1 particle(s)" in errs[0][1]
    # touching is fine; allowed overlaps are fine
    build_model(scene(x=[[0.5, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]]), backend="cpu")
    model, _ = build_model(scene(x=[[0.3, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]],
                                 wall0__allow_initial_overlap=True), backend="cpu")  # fmt: skip
    assert model.n == 3
    # the second wall names its own index
    errs = errors(scene(x=[[2.0, -4.8, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]]))
    assert [p for p, _ in errs] == ["walls[1].allow_initial_overlap"]


def test_coincident_particles_are_named_even_when_overlaps_are_allowed():
    x = [[2.0, 0.0, 0.0], [4.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    for allowed in (False, True):
        errs = errors(scene(x=x, contacts__allow_initial_overlap=allowed))
        assert errs == [("particles", "particles 0 and 2 start at the same position (distance 0, radii sum 1), 1 "
                         "pair(s) in all: the contact force between coincident particles has no direction "
                         "(allow_initial_overlap does not cover this); move them apart")]  # fmt: skip
    # an overlap that is not a coincidence is allowed
    model, _ = build_model(scene(x=[[2.0, 0.0, 0.0], [2.3, 0.0, 0.0], [6.0, 0.0, 0.0]],
                                 contacts__allow_initial_overlap=True), backend="cpu")  # fmt: skip
    assert model.n == 3


def test_cli_wall_overlap_exit_2_nothing_written(tmp_path, capsys):
    d = copy.deepcopy(BASE)
    d["particles"][0]["x"] = [[-1.0, 0.0, 0.0], [4.0, 0.0, 0.0], [6.0, 0.0, 0.0]]
    lines = ['name = "t"', "[run]", "dt = 1e-3", "steps = 5", "[[particles]]", 'kind = "explicit"',
             f"x = {json.dumps(d['particles'][0]['x'])}", "radius = 0.5", "[contacts]", "kpp = 10.0",
             "[[walls]]", "normal = [1.0, 0.0, 0.0]"]  # fmt: skip
    path = tmp_path / "w.toml"
    path.write_text("\n".join(lines) + "\n")
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "walls[0].allow_initial_overlap: particle 0 starts behind the wall" in err
    assert not (tmp_path / "o").exists()
    # with the overlap allowed the stable-step estimate takes the start's overlap (here 300 %)
    path.write_text("\n".join(lines + ["allow_initial_overlap = true"]) + "\n")
    assert cli.main(["run", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    info = json.loads((tmp_path / "o" / "run.json").read_text())
    assert info["stable_step"]["assumed"]["overlap_wall"] == pytest.approx(3.0)
