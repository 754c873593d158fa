"""Atomic file replacement shared by the writers of :mod:`granular.io`.

A file is written under a temporary name in its own directory (so the rename stays on
one file system), flushed to disk, and moved over the final name with ``os.replace``.
A run killed at any moment leaves either the old file or the new one, never a mix; a
leftover temporary file (``.NAME.PID.tmp``) is the only trace of an interrupted write.
"""

from __future__ import annotations

import os

TMP_SUFFIX = ".tmp"


def temp_path(path: str) -> str:
    """The temporary name used while writing ``path``: ``DIR/.NAME.PID.tmp``."""
    head, tail = os.path.split(os.path.abspath(path))
    return os.path.join(head, f".{tail}.{os.getpid()}{TMP_SUFFIX}")


def is_temp_name(name: str, final_name: str | None = None) -> bool:
    """Whether the bare file ``name`` is a temporary file of this module (of
    ``final_name`` if given)."""
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return False
    if final_name is None:
        return True
    stem = name[1 : -len(TMP_SUFFIX)]
    base, _, pid = stem.rpartition(".")
    return base == final_name and pid.isdigit()


def fsync_file(path: str) -> None:
    """Flush the file at ``path`` to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: str) -> None:
    """Flush a directory entry (a rename) to disk where the platform allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, write, durable: bool = True) -> str:
    """Call ``write(tmp)`` to create the temporary file ``tmp``, then move it to ``path``.

    On any exception the temporary file is removed and the exception propagates, so
    ``path`` keeps its previous content (or stays absent). Returns ``path``.
    ``durable``: flush the file and the rename to disk before returning. Without it the
    replacement is still atomic for every reader and survives the process being killed
    (the operating system holds the data); only a crash of the machine itself could lose
    it before the next :func:`fsync_file` (a run syncs its output at each checkpoint).
    """
    tmp = temp_path(path)
    try:
        write(tmp)
        if durable:
            fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_dir(os.path.dirname(os.path.abspath(path)))
    return path


def atomic_write_bytes(path: str, data: bytes, durable: bool = True) -> str:
    """Replace ``path`` atomically with ``data`` (``durable`` as :func:`atomic_write`)."""

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)

    return atomic_write(path, write, durable)


def remove_temp_files(directory: str, final_name: str | None = None) -> list[str]:
    """Delete leftover temporary files in ``directory`` (those of ``final_name`` only, if
    given); returns the removed paths."""
    removed = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return removed
    for name in names:
        if is_temp_name(name, final_name):
            p = os.path.join(directory, name)
            try:
                os.unlink(p)
                removed.append(p)
            except OSError:
                pass
    return removed
