"""The run layer: one run loop for every system, its writers and the run folder.

=====================  ================================================================
:mod:`.runner`         :class:`Runner`, the ``System`` protocol, triggers
:mod:`.writers`        the run folder's writers (series, frames, checkpoints, record)
:mod:`.simulation`     :class:`Simulation`: a particle model and state run into a folder
:mod:`.folder`         what ``--out`` holds, overwrite and resume checks
:mod:`.progress`       the progress bar, JSON events, the long-run guard
:mod:`.command`        ``granular run``
=====================  ================================================================
"""

from .runner import AtStep, Callback, Periodic, Runner, System, Trigger
from .simulation import Simulation, load_state, run_sampled, save_state
from .writers import Checkpoints, Frames, Record, Series, folder_writers

__all__ = ["AtStep", "Callback", "Checkpoints", "Frames", "Periodic", "Record", "Runner", "Series", "Simulation",
           "System", "Trigger", "folder_writers", "load_state", "run_sampled", "save_state"]  # fmt: skip
