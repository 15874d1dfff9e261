"""SequentialBuilder and ConcurrentBuilder: alone, and composed as fragments."""

from __future__ import annotations

from typing import Any

import pytest
from plait import Executor, Never, WorkflowContext, executor, handler
from plait_builders import (
    CompositionError,
    ConcurrentBuilder,
    ConnectionMixin,
    SequentialBuilder,
    WorkflowBuilder,
    WorkflowConnection,
)

pytestmark = pytest.mark.anyio


@executor(id="upper")
async def upper(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.upper())


@executor(id="reverse")
async def reverse(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text[::-1])


@executor(id="length")
async def length(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(str(len(text)))


@executor(id="show")
async def show(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
    await ctx.yield_output(value)


async def test_sequential_alone_yields_what_the_last_participant_sends() -> None:
    workflow = SequentialBuilder("seq").participants([upper, reverse]).build()
    assert workflow.spec.node_ids == ("upper", "reverse", "output")
    assert (await workflow.run("abc")).outputs == ["CBA"]


async def test_sequential_whose_last_participant_yields_needs_no_output_node() -> None:
    workflow = SequentialBuilder().participants([upper, show]).build()
    assert workflow.spec.node_ids == ("upper", "show")
    assert (await workflow.run("abc")).outputs == ["ABC"]


async def test_sequential_as_a_fragment_sends_on_from_its_last_participant() -> None:
    builder = WorkflowBuilder()
    seq = builder.add_workflow(SequentialBuilder("seq").participants([upper, reverse]))
    assert [p.executor_id for p in seq.outputs] == ["seq/reverse"]
    builder.connect(seq, show).set_start(seq.start)
    assert (await builder.build().run("abc")).outputs == ["CBA"]


async def test_concurrent_default_aggregator_yields_the_list_in_participant_order() -> None:
    workflow = ConcurrentBuilder("fan").participants([upper, reverse, length]).build()
    assert workflow.spec.start == "dispatch"
    assert workflow.spec.node("dispatch").input_types == ("str",)
    assert workflow.spec.node("aggregate").workflow_output_types == ("list[str]",)
    assert (await workflow.run("abc")).outputs == [["ABC", "cba", "3"]]


async def test_concurrent_with_a_function_aggregator() -> None:
    def pick(results: list[str]) -> str:
        return "+".join(results)

    async def apick(results: list[str]) -> str:
        return "|".join(results)

    for fn, expected in ((pick, "ABC+cba"), (apick, "ABC|cba")):
        workflow = ConcurrentBuilder().participants([upper, reverse]).aggregator(fn).build()
        assert workflow.spec.node("aggregate").workflow_output_types == ("str",)
        assert (await workflow.run("abc")).outputs == [expected]


async def test_concurrent_with_an_executor_aggregator_and_another_merge() -> None:
    class Join(Executor):
        @handler
        async def join(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
            await ctx.yield_output(f"[{text}]")

    workflow = (
        ConcurrentBuilder()
        .participants([upper, reverse])
        .aggregator(Join("join"), merge="concat")
        .build()
    )
    assert (await workflow.run("ab")).outputs == ["[AB ba]"]  # concat joins with a space


async def test_concurrent_as_a_fragment_sends_its_result_on() -> None:
    analysis = ConcurrentBuilder("analysis").participants([upper, length])
    builder = WorkflowBuilder()
    handle = builder.add_workflow(analysis)
    assert handle.start.executor_id == "analysis/dispatch"
    assert [p.executor_id for p in handle.outputs] == ["analysis/aggregate"]
    assert handle.outputs[0].output_types == (list[str],)
    builder.connect(reverse, handle).connect(handle, show).set_start(reverse)
    assert (await builder.build().run("abc")).outputs == [["CBA", "3"]]


async def test_a_concurrent_fragment_twice_with_an_attached_post_step() -> None:
    analysis = ConcurrentBuilder().participants([upper, reverse]).aggregator(" & ".join)
    builder = WorkflowBuilder()
    first = builder.add_workflow(analysis)
    second = builder.add_workflow(analysis)
    assert (first.prefix, second.prefix) == ("fragment-1", "fragment-2")
    builder.connect(first, second).connect(second, show).set_start(first.start)
    assert (await builder.build().run("ab")).outputs == ["AB & BA & ab & BA"]


def test_a_built_high_level_workflow_whose_end_only_yields_is_not_connectable() -> None:
    workflow = ConcurrentBuilder("fan").participants([upper]).build()
    builder = WorkflowBuilder()
    handle = builder.add_workflow(workflow)
    with pytest.raises(CompositionError, match=r"as_executor"):
        builder.connect(handle, show)


def test_every_builder_shares_the_connection_mixin() -> None:
    builders: list[ConnectionMixin] = [
        WorkflowBuilder("w").add_edge(upper, show).set_start(upper),
        SequentialBuilder("s").participants([upper, reverse]),
        ConcurrentBuilder("c").participants([upper, reverse]),
    ]
    for builder in builders:
        assert isinstance(builder, ConnectionMixin)
        connection = builder.as_connection("p")
        assert isinstance(connection, WorkflowConnection)
        assert connection.prefix == "p" and connection.name == builder.name
        assert connection.contract.input_types == (str,)


def test_participants_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one participant"):
        SequentialBuilder().participants([])
    with pytest.raises(ValueError, match="share the id"):
        ConcurrentBuilder().participants([upper, upper])
    with pytest.raises(TypeError, match="Executor or an async function"):
        SequentialBuilder().participants([len])
    with pytest.raises(ValueError, match=r"call participants\(\[...\]\) first"):
        SequentialBuilder().build()
    with pytest.raises(TypeError, match="aggregator must be"):
        ConcurrentBuilder().aggregator(42)  # type: ignore[arg-type]


async def test_async_functions_are_participants() -> None:
    async def shout(text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text + "!")

    workflow = SequentialBuilder().participants([shout, upper]).build()
    assert (await workflow.run("hey")).outputs == ["HEY!"]
