"""The ``agent`` kind with fake llm models: text, templates, streamed tokens as custom
events, config errors at their JSON paths; on asyncio and trio. Structured output is in
test_structured_output.py, the real local model in test_smollm2.py."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import (
    ConfigError,
    CustomEvent,
    Executor,
    Never,
    Workflow,
    WorkflowContext,
    executor,
)
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder
from plait_llm import AgentExecutor, AgentKind

pytestmark = pytest.mark.anyio
KIND = AgentKind()


def build(config: dict[str, Any], node_id: str = "writer") -> AgentExecutor:
    ctx = BuildContext(node_id=node_id)
    assert KIND.check(config, ctx) == []
    made = KIND.create(config, ctx)
    assert isinstance(made, AgentExecutor) and made.id == node_id
    return made


def chain(node: Executor) -> Workflow:
    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    return WorkflowBuilder("agents").add_edge(node, collect).set_start(node).build()


def errors(config: dict[str, Any]) -> list[tuple[str | None, str]]:
    return [(e.path, str(e)) for e in KIND.check(config, BuildContext(node_id="writer"))]


async def test_a_workflow_with_an_agent_node_returns_the_models_text() -> None:
    result = await chain(build({"model": "plait-test-echo"})).run("hello there")
    assert result.outputs == ["hello there"]


async def test_the_kind_is_registered_and_built_from_a_spec() -> None:
    assert "agent" in plait.get_plugin_manager().registry("executor_kind").names()
    spec = plait.WorkflowSpec(
        name="one agent",
        start="writer",
        nodes=(
            plait.NodeSpec("writer", kind="agent", config={"model": "echo", "system": "Be brief."}),
            plait.NodeSpec("collect"),
        ),
        edge_groups=(
            plait.EdgeGroupSpec("direct:writer->collect", "direct", ("writer",), ("collect",)),
        ),
    )

    @executor(id="collect")
    async def collect(value: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(value)

    workflow = plait.Workflow.from_spec(spec, {"collect": collect})
    assert (await workflow.run("hi")).outputs == ["system: Be brief. | hi"]


async def test_the_model_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")
    node = build({})
    assert node.model_id == "plait-test-plain"
    assert (await chain(node).run("x")).outputs == ["plain: x"]


async def test_the_instruction_template_is_rendered_over_the_input() -> None:
    node = build(
        {
            "model": "plait-test-echo",
            "instruction": "Translate {{ input.text }} to {{ input.lang }}",
        }
    )
    result = await chain(node).run({"text": "cat", "lang": "French"})
    assert result.outputs == ["Translate cat to French"]


async def test_a_json_value_without_instruction_is_rendered_as_json() -> None:
    result = await chain(build({"model": "plait-test-plain"})).run({"a": [1, "é"]})
    assert result.outputs == ['plain: {"a": [1, "é"]}']


async def test_options_reach_the_model() -> None:
    node = build({"model": "plait-test-echo", "options": {"suffix": "!"}})
    assert (await chain(node).run("go")).outputs == ["go!"]


async def test_streamed_tokens_are_custom_events_in_order() -> None:
    node = build({"model": "plait-test-echo"})
    result = await chain(node).run("one two three", events="all")
    tokens = [e.data["token"] for e in result.events if isinstance(e, CustomEvent)]
    assert tokens == ["one ", "two ", "three"]
    assert all(e.executor_id == "writer" for e in result.events if isinstance(e, CustomEvent))
    assert result.outputs == ["one two three"]


async def test_a_model_that_does_not_stream_emits_no_token_events() -> None:
    result = await chain(build({"model": "plait-test-plain"})).run("x", events="all")
    assert [e for e in result.events if isinstance(e, CustomEvent)] == []


def test_bad_configs_give_every_problem_at_its_json_path() -> None:
    found = errors({"modle": "x", "system": 3, "options": []})
    assert [p for p, _ in found] == ["/config/modle", "/config/options", "/config/system"]
    assert "did you mean 'model'" in found[0][1]


def test_no_model_and_no_environment_is_an_error() -> None:
    ((path, message),) = errors({"system": "s"})
    assert path == "/config/model" and "PLAIT_LLM_MODEL" in message


def test_an_unknown_model_names_the_closest_one() -> None:
    ((path, message),) = errors({"model": "plait-test-ecko"})
    assert path == "/config/model"
    assert "did you mean 'plait-test-echo'" in message


def test_bad_instruction_options_and_schema_are_reported_together() -> None:
    found = errors(
        {
            "model": "plait-test-echo",
            "instruction": "{{ input. }}",
            "options": {"suffix": 3, "colour": "red"},
            "structured_output": {"type": "nonsense"},
        }
    )
    paths = sorted(p or "" for p, _ in found)
    assert paths == [
        "/config/instruction",
        "/config/options/colour",
        "/config/options/suffix",
        "/config/structured_output/type",
    ]


def test_create_raises_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        KIND.create({"model": "nope-model"}, BuildContext(node_id="writer"))
    assert info.value.path == "/config/model"
