"""The README's Python example runs again as it stands (issue 30, item 12), and the error
of a ``Simulation`` into a folder holding a run gives the call that continues that run,
which does when it is copied."""

import re
from pathlib import Path

import pytest

import granular
import granular as gr

ROOT = Path(__file__).resolve().parents[1]


def readme_run_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    (block,) = [b for b in blocks if "gr.Simulation(" in b]
    return block


def test_the_readme_python_example_runs_twice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = compile(readme_run_block(), "README.md (Python example)", "exec")
    for _ in range(2):
        namespace = {"__name__": "__readme__"}
        exec(code, namespace)  # noqa: S102 - the README's own example
        assert namespace["sim"].state.step == 2500  # run(until=2.0) with dt = 1e-3, then 500 more
    assert (tmp_path / "out" / "torus_py" / "run.json").is_file()


def falling_ball():
    b = gr.ModelBuilder()
    b.add_particle(x=[0, 0, 1], radius=0.5)
    b.set_gravity([0, 0, -1])
    b.add_wall([0, 0, 1], 0.0, k=1e3)
    return b.finalize("cpu")


def test_the_call_the_error_suggests_continues_the_run(tmp_path):
    model = falling_ball()
    out = tmp_path / "it's a run"  # a quote and a space: the path must be a Python literal in the call
    gr.Simulation(model, model.state(), out, dt=1e-3).run(steps=10)
    with pytest.raises(ValueError, match="holds a finished run") as exc:
        gr.Simulation(model, model.state(), out, dt=1e-3)
    message = str(exc.value)
    assert "give overwrite=True to replace it" in message and "--" not in message  # the words of the API
    m = re.search(r"continue it with (granular\.Simulation\.resume\(model, .*\)), or choose", message)
    assert m, message
    sim = eval(m.group(1), {"granular": granular, "model": model})  # the message's own call
    assert sim.out_dir == str(out) and sim.state.step == 10
    assert sim.run(steps=5)["steps"] == 15
