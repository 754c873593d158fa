"""``granular validate agglomerate``: the impacts of one bonded specimen at several
speeds as one model of replicas, and the study's report."""

import numpy as np

from granular.validation import agglomerate


def test_the_impacts_of_one_specimen_rise_in_damage_with_speed():
    res = agglomerate.impacts(150, [1.0, 6.0, 16.0], [90.0, 45.0], 4e-4)
    assert len(res["damage"]) == 6 and res["angle"] == [90.0] * 3 + [45.0] * 3
    d = np.array(res["damage"]).reshape(2, 3)
    assert (np.diff(d, axis=1) > 0).all()  # faster, more damage, at both angles
    assert d[0, 0] < 0.05 and d[0, 2] > 0.5
    for masses, count in zip(res["fragment_masses"], res["fragments"]):
        assert len(masses) == count and abs(sum(masses) - res["mass"]) <= 1e-12 * res["mass"]
    largest = np.array(res["largest_fragment"])
    assert largest[0] > largest[2] and largest.max() <= 1.0


def test_the_quick_study_passes_and_draws_its_figure(tmp_path):
    report = agglomerate.run(quick=True)
    assert report.passed, report.text()
    files = report.write(str(tmp_path))
    assert any(f.endswith("agglomerate.png") for f in files)
