"""The desk workflow of ``plait compat --dry-run``'s tests, at two versions.

Version 1: ``intake`` counts notes in its state (``count``) and sends ``NoteV1(text)`` to
``writer``, which stamps the note with the time (``ctx.now()``, an outside call a recorded
run keeps), yields the stamped draft and asks a person to approve it.
Version 2: the state field is renamed (``notes``) and the message type changed
(``Note(body)``); the writer does the same with it.

:func:`upper_bodies` is a migration that does not keep the behaviour: it writes the
pending notes' text in capitals, so the writer's draft and question differ.
"""

from __future__ import annotations

import attrs
from plait import Executor, Never, Workflow, WorkflowContext, handler
from plait_builders import WorkflowBuilder
from plait_versions import Record, RunSnapshot

OLD, NEW = "versions_desk:NoteV1", "versions_desk:Note"


@attrs.frozen
class NoteV1:
    text: str


@attrs.frozen
class Note:
    body: str


class IntakeV1(Executor):
    @handler
    async def take(self, order: str, ctx: WorkflowContext[NoteV1]) -> None:
        ctx.state["count"] = ctx.state.get("count", 0) + 1
        await ctx.send_message(NoteV1(order))


class WriterV1(Executor):
    @handler
    async def write(self, note: NoteV1, ctx: WorkflowContext[Never, str]) -> None:
        draft = f"{note.text} at {ctx.now().isoformat()}"
        ctx.state["draft"] = draft
        await ctx.yield_output(draft)
        await ctx.request_info({"approve": draft}, bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['draft']}: {ok}")


class IntakeV2(Executor):
    @handler
    async def take(self, order: str, ctx: WorkflowContext[Note]) -> None:
        ctx.state["notes"] = ctx.state.get("notes", 0) + 1
        await ctx.send_message(Note(order))


class WriterV2(Executor):
    @handler
    async def write(self, note: Note, ctx: WorkflowContext[Never, str]) -> None:
        draft = f"{note.body} at {ctx.now().isoformat()}"
        ctx.state["draft"] = draft
        await ctx.yield_output(draft)
        await ctx.request_info({"approve": draft}, bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['draft']}: {ok}")


def v1() -> Workflow:
    """Version 1."""
    builder = WorkflowBuilder("desk", version=1)
    return builder.add_edge(IntakeV1("intake"), WriterV1("writer")).set_start("intake").build()


def v2() -> Workflow:
    """Version 2: renamed state field, changed message type."""
    builder = WorkflowBuilder("desk", version=2)
    return builder.add_edge(IntakeV2("intake"), WriterV2("writer")).set_start("intake").build()


def _notes(messages: list[object]) -> list[object]:
    """Every ``NoteV1(text)`` among ``messages`` as a ``Note(body)``."""
    return [
        Record(NEW, {"body": m.fields["text"]}) if isinstance(m, Record) and m.type == OLD else m
        for m in messages
    ]


def one_to_two(snapshot: RunSnapshot) -> RunSnapshot:
    """count -> notes; NoteV1(text) -> Note(body): the behaviour kept."""
    intake = snapshot.executor_state.get("intake")
    if intake is not None and "count" in intake:
        intake["notes"] = intake.pop("count")
    snapshot.pending = {eid: _notes(list(m)) for eid, m in snapshot.pending.items()}
    return snapshot


def upper_bodies(snapshot: RunSnapshot) -> RunSnapshot:
    """As :func:`one_to_two`, but the notes' text in capitals: the behaviour changed."""
    snapshot = one_to_two(snapshot)
    snapshot.pending = {
        eid: [
            Record(NEW, {"body": str(m.fields["body"]).upper()}) if isinstance(m, Record) else m
            for m in messages
        ]
        for eid, messages in snapshot.pending.items()
    }
    return snapshot
