"""Workflows the worker tests submit (``workers_app:chain``, ``workers_app:review``).

Each step of ``chain`` records a side effect by its idempotency key: a line
``effect RUN_ID KEY`` appended to the file ``$PLAIT_WORKERS_EFFECTS`` (small appends are
atomic), and the last step a line ``output RUN_ID VALUE``. A test compares those lines with a
clean run's: a step run twice (the documented at-least-once re-run of an interrupted
superstep) shows as its key twice.
"""

from __future__ import annotations

import os

import anyio
import attrs
from plait import Executor, Never, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder

STEPS = 5


def _record(line: str) -> None:
    path = os.environ.get("PLAIT_WORKERS_EFFECTS")
    if path:
        with open(path, "a") as log:
            log.write(line + "\n")


def _sleep() -> float:
    return float(os.environ.get("PLAIT_WORKERS_STEP_SLEEP", "0.2"))


def _step(i: int) -> object:
    @executor(id=f"step{i}")
    async def step(x: int, ctx: WorkflowContext[int, int]) -> None:
        await anyio.sleep(_sleep())  # the work between checkpoints
        _record(f"effect {ctx.run_id} {ctx.idempotency_key}")
        if i == STEPS - 1:
            _record(f"output {ctx.run_id} {x * 10 + i}")
            await ctx.yield_output(x * 10 + i)
        else:
            await ctx.send_message(x * 10 + i)

    return step


def chain() -> Workflow:
    """Five steps, one superstep each; the output is a function of the input alone."""
    steps = [_step(i) for i in range(STEPS)]
    builder = WorkflowBuilder("chain", max_supersteps=STEPS + 2).add_executor(steps[0])
    for a, b in zip(steps, steps[1:]):
        builder.add_edge(a, b)
    return builder.set_start(steps[0]).build()


@attrs.frozen
class Approval:
    """What ``review`` asks a person."""

    text: str


class Reviewer(Executor):
    """Asks for approval, then sends the verdict on."""

    request_types = (Approval,)

    @handler
    async def start(self, topic: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(Approval(f"approve {topic}?"), bool)

    @handler
    async def answered(self, answer: bool, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message("approved" if answer else "rejected")


def review() -> Workflow:
    """A run that waits for a person's answer."""

    @executor(id="publish")
    async def publish(verdict: str, ctx: WorkflowContext[Never, str]) -> None:
        _record(f"output {ctx.run_id} {verdict}")
        await ctx.yield_output(verdict)

    return (
        WorkflowBuilder("review").add_edge(Reviewer("review"), publish).set_start("review").build()
    )
