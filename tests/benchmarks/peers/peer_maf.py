"""Microsoft Agent Framework (MAF) versions of the Plait benchmark workloads.

Every workload is a ``Workflow`` made by ``WorkflowBuilder`` from ``Executor`` subclasses
with one ``@handler`` each: ``add_chain`` for chains, ``add_fan_out_edges`` and
``add_fan_in_edges`` for the fan-out, and a conditional self-edge for the loop. Function
executors (``FunctionExecutor`` over an ``async def``) run through the same engine path and
measure the same (kept in :data:`ALTERNATIVES`); *sync* function executors are not usable
here, since MAF runs them in a thread (``asyncio.to_thread``) and they cannot await
``ctx.send_message``.

A handler's return value is not routed anywhere in MAF: executors pass values on with
``ctx.send_message`` and the final executor hands the result out with ``ctx.yield_output``,
which the run collects (``WorkflowRunResult.get_outputs()``). So a chain of ``n`` executors
is ``n - 1`` that add 1 and send, then one that adds 1 and yields: ``n`` executors, ``n``
additions, as in Plait.

MAF's workflow API is async only; runs reuse one event loop per workload instance (see
:mod:`._support`). ``Workflow.run`` is awaited in non-streaming mode, which collects the
run's events into a list (streaming measures the same).

This module avoids ``from __future__ import annotations`` on purpose: MAF reads handler
annotations (``WorkflowContext[int, int]``) to type-check the graph at build time.
"""

import asyncio
import tempfile
from importlib.metadata import version
from typing import Any

from agent_framework import (
    Executor,
    FileCheckpointStorage,
    FunctionExecutor,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)
from typing_extensions import Never

from ._support import LoopRunner, Run, Workload, bind_cleanup, quiet_logger, remover

__all__ = ["NAME", "VERSION", "WORKLOADS", "ALTERNATIVES", "NOTES"]

NAME = "maf"
VERSION = version("agent-framework-core")

# MAF counts the start executor's run as iteration 1 and each later superstep as one more.
_ITERATION_HEADROOM = 10


# --------------------------------------------------------------------------- executors


class AddOne(Executor):
    """Sends its input plus one to the next executor."""

    @handler
    async def add_one(self, value: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(value + 1)


class AddOneAndYield(Executor):
    """Last link of a chain: yields its input plus one as the workflow's output."""

    @handler
    async def add_one(self, value: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(value + 1)


class Relay(Executor):
    """Sends its input on unchanged (the fan-out source and the workers)."""

    @handler
    async def relay(self, value: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(value)


class SleepyRelay(Executor):
    """Awaits ``asyncio.sleep(0.01)``, then sends its input on unchanged."""

    @handler
    async def relay(self, value: int, ctx: WorkflowContext[int]) -> None:
        await asyncio.sleep(0.01)
        await ctx.send_message(value)


class Sum(Executor):
    """Fan-in target: receives every worker's value as one list and yields their sum."""

    @handler
    async def total(self, values: list[int], ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(sum(values))


class Count(Executor):
    """Loop body: sends its input plus one; yields it as the output once it reaches ``limit``.

    The self-edge's condition (``value < limit``) decides whether the message goes round
    again, so the routing decision is made by the edge, as in the other frameworks.
    """

    def __init__(self, id: str, limit: int) -> None:
        super().__init__(id=id)
        self.limit = limit

    @handler
    async def count(self, value: int, ctx: WorkflowContext[int, int]) -> None:
        value += 1
        await ctx.send_message(value)
        if value >= self.limit:
            await ctx.yield_output(value)


class CountAndRoute(Executor):
    """Loop body that decides in the handler instead (for the unconditional self-edge)."""

    def __init__(self, id: str, limit: int) -> None:
        super().__init__(id=id)
        self.limit = limit

    @handler
    async def count(self, value: int, ctx: WorkflowContext[int, int]) -> None:
        value += 1
        if value < self.limit:
            await ctx.send_message(value)
        else:
            await ctx.yield_output(value)


async def _add_one_fn(value: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(value + 1)


async def _add_one_and_yield_fn(value: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(value + 1)


async def _relay_fn(value: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(value)


async def _sum_fn(values: list[int], ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(sum(values))


# --------------------------------------------------------------------------- graphs


def _chain_executors(n: int, functions: bool = False) -> list[Executor]:
    if functions:
        links: list[Executor] = [FunctionExecutor(_add_one_fn, id=f"step{i}") for i in range(n - 1)]
        return [*links, FunctionExecutor(_add_one_and_yield_fn, id=f"step{n - 1}")]
    return [*(AddOne(id=f"step{i}") for i in range(n - 1)), AddOneAndYield(id=f"step{n - 1}")]


def _chain_workflow(
    n: int,
    *,
    checkpoint_storage: Any = None,
    functions: bool = False,
    executors: list[Executor] | None = None,
) -> Workflow:
    """``n`` executors in a chain, each adding 1; the last one yields the output."""
    if executors is None:
        executors = _chain_executors(n, functions)
    builder = WorkflowBuilder(
        max_iterations=n + _ITERATION_HEADROOM,
        start_executor=executors[0],
        checkpoint_storage=checkpoint_storage,
    )
    if n > 1:
        builder.add_chain(executors)
    return builder.build()


def _fanout_workflow(n: int, *, sleep: bool = False, functions: bool = False) -> Workflow:
    """``source`` broadcasts to ``n`` workers (fan-out edges); ``sum`` joins them (fan-in)."""
    if n < 2:
        raise ValueError("MAF fan-out and fan-in edge groups need at least two workers (n >= 2)")
    workers: list[Executor]
    if functions:
        source: Executor = FunctionExecutor(_relay_fn, id="source")
        workers = [FunctionExecutor(_relay_fn, id=f"worker{i}") for i in range(n)]
        join: Executor = FunctionExecutor(_sum_fn, id="sum")
    else:
        source = Relay(id="source")
        worker_type = SleepyRelay if sleep else Relay
        workers = [worker_type(id=f"worker{i}") for i in range(n)]
        join = Sum(id="sum")
    return (
        WorkflowBuilder(start_executor=source)
        .add_fan_out_edges(source, workers)
        .add_fan_in_edges(workers, join)
        .build()
    )


def _loop_workflow(n: int, *, route_in_handler: bool = False) -> Workflow:
    """One executor cycling on itself ``n`` times."""
    # Building warns that a self-loop "may cause infinite recursion": expected here.
    with quiet_logger("agent_framework"):
        if route_in_handler:
            body: Executor = CountAndRoute("count", n)
            builder = WorkflowBuilder(max_iterations=n + _ITERATION_HEADROOM, start_executor=body)
            return builder.add_edge(body, body).build()
        counter = Count("count", n)
        builder = WorkflowBuilder(max_iterations=n + _ITERATION_HEADROOM, start_executor=counter)
        return builder.add_edge(counter, counter, condition=lambda value: value < n).build()


# --------------------------------------------------------------------------- workloads


def _single_output(outputs: list[Any]) -> Any:
    if len(outputs) != 1:
        raise AssertionError(f"expected exactly one workflow output, got {outputs!r}")
    return outputs[0]


def _run_workflow(workflow: Workflow, message: int) -> Run:
    runner = LoopRunner()

    def run() -> Any:
        return _single_output(runner.run(workflow.run(message)).get_outputs())

    return bind_cleanup(run, runner.close)


def chain(n: int, functions: bool = False) -> Run:
    """``n`` executors in a chain, each adding 1, starting from 0; returns ``n``."""
    return _run_workflow(_chain_workflow(n, functions=functions), 0)


def fanout(n: int, functions: bool = False) -> Run:
    """One source sends 1 to ``n`` workers; each sends it on; a fan-in sums them."""
    return _run_workflow(_fanout_workflow(n, functions=functions), 1)


def fanout_async(n: int) -> Run:
    """Like :func:`fanout`, but each worker first awaits ``asyncio.sleep(0.01)``."""
    return _run_workflow(_fanout_workflow(n, sleep=True), 1)


def loop(n: int, route_in_handler: bool = False) -> Run:
    """One executor on a conditional self-edge, counting from 0 up to ``n``."""
    return _run_workflow(_loop_workflow(n, route_in_handler=route_in_handler), 0)


def chain_ckpt_memory(n: int) -> Run:
    """An ``n``-chain checkpointed after every superstep into ``InMemoryCheckpointStorage``."""
    storage = InMemoryCheckpointStorage()
    return _run_workflow(_chain_workflow(n, checkpoint_storage=storage), 0)


def chain_ckpt_file(n: int) -> Run:
    """An ``n``-chain checkpointed after every superstep by ``FileCheckpointStorage``.

    agent-framework-core ships no SQLite checkpoint storage (only in-memory and file), so
    this stands in for the SQLite workload: one JSON file per checkpoint (state pickled and
    base64-encoded inside it), written from a worker thread to a temp file then
    ``os.replace``-d into a temporary directory, without fsync.
    """
    directory = tempfile.mkdtemp(prefix="bench-maf-file-")
    storage = FileCheckpointStorage(directory)
    run = _run_workflow(_chain_workflow(n, checkpoint_storage=storage), 0)
    return bind_cleanup(run, remover(directory))


def build(n: int) -> Run:
    """Chain ``n`` executors with a new ``WorkflowBuilder`` and ``build()`` (which validates).

    As in Plait's version, the executor objects are made once, outside the timed region
    (an executor is not tied to a workflow, so every run reuses them); the timed part is
    the builder, the edges, and ``build()``'s validation. Returns the executor count.
    """
    executors = _chain_executors(n)

    def run() -> int:
        return len(_chain_workflow(n, executors=executors).executors)

    return run


def build_from_scratch(n: int) -> Run:
    """Like :func:`build`, but the ``n`` executors are also constructed in the timed run."""

    def run() -> int:
        return len(_chain_workflow(n).executors)

    return run


WORKLOADS: dict[str, Workload] = {
    "chain1000": chain,
    "fanout1000": fanout,
    "loop10000": loop,
    "chain100_ckpt_memory": chain_ckpt_memory,
    "chain100_ckpt_sqlite": chain_ckpt_file,
    "build1000": build,
    "fanout_async": fanout_async,
}

#: Other API choices, kept so the choice made in :data:`WORKLOADS` can be re-measured.
ALTERNATIVES: dict[str, dict[str, Workload]] = {
    "build1000": {"with_executor_construction": build_from_scratch},
    "chain1000": {"function_executors": lambda n: chain(n, functions=True)},
    "fanout1000": {"function_executors": lambda n: fanout(n, functions=True)},
    "loop10000": {"route_in_handler": lambda n: loop(n, route_in_handler=True)},
}

#: Per-workload remarks the harness copies into its output's ``note`` field.
NOTES: dict[str, str] = {
    "chain1000": "Executor subclasses, add_chain, Workflow.run",
    "fanout1000": "Executor subclasses, add_fan_out_edges + add_fan_in_edges",
    "loop10000": "one Executor, conditional self-edge (add_edge condition=)",
    "chain100_ckpt_memory": "InMemoryCheckpointStorage (checkpoint after every superstep)",
    "chain100_ckpt_sqlite": (
        "MAF has no SQLite checkpoint storage: FileCheckpointStorage in a temp dir "
        "(one JSON file per checkpoint, no fsync) stands in for it"
    ),
    "build1000": "WorkflowBuilder + add_chain + build() over pre-made executors",
    "fanout_async": "Executor subclasses, add_fan_out_edges + add_fan_in_edges",
}
