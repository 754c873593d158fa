"""Every exception class of the package is defined in ``granular/errors.py`` (read from the
sources, nothing imported for the scan), and the modules that raise one still name it: the
old import paths give the same class."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

import granular.errors as errors

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "granular"
NAMED = re.compile(r"\w+(Error|Exception)$")

#: Exception classes still defined outside errors.py, with the reason; none may be added.
KNOWN = set()


def _base_name(node) -> str:
    """``ValueError`` for ``ValueError``, ``errors.BodyError`` or ``x.y.BodyError``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return ""


def _builtin_exception(name) -> bool:
    obj = getattr(builtins, name, None)
    return isinstance(obj, type) and issubclass(obj, BaseException)


def _classes():
    """``[(relative path, class name, base names)]`` of every class in the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.append((path.relative_to(ROOT).as_posix(), node.name, [_base_name(b) for b in node.bases]))
    return out


def exception_classes():
    """The classes that are exceptions: named ``...Error``/``...Exception``, or deriving
    (through any chain of the package's classes) from a built-in exception."""
    classes = _classes()
    found = {name for _, name, bases in classes if NAMED.match(name) or any(map(_builtin_exception, bases))}
    while True:  # classes deriving from the package's exceptions, to a fixed point
        more = {name for _, name, bases in classes if name not in found and any(b in found for b in bases)}
        if not more:
            break
        found |= more
    return [(path, name) for path, name, _ in classes if name in found]


def test_the_scan_finds_the_exception_classes():
    found = exception_classes()
    assert ("granular/errors.py", "IntegrationError") in found
    assert ("granular/errors.py", "NonFiniteBodyError") in found  # through BodyError
    assert ("granular/errors.py", "BodyStepSizeError") in found
    assert not any(name in ("Scheme", "Backend", "BodyState") for _, name in found)


def test_no_exception_class_is_defined_outside_errors_py():
    outside = sorted((path, name) for path, name in exception_classes()
                     if path != "granular/errors.py" and (path, name) not in KNOWN)  # fmt: skip
    assert outside == [], "define exception classes in granular/errors.py and import them where they are raised"


def test_the_known_exceptions_still_exist():
    """An entry of KNOWN that has moved to errors.py must leave the list."""
    found = set(exception_classes())
    assert KNOWN <= found


@pytest.mark.parametrize(
    "module, name",
    [
        ("granular.backend", "BackendError"),
        ("granular.resources", "ResourceError"),
        ("granular.particles.shapes", "PackingError"),
        ("granular.ensemble.spec", "EnsembleSpecError"),
        ("granular.run.folder", "OutDirError"),
        ("granular.io.checkpoint", "CheckpointError"),
        ("granular.bodies.core", "BodyError"),
        ("granular.bodies.core", "NewtonError"),
        ("granular.bodies.core", "NonFiniteBodyError"),
        ("granular.particles.integrators", "StepSizeError"),
        ("granular", "BackendError"),
    ],
)
def test_the_old_import_paths_give_the_same_class(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_body_step_size_error():
    """``granular.bodies.core.StepSizeError`` is errors.BodyStepSizeError, a BodyError (not
    the particle engine's StepSizeError)."""
    from granular.bodies import core

    assert core.StepSizeError is errors.BodyStepSizeError
    assert issubclass(core.StepSizeError, errors.BodyError)
    assert not issubclass(core.StepSizeError, errors.StepSizeError)


def test_errors_keep_their_bases_and_attributes():
    assert issubclass(errors.NonFiniteBodyError, errors.NonFiniteError)
    assert issubclass(errors.BackendError, RuntimeError)
    for cls in (errors.ResourceError, errors.PackingError, errors.EnsembleSpecError, errors.OutDirError,
                errors.CheckpointError):  # fmt: skip
        assert issubclass(cls, ValueError)
    e = errors.NewtonError("m", body=2, step=3, reason="not converged", residual=1e-3, iterations=25, max_iter=25)
    assert (e.body, e.particle, e.step, e.quantity, e.failed) == (2, 2, 3, "newton residual", 1)
    assert e.update != e.update  # NaN by default
    assert errors.PackingError("no room", "count").field == "count"
    assert sorted(errors.__all__) == sorted(
        n for n, v in vars(errors).items() if isinstance(v, type) and issubclass(v, BaseException)
    )
