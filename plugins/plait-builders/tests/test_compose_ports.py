"""Ports (the design's option 4), ``Workflow.as_connection`` and fragment contracts."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import Never, PortSpec, UnknownNameError, WorkflowContext, WorkflowSpec, executor
from plait_builders import (
    CompositionError,
    ConcurrentBuilder,
    Contract,
    Fragment,
    SequentialBuilder,
    WorkflowBuilder,
    WorkflowConnection,
    list_fragments,
)


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.upper())


@executor(id="whisper")
async def whisper(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.lower())


@executor(id="count")
async def count(parts: list[str], ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(len(parts))


@executor(id="publish")
async def publish(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(f"published: {text}")


@executor(id="total")
async def total(n: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(n)


def joined(parts: list[str]) -> str:
    return " / ".join(parts)


def test_the_high_level_builders_declare_the_designs_ports() -> None:
    concurrent = ConcurrentBuilder("analysis").participants([shout, whisper]).aggregator(joined)
    assert {name: (p.executor, p.direction) for name, p in concurrent.ports.items()} == {
        "entry": ("dispatch", "in"),
        "dispatch_out": ("dispatch", "out"),
        "fan_in_in": ("aggregate", "in"),
        "aggregator_out": ("aggregate", "out"),
    }
    assert concurrent.ports["fan_in_in"] == PortSpec(
        "fan_in_in", "aggregate", "in", ("list[str]",), "aggregate"
    )
    assert concurrent.ports["aggregator_out"].types == ("str",)
    sequential = SequentialBuilder("chain").participants([shout, whisper])
    assert {name: (p.executor, p.direction) for name, p in sequential.ports.items()} == {
        "entry": ("shout", "in"),
        "input_normalizer_out": ("shout", "out"),
        "final_conversation_out": ("whisper", "out"),
    }
    # ports are part of the contract and of the built workflow's spec (not its topology)
    assert concurrent.contract.ports == tuple(concurrent.ports.values())
    built = concurrent.build()
    assert [p.name for p in built.spec.ports] == list(concurrent.ports)
    assert WorkflowSpec.from_json(built.spec.to_json(portable=False)).ports == built.spec.ports
    unported = WorkflowBuilder("plain").add_edge(shout, publish).set_start(shout).build()
    assert "ports" not in unported.spec.to_dict()  # a spec without ports reads as before


def test_a_step_attaches_after_the_aggregator_through_its_port() -> None:
    """The seed's requirement: add a post-aggregator executor to ConcurrentBuilder."""
    analysis = ConcurrentBuilder("analysis").participants([shout, whisper]).aggregator(joined)
    builder = WorkflowBuilder()
    handle = builder.add_workflow(analysis)
    builder.connect(handle.port("aggregator_out"), publish)
    builder.connect(handle.port("dispatch_out"), count, adapter=lambda text: [text])
    builder.connect(count, total)
    builder.set_start(handle.port("entry"))
    workflow = builder.build()
    assert sorted(workflow.run_sync("Hi").outputs, key=str) == [1, "published: HI / hi"]
    assert [p.name for p in workflow.spec.ports][:2] == ["analysis/entry", "analysis/dispatch_out"]
    # the port-qualified form of the seed: (fragment prefix, port name)
    again = WorkflowBuilder()
    again_handle = again.add_workflow(analysis)
    again.connect(("analysis", "aggregator_out"), publish).set_start(("analysis", "entry"))
    assert again.build().run_sync("Hi").outputs == ["published: HI / hi"]
    assert again.port("analysis/aggregator_out") == again_handle.port("aggregator_out")


def test_connecting_ports_the_wrong_way_or_with_other_semantics_is_an_error() -> None:
    analysis = ConcurrentBuilder("analysis").participants([shout, whisper])
    builder = WorkflowBuilder()
    handle = builder.add_workflow(analysis)
    with pytest.raises(CompositionError, match="cannot connect from port 'analysis/fan_in_in'"):
        builder.connect(handle.port("fan_in_in"), publish)
    with pytest.raises(CompositionError, match="cannot connect to port 'analysis/dispatch_out'"):
        builder.connect(shout, handle.port("dispatch_out"))
    with pytest.raises(CompositionError, match="has no port 'nope'; its ports: aggregator_out"):
        handle.port("nope")
    with pytest.raises(CompositionError, match="no port 'analysis/nope'"):
        builder.connect(("analysis", "nope"), publish)
    tagged = WorkflowBuilder("tagged").add_executor(shout).set_start(shout)
    tagged.add_port("said", shout, "out", semantics="conversation")
    other = builder.add_workflow(tagged)
    with pytest.raises(
        CompositionError, match="carries 'conversation' but port .* takes 'aggregate'"
    ):
        builder.connect(other.port("said"), handle.port("fan_in_in"))


def test_add_port_checks_what_it_is_given() -> None:
    builder = WorkflowBuilder().add_executor(shout)
    builder.add_port("out", shout, "out")
    with pytest.raises(CompositionError, match="port 'out' is already declared"):
        builder.add_port("out", shout, "out")
    with pytest.raises(CompositionError, match="without '/'"):
        builder.add_port("a/b", shout, "out")
    with pytest.raises(ValueError, match="direction must be 'in' or 'out', got 'up'"):
        builder.add_port("up", shout, "up")
    bad = WorkflowSpec(
        "w", "shout", (plait.NodeSpec("shout"),), (), ports=[PortSpec("p", "gone", "in")]
    )
    assert "port 'p' names unknown executor 'gone'" in bad.problems()
    with pytest.raises(ValueError, match="PortSpec.direction must be 'in' or 'out'"):
        PortSpec("p", "x", "sideways")


def test_ports_nest_with_their_fragment_prefix() -> None:
    analysis = ConcurrentBuilder("analysis").participants([shout, whisper]).aggregator(joined)
    inner = WorkflowBuilder("inner")
    inner_handle = inner.add_workflow(analysis)
    inner.set_start(inner_handle.start)
    outer = WorkflowBuilder()
    outer_handle = outer.add_workflow(inner, prefix="outer")
    point = outer_handle.port("analysis/aggregator_out")
    assert point.executor_id == "outer/analysis/aggregate"
    assert outer.ports["outer/analysis/aggregator_out"].executor == "outer/analysis/aggregate"
    outer.connect(point, publish).set_start(outer_handle.start)
    assert outer.build().run_sync("Yo").outputs == ["published: YO / yo"]


def test_a_built_workflow_is_a_connection_with_its_ports() -> None:
    """``Workflow.as_connection`` (the kernel asks plait-builders through its hook)."""
    analysis = ConcurrentBuilder("analysis").participants([shout, whisper]).aggregator(joined)
    workflow = analysis.to_builder().build()
    connection = workflow.as_connection()
    assert isinstance(connection, WorkflowConnection)
    assert (connection.name, connection.prefix, connection.start) == ("analysis", None, "dispatch")
    assert connection.outputs == ("aggregate",)
    assert [p.name for p in connection.contract.ports] == list(analysis.ports)
    assert workflow.as_connection("again").prefix == "again"
    builder = WorkflowBuilder()
    first = builder.add_workflow(connection)  # prefix: the workflow's name
    second = builder.add_workflow(workflow.as_connection("again"))
    builder.connect(first.port("aggregator_out"), second.port("entry"))
    builder.connect(second.port("aggregator_out"), publish).set_start(first.start)
    assert builder.build().run_sync("Ab").outputs == ["published: AB / AB / ab / ab"]
    # the built workflow is untouched; cloning twice gives independent copies
    assert workflow.spec.node_ids == ("dispatch", "shout", "whisper", "aggregate")
    assert connection.builder._executors["shout"] is not builder._executors["analysis/shout"]


def test_as_connection_without_the_builders_plugin_names_it() -> None:
    from plait_testing import make_plugin_manager

    bare = make_plugin_manager()
    workflow = WorkflowBuilder("w", plugin_manager=bare).add_executor(publish).set_start(publish)
    built = workflow.build()
    with pytest.raises(UnknownNameError, match="none implements plait_workflow_as_connection"):
        built.as_connection()


def test_output_semantics_travel_in_the_contract_and_the_listing(
    register_plugin: Any,
) -> None:
    builder = WorkflowBuilder("talk", output_semantics="conversation")
    builder.add_executor(shout).set_start(shout)
    assert builder.contract.output_semantics == ("conversation",)
    assert Contract(output_semantics=("summary", "short")).describe()["output_semantics"] == [
        "summary",
        "short",
    ]
    with pytest.raises(TypeError, match="a semantics tag must be a non-empty string"):
        WorkflowBuilder(output_semantics=[""])

    def analysis() -> Any:
        return ConcurrentBuilder("analysis", output_semantics=("aggregate",)).participants(
            [shout, whisper]
        )

    declared = Fragment(
        "test.analysis", analysis, version="1", output_semantics=["summary"], description="d"
    )
    derived = Fragment("test.derived", analysis, version="1")

    class Publishes:
        @plait.hookimpl
        def plait_register_fragments(self, register: Any) -> None:
            register(declared.name, declared)
            register(derived.name, derived)

    register_plugin(Publishes(), "publishes")
    infos = {info.name: info.to_dict() for info in list_fragments()}
    assert infos["test.analysis"]["output_semantics"] == ["summary"]
    assert infos["test.derived"]["output_semantics"] == ["aggregate"]
    ports = infos["test.analysis"]["ports"]
    assert [p["name"] for p in ports] == ["entry", "dispatch_out", "fan_in_in", "aggregator_out"]
    assert ports[2] == {
        "name": "fan_in_in",
        "executor": "aggregate",
        "direction": "in",
        "types": ["list[str]"],
        "semantics": "aggregate",
    }
