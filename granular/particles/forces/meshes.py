"""Triangle meshes as rigid boundaries: reading, transforming, shapes, and the bins the
contact kernels look triangles up in (:mod:`kernels.meshes`).

A :class:`TriangleMesh` is vertices (V, 3) and triangles (T, 3) of vertex indices. Files
are read by meshio (STL ASCII and binary, OBJ, PLY, OFF, VTK/VTU, Gmsh and the other
formats meshio knows): it is already granular's VTK writer, so reading meshes costs no new
dependency; its quadrilaterals are split into two triangles each. STL stores each
triangle's corners separately; :meth:`TriangleMesh.welded` merges coincident vertices (to
a tolerance relative to the mesh's size), which the ParaView output and the edge
statistics use (the contact rule does not need it).
"""

from __future__ import annotations

import math
import os

import numpy as np

from kernels.meshes import GEO_COS_SMOOTH, GEO_DIMS, GEO_INV_CELL, GEO_ORIGIN, GEO_P0, GEO_WIDTH

#: Length units a mesh file may be in, in metres (the scene's unit of length is the metre).
UNITS = {"m": 1.0, "cm": 1e-2, "mm": 1e-3, "um": 1e-6, "in": 0.0254, "ft": 0.3048}


def _circle(axis, n):
    """The unit ``axis`` and ``n`` unit vectors around it, evenly spaced (the vertices of
    a regular polygon about it)."""
    e3 = np.asarray(axis, dtype=np.float64)
    e3 = e3 / np.linalg.norm(e3)
    e1 = np.cross(e3, [1.0, 0.0, 0.0] if abs(e3[0]) < 0.9 else [0.0, 1.0, 0.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(e3, e1)
    phi = 2 * np.pi * np.arange(n) / n
    return e3, np.cos(phi)[:, None] * e1 + np.sin(phi)[:, None] * e2


class TriangleMesh:
    """Vertices ``(V, 3)`` and triangles ``(T, 3)`` (indices into the vertices), float64.

    Degenerate triangles (zero area) are refused: they have no normal."""

    def __init__(self, vertices, triangles, name: str = "mesh"):
        self.name = str(name)
        try:
            v = np.asarray(vertices, dtype=np.float64)
            t = np.asarray(triangles)
        except (TypeError, ValueError):
            raise ValueError(f"mesh {self.name}: vertices must be (V, 3) numbers and triangles (T, 3) integers") from None
        if v.ndim != 2 or v.shape[1] != 3 or len(v) < 3:
            raise ValueError(f"mesh {self.name}: vertices must be (V, 3) with V >= 3, got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"mesh {self.name}: vertices must be finite")
        if t.ndim != 2 or t.shape[1] != 3 or len(t) == 0 or not np.issubdtype(t.dtype, np.integer):
            raise ValueError(f"mesh {self.name}: triangles must be (T, 3) integers with T >= 1, got shape {t.shape}")
        if t.min() < 0 or t.max() >= len(v):
            raise ValueError(f"mesh {self.name}: triangle vertex indices must be in [0, {len(v)}), "
                             f"got [{t.min()}, {t.max()}]")  # fmt: skip
        self.vertices = v
        self.triangles = t.astype(np.int64)
        area = 0.5 * np.linalg.norm(self.cross(), axis=1)
        scale = float(np.ptp(v, axis=0).max()) or 1.0
        bad = np.flatnonzero(area <= 1e-14 * scale * scale)
        if len(bad):
            raise ValueError(f"mesh {self.name}: triangle {int(bad[0])} has zero area ({len(bad)} degenerate "
                             "triangles); remove them from the mesh")  # fmt: skip

    # ------------------------------------------------------------------ construction
    @classmethod
    def read(cls, path, units: str = "m", name: str | None = None) -> TriangleMesh:
        """Read a mesh file by meshio (its format from the extension), in ``units``
        (:data:`UNITS`); the triangles of every cell block, quads split in two."""
        import meshio

        if units not in UNITS:
            raise ValueError(f"mesh {path}: units: must be one of {sorted(UNITS)}, got {units!r}")
        if not os.path.isfile(path):
            raise ValueError(f"mesh: no file {path!r}")
        try:
            m = meshio.read(path)
        except Exception as exc:  # meshio raises its own ReadError and others for a bad file
            raise ValueError(f"mesh {path}: cannot be read ({type(exc).__name__}: {exc})") from None
        tris = []
        for block in m.cells:
            if block.type == "triangle":
                tris.append(np.asarray(block.data))
            elif block.type == "quad":
                q = np.asarray(block.data)
                tris += [q[:, [0, 1, 2]], q[:, [0, 2, 3]]]
        if not tris:
            raise ValueError(f"mesh {path}: no triangles or quadrilaterals in the file")
        return cls(np.asarray(m.points, dtype=np.float64)[:, :3] * UNITS[units], np.concatenate(tris),
                   name=name or os.path.splitext(os.path.basename(path))[0])  # fmt: skip

    @classmethod
    def rectangle(cls, center, u, v, divisions=(1, 1), name="rectangle") -> TriangleMesh:
        """The rectangle ``center + s u + t v``, ``|s|, |t| <= 1`` (``u``, ``v`` its half
        sides), in ``divisions`` (nu, nv) squares of two triangles each, normal ``u × v``."""
        c, a, b = (np.asarray(w, dtype=np.float64) for w in (center, u, v))
        nu, nv = (int(d) for d in divisions)
        if nu < 1 or nv < 1:
            raise ValueError(f"mesh {name}: divisions must be >= 1, got {divisions!r}")
        s, t = np.meshgrid(np.linspace(-1, 1, nu + 1), np.linspace(-1, 1, nv + 1), indexing="ij")
        pts = c + s.reshape(-1, 1) * a + t.reshape(-1, 1) * b
        idx = np.arange((nu + 1) * (nv + 1)).reshape(nu + 1, nv + 1)
        p0, p1, p2, p3 = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel(), idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
        tri = np.concatenate([np.stack([p0, p1, p2], 1), np.stack([p0, p2, p3], 1)])
        return cls(pts, tri, name=name)

    @classmethod
    def cylinder(cls, radius, length, segments=48, center=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), caps=True,
                 name="cylinder") -> TriangleMesh:  # fmt: skip
        """A cylinder of ``radius`` and ``length`` about ``axis`` through ``center``,
        ``segments`` facets around (its vertices on the circle), closed by two flat caps
        when ``caps``: a drum."""
        if not (radius > 0 and length > 0 and int(segments) >= 3):
            raise ValueError(f"mesh {name}: radius and length must be > 0 and segments >= 3")
        n = int(segments)
        e3, unit = _circle(axis, n)
        ring = radius * unit
        c = np.asarray(center, dtype=np.float64)
        lo, hi = c - 0.5 * length * e3, c + 0.5 * length * e3
        pts = [lo + ring, hi + ring]
        k = np.arange(n)
        k1 = (k + 1) % n
        tri = [np.stack([k, k1, n + k1], 1), np.stack([k, n + k1, n + k], 1)]
        if caps:
            pts += [lo[None], hi[None]]
            tri += [np.stack([np.full(n, 2 * n), k1, k], 1), np.stack([np.full(n, 2 * n + 1), n + k, n + k1], 1)]
        return cls(np.concatenate(pts), np.concatenate(tri), name=name)

    @classmethod
    def annulus(cls, outer, inner, segments=64, center=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0),
                name="annulus") -> TriangleMesh:  # fmt: skip
        """The flat ring between the circles of radii ``inner`` and ``outer`` about ``axis``
        through ``center`` (vertices on both circles, ``segments`` around): a plate with
        a round hole, a hopper's bottom with its outlet."""
        if not (0 < inner < outer and int(segments) >= 3):
            raise ValueError(f"mesh {name}: need 0 < inner < outer and segments >= 3, got inner {inner!r}, "
                             f"outer {outer!r}, segments {segments!r}")  # fmt: skip
        n = int(segments)
        _, unit = _circle(axis, n)
        c = np.asarray(center, dtype=np.float64)
        pts = np.concatenate([c + inner * unit, c + outer * unit])
        k = np.arange(n)
        k1 = (k + 1) % n
        tri = np.concatenate([np.stack([k, n + k, n + k1], 1), np.stack([k, n + k1, k1], 1)])
        return cls(pts, tri, name=name)

    @classmethod
    def box(cls, lo, hi, name="box") -> TriangleMesh:
        """The surface of the box ``lo <= x <= hi`` (12 triangles)."""
        lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
        if not (hi > lo).all():
            raise ValueError(f"mesh {name}: hi must exceed lo in every coordinate")
        pts = np.array([[(hi if (k >> d) & 1 else lo)[d] for d in range(3)] for k in range(8)])
        quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
        tri = [q for a, b, c, d in quads for q in ((a, b, c), (a, c, d))]
        return cls(pts, tri, name=name)

    # ------------------------------------------------------------------ transforms
    def transformed(self, scale=1.0, rotation=None, translation=(0.0, 0.0, 0.0)) -> TriangleMesh:
        """``x -> R (s x) + t``: ``scale`` a number or three, ``rotation`` a 3×3 rotation
        matrix or ``[axis (3), degrees]``, then ``translation``."""
        s = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
        if not (np.isfinite(s).all() and (s != 0).all()):
            raise ValueError(f"mesh {self.name}: scale must be finite and non-zero, got {scale!r}")
        R = rotation_matrix(rotation, f"mesh {self.name}")
        t = np.asarray(translation, dtype=np.float64)
        if t.shape != (3,) or not np.isfinite(t).all():
            raise ValueError(f"mesh {self.name}: translation must be 3 finite numbers, got {translation!r}")
        return TriangleMesh((self.vertices * s) @ R.T + t, self.triangles, name=self.name)

    def cross(self) -> np.ndarray:
        a, b, c = (self.vertices[self.triangles[:, k]] for k in range(3))
        return np.cross(b - a, c - a)

    def normals(self) -> np.ndarray:
        """Unit normals ``(b - a) × (c - a)`` (T, 3)."""
        n = self.cross()
        return n / np.linalg.norm(n, axis=1, keepdims=True)

    def welded(self, tol: float = 1e-9) -> TriangleMesh:
        """The same triangles with coincident vertices (within ``tol`` × the mesh's size) merged."""
        scale = float(np.ptp(self.vertices, axis=0).max()) or 1.0
        key = np.round(self.vertices / (tol * scale)).astype(np.int64)
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        return TriangleMesh(self.vertices[first], inverse.reshape(-1)[self.triangles], name=self.name)

    @property
    def center(self) -> np.ndarray:
        """The centroid of the triangles' areas."""
        a, b, c = (self.vertices[self.triangles[:, k]] for k in range(3))
        w = np.linalg.norm(self.cross(), axis=1)
        return ((a + b + c) / 3.0 * w[:, None]).sum(0) / w.sum()

    def __len__(self) -> int:
        return len(self.triangles)

    def __repr__(self) -> str:
        return f"TriangleMesh({self.name!r}, {len(self.vertices)} vertices, {len(self.triangles)} triangles)"


def rotation_matrix(rotation, what: str) -> np.ndarray:
    """A 3×3 rotation from ``None`` (identity), a matrix, or ``[ax, ay, az, degrees]``."""
    if rotation is None:
        return np.eye(3)
    r = np.asarray(rotation, dtype=np.float64)
    if r.shape == (3, 3):
        if not (np.allclose(r @ r.T, np.eye(3), atol=1e-9) and np.linalg.det(r) > 0):
            raise ValueError(f"{what}: rotation: a 3×3 matrix must be a rotation (orthogonal, det +1)")
        return r
    if r.shape != (4,) or not np.isfinite(r).all() or np.linalg.norm(r[:3]) == 0:
        raise ValueError(f"{what}: rotation: must be [axis_x, axis_y, axis_z, degrees] with a non-zero axis, or a "
                         f"3×3 matrix; got {rotation!r}")  # fmt: skip
    a = r[:3] / np.linalg.norm(r[:3])
    th = math.radians(r[3])
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(th) * K + (1 - math.cos(th)) * K @ K


def closest_points(y, a, b, c):
    """The closest points of triangles ``(a, b, c)`` to points ``y`` (all (K, 3), pairwise),
    host float64, vectorised: the projection onto the plane where it falls inside the
    triangle (barycentric coordinates ``>= 0``), else the nearest of the three edges'
    clamped projections. An implementation independent of the kernels' (Ericson's Voronoi
    regions), for the host's checks and the tests."""
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    h = np.einsum("ij,ij->i", y - a, n)
    p = y - h[:, None] * n
    inside = np.ones(len(y), bool)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, p - u), n) >= 0
    best = p.copy()
    dbest = np.where(inside, np.abs(h), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        e = v - u
        s = np.clip(np.einsum("ij,ij->i", y - u, e) / np.einsum("ij,ij->i", e, e), 0.0, 1.0)
        q = u + s[:, None] * e
        d = np.linalg.norm(y - q, axis=1)
        better = ~inside & (d < dbest)
        best[better] = q[better]
        dbest[better] = d[better]
    return best, dbest


def bins(vertices, triangles, margin: float, max_cells: int = 1 << 21):
    """The triangles of a mesh binned in a uniform grid over its bounding box grown by
    ``margin`` (the farthest a particle's centre can be from a triangle it touches): each
    cell lists every triangle within ``margin`` of some point of the cell (tested as the
    triangle's distance from the cell's centre against ``margin`` plus the cell's half
    diagonal), so a particle finds every triangle within reach in its own cell, and a cell
    far from a long thin triangle's plane does not list it. Returns ``(geo row (origin,
    1/cell, dims), cell_first (C+1,), cell_tri (K,))``; the cell is ``2 margin`` unless the
    grid would then have more than ``max_cells`` cells."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    tlo = np.minimum(np.minimum(a, b), c) - margin
    thi = np.maximum(np.maximum(a, b), c) + margin
    lo, hi = tlo.min(0), thi.max(0)
    ext = np.maximum(hi - lo, 1e-300)
    size = max(2.0 * margin, 1e-12 * float(ext.max()))
    while np.prod(np.ceil(ext / size)) > max_cells:
        size *= 1.25
    dims = np.maximum(np.ceil(ext / size).astype(np.int64), 1)
    i0 = np.clip(np.floor((tlo - lo) / size).astype(np.int64), 0, dims - 1)
    i1 = np.clip(np.floor((thi - lo) / size).astype(np.int64), 0, dims - 1)
    cells, tris = [], []
    reach = margin + 0.5 * math.sqrt(3.0) * size
    for t in range(len(triangles)):
        g = np.stack(np.meshgrid(*(np.arange(i0[t, d], i1[t, d] + 1) for d in range(3)), indexing="ij"), -1)
        g = g.reshape(-1, 3)
        if len(g) > 8:  # keep the cells the triangle comes within reach of
            centre = lo + (g + 0.5) * size
            k = len(g)
            _, d = closest_points(centre, np.broadcast_to(a[t], (k, 3)), np.broadcast_to(b[t], (k, 3)),
                                  np.broadcast_to(c[t], (k, 3)))  # fmt: skip
            g = g[d <= reach]
        cells.append((g[:, 0] * dims[1] + g[:, 1]) * dims[2] + g[:, 2])
        tris.append(np.full(len(g), t))
    cells, tris = np.concatenate(cells), np.concatenate(tris)
    order = np.lexsort((tris, cells))
    counts = np.bincount(cells, minlength=int(np.prod(dims)))
    first = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    geo = np.zeros(GEO_WIDTH)
    geo[GEO_ORIGIN:GEO_ORIGIN + 3] = lo
    geo[GEO_INV_CELL] = 1.0 / size
    geo[GEO_DIMS:GEO_DIMS + 3] = dims
    return geo, first, tris[order].astype(np.int32)


#: The last few packings (:func:`pack`): a run whose particle set changes builds its model
#: again at each edit with the same meshes, whose binning is the costly part.
_PACKED: list = []


def pack(meshes, margin: float):
    """The kernel arrays of ``meshes`` (a list of ``(TriangleMesh, smooth_angle_deg,
    center)``): ``tri`` (T, 12), ``geo`` (M, GEO_WIDTH), the first cell of each (M,),
    ``cell_first``, ``cell_tri`` (triangle indices global over the meshes), and the first
    triangle of each mesh (M+1,). The same meshes (the same objects, angles and centres)
    with the same margin give copies of the arrays packed before."""
    for key, key_margin, arrays in _PACKED:
        if key_margin == margin and len(key) == len(meshes) and all(
                a[0] is b[0] and a[1] == b[1] and np.array_equal(a[2], b[2]) for a, b in zip(key, meshes)):  # fmt: skip
            return tuple(a.copy() for a in arrays)
    arrays = _pack(meshes, margin)
    _PACKED.insert(0, (tuple((m, s, np.array(c, dtype=np.float64)) for m, s, c in meshes), margin, arrays))
    del _PACKED[4:]
    return tuple(a.copy() for a in arrays)


def _pack(meshes, margin: float):
    tri, geo, cell0, firsts, cell_tris, tri0 = [], [], [], [np.zeros(1, np.int64)], [], [0]
    ncell = nk = 0
    for mesh, smooth, center in meshes:
        v, t = mesh.vertices, mesh.triangles
        tri.append(np.concatenate([v[t[:, 0]], v[t[:, 1]], v[t[:, 2]], mesh.normals()], axis=1))
        g, first, ct = bins(v, t, margin)
        g[GEO_COS_SMOOTH] = math.cos(math.radians(smooth))
        g[GEO_P0:GEO_P0 + 3] = center
        geo.append(g)
        cell0.append(ncell)
        firsts.append(first[1:] + nk)
        cell_tris.append(ct + tri0[-1])
        ncell += len(first) - 1
        nk += len(ct)
        tri0.append(tri0[-1] + len(t))
    return (np.concatenate(tri), np.stack(geo), np.asarray(cell0, np.int64), np.concatenate(firsts),
            np.concatenate(cell_tris).astype(np.int32), np.asarray(tri0, np.int64))  # fmt: skip


def near_pairs(mesh, x, reach):
    """Particle-triangle pairs ``(i, t)`` of particles ``x`` (N, 3) whose centre may be
    within ``reach`` (a number or (N,)) of triangle ``t`` (host; through the bins)."""
    x = np.asarray(x, dtype=np.float64).reshape(-1, 3)
    r = np.broadcast_to(np.asarray(reach, dtype=np.float64), (len(x),))
    geo, first, cells = bins(mesh.vertices, mesh.triangles, float(r.max()) if len(r) else 0.0)
    dims = geo[GEO_DIMS:GEO_DIMS + 3].astype(np.int64)
    f = (x - geo[GEO_ORIGIN:GEO_ORIGIN + 3]) * geo[GEO_INV_CELL]
    inside = ((f >= 0) & (f < dims)).all(1)
    i = np.flatnonzero(inside)
    g = f[i].astype(np.int64)
    c = (g[:, 0] * dims[1] + g[:, 1]) * dims[2] + g[:, 2]
    cnt = first[c + 1] - first[c]
    pi = np.repeat(i, cnt)
    start = np.repeat(first[c] - np.cumsum(cnt) + cnt, cnt) + np.arange(cnt.sum())
    return pi, cells[start].astype(np.int64)


def mesh_problem(mesh, x, radius):
    """A message if a particle (centres ``x``, radii ``radius``) touches ``mesh``, else None."""
    pi, pt = near_pairs(mesh, x, radius)
    if not len(pi):
        return None
    v, t = mesh.vertices, mesh.triangles[pt]
    _, d = closest_points(np.asarray(x, np.float64)[pi], v[t[:, 0]], v[t[:, 1]], v[t[:, 2]])
    bad = d < np.asarray(radius, np.float64)[pi]
    if not bad.any():
        return None
    k = int(np.argmax(bad))
    return (f"particle {int(pi[k])} touches triangle {int(pt[k])} (its centre is {d[k]:.6g} from it, its radius "
            f"{float(np.asarray(radius)[pi[k]]):.6g})")
