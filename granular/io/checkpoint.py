"""Checkpoints: one ``.npz`` holding named arrays and a JSON ``meta`` dict.

The file is a standard NumPy ``.npz`` (a zip of ``NAME.npy`` members, uncompressed;
``np.load`` reads it) with the meta data as a 0-d unicode array under the reserved
key :data:`META_KEY`. Arrays keep their dtype, byte order, memory order and every bit of
their values, so a run restarted from a checkpoint continues bit-for-bit on the same
backend. Pickled (object) arrays are refused, on writing and on reading.

The file is written to a temporary name in the same directory, fsync'ed and renamed
over ``path``: a run killed while saving leaves the previous checkpoint intact.
"""

from __future__ import annotations

import os
import zipfile

import numpy as np

from ..errors import CheckpointError
from ._atomic import atomic_write
from .jsonio import dumps, loads

#: Reserved array name holding the JSON-encoded meta data.
META_KEY = "__granular_meta__"


def _host_array(path, name, value) -> np.ndarray:
    if not isinstance(name, str) or not name or "/" in name or "\\" in name:
        raise CheckpointError(f"checkpoint {path}: array name {name!r} must be a non-empty string without slashes")
    if name == META_KEY:
        raise CheckpointError(f"checkpoint {path}: array name {META_KEY!r} is reserved for the meta data")
    try:
        a = np.asarray(value)
    except TypeError as exc:  # e.g. a device array: copy it to the host first
        raise CheckpointError(f"checkpoint {path}: array {name!r} is not a host array ({exc})") from None
    if a.dtype.hasobject:
        raise CheckpointError(f"checkpoint {path}: array {name!r} has dtype {a.dtype}; object arrays are not stored")
    return a


def save_checkpoint(path: str, arrays: dict, meta: dict) -> None:
    """Write ``arrays`` and ``meta`` to the checkpoint ``path`` atomically.

    The file is written under a temporary name in the same directory, flushed to disk
    and renamed over ``path``: a run killed while saving leaves the previous checkpoint
    intact. Arrays keep their dtype, byte order, memory order and every bit.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file (``.npz``); replaced if it exists.
    arrays : dict of str to ndarray
        Host arrays of any shape and non-object dtype, by name (non-empty, without
        slashes, not :data:`META_KEY`). Device arrays must be copied to the host first.
    meta : dict
        JSON-serialisable meta data: str keys; tuples come back as lists; floats
        round-trip exactly, NaN and inf included (stored as standard JSON, with the
        strings of :mod:`granular.io.jsonio` for them).

    Raises
    ------
    CheckpointError
        ``arrays`` or ``meta`` not a dict, a bad array name, an object or non-host
        array, or ``meta`` not JSON-serialisable.
    OSError
        The file cannot be written (the previous file, if any, is left as it was).
    """
    path = os.fspath(path)
    if not isinstance(arrays, dict):
        raise CheckpointError(f"checkpoint {path}: arrays must be a dict of name -> array, got {type(arrays).__name__}")
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint {path}: meta must be a dict, got {type(meta).__name__}")
    host = {name: _host_array(path, name, a) for name, a in arrays.items()}
    try:
        text = dumps(meta, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path}: meta is not JSON-serialisable ({exc})") from None
    host[META_KEY] = np.array(text)

    def write(tmp):
        # zipfile + format.write_array rather than np.savez(**arrays): savez's own
        # keyword arguments (file, allow_pickle) would collide with array names.
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, a in host.items():
                with zf.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, a, allow_pickle=False)

    atomic_write(path, write)


def load_checkpoint(path: str) -> tuple[dict[str, np.ndarray], dict]:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or os.PathLike
        The checkpoint file.

    Returns
    -------
    arrays : dict of str to ndarray
        The arrays as saved (dtype, shape and values bit for bit), host NumPy arrays.
    meta : dict
        The meta data (tuples saved come back as lists).

    Raises
    ------
    CheckpointError
        Naming ``path``: the file is missing, truncated, corrupt or not a checkpoint
        (no meta data, or meta data that are not a JSON object); pickled arrays are
        refused.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path}: no such file")
    try:
        # our own file object: np.load leaks the one it opens when the zip is corrupt
        with open(path, "rb") as f:
            npz = np.load(f, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise CheckpointError(f"checkpoint {path}: not an .npz archive")
            with npz:
                arrays = {name: npz[name] for name in npz.files}
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise CheckpointError(f"checkpoint {path}: corrupt or unreadable ({type(exc).__name__}: {exc})") from None
    if META_KEY not in arrays:
        raise CheckpointError(f"checkpoint {path}: not a granular checkpoint (no {META_KEY!r} entry)")
    raw = arrays.pop(META_KEY)
    try:
        meta = loads(str(raw[()]))
    except (ValueError, TypeError, IndexError) as exc:
        raise CheckpointError(f"checkpoint {path}: meta data are not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint {path}: meta data are not a JSON object")
    return arrays, meta
