"""Output: ParaView frames (:mod:`.vtk`), CSV time series (:mod:`.series`), checkpoints
(:mod:`.checkpoint`) and plots (:mod:`.plots`). Every file is written atomically
(temporary file in the same directory, then ``os.replace``), so a killed run never
leaves a half-written output file."""

from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .plots import plot_series
from .series import SeriesWriter, read_series, series_columns
from .vtk import FrameWriter, MeshFrameWriter, WallFrameWriter, write_walls

__all__ = [
    "CheckpointError",
    "FrameWriter",
    "SeriesWriter",
    "WallFrameWriter",
    "MeshFrameWriter",
    "load_checkpoint",
    "plot_series",
    "read_series",
    "series_columns",
    "save_checkpoint",
    "write_walls",
]
