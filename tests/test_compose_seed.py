"""The composability seed (004), end to end: what a nested workflow streams to the outer
caller, resuming an inline-composed workflow, a request inside an inlined fragment, a
fragment's run defaults, and conversation adapters checked at build time."""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import pytest
from plait import (
    CustomEvent,
    Executor,
    ExecutorInvoked,
    NestedEvent,
    Never,
    OutputEvent,
    RunStatus,
    TypeCheckError,
    WorkflowContext,
    executor,
    handler,
)
from plait_builders import CompositionError, WorkflowBuilder
from plait_converters import ChatMessage, MessagesToStructured, text_to_conversation

pytestmark = pytest.mark.anyio

SCHEDULES = ["superstep", "pipelined"]


# -- a nested workflow's events reach the outer stream -------------------------------------


@executor(id="norm")
async def norm(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.add_event(f"norm saw {text}")
    await ctx.send_message(text.lower())


@executor(id="emit")
async def emit(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text + "!")


@executor(id="start")
async def start(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


def nested_twice() -> Any:
    """``start -> mid``; ``mid`` nests ``inner -> emit``; ``inner`` nests ``norm -> emit``."""
    inner = WorkflowBuilder("inner").add_edge(norm, emit).set_start(norm).build()
    mid = WorkflowBuilder("mid").add_edge(inner.as_executor("inner"), emit)
    mid_workflow = mid.set_start("inner").build()
    outer = WorkflowBuilder("outer").add_edge(
        start, mid_workflow.as_executor("mid", allow_direct_output=True)
    )
    return outer.set_start(start).build()


def _nested(events: list[Any]) -> list[tuple[str, str, str, Any]]:
    return [
        (
            e.path,
            type(e.event).__name__,
            getattr(e.event, "executor_id", ""),
            getattr(e.event, "data", None),
        )
        for e in events
        if isinstance(e, NestedEvent)
    ]


@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_a_nested_runs_events_reach_the_outer_stream_marked_with_their_path(
    schedule: str,
) -> None:
    workflow = nested_twice()
    events: list[Any] = []
    async with workflow.stream("HI", schedule=schedule) as stream:
        async for event in stream:
            events.append(event)
    nested = _nested(events)
    # the inner custom event, invocations and outputs, in the order the runs made them
    wanted = [
        ("mid", "ExecutorInvoked", "inner", None),
        ("mid/inner", "ExecutorInvoked", "norm", None),
        ("mid/inner", "CustomEvent", "norm", "norm saw HI"),
        ("mid/inner", "ExecutorInvoked", "emit", None),
        ("mid/inner", "OutputEvent", "emit", "hi!"),
        ("mid", "ExecutorInvoked", "emit", None),
        ("mid", "OutputEvent", "emit", "hi!!"),
    ]
    picked = [n for n in nested if n[1] in ("ExecutorInvoked", "CustomEvent", "OutputEvent")]
    assert picked == wanted
    # they come inside the outer invocation of "mid", before its own output
    kinds = [type(e).__name__ for e in events]
    mid_invoked = events.index(ExecutorInvoked("mid", 2))
    first_nested = kinds.index("NestedEvent")
    outer_output = next(i for i, e in enumerate(events) if isinstance(e, OutputEvent))
    assert mid_invoked < first_nested < outer_output
    assert events[outer_output] == OutputEvent("mid", "hi!!", 2)
    # the inner run's outputs are not the outer run's
    assert [e.data for e in events if isinstance(e, OutputEvent)] == ["hi!!"]
    assert not any(isinstance(e, CustomEvent) for e in events)


@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_a_plain_run_keeps_the_nested_outputs_and_custom_events_not_its_invocations(
    schedule: str,
) -> None:
    result = await nested_twice().run("HI", schedule=schedule)
    nested = _nested(result.events)
    assert ("mid/inner", "CustomEvent", "norm", "norm saw HI") in nested
    assert ("mid/inner", "OutputEvent", "emit", "hi!") in nested
    assert not [n for n in nested if n[1] == "ExecutorInvoked"]  # lifecycle events only
    assert result.outputs == ["hi!!"]


async def test_a_retried_attempts_nested_events_are_dropped_with_it() -> None:
    from plait import RetryPolicy

    tries = {"left": 1}

    @executor(id="flaky")
    async def flaky(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.add_event(f"try {tries['left']}")
        if tries["left"]:
            tries["left"] -= 1
            raise RuntimeError("transient")
        await ctx.yield_output(text)

    inner = WorkflowBuilder("inner").add_executor(flaky).set_start(flaky).build()
    nested = inner.as_executor("nested", allow_direct_output=True)
    outer = WorkflowBuilder("outer").add_edge(start, nested).set_start(start)
    outer.add_executor(nested, retry=RetryPolicy(max_attempts=1, backoff="fixed", delay=0))
    result = await outer.build().run("x", events="all")
    customs = [n[3] for n in _nested(result.events) if n[1] == "CustomEvent"]
    assert customs == ["try 0"]  # the failed attempt's "try 1" went with it
    assert result.outputs == ["x"]


# -- inline composition: resume, requests --------------------------------------------------


class Approver(Executor):
    """Asks whether to publish a draft; sends the draft on (or ``withheld``)."""

    @handler
    async def ask(self, draft: str, ctx: WorkflowContext[str]) -> None:
        ctx.state["draft"] = draft
        await ctx.request_info(f"publish {draft!r}?", bool)

    @handler
    async def answered(self, ok: bool, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(ctx.state["draft"] if ok else "withheld")


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.upper())


@executor(id="publish")
async def publish(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"published {text}")


def reviewed() -> Any:
    """``prep/shout -> review/approve -> publish``, the review an inlined fragment."""
    review = WorkflowBuilder("review").add_executor(Approver("approve")).set_start("approve")
    prep = WorkflowBuilder("prep").add_executor(shout).set_start(shout)
    builder = WorkflowBuilder("reviewed")
    prep_handle = builder.add_workflow(prep)
    review_handle = builder.add_workflow(review)
    builder.connect(prep_handle, review_handle).connect(review_handle, publish)
    return builder.set_start(prep_handle.start).build()


@pytest.mark.parametrize("schedule", SCHEDULES)
async def test_a_request_inside_an_inlined_fragment_reaches_the_caller_and_resumes(
    schedule: str,
) -> None:
    store = f"memory://{uuid.uuid4().hex}"
    waiting = await reviewed().run("draft", checkpoint=store, schedule=schedule)
    assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (request,) = waiting.pending_requests
    # inlined: the request is the fragment's executor's, under its prefix
    assert (request.executor_id, request.request) == ("review/approve", "publish 'DRAFT'?")
    done = await reviewed().resume(
        waiting.run_id, store, responses={request.request_id: True}, schedule=schedule
    )
    assert (done.status, done.outputs) == (RunStatus.IDLE, ["published DRAFT"])


async def test_an_inline_composed_workflow_resumes_from_its_checkpoint_in_a_rebuilt_copy() -> None:
    """A crash after the first fragment: a rebuilt composition (the same signature) resumes
    from the last checkpoint with the fragment's per-run state."""
    from plait_durable import TopologyMismatchError

    store = f"memory://{uuid.uuid4().hex}"
    first = reviewed()
    waiting = await first.run("draft", checkpoint=store)
    again = reviewed()
    assert again.signature() == first.signature()
    (request,) = await again.pending_requests(waiting.run_id, store)
    denied = await again.resume(waiting.run_id, store, responses={request.request_id: False})
    assert denied.outputs == ["published withheld"]
    # a composition that changed (another prefix) is a different graph: refused
    review = WorkflowBuilder("review").add_executor(Approver("approve")).set_start("approve")
    other = WorkflowBuilder("reviewed")
    handle = other.add_workflow(review, prefix="check")
    other.connect(handle, publish).set_start(handle.start)
    with pytest.raises(TopologyMismatchError, match="executors added: check/approve"):
        await other.build().resume(waiting.run_id, store, responses={request.request_id: True})


# -- a fragment's run defaults ---------------------------------------------------------------


async def test_a_fragments_checkpoint_default_carries_over_and_run_arguments_win() -> None:
    own = f"memory://{uuid.uuid4().hex}"
    fragment = WorkflowBuilder("durable", checkpoint=own).add_executor(shout).set_start(shout)
    builder = WorkflowBuilder("outer")
    handle = builder.add_workflow(fragment)
    builder.connect(handle, publish).set_start(handle.start)
    workflow = builder.build()
    assert workflow.spec.options["checkpoint"] == own
    result = await workflow.run("x")
    (listed,) = await _runs(own)
    assert listed == result.run_id
    elsewhere = f"memory://{uuid.uuid4().hex}"
    other = await workflow.run("y", checkpoint=elsewhere)
    assert await _runs(elsewhere) == [other.run_id]
    assert await _runs(own) == [result.run_id]  # the parent's run() argument won


async def _runs(url: str) -> list[str]:
    from plait_durable import list_runs, open_store

    store = open_store(url)
    try:
        return [run.run_id for run in (await list_runs(store)).runs]
    finally:
        await store.aclose()


def test_two_fragments_that_disagree_on_a_run_default_are_an_error_naming_both() -> None:
    one = WorkflowBuilder("one", checkpoint="memory://a").add_executor(shout).set_start(shout)
    two = WorkflowBuilder("two", checkpoint="memory://b").add_executor(publish).set_start(publish)
    builder = WorkflowBuilder()
    builder.add_workflow(one)
    with pytest.raises(
        CompositionError, match="fragments 'one' and 'two' disagree on the run default 'checkpoint'"
    ):
        builder.add_workflow(two)
    agreeing = (
        WorkflowBuilder("three", checkpoint="memory://a").add_executor(publish).set_start(publish)
    )
    builder.add_workflow(agreeing)  # the same value: no conflict
    assert builder.run_defaults["checkpoint"] == "memory://a"
    # the composing builder's own default wins over its fragments'
    mine = WorkflowBuilder(checkpoint="memory://mine")
    mine.add_workflow(one)
    mine.add_workflow(two)
    assert mine.run_defaults["checkpoint"] == "memory://mine"


# -- conversation adapters, checked at build time ------------------------------------------


@attrs.frozen
class Verdict:
    approved: bool
    reason: str


@executor(id="team")
async def team(task: str, ctx: WorkflowContext[list[ChatMessage]]) -> None:
    await ctx.send_message(
        [ChatMessage("user", task), ChatMessage("judge", '{"approved": true, "reason": "short"}')]
    )


@executor(id="judge")
async def judge(verdict: Verdict, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"approved={verdict.approved} ({verdict.reason})")


@executor(id="read")
async def read(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


@executor(id="listen")
async def listen(messages: list[ChatMessage], ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(len(messages))


def test_a_transcript_reaches_a_str_step_only_with_lossy_conversion_allowed() -> None:
    strict = WorkflowBuilder().add_edge(team, read).set_start(team)
    with pytest.raises(TypeCheckError, match="conversation_to_text"):
        strict.build()
    lossy = WorkflowBuilder().set_start(team).connect(team, read, allow_lossy=True).build()
    assert any(n.endswith(":conversation_to_text") for n in lossy.spec.node_ids)
    assert lossy.run_sync("go").outputs == [
        'user: go\njudge: {"approved": true, "reason": "short"}'
    ]


def test_a_transcript_reaches_a_typed_step_through_structured_extraction() -> None:
    auto = WorkflowBuilder().set_start(team).connect(team, judge, allow_lossy=True).build()
    assert any(n.endswith(":messages_to_structured") for n in auto.spec.node_ids)
    assert auto.run_sync("go").outputs == ["approved=True (short)"]
    named = WorkflowBuilder().set_start(team)
    named.connect(team, judge, adapter=MessagesToStructured[Verdict])
    assert named.build().run_sync("go").outputs == ["approved=True (short)"]


def test_a_text_becomes_a_conversation_through_the_explicit_adapter() -> None:
    builder = WorkflowBuilder().set_start(shout)
    builder.connect(shout, listen, adapter=text_to_conversation)
    workflow = builder.build()
    assert "adapt:shout->listen" in workflow.spec.node_ids
    assert workflow.run_sync("hi").outputs == [1]


async def test_a_failed_inline_composed_run_resumes_where_its_last_checkpoint_left_it() -> None:
    """The second fragment fails once; resuming the run (a rebuilt composition) goes on
    from the checkpoint after the first fragment, which does not run again."""
    calls = {"prep": 0, "fail": 1}

    @executor(id="count")
    async def count_prep(text: str, ctx: WorkflowContext[str]) -> None:
        calls["prep"] += 1
        ctx.state["seen"] = text
        await ctx.send_message(text.upper())

    @executor(id="fragile")
    async def fragile(text: str, ctx: WorkflowContext[str]) -> None:
        if calls["fail"]:
            calls["fail"] -= 1
            raise RuntimeError("the disk was full")
        await ctx.send_message(text + "!")

    def composed() -> Any:
        prep = WorkflowBuilder("prep").add_executor(count_prep).set_start(count_prep)
        work = WorkflowBuilder("work").add_executor(fragile).set_start(fragile)
        builder = WorkflowBuilder("composed")
        prep_handle, work_handle = builder.add_workflow(prep), builder.add_workflow(work)
        builder.connect(prep_handle, work_handle).connect(work_handle, publish)
        return builder.set_start(prep_handle.start).build()

    store = f"memory://{uuid.uuid4().hex}"
    failed = await composed().run("go", checkpoint=store, raise_on_failure=False)
    assert failed.status is RunStatus.FAILED and "the disk was full" in str(failed.error)
    done = await composed().resume(failed.run_id, store)
    assert (done.status, done.outputs) == (RunStatus.IDLE, ["published GO!"])
    assert calls["prep"] == 1  # prep/count's superstep was committed: not run again
