"""The shop workflow of plait-versions' tests, at three versions.

Version 1: ``intake`` counts orders in its state (``count``) and sends a ``DraftV1(text)``
to ``review``, which keeps it in its state and asks a person whether to approve it.
Version 2: the state field is renamed (``orders``), the message type changed
(``Draft(body)``), and a new node ``audit`` gets what ``review`` approved.
Version 3: ``Draft`` gains a ``priority`` field.
"""

from __future__ import annotations

from typing import Any

import attrs
from plait import Executor, Never, Workflow, WorkflowContext, handler
from plait_builders import WorkflowBuilder


@attrs.frozen
class DraftV1:
    text: str


@attrs.frozen
class Draft:
    body: str


@attrs.frozen
class DraftV3:
    body: str
    priority: int


class IntakeV1(Executor):
    @handler
    async def take(self, order: str, ctx: WorkflowContext[DraftV1]) -> None:
        ctx.state["count"] = ctx.state.get("count", 0) + 1
        await ctx.send_message(DraftV1(order))


class ReviewV1(Executor):
    @handler
    async def draft(self, draft: DraftV1, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["draft"] = draft
        await ctx.request_info("approve?", bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"v1 {ctx.state['draft'].text} {ok}")


class IntakeV2(Executor):
    @handler
    async def take(self, order: str, ctx: WorkflowContext[Draft]) -> None:
        ctx.state["orders"] = ctx.state.get("orders", 0) + 1
        await ctx.send_message(Draft(order))


class ReviewV2(Executor):
    @handler
    async def draft(self, draft: Draft, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["draft"] = draft
        await ctx.request_info("approve?", bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[str, str]) -> None:
        await ctx.send_message(f"{ctx.state['draft'].body} {ok}")


class Audit(Executor):
    @handler
    async def audit(self, line: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"v2 audited {line}")


class IntakeV3(Executor):
    @handler
    async def take(self, order: str, ctx: WorkflowContext[DraftV3]) -> None:
        ctx.state["orders"] = ctx.state.get("orders", 0) + 1
        await ctx.send_message(DraftV3(order, 1))


class ReviewV3(Executor):
    @handler
    async def draft(self, draft: DraftV3, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["draft"] = draft
        await ctx.request_info("approve?", bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[str, str]) -> None:
        draft = ctx.state["draft"]
        await ctx.send_message(f"{draft.body} p{draft.priority} {ok}")


def v1() -> Workflow:
    """Version 1."""
    return (
        WorkflowBuilder("shop", version=1)
        .add_edge(IntakeV1("intake"), ReviewV1("review"))
        .set_start("intake")
        .build()
    )


def v2() -> Workflow:
    """Version 2: renamed state field, changed message type, new node."""
    return (
        WorkflowBuilder("shop", version=2)
        .add_edge(IntakeV2("intake"), ReviewV2("review"))
        .add_edge("review", Audit("audit"))
        .set_start("intake")
        .build()
    )


def v3() -> Workflow:
    """Version 3: the draft has a priority."""
    return (
        WorkflowBuilder("shop", version=3)
        .add_edge(IntakeV3("intake"), ReviewV3("review"))
        .add_edge("review", Audit("audit"))
        .set_start("intake")
        .build()
    )


def retag(value: Any, old: str, new: str) -> Any:
    """``value`` with every record of type ``old`` now of type ``new``."""
    from plait_versions import Record

    if isinstance(value, Record):
        return Record(new if value.type == old else value.type, retag(value.fields, old, new))
    if isinstance(value, dict):
        return {k: retag(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [retag(v, old, new) for v in value]
    return value
