"""PNG plots of a time series (:mod:`granular.io.series`), drawn with Matplotlib's Agg
canvas (no pyplot, no global backend switch, no display needed).

Figures, each only if it has columns to show, every panel against ``time`` [T] (units
are the scene's consistent units of mass M, length L and time T):

* ``plots/energies.png``: every ``kinetic_*``, ``U_*`` and ``dissipated_*`` column and
  ``total`` (with dissipative contacts also ``total + dissipated``, the conserved sum;
  with breakable bonds ``total + U_released``); a second panel shows the relative drift
  of the conserved sum when it is present and not 0 at the start;
* ``plots/momenta.png``: ``P_x, P_y, P_z`` (top) and ``L_x, L_y, L_z`` (bottom), those
  present;
* ``plots/invariants.png``: every other numeric column (e.g. ``broken_bonds``,
  ``contacts``, scheme invariants), one panel each;
* ``plots/particles.png``: the per-particle columns of a small system (``p<i>_x<c>``,
  ``p<i>_v<c>``, ``p<i>_omega<c>``): position, velocity and angular velocity.

What is not a quantity is left out: the ``step`` counter (time is the abscissa), columns
with no finite value, the orientation quaternions. Callers drop the columns that are 0
by construction (``plot_columns`` of the run's system: ``broken_bonds`` of a model whose
bonds cannot break). Legends stand outside the panels, right of them, so they cover no
curve; curves that may lie on top of each other (equal momentum components, energies
that stay 0) differ in colour, line style and sparse markers, the earlier ones drawn
wider, so each stays visible.

:func:`series_figures` returns the Matplotlib figures (for tests and notebooks);
:func:`plot_series` writes them.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ._atomic import atomic_write

MOMENTA = ("P_x", "P_y", "P_z", "L_x", "L_y", "L_z")
#: Columns that are not plotted: the step counter is the abscissa's twin, not a quantity.
NOT_PLOTTED = ("step",)
#: A per-particle column of a small particle system (``series.csv``): particle, quantity, component.
PER_PARTICLE = re.compile(r"^p(\d+)_(x|v|q|omega)(\d)$")
TIME = "time [T]"
ENERGY = "energy [M L²/T²]"
#: Labels of the invariants panels the engines write, with units.
LABELS = {
    "broken_bonds": "broken bonds [-]",
    "contacts": "contacts touching [-]",
}
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "v", "D", "x", "+", "*", "<", ">", "P", "h", "X", "d", "p", "1")
#: Matplotlib's ten colours, then six more: up to 16 curves of a panel (the energies of a
#: run with every family and the dissipative law) each have a colour of their own.
COLORS = tuple(f"C{k}" for k in range(10)) + ("black", "darkgoldenrod", "navy", "maroon", "teal", "indigo")
PARTICLE_PANELS = (("x", "position [L]"), ("v", "velocity [L/T]"), ("omega", "angular velocity [1/T]"))


def _is_energy(name: str) -> bool:
    return name.startswith(("kinetic_", "U_", "dissipated_")) or name in ("total", "total + dissipated", "total + U_released")


def _save(fig, path: str) -> str:
    def write(tmp):
        with open(tmp, "wb") as f:
            fig.savefig(f, format="png", dpi=110)

    return atomic_write(path, write)


def _figure(n_panels: int, title: str, height: float = 2.6):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 1.0 + height * n_panels), layout="constrained")
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)[:, 0]
    fig.suptitle(title)
    axes[-1].set_xlabel(TIME)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        # 1e-4 rather than 0.000100 on the ticks: short times (an impact) stay legible
        ax.ticklabel_format(axis="both", style="sci", scilimits=(-3, 4), useMathText=True)
    return fig, axes


def _legend(ax, entries: int) -> None:
    """The legend right of the panel (outside it: it covers no data)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small",
              ncols=1 if entries <= 12 else 2)  # fmt: skip


def _curves(ax, t, curves, widths=None) -> None:
    """Plot ``curves`` (``[(label, y)]``) so that any of them stay visible where they
    coincide: each its own colour, line style and marker (markers sparse and staggered,
    so coinciding curves show theirs side by side), earlier curves wider."""
    n = len(curves)
    every = max(1, len(t) // 8)
    for k, (label, y) in enumerate(curves):
        lw = widths[k] if widths is not None else 2.4 - 1.2 * k / max(1, n - 1)
        ax.plot(t, y, label=label, color=COLORS[k % len(COLORS)], ls=LINESTYLES[k % len(LINESTYLES)], lw=lw,
                marker=MARKERS[k % len(MARKERS)], markevery=((k * every) // n, every), ms=4.5,
                mfc="none", mew=1.0)  # fmt: skip


def series_figures(series: dict) -> dict:
    """The figures of ``series`` (column name -> (T,) array, with a ``time`` column):
    ``{name: matplotlib.figure.Figure}`` for ``energies``, ``momenta``, ``invariants``
    and ``particles``, those with columns to show, in that order (module docstring).

    Raises ``ValueError`` for a series without ``time`` or with columns of another length.
    """
    if not isinstance(series, dict) or "time" not in series:
        raise ValueError("series: expected a dict of column -> (T,) array with a 'time' column")
    t = np.asarray(series["time"], dtype=np.float64)
    if t.ndim != 1:
        raise ValueError(f"series['time']: expected shape (T,), got {t.shape}")
    cols = {}
    for name, v in series.items():
        a = np.asarray(v)
        if name == "time" or a.dtype.kind not in "biuf":
            continue
        if a.shape != t.shape:
            raise ValueError(f"series[{name!r}]: expected shape {t.shape} like 'time', got {a.shape}")
        if name in NOT_PLOTTED or (a.size and not np.isfinite(a.astype(np.float64)).any()):
            continue
        cols[name] = a.astype(np.float64)
    dissipated = [c for c in cols if c.startswith("dissipated_")]
    conserved = "total"
    if dissipated and "total" in cols:  # what the scheme conserves with dissipative contacts
        conserved = "total + dissipated"
        cols[conserved] = cols["total"] + sum(cols[c] for c in dissipated) + cols.get("U_released", 0.0)
    elif "U_released" in cols and "total" in cols:  # breakable bonds: their energy left at breakage
        conserved = "total + U_released"
        cols[conserved] = cols["total"] + cols["U_released"]
    energies = [c for c in cols if _is_energy(c)]
    momenta = [c for c in MOMENTA if c in cols]
    particles = {c: PER_PARTICLE.match(c) for c in cols if PER_PARTICLE.match(c)}
    others = [c for c in cols if c not in energies and c not in momenta and c not in particles]
    figures = {}

    if energies:
        e0 = cols[conserved][0] if conserved in cols and len(t) else 0.0
        drift = conserved in cols and np.isfinite(e0) and e0 != 0.0
        fig, axes = _figure(2 if drift else 1, "energies", height=3.2)
        # the sums first and wide, the parts after them
        sums = ("total", conserved)
        order = [c for c in energies if c in sums] + [c for c in energies if c not in sums]
        _curves(axes[0], t, [(c, cols[c]) for c in order],
                widths=[2.6 if c in sums else 1.4 for c in order])  # fmt: skip
        axes[0].set_ylabel(ENERGY)
        _legend(axes[0], len(order))
        if drift:
            axes[1].plot(t, (cols[conserved] - e0) / abs(e0), color="k", lw=1.0)
            axes[1].set_ylabel("(E - E₀) / |E₀|  [-]")
            axes[1].set_title(f"relative drift of E = {conserved}", fontsize="medium", loc="left")
        figures["energies"] = fig

    if momenta:
        groups = [g for g in ([c for c in momenta if c[0] == "P"], [c for c in momenta if c[0] == "L"]) if g]
        fig, axes = _figure(len(groups), "momenta")
        for ax, group in zip(axes, groups):
            _curves(ax, t, [(c, cols[c]) for c in group])
            ax.set_ylabel("linear momentum [M L/T]" if group[0][0] == "P" else "angular momentum [M L²/T]")
            _legend(ax, len(group))
        figures["momenta"] = fig

    if others:
        fig, axes = _figure(len(others), "invariants", height=2.2)
        for ax, c in zip(axes, others):
            ax.plot(t, cols[c], lw=1.4, color="C0")
            ax.set_ylabel(LABELS.get(c, c), fontsize="small" if len(LABELS.get(c, c)) > 18 else "medium")
        figures["invariants"] = fig

    panels = [(key, label, sorted((c for c, m in particles.items() if m.group(2) == key),
                                  key=lambda c: (int(particles[c].group(1)), int(particles[c].group(3)))))
              for key, label in PARTICLE_PANELS]  # fmt: skip
    panels = [p for p in panels if p[2]]
    if panels:
        from matplotlib.lines import Line2D

        fig, axes = _figure(len(panels), "particles")
        every = max(1, len(t) // 8)
        count = 1 + max(int(m.group(1)) for m in particles.values())
        for ax, (key, label, names) in zip(axes, panels):
            # a colour per particle, a line style and marker per component (x wide and
            # solid, y dashed, z dotted), later particles thinner and every curve's
            # markers at their own times: curves that coincide all show
            for c in names:
                i, comp = int(particles[c].group(1)), int(particles[c].group(3))
                lw = (2.4, 1.7, 1.2)[comp] * (1.0 - 0.5 * i / max(1, count - 1))
                ax.plot(t, cols[c], color=COLORS[i % len(COLORS)], ls=("-", "--", ":")[comp], lw=lw,
                        marker=("o", "s", "^")[comp], markevery=(((3 * i + comp) * every) // (3 * count), every),
                        ms=4.5, mfc="none", label=f"particle {i}: {'xyz'[comp]}")  # fmt: skip
            ax.set_ylabel(label)
            ids = sorted({int(particles[c].group(1)) for c in names})
            handles = [Line2D([], [], color=COLORS[i % len(COLORS)], lw=2.4, label=f"particle {i}") for i in ids]
            handles += [Line2D([], [], color="0.3", ls=("-", "--", ":")[comp], lw=(2.4, 1.7, 1.2)[comp],
                               marker=("o", "s", "^")[comp], ms=4.5, mfc="none", label=f"{'xyz'[comp]} component")
                        for comp in range(3)]  # fmt: skip
            ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                      fontsize="small", ncols=1 if len(handles) <= 12 else 2)  # fmt: skip
        figures["particles"] = fig
    return figures


def plot_series(series: dict, out_dir: str) -> list[str]:
    """Write the plots of ``series`` (column name -> (T,) array, with a ``time`` column,
    e.g. from :func:`~granular.io.series.read_series`) under ``out_dir/plots/``.

    Non-numeric columns are ignored. Each PNG is written atomically. Returns the paths
    written, in the order energies, momenta, invariants, particles.
    """
    figures = series_figures(series)
    plot_dir = os.path.join(os.fspath(out_dir), "plots")
    os.makedirs(plot_dir, exist_ok=True)
    return [_save(fig, os.path.join(plot_dir, f"{name}.png")) for name, fig in figures.items()]
