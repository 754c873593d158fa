"""Contact of particles with rigid triangle meshes, compiled once per contact law.

A mesh is a rigid body: its triangles stay in their reference pose (``Walls.tri``, rows
``(a, b, c, n)``, ``n`` the unit normal of ``(b - a) × (c - a)``) and a moving mesh has a
row of the walls' frame (:mod:`kernels.walls`) saying where the body is: a point
``y`` of the reference pose is at ``x = p(t) + R(ω t) (y - p_0)``. A particle is taken into
the mesh's reference pose, ``y = p_0 + Rᵀ (x - p(t))``, and everything geometric happens
there; only the contact's normal goes back to the world (``R n``), so the binning of the
triangles is done once, on the host, for the life of the mesh.

**Closest point.** The closest point ``c`` of a triangle to ``y`` lies in one of its seven
Voronoi regions (Ericson, *Real-Time Collision Detection*, 2005, Sect. 5.1.5): the face,
an edge or a vertex. On the face the contact is that of the triangle's plane, ``dist =
|n·(y - a)|`` along ``±n``, computed exactly as a planar wall's distance is, so a flat mesh
and a planar wall give the same contact bit for bit; on an edge or a vertex the normal is
``(y - c)/|y - c|``. A mesh has two sides: a particle meets it from either.

**One contact per feature** (``docs/geometry.md``). A sphere resting on a flat mesh near
the edge shared by two triangles overlaps both, and on a vertex shared by six, all six;
counted per triangle it would feel two or six contacts. The contacts of one particle with
one mesh are chosen nearest first (ties by triangle index). A candidate is dropped when a
contact already chosen

* has a normal within the mesh's smooth angle of its own (``n_k·n ≥ cos θ``: the same
  flat or gently curved region; on a faceted cylinder the facets of one region), or
* has it on or behind its tangent plane (``n_k·(c - c_k) ≤ 10⁻³ r``): on a flat or convex
  region the second triangle's closest point is on the shared edge or vertex, in the plane
  of the first contact.

So a flat or convex region gives one contact, whichever triangle it falls on, and a
concave corner sharper than the smooth angle (a floor and a side wall) gives one per
face. At most :data:`SLOTS` contacts per particle over all meshes.

**History across triangles.** With a law that keeps history, a particle has
:data:`SLOTS` mesh slots after its planar walls' in ``Dynamics.whist``: the springs, one
slot of zeros (the history of a contact that finds no free slot outside a step), and a
key per slot, ``(mesh + 1, n_ref)`` (the mesh and the contact's normal in the reference
pose at its last step). A contact takes the held slot of its mesh whose normal is
closest to its own within the smooth angle; so the spring follows a contact rolling or
sliding across the triangles of one region. A held slot that no contact takes has
opened: its history is released as a planar wall's is.

Scratch (``Walls.pick`` (N, SLOTS, 9) in the run's precision, ``Walls.pick_tri`` (N,
SLOTS) int32): particle ``i``'s chosen contacts, written and read only by ``i``'s thread:
``dist``, ``c`` (3) and ``n`` (3) in the reference pose, the slot and the mesh.
"""

import math
from types import SimpleNamespace

from .contact_laws.interface import EVALUATE
from .walls import FRAME_MOVING, FRAME_R

#: Contacts of one particle with all meshes, at most (and its mesh history slots).
SLOTS = 4
#: Columns of ``Walls.mesh_geo`` (run dtype): the bins' origin (3), 1 / cell size, the
#: cells along x, y, z (3), cos of the smooth angle, the reference centre ``p_0`` (3).
GEO_ORIGIN = 0
GEO_INV_CELL = 3
GEO_DIMS = 4
GEO_COS_SMOOTH = 7
GEO_P0 = 8
GEO_WIDTH = 11
#: Columns of ``Walls.mesh_idx`` (int64): the mesh's frame row, its first cell in
#: ``cell_first``, its material.
IDX_ROW = 0
IDX_CELL = 1
IDX_MAT = 2
IDX_WIDTH = 3
#: Columns of the scratch ``Walls.pick``.
PICK_DIST = 0
PICK_C = 1
PICK_N = 4
PICK_SLOT = 7
PICK_MESH = 8
PICK_WIDTH = 9
#: Columns of a mesh load row (``mesh_load``): the force on the mesh (3), the contact
#: point (3), the law's moment on the mesh (3).
LOAD_WIDTH = 9
#: Slots of mesh history after the planar walls' in ``whist``: springs, a zero slot, keys.
HISTORY_SLOTS = 2 * SLOTS + 1


def closest(T, y1, y2, y3, tri, t):
    """The point of triangle ``t`` closest to ``y`` (Ericson 2005, Sect. 5.1.5):
    ``(dist, c (3), n (3))``, ``n`` the unit vector from ``c`` towards ``y`` (on the face
    ``±`` the triangle's normal, ``dist = |n·(y - a)|``)."""
    a1, a2, a3 = tri[t, 0], tri[t, 1], tri[t, 2]
    ab1, ab2, ab3 = tri[t, 3] - a1, tri[t, 4] - a2, tri[t, 5] - a3
    ac1, ac2, ac3 = tri[t, 6] - a1, tri[t, 7] - a2, tri[t, 8] - a3
    ap1, ap2, ap3 = y1 - a1, y2 - a2, y3 - a3
    z = T(0.0)
    d1 = ab1 * ap1 + ab2 * ap2 + ab3 * ap3
    d2 = ac1 * ap1 + ac2 * ap2 + ac3 * ap3
    face = False
    c1 = c2 = c3 = z
    if d1 <= z and d2 <= z:  # vertex a
        c1, c2, c3 = a1, a2, a3
    else:
        bp1, bp2, bp3 = y1 - tri[t, 3], y2 - tri[t, 4], y3 - tri[t, 5]
        d3 = ab1 * bp1 + ab2 * bp2 + ab3 * bp3
        d4 = ac1 * bp1 + ac2 * bp2 + ac3 * bp3
        vc = d1 * d4 - d3 * d2
        cp1, cp2, cp3 = y1 - tri[t, 6], y2 - tri[t, 7], y3 - tri[t, 8]
        d5 = ab1 * cp1 + ab2 * cp2 + ab3 * cp3
        d6 = ac1 * cp1 + ac2 * cp2 + ac3 * cp3
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= z and d4 <= d3:  # vertex b
            c1, c2, c3 = tri[t, 3], tri[t, 4], tri[t, 5]
        elif vc <= z and d1 >= z and d3 <= z:  # edge ab
            v = d1 / (d1 - d3)
            c1, c2, c3 = a1 + v * ab1, a2 + v * ab2, a3 + v * ab3
        elif d6 >= z and d5 <= d6:  # vertex c
            c1, c2, c3 = tri[t, 6], tri[t, 7], tri[t, 8]
        elif vb <= z and d2 >= z and d6 <= z:  # edge ac
            w = d2 / (d2 - d6)
            c1, c2, c3 = a1 + w * ac1, a2 + w * ac2, a3 + w * ac3
        elif va <= z and d4 - d3 >= z and d5 - d6 >= z:  # edge bc
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            c1 = tri[t, 3] + w * (tri[t, 6] - tri[t, 3])
            c2 = tri[t, 4] + w * (tri[t, 7] - tri[t, 4])
            c3 = tri[t, 5] + w * (tri[t, 8] - tri[t, 5])
        else:
            face = True
    n1, n2, n3 = tri[t, 9], tri[t, 10], tri[t, 11]
    if face:  # the plane's distance, as a planar wall's
        dist = n1 * ap1 + n2 * ap2 + n3 * ap3
        if dist < z:
            dist = -dist
            n1, n2, n3 = -n1, -n2, -n3
        return dist, y1 - dist * n1, y2 - dist * n2, y3 - dist * n3, n1, n2, n3
    e1, e2, e3 = y1 - c1, y2 - c2, y3 - c3
    dist = T(math.sqrt(e1 * e1 + e2 * e2 + e3 * e3))
    if dist > z:
        n1, n2, n3 = e1 / dist, e2 / dist, e3 / dist
    return dist, c1, c2, c3, n1, n2, n3


def rigid_view(T, me, x1, x2, x3, fr, w, law_moving):
    """A particle's ``body`` tuple ``me`` seen from the rigid boundary of frame row ``w``,
    moving: ``(me', u (3), ω (3))``, ``u`` the boundary's velocity at the particle's centre."""
    y1, y2, y3 = x1 - fr[w, 0], x2 - fr[w, 1], x3 - fr[w, 2]
    o1, o2, o3 = fr[w, 6], fr[w, 7], fr[w, 8]
    s1, s2, s3 = o2 * y3 - o3 * y2, o3 * y1 - o1 * y3, o1 * y2 - o2 * y1
    u1, u2, u3 = fr[w, 3] + s1, fr[w, 4] + s2, fr[w, 5] + s3
    mine = law_moving(T, me, u1, u2, u3, o1, o2, o3, fr[w, 9] + s1, fr[w, 10] + s2, fr[w, 11] + s3)
    return mine, u1, u2, u3, o1, o2, o3


def none(jit):
    """Stand-ins of :func:`build`'s loops for the kernels of models without meshes."""

    @jit
    def near(T, i, dyn, walls):
        return False

    @jit
    def mesh_sum(T, i, me, update, h, dyn, par, walls, contacts, mat_i, nmat, U, D, MOMENTS, DISSIPATES):
        z = T(0.0)
        return z, z, z, z, z, z, z, z, z, z, z, 0, z, z

    @jit
    def mesh_energy(T, i, me, dyn, par, walls, contacts, mat_i, nmat):
        return T(0.0), 0

    @jit
    def mesh_load(T, i, me, dyn, par, walls, contacts, mat_i, nmat, out, out_tri):
        for q in range(out_tri.shape[1]):
            out_tri[i, q] = -1

    return SimpleNamespace(mesh_sum=mesh_sum, mesh_energy=mesh_energy, mesh_load=mesh_load, near=near)


def build(jit, L, H, pair_row):
    """The mesh contact loops for the law ``L`` (the namespace of its compiled functions)
    with ``H`` floats of history per contact; ``pair_row`` the row of a pair of materials."""
    law_wall_contact, law_wall, law_release, law_energy = L.wall_contact, L.wall, L.wall_release, L.wall_energy
    law_params, law_load, law_store, law_moving = L.params, L.load, L.store, L.moving
    close = jit(closest)
    view = jit(rigid_view)
    # the choice of contacts and the outer loops compiled once each, not inlined into
    # every wall loop that calls them (that multiplied every law's compile time)
    outline = getattr(jit, "outline", jit)
    NS = SLOTS

    @jit
    def moved(walls, m):
        """Frame row of mesh ``m`` and whether it moves."""
        row = walls.mesh_idx[m, IDX_ROW]
        return row, walls.clock.shape[0] > 0 and walls.frame[row, FRAME_MOVING] != walls.frame.dtype.type(0.0)

    @jit
    def to_reference(T, x1, x2, x3, walls, m):
        """``x`` in mesh ``m``'s reference pose: ``p_0 + Rᵀ (x - p(t))`` (``x`` itself at rest)."""
        row, moving = moved(walls, m)
        if not moving:
            return x1, x2, x3
        fr, g = walls.frame, walls.mesh_geo
        d1, d2, d3 = x1 - fr[row, 0], x2 - fr[row, 1], x3 - fr[row, 2]
        R = FRAME_R
        return (g[m, GEO_P0] + fr[row, R] * d1 + fr[row, R + 3] * d2 + fr[row, R + 6] * d3,
                g[m, GEO_P0 + 1] + fr[row, R + 1] * d1 + fr[row, R + 4] * d2 + fr[row, R + 7] * d3,
                g[m, GEO_P0 + 2] + fr[row, R + 2] * d1 + fr[row, R + 5] * d2 + fr[row, R + 8] * d3)  # fmt: skip

    @jit
    def to_world(walls, m, n1, n2, n3):
        """A direction of mesh ``m``'s reference pose in the world: ``R n``."""
        row, moving = moved(walls, m)
        if not moving:
            return n1, n2, n3
        fr, R = walls.frame, FRAME_R
        return (fr[row, R] * n1 + fr[row, R + 1] * n2 + fr[row, R + 2] * n3,
                fr[row, R + 3] * n1 + fr[row, R + 4] * n2 + fr[row, R + 5] * n3,
                fr[row, R + 6] * n1 + fr[row, R + 7] * n2 + fr[row, R + 8] * n3)  # fmt: skip

    @jit
    def cell_of(T, y1, y2, y3, walls, m):
        """The triangles binned with ``y``'s cell of mesh ``m``: ``cell_tri[lo:hi]``."""
        g = walls.mesh_geo
        inv = g[m, GEO_INV_CELL]
        f1 = (y1 - g[m, GEO_ORIGIN]) * inv
        f2 = (y2 - g[m, GEO_ORIGIN + 1]) * inv
        f3 = (y3 - g[m, GEO_ORIGIN + 2]) * inv
        z = T(0.0)
        if not (f1 >= z and f2 >= z and f3 >= z and f1 < g[m, GEO_DIMS] and f2 < g[m, GEO_DIMS + 1]
                and f3 < g[m, GEO_DIMS + 2]):  # fmt: skip
            return 0, 0  # outside the bins (a NaN too): no triangle within reach
        ny, nz = int(g[m, GEO_DIMS + 1]), int(g[m, GEO_DIMS + 2])
        cell = walls.mesh_idx[m, IDX_CELL] + (int(f1) * ny + int(f2)) * nz + int(f3)
        return walls.cell_first[cell], walls.cell_first[cell + 1]

    @jit
    def near(T, i, dyn, walls):
        """Whether ``i`` has triangles binned with it in some mesh, or holds mesh history
        (then its contacts must be chosen, or its history released): the inlined test
        that spares the particles far from every mesh the calls below."""
        x = dyn.x
        for m in range(walls.mesh_geo.shape[0]):
            y1, y2, y3 = to_reference(T, x[i, 0], x[i, 1], x[i, 2], walls, m)
            lo, hi = cell_of(T, y1, y2, y3, walls, m)
            if hi > lo:
                return True
        if H > 0:
            base = key_slot(dyn.whist)
            for s in range(NS):
                if dyn.whist[i, base + s, H - 1] != T(0.0):
                    return True
        return False

    @jit
    def key_slot(whist):
        """The first of the mesh slots of ``whist`` (after the planar walls')."""
        return whist.shape[1] - HISTORY_SLOTS

    @jit
    def held_near(T, i, m, n1, n2, n3, cs, whist):
        """Whether ``i`` holds history with mesh ``m`` at a normal within the smooth angle."""
        if H == 0:
            return False
        base = key_slot(whist)
        keys = base + NS + 1
        z = T(0.0)
        for s in range(NS):
            if whist[i, base + s, H - 1] != z and whist[i, keys + s, 0] == T(m + 1):
                if whist[i, keys + s, 1] * n1 + whist[i, keys + s, 2] * n2 + whist[i, keys + s, 3] * n3 >= cs:
                    return True
        return False

    @jit
    def shadowed(T, i, npk, m, c1, c2, c3, n1, n2, n3, rad, cs, pick):
        """Whether a contact chosen before (of mesh ``m``) stands for the candidate."""
        for q in range(npk):
            if pick[i, q, PICK_MESH] != T(m):
                continue
            k1, k2, k3 = pick[i, q, PICK_N], pick[i, q, PICK_N + 1], pick[i, q, PICK_N + 2]
            if k1 * n1 + k2 * n2 + k3 * n3 >= cs:
                return True
            e1, e2, e3 = c1 - pick[i, q, PICK_C], c2 - pick[i, q, PICK_C + 1], c3 - pick[i, q, PICK_C + 2]
            if k1 * e1 + k2 * e2 + k3 * e3 <= T(1e-3) * rad:
                return True
        return False

    @outline
    def choose(T, i, rad, dyn, walls):
        """Particle ``i``'s contacts with the meshes, nearest first, one per feature
        (module docstring), into ``walls.pick[i]``; returns how many."""
        x, whist, pick, tri, cells = dyn.x, dyn.whist, walls.pick, walls.tri, walls.cell_tri
        npk = 0
        for m in range(walls.mesh_geo.shape[0]):
            y1, y2, y3 = to_reference(T, x[i, 0], x[i, 1], x[i, 2], walls, m)
            lo, hi = cell_of(T, y1, y2, y3, walls, m)
            cs = walls.mesh_geo[m, GEO_COS_SMOOTH]
            while npk < NS and hi > lo:
                best = -1
                bd = b1 = b2 = b3 = v1 = v2 = v3 = T(0.0)
                for e in range(lo, hi):
                    t = cells[e]
                    r = close(T, y1, y2, y3, tri, t)
                    d = r[0]
                    if best >= 0 and (d > bd or (d == bd and t > best)):
                        continue
                    if law_wall_contact(T, d, rad, False) != EVALUATE:
                        if H == 0 or law_wall_contact(T, d, rad, True) != EVALUATE:
                            continue
                        if not held_near(T, i, m, r[4], r[5], r[6], cs, whist):
                            continue
                    if shadowed(T, i, npk, m, r[1], r[2], r[3], r[4], r[5], r[6], rad, cs, pick):
                        continue
                    best, bd, b1, b2, b3, v1, v2, v3 = t, d, r[1], r[2], r[3], r[4], r[5], r[6]
                if best < 0:
                    break
                pick[i, npk, PICK_DIST] = bd
                pick[i, npk, PICK_C], pick[i, npk, PICK_C + 1], pick[i, npk, PICK_C + 2] = b1, b2, b3
                pick[i, npk, PICK_N], pick[i, npk, PICK_N + 1], pick[i, npk, PICK_N + 2] = v1, v2, v3
                pick[i, npk, PICK_SLOT] = T(-1.0)
                pick[i, npk, PICK_MESH] = T(m)
                walls.pick_tri[i, npk] = best
                npk += 1
        return npk

    @outline
    def assign(T, i, npk, rad, update, dyn, walls, contacts, mat_i, nmat):
        """The history slot of each chosen contact (``pick[i, q, PICK_SLOT]``; the zero
        slot where none is free outside a step). Held slots no contact takes are released
        with ``update``: returns the energies they release (normal, friction, rolling,
        twisting)."""
        z = T(0.0)
        dn = df = dr = dt = z
        if H == 0:
            return dn, df, dr, dt
        whist, pick = dyn.whist, walls.pick
        base = key_slot(whist)
        keys = base + NS + 1
        claimed = 0
        for q in range(npk):  # a held slot of the mesh, normal nearest within the smooth angle
            m = int(pick[i, q, PICK_MESH])
            n1, n2, n3 = pick[i, q, PICK_N], pick[i, q, PICK_N + 1], pick[i, q, PICK_N + 2]
            best = -1
            bdot = walls.mesh_geo[m, GEO_COS_SMOOTH]
            for s in range(NS):
                if (claimed >> s) & 1 or whist[i, base + s, H - 1] == z or whist[i, keys + s, 0] != T(m + 1):
                    continue
                dot = whist[i, keys + s, 1] * n1 + whist[i, keys + s, 2] * n2 + whist[i, keys + s, 3] * n3
                if dot >= bdot:
                    best, bdot = s, dot
            if best >= 0:
                claimed |= 1 << best
                pick[i, q, PICK_SLOT] = T(best)
        for s in range(NS):  # held slots no contact took have opened
            if (claimed >> s) & 1 or whist[i, base + s, H - 1] == z or not update:
                continue
            m = int(whist[i, keys + s, 0]) - 1
            p = law_params(contacts.pair, pair_row(mat_i, walls.mesh_idx[m, IDX_MAT], nmat))
            rel = law_release(T, rad, p, law_load(whist, i, base + s))
            dn += rel[0]
            df += rel[1]
            dr += rel[2]
            dt += rel[3]
            for c in range(H):
                whist[i, base + s, c] = z
                whist[i, keys + s, c] = z
        for q in range(npk):  # new contacts: a free slot
            if pick[i, q, PICK_SLOT] >= z:
                continue
            slot = NS  # the zero slot
            for s in range(NS):
                if not (claimed >> s) & 1 and whist[i, base + s, H - 1] == z:
                    slot = s
                    break
            if slot < NS:
                claimed |= 1 << slot
            pick[i, q, PICK_SLOT] = T(slot)
        return dn, df, dr, dt

    @jit
    def evaluate(T, i, q, me, rad, h, dyn, walls, contacts, mat_i, nmat):
        """The law for ``i``'s chosen contact ``q``: ``(result, held, slot, n (3),
        moving, u (3), ω (3))``; the result's force is on the particle."""
        pick, whist = walls.pick, dyn.whist
        m = int(pick[i, q, PICK_MESH])
        dist = pick[i, q, PICK_DIST]
        n1, n2, n3 = to_world(walls, m, pick[i, q, PICK_N], pick[i, q, PICK_N + 1], pick[i, q, PICK_N + 2])
        row, moving = moved(walls, m)
        z = T(0.0)
        mine = me
        u1 = u2 = u3 = o1 = o2 = o3 = z
        if moving:
            v = view(T, me, dyn.x[i, 0], dyn.x[i, 1], dyn.x[i, 2], walls.frame, row, law_moving)
            mine, u1, u2, u3, o1, o2, o3 = v
        slot = 0
        if H > 0:
            slot = key_slot(whist) + int(pick[i, q, PICK_SLOT])
        p = law_params(contacts.pair, pair_row(mat_i, walls.mesh_idx[m, IDX_MAT], nmat))
        r = law_wall(T, n1, n2, n3, dist, mine, p, law_load(whist, i, slot), h)
        return r, slot, n1, n2, n3, moving, u1, u2, u3, o1, o2, o3

    @outline
    def mesh_sum(T, i, me, update, h, dyn, par, walls, contacts, mat_i, nmat, U, D, MOMENTS, DISSIPATES):
        """``i``'s contacts with the meshes, as :func:`kernels.contacts.build`
        ``wall_sum`` adds its planar walls': ``(force (3), moment (3), stored energy,
        dissipated (4), contacts, the largest |f|, the moving meshes' work)``."""
        z = T(0.0)
        f1 = f2 = f3 = m1 = m2 = m3 = u = z
        peak = work = z
        rad = par.radius[i]
        npk = choose(T, i, rad, dyn, walls)
        dn, df, dr, dt = assign(T, i, npk, rad, update, dyn, walls, contacts, mat_i, nmat)
        whist = dyn.whist
        for q in range(npk):
            e = evaluate(T, i, q, me, rad, h, dyn, walls, contacts, mat_i, nmat)
            r, slot = e[0], e[1]
            n1, n2, n3, moving = e[2], e[3], e[4], e[5]
            f1 += r[0]
            f2 += r[1]
            f3 += r[2]
            if MOMENTS:
                m1 += r[3]
                m2 += r[4]
                m3 += r[5]
            u += r[U]
            if DISSIPATES:
                dn += r[D]
                df += r[D + 1]
                dr += r[D + 2]
                dt += r[D + 3]
            if not update:
                continue
            if moving:  # power into the particle at the contact point x_i - dist n
                dist = walls.pick[i, q, PICK_DIST]
                o1, o2, o3 = e[9], e[10], e[11]
                uc1 = e[6] - dist * (o2 * n3 - o3 * n2)
                uc2 = e[7] - dist * (o3 * n1 - o1 * n3)
                uc3 = e[8] - dist * (o1 * n2 - o2 * n1)
                work += h * (r[0] * uc1 + r[1] * uc2 + r[2] * uc3 - (r[6] * o1 + r[7] * o2 + r[8] * o3))
            if H > 0 and slot < key_slot(whist) + NS:  # not the zero slot
                law_store(whist, i, slot, r)
                keys = slot + NS + 1
                whist[i, keys, 0] = walls.pick[i, q, PICK_MESH] + T(1.0)
                for c in range(3):
                    whist[i, keys, 1 + c] = walls.pick[i, q, PICK_N + c]
            fm = T(math.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]))
            if fm > peak:  # noqa: PLR1730 (a NaN never raises it)
                peak = fm
        return f1, f2, f3, m1, m2, m3, u, dn, df, dr, dt, npk, peak, work

    @outline
    def mesh_energy(T, i, me, dyn, par, walls, contacts, mat_i, nmat):
        """Stored energy of ``i``'s mesh contacts with their history as it is, and how
        many (no update)."""
        rad = par.radius[i]
        npk = choose(T, i, rad, dyn, walls)
        assign(T, i, npk, rad, False, dyn, walls, contacts, mat_i, nmat)
        u = T(0.0)
        for q in range(npk):
            m = int(walls.pick[i, q, PICK_MESH])
            slot = 0
            if H > 0:
                slot = key_slot(dyn.whist) + int(walls.pick[i, q, PICK_SLOT])
            n1, n2, n3 = to_world(walls, m, walls.pick[i, q, PICK_N], walls.pick[i, q, PICK_N + 1],
                                  walls.pick[i, q, PICK_N + 2])  # fmt: skip
            p = law_params(contacts.pair, pair_row(mat_i, walls.mesh_idx[m, IDX_MAT], nmat))
            u += law_energy(T, n1, n2, n3, walls.pick[i, q, PICK_DIST], me, p, law_load(dyn.whist, i, slot))
        return u, npk

    @outline
    def mesh_load(T, i, me, dyn, par, walls, contacts, mat_i, nmat, out, out_tri):
        """``i``'s load on the meshes at the current configuration, without update (as
        ``wall_load``): per chosen contact, row ``out[i, q]`` (:data:`LOAD_WIDTH`: the
        force on the mesh, the contact point, the law's moment on the mesh) and
        ``out_tri[i, q]`` the triangle (-1 past the last)."""
        rad = par.radius[i]
        npk = choose(T, i, rad, dyn, walls)
        assign(T, i, npk, rad, False, dyn, walls, contacts, mat_i, nmat)
        for q in range(NS):
            out_tri[i, q] = -1
            for c in range(LOAD_WIDTH):
                out[i, q, c] = T(0.0)
        x = dyn.x
        for q in range(npk):
            e = evaluate(T, i, q, me, rad, T(0.0), dyn, walls, contacts, mat_i, nmat)
            r = e[0]
            dist = walls.pick[i, q, PICK_DIST]
            out_tri[i, q] = walls.pick_tri[i, q]
            out[i, q, 0], out[i, q, 1], out[i, q, 2] = -r[0], -r[1], -r[2]
            out[i, q, 3] = x[i, 0] - dist * e[2]
            out[i, q, 4] = x[i, 1] - dist * e[3]
            out[i, q, 5] = x[i, 2] - dist * e[4]
            out[i, q, 6], out[i, q, 7], out[i, q, 8] = r[6], r[7], r[8]

    return SimpleNamespace(mesh_sum=mesh_sum, mesh_energy=mesh_energy, mesh_load=mesh_load, choose=choose,
                           closest=close, view=view, near=near)  # fmt: skip
