"""Every command and Python example shown in ``README.md`` and ``docs/*.md`` runs as
written, at a small size: commands with concrete arguments (no placeholders such as
``SCENE``) get fewer steps, bodies or particles and a ``--quick`` study; Python blocks run
as they stand, in a scratch folder holding the scenes. What is shrunk is only the size:
the options, scenes and fields are those of the page, so a renamed option, scene or
field fails here."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from granular.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
#: a sub-command with concrete arguments (a path under scenes/, or none at all)
COMMAND = re.compile(r"granular (?:run|ensemble|validate|bench|export-lammps|info)(?: [^`\n]*(?:\\\n[^`\n]*)*)?")
PLACEHOLDER = re.compile(r"\b(SCENE|DIR|NAME|OUT|CKPT|FIELD|DIST|T|N|S)\b|(^|\s)\[|\.\.\.")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def commands() -> list[tuple[str, str]]:
    """``(page, command)`` for every concrete ``granular`` command of the pages, in code
    blocks or inline code (wrapped lines joined)."""
    found = []
    for page in PAGES:
        text = _text(page)
        lines = [line for _, b in re.findall(r"```(bash|sh|console)\n(.*?)```", text, re.S)
                 for line in b.replace("\\\n", " ").splitlines()]  # fmt: skip
        lines += [c.replace("\n", " ") for c in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))]
        for span in lines:
            for m in COMMAND.finditer(span):
                cmd = re.split(r"\s*(?:&&|;|\|)\s*", m.group(0))[0].strip()
                if cmd.count('"') % 2 or PLACEHOLDER.search(cmd.split(" ", 2)[-1] if " " in cmd else ""):
                    continue
                if cmd.split()[1:2] != ["info"] and len(cmd.split()) < 3:
                    continue  # the sub-command named in prose
                found.append((page.name, " ".join(cmd.split())))
    first = {}
    for page, cmd in found:  # a command shown on several pages runs once
        first.setdefault(cmd, page)
    return sorted((page, cmd) for cmd, page in first.items())


def small(argv: list[str]) -> list[str]:
    """The command at a small size: the same sub-command, scene, fields and options."""
    sub, out, skip = argv[0], [argv[0]], False
    for k, tok in enumerate(argv[1:], 1):
        if skip:
            skip = False
            continue
        if tok in ("--time", "--steps") and sub in ("run", "ensemble"):
            skip = True
            continue
        if tok == "--n":
            out += ["--n", "8" if sub == "ensemble" else "3"]
            skip = True
            continue
        if tok in ("--pile", "--spheres") and sub == "bench":
            out += [tok, "64" if tok == "--pile" else "343"]
            skip = True
            continue
        if tok == "--long":
            continue
        out.append(tok)
    if sub == "run":
        out += ["--steps", "20", "--quiet"]
    elif sub == "ensemble":
        out += ["--steps", "5", "--quiet"]
    elif sub == "validate":
        out += ["--quick"]
    elif sub == "bench":
        out += ["--min-time", "0.05"]
    return out


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A working folder with the scenes, as the pages assume (commands run from the root)."""
    os.symlink(ROOT / "scenes", tmp_path / "scenes")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_show_the_commands_a_user_runs():
    shown = {c for _, c in commands()}
    assert "granular run scenes/torus_impact.toml --out out/torus_impact" in shown
    assert any(c.startswith("granular ensemble scenes/") for c in shown)
    assert any(c.startswith("granular validate ") for c in shown)


@pytest.mark.parametrize("page,command", commands(), ids=[f"{p}: {c}" for p, c in commands()])
def test_every_command_of_the_pages_runs(page, command, scratch, capsys):
    argv = small(shlex.split(command)[1:])
    if "file(tops.npy)" in command:  # the page makes the file with its Python block first
        run_python_block(ROOT / "docs" / "ensemble.md", 0, scratch)
        np.save("tops.npy", np.load("tops.npy")[:8])  # one row per body, at the small size
    assert main(argv) == 0, f"{page}: {command} -> {' '.join(argv)}\n{capsys.readouterr().err[-2000:]}"


def python_blocks() -> list[tuple[Path, int]]:
    return [(page, k) for page in PAGES for k, _ in enumerate(re.findall(r"```python\n(.*?)```", _text(page), re.S))]


def run_python_block(page: Path, k: int, folder: Path) -> dict:
    code = re.findall(r"```python\n(.*?)```", _text(page), re.S)[k]
    namespace = {"__name__": "__docs__"}
    exec(compile(code, f"{page.name} (python block {k})", "exec"), namespace)  # noqa: S102 - the page's own example
    return namespace


#: Python blocks that are fragments of a larger text, not programs (said on the page)
FRAGMENTS = {("README.md", 0)}


@pytest.mark.parametrize("page,k", python_blocks(), ids=[f"{p.name}[{k}]" for p, k in python_blocks()])
def test_every_python_block_of_the_pages_runs(page, k, scratch):
    if (page.name, k) in FRAGMENTS:
        pytest.skip("a fragment (builder.finalize options), not a program")
    run_python_block(page, k, scratch)
