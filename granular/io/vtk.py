"""ParaView output: a ``.pvd`` collection of ``.vtu`` frames, and the walls.

Layout of an output directory ``OUT``::

    OUT/frames.pvd                 collection: one <DataSet timestep=t file=...> per frame
    OUT/frames/frame_000000.vtu    frame 0 (binary, zlib-compressed, written by meshio)
    OUT/frames/frame_000001.vtu    ...
    OUT/walls.vtu                  planar walls as quads (:func:`write_walls`)
    OUT/walls.pvd, OUT/walls/      with moving walls instead: the walls at each frame's
                                   time (:class:`WallFrameWriter`)

Each frame is an unstructured grid with the particles as points and two cell blocks:

* ``vertex`` cells, one per particle (cell ``i`` is point ``i``), so that ParaView draws
  the particles without a filter;
* ``line`` cells, one per bond ``(a, b)`` (if bonds are given), after the vertex cells.

Point data (``point_data``: radius, velocity, angular velocity, director vectors,
energies, ...) belong to the points. Cell data (``cell_data``: per-bond ``strain``,
``broken``, ...) belong to the bonds; VTK needs every cell array on every cell, so the
vertex cells carry each bond array filled with 0 (``strain`` 0, ``broken`` 0, ...) of
the same dtype and number of components. To look at the bonds alone, use ParaView's
"Extract Cells By Type" (Line) filter.

Crash safety: each frame is written under a temporary name in ``frames/`` and renamed;
``frames.pvd`` is rewritten (temporary file + rename) after each frame and lists exactly
the frames written so far. A killed run leaves a readable collection; at worst a
``.frame_NNNNNN.vtu.PID.tmp`` file or an unlisted last frame, which
:meth:`FrameWriter.resume` removes.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from xml.etree import ElementTree as ET
from xml.sax.saxutils import quoteattr

import numpy as np

from ._atomic import atomic_write, atomic_write_bytes, fsync_dir, fsync_file, remove_temp_files

PVD_NAME = "frames.pvd"
FRAMES_DIR = "frames"

#: dtypes a VTU file stores (bool arrays are written as uint8).
_VTU_DTYPES = tuple(
    np.dtype(t)
    for t in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
)


def _data_array(what: str, name, value, n: int) -> np.ndarray:
    """``value`` as an (n,) or (n, k) array of a VTU dtype, or a ValueError naming it."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{what}: array names must be non-empty strings, got {name!r}")
    a = np.asarray(value)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    if a.dtype.newbyteorder("=") not in _VTU_DTYPES:
        raise ValueError(f"{what}[{name!r}]: dtype {a.dtype} cannot be stored; allowed: float32/64, (u)int8-64, bool")
    if a.ndim not in (1, 2) or a.shape[0] != n or (a.ndim == 2 and a.shape[1] < 1):
        raise ValueError(f"{what}[{name!r}]: expected shape ({n},) or ({n}, k), got {a.shape} (flatten tensors)")
    return a


def _dir_arg(out_dir) -> str:
    if not isinstance(out_dir, (str, os.PathLike)):
        raise ValueError(f"out_dir: expected a directory path, got {out_dir!r}")
    return os.fspath(out_dir)


def _check_time(time, last) -> float:
    try:
        t = float(time)
    except (TypeError, ValueError):
        raise ValueError(f"time: expected a number, got {time!r}") from None
    if not np.isfinite(t):
        raise ValueError(f"time: must be finite, got {t!r}")
    if last is not None and not t > last:
        raise ValueError(f"time: frames must have increasing times; got {t!r} after a frame at {last!r}")
    return t


def _pvd_text(frames) -> str:
    lines = [
        '<?xml version="1.0"?>',
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
        "  <Collection>",
    ]
    for time, rel in frames:
        lines.append(f'    <DataSet timestep="{time!r}" group="" part="0" file={quoteattr(rel)}/>')
    lines += ["  </Collection>", "</VTKFile>", ""]
    return "\n".join(lines)


def _read_pvd(path: str) -> list[tuple[float, str]]:
    """The ``(time, file)`` entries of a ``.pvd`` collection, in file order (``file`` as
    written, relative to the ``.pvd``'s directory). ValueError if it is not a collection."""

    try:
        root = ET.parse(path).getroot()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such collection file") from None
    except ET.ParseError as exc:
        raise ValueError(f"{path}: not a readable .pvd collection ({exc})") from None
    coll = root.find("Collection")
    if root.tag != "VTKFile" or root.get("type") != "Collection" or coll is None:
        raise ValueError(f"{path}: not a VTKFile of type Collection")
    out = []
    for k, ds in enumerate(coll.findall("DataSet")):
        try:
            out.append((float(ds.attrib["timestep"]), ds.attrib["file"]))
        except (KeyError, ValueError):
            raise ValueError(f"{path}: DataSet {k} needs a numeric 'timestep' and a 'file' attribute") from None
    return out


class FrameWriter:
    """Writes ``OUT/frames/frame_NNNNNN.vtu`` frames and keeps ``OUT/frames.pvd`` listing them.

    ``FrameWriter(out_dir)`` starts a new collection: it creates ``out_dir/frames/``,
    deletes frame files and temporary files left there by an earlier run (they would
    otherwise mix two runs), and writes an empty ``frames.pvd``. Use :meth:`resume` to
    continue an existing collection instead.

    Frame times must increase strictly (ParaView keys frames by time).
    """

    #: The collection's file, its folder and the frames' name stem (a subclass may change them).
    pvd_name, dir_name, stem = PVD_NAME, FRAMES_DIR, "frame"

    def __init__(self, out_dir: str):
        self._setup(out_dir)
        for name in os.listdir(self.frames_dir):
            if self._match(name):
                os.unlink(os.path.join(self.frames_dir, name))
        self._write_pvd(self._frames)

    @classmethod
    def _match(cls, name):
        return re.match(rf"^{cls.stem}_(\d{{6,}})\.vtu$", name)

    def _setup(self, out_dir) -> None:
        self.out_dir = _dir_arg(out_dir)
        self.frames_dir = os.path.join(self.out_dir, self.dir_name)
        self.pvd_path = os.path.join(self.out_dir, self.pvd_name)
        os.makedirs(self.frames_dir, exist_ok=True)
        remove_temp_files(self.frames_dir)
        remove_temp_files(self.out_dir, self.pvd_name)
        self._frames: list[tuple[float, str]] = []  # (time, path relative to out_dir)
        self.next_index = 0
        self._unsynced: list[str] = []  # written atomically, not yet flushed to disk

    @classmethod
    def resume(cls, out_dir: str, after_time: float | None = None) -> "FrameWriter":
        """Reopen the collection in ``out_dir`` and continue it.

        Frames with ``time > after_time`` (when given: the time of the checkpoint the run
        restarts from) are removed from ``frames.pvd``, which is rewritten atomically
        first, and their files are then deleted. Numbering continues after the last kept
        frame; frame files not listed in the ``.pvd`` with a number at or beyond that
        (an interrupted write) are deleted. ValueError if ``out_dir`` has no readable
        ``frames.pvd``, if it lists a file not written by this class, or if a kept frame's
        file is missing.
        """
        self = cls.__new__(cls)
        pvd = os.path.join(_dir_arg(out_dir), cls.pvd_name)
        if not os.path.isfile(pvd):
            raise ValueError(f"{pvd}: no such collection file; nothing to resume in {_dir_arg(out_dir)}")
        self._setup(out_dir)
        entries = _read_pvd(self.pvd_path)
        frames, indices, last = [], [], None
        for time, rel in entries:
            head, name = os.path.split(rel.replace("\\", "/"))
            m = self._match(name)
            if head != self.dir_name or m is None:
                raise ValueError(f"{self.pvd_path}: lists {rel!r}, not a frame of this writer "
                                 f"({self.dir_name}/{self.stem}_N.vtu)")  # fmt: skip
            if last is not None and not time > last:
                raise ValueError(f"{self.pvd_path}: frame times do not increase ({time!r} after {last!r})")
            last = time
            frames.append((time, f"{self.dir_name}/{name}"))
            indices.append(int(m.group(1)))
        t_cut = None if after_time is None else float(after_time)
        n_keep = sum(1 for t, _ in frames if t_cut is None or t <= t_cut)  # times increase: a prefix
        self._frames, dropped = frames[:n_keep], frames[n_keep:]
        for _, rel in self._frames:
            if not os.path.isfile(os.path.join(self.out_dir, rel)):
                raise ValueError(f"{self.pvd_path}: lists {rel!r} but {os.path.join(self.out_dir, rel)} is missing")
        self.next_index = max(indices[:n_keep]) + 1 if n_keep else 0
        if dropped:
            self._write_pvd(self._frames, durable=True)
        listed = {os.path.basename(rel) for _, rel in self._frames}
        for _, rel in dropped:
            try:
                os.unlink(os.path.join(self.out_dir, rel))
            except FileNotFoundError:
                pass
        for name in os.listdir(self.frames_dir):
            m = self._match(name)
            if m and name not in listed and int(m.group(1)) >= self.next_index:
                os.unlink(os.path.join(self.frames_dir, name))
        return self

    @property
    def frames(self) -> list[tuple[float, str]]:
        """``(time, path relative to out_dir)`` of each frame written so far, in order."""
        return list(self._frames)

    def _write_pvd(self, frames, durable=False) -> None:
        atomic_write_bytes(self.pvd_path, _pvd_text(frames).encode("utf-8"), durable)
        if not durable:
            self._unsynced.append(self.pvd_path)

    def sync(self) -> None:
        """Flush the frames and the collection written since the last call to disk (a
        run calls it at every checkpoint). Each write is already atomic for readers and
        survives the process being killed; this makes them survive a machine crash."""
        for path in dict.fromkeys(self._unsynced):
            if os.path.exists(path):
                fsync_file(path)
        if self._unsynced:
            fsync_dir(self.frames_dir)
            fsync_dir(self.out_dir)
        self._unsynced = []

    def write(self, time: float, points, point_data: dict, lines=None, cell_data: dict | None = None) -> str:
        """Write the next frame and list it in ``frames.pvd``; returns the frame's path.

        ``time``: float, strictly greater than the previous frame's time.
        ``points``: (N, 3) float, particle centres [L].
        ``point_data``: name -> (N,) or (N, k) array per particle (float32/64, integer or
        bool; bool is stored as uint8), e.g. ``radius`` (N,), ``velocity`` (N, 3).
        ``lines``: (B, 2) integer particle indices of the bonds, or None for no bonds.
        ``cell_data``: name -> (B,) or (B, k) array per bond (e.g. ``strain`` float64,
        ``broken`` int8); only with ``lines``. The vertex cells carry each as zeros.
        With B == 0 the frame has no line block and no cell data.

        Nothing is listed unless the whole frame is on disk; on an error the collection
        is left as it was.
        """
        import meshio

        t = _check_time(time, self._frames[-1][0] if self._frames else None)
        pts = np.asarray(points)
        if pts.ndim != 2 or pts.shape[1] != 3 or pts.dtype.kind != "f":
            raise ValueError(f"points: expected an (N, 3) float array, got shape {pts.shape}, dtype {pts.dtype}")
        n = pts.shape[0]
        if n == 0:  # VTK reads an empty grid, meshio's reader does not
            raise ValueError("points: a frame needs at least one particle, got N = 0")
        if not isinstance(point_data, dict):
            raise ValueError(f"point_data: expected a dict of name -> (N,) or (N, k) array, not {type(point_data)}")
        pdata = {name: _data_array("point_data", name, v, n) for name, v in point_data.items()}
        cells = [("vertex", np.arange(n, dtype=np.int64).reshape(n, 1))]
        cdata = {}
        if lines is None:
            if cell_data:
                raise ValueError("cell_data: given without lines; cell data are per bond and need lines (B, 2)")
        else:
            conn = np.asarray(lines)
            if conn.ndim != 2 or conn.shape[1] != 2 or conn.dtype.kind not in "iu":
                raise ValueError(f"lines: expected a (B, 2) integer array, got shape {conn.shape}, dtype {conn.dtype}")
            conn = conn.astype(np.int64)
            if conn.size and (conn.min() < 0 or conn.max() >= n):
                raise ValueError(f"lines: particle indices must lie in [0, {n}), got [{conn.min()}, {conn.max()}]")
            cells.append(("line", conn))
            if cell_data is not None and not isinstance(cell_data, dict):
                raise ValueError(f"cell_data: expected a dict of name -> (B,) or (B, k) array, not {type(cell_data)}")
            for name, v in (cell_data or {}).items():
                a = _data_array("cell_data", name, v, conn.shape[0])
                cdata[name] = [np.zeros((n,) + a.shape[1:], dtype=a.dtype), a]
            if conn.shape[0] == 0:  # no bonds: no line block (meshio cannot read an empty one)
                cells.pop()
                cdata = {}
        return self._append(t, meshio.Mesh(pts, cells, point_data=pdata, cell_data=cdata))

    def _append(self, t: float, mesh) -> str:
        """Write ``mesh`` as the next frame at time ``t`` (checked) and list it."""
        import meshio

        rel = f"{self.dir_name}/{self.stem}_{self.next_index:06d}.vtu"
        path = os.path.join(self.out_dir, rel)
        atomic_write(path, lambda tmp: meshio.write(tmp, mesh, file_format="vtu", binary=True, compression="zlib"),
                     durable=False)  # fmt: skip
        self._unsynced.append(path)
        frames = self._frames + [(t, rel)]
        try:
            self._write_pvd(frames)
        except BaseException:
            try:  # keep "the .pvd lists exactly the frame files"
                os.unlink(path)
            except OSError:
                pass
            raise
        self._frames = frames
        self.next_index += 1
        return path


def _plane_basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit tangents ``t1, t2`` with ``(t1, t2, n)`` right-handed, for (W, 3) unit ``n``."""
    axis = np.zeros_like(n)
    axis[np.arange(len(n)), np.argmin(np.abs(n), axis=1)] = 1.0
    t1 = np.cross(n, axis)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(n, t1)


def write_walls(out_dir: str, planes, center, size: float) -> str | None:
    """Write the planar walls to ``out_dir/walls.vtu`` (atomically) for ParaView.

    ``planes``: (W, 4) float, rows ``[n1, n2, n3, c]`` of the walls ``n·x = c`` with unit
    ``n`` (the side the particles may occupy).
    ``center``: (3,) float, the point the walls are drawn around, e.g. the particles' centroid.
    ``size``: side length of each square [L], > 0.

    Each wall is a ``quad`` cell centred at the projection of ``center`` onto its plane,
    with its corners counter-clockwise about ``n`` (so the quad's normal is ``n``). Cell
    data: ``normal`` (W, 3) float64 and ``wall_id`` (W,) int64. Returns the path, or None
    (writing nothing) when W == 0.
    """
    import meshio

    p = np.asarray(planes, dtype=np.float64)
    if p.ndim == 1 and p.size == 0:
        p = p.reshape(0, 4)
    if p.ndim != 2 or p.shape[1] != 4 or not np.isfinite(p).all():
        raise ValueError(f"planes: expected a finite (W, 4) array of [n1, n2, n3, c], got shape {p.shape}")
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (3,) or not np.isfinite(c).all():
        raise ValueError(f"center: expected 3 finite numbers, got {center!r}")
    s = float(size)
    if not (np.isfinite(s) and s > 0):
        raise ValueError(f"size: must be finite and > 0, got {size!r}")
    if len(p) == 0:
        return None
    n, off = p[:, :3], p[:, 3]
    norms = np.linalg.norm(n, axis=1)
    bad = np.abs(norms - 1.0) > 1e-9
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"planes: normals must be unit vectors; wall {k} has |n| = {float(norms[k])!r}")
    mesh = _walls_mesh(meshio, n, off, c, s)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "walls.vtu")
    return atomic_write(path, lambda tmp: meshio.write(tmp, mesh, file_format="vtu", binary=True, compression="zlib"))


def _walls_mesh(meshio, n, off, c, s):
    """Squares of side ``s`` in the planes ``n·x = off``, centred at ``c``'s projections."""
    foot = c[None, :] - (n @ c - off)[:, None] * n
    t1, t2 = _plane_basis(n)
    h = 0.5 * s
    a, b = h * t1, h * t2
    corners = np.stack([foot - a - b, foot + a - b, foot + a + b, foot - a + b], axis=1)  # (W, 4, 3)
    return meshio.Mesh(
        corners.reshape(-1, 3),
        [("quad", np.arange(4 * len(n), dtype=np.int64).reshape(-1, 4))],
        cell_data={"normal": [n.copy()], "wall_id": [np.arange(len(n), dtype=np.int64)]},
    )


class WallFrameWriter(FrameWriter):
    """``OUT/walls.pvd`` and ``OUT/walls/walls_NNNNNN.vtu``: the planar walls at each
    frame's time, for runs with moving walls (a wall in motion moves in ParaView). The same
    contract as :class:`FrameWriter` (new collection or :meth:`~FrameWriter.resume`,
    strictly increasing times, atomic files); each frame is what :func:`write_walls`
    draws, the squares centred at the projections of ``center``."""

    pvd_name, dir_name, stem = "walls.pvd", "walls", "walls"

    def write_walls(self, time: float, planes, center, size: float) -> str:
        """Write the walls ``planes`` (W, 4) at ``time``; returns the frame's path."""
        import meshio

        t = _check_time(time, self._frames[-1][0] if self._frames else None)
        p = np.asarray(planes, dtype=np.float64).reshape(-1, 4)
        return self._append(t, _walls_mesh(meshio, p[:, :3], p[:, 3], np.asarray(center, dtype=np.float64),
                                           float(size)))  # fmt: skip


class MeshFrameWriter(FrameWriter):
    """``OUT/meshes.pvd`` and ``OUT/meshes/meshes_NNNNNN.vtu``: the triangle meshes at each
    frame's time, where they are (a moving mesh moves in ParaView), with cell data
    ``mesh`` (the mesh's index) and ``force`` (the particles' force on each triangle)
    and point data ``displacement`` (from the pose at ``t = 0``). The same contract as
    :class:`FrameWriter`."""

    pvd_name, dir_name, stem = "meshes.pvd", "meshes", "meshes"

    def write_meshes(self, time: float, points, triangles, mesh_id, force, displacement) -> str:
        """Write the meshes' ``points`` (P, 3) and ``triangles`` (T, 3) with the cell data
        ``mesh_id`` (T,) and ``force`` (T, 3) at ``time``; returns the frame's path."""
        import meshio

        t = _check_time(time, self._frames[-1][0] if self._frames else None)
        pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        tri = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
        m = meshio.Mesh(pts, [("triangle", tri)],
                        point_data={"displacement": np.asarray(displacement, dtype=np.float64).reshape(-1, 3)},
                        cell_data={"mesh": [np.asarray(mesh_id, dtype=np.int32)],
                                   "force": [np.asarray(force, dtype=np.float64).reshape(-1, 3)]})  # fmt: skip
        return self._append(t, m)


class FrameQueue:
    """Writes the frames of a :class:`FrameWriter` on a background thread, in order, so
    that the step loop does not wait for the VTK encoding and the disk.

    :meth:`write` takes the same arguments as :meth:`FrameWriter.write` (host arrays,
    which must not be changed afterwards) and returns at once unless ``depth`` frames are
    already waiting. An error of the writer is raised by the next :meth:`write`,
    :meth:`flush` or :meth:`close`. :meth:`flush` waits until every frame is written,
    :meth:`sync` also flushes them to disk (before a checkpoint). Frames not yet written
    when the process is killed are lost, and ``frames.pvd`` lists only written ones.
    """

    def __init__(self, writer: FrameWriter, depth: int = 4):
        self.writer = writer
        self._queue = queue.Queue(maxsize=max(1, int(depth)))
        self._error = None
        self._thread = threading.Thread(target=self._run, name="granular-frames", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    self.writer.write(*item[0], **item[1])
            except BaseException as exc:  # reported to the step loop's thread
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc

    def write(self, *args, **kwargs) -> None:
        self._raise()
        self._queue.put((args, kwargs))

    def flush(self) -> None:
        self._queue.join()
        self._raise()

    def sync(self) -> None:
        self.flush()
        self.writer.sync()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.join()
            self._queue.put(None)
            self._thread.join()
        self._raise()

    @property
    def frames(self):
        self.flush()
        return self.writer.frames
