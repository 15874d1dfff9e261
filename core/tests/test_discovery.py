"""Plugin discovery reads what it needs without the email parser, and the kernel's version
is a constant that matches the installed distribution (issue 9, cold start)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import plait
import pytest
from plait import _version, loading

if sys.version_info >= (3, 12):
    from importlib import metadata
else:
    import importlib_metadata as metadata


def test_the_version_constant_is_the_installed_distribution_s() -> None:
    assert _version.__version__ == metadata.version("plait-core")
    assert plait.__version__ == loading.core_version() == _version.__version__


def test_the_version_constant_is_the_one_in_pyproject() -> None:
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert f'version = "{_version.__version__}"' in pyproject.read_text(encoding="utf-8")


def _installed() -> list[Any]:
    found = [d for d in metadata.distributions() if d.read_text("METADATA") is not None]
    assert len(found) > 10  # the whole workspace is installed
    return found


@pytest.mark.parametrize("dist", _installed(), ids=lambda d: d.metadata["Name"])
def test_the_metadata_scan_agrees_with_the_email_parser(dist: Any) -> None:
    assert loading.describe_distribution(dist) == (
        dist.metadata["Name"],
        dist.version,
        list(dist.requires or []),
    )


class _Dist:
    """A distribution whose METADATA text is given; its API answers differently, so a
    test can tell which path answered."""

    def __init__(self, text: str | None) -> None:
        self.text = text
        self.metadata = {"Name": "from-api"}
        self.version = "9.9"
        self.requires = ["plait-core>=9"]

    def read_text(self, filename: str) -> str | None:
        assert filename == "METADATA"
        return self.text


HEADERS = "Metadata-Version: 2.3\nName: plait-mine\nVersion: 1.2\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the scan answers: headers only, a body that looks like headers is ignored
        (
            HEADERS + "Requires-Dist: plait-core<1,>=0.1\nrequires-dist: attrs\n\n"
            "Requires-Dist: not-a-header\n",
            ("plait-mine", "1.2", ["plait-core<1,>=0.1", "attrs"]),
        ),
        (
            "Name:\tplait-mine\r\nVersion: 1.2\r\nRequires-Dist: plait-core\r\n",
            ("plait-mine", "1.2", ["plait-core"]),
        ),
        # the distribution's own API answers
        (None, ("from-api", "9.9", ["plait-core>=9"])),  # no METADATA (egg-info)
        (HEADERS, ("from-api", "9.9", ["plait-core>=9"])),  # requires.txt may hold them
        (
            HEADERS + "Requires-Dist: plait-core\n  >=0.1\n",  # a folded header
            ("from-api", "9.9", ["plait-core>=9"]),
        ),
        ("Version: 1\nRequires-Dist: x\n", ("from-api", "9.9", ["plait-core>=9"])),
        (HEADERS + "not a header\nRequires-Dist: x\n", ("from-api", "9.9", ["plait-core>=9"])),
    ],
)
def test_the_metadata_scan_leaves_what_it_cannot_read_to_the_api(
    text: str | None, expected: tuple[str, str, list[str]]
) -> None:
    assert loading.describe_distribution(_Dist(text)) == expected


def test_a_distribution_without_read_text_is_described_by_its_api() -> None:
    dist = _Dist(None)
    del dist.text
    dist.read_text = None  # type: ignore[assignment,method-assign]
    assert loading.describe_distribution(dist) == ("from-api", "9.9", ["plait-core>=9"])
