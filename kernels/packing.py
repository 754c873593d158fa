"""The loops of the dense packing (:mod:`granular.particles.packing`), written once for
the CPU and the GPU.

Each *row* function works on the particles ``lo .. hi - 1`` and writes only their rows:
the CPU runs them over ranges of rows (Numba, serially or under ``prange``), the GPU with
one thread per particle (``lo = i``, ``hi = i + 1``; :mod:`kernels.packing_cuda`). The
FIRE control (:func:`fire_control`, :func:`stalled`) is scalar work on a small state
vector, the same on both. The arithmetic of a row is the same on both backends; the sums
over particles are not (a serial loop on the CPU, a tree reduction on the GPU), so a GPU
packing is reproducible on its device but not equal to the CPU's bit for bit.

FIRE parameters: Bitzek, Koskinen, Gähler, Moseler & Gumbsch, "Structural relaxation
made simple", Phys. Rev. Lett. 97, 170201 (2006), their recommended values, with unit
masses and unit stiffness (times in units of ``sqrt(m / k)`` whatever the length scale).
"""

import math

import numpy as np

DT0 = 0.05
DT_MAX = 0.5
DT_MIN = 0.002
N_DELAY = 5
F_INC = 1.1
F_DEC = 0.5
ALPHA0 = 0.1
F_ALPHA = 0.99
#: A round is jammed when its lowest energy fell by less than ``STALL_DROP`` (relative)
#: over the last ``STALL_WINDOW`` steps.
STALL_WINDOW = 200
STALL_DROP = 0.02

# the FIRE state vector ``st``: step, mixing, steps since the last restart, lowest energy
# of this window, lowest energy of the last window, steps in this window
ST_DT, ST_ALPHA, ST_POSITIVE, ST_LOW, ST_LOW_LAST, ST_WINDOW = 0, 1, 2, 3, 4, 5


def cell_rows(lo_i, hi_i, x, lo, inv_cell, dims, cid):
    """Cell of particles ``lo_i .. hi_i - 1`` in the grid of ``dims`` cells from ``lo``
    (``floor((x - lo) inv_cell)`` per axis, clamped to the grid), row-major."""
    for i in range(lo_i, hi_i):
        c = np.int64(0)
        for a in range(3):
            k = np.int64(math.floor((x[i, a] - lo[a]) * inv_cell[a]))
            if k < 0:
                k = 0
            elif k >= dims[a]:
                k = dims[a] - 1
            c = c * dims[a] + k
        cid[i] = c


def neighbor_rows(lo, hi, x, rad, skin, cid, start, order, dims, nbr_start, nbr, count_only):
    """Neighbours of particles ``lo .. hi - 1`` closer than ``rad_i + rad_j + skin``, in
    cell order (``start``, ``order``: the particles sorted by cell, then by index).
    ``count_only``: write the counts into ``nbr_start[i + 1]``; else fill ``nbr`` from
    ``nbr_start`` (the prefix sums of the counts)."""
    for i in range(lo, hi):
        c = cid[i]
        cz = c % dims[2]
        cy = (c // dims[2]) % dims[1]
        cx = c // (dims[2] * dims[1])
        cnt = np.int64(0)
        base = nbr_start[i]
        for ax in range(max(cx - 1, 0), min(cx + 2, dims[0])):
            for ay in range(max(cy - 1, 0), min(cy + 2, dims[1])):
                for az in range(max(cz - 1, 0), min(cz + 2, dims[2])):
                    c2 = (ax * dims[1] + ay) * dims[2] + az
                    for k in range(start[c2], start[c2 + 1]):
                        j = order[k]
                        if j == i:
                            continue
                        dx = x[i, 0] - x[j, 0]
                        dy = x[i, 1] - x[j, 1]
                        dz = x[i, 2] - x[j, 2]
                        cut = rad[i] + rad[j] + skin
                        if dx * dx + dy * dy + dz * dz < cut * cut:
                            if not count_only:
                                nbr[base + cnt] = j
                            cnt += 1
        if count_only:
            nbr_start[i + 1] = cnt


def force_rows(lo, hi, x, rad, nbr_start, nbr, code, geom, f, e_i, ov_i):
    """Forces ``-dU/dx_i`` on particles ``lo .. hi - 1`` of the harmonic overlap energy,
    each one's share of the energy (half of each pair, all of its walls) and its largest
    overlap. ``code``: 0 sphere of radius ``geom[0]``; 1 cylinder of radius ``geom[0]``
    about ``z``, caps at ``z = +-geom[2]``; 2 box of faces at ``+-geom[a]``."""
    for i in range(lo, hi):
        fx = 0.0
        fy = 0.0
        fz = 0.0
        e = 0.0
        ov = 0.0
        xi = x[i, 0]
        yi = x[i, 1]
        zi = x[i, 2]
        ri = rad[i]
        for k in range(nbr_start[i], nbr_start[i + 1]):
            j = nbr[k]
            dx = xi - x[j, 0]
            dy = yi - x[j, 1]
            dz = zi - x[j, 2]
            d2 = dx * dx + dy * dy + dz * dz
            sr = ri + rad[j]
            if d2 < sr * sr:
                d = math.sqrt(d2)
                delta = sr - d
                if d > 0.0:
                    fx += delta * dx / d
                    fy += delta * dy / d
                    fz += delta * dz / d
                elif i < j:  # coincident centres: pushed apart along x
                    fx += delta
                else:
                    fx -= delta
                e += 0.25 * delta * delta
                ov = max(ov, delta)
        first = 0
        if code == 0:
            d = math.sqrt(xi * xi + yi * yi + zi * zi)
            delta = d + ri - geom[0]
            if delta > 0.0:
                if d > 0.0:
                    fx -= delta * xi / d
                    fy -= delta * yi / d
                    fz -= delta * zi / d
                e += 0.5 * delta * delta
                ov = max(ov, delta)
            first = 3
        elif code == 1:
            d = math.sqrt(xi * xi + yi * yi)
            delta = d + ri - geom[0]
            if delta > 0.0:
                if d > 0.0:
                    fx -= delta * xi / d
                    fy -= delta * yi / d
                e += 0.5 * delta * delta
                ov = max(ov, delta)
            first = 2
        for a in range(first, 3):  # plane walls at +-geom[a]
            xa = x[i, a]
            fa = 0.0
            delta = xa + ri - geom[a]
            if delta > 0.0:
                fa -= delta
                e += 0.5 * delta * delta
                ov = max(ov, delta)
            delta = -xa + ri - geom[a]
            if delta > 0.0:
                fa += delta
                e += 0.5 * delta * delta
                ov = max(ov, delta)
            if a == 0:
                fx += fa
            elif a == 1:
                fy += fa
            else:
                fz += fa
        f[i, 0] = fx
        f[i, 1] = fy
        f[i, 2] = fz
        e_i[i] = e
        ov_i[i] = ov


def advance_rows(lo, hi, x, v, f, x_ref, dt, mix_a, mix_b, disp2):
    """One FIRE step of particles ``lo .. hi - 1``: ``v += dt F``, then the FIRE mixing
    ``v = mix_a v + mix_b F``, then ``x += dt v`` (semi-implicit Euler); ``disp2``: the
    squared displacement since the neighbour list was built."""
    for i in range(lo, hi):
        d2 = 0.0
        for a in range(3):
            va = v[i, a] + dt * f[i, a]
            va = mix_a * va + mix_b * f[i, a]
            v[i, a] = va
            xa = x[i, a] + dt * va
            x[i, a] = xa
            dd = xa - x_ref[i, a]
            d2 += dd * dd
        disp2[i] = d2


def retreat_rows(lo, hi, x, v, back):
    """FIRE's restart of particles ``lo .. hi - 1``: ``x -= back v`` (half a step back),
    then ``v = 0``."""
    for i in range(lo, hi):
        for a in range(3):
            x[i, a] -= back * v[i, a]
            v[i, a] = 0.0


def stalled(st, energy):
    """The stall test of a relaxation round, after a force evaluation of ``energy``: the
    lowest energy of each window of :data:`STALL_WINDOW` steps must fall by
    :data:`STALL_DROP` (relative) from the last window's, else the round is jammed
    (True)."""
    st[ST_LOW] = min(st[ST_LOW], energy)
    st[ST_WINDOW] += 1.0
    if st[ST_WINDOW] >= STALL_WINDOW:
        if st[ST_LOW] > (1.0 - STALL_DROP) * st[ST_LOW_LAST]:
            return True
        st[ST_LOW_LAST] = st[ST_LOW]
        st[ST_WINDOW] = 0.0
    return False


def fire_control(st, p):
    """FIRE's step and mixing control for the power ``p = F . v``: with ``p > 0`` for more
    than :data:`N_DELAY` steps the step grows and the mixing decays; with ``p <= 0`` the
    step is halved and the mixing reset. Updates ``st``; returns the fraction of the old
    velocity to take back from the positions (half the old step, :func:`retreat_rows`;
    the FIRE 2.0 back-off of Guénolé et al., Comput. Mater. Sci. 175, 109584, 2020), 0
    when the step goes on."""
    if p > 0.0:
        st[ST_POSITIVE] += 1.0
        if st[ST_POSITIVE] > N_DELAY:
            st[ST_DT] = min(st[ST_DT] * F_INC, DT_MAX)
            st[ST_ALPHA] *= F_ALPHA
        return 0.0
    back = 0.5 * st[ST_DT]
    st[ST_POSITIVE] = 0.0
    st[ST_DT] = max(st[ST_DT] * F_DEC, DT_MIN)
    st[ST_ALPHA] = ALPHA0
    return back
