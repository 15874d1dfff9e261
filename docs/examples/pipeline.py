"""A review pipeline: fan-out, fan-in with ``keyed`` merge, a switch and a bounded loop.

::

    intake ─┬─> tone ──────┐
            ├─> length ────┼─(fan-in, keyed)─> report ─(switch)─┬─> soften ─> refine ⟲
            └─> keywords ──┘                                   └──────────> refine ⟲
                                                                 refine ─(done)─> publish

The three analysers run in the same superstep; ``report`` runs once, after all three, with
their results keyed by executor id; the switch sends gloomy texts through ``soften`` first;
``refine`` loops on itself (a conditional edge) until its draft is good enough, bounded by
``max_visits``; ``publish`` yields the workflow's output.

Run it with ``python docs/examples/pipeline.py``: it streams every event of two runs, then
prints their outputs.
"""

from __future__ import annotations

from typing import Any

import anyio
import attrs
from plait import (
    CustomEvent,
    Never,
    OutputEvent,
    RunFinished,
    RunStarted,
    SuperstepStarted,
    WorkflowContext,
    WorkflowEvent,
    executor,
)
from plait_builders import Case, WorkflowBuilder

GLOOMY = {"bad", "sad", "broken", "late"}


@attrs.frozen
class Draft:
    """A text being polished, and how many rounds it has had."""

    text: str
    rounds: int = 0
    notes: tuple[str, ...] = ()


# -- analysers: one source, three targets, same superstep ------------------------------------


@executor(id="intake")
async def intake(text: str, ctx: WorkflowContext[str]) -> None:
    """Normalise whitespace and hand the text to every analyser."""
    await ctx.send_message(" ".join(text.split()))


@executor(id="tone")
async def tone(text: str, ctx: WorkflowContext[str]) -> None:
    """Call the text gloomy when it uses a gloomy word."""
    words = {w.strip(".,!").lower() for w in text.split()}
    await ctx.send_message("gloomy" if words & GLOOMY else "bright")


@executor(id="length")
async def length(text: str, ctx: WorkflowContext[str]) -> None:
    """Count the words."""
    await ctx.send_message(f"{len(text.split())} words")


@executor(id="keywords")
async def keywords(text: str, ctx: WorkflowContext[str]) -> None:
    """Pick the three longest words, and keep the text itself for the report."""
    await ctx.add_event({"analysed": text})
    longest = sorted({w.strip(".,!") for w in text.split()}, key=lambda w: (-len(w), w))[:3]
    await ctx.set_shared_state("text", text)
    await ctx.send_message(", ".join(longest))


# -- fan-in: one message with every analyser's result ----------------------------------------


@executor(id="report")
async def report(merged: dict[str, Any], ctx: WorkflowContext[Draft]) -> None:
    """Turn the keyed results into a first draft."""
    outputs = merged["outputs"]
    notes = tuple(f"{source}: {outputs[source]}" for source in merged["order"])
    text = await ctx.get_shared_state("text")
    await ctx.send_message(Draft(text, notes=notes))


def is_gloomy(draft: Draft) -> bool:
    """The switch's first case."""
    return "tone: gloomy" in draft.notes


@executor(id="soften")
async def soften(draft: Draft, ctx: WorkflowContext[Draft]) -> None:
    """Replace gloomy words before refining."""
    words = ["fine" if w.strip(".,!").lower() in GLOOMY else w for w in draft.text.split()]
    await ctx.send_message(attrs.evolve(draft, text=" ".join(words)))


# -- a bounded loop: refine sends to itself until the draft is done --------------------------


@executor(id="refine", max_visits=5)
async def refine(draft: Draft, ctx: WorkflowContext[Draft]) -> None:
    """One round of polishing: capitalise, then punctuate."""
    text = draft.text
    if draft.rounds == 0:
        text = text[:1].upper() + text[1:]
    elif not text.endswith("."):
        text += "."
    await ctx.send_message(attrs.evolve(draft, text=text, rounds=draft.rounds + 1))


def needs_work(draft: Draft) -> bool:
    """Loop while the draft has had fewer than three rounds."""
    return draft.rounds < 3


def is_done(draft: Draft) -> bool:
    """Leave the loop."""
    return not needs_work(draft)


@executor(id="publish")
async def publish(draft: Draft, ctx: WorkflowContext[Never, str]) -> None:
    """Yield the finished text with its notes."""
    await ctx.yield_output(f"{draft.text} [{'; '.join(draft.notes)}; rounds: {draft.rounds}]")


workflow = (
    WorkflowBuilder("review", max_supersteps=20)
    .set_start(intake)
    .add_fan_out(intake, [tone, length, keywords])
    .add_fan_in([tone, length, keywords], report, merge="keyed")
    .add_switch(report, [Case(is_gloomy, soften)], default=refine)
    .add_edge(soften, refine)
    .add_edge(refine, refine, condition=needs_work)
    .add_edge(refine, publish, condition=is_done)
    .build()
)


def describe(event: WorkflowEvent) -> str | None:
    """One line per interesting event (``None`` for the ones we skip)."""
    if isinstance(event, RunStarted):
        return f"run started ({event.workflow})"
    if isinstance(event, SuperstepStarted):
        return f"superstep {event.superstep}: {', '.join(event.executor_ids)}"
    if isinstance(event, CustomEvent):
        return f"  event from {event.executor_id}: {event.data}"
    if isinstance(event, OutputEvent):
        return f"  output from {event.executor_id}: {event.data}"
    if isinstance(event, RunFinished):
        return f"run finished: {event.status} after {event.supersteps} supersteps"
    return None  # executor invoked/completed, superstep finished: too chatty here


async def main() -> None:
    """Stream two runs, then print their outputs."""
    outputs: list[str] = []
    for text in ["the   build was late and broken", "plugins make plait small"]:
        print(f"== {text!r}")
        async with workflow.stream(text) as events:
            async for event in events:
                line = describe(event)
                if line is not None:
                    print(line)
                if isinstance(event, OutputEvent):
                    outputs.append(event.data)
    print("== outputs")
    for output in outputs:
        print(output)


if __name__ == "__main__":
    anyio.run(main)
