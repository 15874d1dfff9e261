"""YAML steps with LLM agents declared in the document's ``agents:`` section (cagent's
shape: ``model``, ``instruction``, ``structured_output``, ``options``, ``system``), and
the one order names resolve in: a name nothing declares is an error at its line and
column, even with plait-llm installed — never an LLM agent by default."""

from __future__ import annotations

import plait
import pytest
from plait import LoadError
from plait_documents import CapabilityError

pytestmark = pytest.mark.anyio

STEPS = """
workflow:
  - type: agent
    name: generator
  - type: agent
    name: translator
"""

DECLARED = """
agents:
  translator: {}
workflow:
  - type: agent
    name: generator
  - type: agent
    name: translator
"""

WITH_CONFIG = """
agents:
  translator:
    model: plait-test-echo
    system: You translate.
    instruction: "Translate:"
workflow:
  - id: trans
    type: agent
    name: translator
"""

TEMPLATE = """
agents:
  writer:
    model: plait-test-plain
    instruction: "Improve this draft: {{ $steps.draft.output }}"
workflow:
  - id: draft
    type: agent
    name: generator
  - id: polish
    type: agent
    name: writer
"""


async def generator(prompt: str) -> str:
    return f"draft of {prompt}"


def test_a_name_nothing_declares_is_an_error_at_its_position_with_plait_llm_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the repro: an unknown YAML agent silently became an LLM agent
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")
    with pytest.raises(LoadError) as info:
        plait.load(STEPS, format="steps", executors={"generator": generator}, allow="network")
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (6, 11)  # type: ignore[attr-defined]
    assert "unknown agent 'translator'" in str(problem)
    assert "Plait looked in executors= (generator)" in str(problem)
    assert "the document's agents: section (none)" in str(problem)


async def test_an_llm_agent_declared_in_the_file_runs_on_the_model_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")
    # a model agent the document declares calls a model (any host): it needs network
    with pytest.raises(
        CapabilityError, match=r"node 'step-2' \(kind agent, in steps.agent\) needs network"
    ):
        plait.load(DECLARED, format="steps", executors={"generator": generator})
    workflow = plait.load(
        DECLARED, format="steps", executors={"generator": generator}, allow="network"
    )
    result = await workflow.run("cats")
    (output,) = result.outputs
    assert output.startswith("plain: --- Prior Step Outputs ---")
    assert "draft of cats" in output and output.endswith("cats")


async def test_the_agents_section_names_the_model_system_prompt_and_instruction() -> None:
    result = await plait.load(WITH_CONFIG, format="steps", allow="network").run("chat")
    assert result.outputs == ["system: You translate. | Translate:\n\nchat"]


async def test_an_instruction_template_reads_an_earlier_steps_output() -> None:
    workflow = plait.load(
        TEMPLATE, format="steps", executors={"generator": generator}, allow="network"
    )
    (output,) = (await workflow.run("tides")).outputs
    assert output.startswith("plain: Improve this draft: draft of tides")


async def test_a_python_executor_of_that_name_still_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")

    async def translator(prompt: str) -> str:
        return "python translator"

    executors = {"generator": generator, "translator": translator}
    result = await plait.load(DECLARED, format="steps", executors=executors).run("x")
    assert result.outputs == ["python translator"]


def test_without_a_model_the_load_error_is_at_the_agent_and_says_how_to_name_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PLAIT_LLM_MODEL", raising=False)
    with pytest.raises(LoadError) as info:
        plait.load(DECLARED, format="steps", executors={"generator": generator}, allow="network")
    (problem,) = info.value.problems
    assert "PLAIT_LLM_MODEL" in str(problem)
    assert (problem.line, problem.column) == (3, 15)  # type: ignore[attr-defined]


def test_a_model_typo_is_an_error_at_the_models_line_and_column() -> None:
    text = WITH_CONFIG.replace("plait-test-echo", "plait-test-ecko")
    with pytest.raises(LoadError) as info:
        plait.load(text, format="steps", allow="network")
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (4, 5)  # type: ignore[attr-defined]
    assert "did you mean 'plait-test-echo'?" in str(problem)


def test_a_condition_on_an_undeclared_field_is_an_error_at_the_condition() -> None:
    text = """
agents:
  qa_agent:
    model: plait-test-echo
    structured_output:
      type: object
      properties: {is_approved: {type: boolean}}
  plain: {model: plait-test-echo}
workflow:
  - {id: qa, type: agent, name: qa_agent}
  - {id: other, type: agent, name: plain}
  - id: gate
    type: condition
    condition: "{{ $steps.qa.output.is_aproved && $steps.other.output.ok }}"
    true: [{goto: qa}]
"""
    with pytest.raises(LoadError) as info:
        plait.load(text, format="steps", allow="network")
    first, second = info.value.problems
    assert (first.line, first.column) == (14, 20)  # type: ignore[attr-defined]
    assert "declares no 'is_aproved'" in str(first) and "did you mean 'is_approved'?" in str(first)
    assert (second.line, second.column) == (14, 51)  # type: ignore[attr-defined]
    assert "'plain' (the agent of step 'other') declares no structured_output" in str(second)
