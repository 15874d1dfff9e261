"""The README's demo: ``plait run docs/examples/demo/docs_review.yaml --allow-imports``
reviews a folder of Markdown, durably, and writes ``.plait/demo/report.md``;
``kill_and_resume.py`` kills it with SIGKILL mid-foreach and resumes it to the same report;
``PLAIT_DEMO_MODEL`` puts a model behind the summaries.

The structural numbers of the report are recomputed here from the pages, by code of this
test's own (not the demo's ``doctext``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "docs" / "examples" / "demo"
WORKFLOW = DEMO / "docs_review.yaml"
TARGET = str(WORKFLOW)
STORE = "sqlite:///.plait/runs.db"


def plait(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``plait ARGS`` in ``cwd``, with no PLAIT_ or PYTEST_ setting of ours leaking in."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    return subprocess.run(
        [sys.executable, "-m", "plait_cli", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def structure(text: str, folder: Path) -> dict[str, Any]:
    """Headings, fenced code blocks, links and broken relative links of a Markdown page,
    as the demo's docstring defines them, computed independently."""
    fence = ""
    headings = blocks = links = 0
    broken: list[list[Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        bare = line.lstrip()
        if fence:
            if bare.startswith(fence):
                fence = ""
            continue
        if bare.startswith(("```", "~~~")):
            marker = bare[0]
            fence = bare[: len(bare) - len(bare.lstrip(marker))]
            blocks += 1
            continue
        if re.match(r"#{1,6} +\S", line):
            headings += 1
        without_code = re.sub(r"`+[^`\n]*`+", " ", line)
        for target in re.findall(r'(?<!!)\[[^\]\n]+\]\(([^)\s]+)(?: +"[^"]*")?\)', without_code):
            links += 1
            if ":" in target.split("/")[0] or target.startswith("#"):
                continue
            if not (folder / target.split("#")[0]).exists():
                broken.append([target, number])
    return {"headings": headings, "code_blocks": blocks, "links": links, "broken_links": broken}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this repository's docs (so pages other sessions edit cannot race the
    test), plus a page with a broken link and an example to link to."""
    folder = tmp_path_factory.mktemp("pages")
    for page in sorted((ROOT / "docs").glob("*.md")):
        shutil.copy(page, folder / page.name)
    (folder / "examples").mkdir()
    (folder / "examples" / "hello.py").write_text("print('hello')\n")
    (folder / "zz-small.md").write_text(
        "# A small page\n\n"
        "Plait runs workflow graphs. See [the example](examples/hello.py), "
        "[a missing page](missing.md#top), [the site](https://example.com) and "
        "[this section](#a-small-page); `[not a link](nowhere.md)`.\n\n"
        "```python\nprint('[no link](here.md)')\n```\n\n"
        "## Graphs\n\nA graph has executors and edges. Supersteps run the graph.\n"
    )
    return folder


@pytest.fixture(scope="module")
def review(pages: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the demo over ``pages``, from a fresh working directory."""
    cwd = tmp_path_factory.mktemp("cwd")
    result = plait(cwd, "run", TARGET, str(pages), "--allow-imports", "--checkpoint", STORE)
    assert result.returncode == 0, result.stderr
    listed = plait(cwd, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    report = json.loads((cwd / ".plait" / "demo" / "report.json").read_text())
    return {"cwd": cwd, "stdout": result.stdout, "runs": json.loads(listed.stdout), **report}


def test_every_page_is_reviewed_with_its_real_numbers(pages: Path, review: dict[str, Any]) -> None:
    names = sorted(p.name for p in pages.glob("*.md"))
    assert [p["name"] for p in review["pages"]] == names
    for page in review["pages"]:
        expected = structure((pages / page["name"]).read_text(), pages)
        got = {key: page["stats"][key] for key in expected}
        assert got == expected, page["name"]
        assert page["stats"]["words"] > 0 and page["stats"]["sentences"] > 0
        assert len(page["keywords"]) == 5


def test_the_small_page_in_detail(review: dict[str, Any]) -> None:
    (small,) = [p for p in review["pages"] if p["name"] == "zz-small.md"]
    assert small["title"] == "A small page"
    stats = small["stats"]
    assert (stats["headings"], stats["code_blocks"], stats["links"]) == (2, 1, 4)
    assert stats["external_links"] == 1
    assert stats["broken_links"] == [["missing.md#top", 3]]
    assert stats["code_languages"] == ["python"]
    assert stats["sentences"] == 4
    # the summariser is extractive: its summary is sentences of the page, in page order
    prose = [
        "Plait runs workflow graphs.",
        "See the example, a missing page, the site and this section; not a link.",
        "A graph has executors and edges.",
        "Supersteps run the graph.",
    ]
    chosen = [s for s in prose if s in small["summary"]]
    assert " ".join(chosen) == small["summary"]
    assert len(chosen) == min(small["history"][-1]["budget"], 3)  # one has 4 words


def test_the_quality_gate_loops_and_its_rounds_follow_the_rule(review: dict[str, Any]) -> None:
    revised = [p for p in review["pages"] if len(p["history"]) > 1]
    assert revised, "no summary went round the loop"
    for page in review["pages"]:
        history = page["history"]
        assert [h["round"] for h in history] == list(range(1, len(history) + 1))
        assert [h["budget"] for h in history] == [2 + 2 * i for i in range(len(history))]
        assert all(len(h["covered"]) < 4 for h in history[:-1]), page["name"]
        assert page["passed"] == (len(history[-1]["covered"]) >= 4)
        assert page["passed"] or len(history) == 3
        mentioned = page["summary"].lower()
        for keyword in history[-1]["covered"]:  # as itself or a plural (entry: entries)
            plural = keyword[:-1] + "ies" if keyword.endswith("y") else keyword + "s"
            assert keyword.rstrip("s") in mentioned or plural in mentioned, keyword
        if len(history) > 1:  # a later round focuses on what the one before missed
            assert page["focus"] == history[-2]["missed"]


def test_the_report_is_written_and_the_run_is_checkpointed(review: dict[str, Any]) -> None:
    cwd = review["cwd"]
    report = (cwd / ".plait" / "demo" / "report.md").read_text()
    assert review["stdout"].strip().endswith("report: .plait/demo/report.md")
    assert f"reviewed {len(review['pages'])} pages" in review["stdout"]
    assert report.startswith(f"# Docs review: {len(review['pages'])} pages")
    assert "- `zz-small.md` line 3: `missing.md#top`" in report
    for page in review["pages"]:
        assert f"| {page['name']} | {page['stats']['words']} |" in report
        assert f"### {page['name']}: " in report
    assert (cwd / ".plait" / "runs.db").is_file()
    (run,) = review["runs"]
    assert (run["workflow"], run["status"], run["error"]) == ("docs-review", "idle", None)
    # scan, pages, profile, summarise, gate, again, [summarise, gate, again] ..., gather, report
    assert run["superstep"] >= 8


def test_the_readme_and_the_demo_page_show_the_workflow_that_runs() -> None:
    from ruamel.yaml import YAML

    readme = (ROOT / "README.md").read_text()
    assert "plait run docs/examples/demo/docs_review.yaml --allow-imports\n" in readme
    page = (ROOT / "docs" / "demo.md").read_text()
    (shown,) = re.findall(r"```text\n(name: docs-review\n.*?)```", page, re.S)
    yaml = YAML(typ="safe", pure=True)
    assert yaml.load(shown) == yaml.load(WORKFLOW.read_text())


def test_the_workflow_file_validates_and_draws_from_any_directory(tmp_path: Path) -> None:
    checked = plait(tmp_path, "validate", TARGET, "--allow-imports")
    assert checked.returncode == 0, checked.stdout
    # it needs imports and nothing else: --allow-imports is the whole grant the README gives
    assert checked.stdout.splitlines()[:2] == [
        f"{TARGET}: ok",
        "  needs imports; to run it, grant: --allow-imports",
    ]
    drawn = plait(tmp_path, "graph", TARGET, "--allow-imports")
    assert drawn.returncode == 0, drawn.stderr
    assert '["gather"]' in drawn.stdout and "-->|" in drawn.stdout
    refused = plait(tmp_path, "validate", TARGET)  # a file imports code only when allowed
    assert refused.returncode == 1 and "grant it with --allow-imports" in refused.stdout


def test_an_empty_folder_fails_the_run_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = plait(tmp_path, "run", TARGET, str(tmp_path / "empty"), "--allow-imports")
    assert result.returncode == 1
    assert "no *.md pages to review in" in result.stderr
    assert "scan" in result.stderr


def test_kill_and_resume_finishes_with_the_same_report(pages: Path, tmp_path: Path) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    result = subprocess.run(
        [sys.executable, str(DEMO / "kill_and_resume.py"), str(pages)],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "killed pid" in out and "(SIGKILL) after superstep 7" in out
    assert re.search(r"docs-review +running +7 ", out)  # what the killed run left behind
    # the resumed process goes on from the last checkpoint: superstep 8 onwards, and the
    # foreach's gather, which held the pages done before the kill, completes
    resumed = out[out.index("$ plait resume") :]
    found = re.findall(r"^  superstep (\d+): (.*)$", resumed, re.M)
    supersteps = [n for n, _ in found]
    assert supersteps[0] == "8" and supersteps == [str(n) for n in range(8, len(supersteps) + 8)]
    assert "pages/gather" in found[-2][1] and found[-1][1] == "report"
    assert "identical to an uninterrupted run" in out
    listed = plait(tmp_path, "runs", "--json")
    runs = json.loads(listed.stdout)
    assert len(runs) == 2 and {r["status"] for r in runs} == {"idle"}
    (killed,) = [r for r in runs if r["run_id"] in result.stdout]
    assert killed["superstep"] == runs[0]["superstep"]  # resumed to the end


def test_a_summary_does_not_depend_on_the_order_a_set_iterates_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two sentences whose terms weigh the same (0.1, 0.2, 0.3) tie, and the earlier one
    # wins. Summed in a set's order, 0.1 + 0.2 + 0.3 is 0.6 or 0.6000000000000001 by the
    # order the set iterates in, which a process's hash seed decides: a killed run and
    # the process that resumed it could pick different sentences for the same page.
    monkeypatch.syspath_prepend(str(DEMO))
    import doctext

    for n in range(200):
        first = f"Ka{n}a kb{n}b kc{n}c stand here."
        second = f"Kd{n}d ke{n}e kf{n}f stand here."
        weights = dict(zip((f"k{x}{n}{x}" for x in "abcdef"), [0.1, 0.2, 0.3] * 2))
        assert doctext.terms(first)[:3] == [f"ka{n}a", f"kb{n}b", f"kc{n}c"]
        assert doctext.summarise([first, second], weights, 1) == [first], n


# -- PLAIT_DEMO_MODEL: the summaries from an llm model (a fake one, registered with llm) --


@pytest.fixture
def demo_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The demo's module of steps, importable as ``plait run --allow-imports`` makes it
    (the workflow file's folder on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(DEMO))
    import docs_review

    return docs_review


@pytest.fixture
def terse_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An llm model that answers a two-sentence request with nothing useful and a longer
    one by naming the terms it was asked to mention (streamed word by word)."""
    llm = pytest.importorskip("llm")

    class Terse(llm.Model):  # type: ignore[misc,name-defined]
        model_id = "demo-terse"
        can_stream = True

        def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
            text = prompt.prompt
            if "at most 2 sentences" in text:
                yield "A page."
                return
            terms = re.search(r"Mention these terms: (.*)\.", text)
            assert terms is not None
            yield "This page covers "
            yield terms.group(1) + "."

    class Plugin:
        @llm.hookimpl  # type: ignore[misc]
        def register_models(self, register: Any) -> None:
            register(Terse())

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Plugin()
    llm.plugins.pm.register(plugin, name="demo-terse-model")
    try:
        yield "demo-terse"
    finally:
        llm.plugins.pm.unregister(plugin)


@pytest.mark.anyio
async def test_plait_demo_model_writes_the_summaries(
    demo_module: Any,
    terse_model: str,
    pages: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from plait import CustomEvent

    monkeypatch.setenv("PLAIT_DEMO_MODEL", terse_model)
    monkeypatch.chdir(tmp_path)
    small = tmp_path / "pages"
    small.mkdir()
    shutil.copy(pages / "zz-small.md", small / "zz-small.md")
    result = await demo_module.workflow().run(str(small), events="all")
    assert result.error is None
    report = json.loads((tmp_path / ".plait" / "demo" / "report.json").read_text())
    assert report["model"] == terse_model
    (page,) = report["pages"]
    # round 1 (two sentences) misses every keyword; round 2 names the ones it missed
    assert [len(h["covered"]) for h in page["history"]] == [0, 5]
    assert page["summary"] == f"This page covers {', '.join(page['keywords'])}."
    custom = [e for e in result.events if isinstance(e, CustomEvent)]
    tokens = [e.data["token"] for e in custom if "token" in e.data]
    assert {e.executor_id for e in custom if "token" in e.data} == {"summarise"}
    assert "This page covers " in tokens and "A page." in tokens
    assert "Summaries by a model (demo-terse)" in (tmp_path / ".plait/demo/report.md").read_text()


def test_an_unknown_demo_model_is_refused_when_the_workflow_is_built(
    demo_module: Any, terse_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait import PlaitError

    monkeypatch.setenv("PLAIT_DEMO_MODEL", "demo-tersee")
    with pytest.raises(PlaitError, match="demo-tersee"):
        demo_module.workflow()


def test_the_demo_page_shows_what_the_demo_prints_today(tmp_path: Path) -> None:
    """docs/demo.md's sample output is this repository's docs as the demo reviews them now:
    the pages, broken links and revised summaries it reports, and the supersteps it takes.
    Timings, run ids and which supersteps the progress lines catch vary; the rest may not
    drift (update the page's console block when this fails)."""
    result = plait(tmp_path, "run", TARGET, str(ROOT / "docs"), "--allow-imports")
    assert result.returncode == 0, result.stderr
    page = (ROOT / "docs" / "demo.md").read_text()
    (shown,) = re.findall(r"```console\n\$ plait run docs/examples/demo/.*?\n(.*?)```", page, re.S)
    reviewed = re.compile(r"^reviewed (\d+) pages of \S+: (.*)$", re.M)
    summary = re.compile(
        r"^run \w+: (idle, \d+ superstep\(s\), \d+ output\(s\)) in [\d.]+ m?s$", re.M
    )
    actual = (reviewed.findall(result.stdout), summary.findall(result.stderr))
    documented = (reviewed.findall(shown), summary.findall(shown))
    assert actual[0] and actual[1], (result.stdout, result.stderr)
    assert documented == actual, f"docs/demo.md shows {documented}; the demo prints {actual}"


def test_the_demo_page_shows_what_kill_and_resume_prints_today(tmp_path: Path) -> None:
    """docs/demo.md's kill-and-resume sample, as it runs today over this repository's docs:
    what the resumed run reports and the supersteps it goes through after the kill."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PLAIT_"))}
    result = subprocess.run(
        [sys.executable, str(DEMO / "kill_and_resume.py"), str(ROOT / "docs")],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    page = (ROOT / "docs" / "demo.md").read_text()
    (shown,) = re.findall(
        r"```console\n\$ python docs/examples/demo/kill_and_resume.py\n(.*?)```", page, re.S
    )
    lines = re.compile(
        r"^(?:reviewed \d+ pages of \S+: .*|  superstep \d+: .*|  run \w+: idle, \d+ supersteps)$",
        re.M,
    )

    def deterministic(text: str) -> list[str]:
        return [
            re.sub(r"^  run \w+", "  run", re.sub(r"pages of \S+:", "pages of DOCS:", m.group(0)))
            for m in lines.finditer(text)
        ]

    documented, actual = deterministic(shown), deterministic(result.stdout)
    steps = [line for line in actual if line.startswith("  superstep")]
    assert steps, result.stdout
    # the kill lands after superstep 7 is checkpointed; on a busy machine the run may have
    # checkpointed one more first, and then resumes a superstep later: a suffix of the page's
    doc_steps = [line for line in documented if line.startswith("  superstep")]
    assert doc_steps[len(doc_steps) - len(steps) :] == steps, result.stdout
    assert [x for x in documented if x not in doc_steps] == [x for x in actual if x not in steps], (
        result.stdout
    )
