"""An ensemble's output directory, written as the ensemble goes.

Each chunk's summary table is saved, as soon as it is back, to
``OUT/chunks/chunk_START_STOP.npz`` (atomically), next to ``OUT/chunks/manifest.json``
(what the ensemble is: scene, N, sampled fields, seed, chunking, steps, backend). An
interrupted ensemble keeps every finished chunk; ``granular ensemble ... --resume`` with
the same arguments runs only the missing ones. When all are done the summaries are
gathered into ``summaries.npz`` (and the other outputs), the manifest is kept in
``ensemble.json`` (its ``manifest``) and ``chunks/`` is removed: ``--resume`` of a
finished ensemble checks its arguments against that one.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np

from ..io._atomic import atomic_write, atomic_write_bytes, remove_temp_files
from ..io.jsonio import dumps, encode, loads
from ..resources import check_disk, check_writable
from ..run.folder import ENSEMBLE_FILES, OutDirError, clear, plan_out_dir, scene_differences

CHUNKS_DIR = "chunks"
MANIFEST = "manifest.json"
#: The record of a finished ensemble (its ``manifest`` entry: what ``--resume`` compares).
RECORD = "ensemble.json"
#: What an ``ensemble.json`` of an earlier version (no ``manifest``) records of the manifest.
RECORDED_ARGUMENTS = ("n", "vary", "seed", "chunk", "steps", "dt", "backend")
_CHUNK_RE = re.compile(r"^chunk_(\d+)_(\d+)\.npz$")


class ChunkStore:
    """Finished chunks of one ensemble in ``out/chunks``; ``manifest`` a JSON-able dict
    that identifies the ensemble (a resumed ensemble must have the same)."""

    def __init__(self, out, manifest):
        self.out = os.fspath(out)
        self.dir = os.path.join(self.out, CHUNKS_DIR)
        self.manifest = json_form(manifest)

    @classmethod
    def create(cls, out, manifest) -> ChunkStore:
        """A new store (the directory must hold no chunks)."""
        self = cls(out, manifest)
        os.makedirs(self.dir, exist_ok=True)
        atomic_write_bytes(os.path.join(self.dir, MANIFEST), dumps(self.manifest, indent=2).encode())
        return self

    @classmethod
    def reopen(cls, out, manifest) -> ChunkStore:
        """The store of an interrupted ensemble in ``out``; OutDirError when there is none or
        it was made with other arguments (the message says which)."""
        self = cls(out, manifest)
        path = os.path.join(self.dir, MANIFEST)
        try:
            with open(path) as fh:
                old = loads(fh.read())
        except (OSError, ValueError):
            raise OutDirError(f"--resume: {self.out} holds no interrupted ensemble (no {CHUNKS_DIR}/{MANIFEST})") from None
        check_arguments(old, self.manifest, self.out, "interrupted")
        remove_temp_files(self.dir)
        return self

    def path(self, start, stop) -> str:
        return os.path.join(self.dir, f"chunk_{start:010d}_{stop:010d}.npz")

    def done(self) -> set[tuple[int, int]]:
        """``(start, stop)`` of the chunks on disk."""
        out = set()
        for name in os.listdir(self.dir):
            m = _CHUNK_RE.match(name)
            if m:
                out.add((int(m.group(1)), int(m.group(2))))
        return out

    def save(self, part) -> dict:
        """Write one chunk's table (with its ``body`` or ``replica`` column) atomically;
        returns it."""
        index = part["body"] if "body" in part else part["replica"]
        start = int(index[0])
        stop = start + len(index)

        def write(tmp):
            with open(tmp, "wb") as fh:
                np.savez(fh, **part)

        atomic_write(self.path(start, stop), write)
        return part

    def load(self, start, stop) -> dict:
        with np.load(self.path(start, stop)) as z:
            return {k: z[k] for k in z.files}

    def remove(self) -> None:
        """Delete the chunks (once the summaries are written)."""
        shutil.rmtree(self.dir, ignore_errors=True)


def json_form(manifest) -> dict:
    """``manifest`` as it is stored: standard JSON values (:mod:`granular.io.jsonio`),
    other objects as their ``str``."""
    return json.loads(dumps(manifest, default=str))


def check_arguments(old, manifest, out, state) -> None:
    """OutDirError naming what differs when the ensemble in ``out`` (``state``:
    ``"interrupted"`` or ``"finished"``), whose manifest was ``old``, is not the ensemble of
    ``manifest`` (the one a ``--resume`` command describes)."""
    old, manifest = encode(old), json_form(manifest)  # compared as stored
    if old != manifest:
        diffs = scene_differences(old, manifest, labels=(f"the {state} ensemble", "this command"))
        verb = "started" if state == "interrupted" else "run"
        raise OutDirError(f"--resume: the ensemble in {out} was {verb} with other arguments: {'; '.join(diffs)}")


def check_finished(out, manifest) -> None:
    """``--resume`` of the finished ensemble in ``out``: OutDirError unless ``manifest``
    is the one it was run with (the ``manifest`` of its ``ensemble.json``; of a record
    without one, the arguments it records)."""
    try:
        with open(os.path.join(out, RECORD)) as fh:
            record = loads(fh.read())
    except (OSError, ValueError):
        record = None
    if not isinstance(record, dict):
        raise OutDirError(f"--resume: {out} holds a finished ensemble without a readable {RECORD}, so the arguments it "
                          "was run with are unknown; give --overwrite to run it again, or choose another directory")  # fmt: skip
    old = record.get("manifest")
    if not isinstance(old, dict):  # written before ensemble.json kept the manifest
        old = {k: record[k] for k in RECORDED_ARGUMENTS if k in record}
        manifest = {k: manifest[k] for k in old}
    check_arguments(old, manifest, out, "finished")


def open_store(out, manifest, resume=False, overwrite=False, n=0, columns=40) -> ChunkStore | None:
    """The chunk store for an ensemble writing into ``out``: a new one (``out`` empty or
    absent; an earlier ensemble only with ``overwrite``, after every check) or, with
    ``resume``, the interrupted one. None when ``resume`` finds the ensemble finished, run
    with the same arguments (other arguments are refused as for an interrupted one).
    Checks that ``out`` is writable and has room for ``n`` rows of ``columns`` values
    (twice: the chunks and the summaries). OutDirError / ResourceError otherwise."""
    out = os.fspath(out)
    if resume and overwrite:
        raise OutDirError("--resume continues the ensemble in --out and --overwrite replaces it; give one of them")
    if resume:
        if os.path.isfile(os.path.join(out, "summaries.npz")) and not os.path.isdir(os.path.join(out, CHUNKS_DIR)):
            check_finished(out, manifest)
            return None
        store = ChunkStore.reopen(out, manifest)
        check_writable(out)
        return store
    to_clear = plan_out_dir(out, overwrite=overwrite, ours=ENSEMBLE_FILES, what="ensemble")
    check_writable(out)
    check_disk(out, 2 * 8 * n * columns + 2**20, f"the ensemble ({n:,} bodies)")
    clear(to_clear)
    return ChunkStore.create(out, manifest)
