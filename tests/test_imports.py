"""The package's import graph (read from the sources, nothing imported): no cycles, even
through imports inside functions; runtime code imports neither the command line nor the
paper studies; the kernels import nothing of the package; and no module of the project is
imported inside a function (only optional dependencies are, and the backend's choice of
the CPU or the CUDA kernels)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP = ("granular", "kernels")
# modules allowed to import the command line or the studies: the entry points and the studies
FRONT = ("granular.cli", "granular.__main__", "granular.benchmark", "granular.validation")
# imports allowed inside functions: which kernels to load is decided when a backend is made
LAZY = {("granular.backend", "kernels.cpu"), ("granular.backend", "kernels.cuda"),
        # the fragment labelling's GPU kernels: numba.cuda loads only on a GPU (or the simulator)
        ("kernels.components", "kernels.components_cuda"),
        # the dense packing's GPU kernels, loaded when a packing is made on a GPU
        ("granular.particles.packing", "kernels.packing_cuda"),
        # granular.Simulation and friends: the run layer loads on first use (granular/__init__.py)
        ("granular", "granular.run.simulation")}  # fmt: skip


def _modules() -> dict[str, Path]:
    mods = {}
    for top in TOP:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


def _targets(mods, name, node) -> list[str]:
    """The modules of the project an import statement in module ``name`` refers to."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            pkg = name.split(".") if mods[name].name == "__init__.py" else name.split(".")[:-1]
            pkg = pkg[: len(pkg) - (node.level - 1)]
            base = ".".join(pkg + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
    out = []
    for n in names:
        while n and n not in mods:  # "granular.io.vtk.FrameWriter" -> "granular.io.vtk"
            n = n.rpartition(".")[0]
        if n:
            out.append(n)
    return out


@pytest.fixture(scope="module")
def graph():
    mods = _modules()
    edges = {m: set() for m in mods}
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges[name].update(t for t in _targets(mods, name, node) if t != name)
    return edges


def _cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _is_front(name) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FRONT)


def test_the_graph_is_read(graph):
    # the walk sees the package: the CLI imports the run command, which imports the
    # integrators, and a study imports the model
    assert "granular.run.command" in graph["granular.cli"]
    assert "granular.particles.integrators" in graph["granular.run.simulation"]
    assert any(t.startswith("granular.particles.builder") for t in graph["granular.validation.pile"])


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_runtime_code_imports_neither_the_cli_nor_the_studies(graph):
    bad = {
        name: sorted(t for t in targets if _is_front(t))
        for name, targets in graph.items()
        if not _is_front(name)
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_kernels_import_nothing_of_the_package(graph):
    bad = {k: sorted(t for t in v if t.startswith("granular")) for k, v in graph.items() if k.startswith("kernels")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_project_modules_are_imported_at_the_top():
    mods = _modules()
    inside = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    inside += [(name, t) for t in _targets(mods, name, node) if (name, t) not in LAZY]
    assert inside == []

