"""The docs are tested: every Python block runs, every hook has a section, every page is linked.

Rules for ``docs/*.md``:

- every fence names its language; Python is ```` ```python ````, other text is ``toml``,
  ``bash``, ``text``, ``console``, ``yaml`` or ``json`` (never a Python block that does not
  run);
- a page's Python blocks run in order, in one namespace (a module named after the page),
  with a fresh process-wide plugin manager; top-level ``await`` does not compile, so
  examples use ``run_sync`` or ``anyio.run``;
- a block with ``title="path"`` is a *file* of a project the page builds: it is written under
  a temporary directory before the page runs, which is then the working directory, with that
  directory and its ``src/`` on ``sys.path``; titled Python files are imported or tested, not
  run in the page's namespace;
- a block whose body is a line ``--8<-- "examples/…"`` shows a file of ``docs/examples/``
  (pymdownx.snippets includes it in the site): the example is a runnable file, written once,
  and the page and these tests read that file.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import subprocess
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import plait_budgets.hookspecs
import plait_cli.hookspecs
import plait_ui.hookspecs
import plait_versions.hookspecs
import pytest
from plait import _hookspecs as hookspecs
from plait.spi import PluginManager, set_plugin_manager
from plait_testing import cassette

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
#: pages whose code blocks must run: the docs and the README's tour
RUNNABLE = [*PAGES, ROOT / "README.md"]
LANGUAGES = {"python", "toml", "bash", "text", "console", "yaml", "json"}
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
#: a line that includes a file of docs/ (pymdownx.snippets, base path docs/)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"[ \t]*\n?', re.M)


def included(body: str) -> str:
    """``body`` with each snippet line replaced by the file it names."""
    return SNIPPET.sub(lambda m: (DOCS / m["path"]).read_text(encoding="utf-8"), body)


class Block(NamedTuple):
    """One fenced code block of a page."""

    language: str
    title: str | None
    body: str
    line: int


def code_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        info = match.group("info").strip()
        language = info.split(maxsplit=1)[0] if info else ""
        title = re.search(r'title="([^"]+)"', info)
        line = text.count("\n", 0, match.start("body")) + 1
        body = included(match["body"])
        found.append(Block(language, title.group(1) if title else None, body, line))
    return found


def write_project(page: Path, root: Path) -> list[Block]:
    """Write the page's titled blocks under ``root``; return them."""
    files = [b for b in code_blocks(page) if b.title]
    for block in files:
        path = root / block.title  # type: ignore[operator]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.body, encoding="utf-8")
    return files


@pytest.fixture
def fresh_plugins() -> Iterator[None]:
    """A fresh process-wide plugin manager (installed plugins only) for one page."""
    previous = set_plugin_manager(PluginManager())
    try:
        yield
    finally:
        set_plugin_manager(previous)


#: pages whose Python blocks call the real local model, SmolLM2: they run from a cassette
#: of its answers (tests/cassettes/docs-<page>.json; the model need not be installed), and
#: on the model itself under ``pytest --plait-live -m plait_live``
REAL_MODEL_PAGES = {"agents.md", "testing-workflows.md"}
CASSETTES = ROOT / "tests" / "cassettes"


def _smollm2_call(kind: str, request: Mapping[str, Any]) -> bool:
    """A call of the real local model (the pages' fake models are called as they are)."""
    return kind == "llm.prompt" and request.get("model") == "SmolLM2"


def _model_cassette(page: Path) -> contextlib.AbstractContextManager[Any]:
    """The cassette a page's blocks run in (none for a page without the real model)."""
    if page.name not in REAL_MODEL_PAGES:
        return contextlib.nullcontext()
    found: contextlib.AbstractContextManager[Any] = cassette(
        f"docs-{page.stem}", directory=CASSETTES, only=_smollm2_call
    )
    return found


RUNNABLE_PARAMS = [
    pytest.param(p, id=p.name, marks=[pytest.mark.plait_live] if p.name in REAL_MODEL_PAGES else [])
    for p in RUNNABLE
]


def test_the_pages_on_the_real_model_run_from_a_cassette() -> None:
    for page in RUNNABLE:
        python = "".join(b.body for b in code_blocks(page) if b.language == "python")
        uses = "model: SmolLM2" in python or 'get_model("SmolLM2")' in python
        assert uses == (page.name in REAL_MODEL_PAGES), page.name
        if uses:
            assert (CASSETTES / f"docs-{page.stem}.json").is_file(), page.name


@pytest.mark.parametrize("page", RUNNABLE_PARAMS)
def test_every_python_block_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_plugins: None
) -> None:
    files = write_project(page, tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    if (tmp_path / "src").is_dir():
        monkeypatch.syspath_prepend(str(tmp_path / "src"))
    for block in files:
        if block.language == "python":
            compile(block.body, f"{page.name}:{block.line}", "exec")
    name = f"docs_{page.stem.replace('-', '_')}"
    module = types.ModuleType(name)
    module.__file__ = str(page)
    monkeypatch.setitem(sys.modules, name, module)
    before = set(sys.modules)
    try:
        with _model_cassette(page):
            for block in code_blocks(page):
                if block.language == "python" and not block.title:
                    exec(compile(block.body, f"{page}:{block.line}", "exec"), module.__dict__)
    finally:
        for imported in set(sys.modules) - before:
            if str(getattr(sys.modules[imported], "__file__", "")).startswith(str(tmp_path)):
                del sys.modules[imported]


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_every_block_names_a_known_language(page: Path) -> None:
    for block in code_blocks(page):
        assert block.language in LANGUAGES, f"{page.name}:{block.line}: {block.language!r}"


def test_the_pages_exist_and_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in PAGES:
        if page.name != "index.md":
            assert f"({page.name})" in index, f"index.md does not link {page.name}"
    for name in ("concepts", "using-plugins", "writing-plugins", "testing-plugins", "hooks"):
        assert (DOCS / f"{name}.md").is_file()


def test_the_tutorial_builds_a_plugin_distribution(tmp_path: Path) -> None:
    titles = {b.title for b in write_project(DOCS / "writing-plugins.md", tmp_path)}
    assert {"pyproject.toml", "src/plait_longest/__init__.py", "tests/test_longest.py"} <= titles
    pyproject = (tmp_path / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points.plait]\nlongest = "plait_longest"' in pyproject
    assert re.search(r'dependencies = \["plait-core>=[^"]*"\]', pyproject)


def _shows_tests(page: Path) -> bool:
    return any(b.title and b.title.startswith("tests/") for b in code_blocks(page))


TESTED_PAGES = [p for p in PAGES if _shows_tests(p)]


@pytest.mark.parametrize("page", TESTED_PAGES, ids=[p.name for p in TESTED_PAGES])
def test_the_test_files_a_page_shows_pass(page: Path, tmp_path: Path) -> None:
    write_project(page, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(tmp_path / "src")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\b\d+ passed\b", summary), summary
    assert not re.search(r"failed|skipped|error|xfail", summary), summary


# -- the hook reference ----------------------------------------------------------------------


def hook_specs() -> dict[str, Any]:
    """Every hook specification in :mod:`plait._hookspecs`, and in the modules of the
    first-party plugins that declare hooks of their own (``plait_addhooks``), by name."""
    return {
        name: fn
        for module in (
            hookspecs,
            plait_cli.hookspecs,
            plait_ui.hookspecs,
            plait_budgets.hookspecs,
            plait_versions.hookspecs,
        )
        for name, fn in vars(module).items()
        if name.startswith("plait_") and hasattr(fn, "plait_spec")
    }


def hook_sections() -> dict[str, str]:
    """``## plait_…`` sections of docs/hooks.md: hook name -> section text."""
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    sections: dict[str, str] = {}
    for part in parts:
        heading, _, body = part.partition("\n")
        if heading.startswith("plait_"):
            sections[heading.strip()] = body
    return sections


def plain(text: str) -> str:
    """Docstring or Markdown text without markup, in single spaces, for comparing."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", text)  # :class:`~plait.x.Y` -> plait.x.Y
    text = text.replace("`", "").replace("*", "")
    return " ".join(text.split())


def test_every_hook_is_documented_and_every_section_is_a_hook() -> None:
    assert sorted(hook_sections()) == sorted(hook_specs())


@pytest.mark.parametrize("hook", sorted(hook_specs()))
def test_each_hook_section_matches_its_docstring(hook: str) -> None:
    fn = hook_specs()[hook]
    section = hook_sections().get(hook, "")
    params = list(inspect.signature(fn).parameters)
    assert f"{hook}({', '.join(params)})" in section, "the section shows the signature"
    doc = inspect.getdoc(fn) or ""
    summary = doc.split("\n\n", 1)[0]
    assert plain(summary) in plain(section), "the section starts from the docstring summary"
    for param in params:
        assert re.search(rf"`{param}`", section), f"the section describes {param}"
    if fn.plait_spec["firstresult"]:
        assert "first non-`None` result" in section
    else:
        assert "every implementation is called" in plain(section)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_included_example_is_named_in_the_snippet_form_and_exists(page: Path) -> None:
    # a formatter that reads `--8<-- "x"` as Python rewrites it to `--8 < --"x"`, which
    # neither the site nor these tests include
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("--8"):
            found = SNIPPET.match(line + "\n")
            assert found, f"{page.name}:{number}: {line!r} is no snippet line"
            assert (DOCS / found["path"]).is_file(), f"{page.name}:{number}: no {found['path']}"
