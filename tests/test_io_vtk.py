"""ParaView output (granular.io.vtk): frames read back by meshio and by VTK's own XML
reader, the .pvd collection, resuming, crash safety, walls."""

import os
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import meshio
import numpy as np
import pytest

from granular.io import FrameWriter, write_walls

vtk = pytest.importorskip("vtk")
from vtk.util.numpy_support import vtk_to_numpy  # noqa: E402

VTK_VERTEX, VTK_LINE, VTK_QUAD = 1, 3, 9


def _frame(rng, n=7, scale=1.0):
    points = scale * rng.standard_normal((n, 3))
    point_data = {
        "radius": rng.uniform(0.1, 0.5, n),
        "velocity": rng.standard_normal((n, 3)),
        "omega": rng.standard_normal((n, 3)),
        "director_1": rng.standard_normal((n, 3)),
        "id": np.arange(n, dtype=np.int32),
        "touching": rng.random(n) < 0.5,  # bool -> uint8
    }
    lines = np.array([[0, 1], [1, 2], [2, 3], [5, 6]], dtype=np.int64)
    cell_data = {
        "strain": rng.standard_normal(4) * 1e-3,
        "broken": np.array([0, 1, 0, 1], dtype=np.int8),
        "bond_force": rng.standard_normal((4, 3)),
    }
    return points, point_data, lines, cell_data


def _expected_point(a):
    a = np.asarray(a)
    return a.astype(np.uint8) if a.dtype == np.bool_ else a


def _read_vtk(path):
    reader = vtk.vtkXMLUnstructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    grid = reader.GetOutput()
    assert grid is not None and grid.GetNumberOfPoints() > 0, path
    pd, cd = grid.GetPointData(), grid.GetCellData()
    cells = grid.GetCells()
    return {
        "points": vtk_to_numpy(grid.GetPoints().GetData()),
        "point_data": {pd.GetArrayName(k): vtk_to_numpy(pd.GetArray(k)) for k in range(pd.GetNumberOfArrays())},
        "cell_data": {cd.GetArrayName(k): vtk_to_numpy(cd.GetArray(k)) for k in range(cd.GetNumberOfArrays())},
        "types": np.array([grid.GetCellType(k) for k in range(grid.GetNumberOfCells())]),
        "connectivity": vtk_to_numpy(cells.GetConnectivityArray()),
        "offsets": vtk_to_numpy(cells.GetOffsetsArray()),
    }


def _assert_same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if a.ndim == 1 and b.ndim == 2 and b.shape[1] == 1:
        b = b[:, 0]
    np.testing.assert_array_equal(a, b)


def _check_frame(path, points, point_data, lines, cell_data):
    n, nb = len(points), len(lines)
    # meshio
    m = meshio.read(path)
    _assert_same(m.points, points)
    assert set(m.point_data) == set(point_data)
    for k, v in point_data.items():
        _assert_same(m.point_data[k], _expected_point(v))
    assert [c.type for c in m.cells] == ["vertex", "line"]
    np.testing.assert_array_equal(m.cells[0].data[:, 0], np.arange(n))
    np.testing.assert_array_equal(m.cells[1].data, lines)
    assert set(m.cell_data) == set(cell_data)
    for k, v in cell_data.items():
        vertex_part, line_part = m.cell_data[k]
        _assert_same(line_part, v)
        assert vertex_part.shape == (n,) + np.shape(v)[1:] and not vertex_part.any()
    # VTK's own reader
    g = _read_vtk(path)
    _assert_same(g["points"], points)
    assert set(g["point_data"]) == set(point_data)
    for k, v in point_data.items():
        _assert_same(_expected_point(v), g["point_data"][k])
    np.testing.assert_array_equal(g["types"], [VTK_VERTEX] * n + [VTK_LINE] * nb)
    np.testing.assert_array_equal(g["offsets"], np.concatenate([np.arange(n + 1), n + 2 * np.arange(1, nb + 1)]))
    np.testing.assert_array_equal(g["connectivity"], np.concatenate([np.arange(n), lines.ravel()]))
    for k, v in cell_data.items():
        full = g["cell_data"][k]
        _assert_same(v, full[n:])
        assert not full[:n].any()


def _pvd_entries(out_dir):
    """(time, file) of each DataSet, checked the way ParaView's PVD reader resolves them."""
    root = ET.parse(os.path.join(out_dir, "frames.pvd")).getroot()
    assert root.tag == "VTKFile" and root.get("type") == "Collection"
    entries = [(float(d.get("timestep")), d.get("file")) for d in root.find("Collection").findall("DataSet")]
    for _, rel in entries:
        assert not os.path.isabs(rel)
        reader = vtk.vtkXMLGenericDataObjectReader()
        reader.SetFileName(os.path.join(out_dir, rel))
        reader.Update()
        assert reader.GetOutput().GetNumberOfPoints() > 0
    if hasattr(vtk, "vtkXMLCollectionReader"):  # dropped from recent VTK wheels
        coll = vtk.vtkXMLCollectionReader()
        coll.SetFileName(os.path.join(out_dir, "frames.pvd"))
        coll.UpdateInformation()
        assert coll.GetNumberOfAttributeValues("timestep") == len(entries)
    return entries


def _temp_files(out_dir):
    walk = os.walk(out_dir)
    return [os.path.join(d, f) for d, _, files in walk for f in files if f.startswith(".") or f.endswith(".tmp")]


def test_frames_round_trip_meshio_and_vtk(tmp_path, rng):
    out = str(tmp_path / "run")
    w = FrameWriter(out)
    times = [0.0, 0.1, 1.0 / 3.0, 2.5e-7 + 1.0]
    written = []
    for k, t in enumerate(times):
        frame = _frame(rng, scale=1.0 + k)
        path = w.write(t, *frame)
        assert path == os.path.join(out, "frames", f"frame_{k:06d}.vtu")
        written.append((path, frame))
    for path, frame in written:
        _check_frame(path, *frame)
    entries = _pvd_entries(out)
    assert [t for t, _ in entries] == times  # repr-exact
    assert [f for _, f in entries] == [f"frames/frame_{k:06d}.vtu" for k in range(len(times))]
    assert w.frames == entries
    assert _temp_files(out) == []


def test_frame_without_bonds_and_with_empty_bonds(tmp_path, rng):
    w = FrameWriter(str(tmp_path))
    points, pdata, _, _ = _frame(rng)
    for lines in (None, np.zeros((0, 2), dtype=np.int64)):
        path = w.write(len(w.frames), points, pdata, lines)
        m = meshio.read(path)
        assert [c.type for c in m.cells] == ["vertex"] and m.cell_data == {}
        g = _read_vtk(path)
        np.testing.assert_array_equal(g["types"], [VTK_VERTEX] * len(points))


def test_frame_input_errors(tmp_path, rng):
    w = FrameWriter(str(tmp_path))
    points, pdata, lines, cdata = _frame(rng)
    with pytest.raises(ValueError, match=r"point_data\['radius'\]"):
        w.write(0.0, points, {"radius": np.ones(3)})
    with pytest.raises(ValueError, match="lines"):
        w.write(0.0, points, pdata, np.array([[0, 7]]))
    with pytest.raises(ValueError, match="cell_data"):
        w.write(0.0, points, pdata, None, cdata)
    with pytest.raises(ValueError, match=r"cell_data\['strain'\]"):
        w.write(0.0, points, pdata, lines, {"strain": np.ones(len(points))})
    with pytest.raises(ValueError, match="points"):
        w.write(0.0, points[:, :2], {})
    with pytest.raises(ValueError, match="dtype"):
        w.write(0.0, points, {"c": np.ones(len(points), dtype=complex)})
    w.write(1.0, points, pdata)
    with pytest.raises(ValueError, match="increasing"):
        w.write(1.0, points, pdata)
    assert len(w.frames) == 1 and _pvd_entries(str(tmp_path)) == [(1.0, "frames/frame_000000.vtu")]


def test_resume_drops_later_frames_and_continues(tmp_path, rng):
    out = str(tmp_path)
    w = FrameWriter(out)
    frames = {}
    for k in range(5):
        frames[k] = _frame(rng, scale=k + 1.0)
        w.write(float(k), *frames[k])
    w2 = FrameWriter.resume(out, after_time=2.0)
    assert w2.next_index == 3
    assert [t for t, _ in _pvd_entries(out)] == [0.0, 1.0, 2.0]
    assert sorted(os.listdir(os.path.join(out, "frames"))) == [f"frame_{k:06d}.vtu" for k in range(3)]
    frames[3] = _frame(rng, scale=10.0)
    assert w2.write(2.5, *frames[3]).endswith("frame_000003.vtu")
    entries = _pvd_entries(out)
    assert entries == [(0.0, "frames/frame_000000.vtu"), (1.0, "frames/frame_000001.vtu"),
                       (2.0, "frames/frame_000002.vtu"), (2.5, "frames/frame_000003.vtu")]  # fmt: skip
    for k, (_, rel) in enumerate(entries):
        _check_frame(os.path.join(out, rel), *frames[k])
    with pytest.raises(ValueError, match="increasing"):
        w2.write(2.5, *frames[3])

    # without after_time: everything kept, numbering continues
    w3 = FrameWriter.resume(out)
    assert w3.next_index == 4 and w3.frames == entries


def test_resume_cleans_interrupted_writes(tmp_path, rng):
    out = str(tmp_path)
    w = FrameWriter(out)
    frame = _frame(rng)
    w.write(0.0, *frame)
    w.write(1.0, *frame)
    frames_dir = os.path.join(out, "frames")
    # a frame renamed into place but not listed (killed before the .pvd update), a temp file
    shutil.copy(os.path.join(frames_dir, "frame_000001.vtu"), os.path.join(frames_dir, "frame_000002.vtu"))
    Path(frames_dir, ".frame_000003.vtu.999.tmp").write_bytes(b"partial")
    w2 = FrameWriter.resume(out)
    assert sorted(os.listdir(frames_dir)) == ["frame_000000.vtu", "frame_000001.vtu"]
    assert w2.next_index == 2
    assert w2.write(2.0, *frame).endswith("frame_000002.vtu")
    assert [t for t, _ in _pvd_entries(out)] == [0.0, 1.0, 2.0]


def test_resume_errors(tmp_path, rng):
    with pytest.raises(ValueError, match="frames.pvd"):
        FrameWriter.resume(str(tmp_path / "nothing"))
    assert not os.path.exists(tmp_path / "nothing")
    w = FrameWriter(str(tmp_path))
    w.write(0.0, *_frame(rng))
    os.unlink(os.path.join(str(tmp_path), "frames", "frame_000000.vtu"))
    with pytest.raises(ValueError, match="missing"):
        FrameWriter.resume(str(tmp_path))


def test_new_writer_starts_a_fresh_collection(tmp_path, rng):
    out = str(tmp_path)
    w = FrameWriter(out)
    for k in range(3):
        w.write(float(k), *_frame(rng))
    FrameWriter(out)
    assert _pvd_entries(out) == [] and os.listdir(os.path.join(out, "frames")) == []


def _fail_nth_replace(monkeypatch, n):
    """Make the n-th os.replace call (1-based) raise, as a crash at that moment would."""
    real = os.replace
    calls = {"n": 0}

    def replace(src, dst):
        calls["n"] += 1
        if calls["n"] == n:
            raise OSError("simulated crash in os.replace")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


@pytest.mark.parametrize("which", [1, 2], ids=["frame-rename", "pvd-rename"])
def test_crash_during_write_leaves_collection_intact(tmp_path, rng, monkeypatch, which):
    out = str(tmp_path)
    w = FrameWriter(out)
    frames = [_frame(rng, scale=k + 1.0) for k in range(3)]
    w.write(0.0, *frames[0])
    w.write(1.0, *frames[1])
    pvd = os.path.join(out, "frames.pvd")
    pvd_before = Path(pvd).read_bytes()
    listing_before = sorted(os.listdir(os.path.join(out, "frames")))

    calls = _fail_nth_replace(monkeypatch, which)
    with pytest.raises(OSError, match="simulated crash"):
        w.write(2.0, *frames[2])
    assert calls["n"] == which
    monkeypatch.undo()

    assert Path(pvd).read_bytes() == pvd_before
    assert sorted(os.listdir(os.path.join(out, "frames"))) == listing_before
    assert _temp_files(out) == []
    assert [t for t, _ in _pvd_entries(out)] == [0.0, 1.0]
    for k, (_, rel) in enumerate(_pvd_entries(out)):
        _check_frame(os.path.join(out, rel), *frames[k])
    # the writer is still consistent: the same frame goes through on the next try
    assert w.write(2.0, *frames[2]).endswith("frame_000002.vtu")
    assert [t for t, _ in _pvd_entries(out)] == [0.0, 1.0, 2.0]


def test_crash_inside_meshio_write_leaves_no_temp_file(tmp_path, rng, monkeypatch):
    out = str(tmp_path)
    w = FrameWriter(out)
    frame = _frame(rng)
    w.write(0.0, *frame)

    def broken_write(path, *args, **kwargs):
        Path(path).write_bytes(b"<VTKFile half written")
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(meshio, "write", broken_write)
    with pytest.raises(RuntimeError, match="mid-write"):
        w.write(1.0, *frame)
    monkeypatch.undo()
    assert _temp_files(out) == []
    assert os.listdir(os.path.join(out, "frames")) == ["frame_000000.vtu"]
    assert [t for t, _ in _pvd_entries(out)] == [0.0]


def test_walls(tmp_path):
    s2 = np.sqrt(0.5)
    planes = np.array([[0.0, 0.0, 1.0, -1.0], [1.0, 0.0, 0.0, 2.0], [s2, s2, 0.0, 0.5]])
    center = np.array([0.3, -0.2, 0.7])
    size = 3.0
    path = write_walls(str(tmp_path), planes, center, size)
    assert path == os.path.join(str(tmp_path), "walls.vtu")
    assert _temp_files(str(tmp_path)) == []

    m = meshio.read(path)
    assert [c.type for c in m.cells] == ["quad"]
    quads = m.points[m.cells[0].data]  # (W, 4, 3)
    g = _read_vtk(path)
    np.testing.assert_array_equal(g["types"], [VTK_QUAD] * 3)
    np.testing.assert_array_equal(g["points"][g["connectivity"]].reshape(3, 4, 3), quads)
    _assert_same(g["cell_data"]["wall_id"], np.arange(3, dtype=np.int64))
    np.testing.assert_array_equal(g["cell_data"]["normal"], planes[:, :3])
    np.testing.assert_array_equal(m.cell_data["normal"][0], planes[:, :3])

    for w, (n, c) in enumerate(zip(planes[:, :3], planes[:, 3])):
        q = quads[w]
        np.testing.assert_allclose(q @ n, c, atol=1e-12)  # corners in the plane
        foot = center - (n @ center - c) * n
        np.testing.assert_allclose(q.mean(axis=0), foot, atol=1e-12)  # centred on the projection
        edges = np.roll(q, -1, axis=0) - q
        np.testing.assert_allclose(np.linalg.norm(edges, axis=1), size, rtol=1e-12)  # a square
        np.testing.assert_allclose(edges[0] @ edges[1], 0.0, atol=1e-12)
        np.testing.assert_allclose(np.cross(edges[0], edges[1]) / size**2, n, atol=1e-12)  # faces along n


def test_walls_empty_and_errors(tmp_path):
    assert write_walls(str(tmp_path), np.zeros((0, 4)), [0, 0, 0], 1.0) is None
    assert not os.path.exists(tmp_path / "walls.vtu")
    with pytest.raises(ValueError, match="unit"):
        write_walls(str(tmp_path), [[0, 0, 2.0, 0]], [0, 0, 0], 1.0)
    with pytest.raises(ValueError, match="size"):
        write_walls(str(tmp_path), [[0, 0, 1.0, 0]], [0, 0, 0], 0.0)
    with pytest.raises(ValueError, match="planes"):
        write_walls(str(tmp_path), [[0, 0, 1.0]], [0, 0, 0], 1.0)
