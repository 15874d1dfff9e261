"""Nested workflows: Workflow.as_executor wraps a whole workflow as one executor."""

from __future__ import annotations

from typing import Any

import pytest
from plait import Never, Workflow, WorkflowContext, executor
from plait.convert import Converter
from plait.errors import ExecutorFailedError
from plait_builders import WorkflowBuilder
from plait_executors import WorkflowExecutor

pytestmark = pytest.mark.anyio


@executor(id="split")
async def split(text: str, ctx: WorkflowContext[str]) -> None:
    for word in text.split():
        await ctx.send_message(word)


@executor(id="upper")
async def upper(word: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(word.upper())


@executor(id="collect")
async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
    await ctx.yield_output(value)


def inner() -> Workflow:
    """Splits a text into words and yields each, upper-cased: its own supersteps."""
    return WorkflowBuilder("words").add_edge(split, upper).set_start(split).build()


async def test_the_inner_workflow_runs_per_message_and_its_outputs_are_sent_on() -> None:
    nested = inner().as_executor("words")
    assert isinstance(nested, WorkflowExecutor)
    assert nested.input_types == (str,)
    assert nested.output_types == (str,) and nested.workflow_output_types == ()

    @executor(id="fork")
    async def fork(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)
        await ctx.send_message(text + " again")

    outer = WorkflowBuilder().add_edge(fork, nested).add_edge(nested, collect).set_start(fork)
    result = await outer.build().run("a b")
    assert result.outputs == ["A", "B", "A", "B", "AGAIN"]
    assert result.supersteps == 3  # the inner supersteps run inside one outer superstep


async def test_an_adapter_reshapes_each_output() -> None:
    def length(word: str) -> int:
        return len(word)

    async def skip_short(word: str) -> str | None:
        return word if len(word) > 1 else None

    as_length = Converter(source=str, target=int, fn=len, lossless=False, name="len")
    for adapter, expected, types in (
        (length, [3, 2, 1], (int,)),
        (as_length, [3, 2, 1], (int,)),
        (skip_short, ["ONE", "TO"], (str | None,)),
    ):
        nested = inner().as_executor("words", adapter=adapter)
        assert nested.output_types == types
        workflow = WorkflowBuilder().add_edge(nested, collect).set_start(nested).build()
        assert (await workflow.run("one to a")).outputs == expected


async def test_allow_direct_output_yields_outer_outputs() -> None:
    nested = inner().as_executor(allow_direct_output=True)
    assert nested.id == "words"  # the workflow's name
    assert nested.output_types == () and nested.workflow_output_types == (str,)
    workflow = WorkflowBuilder().add_executor(nested).set_start(nested).build()
    result = await workflow.run("x y")
    assert result.outputs == ["X", "Y"]


async def test_a_failing_inner_run_fails_the_outer_run_naming_the_nested_executor() -> None:
    @executor(id="boom")
    async def boom(text: str, ctx: WorkflowContext[Never, str]) -> None:
        raise ValueError(f"cannot take {text!r}")

    failing = WorkflowBuilder("fragile").add_executor(boom).set_start(boom).build()
    nested = failing.as_executor("guarded")
    workflow = WorkflowBuilder().add_edge(nested, collect).set_start(nested).build()
    with pytest.raises(ExecutorFailedError) as info:
        await workflow.run("x")
    error = info.value
    assert error.executor_id == "guarded" and error.superstep == 1
    assert "nested workflow executor 'guarded' failed in superstep 1" in str(error)
    assert "executor 'boom' failed" in str(error) and "cannot take 'x'" in str(error)
    assert isinstance(error.__cause__, ExecutorFailedError)
    assert error.__cause__.executor_id == "boom"


async def test_a_nested_executor_inside_a_fragment_is_cloned_per_use() -> None:
    fragment = WorkflowBuilder("wrapped").set_start(inner().as_executor("words"))
    fragment.add_executor(fragment._executors["words"])
    builder = WorkflowBuilder()
    first = builder.add_workflow(fragment, prefix="one")
    second = builder.add_workflow(fragment, prefix="two")
    builder.connect(first, second).connect(second, collect).set_start(first.start)
    workflow = builder.build()
    clone = workflow.executors["one/words"]
    assert isinstance(clone, WorkflowExecutor) and clone.id == "one/words"
    assert fragment._executors["words"].id == "words"
    assert (await workflow.run("hi yo")).outputs == ["HI", "YO"]
    assert "WorkflowExecutor 'one/words' wraps words" in repr(clone)


async def test_a_nested_request_reaches_the_outer_caller_and_answers_resume_both() -> None:
    """The inner workflow asks for approval; the outer run waits, survives in a store, and
    the answer given to the outer run resumes the inner one where it stopped."""
    import uuid

    from plait import Executor, handler
    from plait.events import RunStatus

    class Approver(Executor):
        @handler
        async def ask(self, draft: str, ctx: WorkflowContext[str]) -> None:
            ctx.state["draft"] = draft
            await ctx.request_info(f"publish {draft!r}?", bool)

        @handler
        async def answered(self, ok: bool, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(ctx.state["draft"] if ok else "withheld")

    @executor(id="stamp")
    async def stamp(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"[{text}]")

    @executor(id="shout")
    async def shout(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())

    @executor(id="publish")
    async def publish(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"published {text}")

    def outer() -> Any:
        inner_wf = (
            WorkflowBuilder("review")
            .add_edge(Approver("approve"), stamp)
            .set_start("approve")
            .build()
        )
        review = inner_wf.as_executor("review")
        return (
            WorkflowBuilder("outer")
            .add_edge(shout, review)
            .add_edge(review, publish)
            .set_start(shout)
            .build()
        )

    store = f"memory://{uuid.uuid4().hex}"
    waiting = await outer().run("draft", checkpoint=store)
    assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
    (request,) = waiting.pending_requests
    assert request.request == "publish 'DRAFT'?"
    assert request.executor_id == "review"
    done = await outer().resume(waiting.run_id, store, responses={request.request_id: True})
    assert done.outputs == ["published [DRAFT]"]
    assert done.status is RunStatus.IDLE
