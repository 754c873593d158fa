"""Dense random packings (:mod:`granular.particles.packing`): density, overlaps, walls,
determinism, radius laws, coordination, files, pairs and the checks of the arguments.

Every property is measured here independently of the module (brute force or
:class:`scipy.spatial.cKDTree`)."""

import math
import os

import numba
import numpy as np
import pytest
from scipy.spatial import cKDTree

from granular.errors import PackingError
from granular.particles import packing
from granular.particles.packing import Specimen, container_volume, dense_packing, draw_radii


@pytest.fixture(scope="module")
def mono():
    """2000 equal spheres in a spherical container fitted to the jammed packing."""
    return dense_packing(2000, "sphere", radius=0.5, seed=0)


@pytest.fixture(scope="module")
def poly():
    """The same with log-normal radii in [0.25, 0.75]."""
    return dense_packing(2000, "sphere", radius=(0.25, 0.75), distribution="lognormal", seed=0)


def _pair_overlaps(x, r):
    """All pairs closer than the sum of their radii and their overlaps [L] (cKDTree)."""
    p = cKDTree(x).query_pairs(2.0 * r.max(), output_type="ndarray")
    d = np.linalg.norm(x[p[:, 0]] - x[p[:, 1]], axis=1)
    over = r[p[:, 0]] + r[p[:, 1]] - d
    keep = over >= 0
    return p[keep], over[keep]


def _outside(spec):
    """How far each particle sticks out of its container [L] (<= 0 inside)."""
    x, r, size = spec.x, spec.radius, spec.size
    if spec.shape == "sphere":
        return np.linalg.norm(x, axis=1) + r - size[0]
    if spec.shape == "cylinder":
        return np.maximum(np.hypot(x[:, 0], x[:, 1]) + r - size[0], np.abs(x[:, 2]) + r - 0.5 * size[1])
    return (np.abs(x) + r[:, None] - 0.5 * np.asarray(size)).max(axis=1)


def _brute_pairs(x, r, factor):
    n = len(r)
    out = [(i, j) for i in range(n) for j in range(i + 1, n) if np.linalg.norm(x[i] - x[j]) <= factor * (r[i] + r[j])]
    return np.array(out, dtype=np.int64).reshape(-1, 2)


# ---------------------------------------------------------------------------------------
# density, overlaps, coordination


def test_monodisperse_sphere_is_dense_and_fraction_is_measured(mono):
    assert mono.x.shape == (2000, 3) and mono.x.dtype == np.float64
    assert np.all(mono.radius == 0.5)
    (big_r,) = mono.size
    fraction = np.sum(4.0 / 3.0 * np.pi * mono.radius**3) / (4.0 / 3.0 * np.pi * big_r**3)
    assert mono.solid_fraction == pytest.approx(fraction, rel=1e-12)
    assert mono.solid_fraction >= 0.55
    assert mono.distribution == {"law": "constant", "radius": 0.5}


def test_polydisperse_is_denser_than_monodisperse(mono, poly):
    assert poly.solid_fraction > mono.solid_fraction
    fraction = np.sum(4.0 / 3.0 * np.pi * poly.radius**3) / container_volume("sphere", poly.size)
    assert poly.solid_fraction == pytest.approx(fraction, rel=1e-12)


@pytest.mark.parametrize("which", ["mono", "poly"])
def test_no_overlap_beyond_tolerance_and_inside_the_sphere(which, request):
    spec = request.getfixturevalue(which)
    tol = 1e-3 * spec.radius.min()
    p, over = _pair_overlaps(spec.x, spec.radius)
    assert len(p) == 0 or over.max() <= tol * (1 + 1e-9)
    assert _outside(spec).max() <= tol * (1 + 1e-9)
    # the reported largest relative overlap, recomputed
    rel = over / np.minimum(spec.radius[p[:, 0]], spec.radius[p[:, 1]]) if len(p) else np.zeros(1)
    wall = np.maximum(_outside(spec), 0.0) / spec.radius
    assert spec.max_overlap == pytest.approx(max(rel.max(), wall.max(), 0.0), rel=1e-9, abs=1e-15)
    assert spec.max_overlap <= 1e-3 * (1 + 1e-9)


def test_coordination_recomputed_and_jammed(mono):
    tol = mono.contact_tol
    assert tol == 1e-3  # defaults to overlap_tol
    x, r = mono.x, mono.radius
    p = cKDTree(x).query_pairs(2.0 * (1 + tol) * r.max(), output_type="ndarray")
    d = np.linalg.norm(x[p[:, 0]] - x[p[:, 1]], axis=1)
    gap = d - r[p[:, 0]] - r[p[:, 1]]
    pairs = int(np.sum(gap <= tol * (r[p[:, 0]] + r[p[:, 1]])))
    assert mono.coordination == pytest.approx(2.0 * pairs / len(r), rel=1e-12)
    assert mono.coordination > 4.0


@pytest.mark.parametrize(
    "shape, size, radius",
    [("cylinder", None, (0.3, 0.6)), ("box", None, 0.5), ("box", (7.0, 8.0, 9.0), (0.3, 0.5)),
     ("cylinder", (4.0, 9.0), 0.4), ("sphere", (4.5,), (0.3, 0.5))],
)  # fmt: skip
def test_other_containers_hold_their_particles(shape, size, radius):
    spec = dense_packing(400, shape, size=size, radius=radius, seed=3)
    r_lo = radius if np.ndim(radius) == 0 else radius[0]
    r_hi = radius if np.ndim(radius) == 0 else radius[1]
    assert spec.shape == shape and len(spec.size) == {"sphere": 1, "cylinder": 2, "box": 3}[shape]
    if size is not None:
        assert spec.size == tuple(float(c) for c in size)  # the container asked for, radii as asked
    assert spec.radius.min() >= r_lo and spec.radius.max() <= r_hi
    tol = 1e-3 * spec.radius.min()
    _, over = _pair_overlaps(spec.x, spec.radius)
    assert len(over) == 0 or over.max() <= tol * (1 + 1e-9)
    assert _outside(spec).max() <= tol * (1 + 1e-9)
    volume = container_volume(shape, spec.size)
    assert spec.solid_fraction == pytest.approx(np.sum(4 / 3 * np.pi * spec.radius**3) / volume, rel=1e-12)
    if size is None:  # grown until jammed
        assert spec.solid_fraction > 0.5


def test_target_fraction_sets_the_container():
    spec = dense_packing(300, "box", radius=(0.4, 0.5), target_fraction=0.45, seed=2)
    assert spec.solid_fraction == pytest.approx(0.45, rel=1e-12)
    lx, ly, lz = spec.size
    assert lx == pytest.approx(ly) and ly == pytest.approx(lz)
    assert _outside(spec).max() <= 1e-3 * spec.radius.min() * (1 + 1e-9)


def test_looser_tolerance_is_kept():
    spec = dense_packing(300, radius=0.5, overlap_tol=0.02, seed=5)
    _, over = _pair_overlaps(spec.x, spec.radius)
    assert over.max() <= 0.02 * 0.5 * (1 + 1e-9)
    assert spec.max_overlap <= 0.02 * (1 + 1e-9)
    assert spec.contact_tol == 0.02


# ---------------------------------------------------------------------------------------
# determinism


def test_same_seed_same_bits_other_seed_differs():
    a = dense_packing(300, "cylinder", radius=(0.3, 0.5), distribution="lognormal", seed=11)
    b = dense_packing(300, "cylinder", radius=(0.3, 0.5), distribution="lognormal", seed=11)
    c = dense_packing(300, "cylinder", radius=(0.3, 0.5), distribution="lognormal", seed=12)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.radius, b.radius)
    assert a.size == b.size and a.iterations == b.iterations
    assert not np.array_equal(a.x, c.x)
    assert not np.array_equal(a.radius, c.radius)


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="one Numba thread only")
def test_same_bits_whatever_the_threads(monkeypatch):
    # the parallel path (rows split among threads) against the serial one; the container
    # is given at a low fraction so that the (slow on a busy machine) parallel run is short
    size = ((300 * 0.4**3 / 0.45) ** (1 / 3),)
    serial = dense_packing(300, size=size, radius=0.4, seed=4, threads=1)
    before = numba.get_num_threads()
    monkeypatch.setattr(packing, "PARALLEL_ABOVE", 0)
    parallel = dense_packing(300, size=size, radius=0.4, seed=4, threads=2)
    assert numba.get_num_threads() == before  # restored
    assert np.array_equal(serial.x, parallel.x)
    assert serial.iterations == parallel.iterations


# ---------------------------------------------------------------------------------------
# radius laws


def test_lognormal_radii_follow_the_law():
    r_lo, r_hi = 0.2, 0.8
    radii, law = draw_radii(20000, (r_lo, r_hi), "lognormal", seed=1)
    median = math.sqrt(r_lo * r_hi)
    sigma = math.log(r_hi / r_lo) / 4
    assert law == {"law": "lognormal", "median": median, "sigma": sigma, "range": [r_lo, r_hi]}
    assert radii.min() >= r_lo and radii.max() <= r_hi
    assert np.median(radii) == pytest.approx(median, rel=0.02)
    # a normal truncated at +-2 sigma has a standard deviation of 0.880 sigma
    assert np.std(np.log(radii)) == pytest.approx(0.880 * sigma, rel=0.03)
    assert radii.min() < r_lo * 1.02 and radii.max() > r_hi * 0.98  # the tails reach the bounds


def test_uniform_radii_follow_the_law():
    radii, law = draw_radii(20000, (0.3, 0.6), "uniform", seed=1)
    assert law == {"law": "uniform", "range": [0.3, 0.6]}
    assert radii.min() >= 0.3 and radii.max() <= 0.6
    assert np.mean(radii) == pytest.approx(0.45, rel=0.01)
    counts, _ = np.histogram(radii, bins=6, range=(0.3, 0.6))
    assert counts.min() > 0.9 * 20000 / 6 and counts.max() < 1.1 * 20000 / 6


def test_specimen_radii_are_the_drawn_ones(poly):
    radii, law = draw_radii(2000, (0.25, 0.75), "lognormal", seed=0)
    assert np.array_equal(poly.radius, radii)
    assert poly.distribution == law
    assert np.median(poly.radius) == pytest.approx(math.sqrt(0.25 * 0.75), rel=0.05)


# ---------------------------------------------------------------------------------------
# files


def test_save_load_roundtrip(poly, tmp_path):
    path = tmp_path / "specimen.npz"
    assert poly.save(path) == str(path)
    assert sorted(os.listdir(tmp_path)) == ["specimen.npz"]  # no temporary file left
    back = Specimen.load(path)
    assert np.array_equal(back.x, poly.x) and np.array_equal(back.radius, poly.radius)
    assert back.x.dtype == np.float64 and back.radius.dtype == np.float64
    for name in ("shape", "size", "seed", "distribution", "solid_fraction", "coordination", "max_overlap",
                 "iterations", "contact_tol"):  # fmt: skip
        assert getattr(back, name) == getattr(poly, name), name
    poly.save(path)  # replaces the file
    assert np.array_equal(Specimen.load(str(path)).x, poly.x)


@pytest.mark.parametrize("content", ["text", "npz", "missing"])
def test_load_refuses_other_files(content, tmp_path):
    path = tmp_path / "other.npz"
    if content == "text":
        path.write_text("not a specimen\n")
    elif content == "npz":
        np.savez(path, x=np.zeros((3, 3)), radius=np.ones(3))
    with pytest.raises(PackingError) as err:
        Specimen.load(path)
    assert err.value.field == "path"
    assert str(path) in str(err.value)


# ---------------------------------------------------------------------------------------
# pairs


def test_pairs_equal_brute_force():
    spec = dense_packing(150, "box", radius=(0.3, 0.6), seed=7)
    for factor in (1.0, 1.05, 1.3):
        got = spec.pairs(factor)
        want = _brute_pairs(spec.x, spec.radius, factor)
        assert got.dtype == np.int64 and got.shape[1] == 2
        assert np.array_equal(got, want), factor
        assert np.all(got[:, 0] < got[:, 1])
    assert len(spec.pairs(1.3)) > len(spec.pairs(1.0))
    assert spec.coordination == pytest.approx(
        2 * len(_brute_pairs(spec.x, spec.radius, 1 + spec.contact_tol)) / 150, rel=1e-12
    )


@pytest.mark.parametrize("factor", [0.99, 0.0, -1.0, float("nan"), "x"])
def test_pairs_factor_below_one_is_refused(factor, mono):
    with pytest.raises(PackingError) as err:
        mono.pairs(factor)
    assert err.value.field == "factor"


# ---------------------------------------------------------------------------------------
# checks of the arguments


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"count": 0}, "count"),
        ({"count": 2.5}, "count"),
        ({"count": "10"}, "count"),
        ({"count": True}, "count"),
        ({"shape": "cube"}, "shape"),
        ({"shape": "sphere", "size": (1.0, 2.0)}, "size"),
        ({"shape": "cylinder", "size": (3.0,)}, "size"),
        ({"shape": "box", "size": (3.0, -1.0, 3.0)}, "size"),
        ({"shape": "box", "size": (3.0, np.nan, 3.0)}, "size"),
        ({"shape": "sphere", "size": "big"}, "size"),
        ({"radius": -0.5}, "radius"),
        ({"radius": 0.0}, "radius"),
        ({"radius": np.inf}, "radius"),
        ({"radius": (0.6, 0.4)}, "radius"),
        ({"radius": (0.1, 0.2, 0.3)}, "radius"),
        ({"distribution": "normal"}, "distribution"),
        ({"overlap_tol": 0.0}, "overlap_tol"),
        ({"overlap_tol": 0.2}, "overlap_tol"),
        ({"overlap_tol": np.nan}, "overlap_tol"),
        ({"target_fraction": 0.95}, "target_fraction"),
        ({"target_fraction": 0.5, "size": (10.0,)}, "target_fraction"),
        ({"threads": 0}, "threads"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"contact_tol": -1e-3}, "contact_tol"),
    ],
)
def test_bad_arguments_name_their_field(kwargs, field):
    kwargs = {"count": 10, **kwargs}
    with pytest.raises(PackingError) as err:
        dense_packing(**kwargs)
    assert err.value.field == field
    assert isinstance(err.value, ValueError)
    assert str(err.value).startswith(field)


def test_container_too_small_is_refused():
    with pytest.raises(PackingError) as err:  # a particle wider than the box
        dense_packing(5, "box", size=(0.9, 5.0, 5.0), radius=0.5)
    assert err.value.field == "size"
    with pytest.raises(PackingError) as err:  # 0.8 of the sphere: jams before full size
        dense_packing(300, size=((300 * 0.5**3 / 0.8) ** (1 / 3),), radius=0.5)
    assert err.value.field == "size" and "jam" in str(err.value)


def test_iteration_budget_is_enforced():
    with pytest.raises(PackingError) as err:
        dense_packing(300, radius=0.5, max_iterations=20)
    assert err.value.field == "max_iterations"


# ---------------------------------------------------------------------------------------
# the GPU path (kernels.packing_cuda): bit for bit under the CUDA simulator, which runs
# the rows in Python's float64 arithmetic; on a GPU the compiler fuses multiply-adds, so
# the same rows agree to round-off there


def _gpu_backend():
    from granular.backend import BackendError, get_backend

    try:
        return get_backend("gpu")
    except BackendError as exc:
        pytest.skip(f"no GPU backend: {exc}")


def _same(a, b, simulated):
    """Equal bits under the simulator; equal to round-off on a GPU (fused multiply-adds)."""
    if simulated:
        return np.array_equal(a, b)
    return np.allclose(a, b, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(a).max(initial=0.0))))


@pytest.mark.gpu
@pytest.mark.parametrize("shape,size", [("sphere", (3.0,)), ("cylinder", (2.5, 5.0)), ("box", (4.0, 4.5, 5.0))])
def test_gpu_lists_forces_and_steps_equal_the_cpu_rows(shape, size):
    """One list build, force pass, FIRE step and restart on the device give the CPU's
    arrays bit for bit: the rows are the same code (:mod:`kernels.packing`)."""
    be = _gpu_backend()
    rng = np.random.default_rng(5)
    n = 60
    rad = rng.uniform(0.3, 0.6, n)
    x = packing._random_inside(rng, n, shape, size, 0.5 * rad)  # dense enough to overlap
    geom, code = packing._geom(shape, size), packing._CODES[shape]
    skin = 0.15
    cpu = packing._Lists(n, shape, size, 1)
    cpu.build(x, rad, skin, float(rad.max()))
    dev = packing._DeviceLists(be, n, shape, size)
    dev.build(x.copy(), rad, skin, float(rad.max()))
    assert np.array_equal(cpu.nbr_start, dev.nbr_start)
    total = int(cpu.nbr_start[-1])
    assert total > n  # the test needs overlapping neighbours
    assert np.array_equal(cpu.nbr[:total], dev.nbr[:total])
    out_c = [np.zeros((n, 3)), np.zeros(n), np.zeros(n)]
    out_g = [np.zeros((n, 3)), np.zeros(n), np.zeros(n)]
    packing._force_rows(0, n, x, rad, cpu.nbr_start, cpu.nbr, code, geom, *out_c)
    dev.launch(dev.kc.forces, x, rad, dev.nbr_start, dev.nbr, code, geom, *out_g)
    for a, b in zip(out_c, out_g):
        assert _same(a, b, be.simulated)
    assert out_c[2].max() > 0  # overlaps were there to push apart
    v = rng.normal(size=(n, 3))
    xc, vc, dc = x.copy(), v.copy(), np.zeros(n)
    xg, vg, dg = x.copy(), v.copy(), np.zeros(n)
    packing._advance_rows(0, n, xc, vc, out_c[0], x, 0.07, 0.9, 0.03, dc)
    dev.launch(dev.kc.advance, xg, vg, out_g[0], x, 0.07, 0.9, 0.03, dg)
    packing._retreat_rows(0, n, xc, vc, 0.035)
    dev.launch(dev.kc.retreat, xg, vg, 0.035)
    for a, b in zip((xc, vc, dc), (xg, vg, dg)):
        assert _same(a, b, be.simulated)
    assert not vc.any() and dc.max() > 0
    # the overlaps a jammed round would remove: the same on both
    assert cpu.shrink_needed(x, rad, shape, size, 1e-3) == dev.shrink_needed(x, rad, shape, size, 1e-3) > 0


@pytest.mark.gpu
@pytest.mark.parametrize("shape,size", [("sphere", None), ("box", None)])
def test_gpu_packing_matches_the_cpu_one(shape, size):
    """A whole packing on the device: the same growth rounds and FIRE steps as on the CPU
    (only the sums over particles are taken in another order), so the same specimen to
    round-off, as dense and as free of overlaps; the same seed repeats it bit for bit.
    On a GPU the fused multiply-adds change the last bits, and FIRE's many steps can
    take another path from there: the same fraction and the same overlap bound."""
    be = _gpu_backend()
    kw = dict(radius=(0.4, 0.6), seed=2, target_fraction=0.35)
    c = dense_packing(14, shape, size=size, **kw)
    g = dense_packing(14, shape, size=size, backend="gpu", **kw)
    assert c.iterations > 0 and g.max_overlap <= 1e-3 * (1 + 1e-9)
    if be.simulated:
        assert g.iterations == c.iterations
        assert np.abs(g.x - c.x).max() < 1e-9
        assert g.size == c.size
    else:
        assert g.solid_fraction == pytest.approx(c.solid_fraction, rel=0.02)
        assert abs(g.iterations - c.iterations) <= 0.25 * c.iterations
    assert np.array_equal(dense_packing(14, shape, size=size, backend="gpu", **kw).x, g.x)


def test_unknown_backend_is_named():
    with pytest.raises(PackingError, match="backend") as err:
        dense_packing(10, backend="tpu")
    assert err.value.field == "backend"
