"""What every validation figure shares, so that a reader takes it in at a glance.

* :func:`style`: the context the figures are drawn in (:meth:`Report.write
  <granular.validation.report.Report.write>` draws every study's figure in it): each
  colour of the cycle comes with its own line style and width, wider first, so a curve
  drawn over an equal one (two components that coincide, a conserved quantity at 0)
  leaves the earlier one visible;
* :func:`finish`: legends right of their panels (outside: they cover no data), and tick
  labels of a logarithmic axis spanning less than a few decades at 1, 2 and 5 times the
  powers of ten as plain numbers instead of crowded minor labels.
"""

from __future__ import annotations

__all__ = ["finish", "style"]

#: Matplotlib's ten colours ("C0" ... "C9", which a property cycle cannot name)
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
          "#17becf"]  # fmt: skip
LINESTYLES = ["-", "--", "-.", ":", "-", "--", "-.", ":", "-", "--"]
LINEWIDTHS = [2.2, 1.9, 1.7, 1.6, 1.3, 1.2, 1.2, 1.2, 1.0, 1.0]


def style():
    """A ``matplotlib.rc_context`` whose property cycle pairs colours with line styles
    and widths (module docstring)."""
    import matplotlib
    from cycler import cycler

    cycle = cycler(color=COLORS) + cycler(linestyle=LINESTYLES) + cycler(linewidth=LINEWIDTHS)
    return matplotlib.rc_context({"axes.prop_cycle": cycle})


def _log_ticks(axis) -> None:
    import numpy as np
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(axis.get_view_interval())
    if not (lo > 0 and hi > 0) or np.log10(hi / lo) > 2.5:
        return
    axis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def finish(fig) -> None:
    """Move every 2-D panel's legend right of the panel and give short logarithmic axes
    plain tick labels (module docstring). Call it when the figure is drawn, before
    saving; use a constrained layout, which makes room for the legends."""
    for ax in fig.axes:
        if getattr(ax, "name", "") == "3d":
            continue
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                _log_ticks(axis)
        legend = ax.get_legend()
        if legend is None:
            continue
        handles, labels = legend.legend_handles, [t.get_text() for t in legend.get_texts()]
        size = legend.get_texts()[0].get_fontsize() if labels else None
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  fontsize=size)  # fmt: skip
