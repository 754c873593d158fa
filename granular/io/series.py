"""Time series (CSV) of energies by kind, momenta and invariants, one row per output.

File format: a header line of column names, then one line per row, every value written
with ``%.17g`` (enough digits to read back the same float64), ``\\n`` line ends. The
first column is always ``time``. Each row is written in one call and flushed as it is
appended (and the file is flushed to disk by :meth:`SeriesWriter.sync`, which a run calls
at every checkpoint), so a killed run leaves a file of complete lines (a last line without its ``\\n`` can only be
an interrupted write: :func:`read_series` and :meth:`SeriesWriter.resume` ignore it).
"""

from __future__ import annotations

import os

import numpy as np

from ._atomic import atomic_write_bytes

_FORBIDDEN = set(',"\n\r')


def _check_columns(columns) -> list[str]:
    if isinstance(columns, str) or not hasattr(columns, "__iter__"):
        raise ValueError(f"columns: expected a list of column names, got {columns!r}")
    cols = list(columns)
    for c in cols:
        if not isinstance(c, str) or not c or c != c.strip() or _FORBIDDEN & set(c):
            raise ValueError(
                f"columns: {c!r} is not allowed; names are non-empty strings without commas, quotes, "
                "newlines or outer spaces"
            )
    if not cols or cols[0] != "time":
        raise ValueError(f"columns: the first column must be 'time', got {cols[:1]}")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise ValueError(f"columns: duplicate names {dup}")
    return cols


def _parse(path: str) -> tuple[list[str], list[tuple[str, list[float]]]]:
    """Header and ``(line text, values)`` of every complete row of the series at ``path``."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such series file") from None
    lines = text.split("\n")
    if len(lines) < 2:  # no terminated header line
        raise ValueError(f"{path}: not a series file (no complete header line)")
    cols = _check_columns(lines[0].split(","))
    body = lines[1:-1]  # lines[-1] is "" or an unterminated (interrupted) row
    rows = []
    for k, line in enumerate(body, start=2):
        fields = line.split(",")
        if len(fields) != len(cols):
            raise ValueError(f"{path}, line {k}: expected {len(cols)} values, got {len(fields)}")
        try:
            rows.append((line, [float(x) for x in fields]))
        except ValueError:
            raise ValueError(f"{path}, line {k}: not a row of numbers: {line[:80]!r}") from None
    return cols, rows


def series_columns(path: str) -> list[str]:
    """The column names of the series at ``path`` (its header), or ``[]`` where there is
    no such file."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            line = f.readline()
    except FileNotFoundError:
        return []
    return _check_columns(line.rstrip("\n").split(",")) if line.endswith("\n") else []


def read_series(path: str) -> dict[str, np.ndarray]:
    """Read the series at ``path``: one array per column, in file column order.

    An unterminated last line (an interrupted write) is ignored.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV series file.

    Returns
    -------
    dict of str to ndarray
        Column name -> (T,) float64 array, ``T`` the number of complete rows; the first
        column is ``time`` [T].

    Raises
    ------
    ValueError
        Naming the path (and line): a missing file, a bad header, or a row that is not
        one number per column.
    """
    cols, rows = _parse(path)
    data = np.array([v for _, v in rows], dtype=np.float64).reshape(len(rows), len(cols))
    return {c: data[:, j].copy() for j, c in enumerate(cols)}


class SeriesWriter:
    """Appends rows to the CSV series at ``path``.

    ``SeriesWriter(path, columns)`` starts a new file (replacing any file there) with the
    header ``columns`` (a list of names, the first one ``time``). :meth:`append` writes a
    row; :meth:`resume` continues an existing file. Use as a context manager or call
    :meth:`close`.

    Parameters
    ----------
    path : str or os.PathLike
        The CSV file, written atomically with the header, then appended to.
    columns : list of str
        Column names: non-empty, unique, without commas, quotes, newlines or outer
        spaces; the first one ``time``.

    Attributes
    ----------
    path : str
        The file.
    columns : list of str
        The column names, in file order.

    Raises
    ------
    ValueError
        Bad ``columns``.
    OSError
        The file cannot be written.
    """

    def __init__(self, path: str, columns: list[str]):
        cols = _check_columns(columns)
        self._open(path, cols, (",".join(cols) + "\n").encode("utf-8"))

    def _open(self, path, cols, content: bytes) -> None:
        self.path = os.fspath(path)
        self.columns = cols
        self._known = set(cols)
        atomic_write_bytes(self.path, content)
        self._file = open(self.path, "a", encoding="utf-8", newline="")

    @classmethod
    def resume(cls, path: str, after_time: float | None) -> "SeriesWriter":
        """Reopen the series at ``path`` and append after its rows with ``time <= after_time``.

        Rows with ``time > after_time`` (written after the checkpoint a run restarts
        from) and an unterminated last line are removed, by rewriting the file
        atomically; ``after_time=None`` keeps every complete row. The columns are those
        of the file's header.

        Parameters
        ----------
        path : str or os.PathLike
            An existing series file.
        after_time : float or None
            Keep the rows with ``time <= after_time`` [T]; ``None``: all.

        Returns
        -------
        SeriesWriter
            A writer appending to the file.

        Raises
        ------
        ValueError
            As :func:`read_series` for a missing or malformed file.
        """
        cols, rows = _parse(path)
        t_cut = None if after_time is None else float(after_time)
        kept = [line for line, v in rows if t_cut is None or v[0] <= t_cut]
        self = cls.__new__(cls)
        self._open(path, cols, "".join(s + "\n" for s in [",".join(cols)] + kept).encode("utf-8"))
        return self

    def append(self, row: dict) -> None:
        """Write one row and flush it (one write: a killed run leaves whole lines).

        Parameters
        ----------
        row : dict of str to float
            Every column name mapped to a real scalar (no more, no less), written with
            ``%.17g``.

        Raises
        ------
        ValueError
            The writer is closed, or a column is missing, unknown or not a real scalar.
        """
        if self._file is None:
            raise ValueError(f"{self.path}: the series writer is closed")
        if not isinstance(row, dict):
            raise ValueError(f"row: expected a dict of column -> value, got {type(row).__name__}")
        for c in self.columns:
            if c not in row:
                raise ValueError(f"row: missing column {c!r} (series {self.path} has columns {self.columns})")
        extra = [k for k in row if k not in self._known]
        if extra:
            raise ValueError(f"row: unknown column(s) {extra} (series {self.path} has columns {self.columns})")
        fields = []
        for c in self.columns:
            v = row[c]
            if np.ndim(v) != 0 or isinstance(v, (str, bytes)):
                raise ValueError(f"row[{c!r}]: expected a real scalar, got {v!r}")
            try:
                fields.append("%.17g" % float(v))
            except (TypeError, ValueError):
                raise ValueError(f"row[{c!r}]: expected a real scalar, got {v!r}") from None
        self._file.write(",".join(fields) + "\n")  # one write: a kill leaves whole lines
        self._file.flush()

    def sync(self) -> None:
        """Flush the rows written so far to disk (a checkpoint's companion)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flush the rows to disk (:meth:`sync`) and close the file; closing twice is harmless."""
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None

    def __enter__(self) -> "SeriesWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        f = getattr(self, "_file", None)
        if f is not None:
            f.close()
