"""The LAMMPS export of a bonded specimen: the data file holds the grains (diameters,
densities giving the masses, velocities) and one bond type per bond whose coefficients
are the parallel bonds' stiffnesses and limits; the deck says which contact law, walls
and special bonds; scenes the export cannot express are refused by name, before
anything is written; ``granular export-lammps`` writes the files and refuses an
occupied folder without ``--overwrite``."""

import math
import os
import shutil
import subprocess

import numpy as np
import pytest

from granular.cli import main
from granular.run.lammps import LAMMPS_FILES, export_lammps
from granular.run.scene import build_model, load_scene

SCENE = """
name = "export"
[run]
dt = 5e-7
duration = 2e-5
[materials.grain]
young = 1e8
poisson = 0.25
density = 2500.0
restitution = 0.5
friction = 0.5
[bond_families.cement]
form = "parallel"
young = 1e8
poisson = 0.25
radius_ratio = 0.5
critical_force = [0.2, 0.3]
critical_moment = [1e-5, 2e-5]
[[particles]]
kind = "agglomerate"
count = 60
radius = [0.4e-3, 0.6e-3]
seed = 2
center = [0.004, 0.0, 0.0]
velocity = [-5.0, 0.0, 0.0]
material = "grain"
[[bonds]]
kind = "touching"
factor = 1.01
family = "cement"
[contacts]
bonded = false
[[walls]]
normal = [1.0, 0.0, 0.0]
offset = 0.0
material = "grain"
"""


def sections(text):
    """``{header: [rows]}`` of a LAMMPS data file's body sections."""
    out, name = {}, None
    for line in text.splitlines():
        word = line.split("#")[0].strip()
        if word in ("Atoms", "Velocities", "Bonds"):
            name = word
            out[name] = []
        elif name and word:
            out[name].append([float(v) for v in word.split()])
    return out


@pytest.fixture
def scene_file(tmp_path):
    p = tmp_path / "export.toml"
    p.write_text(SCENE)
    return p


def test_the_data_file_and_coefficients_are_the_model(scene_file, tmp_path):
    info = export_lammps(scene_file, tmp_path / "out")
    model, _ = build_model(load_scene(scene_file), backend="cpu")
    data = sections(open(info["files"]["data"]).read())
    atoms = np.array(data["Atoms"])
    assert len(atoms) == model.n == info["atoms"] and len(data["Bonds"]) == model.n_bonds == info["bonds"]
    diameter, rho = atoms[:, 3], atoms[:, 4]
    np.testing.assert_allclose(diameter, 2 * model.radius, rtol=1e-15)
    np.testing.assert_allclose(rho * math.pi / 6 * diameter**3, model.mass, rtol=1e-14)  # the masses
    np.testing.assert_allclose(atoms[:, 5:8], model.state().x, rtol=0, atol=1e-18)
    np.testing.assert_allclose(np.array(data["Velocities"])[:, 1:4], [[-5.0, 0.0, 0.0]] * model.n)
    bonds = np.array(data["Bonds"], dtype=np.int64)
    assert (bonds[:, 1] == np.arange(1, model.n_bonds + 1)).all()  # one type per bond
    np.testing.assert_array_equal(bonds[:, 2:] - 1, np.c_[model.bonds.host["a"], model.bonds.host["b"]])
    coeff = np.array([[float(v) for v in line.split()[1:]] for line in open(info["files"]["coeff"])])
    np.testing.assert_allclose(coeff[:, 1], model.bonds.ka, rtol=1e-15)  # Kr = k_n
    np.testing.assert_allclose(coeff[:, 2], model.bonds.ks, rtol=1e-15)  # Ks = k_s
    np.testing.assert_allclose(coeff[:, 3], model.bonds.host["kt"], rtol=1e-15)  # Kt
    np.testing.assert_allclose(coeff[:, 4], model.bonds.km, rtol=1e-15)  # Kb = k_b
    np.testing.assert_allclose(coeff[:, 5:9], [[0.2, 0.3, 1e-5, 2e-5]] * model.n_bonds, rtol=1e-15)
    deck = open(info["files"]["deck"]).read()
    assert "special_bonds lj 0 1 1 coul 1 1 1" in deck  # bonded pairs without contact
    assert "pair_coeff * * hertz/material 100000000 0.5 0.25 damping tsuji tangential mindlin NULL 1.0 0.5" in deck
    assert "wall/gran granular hertz/material" in deck and "xplane 0 NULL" in deck
    assert f"run {info['steps']}" in deck and info["steps"] == 40


def test_scenes_the_export_cannot_express_are_refused_by_name(scene_file, tmp_path):
    text = SCENE.replace('[[walls]]\nnormal = [1.0, 0.0, 0.0]', '[[walls]]\nnormal = [0.6, 0.8, 0.0]')
    p = tmp_path / "oblique.toml"
    p.write_text(text)
    with pytest.raises(ValueError, match=r"walls\[0\].normal"):
        export_lammps(p, tmp_path / "a")
    shipped = os.path.join(os.path.dirname(__file__), "..", "scenes", "agglomerate_impact.toml")
    with pytest.raises(ValueError, match="materials: the export needs one material"):
        export_lammps(shipped, tmp_path / "b")
    assert not os.path.exists(tmp_path / "b")  # refused before the folder is made
    family = SCENE[SCENE.index('form = "parallel"') : SCENE.index("[[particles]]")]
    p.write_text(SCENE.replace(family, 'form = "paper"\nka = 1.0\nks = 1.0\nkm = 1.0\nstrain_max = 0.1\n'))
    with pytest.raises(ValueError, match=r"bonds\[0\].family: bond family 'cement' is paper 003's binder"):
        export_lammps(p, tmp_path / "c")
    assert not os.path.exists(tmp_path / "c")


LMP = os.environ.get("GRANULAR_LMP") or shutil.which("lmp")


@pytest.mark.skipif(LMP is None, reason="no LAMMPS executable (set GRANULAR_LMP or put lmp on PATH)")
def test_lammps_runs_the_exported_deck(scene_file, tmp_path):
    info = export_lammps(scene_file, tmp_path)
    r = subprocess.run([LMP, "-in", "in.impact", "-log", "log.lammps", "-screen", "none"], cwd=tmp_path,
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, open(tmp_path / "log.lammps").read()[-2000:]
    dump = np.loadtxt(tmp_path / "final.dump", skiprows=9)
    assert dump.shape[0] == info["atoms"]


def test_the_command_writes_the_files_and_the_line_that_runs_them(scene_file, tmp_path, capsys):
    out = tmp_path / "lammps"
    assert main(["export-lammps", str(scene_file), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    model, _ = build_model(load_scene(scene_file), backend="cpu")
    assert sorted(os.listdir(out)) == sorted(LAMMPS_FILES)
    for name in LAMMPS_FILES:
        assert f"wrote {out / name}" in said
    assert f"cd {out} && lmp -in in.impact" in said
    with open(out / "specimen.data") as fh:
        text = fh.read()
    assert f"\n{model.n} atoms\n" in text and len(sections(text)["Atoms"]) == model.n
    # an occupied folder: refused without --overwrite, the files left as they were
    (out / "in.impact").write_text("mine\n")
    assert main(["export-lammps", str(scene_file), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "exists and is not empty; give --overwrite" in err
    assert (out / "in.impact").read_text() == "mine\n"
    assert main(["export-lammps", str(scene_file), "--out", str(out), "--overwrite"]) == 0
    assert (out / "in.impact").read_text().startswith("# export: exported by granular")
    capsys.readouterr()
    assert main(["export-lammps", str(scene_file), "--out", str(scene_file)]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err


def test_the_command_refuses_a_scene_in_one_line_and_writes_nothing(tmp_path, capsys):
    """A scene without parallel bonds: one line naming the field, status 2, no folder; a
    malformed scene: the scene's errors and status of ``granular run``."""
    p = tmp_path / "loose.toml"
    p.write_text(SCENE.replace('[[bonds]]\nkind = "touching"\nfactor = 1.01\nfamily = "cement"\n', ""))
    out = tmp_path / "lammps"
    assert main(["export-lammps", str(p), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"granular export-lammps: {p}: bonds: the export needs parallel")
    assert not out.exists()
    p.write_text(SCENE.replace("dt = 5e-7", "dt = -1.0"))
    assert main(["export-lammps", str(p), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "run.dt: Input should be greater than 0" in err and not out.exists()
    assert main(["run", str(p), "--out", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == err  # as granular run says it
