"""Module-level executors and functions for the workflows-as-data tests (imported as a
plain module, like ``durable_helpers``, in this process and in subprocesses)."""

from __future__ import annotations

from typing import Any

from plait import Never, RetryPolicy, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@executor(id="score")
async def score(text: str, ctx: WorkflowContext[dict[str, Any]]) -> None:
    await ctx.send_message({"text": text, "score": len(text), "tags": text.split()})


@executor(id="fan")
async def fan(item: dict[str, Any], ctx: WorkflowContext[dict[str, Any]]) -> None:
    await ctx.send_message(item)


@executor(id="short")
async def short(item: dict[str, Any], ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"short:{item['text']}")


@executor(id="long")
async def long(item: dict[str, Any], ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"long:{item['text']}")


@executor(id="tagged")
async def tagged(item: dict[str, Any], ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"tagged:{','.join(item['tags'])}")


def is_loud(item: dict[str, Any]) -> bool:
    """A module-level predicate: portable by its import path."""
    return str(item["text"]).isupper()


@executor(id="loud")
async def loud(item: dict[str, Any], ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"loud:{item['text']}")


def build() -> Workflow:
    """Expressions, an import-path predicate, a selection and a retry policy: all data."""
    return (
        WorkflowBuilder("as-data", retry=RetryPolicy(max_attempts=1, delay=0))
        .add_edge(score, fan)
        .add_switch(fan, [("score <= 5", short), ("score > 5", long)])
        .add_edge(score, tagged, condition="size(tags) > 1")
        .add_edge(score, loud, condition=is_loud)
        .add_executor(loud, timeout=5)
        .set_start(score)
        .build()
    )


INPUTS = ["hi", "hello world", "SHOUTING NOW"]


def outputs(workflow: Workflow) -> list[list[str]]:
    """Sorted outputs of ``workflow`` for each of :data:`INPUTS`."""
    return [sorted(workflow.run_sync(text).outputs) for text in INPUTS]
