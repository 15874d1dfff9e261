"""The docs site's navigation (``.ci/mkdocs.yml``) holds every page of ``docs/``, once.

``bash .ci/docs`` builds the site with mkdocs in strict mode, which fails on a page left out
of ``nav``; this test says the same without mkdocs installed, naming the page, and also
catches a ``nav`` entry whose file is gone. ``docs/examples/`` holds scripts and their
notes, kept out of the navigation by ``not_in_nav``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".ci" / "mkdocs.yml"


def load_config() -> dict[str, Any]:
    """``.ci/mkdocs.yml``, read with a safe loader (it holds no Python tags)."""
    config = YAML(typ="safe", pure=True).load(CONFIG.read_text(encoding="utf-8"))
    assert isinstance(config, dict), f"{CONFIG} is not a mapping"
    return config


def nav_pages(entries: Any, where: str = "nav") -> Iterator[tuple[str, str]]:
    """``(page, where)`` for every page a ``nav`` list names, nested sections included."""
    assert isinstance(entries, list), f"{where} is not a list"
    for index, entry in enumerate(entries):
        place = f"{where}[{index}]"
        if isinstance(entry, str):
            yield entry, place
            continue
        assert isinstance(entry, dict) and len(entry) == 1, f"{place} is not 'Title: page'"
        ((title, value),) = entry.items()
        if isinstance(value, list):
            yield from nav_pages(value, f"{place} ({title})")
        else:
            assert isinstance(value, str), f"{place} ({title}) is neither a page nor a section"
            yield value, f"{place} ({title})"


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return load_config()


def docs_dir(config: dict[str, Any]) -> Path:
    return (CONFIG.parent / str(config["docs_dir"])).resolve()


def test_the_site_is_built_from_docs_in_strict_mode(config: dict[str, Any]) -> None:
    assert docs_dir(config) == ROOT / "docs"
    assert config["strict"] is True
    assert config["theme"]["name"] == "material"
    validation = config["validation"]
    for check in ("omitted_files", "absolute_links", "unrecognized_links", "anchors"):
        assert validation[check] == "warn", f"validation.{check} must warn (strict fails it)"
    site = (CONFIG.parent / config["site_dir"]).resolve()
    assert site == ROOT / "site", "the site lands in site/, which .gitignore lists"
    assert "/site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()


def test_every_docs_page_is_in_the_nav_once(config: dict[str, Any]) -> None:
    docs = docs_dir(config)
    named = [page for page, _ in nav_pages(config["nav"])]
    repeated = sorted({page for page in named if named.count(page) > 1})
    assert not repeated, f"pages in the nav more than once: {repeated}"
    pages = {
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*.md")
        if path.relative_to(docs).parts[0] != "examples"
    }
    missing = sorted(pages - set(named))
    assert not missing, f"docs pages missing from nav in {CONFIG.name}: {missing}"


def test_every_nav_entry_is_a_page(config: dict[str, Any]) -> None:
    docs = docs_dir(config)
    gone = [
        f"{where}: {page}"
        for page, where in nav_pages(config["nav"])
        if not (docs / page).is_file()
    ]
    assert not gone, f"nav entries in {CONFIG.name} with no page in docs/: {gone}"
    assert next(nav_pages(config["nav"]))[0] == "index.md", "the site opens on index.md"


def test_examples_are_kept_out_of_the_nav_on_purpose(config: dict[str, Any]) -> None:
    assert "/examples/" in config["not_in_nav"].split()


def test_the_docs_script_builds_strictly_with_this_config() -> None:
    script = (ROOT / ".ci" / "docs").read_text(encoding="utf-8")
    assert "mkdocs build --strict -f .ci/mkdocs.yml" in script
    assert "--locked" in script
    assert "bash .ci/docs" in (ROOT / ".ci" / "test").read_text(encoding="utf-8")
