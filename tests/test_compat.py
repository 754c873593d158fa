"""Moved modules keep their old import paths for one release, with a DeprecationWarning,
and the old path gives the very same objects (isinstance and monkeypatching still work)."""

import importlib
import subprocess
import sys

import pytest

import granular
from granular import _compat


@pytest.mark.parametrize("old,new", sorted(_compat.MOVED.items()))
def test_a_moved_module_is_the_same_module_under_its_old_name(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(new)
    assert mod.__spec__.name == new  # the alias did not rename the real module


def test_names_of_a_split_module_are_forwarded_with_a_warning():
    import granular.simulation as old
    from granular.particles.system import series_row
    from granular.run import Simulation

    with pytest.warns(DeprecationWarning, match="granular.run.simulation.Simulation"):
        assert old.Simulation is Simulation
    with pytest.warns(DeprecationWarning, match="granular.particles.system.series_row"):
        assert old.series_row is series_row
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        old.nothing  # noqa: B018


def test_the_package_imports_without_deprecation_warnings():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning); import granular, granular.cli, "
            "granular.ensemble, granular.run, granular.validation")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert granular.__version__


def test_names_that_left_a_module_are_forwarded():
    import granular.bodies.scenes as scenes
    from granular.run.command import run_bodies
    from granular.run.simulation import BodyRun

    with pytest.warns(DeprecationWarning, match="granular.run.command.run_bodies"):
        assert scenes.run_bodies is run_bodies
    with pytest.warns(DeprecationWarning, match="granular.run.simulation.BodyRun"):
        assert scenes.BodyRun is BodyRun
    with pytest.warns(DeprecationWarning):
        assert scenes.body_series_columns(["time", "b0_x", "energy"]) == ["time", "energy"]


def test_moved_modules_are_attributes_of_the_package_again():
    from granular.particles import model

    vars(granular).pop("model", None)  # an import of granular.model elsewhere binds it
    with pytest.warns(DeprecationWarning, match="granular.model moved to granular.particles.model"):
        assert granular.model is model
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        granular.nothing  # noqa: B018


def test_a_missing_submodule_of_a_moved_package_is_an_ordinary_import_error():
    import importlib.util
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.util.find_spec("granular.forces.nope") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("granular.forces.nope")


def test_the_quick_start_in_help_granular_runs_as_written(capsys):
    doc = granular.__doc__
    code = doc.split("::", 1)[1].split('"""')[0]
    lines = [ln[4:] for ln in code.splitlines() if ln.startswith("    ")]
    exec("\n".join(lines), {})
    out = capsys.readouterr().out
    assert "total" in out and "kinetic_rotational" in out
