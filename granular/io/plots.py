"""PNG plots of a time series (:mod:`granular.io.series`), drawn with Matplotlib's Agg
canvas (no pyplot, no global backend switch, no display needed).

Three figures, each only if it has columns to show:

* ``plots/energies.png``: every ``kinetic_*``, ``U_*`` and ``dissipated_*`` column and
  ``total`` against ``time`` (with dissipative contacts also ``total + dissipated``, the
  conserved sum); a second panel shows the relative drift of the conserved sum
  (``total``, or ``total + dissipated``) when it is present and not 0 at the start;
* ``plots/momenta.png``: ``P_x, P_y, P_z`` (top) and ``L_x, L_y, L_z`` (bottom), those present;
* ``plots/invariants.png``: every other numeric column (e.g. ``broken_bonds``, scheme
  invariants), one panel each.
"""

from __future__ import annotations

import os

import numpy as np

from ._atomic import atomic_write

MOMENTA = ("P_x", "P_y", "P_z", "L_x", "L_y", "L_z")


def _is_energy(name: str) -> bool:
    return name.startswith(("kinetic_", "U_", "dissipated_")) or name in ("total", "total + dissipated", "total + U_released")


def _save(fig, path: str) -> str:
    def write(tmp):
        with open(tmp, "wb") as f:
            fig.savefig(f, format="png", dpi=110)

    return atomic_write(path, write)


def _figure(n_panels: int, title: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 1.0 + 2.6 * n_panels), layout="constrained")
    axes = fig.subplots(n_panels, 1, sharex=True, squeeze=False)[:, 0]
    axes[0].set_title(title)
    axes[-1].set_xlabel("time")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return fig, axes


def plot_series(series: dict, out_dir: str) -> list[str]:
    """Write the plots of ``series`` (column name -> (T,) array, with a ``time`` column,
    e.g. from :func:`~granular.io.series.read_series`) under ``out_dir/plots/``.

    Non-numeric columns are ignored. Each PNG is written atomically. Returns the paths
    written, in the order energies, momenta, invariants.
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
    others = [c for c in cols if c not in energies and c not in momenta]

    plot_dir = os.path.join(os.fspath(out_dir), "plots")
    os.makedirs(plot_dir, exist_ok=True)
    written = []

    if energies:
        e0 = cols[conserved][0] if conserved in cols and len(t) else 0.0
        drift = conserved in cols and np.isfinite(e0) and e0 != 0.0
        fig, axes = _figure(2 if drift else 1, "energies")
        for c in energies:
            axes[0].plot(t, cols[c], label=c, lw=2.0 if c in ("total", conserved) else 1.2,
                         ls="--" if c.startswith("dissipated_") else "-")  # fmt: skip
        axes[0].set_ylabel("energy")
        axes[0].legend(fontsize="small", ncols=min(4, len(energies)))
        if drift:
            axes[1].plot(t, (cols[conserved] - e0) / abs(e0), color="k", lw=1.0)
            axes[1].set_ylabel(f"(E - E₀) / |E₀|, E = {conserved}" if conserved != "total" else "(total - total₀) / |total₀|")
        written.append(_save(fig, os.path.join(plot_dir, "energies.png")))

    if momenta:
        groups = [g for g in ([c for c in momenta if c[0] == "P"], [c for c in momenta if c[0] == "L"]) if g]
        fig, axes = _figure(len(groups), "momenta")
        for ax, group in zip(axes, groups):
            for c in group:
                ax.plot(t, cols[c], label=c, lw=1.2)
            ax.set_ylabel("linear momentum" if group[0][0] == "P" else "angular momentum")
            ax.legend(fontsize="small")
        written.append(_save(fig, os.path.join(plot_dir, "momenta.png")))

    if others:
        fig, axes = _figure(len(others), "invariants")
        for ax, c in zip(axes, others):
            ax.plot(t, cols[c], lw=1.2)
            ax.set_ylabel(c)
        written.append(_save(fig, os.path.join(plot_dir, "invariants.png")))
    return written
