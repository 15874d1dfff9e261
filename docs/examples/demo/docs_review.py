"""The Plait demo's steps: a review of a folder of Markdown documentation (by default this
repository's own ``docs/``), written to ``.plait/demo/report.md``.

The workflow is ``docs_review.yaml``, beside this module: a YAML steps file whose steps
call the functions here through the ``python`` executor kind::

    scan ──> pages: foreach page (16 at once) ───────────────────────────────> report
               profile ──> summarise ──> gate ──> again ─(passed or round 3)─┘
                               ^                    │
                               └─(missed keywords)──┘

- ``scan`` (:func:`scan_step`) reads every ``*.md`` page of the folder and weighs each
  term across the corpus (inverse document frequency).
- ``pages`` is a ``foreach`` over the page names: one message per page, the fan-out. Its
  output is the list of every page's last output, in page order: the fan-in.
- ``profile`` computes a page's numbers: words, sentences, Flesch reading ease and grade,
  headings, code blocks, links, which relative links point at no file, and its top
  keywords by TF-IDF.
- ``summarise`` (:class:`Summarise`) writes a summary within a sentence budget: an
  extractive summariser offline, or the ``plait-llm`` ``agent`` kind on the model
  ``PLAIT_DEMO_MODEL`` names.
- ``gate`` checks the summary mentions the page's keywords; ``again`` sends a page that
  misses too many back to ``summarise``, with a larger budget and the missed keywords to
  focus on: at most three rounds.
- ``report`` writes ``report.md`` and ``report.json``.

Run it from the repository root (durably: ``plait run`` checkpoints into ``.plait/runs.db``)::

    plait run docs/examples/demo/docs_review.yaml --allow-imports

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
from plait import Executor, Workflow, WorkflowContext, handler
from review_report import write_report

__all__ = [
    "KEYWORDS",
    "MAX_ROUNDS",
    "Summarise",
    "gate",
    "profile",
    "read_pages",
    "report",
    "scan",
    "scan_step",
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


def scan(folder: str) -> dict[str, Any]:
    """Read the pages and weigh each term across them (inverse document frequency).

    The ``scan`` step: its ``pages`` are the items the ``pages`` foreach fans out over.
    """
    root, texts = read_pages(folder)
    parsed = {name: doctext.parse_markdown(text) for name, text in texts.items()}
    frequencies = doctext.document_frequencies(
        doctext.terms(" ".join(p["paragraphs"])) for p in parsed.values()
    )
    idf = doctext.idf_weights(frequencies, len(texts))
    return {"folder": str(root), "pages": sorted(texts), "idf": idf}


async def scan_step(folder: str) -> dict[str, Any]:
    """:func:`scan` off the event loop (it reads every page)."""
    return await anyio.to_thread.run_sync(scan, folder)


async def profile(job: dict[str, Any]) -> Page:
    """One page's numbers and keywords: ``job`` is ``{name, folder, idf}``.

    What the summary rounds never change (name, title, numbers, keywords, term weights,
    sentences) is one dict, ``page``, beside what they add (``round``, ``history``, then
    ``budget``, ``focus``, ``summary``, ``passed``): a checkpoint keeps that dict once, as
    one blob, however many rounds' messages carry it."""
    await _slow()
    folder = Path(job["folder"])
    text = await anyio.to_thread.run_sync((folder / job["name"]).read_text, "utf-8")
    # a relative link is checked against the file system: off the event loop
    parsed = await anyio.to_thread.run_sync(doctext.parse_markdown, text, folder)
    prose = doctext.sentences(parsed["paragraphs"])
    weights = doctext.tfidf(doctext.terms(" ".join(prose)), job["idf"])
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
    facts = {
        "name": job["name"],
        "title": parsed["headings"][0][1] if parsed["headings"] else job["name"],
        "stats": stats,
        "keywords": top[:KEYWORDS],
        "weights": {t: round(weights[t], 6) for t in top},
        "sentences": prose,
    }
    return {"page": facts, "round": 0, "history": []}


@functools.cache
def summary_agent(model_id: str) -> Any:
    """The ``agent`` executor (plugin ``plait-llm``) for ``model_id``, built by its kind, so
    an unknown model or a missing plugin is found when the workflow is built."""
    from plait import get_plugin_manager
    from plait.spi import BuildContext

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
    context = BuildContext(node_id="summarise/agent", manager=manager)
    problems = kind.check(config, context)
    if problems:
        raise problems[0]
    return kind.create(config, context)


def _prompt(page: Page) -> str:
    facts = page["page"]
    focus = page["focus"] or facts["keywords"]
    text = " ".join(facts["sentences"])[:8000]
    return (
        f"Summarise the page {facts['title']!r} in at most {page['budget']} sentences. "
        f"Mention these terms: {', '.join(focus)}.\n\n{text}"
    )


class Summarise(Executor):
    """The ``summarise`` step: the page's next summary. Round ``n`` has a budget of ``2n``
    sentences and focuses on the keywords the previous round missed. Offline the summary is
    extractive; with ``PLAIT_DEMO_MODEL`` a model writes it (an executor, not a function,
    so the model is looked up when the workflow is built: an unknown one fails at once)."""

    def __init__(self, id: str = "summarise") -> None:
        super().__init__(id)
        self.model_id = os.environ.get("PLAIT_DEMO_MODEL") or None
        self.agent = summary_agent(self.model_id) if self.model_id else None

    @handler
    async def summarise(self, page: Page, ctx: WorkflowContext[Page]) -> None:
        await _slow()
        round_ = page["round"] + 1
        budget = FIRST_BUDGET + BUDGET_STEP * (round_ - 1)
        focus = page["history"][-1]["missed"] if page["history"] else []
        page = {**page, "round": round_, "budget": budget, "focus": focus}
        if self.agent is not None:
            summary = str(await self.agent.ask(_prompt(page), ctx)).strip()
        else:
            facts = page["page"]
            chosen = doctext.summarise(facts["sentences"], facts["weights"], budget, focus)
            summary = " ".join(chosen)
        await ctx.send_message({**page, "summary": summary})


async def gate(page: Page) -> Page:
    """The quality gate: which of the page's keywords its summary mentions; ``passed``
    when at least four do. The workflow's ``again`` condition sends a page that did not
    pass back to ``summarise`` while ``round < 3``."""
    await _slow()
    mentioned = set(doctext.terms(page["summary"]))
    keywords = page["page"]["keywords"]
    covered = [k for k in keywords if k in mentioned]
    missed = [k for k in keywords if k not in mentioned]
    attempt = {"round": page["round"], "budget": page["budget"], "covered": covered}
    attempt["missed"] = missed
    return {
        **page,
        "passed": len(covered) >= min(REQUIRED, len(keywords)),
        "history": [*page["history"], attempt],
    }


def _flat(page: Page) -> Page:
    """A page as the report shows it: its facts (without the sentences and the term
    weights) beside what its rounds added, in one dict."""
    facts = {k: v for k, v in page["page"].items() if k not in ("sentences", "weights")}
    return {**facts, **{k: v for k, v in page.items() if k != "page"}}


def _report(folder: str, pages: list[Page]) -> str:
    model = os.environ.get("PLAIT_DEMO_MODEL") or None
    kept = [_flat(p) for p in pages]
    path = write_report(kept, OUTPUT_FOLDER, folder=folder, model=model, rule=RULE)
    revised = sum(1 for p in kept if len(p["history"]) > 1)
    broken = sum(len(p["stats"]["broken_links"]) for p in kept)
    return (
        f"reviewed {len(kept)} pages of {folder}: {broken} broken link(s), "
        f"{revised} summary(ies) revised by the quality gate; report: {path}"
    )


async def report(review: dict[str, Any]) -> str:
    """Write ``.plait/demo/report.md`` and ``report.json`` from ``{folder, pages}`` (the
    ``pages`` foreach's output: every page, in order); give a line saying where."""
    return await anyio.to_thread.run_sync(_report, review["folder"], review["pages"])


#: The workflow file, beside this module.
WORKFLOW_FILE = Path(__file__).resolve().with_name("docs_review.yaml")


def workflow() -> Workflow:
    """The docs-review workflow, loaded from ``docs_review.yaml`` (which names this
    module's functions, so it is loaded with ``allow_imports=True``)."""
    import plait

    return plait.load(WORKFLOW_FILE, allow_imports=True)


if __name__ == "__main__":  # python docs_review.py [FOLDER]: the same run, without the CLI
    import sys

    result = workflow().run_sync(sys.argv[1] if len(sys.argv) > 1 else "")
    print(json.dumps(result.outputs, indent=2) if result.error is None else result.error)
