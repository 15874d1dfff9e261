"""docs/security.md names the tests that check its claims: every test it names exists.

A reference is a test file (``tests/test_x.py``), a test in one
(``tests/test_x.py::test_y``; ``::test_y`` is in the file named last before it), a test of
a contract suite of ``plait_testing`` (``CheckpointStoreContract.test_y``), or a bare test
name (``test_y``), which must be defined in some test file of the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "security.md"
CONTRACTS = ROOT / "plugins" / "plait-testing" / "src" / "plait_testing"

REFERENCE = re.compile(r"`((?:[\w./-]+\.py)?(?:::test_\w+)?|\w+Contract\.test_\w+|test_\w+)`")


def _defines(path: Path, name: str) -> bool:
    return re.search(rf"^\s*(?:async )?def {name}\(", path.read_text(), re.M) is not None


def _test_files() -> list[Path]:
    found = [
        path
        for path in ROOT.glob("**/test_*.py")
        if ".venv" not in path.parts and "node_modules" not in path.parts
    ]
    return [*found, *CONTRACTS.glob("*.py")]


def test_every_test_security_md_names_exists() -> None:
    text = PAGE.read_text()
    last_file: Path | None = None
    missing: list[str] = []
    named = 0
    files = _test_files()
    for match in REFERENCE.finditer(text):
        reference = match.group(1)
        if not reference or not ("test" in reference or reference.endswith(".py")):
            continue
        named += 1
        if "Contract." in reference:
            contract, name = reference.split(".", 1)
            if not any(
                f"class {contract}" in p.read_text() and _defines(p, name)
                for p in CONTRACTS.glob("*.py")
            ):
                missing.append(reference)
            continue
        if reference.startswith("test_"):  # a bare test name: some test file defines it
            if not any(_defines(p, reference) for p in files):
                missing.append(reference)
            continue
        path_part, _, name = reference.partition("::")
        if path_part:
            last_file = ROOT / path_part
            if not last_file.is_file():
                missing.append(reference)
                continue
        if name and (last_file is None or not _defines(last_file, name)):
            missing.append(reference)
    assert named >= 60, named  # the page names its tests; the pattern still finds them
    assert not missing, missing
