"""The two executor kinds a flow adds around its agents: ``flow.output`` and ``flow.join``.

- ``flow.output`` is the flow's last node: it yields what reaches it as a workflow output.
  The last step's messages reach it directly, or through a fan-in when the flow ends in a
  parallel block (so the merged value is the output).
- ``flow.join`` passes what reaches it on unchanged. A flow uses one where the graph needs
  a single node and the text has none: before a parallel block that opens the flow, after
  a merge that feeds a parallel block or a condition, after a condition inside a parallel
  branch.

Neither takes a config (``{}``). Built executors carry ``plait_kind`` and ``config``, so a
``WorkflowBuilder`` given them records the same nodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import ConfigError, Executor, SourcePosition, WorkflowContext, handler
from plait.spi import BuildContext

__all__ = ["FlowJoin", "FlowJoinKind", "FlowOutput", "FlowOutputKind"]

_EMPTY_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
}


class FlowOutput(Executor):
    """Yields every message it receives as a workflow output (kind ``flow.output``)."""

    plait_kind = "flow.output"
    config: Mapping[str, Any] = {}

    @handler
    async def emit(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        """Yield ``message``."""
        await ctx.yield_output(message)


class FlowJoin(Executor):
    """Sends every message it receives on, unchanged (kind ``flow.join``)."""

    plait_kind = "flow.join"
    config: Mapping[str, Any] = {}

    @handler
    async def relay(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        """Send ``message`` on."""
        await ctx.send_message(message)


class _NoConfigKind:
    config_schema = _EMPTY_SCHEMA
    executor_class: type[Executor]
    #: pure: it passes messages on
    capabilities: tuple[()] = ()

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """A problem per config key: these kinds take none."""
        return [
            ConfigError(
                f"node {ctx.node_id!r}: kind {self.executor_class.plait_kind!r} "  # type: ignore[attr-defined]
                f"takes no config, got {key!r}",
                SourcePosition(source=ctx.source, path=f"/config/{key}"),
            )
            for key in sorted(map(str, config))
        ]

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """The executor, with id ``ctx.node_id``."""
        return self.executor_class(ctx.node_id)


class FlowOutputKind(_NoConfigKind):
    """``flow.output``: the node that yields a flow's outputs."""

    executor_class = FlowOutput


class FlowJoinKind(_NoConfigKind):
    """``flow.join``: a pass-through node."""

    executor_class = FlowJoin
