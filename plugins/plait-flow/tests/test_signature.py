"""A flow compiles to the same topology signature as the same graph built with
WorkflowBuilder (the builder given the same nodes, the flow's output node included)."""

from __future__ import annotations

from typing import Any

import plait
from flow_agents import AGENTS
from plait import FunctionExecutor, InvocationFailure
from plait_builders import Case, WorkflowBuilder
from plait_flow import FlowJoin, FlowOutput


def node(name: str, node_id: str | None = None) -> FunctionExecutor:
    return FunctionExecutor(AGENTS[name], id=node_id or name)


def load(flow: str, **options: Any) -> plait.Workflow:
    return plait.load(flow, format="flow", executors=AGENTS, **options)


def test_the_seed_flow_equals_the_builder_graph() -> None:
    flow = load("researcher -> [analyzer, summarizer] -> writer", merge="concat_newline")
    researcher, analyzer, summarizer, writer = (
        node(n) for n in ("researcher", "analyzer", "summarizer", "writer")
    )
    built = (
        WorkflowBuilder()
        .set_start(researcher)
        .add_fan_out(researcher, [analyzer, summarizer])
        .add_fan_in([analyzer, summarizer], writer, merge="concat_newline")
        .add_edge(writer, FlowOutput("flow:output"))
        .build()
    )
    assert flow.signature() == built.signature() == flow.spec.signature()
    assert flow.spec.topology() == built.spec.topology()


def test_a_richer_flow_equals_the_builder_graph() -> None:
    async def fallback(failure: InvocationFailure) -> str:
        return failure.error

    text = (
        "[critic, editor] by concat(separator=' | ') -> writer -error-> fallback"
        " -> (size(message) > 3 ? analyzer : summarizer) -> writer"
    )
    flow = plait.load(text, format="flow", executors={**AGENTS, "fallback": fallback})
    start, output = FlowJoin("flow:start"), FlowOutput("flow:output")
    critic, editor, writer, analyzer, summarizer = (
        node(n) for n in ("critic", "editor", "writer", "analyzer", "summarizer")
    )
    writer2 = node("writer", "writer#2")
    handler = FunctionExecutor(fallback, id="fallback")
    built = (
        WorkflowBuilder(type_check=False)
        .set_start(start)
        .add_fan_out(start, [critic, editor])
        .add_fan_in([critic, editor], writer, merge="concat", separator=" | ")
        .add_error_edge(writer, handler)
        .add_switch(writer, [Case("size(message) > 3", analyzer)], default=summarizer)  # type: ignore[arg-type]
        .add_switch(handler, [Case("size(message) > 3", analyzer)], default=summarizer)  # type: ignore[arg-type]
        .add_edge(analyzer, writer2)
        .add_edge(summarizer, writer2)
        .add_edge(writer2, output)
        .build()
    )
    assert flow.spec.topology() == built.spec.topology()
    assert flow.signature() == built.signature()
    assert flow.run_sync("x").outputs == built.run_sync("x").outputs


def test_different_flows_have_different_signatures() -> None:
    assert load("researcher -> writer").signature() != load("writer -> researcher").signature()
    assert (
        load("[analyzer, summarizer]", merge="concat").signature()
        != load("[analyzer, summarizer]", merge="first").signature()
    )
