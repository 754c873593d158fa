"""Torus impact study (paper 003, Sect. 4.1, Figs. 4-7)."""

import pytest

from granular.validation import torus


def test_quick_torus_study_passes():
    """Energy by kind (three variants), momenta in free flight and impact, the stability
    limit of the printed parameters, long-time drift, and convergence orders."""
    report = torus.run(quick=True)
    assert report.passed, "\n" + report.text()
    names = " ".join(c.name for c in report.checks)
    for fig in ("Fig.4", "Fig.5", "Fig.6", "Fig.7"):
        assert fig in names


@pytest.mark.long
def test_full_torus_study_passes():
    """h = 1e-3 to t = 25 (energy), h = 2e-3 to t = 100 (drift), E(t)-error at t = 10."""
    report = torus.run(quick=False)
    assert report.passed, "\n" + report.text()
