"""ParaView frames of rolling balls and their internal masses (paper 004).

Each frame is one unstructured grid (``.vtu``, via meshio) with, per ball ``b`` and
``K`` masses, ``K + 2`` points in this order: the ball's geometric centre, the shell's
centre of mass, the masses; and ``K + 1`` line cells from the centre to the shell's
centre of mass and to each mass (the "spokes"). Point data (host NumPy):

================  ==========  ==================================================
``kind``          int8        0 centre, 1 shell centre of mass, 2 moving mass
``ball``          int64       ball index ``b``
``mass``          int64       -1 centre, 0 shell, ``i`` >= 1 mass ``i``
``radius``        float64     [L] ``r`` for the centre (glyph: the ball), ``0.1 r``
                              for the other points (display size only)
``director_1..3`` (P, 3)      the ball's body axes ``Λ e_k`` (orientation glyphs),
                              repeated on every point of the ball
``velocity``      (P, 3)      [L/T] spatial velocity of the point
``angular_velocity`` (P, 3)   [1/T] the ball's spatial ``ω = ΛΩ``
``energy``        float64     [M L²/T²] the ball's energy
================  ==========  ==================================================

:class:`RollingBallFrames` writes a ``.pvd`` collection through
:class:`granular.io.FrameWriter` (atomic files, restartable); :func:`frame_mesh` gives
the same frame as a ``meshio.Mesh`` for users who write files themselves.
"""

from __future__ import annotations

import numpy as np

from ... import rotations as rot
from ...io import FrameWriter
from .ball import POSITION, QUAT

__all__ = ["frame_arrays", "frame_mesh", "RollingBallFrames", "contact_points"]


def contact_points(model, state):
    """(N, 3) host array: the contact points ``z - r e3`` on the plane [L]."""
    be = model.backend
    z = be.to_host(state.y[:, POSITION]).copy()
    z[:, 2] -= np.broadcast_to(be.to_host(model.radius), (model.n,))
    return z


def frame_arrays(model, state):
    """``(points (P, 3), point_data dict, lines (L, 2) int64)`` as host arrays for one frame."""
    be, xp = model.backend, model.xp
    n, K = model.n, model.n_masses
    y, t = state.y, state.t
    q = y[:, QUAT]
    qn = q / xp.sqrt((q * q).sum(axis=1))[:, None]
    Om = y[:, 0:3]
    omega = rot.quat_rotate(qn, Om)
    pts_body = model.mass_positions(t, y)  # (n, K+1, 3)
    zdot = model.rhs(t, y[:, :13])[:, POSITION]
    chi, dchi, _, _ = model._points(t)
    rel = rot.quat_rotate(qn[:, None, :], chi)
    vel = zdot[:, None, :] + rot.cross(omega[:, None, :], rel) + rot.quat_rotate(qn[:, None, :], dchi)
    centre = y[:, None, POSITION]
    P = K + 2
    points = be.to_host(xp.concatenate([centre, pts_body], axis=1)).reshape(n * P, 3)
    velocity = be.to_host(xp.concatenate([zdot[:, None, :], vel], axis=1)).reshape(n * P, 3)
    R = be.to_host(rot.quat_to_matrix(qn))  # (n, 3, 3), columns = body axes in space
    r = np.broadcast_to(be.to_host(model.radius), (n,))
    radius = np.repeat(0.1 * r, P)
    radius[::P] = r
    kind = np.tile(np.array([0, 1] + [2] * K, dtype=np.int8), n)
    mass = np.tile(np.arange(-1, K + 1, dtype=np.int64), n)
    data = {
        "kind": kind,
        "ball": np.repeat(np.arange(n, dtype=np.int64), P),
        "mass": mass,
        "radius": radius,
        "velocity": velocity,
        "angular_velocity": np.repeat(be.to_host(omega), P, axis=0),
        "energy": np.repeat(be.to_host(model.energy(t, y)), P),
    }
    for k in range(3):
        data[f"director_{k + 1}"] = np.repeat(R[:, :, k], P, axis=0)
    base = (np.arange(n, dtype=np.int64) * P)[:, None]
    lines = np.stack([np.broadcast_to(base, (n, K + 1)), base + np.arange(1, K + 2)[None, :]], axis=-1)
    return points, data, lines.reshape(-1, 2)


def frame_mesh(model, state):
    """The frame as a ``meshio.Mesh`` (vertex cells for the points, line cells for the spokes)."""
    import meshio

    points, data, lines = frame_arrays(model, state)
    cells = [("vertex", np.arange(len(points), dtype=np.int64)[:, None]), ("line", lines)]
    return meshio.Mesh(points, cells, point_data=data)


class RollingBallFrames:
    """A ``.pvd`` series of frames in ``out_dir`` (``frames.pvd`` + ``frames/*.vtu``).

    ``write(state)`` adds the frame at ``state.t`` (times must increase); ``paths`` lists
    the files written.
    """

    def __init__(self, out_dir, model):
        self.model = model
        self.writer = FrameWriter(out_dir)
        self.paths = []

    def write(self, state):
        points, data, lines = frame_arrays(self.model, state)
        self.paths.append(self.writer.write(state.t, points, data, lines=lines))
        return self.paths[-1]
