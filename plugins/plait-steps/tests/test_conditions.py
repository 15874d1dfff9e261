"""Seed 002's conditions: ``goto: <index>``, a condition that must give a boolean, and a
condition step that must have a condition (issue 36, behaviours that had no test)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import plait
import pytest
from plait import LoadError
from plait_steps import StepConditionError, step_context

pytestmark = pytest.mark.anyio


def _agents(calls: Counter[str]) -> dict[str, Any]:
    def agent(name: str) -> Any:
        async def run(prompt: str) -> str:
            calls[name] += 1
            return f"{name} {calls[name]}"

        return run

    return {n: agent(n) for n in ("generator", "translator", "publisher")}


GOTO_INDEX = """
workflow:
  - {id: gen, type: agent, name: generator}
  - {id: trans, type: agent, name: translator}
  - id: check
    type: condition
    condition: "{{ $steps.trans.output == 'translator 3' }}"
    true:
      - {id: pub, type: agent, name: publisher}
    false:
      - goto: 1
"""


async def test_goto_an_index_goes_back_to_that_top_level_step() -> None:
    calls: Counter[str] = Counter()
    workflow = plait.load(GOTO_INDEX, format="steps", executors=_agents(calls))
    # index 1 (0-based) is ``trans``: the loop runs the translator, not the generator, again
    (switch,) = [g for g in workflow.spec.edge_groups if g.sources == ("check",)]
    assert switch.targets == ("pub", "trans")
    result = await workflow.run("draft")
    assert calls == Counter(generator=1, translator=3, publisher=1)
    assert result.outputs == ["publisher 1"]
    context = step_context(result)
    assert context is not None and context["runs"]["trans"] == 3


async def test_goto_an_index_past_the_top_level_steps_is_a_load_error() -> None:
    text = GOTO_INDEX.replace("goto: 1", "goto: 7")
    with pytest.raises(LoadError) as caught:
        plait.load(text, format="steps", executors=_agents(Counter()))
    (problem,) = caught.value.problems
    assert "goto 7: no earlier top-level step has index 7 (0-based)" in str(problem)
    assert (problem.line, problem.column) == (11, 9)


@pytest.mark.parametrize(
    ("condition", "shown"),
    [
        ("{{ $steps.gen.output }}", "'generator 1'"),
        ("{{ size($steps.gen.output) }}", "11"),
        ("{{ $steps.gen.agent }}", "'generator'"),
    ],
)
async def test_a_condition_that_is_not_a_boolean_fails_the_run_naming_the_step(
    condition: str, shown: str
) -> None:
    text = f"""
workflow:
  - {{id: gen, type: agent, name: generator}}
  - id: check
    type: condition
    condition: "{condition}"
    true:
      - {{id: pub, type: agent, name: publisher}}
"""
    calls: Counter[str] = Counter()
    workflow = plait.load(text, format="steps", executors=_agents(calls))
    result = await workflow.run("draft", raise_on_failure=False)
    error = result.error
    assert isinstance(error, StepConditionError)
    assert error.executor_id == "check"
    assert str(error) == (
        f"condition of step 'check' must give a boolean, got {shown} ({condition})"
    )
    assert calls["publisher"] == 0


async def test_a_condition_that_fails_to_evaluate_fails_the_run_naming_the_step() -> None:
    text = """
workflow:
  - {id: gen, type: agent, name: generator}
  - id: check
    type: condition
    condition: "{{ int($steps.gen.output) > 1 }}"
    true:
      - {id: pub, type: agent, name: publisher}
"""
    workflow = plait.load(text, format="steps", executors=_agents(Counter()))
    result = await workflow.run("draft", raise_on_failure=False)
    assert isinstance(result.error, StepConditionError)
    assert result.error.executor_id == "check"
    assert str(result.error).startswith("condition of step 'check' failed: ")


def test_a_condition_step_without_a_condition_is_a_load_error_at_the_step() -> None:
    text = """
workflow:
  - {id: gen, type: agent, name: generator}
  - id: check
    type: condition
    true:
      - {id: pub, type: agent, name: publisher}
"""
    with pytest.raises(LoadError) as caught:
        plait.load(text, format="steps", executors=_agents(Counter()))
    (problem,) = caught.value.problems
    assert "condition step 'check' needs 'condition'" in str(problem)
    assert (problem.line, problem.column) == (4, 5)
