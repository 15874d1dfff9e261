"""Workflows the plait-cli tests run by path: ``plugins/plait-cli/tests/cli_workflows.py:echo``.

Not a test module (its name does not start with ``test_``): the tests name its attributes
as TARGETs, so it is imported by ``plait run`` itself, in-process or in a subprocess.
"""

from __future__ import annotations

from typing import Any

import attrs
from plait import Executor, Never, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder

HERE = __file__


@executor(id="upper")
async def upper(text: str, ctx: WorkflowContext[str]) -> None:
    """Send the text upper-cased."""
    await ctx.send_message(text.upper())


@executor(id="reverse")
async def reverse(text: str, ctx: WorkflowContext[Never, str]) -> None:
    """Yield the text reversed."""
    await ctx.yield_output(text[::-1])


def make_echo() -> Workflow:
    """upper -> reverse: ``"hello"`` gives ``"OLLEH"``."""
    return WorkflowBuilder("echo").add_edge(upper, reverse).set_start(upper).build()


echo = make_echo()


@attrs.frozen
class Tally:
    """A non-JSON output type: printed as a JSON object."""

    word: str
    count: int


@executor(id="count")
async def count(order: dict[str, Any], ctx: WorkflowContext[Never, Any]) -> None:
    """Yield the order's items as a list, then a tally per item, then a plain string."""
    items: list[str] = order["items"]
    await ctx.yield_output(items)
    for word in sorted(set(items)):
        await ctx.yield_output(Tally(word, items.count(word)))
    await ctx.yield_output(f"{len(items)} items")


records = WorkflowBuilder("records").add_executor(count).set_start(count).build()


class Approval(Executor):
    """Asks a human whether to publish; yields the text when approved."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        """Keep the text and ask."""
        ctx.state["text"] = text
        await ctx.request_info({"question": "publish?", "text": text}, bool)

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        """Publish or withhold."""
        await ctx.yield_output(f"published: {ctx.state['text']}" if approved else "withheld")


gate = WorkflowBuilder("gate").add_executor(Approval("approval")).set_start("approval").build()


@executor(id="explode")
async def explode(text: str, ctx: WorkflowContext[Never, str]) -> None:
    """Always fails."""
    raise ConnectionError(f"the model endpoint hung up on {text!r}")


failing = WorkflowBuilder("failing").add_edge(upper, explode).set_start(upper).build()


@executor(id="again")
async def again(n: int, ctx: WorkflowContext[int]) -> None:
    """Counts up forever: only max_supersteps stops it."""
    await ctx.add_event({"n": n})
    await ctx.send_message(n + 1)


looping = WorkflowBuilder("looping").add_edge(again, again).set_start(again).build()

not_a_workflow = 42
builder = WorkflowBuilder("unbuilt").add_executor(count).set_start(count)


def needs_arguments(name: str) -> Workflow:
    """Not a valid TARGET: it takes an argument."""
    raise AssertionError("never called")


def returns_a_builder() -> WorkflowBuilder:
    """Not a valid TARGET: returns a builder, not a workflow."""
    return builder


def raises() -> Workflow:
    """Not a valid TARGET: raises."""
    raise RuntimeError("no model configured")


def chain1000() -> Workflow:
    """A chain of 1,000 executors, each adding one (no cycle: it ends by itself)."""

    def step(i: int) -> Executor:
        @executor(id=f"step{i}")
        async def add(n: int, ctx: WorkflowContext[int, int]) -> None:
            if i == 999:
                await ctx.yield_output(n + 1)
            else:
                await ctx.send_message(n + 1)

        return add

    steps = [step(i) for i in range(1000)]
    builder = WorkflowBuilder("chain1000").set_start(steps[0])
    for first, second in zip(steps, steps[1:]):
        builder.add_edge(first, second)
    return builder.build()


def ported() -> Workflow:
    """A concurrent shape: its ports (entry, dispatch_out, fan_in_in, aggregator_out)."""
    from plait_builders import ConcurrentBuilder

    @executor(id="left")
    async def left(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    @executor(id="right")
    async def right(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    return ConcurrentBuilder("ported").participants([left, right]).build()
