"""The repository's tests can all run in one pytest session."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_test_modules_have_unique_names() -> None:
    # pytest imports test files by basename (rootdir-relative "prepend" mode): two
    # plugins' test_fuzz.py would collide in the whole-repository run
    names = Counter(
        p.name
        for top in ("core", "plugins", "contrib", "tests")
        for p in (ROOT / top).rglob("test_*.py")
        if not any(part.startswith(".") or part == "node_modules" for part in p.parts)
    )
    assert {name: n for name, n in names.items() if n > 1} == {}
