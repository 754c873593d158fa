"""Measured figures with their thresholds, as text, JSON and files."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..io.jsonio import dumps
from .figures import style


@dataclass
class Check:
    """A measured ``value`` that must lie in ``[low, high]`` (``None``: unbounded)."""

    name: str
    value: float
    low: float | None = None
    high: float | None = None

    @property
    def passed(self) -> bool:
        v = float(self.value)
        if math.isnan(v):
            return False
        return bool((self.low is None or v >= self.low) and (self.high is None or v <= self.high))

    @property
    def rule(self) -> str:
        if self.low is not None and self.high is not None:
            return f"in [{self.low:g}, {self.high:g}]"
        return f">= {self.low:g}" if self.low is not None else f"<= {self.high:g}"

    def __post_init__(self):
        for tell in list(_LIVE):
            tell(self)

    def as_dict(self) -> dict:
        return {"name": self.name, "value": float(self.value), "low": self.low, "high": self.high, "passed": self.passed}


#: Callables told of every :class:`Check` as it is made (:class:`LiveChecks`).
_LIVE = []


@dataclass
class Report:
    """The outcome of one ``granular validate NAME`` study."""

    name: str
    checks: list
    data: dict = field(default_factory=dict)
    seconds: float = 0.0
    plotter: object = None  # callable(path) writing the PNG

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def as_dict(self) -> dict:
        return {
            "study": self.name,
            "passed": self.passed,
            "seconds": self.seconds,
            "checks": [c.as_dict() for c in self.checks],
            "data": self.data,
        }

    def text(self) -> str:
        width = max(len(c.name) for c in self.checks)
        lines = [f"granular validate {self.name}: {'PASS' if self.passed else 'FAIL'} ({self.seconds:.1f} s)"]
        for c in self.checks:
            mark = "ok  " if c.passed else "FAIL"
            lines.append(f"  {mark} {c.name:<{width}}  {c.value:.4g}  (required {c.rule})")
        return "\n".join(lines)

    def write(self, out_dir: str) -> list[str]:
        """Write ``<name>.json`` and ``<name>.png`` (if there is a plot) into ``out_dir``.

        Files are written under a temporary name and renamed, so an interrupted run
        leaves no half-written file.
        """
        os.makedirs(out_dir, exist_ok=True)
        written = []
        path = os.path.join(out_dir, f"{self.name}.json")
        tmp = path + ".part"
        with open(tmp, "w") as fh:
            fh.write(dumps(self.as_dict(), indent=2))
        os.replace(tmp, path)
        written.append(path)
        if self.plotter is not None:
            png = os.path.join(out_dir, f"{self.name}.png")
            tmp = os.path.join(out_dir, f".{self.name}.part.png")
            with style():  # curves that coincide stay told apart (granular.validation.figures)
                self.plotter(tmp)
            os.replace(tmp, png)
            written.append(png)
        return written
