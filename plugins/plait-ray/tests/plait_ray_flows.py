"""Workflows the Ray tests run with local and Ray placement (importable by Ray workers:
every executor is a module-level class or function, so a worker rebuilds it from its
spec)."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
import attrs
from plait import Executor, Never, RetryPolicy, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder

# -- messages -------------------------------------------------------------------------


@attrs.frozen
class Job:
    """A fan-out task: ``n`` to square, and where a branch may leave its pid."""

    n: int
    marker_dir: str | None = None
    slow: str | None = None  # the branch that waits to be killed


@attrs.frozen
class Question:
    text: str


@attrs.frozen
class Answer:
    text: str


# -- chain ----------------------------------------------------------------------------


@executor(id="upper")
async def upper(text: str, ctx: WorkflowContext[str]) -> None:
    ctx.state["seen"] = ctx.state.get("seen", 0) + 1
    await ctx.add_event({"upper": text})
    await ctx.send_message(text.upper())


@executor(id="exclaim")
async def exclaim(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.set_shared_state("exclaimed", text)
    await ctx.send_message(text + "!")


@executor(id="report")
async def report(text: str, ctx: WorkflowContext[Never, str]) -> None:
    shared = await ctx.get_shared_state("exclaimed")
    await ctx.yield_output(f"{text} (from {shared}, superstep {ctx.superstep})")


def chain(placement: str | None) -> Workflow:
    return (
        WorkflowBuilder("chain", placement=placement)
        .add_edge(upper, exclaim)
        .add_edge(exclaim, report)
        .set_start(upper)
        .build()
    )


# -- fan-out / fan-in -----------------------------------------------------------------


@executor(id="split")
async def split(job: Job, ctx: WorkflowContext[Job]) -> None:
    await ctx.send_message(job)


class Square(Executor):
    """Squares ``n`` plus its branch number; the ``slow`` branch, on its first attempt,
    leaves its pid in ``marker_dir`` and waits to be killed."""

    @handler
    async def square(self, job: Job, ctx: WorkflowContext[int]) -> None:
        branch = int(self.id.removeprefix("sq"))
        if job.slow == self.id and ctx.attempt == 1 and job.marker_dir:
            await anyio.Path(job.marker_dir, f"{self.id}.pid").write_text(str(os.getpid()))
            await anyio.sleep(60)
        ctx.state["calls"] = ctx.state.get("calls", 0) + 1
        await ctx.send_message((job.n + branch) ** 2)


@executor(id="total")
async def total(values: list[int], ctx: WorkflowContext[Never, dict[str, Any]]) -> None:
    await ctx.yield_output({"sum": sum(values), "values": sorted(values)})


def fan(placement: str | None, branches: int = 4, retry: RetryPolicy | None = None) -> Workflow:
    squares = [Square(f"sq{i}") for i in range(branches)]
    builder = WorkflowBuilder("fan", placement=placement)
    for square in squares:
        builder.add_executor(square, retry=retry)
    return builder.add_fan_out(split, squares).add_fan_in(squares, total).set_start(split).build()


# -- loop -----------------------------------------------------------------------------


@executor(id="count")
async def count(n: int, ctx: WorkflowContext[int, list[int]]) -> None:
    history = ctx.state.setdefault("history", [])
    history.append(n)
    if n >= 5:
        await ctx.yield_output(list(history))
    else:
        await ctx.send_message(n + 1)


def loop(placement: str | None) -> Workflow:
    return (
        WorkflowBuilder("loop", placement=placement).add_edge(count, count).set_start(count).build()
    )


# -- nested ---------------------------------------------------------------------------


@executor(id="double")
async def double(n: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(n * 2)


@executor(id="emit")
async def emit(n: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(n + 1)


@executor(id="finish")
async def finish(n: int, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"nested gave {n}")


def nested(placement: str | None) -> Workflow:
    inner = WorkflowBuilder("inner").add_edge(double, emit).set_start(double).build()
    wrapped = inner.as_executor("inner")
    # recorded as the ``workflow`` executor kind, so a worker rebuilds it from data
    wrapped.plait_kind = "workflow"  # type: ignore[attr-defined]
    wrapped.config = {"spec": inner.spec.to_dict()}  # type: ignore[attr-defined]
    return (
        WorkflowBuilder("outer", placement=placement)
        .add_edge(double.with_id("prep"), wrapped)
        .add_edge(wrapped, finish)
        .set_start("prep")
        .build()
    )


# -- human in the loop ------------------------------------------------------------------


class Ask(Executor):
    request_types = (Question,)

    @handler
    async def start(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["asked"] = text
        ctx.state["request"] = await ctx.request_info(Question(f"{text}?"), Answer)

    @handler
    async def answered(self, answer: Answer, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['asked']} -> {answer.text} ({ctx.state['request']})")


def human(placement: str | None) -> Workflow:
    return WorkflowBuilder("human", placement=placement).set_start(Ask("ask")).build()


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)


# -- a slow loop, for killing its driver mid-run ------------------------------------------


@executor(id="tick")
async def tick(step: dict[str, Any], ctx: WorkflowContext[dict[str, Any], list[Any]]) -> None:
    """Counts to ``step["until"]``, one superstep per count, leaving a marker file per
    superstep (when given a directory) and taking ``step["pause"]`` seconds each."""
    history = ctx.state.setdefault("history", [])
    history.append([step["n"], ctx.attempt])
    if step.get("dir"):
        await anyio.Path(step["dir"], f"superstep-{ctx.superstep}").write_text(str(os.getpid()))
    await anyio.sleep(step.get("pause", 0))
    if step["n"] >= step["until"]:
        await ctx.yield_output([n for n, _ in history])
    else:
        await ctx.send_message({**step, "n": step["n"] + 1})


def ticking(placement: str | None) -> Workflow:
    return (
        WorkflowBuilder("ticking", placement=placement, max_supersteps=100)
        .add_edge(tick, tick)
        .set_start(tick)
        .build()
    )


# -- policies on placed executors -------------------------------------------------------


class Flaky(Executor):
    """Fails with ValueError on the first attempt of every invocation."""

    @handler
    async def flake(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        if ctx.attempt == 1:
            raise ValueError(f"flaky on {n}")
        await ctx.yield_output(n * 10)


class Sleepy(Executor):
    """Sleeps ``n`` seconds (a timeout policy cuts it short)."""

    @handler
    async def nap(self, n: float, ctx: WorkflowContext[Never, float]) -> None:
        await anyio.sleep(n)
        await ctx.yield_output(n)


class Custom(Exception):
    pass


class Odd(Executor):
    """Raises an exception class the driver cannot rebuild."""

    @handler
    async def odd(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        raise Custom(f"odd {n}")


def one(executor: Executor, placement: str | None, **options: Any) -> Workflow:
    builder = WorkflowBuilder(f"one-{executor.id}", placement=placement)
    return builder.add_executor(executor, **options).set_start(executor).build()


@attrs.frozen
class Secret:
    """A class no handler of its workflow declares."""

    value: str


class Leaky(Executor):
    """Yields a :class:`Secret` while declaring only ``Any``."""

    @handler
    async def leak(self, text: str, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(Secret(text))


@executor(id="spray")
async def spray(n: int, ctx: WorkflowContext[int]) -> None:
    for i in range(n):
        await ctx.send_message(i)


class Overlap(Executor):
    """Yields how many of its invocations were in flight at once (its instance lives in
    the process that runs it: the driver, or the actor hosting it)."""

    def __init__(self, id: str) -> None:
        super().__init__(id, max_concurrency=4)
        self.inflight = 0
        self.most = 0

    @handler
    async def overlap(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        self.inflight += 1
        self.most = max(self.most, self.inflight)
        await anyio.sleep(0.2)
        self.inflight -= 1
        await ctx.yield_output(self.most)


def overlapping(placement: str | None) -> Workflow:
    return (
        WorkflowBuilder("overlapping", placement=placement)
        .add_edge(spray, Overlap("overlap"))
        .set_start(spray)
        .build()
    )


# -- stages taking messages on arrival (the pipelined schedule) -----------------------


@executor(id="widen", max_concurrency=3)
async def widen(n: int, ctx: WorkflowContext[int]) -> None:
    await anyio.sleep(0.01 * (n % 3))
    await ctx.send_message(n * 10)


@executor(id="name_it", order="arrival")
async def name_it(n: int, ctx: WorkflowContext[Never, str]) -> None:
    # the delivery id the key ends with is the same placed or not, in either schedule
    await ctx.yield_output(f"{n}@{ctx.idempotency_key.rsplit(':', 1)[1]}")


def stages(placement: str | None) -> Workflow:
    return (
        WorkflowBuilder("stages", placement=placement)
        .add_edge(spray, widen)
        .add_edge(widen, name_it)
        .set_start(spray)
        .build()
    )
