"""The project is self-contained: no file points to notes outside the repository, and
every ``docs/*.md`` a module or page names exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = [p for top in ("granular", "kernels", "docs", "scenes", "bench", "tests") for p in (ROOT / top).rglob("*")
         if p.suffix in (".py", ".md", ".toml") and "__pycache__" not in p.parts] + [ROOT / "README.md"]  # fmt: skip
OUTSIDE = re.compile(r"PAPER_NOTES|DESIGN\.md|STYLE\.md|GPU\.md|\bshared/|\.\./shared")


def test_no_file_points_outside_the_repository():
    me = Path(__file__).resolve()
    found = [f"{p.relative_to(ROOT)}:{i}" for p in FILES if p.resolve() != me
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if OUTSIDE.search(line)]  # fmt: skip
    assert found == []


def test_every_named_docs_page_exists():
    missing = set()
    for p in FILES:
        for name in re.findall(r"docs/([A-Za-z0-9_]+\.md)", p.read_text(encoding="utf-8")):
            if not (ROOT / "docs" / name).is_file():
                missing.add(f"{p.relative_to(ROOT)}: docs/{name}")
    assert sorted(missing) == []
