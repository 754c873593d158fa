"""The run's plots read at a glance (issue 30, item 8): every panel against time, no
panel of a quantity that is 0 by construction (``broken_bonds`` without breakable bonds)
or of the step counter, legends that cover no data, coinciding curves told apart by
their line styles.

The figures are caught where :func:`granular.io.plots.plot_series` saves them
(``_save``), so the tests look at what the PNGs are drawn from."""

import os

import numpy as np
import pytest
from scene_texts import drop_scene

import granular as gr
from granular.io import plots, read_series


@pytest.fixture
def caught(monkeypatch):
    """``{png name without .png: Figure}`` of every figure the plots save."""
    figures = {}
    real = plots._save

    def save(fig, path):
        figures[os.path.basename(path)[:-4]] = fig
        return real(fig, path)

    monkeypatch.setattr(plots, "_save", save)
    return figures


def _lines(fig):
    return [line for ax in fig.axes for line in ax.get_lines()]


def _drop_run(tmp_path, bonds=False):
    """A sphere thrown at a floor (dissipative law, gravity, no bonds), run by
    :class:`granular.Simulation` as ``granular run`` does; with ``bonds`` a breakable
    pair instead of the sphere. Returns the series read back."""
    b = gr.ModelBuilder()
    b.add_material("grain", young=1e5, restitution=0.5, friction=0.3)
    if bonds:
        ids = b.add_particles([[0.0, 0.0, 0.6], [0.0, 0.0, 1.65]], radius=0.5, material="grain",
                              v=[[0.0, 0.0, -1.0], [0.0, 0.0, 0.0]])  # fmt: skip
        b.add_bonds([[int(ids[0]), int(ids[1])]], ka=50.0, ks=50.0, km=5.0, strain_max=0.01)
    else:
        b.add_particles([[0.0, 0.0, 0.6]], radius=0.5, material="grain", v=[[0.3, 0.0, -1.0]])
    b.set_gravity([0.0, 0.0, -1.0])
    b.set_contacts()
    b.add_wall([0.0, 0.0, 1.0], 0.0, material="grain")
    model = b.finalize("cpu")
    out = tmp_path / ("bonds" if bonds else "drop")
    assert gr.Simulation(model, model.state(), out, dt=2e-4, series_every=0.004, quiet=True).run(steps=1500)["finished"]
    return read_series(os.path.join(out, "series.csv"))


def test_invariants_are_drawn_against_time_without_the_step_counter(tmp_path, caught):
    series = _drop_run(tmp_path)
    assert "step" in series and not np.array_equal(series["step"], series["time"])
    fig = caught["invariants"]
    for line in _lines(fig):
        np.testing.assert_array_equal(line.get_xdata(), series["time"])  # x is time
        assert not np.array_equal(line.get_ydata(), series["step"])  # no step panel
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert "step" not in labels
    for name, f in caught.items():
        for ax in f.axes:  # every panel's abscissa is time
            assert all(np.array_equal(line.get_xdata(), series["time"]) for line in ax.get_lines()), name
        assert f.axes[-1].get_xlabel().startswith("time"), name


def test_no_broken_bonds_panel_without_breakable_bonds(tmp_path, caught):
    _drop_run(tmp_path)
    labels = [ax.get_ylabel() for f in caught.values() for ax in f.axes]
    assert not [label for label in labels if "broken" in label], labels
    for f in caught.values():  # no panel without a curve
        assert all(ax.get_lines() for ax in f.axes)
    caught.clear()
    _drop_run(tmp_path, bonds=True)  # where bonds can break the panel stays
    labels = [ax.get_ylabel() for f in caught.values() for ax in f.axes]
    assert any("broken" in label for label in labels), labels


def _covering_series(n=400):
    """Curves that fill their panels (a legend inside any panel covers some of them)."""
    t = np.linspace(0.0, 4.0, n)
    w = 2.0 * np.pi * 3.0
    return {
        "time": t,
        "kinetic_translational": 1.0 + np.sin(w * t) ** 2,
        "kinetic_rotational": np.cos(1.3 * w * t) ** 2,
        "U_gravity": 2.0 * np.abs(np.sin(0.7 * w * t)),
        "total": 1.0 + 1.0 * np.abs(np.cos(0.9 * w * t)),
        "P_x": np.sin(w * t), "P_y": np.cos(w * t), "P_z": np.sin(1.7 * w * t),
        "L_x": np.cos(1.1 * w * t), "L_y": np.zeros(n), "L_z": np.zeros(n),
    }  # fmt: skip


def test_legends_cover_no_data(tmp_path, caught):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    plots.plot_series(_covering_series(), str(tmp_path))
    checked = 0
    for name, fig in caught.items():
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            for other in fig.axes:
                for line in other.get_lines():
                    xy = other.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
                    inside = ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0)
                              & (xy[:, 1] <= box.y1))  # fmt: skip
                    assert not inside.any(), f"{name}: the legend of {ax.get_ylabel()!r} covers {line.get_label()}"
            checked += 1
    assert checked >= 3  # energies, linear and angular momentum


def test_coinciding_momentum_components_are_told_apart(tmp_path, caught):
    t = np.linspace(0.0, 1.0, 50)
    zero = np.zeros_like(t)
    plots.plot_series({"time": t, "P_x": zero, "P_y": zero, "P_z": zero, "L_x": zero, "L_y": 1 + zero,
                       "L_z": 1 + zero}, str(tmp_path))  # fmt: skip
    fig = caught["momenta"]
    for ax in fig.axes:
        lines = ax.get_lines()
        assert len(lines) == 3
        styles = [(line.get_linestyle(), line.get_marker()) for line in lines]
        assert len({s[0] for s in styles}) == 3, styles  # P_y does not hide under P_z
        assert len({s[1] for s in styles}) == 3, styles
        widths = [line.get_linewidth() for line in lines]
        assert widths == sorted(widths, reverse=True)  # the first drawn is the widest: seen under the others
        assert ax.get_ylabel().endswith("]")  # with units


def test_a_small_systems_particles_have_their_own_figure(tmp_path, caught):
    series = _drop_run(tmp_path)
    assert "p0_x2" in series
    assert list(caught) == ["energies", "momenta", "invariants", "particles"]
    inv = [ax.get_ylabel() for ax in caught["invariants"].axes]
    assert inv == ["contacts touching [-]"], inv  # not 13 panels of one particle's state
    fig = caught["particles"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["position [L]", "velocity [L/T]", "angular velocity [1/T]"]
    height = fig.axes[0].get_lines()[2]
    assert height.get_label() == "particle 0: z"
    np.testing.assert_array_equal(height.get_ydata(), series["p0_x2"])


def test_validation_figures_keep_legends_off_the_data_and_coinciding_curves_apart():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from granular.validation.figures import finish, style

    t = np.linspace(0.0, 1.0, 200)
    with style():
        fig = Figure(figsize=(6, 4), layout="constrained")
        ax = fig.subplots()
        for k in range(3):  # three equal curves filling the panel
            ax.plot(t, np.sin(40 * t), label=f"curve {k}")
        ax.legend()
        finish(fig)
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    lines = ax.get_lines()
    assert len({line.get_linestyle() for line in lines}) == 3
    assert [line.get_linewidth() for line in lines] == sorted((line.get_linewidth() for line in lines), reverse=True)
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["curve 0", "curve 1", "curve 2"]
    xy = ax.transData.transform(np.column_stack([t, np.sin(40 * t)]))
    assert not ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1) & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1)).any()


def test_ensemble_histograms_leave_out_what_is_zero_by_construction(tmp_path, monkeypatch):
    # a sphere thrown at a floor: no bonds (no broken_bonds, U_released panels), no
    # motion along y (no v_cm_y panel, the same 0 in every replica)
    from granular import ensemble as ens
    from granular.ensemble import command

    scene = tmp_path / "drop.toml"
    scene.write_text(DROP)
    caught = {}
    real = command.write_outputs
    monkeypatch.setattr(command, "write_outputs", lambda table, out, hist, meta: caught.update(hist=hist) or
                        real(table, out, hist, meta))  # fmt: skip
    assert ens.main([str(scene), "--n", "6", "--vary", "particles[0].velocity[0]=uniform(-0.3,0.3)", "--quiet",
                     "--out", str(tmp_path / "out")]) == 0  # fmt: skip
    hist = caught["hist"]
    assert "wall_contact_force_max" in hist and "v_cm_x" in hist
    assert not {"broken_bonds", "U_released", "v_cm_y"} & set(hist), hist


DROP = drop_scene("dt = 2e-4\nsteps = 400\nseries_every = 0.08")
