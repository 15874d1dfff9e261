"""Seed 001's own example and the semantics of the run context."""

from __future__ import annotations

from typing import Any

import anyio
import plait
import pytest
from dag_helpers import SEED, Recorder, seed, text
from plait import WorkflowContext
from plait_dag import DagRunError

pytestmark = pytest.mark.anyio

AGENTS = ("greeter-agent", "meal-agent", "glucose-agent", "feedback-agent")


@pytest.mark.parametrize(
    ("skip_meal", "skip_glucose", "visited"),
    [
        (False, False, ["greeter-agent", "meal-agent", "glucose-agent", "feedback-agent"]),
        (True, False, ["greeter-agent", "glucose-agent", "feedback-agent"]),
        (False, True, ["greeter-agent", "meal-agent", "feedback-agent"]),
        (True, True, ["greeter-agent", "feedback-agent"]),
    ],
)
async def test_the_seed_visits_the_right_nodes_for_each_flag_combination(
    skip_meal: bool, skip_glucose: bool, visited: list[str]
) -> None:
    recorder = Recorder()
    workflow = plait.load(text(SEED), executors=recorder.agents(*AGENTS))
    context = {
        "user_name": "Ada",
        "user_state": "calm",
        "session": 7,
        "flags": {"skip_meal": skip_meal, "skip_glucose": skip_glucose},
    }
    result = await workflow.run(context)
    assert recorder.visited == visited
    assert result.outputs == [context]  # no agent returned updates
    calls = dict(recorder.calls)
    if not skip_meal:
        # meal receives only what its incoming connection passes
        assert calls["meal-agent"] == {"user_name": "Ada", "user_state": "calm"}
    assert calls["greeter-agent"] == context  # the entry gets the whole input


async def test_flags_written_by_an_agent_decide_the_next_skip() -> None:
    # seed 001 writes flags.skip_meal: the greeter decides, the meal node is skipped
    recorder = Recorder()
    agents = recorder.agents(*AGENTS)
    agents["greeter-agent"] = recorder.agent(
        "greeter-agent", {"flags": {"skip_meal": True, "skip_glucose": False}}
    )
    agents["glucose-agent"] = recorder.agent("glucose-agent", {"glucose": 5.4})
    workflow = plait.load(text(SEED), executors=agents)
    result = await workflow.run({"user_name": "Ada", "user_state": "calm"})
    assert recorder.visited == ["greeter-agent", "glucose-agent", "feedback-agent"]
    (output,) = result.outputs
    assert output == {
        "user_name": "Ada",
        "user_state": "calm",
        "flags": {"skip_meal": True, "skip_glucose": False},
        "glucose": 5.4,
    }
    # a connection without context_passed passes the whole run context
    assert dict(recorder.calls)["feedback-agent"] == output


async def test_the_output_is_the_context_after_the_exit_node() -> None:
    recorder = Recorder()
    agents = {name: recorder.agent(name, {name: "done"}) for name in AGENTS}
    workflow = plait.load(text(SEED), executors=agents)
    result = await workflow.run({"flags": {}})
    assert result.outputs == [{"flags": {}, **{name: "done" for name in AGENTS}}]


async def test_an_agent_may_be_an_executor() -> None:
    @plait.executor
    async def greeter(ctx: dict[str, Any], wctx: WorkflowContext[dict[str, Any]]) -> None:
        await wctx.send_message({"greeting": f"hello {ctx['user_name']}"})

    recorder = Recorder()
    agents: dict[str, Any] = {**recorder.agents(*AGENTS), "greeter-agent": greeter}
    workflow = plait.load(text(SEED), executors=agents)
    result = await workflow.run({"user_name": "Ada", "flags": {"skip_meal": True}})
    assert result.outputs[0]["greeting"] == "hello Ada"


async def test_an_agent_mutating_its_context_changes_nothing_else() -> None:
    async def meddler(ctx: dict[str, Any]) -> dict[str, Any]:
        ctx["flags"]["skip_glucose"] = True  # its own copy
        return {}

    recorder = Recorder()
    agents = {**recorder.agents(*AGENTS), "greeter-agent": meddler}
    workflow = plait.load(text(SEED), executors=agents)
    context = {"flags": {"skip_meal": False, "skip_glucose": False}}
    result = await workflow.run(context)
    assert "glucose-agent" in recorder.visited
    assert context == {"flags": {"skip_meal": False, "skip_glucose": False}}
    assert result.outputs == [context]


async def test_an_agent_returning_something_else_than_a_dict_fails_naming_the_node() -> None:
    async def wrong(ctx: dict[str, Any]) -> Any:
        return ["not", "a", "dict"]

    agents = {**Recorder().agents(*AGENTS), "meal-agent": wrong}
    workflow = plait.load(text(SEED), executors=agents)
    with pytest.raises(DagRunError, match="node 'node-meal': agent 'meal-agent' returned a list"):
        await workflow.run({"flags": {}})


async def test_concurrent_runs_of_one_workflow_keep_their_contexts_apart() -> None:
    async def slow_echo(ctx: dict[str, Any]) -> dict[str, Any]:
        await anyio.sleep(0.01)
        return {"seen": ctx["user_name"]}

    agents = {**Recorder().agents(*AGENTS), "meal-agent": slow_echo}
    workflow = plait.load(text(SEED), executors=agents)
    outputs: dict[str, Any] = {}

    async def one(name: str) -> None:
        result = await workflow.run({"user_name": name, "user_state": "", "flags": {}})
        outputs[name] = result.outputs[0]["seen"]

    async with anyio.create_task_group() as tg:
        for name in ("ada", "bob", "cy", "dee"):
            tg.start_soon(one, name)
    assert outputs == {"ada": "ada", "bob": "bob", "cy": "cy", "dee": "dee"}


async def test_the_spec_round_trips_through_json_and_from_spec() -> None:
    recorder = Recorder()
    agents = recorder.agents(*AGENTS)
    spec = plait.load(text(SEED), executors=agents).spec
    again = plait.WorkflowSpec.from_json(spec.to_json())
    assert again == spec and again.signature() == spec.signature()
    rebuilt = plait.Workflow.from_spec(again, agents, allow_imports=False)
    result = await rebuilt.run({"flags": {"skip_meal": True}})
    assert recorder.visited == ["greeter-agent", "glucose-agent", "feedback-agent"]
    assert result.outputs == [{"flags": {"skip_meal": True}}]


async def test_a_skipped_exit_ends_the_run_with_the_context() -> None:
    document = seed()
    document["nodes"][3]["skip_condition"] = "done"
    recorder = Recorder()
    workflow = plait.load(text(document), executors=recorder.agents(*AGENTS))
    result = await workflow.run({"done": True, "flags": {"skip_meal": True, "skip_glucose": True}})
    assert recorder.visited == ["greeter-agent"]
    assert result.outputs == [{"done": True, "flags": {"skip_meal": True, "skip_glucose": True}}]


def test_load_detects_the_format_by_suffix_and_by_keys(tmp_path: Any) -> None:
    agents = Recorder().agents(*AGENTS)
    path = tmp_path / "seed.json"
    path.write_text(text(SEED))
    assert plait.load(path, executors=agents).name == "seed"
    assert plait.load(str(path), executors=agents).spec.start == "node-greeter"
    assert plait.load(text(SEED), executors=agents).spec.start == "node-greeter"
    assert plait.load(text(SEED), format="dag", executors=agents).spec.start == "node-greeter"
