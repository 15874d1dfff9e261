"""The executors of a foreach block, and the kinds that build them from data.

- ``steps.foreach``: a block's start. It evaluates ``items``, keeps the step context it
  started in once in the run's shared state, and sends one message per item (a ``switch``
  edge group after it routes them into the body, or an empty list straight to the gather).
- ``steps.gather``: a block's end. It keeps each item's output in its executor state
  (checkpointed) until every item of that run of the block is in, then records the list,
  in item order, in the context the block started in and sends that on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import Executor, PlaitError, WorkflowContext, WorkflowRunError, handler
from plait.spi import BuildContext
from plait_expr import expression_failed

from . import _context as sc
from ._base import (
    STEP_CONFIG,
    TARGET_CONFIG,
    NoConfigCheck,
    StepKind,
    StepNode,
    enter,
    finish,
    record,
    template_data,
)

__all__ = ["ForeachItemsError", "ForeachKind", "GatherKind"]


class ForeachItemsError(WorkflowRunError):
    """A foreach step's ``items`` gave something other than a list, or failed to evaluate."""


class ForeachExecutor(StepNode):
    """A foreach block's start: evaluates ``items``, keeps the context it started in in
    shared state, and sends one step context per item, each with a frame (``foreach``: the
    block, its run's key, the item, its index, the count, the enclosing frame). An empty
    list sends one frame with count 0, which the switch after this node routes straight
    to the gather."""

    def __init__(self, id: str, *, config: Mapping[str, Any], items: Any) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.limit: int = config["limit"]
        self.text: str = str(config.get("items", ""))
        self.literal: list[Any] | None = config.get("items_value")
        self.is_template = bool(config.get("template"))
        self.loops: Mapping[str, list[str]] = config.get("loops") or {}
        self.items = items

    async def _evaluate(self, state: dict[str, Any], ctx: WorkflowContext[Any, Any]) -> list[Any]:
        if self.literal is not None:
            return self.literal
        data = await template_data(state, ctx)
        try:
            value = self.items.value(data) if self.is_template else self.items.evaluate(data)
        except PlaitError as exc:
            raise expression_failed(
                ForeachItemsError,
                f"items of foreach step {self.step!r}",
                exc,
                executor_id=self.step,
                superstep=ctx.superstep,
            ) from exc
        if not isinstance(value, (list, tuple)):
            shown = "null" if value is None else f"{type(value).__name__} {value!r}"[:80]
            raise ForeachItemsError(
                f"items of foreach step {self.step!r} must give a list, got {shown} "
                f"({self.text.strip()})",
                executor_id=self.step,
                superstep=ctx.superstep,
            )
        return list(value)

    @handler
    async def fork(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = enter(message, self.step, ctx, limit=self.limit, loops=self.loops)
        items = await self._evaluate(state, ctx)
        parent = state.get("foreach")
        # unique per run of this block: a loop runs it again, an outer foreach per item
        key = f"{self.step}#{state['runs'][self.step]}"
        if parent is not None:
            key = f"{parent['key']}[{parent['index']}]/{key}"
        # the context this run started in, once, for the body's templates and the gather
        await ctx.set_shared_state(sc.foreach_key(key), {**state, "foreach": None})
        frame = {"id": self.step, "key": key, "count": len(items), "parent": parent}
        if not items:
            await ctx.send_message({**state, "foreach": {**frame, "index": -1}, "branch": False})
            return
        # each item runs the body afresh: its own prompt (the item), prior outputs, steps
        # and loop counters; the enclosing ones come back at the gather
        for index, item in enumerate(items):
            # each item writes its entries in a scope of its own
            item_state = sc.fresh(sc.text(item), scope=f"{key}[{index}]")
            item_state["foreach"] = {**frame, "index": index, "value": item}
            item_state["branch"] = True
            await ctx.send_message(item_state)


class GatherExecutor(StepNode):
    """A foreach block's end: keeps a reference to each item's output (the entry of the
    last step the item ran in the body) under its run's key in this executor's state —
    checkpointed with the run — and, once every item of that run is in, records the list
    of those outputs, in item order, as the block's output in the context the block
    started in (from shared state), drops the items' entries, and sends that on."""

    def __init__(self, id: str, *, config: Mapping[str, Any]) -> None:
        super().__init__(id)
        self.step: str = config["step"]
        self.label: str = config.get("label") or self.step
        self.final: bool = bool(config.get("final"))
        self.via: str | None = config.get("via")

    @handler
    async def gather(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        state = sc.start(message)
        frame = state["foreach"]
        key, count = frame["key"], frame["count"]
        buffer = ctx.state.get(key) or {"outputs": {}, "runs": {}}
        if count:
            last = state.get("last")
            buffer["outputs"][str(frame["index"])] = state["steps"].get(last)
            runs = buffer["runs"]
            for member, n in state["runs"].items():
                runs[member] = runs.get(member, 0) + n
            if len(buffer["outputs"]) < count:
                ctx.state[key] = buffer
                return
        ctx.state.pop(key, None)
        entries = sc.Entries({}, ctx.shared)
        outputs = [entries.ref(buffer["outputs"][str(i)])["output"] for i in range(count)]
        # the list holds what the items gave: drop their entries (every run of every step
        # of every item, in scopes inside theirs too)
        prefix = sc.scope_prefix(f"{key}[")[:-1]
        for item_key in [k for k in ctx.shared if k.startswith(prefix)]:
            await ctx.delete_shared_state(item_key)
        shared = sc.foreach_key(key)
        outer = dict(await ctx.get_shared_state(shared))
        await ctx.delete_shared_state(shared)
        runs = dict(outer["runs"])
        for member, n in buffer["runs"].items():
            runs[member] = runs.get(member, 0) + n
        outer["runs"] = runs
        if frame["parent"] is None:
            outer.pop("foreach", None)
        else:
            outer["foreach"] = frame["parent"]
        entry = {"output": outputs, "agent": None}
        new, fresh = await record(
            ctx, outer, self.step, entry, final=self.final, label=self.label, who="foreach"
        )
        await finish(ctx, new, outputs, self.final, fresh, self.via)


class ForeachKind(StepKind):
    """``steps.foreach``: ``{step, limit, items? | items_value?, template?, at?, loops?}``."""

    required = STEP_CONFIG
    optional = {**TARGET_CONFIG, "items": str, "items_value": list, "template": bool, "at": list}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        items = None
        if config.get("items_value") is None:
            items = self.templates(ctx).config(config, "items", ctx)
        return ForeachExecutor(ctx.node_id, config=config, items=items)


class GatherKind(NoConfigCheck):
    """``steps.gather``: ``{step, label?, final?, via?}``."""

    required = {"step": str}
    optional = {"label": str, "final": bool, "via": str}

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        return GatherExecutor(ctx.node_id, config=config)
