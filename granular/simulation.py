"""Deprecated module: its names moved in granular 0.2 and are forwarded from here, with a
:class:`DeprecationWarning`, for one release.

=====================================================  =====================================
``Simulation``                                         :mod:`granular.run.simulation`
``Progress``, ``Chunker``, ``format_duration``,        :mod:`granular.run.progress`
``long_run_refused``, ``LONG_RUN_STEPS``, ...
``frame_data``, ``series_row``, ``state_arrays``,      :mod:`granular.particles.system`
``restore_state``, ``STATE_ARRAYS``, ``DISSIPATED``
=====================================================  =====================================
"""

from ._compat import forward

__getattr__ = forward(__name__, {
    "granular.run.simulation": ("Simulation", "BodyRun"),
    "granular.run.runner": ("next_event",),
    "granular.run.progress": ("ASSUMED_RATE", "Chunker", "LONG_RUN_STEPS", "MAX_STEPS", "Progress",
                              "format_duration", "long_run_refused"),
    "granular.particles.system": ("DISSIPATED", "SMALL_SYSTEM", "STATE_ARRAYS", "contact_data", "frame_data",
                                  "restore_state", "series_row", "state_arrays"),
})  # fmt: skip
