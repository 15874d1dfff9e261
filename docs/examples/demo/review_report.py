"""The docs-review demo's report: ``report.md`` for people, ``report.json`` for programs.

Nothing in it depends on the clock or the run, so a run that was killed and resumed
writes the same bytes as one that was not.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["render_markdown", "write_report"]

Page = dict[str, Any]


def write_report(
    pages: Sequence[Page], out: Path, *, folder: str, model: str | None = None, rule: str = ""
) -> Path:
    """Write ``out/report.md`` and ``out/report.json``; return the Markdown file's path.

    :param rule: the quality gate's rule, in words, for the report's introduction.
    """
    out.mkdir(parents=True, exist_ok=True)
    data = {"folder": folder, "model": model, "rule": rule, "pages": list(pages)}
    (out / "report.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    path = out / "report.md"
    text = render_markdown(pages, folder=folder, model=model, rule=rule)
    path.write_text(text, encoding="utf-8")
    return path


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _rounds(page: Page) -> str:
    return " → ".join(f"{len(h['covered'])}/{len(page['keywords'])}" for h in page["history"])


def render_markdown(
    pages: Sequence[Page], *, folder: str, model: str | None = None, rule: str = ""
) -> str:
    """The report as Markdown: an overview table, what needs attention, then every page."""
    by = "a model (" + model + ")" if model else "the offline extractive summariser"
    words = sum(p["stats"]["words"] for p in pages)
    broken = [(p["name"], t, line) for p in pages for t, line in p["stats"]["broken_links"]]
    revised = [p for p in pages if len(p["history"]) > 1]
    lines = [
        f"# Docs review: {len(pages)} pages, {words:,} words",
        "",
        f"Folder `{folder}`. Summaries by {by}" + (f"; {rule}." if rule else "."),
        "",
        "| page | words | sentences | reading ease | grade | headings | code blocks "
        "| links | broken | keywords | keywords covered per round |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|---|",
    ]
    for p in pages:
        s = p["stats"]
        lines.append(
            f"| {p['name']} | {s['words']} | {s['sentences']} | {s['reading_ease']} "
            f"| {s['grade']} | {s['headings']} | {s['code_blocks']} | {s['links']} "
            f"| {len(s['broken_links'])} | {', '.join(p['keywords'])} | {_rounds(p)} |"
        )
    lines += ["", "## Needs attention", ""]
    if broken:
        lines.append(f"**Broken relative links** ({len(broken)}):")
        lines.append("")
        lines += [f"- `{name}` line {line}: `{target}`" for name, target, line in broken]
    else:
        lines.append("No broken relative links.")
    hardest = sorted(pages, key=lambda p: (p["stats"]["reading_ease"], p["name"]))[:3]
    lines += ["", "**Hardest to read** (lowest Flesch reading ease):", ""]
    lines += [
        f"- `{p['name']}`: {p['stats']['reading_ease']} (grade {p['stats']['grade']}, "
        f"{p['stats']['words'] / max(p['stats']['sentences'], 1):.1f} words a sentence)"
        for p in hardest
    ]
    no_code = [p["name"] for p in pages if not p["stats"]["code_blocks"]]
    if no_code:
        lines += ["", f"**No code example**: {', '.join(f'`{n}`' for n in no_code)}."]
    failed = [p["name"] for p in pages if not p["passed"]]
    lines += [
        "",
        f"**Summaries revised by the quality gate**: {len(revised)} of {len(pages)}"
        + (
            f"; still missing keywords after the last round: {', '.join(failed)}."
            if failed
            else "."
        ),
        "",
        "## Pages",
    ]
    for p in pages:
        lines += ["", f"### {p['name']}: {_cell(p['title'])}", "", p["summary"], ""]
        lines.append(f"- Keywords: {', '.join(p['keywords'])}.")
        for h in p["history"]:
            missed = f" (missed: {', '.join(h['missed'])})" if h["missed"] else ""
            lines.append(
                f"- Round {h['round']}: {h['budget']} sentence(s), "
                f"{len(h['covered'])}/{len(p['keywords'])} keywords{missed}."
            )
        languages = p["stats"]["code_languages"]
        if languages:
            lines.append(f"- Code: {', '.join(languages)}.")
    return "\n".join(lines) + "\n"
