"""Rolling-ball scenes and their ParaView frames (paper 004): the three example setups
run, keep contact, and write readable frames with the ball's orientation and the masses."""

import os

import numpy as np
import pytest

from granular import rotations as rot
from granular.bodies.rolling_ball.integrators import RK4
from granular.bodies.rolling_ball.output import contact_points, frame_arrays, frame_mesh
from granular.validation import rollingball as study

meshio = pytest.importorskip("meshio")


@pytest.mark.parametrize("name", sorted(study.SCENES))
def test_scenes_run_keep_contact_and_balance_energy(name):
    ball, st, t_end = study.SCENES[name]()
    assert t_end > 0 and st.y.shape == (1, 15)
    E0 = float(ball.energy(0.0, st.y)[0])
    s = RK4(ball).run(st.copy(), 0.01, 200)
    lam = ball.contact_force(s.t, s.y)[0]
    assert float(lam @ s.Gamma[0]) > 0  # the plane pushes: the ball stays on it
    assert abs(float(ball.energy(s.t, s.y)[0]) - E0 - float(s.work_actuation[0])) < 1e-9
    assert np.linalg.norm(s.position[0, :2]) > 1e-3  # the masses make the ball move
    cp = contact_points(ball, s)
    assert cp[0, 2] == 0.0 and np.array_equal(cp[0, :2], s.position[0, :2])


def test_frame_arrays_layout_and_orientation():
    ball, st, _ = study.scene_orthogonal()
    s = RK4(ball).run(st.copy(), 0.01, 50)
    points, data, lines = frame_arrays(ball, s)
    K = ball.n_masses
    assert points.shape == (K + 2, 3) and lines.tolist() == [[0, 1], [0, 2], [0, 3]]
    assert data["kind"].tolist() == [0, 1, 2, 2] and data["mass"].tolist() == [-1, 0, 1, 2]
    Rm = rot.quat_to_matrix(s.q[0])
    for k in range(3):
        assert np.abs(data[f"director_{k + 1}"] - Rm[:, k]).max() < 1e-15
    assert np.abs(points[0] - s.position[0]).max() == 0
    mk = ball.mass_kinematics(s.t)
    assert np.abs(points[2:] - (s.position[0] + mk.chi[0] @ Rm.T)).max() < 1e-14
    # velocities of the masses: finite differences of their positions
    h = 1e-5
    s2 = RK4(ball).run(s.copy(), h, 1)
    p2 = frame_arrays(ball, s2)[0]
    assert np.abs((p2 - points) / h - data["velocity"]).max() < 1e-4
    assert data["radius"][0] == study.RADIUS
    mesh = frame_mesh(ball, s)
    assert mesh.points.shape == points.shape and len(mesh.cells) == 2


def test_scene_frames_are_written_and_readable(tmp_path):
    out = tmp_path / "frames_out"
    paths = study.write_scene_frames("figure_eight", str(out), t_end=0.2, h=0.01, every=10)
    assert len(paths) == 3 and os.path.isfile(out / "frames.pvd")
    text = (out / "frames.pvd").read_text()
    assert text.count("<DataSet") == 3
    m = meshio.read(paths[-1])
    assert m.points.shape == (3, 3)
    assert set(["director_1", "director_2", "director_3", "velocity", "kind", "radius"]) <= set(m.point_data)
    d1 = m.point_data["director_1"]
    assert np.abs(np.linalg.norm(d1, axis=1) - 1).max() < 1e-12
    with pytest.raises(ValueError, match="name"):
        study.write_scene_frames("nope", str(out))
