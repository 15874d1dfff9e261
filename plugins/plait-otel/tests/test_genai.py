"""A span per model call after OpenTelemetry's GenAI semantic conventions (plait-llm's agent
through the metering seam), the totals on the invocation's span and a budget's limits on
the run's; checked with the SDK's in-memory exporter, on asyncio and trio."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from plait import Never, Workflow, WorkflowContext, executor
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder
from plait_llm import AgentKind

pytestmark = pytest.mark.anyio


class Reporting(llm.Model):
    """Answers "ok", reporting 3 tokens in and 7 out and a finish reason."""

    model_id = "otel-test-model"

    class Options(llm.Options):
        max_tokens: int | None = None

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
        response.set_usage(input=3, output=7)
        response.response_json = {"finish_reason": "stop"}
        yield "ok"


class Models:
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(Reporting())


@pytest.fixture(autouse=True)
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="otel-test-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)


def two_agents() -> Workflow:
    kind = AgentKind()
    a, b = (
        kind.create(
            {"model": "otel-test-model", "options": {"max_tokens": 20}}, BuildContext(node_id=i)
        )
        for i in ("a", "b")
    )

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    return WorkflowBuilder("agents").set_start(a).add_edge(a, b).add_edge(b, collect).build()


async def test_each_model_call_is_a_genai_span_inside_its_invocation(
    exporter: InMemorySpanExporter,
) -> None:
    result = await two_agents().run("hello")
    assert result.outputs == ["ok"]
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name == "chat otel-test-model"]
    assert len(calls) == 2
    by_id = {s.context.span_id: s for s in spans}
    for call in calls:
        attributes = dict(call.attributes or {})
        assert call.kind is SpanKind.CLIENT
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.request.model"] == "otel-test-model"
        assert attributes["gen_ai.request.max_tokens"] == 20
        assert attributes["gen_ai.response.model"] == "otel-test-model"
        assert attributes["gen_ai.usage.input_tokens"] == 3
        assert attributes["gen_ai.usage.output_tokens"] == 7
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
        assert attributes["plait.tool_calls"] == 0
        assert call.parent is not None
        parent = by_id[call.parent.span_id]
        assert parent.name in ("invoke a", "invoke b")
        assert dict(parent.attributes or {})["gen_ai.usage.output_tokens"] == 7
        assert dict(parent.attributes or {})["plait.model_calls"] == 1


async def test_a_budgeted_run_carries_its_limits_and_a_refused_call_has_no_span(
    exporter: InMemorySpanExporter,
) -> None:
    from plait_budgets import Budget

    result = await two_agents().run(
        "hello", budget=Budget(model_calls=1, tokens=500), raise_on_failure=False
    )
    assert result.error is not None
    spans = exporter.get_finished_spans()
    run = next(s for s in spans if s.name == "workflow agents")
    assert dict(run.attributes or {})["plait.budget_model_calls"] == 1.0
    assert dict(run.attributes or {})["plait.budget_tokens"] == 500.0
    calls = [s for s in spans if s.name.startswith("chat ")]
    assert len(calls) == 1  # b's call was refused before it started: no span
    failed = next(s for s in spans if s.name == "invoke b")
    assert failed.status.status_code is StatusCode.ERROR
    assert "BudgetExceededError" in (failed.status.description or "")


async def test_a_model_call_in_a_nested_run_is_one_span_under_the_inner_invocation(
    exporter: InMemorySpanExporter,
) -> None:
    """The nesting invocation and the nested run's invocation are both traced, but a call
    is the inner invocation's: one span, its totals on the inner span, none on the outer."""

    @executor(id="start")
    async def start(value: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(value)

    @executor(id="done")
    async def done(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    outer = (
        WorkflowBuilder("outer")
        .set_start(start)
        .add_edge(start, two_agents().as_executor("team"))
        .add_edge("team", done)
        .build()
    )
    result = await outer.run("hello")
    assert result.outputs == ["ok"]
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name == "chat otel-test-model"]
    assert len(calls) == 2  # one per call of the two inner agents, not one per traced level
    by_id = {s.context.span_id: s for s in spans}
    assert sorted(by_id[c.parent.span_id].name for c in calls if c.parent) == [
        "invoke a",
        "invoke b",
    ]
    (team,) = [s for s in spans if s.name == "invoke team"]
    assert "plait.model_calls" not in dict(team.attributes or {})
