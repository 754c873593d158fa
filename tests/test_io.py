"""Time series, checkpoints and plots (granular.io)."""

import math
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from granular.io import CheckpointError, SeriesWriter, load_checkpoint, plot_series, read_series, save_checkpoint
from patience import PATIENCE


def _temp_files(directory):
    return [f for _, _, files in os.walk(directory) for f in files if f.startswith(".") or f.endswith(".tmp")]


# ------------------------------------------------------------------------------ series

COLUMNS = ["time", "kinetic_translational", "U_a", "total", "broken_bonds"]


def _row(t):
    return {"time": t, "kinetic_translational": 1.0 / (3.0 + t), "U_a": math.pi * t**2 * 1e-300,
            "total": 0.1 + t, "broken_bonds": int(t)}  # fmt: skip


def test_series_round_trip_is_exact(tmp_path):
    path = str(tmp_path / "series.csv")
    times = [0.0, 0.1, 1.0 / 3.0, 2.0 + 1e-15, -0.0]
    with SeriesWriter(path, COLUMNS) as s:
        for t in times:
            s.append(_row(t))
            assert Path(path).read_bytes().endswith(b"\n")  # a complete line after every row
        s.append({**_row(5.0), "U_a": np.float32(0.1), "total": float("nan"), "broken_bonds": np.int64(7)})
    text = Path(path).read_text()
    assert text.splitlines()[0] == ",".join(COLUMNS)
    assert len(text.splitlines()) == 1 + len(times) + 1
    data = read_series(path)
    assert list(data) == COLUMNS
    for k, t in enumerate(times):
        for c, v in _row(t).items():
            assert data[c][k] == v and data[c].dtype == np.float64
    assert data["U_a"][-1] == float(np.float32(0.1)) and math.isnan(data["total"][-1]) and data["broken_bonds"][-1] == 7
    assert _temp_files(str(tmp_path)) == []


def test_series_row_errors_name_the_key(tmp_path):
    path = str(tmp_path / "series.csv")
    s = SeriesWriter(path, COLUMNS)
    s.append(_row(0.0))
    before = Path(path).read_bytes()
    row = _row(1.0)
    del row["U_a"]
    with pytest.raises(ValueError, match="missing column 'U_a'"):
        s.append(row)
    with pytest.raises(ValueError, match="unknown column.*'U_bogus'"):
        s.append({**_row(1.0), "U_bogus": 1.0})
    with pytest.raises(ValueError, match=r"row\['total'\]"):
        s.append({**_row(1.0), "total": [1.0, 2.0]})
    assert Path(path).read_bytes() == before  # nothing half-written
    s.close()
    with pytest.raises(ValueError, match="closed"):
        s.append(_row(2.0))
    with pytest.raises(ValueError, match="first column must be 'time'"):
        SeriesWriter(str(tmp_path / "b.csv"), ["t", "E"])
    with pytest.raises(ValueError, match="duplicate"):
        SeriesWriter(str(tmp_path / "c.csv"), ["time", "E", "E"])
    with pytest.raises(ValueError, match="not allowed"):
        SeriesWriter(str(tmp_path / "d.csv"), ["time", "a,b"])


def test_series_resume_truncates_after_time(tmp_path):
    path = str(tmp_path / "series.csv")
    with SeriesWriter(path, COLUMNS) as s:
        for k in range(6):
            s.append(_row(0.5 * k))
    with open(path, "a") as f:  # an interrupted write: a row without its newline
        f.write("3.0,0.25,1")
    with pytest.raises(ValueError, match="no such series file"):
        SeriesWriter.resume(str(tmp_path / "missing.csv"), 1.0)
    with SeriesWriter.resume(path, after_time=1.2) as s:
        assert s.columns == COLUMNS
        np.testing.assert_array_equal(read_series(path)["time"], [0.0, 0.5, 1.0])
        s.append(_row(1.25))
    data = read_series(path)
    np.testing.assert_array_equal(data["time"], [0.0, 0.5, 1.0, 1.25])
    np.testing.assert_array_equal(data["total"], [_row(t)["total"] for t in (0.0, 0.5, 1.0, 1.25)])
    assert Path(path).read_bytes().endswith(b"\n")
    assert _temp_files(str(tmp_path)) == []
    with SeriesWriter.resume(path, after_time=None):  # keeps everything
        pass
    assert len(read_series(path)["time"]) == 4


def test_read_series_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("time,E\n0.0,1.0\n0.1\n")
    with pytest.raises(ValueError, match="line 3"):
        read_series(str(bad))
    bad.write_text("time,E\n0.0,one\n")
    with pytest.raises(ValueError, match="line 2"):
        read_series(str(bad))
    with pytest.raises(ValueError, match="no such series file"):
        read_series(str(tmp_path / "nope.csv"))


_KILLED_WRITER = """
import sys
from granular.io import SeriesWriter
s = SeriesWriter(sys.argv[1], ["time", "E", "P_x"])
k = 0
while True:
    s.append({"time": k * 0.1, "E": 1.0 / (k + 1), "P_x": -k * 1e-17})
    k += 1
    if k == 20:
        print("ready", flush=True)
"""


def test_killed_writer_leaves_complete_lines(tmp_path):
    path = str(tmp_path / "series.csv")
    with subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, path], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout.readline().strip() == "ready"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=PATIENCE)
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n")
    data = read_series(path)
    assert len(data["time"]) >= 20
    np.testing.assert_array_equal(data["time"], np.arange(len(data["time"])) * 0.1)
    np.testing.assert_array_equal(data["E"], 1.0 / (np.arange(len(data["E"])) + 1))


# -------------------------------------------------------------------------- checkpoints


def _arrays(rng):
    f64 = rng.standard_normal((50, 3))
    f64[0, :] = [np.nan, -0.0, np.inf]
    f64[1, 0] = 5e-324  # subnormal
    return {
        "x": f64,
        "q": np.asfortranarray(rng.standard_normal((10, 4))),
        "status": rng.integers(-(2**31), 2**31 - 1, size=17, dtype=np.int32),
        "broken": rng.integers(-128, 127, size=33, dtype=np.int8),
        "big_endian": rng.standard_normal(5).astype(">f8"),
        "scalar": np.array(3.25),
        "empty": np.zeros((0, 3)),
        "file": np.arange(3),  # np.savez's own keyword names must still work as array names
        "allow_pickle": np.ones(2, dtype=np.float32),
    }


def test_checkpoint_round_trip_bit_for_bit(tmp_path, rng):
    path = str(tmp_path / "ckpt.npz")
    arrays = _arrays(rng)
    meta = {"time": 0.1 + 0.2, "step": 123456789012, "scheme": "verlet", "nested": {"dt": 1e-3, "ids": [1, 2]},
            "nan": float("nan"), "flag": True, "none": None}  # fmt: skip
    save_checkpoint(path, arrays, meta)
    assert _temp_files(str(tmp_path)) == []
    got, got_meta = load_checkpoint(path)
    assert set(got) == set(arrays)
    for k, a in arrays.items():
        assert got[k].dtype == a.dtype, k
        assert got[k].shape == a.shape, k
        assert got[k].tobytes(order="A") == a.tobytes(order="A"), k
        assert got[k].flags.f_contiguous == a.flags.f_contiguous, k
    assert math.isnan(got_meta.pop("nan"))
    expected = dict(meta)
    expected.pop("nan")
    assert got_meta == expected and got_meta["time"] == 0.1 + 0.2
    # it is a plain .npz
    with np.load(path) as npz:
        np.testing.assert_array_equal(npz["status"], arrays["status"])


def test_checkpoint_save_is_atomic(tmp_path, rng, monkeypatch):
    path = str(tmp_path / "ckpt.npz")
    save_checkpoint(path, {"x": np.arange(4.0)}, {"step": 1})
    before = Path(path).read_bytes()

    def crash(src, dst):
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        save_checkpoint(path, {"x": np.arange(8.0)}, {"step": 2})
    monkeypatch.undo()
    assert Path(path).read_bytes() == before
    assert _temp_files(str(tmp_path)) == []
    arrays, meta = load_checkpoint(path)
    assert meta == {"step": 1} and arrays["x"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_checkpoint_missing_and_corrupt(tmp_path, rng):
    missing = str(tmp_path / "none.npz")
    with pytest.raises(CheckpointError, match="none.npz.*no such file"):
        load_checkpoint(missing)
    assert issubclass(CheckpointError, ValueError)

    good = str(tmp_path / "good.npz")
    save_checkpoint(good, {"x": rng.standard_normal(1000)}, {"step": 3})
    raw = Path(good).read_bytes()
    cases = {
        "truncated.npz": raw[: len(raw) // 2],
        "garbage.npz": b"this is not a checkpoint" * 10,
        "empty.npz": b"",
    }
    flipped = bytearray(raw)
    flipped[len(raw) // 3] ^= 0xFF  # inside the array data: the zip CRC catches it
    cases["flipped.npz"] = bytes(flipped)
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        with pytest.raises(CheckpointError) as exc:
            load_checkpoint(str(p))
        assert str(p) in str(exc.value), name

    no_meta = str(tmp_path / "plain.npz")
    np.savez(no_meta, x=np.arange(3))
    with pytest.raises(CheckpointError, match="plain.npz.*not a granular checkpoint"):
        load_checkpoint(no_meta)
    with zipfile.ZipFile(no_meta) as zf:  # sanity: it was a valid zip
        assert zf.testzip() is None


def test_checkpoint_save_errors(tmp_path):
    path = str(tmp_path / "c.npz")
    with pytest.raises(CheckpointError, match="reserved"):
        save_checkpoint(path, {"__granular_meta__": np.zeros(1)}, {})
    with pytest.raises(CheckpointError, match="object"):
        save_checkpoint(path, {"x": np.array([{}, 1], dtype=object)}, {})
    with pytest.raises(CheckpointError, match="JSON"):
        save_checkpoint(path, {"x": np.zeros(1)}, {"bad": object()})
    assert not os.path.exists(path) and _temp_files(str(tmp_path)) == []


# -------------------------------------------------------------------------------- plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _synthetic_series(n=200):
    t = np.linspace(0.0, 10.0, n)
    s = {
        "time": t,
        "kinetic_translational": 1.0 + 0.5 * np.cos(t) ** 2,
        "kinetic_rotational": 0.2 * np.sin(t) ** 2,
        "U_a": 0.5 * np.sin(t) ** 2,
        "U_gravity": -0.1 * t,
        "total": 1.5 + 1e-6 * np.sin(3 * t),
        "P_x": 1e-15 * np.sin(t), "P_y": np.zeros(n), "P_z": np.full(n, 2.0),
        "L_x": np.cos(t) * 1e-14, "L_y": np.ones(n), "L_z": -np.ones(n),
        "broken_bonds": np.floor(t / 3.0),
        "constraint_residual": 1e-13 * t,
    }  # fmt: skip
    return s


def _check_png(path):
    import matplotlib.image

    raw = Path(path).read_bytes()
    assert raw.startswith(PNG_MAGIC) and len(raw) > 5000, path
    img = matplotlib.image.imread(path)
    assert img.shape[0] > 200 and img.shape[1] > 200 and img[..., :3].std() > 0.01, path


def test_plots_written(tmp_path):
    out = str(tmp_path)
    paths = plot_series(_synthetic_series(), out)
    assert paths == [os.path.join(out, "plots", n) for n in ("energies.png", "momenta.png", "invariants.png")]
    for p in paths:
        _check_png(p)
    assert _temp_files(out) == []


def test_plots_only_for_present_columns(tmp_path):
    s = _synthetic_series()
    only = {k: s[k] for k in ("time", "kinetic_translational", "total")}
    paths = plot_series(only, str(tmp_path))
    assert [os.path.basename(p) for p in paths] == ["energies.png"]
    _check_png(paths[0])
    assert sorted(os.listdir(tmp_path / "plots")) == ["energies.png"]
    assert plot_series({"time": s["time"], "P_z": s["P_z"]}, str(tmp_path / "m"))[0].endswith("momenta.png")
    inv = plot_series({"time": s["time"], "broken_bonds": s["broken_bonds"]}, str(tmp_path / "i"))
    assert [os.path.basename(p) for p in inv] == ["invariants.png"]
    _check_png(inv[0])
    with pytest.raises(ValueError, match="time"):
        plot_series({"total": s["total"]}, str(tmp_path))
    with pytest.raises(ValueError, match="U_a"):
        plot_series({"time": s["time"], "U_a": s["U_a"][:5]}, str(tmp_path))
