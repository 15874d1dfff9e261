"""Seed 002's scenarios, with the seed's YAML verbatim, run on asyncio and trio."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import anyio
import plait
import pytest
from plait.errors import WorkflowRunError
from plait_steps import LoopLimitError, step_context

pytestmark = pytest.mark.anyio

SEQUENTIAL = """
workflow:
  - type: agent
    name: generator
  - type: agent
    name: translator
  - type: agent
    name: publisher
"""

LOOP = """
workflow:
  - id: gen
    type: agent
    name: generator
  - id: trans
    type: agent
    name: translator
  - id: qa_check
    type: condition
    name: qa_check
    condition: "{{ $steps.qa.output.is_approved }}"
    true:
      - type: agent
        name: publisher
    false:
      - id: back_to_trans
        type: agent
        name: translator
  - id: qa
    type: agent
    name: qa_agent
"""

PARALLEL = """
workflow:
  - type: parallel
    id: par_gen
    steps:
      - id: gen_1
        type: agent
        name: generator
      - id: gen_2
        type: agent
        name: generator
  - type: agent
    name: translator
"""

NESTED = """
workflow:
  - type: parallel
    id: outer
    steps:
      - type: agent
        name: generator
      - type: parallel
        id: inner
        steps:
          - type: agent
            name: researcher
          - type: agent
            name: summarizer
  - type: agent
    name: publisher
"""


class Agents:
    """Recording agents: each returns ``"<name> <call number>"`` and keeps its prompts."""

    def __init__(self, *names: str) -> None:
        self.calls: Counter[str] = Counter()
        self.prompts: dict[str, list[str]] = {}
        self.executors: dict[str, Any] = {name: self.agent(name) for name in names}

    def agent(self, name: str) -> Any:
        async def run(prompt: str) -> str:
            self.calls[name] += 1
            self.prompts.setdefault(name, []).append(prompt)
            return f"{name} {self.calls[name]}"

        return run


async def test_sequential_steps_see_the_exact_prior_outputs_block() -> None:
    agents = Agents("generator", "translator", "publisher")
    workflow = plait.load(SEQUENTIAL, format="steps", executors=agents.executors)
    result = await workflow.run("Translate and publish this draft")
    assert result.outputs == ["publisher 1"]
    assert agents.prompts["generator"] == ["Translate and publish this draft"]
    assert agents.prompts["translator"] == [
        "--- Prior Step Outputs ---\n"
        "\n"
        "[step-1 (agent: generator)]:\n"
        "generator 1\n"
        "\n"
        "--- End Prior Step Outputs ---\n"
        "\n"
        "Translate and publish this draft"
    ]
    assert agents.prompts["publisher"] == [
        "--- Prior Step Outputs ---\n"
        "\n"
        "[step-1 (agent: generator)]:\n"
        "generator 1\n"
        "\n"
        "[step-2 (agent: translator)]:\n"
        "translator 1\n"
        "\n"
        "--- End Prior Step Outputs ---\n"
        "\n"
        "Translate and publish this draft"
    ]
    context = step_context(result)
    assert context is not None and result.shared["step_context"] == context  # shared state
    assert context["order"] == ["step-1", "step-2", "step-3"]
    assert context["steps"]["step-2"] == {"output": "translator 1", "agent": "translator"}
    assert context["output"] == "publisher 1"
    assert json.loads(json.dumps(context)) == context


def _qa(approve_on: int | None, agents: Agents) -> Any:
    async def qa_agent(prompt: str) -> dict[str, Any]:
        agents.calls["qa_agent"] += 1
        approved = approve_on is not None and agents.calls["qa_agent"] >= approve_on
        return {"is_approved": approved}

    return qa_agent


async def test_translator_qa_loop_runs_translator_three_times_publisher_once() -> None:
    agents = Agents("generator", "translator", "publisher")
    executors = {**agents.executors, "qa_agent": _qa(3, agents)}
    workflow = plait.load(LOOP, format="steps", executors=executors)
    result = await workflow.run("draft")
    assert agents.calls == Counter(generator=1, translator=3, qa_agent=3, publisher=1)
    assert result.outputs == ["publisher 1"]
    context = step_context(result)
    assert context is not None
    assert context["runs"]["trans"] == 3
    assert context["steps"]["qa"]["output"] == {"is_approved": True}
    # the QA agent saw the translator's latest output, structured outputs as JSON
    last_qa_prompt = agents.prompts.get("translator", [])[-1]
    assert '[qa (agent: qa_agent)]:\n{"is_approved": false}' in last_qa_prompt


async def test_a_loop_that_never_ends_fails_with_the_seed_text() -> None:
    agents = Agents("generator", "translator", "publisher")
    text = LOOP.replace("workflow:\n", "workflow:\n  max_loop_iterations: 4\n  steps:\n", 1)
    executors = {**agents.executors, "qa_agent": _qa(None, agents)}
    workflow = plait.load(text, format="steps", executors=executors)
    with pytest.raises(LoopLimitError) as caught:
        await workflow.run("draft")
    assert str(caught.value) == "workflow: max loop iterations exceeded (step: trans, limit: 4)"
    assert agents.calls["translator"] == 4
    assert agents.calls["publisher"] == 0


async def test_overrides_set_the_loop_limit_and_the_default_is_100() -> None:
    agents = Agents("generator", "translator", "publisher")
    executors = {**agents.executors, "qa_agent": _qa(None, agents)}
    text = LOOP.replace(
        "workflow:\n",
        "workflow:\n  max_loop_iterations: 50\n  overrides:\n    max_loop_iterations: 3\n"
        "  steps:\n",
        1,
    )
    with pytest.raises(LoopLimitError, match=r"\(step: trans, limit: 3\)$"):
        await plait.load(text, format="steps", executors=executors).run("draft")
    # the default: 100 iterations, and the superstep limit does not fire first
    result = await plait.load(LOOP, format="steps", executors=executors).run(
        "x", raise_on_failure=False
    )
    assert str(result.error) == "workflow: max loop iterations exceeded (step: trans, limit: 100)"


async def test_parallel_outputs_are_keyed_labelled_and_indexed() -> None:
    agents = Agents("generator")
    seen: list[tuple[str, str | None]] = []

    async def translator(prompt: str, instruction: str | None = None) -> str:
        seen.append((prompt, instruction))
        return "translated"

    text = PARALLEL + (
        "    instruction: |-\n"
        "      first={{ $steps.par_gen.outputs[0].output }}\n"
        "      second={{ $steps.par_gen.outputs.gen_2.output }}\n"
        "      order={{ $steps.par_gen.order }}\n"
    )
    workflow = plait.load(
        text, format="steps", executors={**agents.executors, "translator": translator}
    )
    result = await workflow.run("go")
    ((prompt, instruction),) = seen
    outputs = {"generator 1", "generator 2"}
    first = result.outputs  # the translator is the last step
    assert first == ["translated"]
    assert prompt.startswith("--- Prior Step Outputs ---\n\n[par_gen/gen_1 (agent: generator)]:\n")
    assert "\n\n[par_gen/gen_2 (agent: generator)]:\n" in prompt
    assert prompt.endswith("--- End Prior Step Outputs ---\n\ngo")
    assert instruction is not None
    got = dict(line.split("=", 1) for line in instruction.split("\n"))
    assert {got["first"], got["second"]} <= outputs
    assert got["order"] == '["gen_1","gen_2"]'
    context = step_context(result)
    assert context is not None
    keyed = context["steps"]["par_gen"]["output"]
    assert keyed["order"] == ["gen_1", "gen_2"]
    assert set(keyed["steps"]) == {"gen_1", "gen_2"}
    assert keyed["steps"]["gen_1"]["agent"] == "generator"
    assert {keyed["steps"][k]["output"] for k in ("gen_1", "gen_2")} == outputs
    assert got["first"] == keyed["steps"]["gen_1"]["output"]


async def test_nested_parallel_publisher_sees_all_three_and_templates_resolve() -> None:
    agents = Agents("generator", "researcher", "summarizer")
    seen: dict[str, Any] = {}

    async def publisher(prompt: str, instruction: str | None = None) -> str:
        seen.update(prompt=prompt, instruction=instruction)
        return "published"

    text = NESTED + (
        "    instruction: \"{{ $steps.outer.outputs.inner.outputs['step-4'].output }} / "
        "{{ $steps.outer.outputs.inner.outputs[1].output }} / "
        '{{ $steps.outer.outputs[0].output }}"\n'
    )
    workflow = plait.load(
        text, format="steps", executors={**agents.executors, "publisher": publisher}
    )
    result = await workflow.run("topic")
    assert result.outputs == ["published"]
    for label, name in (
        ("outer/step-2", "generator"),
        ("outer/inner/step-4", "researcher"),
        ("outer/inner/step-5", "summarizer"),
    ):
        assert f"[{label} (agent: {name})]:\n{name} 1\n" in seen["prompt"]
    assert seen["instruction"] == "researcher 1 / summarizer 1 / generator 1"


async def test_parallel_steps_really_run_concurrently() -> None:
    first, second = anyio.Event(), anyio.Event()

    async def left(prompt: str) -> str:
        first.set()
        await second.wait()
        return "left"

    async def right(prompt: str) -> str:
        second.set()
        await first.wait()
        return "right"

    text = """
workflow:
  - type: parallel
    id: both
    steps:
      - {id: l, type: agent, name: left}
      - {id: r, type: agent, name: right}
"""
    workflow = plait.load(text, format="steps", executors={"left": left, "right": right})
    with anyio.fail_after(10):
        result = await workflow.run("x")
    assert result.outputs == [
        {
            "steps": {
                "l": {"output": "left", "agent": "left"},
                "r": {"output": "right", "agent": "right"},
            },
            "order": ["l", "r"],
        }
    ]


async def test_nested_parallel_branches_all_start_in_the_same_superstep() -> None:
    """Seed 002: ``generator`` runs in parallel with the inner block. Three branches, one
    of them in the nested block, each wait until all three have started: with a superstep
    per nesting level they would wait forever."""
    started = {name: anyio.Event() for name in ("generator", "researcher", "summarizer")}

    def agent(name: str) -> Any:
        async def run(prompt: str) -> str:
            started[name].set()
            for event in started.values():
                await event.wait()
            return name

        return run

    executors = {name: agent(name) for name in started}
    executors["publisher"] = Agents("publisher").executors["publisher"]
    workflow = plait.load(NESTED, format="steps", executors=executors)
    steps: list[tuple[int, list[str]]] = []
    with anyio.fail_after(10):
        async for event in workflow.stream("topic"):
            if isinstance(event, plait.events.SuperstepStarted):
                steps.append((event.superstep, sorted(event.executor_ids)))
    # the fork, then every branch's first step at once, then the inner and outer joins
    assert steps == [
        (1, ["outer"]),
        (2, ["step-2", "step-4", "step-5"]),
        (3, ["inner/join"]),
        (4, ["outer/join"]),
        (5, ["step-6"]),
    ]


async def test_a_failing_parallel_branch_fails_the_workflow_and_nothing_after_runs() -> None:
    agents = Agents("generator", "publisher")

    async def broken(prompt: str) -> str:
        raise RuntimeError("model exploded")

    text = """
workflow:
  - type: parallel
    id: par
    steps:
      - {id: ok, type: agent, name: generator}
      - {id: bad, type: agent, name: broken}
  - {id: pub, type: agent, name: publisher}
"""
    workflow = plait.load(text, format="steps", executors={**agents.executors, "broken": broken})
    with pytest.raises(WorkflowRunError, match="model exploded") as caught:
        await workflow.run("x")
    assert caught.value.executor_id == "bad"
    assert agents.calls["publisher"] == 0


def _flaky(failures: int, error: str, calls: Counter[str]) -> Any:
    async def flaky(prompt: str) -> str:
        calls["flaky"] += 1
        if calls["flaky"] <= failures:
            raise RuntimeError(error)
        return "finally"

    return flaky


RETRY = """
workflow:
  - id: shaky
    type: agent
    name: flaky
    retry: {{max_attempts: {attempts}, backoff: exponential, delay: 1ms{on}}}
  - id: after
    type: agent
    name: downstream
"""


async def test_retry_absorbs_two_failures_and_downstream_runs_once() -> None:
    agents = Agents("downstream")
    executors = {
        **agents.executors,
        "flaky": _flaky(2, "timeout talking to the model", agents.calls),
    }
    workflow = plait.load(RETRY.format(attempts=2, on=""), format="steps", executors=executors)
    result = await workflow.run("x")
    assert agents.calls["flaky"] == 3
    assert agents.calls["downstream"] == 1
    assert agents.prompts["downstream"][0].count("finally") == 1
    assert workflow.spec.node("shaky").retry["max_attempts"] == 2
    context = step_context(result)
    assert context is not None and context["attempts"]["shaky"] == 3


async def test_one_retry_is_not_enough_for_two_failures() -> None:
    agents = Agents("downstream")
    executors = {**agents.executors, "flaky": _flaky(2, "boom", agents.calls)}
    workflow = plait.load(RETRY.format(attempts=1, on=""), format="steps", executors=executors)
    with pytest.raises(WorkflowRunError, match="boom"):
        await workflow.run("x")
    assert agents.calls["flaky"] == 2
    assert agents.calls["downstream"] == 0


async def test_retry_on_patterns_only_retry_matching_errors() -> None:
    agents = Agents("downstream")
    executors = {**agents.executors, "flaky": _flaky(1, "rate_limit hit", agents.calls)}
    text = RETRY.format(attempts=3, on=', on: ["timeout"]')
    with pytest.raises(WorkflowRunError, match="rate_limit"):
        await plait.load(text, format="steps", executors=executors).run("x")
    assert agents.calls["flaky"] == 1
    agents.calls.clear()
    executors["flaky"] = _flaky(1, "Timeout after 30s", agents.calls)
    result = await plait.load(text, format="steps", executors=executors).run("x")
    assert result.ok and agents.calls["flaky"] == 2


async def test_retry_on_a_parallel_block_covers_its_steps() -> None:
    agents = Agents("generator", "publisher")
    executors = {**agents.executors, "flaky": _flaky(1, "flaky", agents.calls)}
    text = """
workflow:
  - type: parallel
    id: par
    retry: {max_attempts: 1, delay: 0s}
    steps:
      - {id: a, type: agent, name: generator}
      - {id: b, type: agent, name: flaky}
  - {id: pub, type: agent, name: publisher}
"""
    workflow = plait.load(text, format="steps", executors=executors)
    result = await workflow.run("x")
    assert result.outputs == ["publisher 1"]
    assert agents.calls["flaky"] == 2 and agents.calls["publisher"] == 1


async def test_the_step_context_survives_checkpoints() -> None:
    agents = Agents("generator", "translator", "publisher")
    executors = {**agents.executors, "qa_agent": _qa(2, agents)}
    workflow = plait.load(LOOP, format="steps", executors=executors)
    result = await workflow.run("draft", checkpoint="memory://")
    assert result.outputs == ["publisher 1"]
    assert agents.calls["translator"] == 2
