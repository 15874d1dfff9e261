"""The Plait demo: a review of a folder of Markdown documentation (by default this
repository's own ``docs/``), written to ``.plait/demo/report.md``.

::

    scan ──(one message per page)──> profile ──> summarise ──> gate ──(passed)──> collect ──> report
                                                    ^            │
                                                    └─(missed keywords, round < 3)─┘

- ``scan`` reads every ``*.md`` page of the folder, weighs each term across the corpus
  (inverse document frequency, kept in shared state) and sends one message per page: the
  fan-out.
- ``profile`` (up to 16 pages at once) computes each page's numbers: words, sentences,
  Flesch reading ease and grade, headings, code blocks, links, and which relative links
  point at no file; its top keywords by TF-IDF.
- ``summarise`` writes a summary within a sentence budget: an extractive summariser
  offline, or the ``plait-llm`` ``agent`` kind on the model ``PLAIT_DEMO_MODEL`` names.
- ``gate`` checks the summary mentions the page's keywords. A page that misses too many
  goes back to ``summarise`` with a larger budget and the missed keywords to focus on:
  a loop edge, at most three rounds.
- ``collect`` waits until every page has passed the gate or run out of rounds (the
  fan-in), and ``report`` writes ``report.md`` and ``report.json``.

Run it from the repository root (durably: ``plait run`` checkpoints into ``.plait/runs.db``)::

    plait run docs/examples/demo/docs_review.py:workflow

A MESSAGE names another folder of Markdown to review. ``PLAIT_DEMO_SLOW=0.5`` makes each
page's ``profile``, ``summarise`` and ``gate`` take half a second more (to watch it, or to
kill it midway and resume it: ``kill_and_resume.py``).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import anyio
import doctext
from plait import Never, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from review_report import write_report

__all__ = [
    "KEYWORDS",
    "MAX_ROUNDS",
    "collect",
    "gate",
    "profile",
    "read_pages",
    "report",
    "scan",
    "summarise",
    "summary_agent",
    "workflow",
]

#: Keywords a page is judged by, how many a summary must mention, and rounds per page.
KEYWORDS = 5
REQUIRED = 4
MAX_ROUNDS = 3
#: Summary budget (sentences) in the first round, and how much each round adds.
FIRST_BUDGET = 2
BUDGET_STEP = 2
#: The rule, as the report states it.
RULE = (
    f"a summary must mention {REQUIRED} of its page's {KEYWORDS} keywords (TF-IDF across "
    f"the folder) or it is rewritten with {BUDGET_STEP} more sentences, focusing on the "
    f"keywords it missed, at most {MAX_ROUNDS} rounds"
)

#: The folder reviewed when the run's message is empty: this repository's docs.
DEFAULT_FOLDER = Path(__file__).resolve().parents[2]
OUTPUT_FOLDER = Path(".plait") / "demo"

Page = dict[str, Any]


async def _slow() -> None:
    """Sleep ``PLAIT_DEMO_SLOW`` seconds (default none): time to watch, or to kill it."""
    delay = float(os.environ.get("PLAIT_DEMO_SLOW") or 0)
    if delay > 0:
        await anyio.sleep(delay)


def read_pages(folder: str) -> tuple[Path, dict[str, str]]:
    """The folder to review (``DEFAULT_FOLDER`` for ``""``) and its pages' text by name."""
    root = (Path(folder).expanduser() if folder.strip() else DEFAULT_FOLDER).resolve()
    pages = sorted(root.glob("*.md"))
    if not pages:
        raise FileNotFoundError(f"no *.md pages to review in {root}")
    return root, {page.name: page.read_text(encoding="utf-8") for page in pages}


@executor(id="scan")
async def scan(folder: str, ctx: WorkflowContext[Page]) -> None:
    """Read the pages, weigh terms across them, and send one message per page."""
    root, texts = await anyio.to_thread.run_sync(read_pages, folder)
    parsed = {name: doctext.parse_markdown(text) for name, text in texts.items()}
    frequencies = doctext.document_frequencies(
        doctext.terms(" ".join(p["paragraphs"])) for p in parsed.values()
    )
    await ctx.set_shared_state("idf", doctext.idf_weights(frequencies, len(texts)))
    await ctx.set_shared_state("pages", sorted(texts))
    await ctx.set_shared_state("folder", str(root))
    for name, text in texts.items():
        await ctx.send_message({"name": name, "folder": str(root), "text": text})


@executor(id="profile", max_concurrency=16)
async def profile(page: Page, ctx: WorkflowContext[Page]) -> None:
    """One page's numbers and keywords."""
    await _slow()
    # a relative link is checked against the file system: off the event loop
    parsed = await anyio.to_thread.run_sync(
        doctext.parse_markdown, page["text"], Path(page["folder"])
    )
    prose = doctext.sentences(parsed["paragraphs"])
    weights = doctext.tfidf(doctext.terms(" ".join(prose)), await ctx.get_shared_state("idf"))
    links = parsed["links"]
    stats = {
        "words": sum(len(doctext.words(s)) for s in prose),
        "sentences": len(prose),
        **doctext.flesch(prose),
        "headings": len(parsed["headings"]),
        "code_blocks": len(parsed["code_blocks"]),
        "code_languages": sorted({lang for lang in parsed["code_blocks"] if lang}),
        "links": len(links),
        "external_links": sum(1 for link in links if link["kind"] == "external"),
        "broken_links": [[link["target"], link["line"]] for link in links if link["broken"]],
    }
    top = doctext.keywords(weights, 40)
    await ctx.send_message(
        {
            "name": page["name"],
            "title": parsed["headings"][0][1] if parsed["headings"] else page["name"],
            "stats": stats,
            "keywords": top[:KEYWORDS],
            "weights": {t: round(weights[t], 6) for t in top},
            "sentences": prose,
            "round": 0,
            "history": [],
        }
    )


@functools.cache
def summary_agent(model_id: str) -> Any:
    """The ``agent`` executor (plugin ``plait-llm``) for ``model_id``, built by its kind, so
    an unknown model or a missing plugin is found when the workflow is built."""
    from plait.kinds import KindContext
    from plait.plugins import get_plugin_manager

    manager = get_plugin_manager()
    kinds = manager.registry("executor_kind")
    if "agent" not in kinds:
        raise RuntimeError(
            f"PLAIT_DEMO_MODEL={model_id} needs the agent kind: install plait-llm "
            "(bash .ci/uv sync --all-packages, or pip install 'plait[llm]') and the llm "
            "plugin that serves the model"
        )
    kind = kinds.get("agent")
    config = {
        "model": model_id,
        "system": "You summarise technical documentation pages. Answer with the summary "
        "only: plain sentences, no list, no heading.",
    }
    context = KindContext(node_id="summarise/agent", manager=manager)
    problems = kind.check(config, context)
    if problems:
        raise problems[0]
    return kind.create(config, context)


def _prompt(page: Page) -> str:
    focus = page["focus"] or page["keywords"]
    text = " ".join(page["sentences"])[:8000]
    return (
        f"Summarise the page {page['title']!r} in at most {page['budget']} sentences. "
        f"Mention these terms: {', '.join(focus)}.\n\n{text}"
    )


@executor(id="summarise", max_concurrency=16, max_visits=MAX_ROUNDS)
async def summarise(page: Page, ctx: WorkflowContext[Page]) -> None:
    """Write the page's next summary: round ``n`` has a budget of ``2n`` sentences and
    focuses on the keywords the previous round missed. Offline the summary is extractive;
    with ``PLAIT_DEMO_MODEL`` a model writes it."""
    await _slow()
    round_ = page["round"] + 1
    budget = FIRST_BUDGET + BUDGET_STEP * (round_ - 1)
    focus = page["history"][-1]["missed"] if page["history"] else []
    page = {**page, "round": round_, "budget": budget, "focus": focus}
    model_id = os.environ.get("PLAIT_DEMO_MODEL")
    if model_id:
        summary = str(await summary_agent(model_id).ask(_prompt(page), ctx)).strip()
    else:
        chosen = doctext.summarise(page["sentences"], page["weights"], budget, focus)
        summary = " ".join(chosen)
    await ctx.send_message({**page, "summary": summary})


@executor(id="gate", max_concurrency=16, max_visits=MAX_ROUNDS)
async def gate(page: Page, ctx: WorkflowContext[Page]) -> None:
    """Which of the page's keywords its summary mentions; ``passed`` when at least four
    do. The edges decide what happens next: back to ``summarise`` while
    ``!passed && round < 3`` (the loop), else on to ``collect``."""
    await _slow()
    mentioned = set(doctext.terms(page["summary"]))
    covered = [k for k in page["keywords"] if k in mentioned]
    missed = [k for k in page["keywords"] if k not in mentioned]
    attempt = {"round": page["round"], "budget": page["budget"], "covered": covered}
    attempt["missed"] = missed
    await ctx.send_message(
        {
            **page,
            "passed": len(covered) >= min(REQUIRED, len(page["keywords"])),
            "history": [*page["history"], attempt],
        }
    )


@executor(id="collect")
async def collect(page: Page, ctx: WorkflowContext[list[Page]]) -> None:
    """The fan-in: keep each finished page (in this executor's checkpointed state) and send
    them all on once every page the scan found is in."""
    done = ctx.state.setdefault("done", {})
    done[page["name"]] = {k: v for k, v in page.items() if k not in ("sentences", "weights")}
    expected = await ctx.get_shared_state("pages")
    if len(done) == len(expected):
        await ctx.send_message([done[name] for name in expected])


@executor(id="report")
async def report(pages: list[Page], ctx: WorkflowContext[Never, str]) -> None:
    """Write ``.plait/demo/report.md`` and ``report.json``; yield a line saying where."""
    folder = await ctx.get_shared_state("folder")
    model = os.environ.get("PLAIT_DEMO_MODEL") or None
    path = await anyio.to_thread.run_sync(
        functools.partial(write_report, pages, OUTPUT_FOLDER, folder=folder, model=model, rule=RULE)
    )
    revised = sum(1 for p in pages if len(p["history"]) > 1)
    broken = sum(len(p["stats"]["broken_links"]) for p in pages)
    await ctx.yield_output(
        f"reviewed {len(pages)} pages of {folder}: {broken} broken link(s), "
        f"{revised} summary(ies) revised by the quality gate; report: {path}"
    )


def workflow() -> Workflow:
    """The docs-review workflow (a function, so ``PLAIT_DEMO_MODEL`` is read, and the model
    checked, when the workflow is built)."""
    model_id = os.environ.get("PLAIT_DEMO_MODEL")
    if model_id:
        summary_agent(model_id)
    return (
        WorkflowBuilder("docs-review")
        .set_start(scan)
        .add_edge(scan, profile)
        .add_edge(profile, summarise)
        .add_edge(summarise, gate)
        .add_edge(gate, summarise, condition=f"!passed && round < {MAX_ROUNDS}")
        .add_edge(gate, collect, condition=f"passed || round >= {MAX_ROUNDS}")
        .add_edge(collect, report)
        .build()
    )


if __name__ == "__main__":  # python docs_review.py [FOLDER]: the same run, without the CLI
    import sys

    result = workflow().run_sync(sys.argv[1] if len(sys.argv) > 1 else "")
    print(json.dumps(result.outputs, indent=2) if result.error is None else result.error)
