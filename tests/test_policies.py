"""Retry and timeout policies, transactional attempts, error edges, lost branches."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import anyio
import pytest
from plait import (
    ExecutorFailedError,
    ExecutorRetrying,
    ExecutorTimeoutError,
    InvocationFailure,
    Never,
    RetryPolicy,
    RunOptionError,
    WorkflowContext,
    executor,
)
from plait_builders import WorkflowBuilder

pytestmark = pytest.mark.anyio


@executor(id="sink")
async def sink(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def flaky(failures: int, *, error: type[Exception] = RuntimeError) -> Any:
    calls: list[int] = []

    @executor(id="flaky")
    async def run(text: str, ctx: WorkflowContext[str, str]) -> None:
        calls.append(ctx.attempt)
        ctx.state["seen"] = ctx.state.get("seen", 0) + 1
        await ctx.set_shared_state("last", ctx.attempt)
        await ctx.add_event(f"attempt {ctx.attempt}")
        if len(calls) <= failures:
            await ctx.send_message("bad")
            await ctx.yield_output("bad output")
            raise error(f"attempt {ctx.attempt} broke")
        await ctx.send_message(f"good {ctx.idempotency_key}")

    run.calls = calls  # type: ignore[attr-defined]
    return run


async def test_a_failed_attempt_leaves_nothing_behind() -> None:
    step = flaky(1)
    wf = (
        WorkflowBuilder()
        .add_executor(step, retry=RetryPolicy(max_attempts=1, delay=0))
        .add_edge(step, sink)
        .set_start(step)
        .build()
    )
    result = await wf.run("x", events="all")
    assert step.calls == [1, 2]
    assert len(result.outputs) == 1 and result.outputs[0].startswith("good ")
    key = result.outputs[0].removeprefix("good ")
    assert key == f"{result.run_id}:1:flaky:0"  # the same on every attempt
    retrying = [e for e in result.events if isinstance(e, ExecutorRetrying)]
    assert [(e.executor_id, e.attempt, e.delay) for e in retrying] == [("flaky", 1, 0.0)]
    custom = [e.data for e in result.events if type(e).__name__ == "CustomEvent"]
    assert custom == ["attempt 2"]  # the failed attempt's event was dropped


async def test_without_retries_left_the_run_fails_naming_the_executor() -> None:
    step = flaky(5)
    wf = (
        WorkflowBuilder()
        .add_executor(step, retry=RetryPolicy(max_attempts=2, delay=0))
        .add_edge(step, sink)
        .set_start(step)
        .build()
    )
    with pytest.raises(ExecutorFailedError, match="'flaky' failed in superstep 1") as info:
        await wf.run("x")
    assert step.calls == [1, 2, 3]
    assert info.value.result.outputs == []  # type: ignore[attr-defined]


async def test_retry_on_restricts_which_errors_are_retried() -> None:
    step = flaky(1, error=KeyError)
    wf = (
        WorkflowBuilder()
        .add_executor(step, retry=RetryPolicy(max_attempts=3, delay=0, on=["TimeoutError"]))
        .add_edge(step, sink)
        .set_start(step)
        .build()
    )
    with pytest.raises(ExecutorFailedError):
        await wf.run("x")
    assert step.calls == [1]
    by_pattern = flaky(1, error=KeyError)
    wf = (
        WorkflowBuilder()
        .add_executor(by_pattern, retry=RetryPolicy(max_attempts=3, delay=0, on=["re:broke"]))
        .add_edge(by_pattern, sink)
        .set_start(by_pattern)
        .build()
    )
    assert (await wf.run("x")).outputs[0].startswith("good")
    assert by_pattern.calls == [1, 2]


def test_bad_policies_are_refused_at_once() -> None:
    with pytest.raises(RunOptionError, match="retry.on"):
        RetryPolicy(on=[42])
    with pytest.raises(RunOptionError, match="backoff"):
        RetryPolicy(backoff="linear")
    with pytest.raises(ValueError, match="timeout"):
        WorkflowBuilder().add_executor(sink, timeout=0)


def test_backoff_delays() -> None:
    policy = RetryPolicy(delay=0.5, max_delay=1.5)
    assert [policy.delay_before(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 1.5, 1.5]
    assert RetryPolicy(backoff="fixed", delay=2).delay_before(5) == 2
    jittered = RetryPolicy(delay=1, jitter=0.5)
    assert all(0.5 <= jittered.delay_before(1) <= 1.5 for _ in range(50))
    assert RetryPolicy.from_dict(policy.to_dict()) == policy


def hanging(fast_after: int) -> Any:
    calls: list[int] = []

    @executor(id="slow")
    async def slow(text: str, ctx: WorkflowContext[str]) -> None:
        calls.append(ctx.attempt)
        if len(calls) <= fast_after:
            await anyio.sleep(30)
        await ctx.send_message(text)

    slow.calls = calls  # type: ignore[attr-defined]
    return slow


async def test_a_hanging_executor_times_out_naming_it() -> None:
    slow = hanging(5)
    wf = WorkflowBuilder().add_executor(slow, timeout=0.2).add_edge(slow, sink).set_start(slow)
    with anyio.fail_after(10), pytest.raises(ExecutorTimeoutError) as info:
        await wf.build().run("x")
    assert info.value.executor_id == "slow" and info.value.limit == 0.2
    assert "'slow' timed out after 0.2 s in superstep 1" in str(info.value)


async def test_a_timeout_is_retried_and_a_fast_attempt_succeeds() -> None:
    slow = hanging(1)
    wf = (
        WorkflowBuilder()
        .add_executor(slow, timeout=0.2, retry=RetryPolicy(max_attempts=1, delay=0))
        .add_edge(slow, sink)
        .set_start(slow)
        .build()
    )
    with anyio.fail_after(10):
        assert (await wf.run("done")).outputs == ["done"]
    assert slow.calls == [1, 2]


async def test_workflow_defaults_apply_to_every_executor() -> None:
    step = flaky(1)
    wf = (
        WorkflowBuilder(retry=RetryPolicy(max_attempts=1, delay=0))
        .add_edge(step, sink)
        .set_start(step)
        .build()
    )
    assert wf.spec.retry is not None and wf.spec.retry["max_attempts"] == 1
    assert (await wf.run("x")).outputs[0].startswith("good")


async def test_an_error_edge_takes_the_failure_and_the_run_goes_on() -> None:
    step = flaky(9)

    @executor(id="fallback")
    async def fallback(failure: InvocationFailure, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{failure.executor_id}: {failure.error_type}: {failure.error}")

    wf = (
        WorkflowBuilder()
        .add_edge(step, sink)
        .add_error_edge(step, fallback)
        .set_start(step)
        .build()
    )
    result = await wf.run("x")
    # what the failed invocation sent or yielded before failing is dropped
    assert result.ok and result.outputs == ["flaky: RuntimeError: attempt 1 broke"]


async def test_a_branch_raising_cancelled_error_fails_the_run(anyio_backend: str) -> None:
    @executor(id="split")
    async def split(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="payment")
    async def payment(text: str, ctx: WorkflowContext[Never, str]) -> None:
        raise asyncio.CancelledError  # a client library cancelled what it awaited

    @executor(id="other")
    async def other(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("other")

    wf = WorkflowBuilder().add_fan_out(split, [payment, other]).set_start(split).build()
    with anyio.fail_after(10):
        result = await wf.run("x", raise_on_failure=False)
    assert not result.ok
    assert isinstance(result.error, ExecutorFailedError)
    assert result.error.executor_id == "payment"
    assert "CancelledError" in str(result.error)


async def test_every_failing_branch_is_reported() -> None:
    @executor(id="split")
    async def split(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    def failing(name: str) -> Any:
        @executor(id=name)
        async def fail(text: str, ctx: WorkflowContext[Never, str]) -> None:
            raise ValueError(f"{name} broke")

        return fail

    wf = (
        WorkflowBuilder()
        .add_fan_out(split, [failing("left"), failing("right")])
        .set_start(split)
        .build()
    )
    result = await wf.run("x", raise_on_failure=False)
    error = result.error
    assert error is not None
    siblings = error.sibling_errors  # type: ignore[attr-defined]
    assert {error.executor_id, *(s.executor_id for s in siblings)} == {"left", "right"}
    if sys.version_info >= (3, 11):  # exception notes (PEP 678) are new in 3.11
        assert any("broke" in note for note in getattr(error, "__notes__", []))


async def test_stream_as_a_context_manager_cancels_the_run_on_exit() -> None:
    cancelled = anyio.Event()

    @executor(id="ticker")
    async def ticker(n: int, ctx: WorkflowContext[int, int]) -> None:
        await ctx.yield_output(n)
        try:
            await anyio.sleep(0.01)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        await ctx.send_message(n + 1)

    wf = WorkflowBuilder().add_edge(ticker, ticker).set_start(ticker).build()
    seen: list[int] = []
    with anyio.fail_after(10):
        async with wf.stream(0, max_supersteps=10_000) as events:
            async for event in events:
                if type(event).__name__ == "OutputEvent":
                    seen.append(event.data)  # type: ignore[attr-defined]
                    if len(seen) == 3:
                        break
        assert cancelled.is_set()  # the run was cancelled before the block ended
    assert seen == [0, 1, 2]


async def test_a_finished_stream_raises_the_run_failure() -> None:
    step = flaky(9)
    wf = WorkflowBuilder().add_edge(step, sink).set_start(step).build()
    events: list[Any] = []
    with pytest.raises(ExecutorFailedError):
        async with wf.stream("x") as stream:
            async for event in stream:
                events.append(event)
    assert type(events[-1]).__name__ == "RunFinished"
