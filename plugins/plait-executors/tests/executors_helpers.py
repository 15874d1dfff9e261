"""Helpers for plait-executors' tests: build a node through its kind, run it in a real
workflow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import Executor, Never, Workflow, WorkflowContext, executor
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder


def build(kind: Any, config: Mapping[str, Any], node_id: str = "node", **ctx: Any) -> Any:
    """``kind.check`` (asserting it finds nothing) then ``kind.create``."""
    context = BuildContext(node_id=node_id, **ctx)
    errors = kind.check(config, context)
    assert errors == [], [str(e) for e in errors]
    made = kind.create(config, context)
    assert isinstance(made, Executor) and made.id == node_id
    return made


def paths(errors: list[Any]) -> list[str]:
    """The JSON paths of config errors, in order."""
    return [e.path for e in errors]


def chain(node: Executor) -> Workflow:
    """A workflow ``node -> collect`` where ``collect`` yields whatever it receives."""

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    return WorkflowBuilder("kinds").add_edge(node, collect).set_start(node).build()
