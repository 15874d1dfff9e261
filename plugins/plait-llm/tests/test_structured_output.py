"""``structured_output`` with fake models: through llm's schema API for a model that has one,
by instruction (JSON asked for in the prompt, a fenced block tolerated) for a model that has
none; validation against the schema; one corrective retry in the same conversation; a clear
error naming the agent and the JSON path after a second failure; conditions on a field in
YAML steps."""

from __future__ import annotations

import json
from typing import Any

import plait
import pytest
from llm_script import Script
from plait import CustomEvent, ExecutorFailedError, Never, Workflow, WorkflowContext, executor
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder
from plait_llm import AgentError, AgentExecutor, AgentKind
from plait_llm._structured import answer_problem, parse_answer

pytestmark = pytest.mark.anyio
KIND = AgentKind()
REVIEW = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
    "required": ["title", "score"],
}


def build(model: str, schema: dict[str, Any] = REVIEW, **config: Any) -> AgentExecutor:
    ctx = BuildContext(node_id="reviewer")
    full = {"model": model, "structured_output": schema, **config}
    assert KIND.check(full, ctx) == []
    made = KIND.create(full, ctx)
    assert isinstance(made, AgentExecutor)
    return made


def chain(node: AgentExecutor) -> Workflow:
    @executor(id="collect")
    async def collect(value: dict[str, Any], ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    return WorkflowBuilder("review").add_edge(node, collect).set_start(node).build()


async def test_a_model_with_schema_support_gets_the_schema_through_llms_api(
    script: Script,
) -> None:
    script.answers = ['{"title": "Tides", "score": 4}']
    node = build("plait-test-scripted-schema")
    assert node.uses_schema_api
    assert (await chain(node).run("Review: tides")).outputs == [{"title": "Tides", "score": 4}]
    (seen,) = script.seen
    # the schema went through llm's API, and the prompt is the user's alone
    assert seen.schema == REVIEW and seen.prompt == "Review: tides"


async def test_the_echo_model_answers_its_schema_prompt_as_a_dict() -> None:
    schema = {"type": "object", "properties": {"prompt": {"type": "string"}}}
    node = build("plait-test-echo", schema, system="S")
    (answer,) = (await chain(node).run("q")).outputs
    assert answer == {"prompt": "q", "system": "S"}


async def test_a_model_without_schema_support_is_asked_for_json_in_its_prompt(
    script: Script,
) -> None:
    script.answers = ['Here you are:\n```json\n{"title": "Tides", "score": 4}\n```\nEnjoy!']
    node = build("plait-test-scripted", instruction="Review {{ input }}.")
    assert not node.uses_schema_api
    assert (await chain(node).run("tides")).outputs == [{"title": "Tides", "score": 4}]
    (seen,) = script.seen
    assert seen.schema is None
    prompt, asked = seen.prompt.split("\n\n", 1)
    assert prompt == "Review tides."
    assert asked.startswith("Answer with only a JSON object that matches this JSON Schema")
    assert asked.endswith(json.dumps(REVIEW))


async def test_a_wrong_answer_gets_one_corrective_retry_in_the_same_conversation(
    script: Script,
) -> None:
    script.answers = ['{"title": "Tides", "score": -1}', '{"title": "Tides", "score": 1}']
    node = build("plait-test-scripted")
    result = await chain(node).run("tides", events="all")
    assert result.outputs == [{"title": "Tides", "score": 1}]
    retries = [e.data for e in result.events if isinstance(e, CustomEvent)]
    assert retries == [{"structured_output_retry": "at $.score: -1 is less than the minimum of 0"}]
    first, retry = script.seen
    assert (first.history, retry.history) == (0, 1)  # the retry sees the first exchange
    assert retry.prompt.startswith(
        "Your answer could not be used: at $.score: -1 is less than the minimum of 0."
    )
    assert retry.prompt.endswith(json.dumps(REVIEW))


async def test_text_that_is_not_json_is_retried_with_what_was_wrong(script: Script) -> None:
    script.answers = ["I liked it a lot.", '{"title": "T", "score": 2}']
    node = build("plait-test-scripted-schema")
    assert (await chain(node).run("tides")).outputs == [{"title": "T", "score": 2}]
    retry = script.seen[1]
    assert "the answer is not JSON: 'I liked it a lot.'" in retry.prompt
    assert retry.schema == REVIEW  # the retry uses the schema API too


async def test_a_second_failure_names_the_agent_the_model_and_the_json_path(
    script: Script,
) -> None:
    script.answers = ['{"title": 3, "score": 1}', '{"title": "Tides"}']
    with pytest.raises(ExecutorFailedError) as info:
        await chain(build("plait-test-scripted")).run("tides")
    cause = info.value.__cause__
    assert isinstance(cause, AgentError)
    assert (cause.executor_id, cause.model_id) == ("reviewer", "plait-test-scripted")
    assert str(cause) == (
        "agent 'reviewer' (model 'plait-test-scripted'): the answer does not match "
        "structured_output, after one corrective retry: at $: 'score' is a required property "
        "(first answer: at $.title: 3 is not of type 'string')"
    )
    assert len(script.seen) == 2  # one retry, no more


async def test_a_json_list_is_not_the_object_the_schema_asks_for() -> None:
    node = build("plait-test-list", {"type": "object"})
    with pytest.raises(AgentError, match=r"at \$: \[1, 2\] is not of type 'object'"):
        await node.ask("q")


async def test_a_good_first_answer_is_not_retried(script: Script) -> None:
    script.answers = ['{"title": "A", "score": 0}', "never asked"]
    assert await build("plait-test-scripted").ask("q") == {"title": "A", "score": 0}
    assert script.answers == ["never asked"]


def test_the_schema_must_describe_an_object() -> None:
    found = KIND.check(
        {"model": "plait-test-scripted", "structured_output": {"type": "array"}},
        BuildContext(node_id="reviewer"),
    )
    assert [(e.path, "must be 'object', not 'array'" in str(e)) for e in found] == [
        ("/config/structured_output/type", True)
    ]


def test_an_invalid_schema_is_an_error_at_its_path() -> None:
    schema = {"type": "object", "properties": {"score": {"minimum": "zero"}}}
    (error,) = KIND.check(
        {"model": "plait-test-scripted", "structured_output": schema},
        BuildContext(node_id="reviewer"),
    )
    assert error.path == "/config/structured_output/properties/score/minimum"
    assert "not a JSON Schema" in str(error)


@pytest.mark.parametrize(
    ("answer", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": 1}\n', {"a": 1}),
        ('```json\n{"a": [1, 2]}\n```', {"a": [1, 2]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('```json\n{"a": 1}', {"a": 1}),  # a fence the model never closed
        ('Sure! {"a": {"b": 2}} Hope it helps.', {"a": {"b": 2}}),
    ],
)
def test_answers_are_parsed_tolerantly(answer: str, value: Any) -> None:
    assert parse_answer(answer) == (value, None)


def test_an_answer_without_json_says_so_and_quotes_it_briefly() -> None:
    value, problem = parse_answer("x" * 500)
    assert value is None and problem is not None
    assert problem.startswith("the answer is not JSON: 'xxx") and problem.endswith("…'")
    assert len(problem) < 250


def test_the_problem_names_the_deepest_json_path() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    assert (
        answer_problem({"items": [1, "two"]}, schema)
        == "at $.items[1]: 'two' is not of type 'integer'"
    )
    assert answer_problem({"items": [1, 2]}, schema) is None


QA = """
agents:
  checker:
    model: plait-test-scripted
    structured_output:
      type: object
      properties: {is_approved: {type: boolean}}
      required: [is_approved]
workflow:
  - id: qa
    type: agent
    name: checker
  - id: gate
    type: condition
    condition: "{{ $steps.qa.output.is_approved }}"
    true:
      - {id: shipping, type: agent, name: ship}
    false:
      - {id: fixing, type: agent, name: fix}
"""


@pytest.mark.parametrize(("approved", "route"), [(True, "shipped"), (False, "fixed")])
async def test_a_steps_condition_routes_on_a_field_of_the_structured_answer(
    script: Script, approved: bool, route: str
) -> None:
    async def ship(prompt: str) -> str:
        return "shipped"

    async def fix(prompt: str) -> str:
        return "fixed"

    script.answers = [json.dumps({"is_approved": approved})]
    workflow = plait.load(QA, format="steps", executors={"ship": ship, "fix": fix}, allow="network")
    assert (await workflow.run("draft")).outputs == [route]
