"""YAML steps: ``type: agent, name: translator`` runs on the ``agent`` kind when no executor
named ``translator`` is passed (model from the step's config or PLAIT_LLM_MODEL)."""

from __future__ import annotations

import plait
import pytest
from plait import LoadError
from plait.spi import CapabilityError

pytestmark = pytest.mark.anyio

STEPS = """
workflow:
  - type: agent
    name: generator
  - type: agent
    name: translator
"""

WITH_CONFIG = """
workflow:
  - id: trans
    type: agent
    name: translator
    instruction: "Translate:"
    config: {model: plait-test-echo, system: You translate.}
"""


async def generator(prompt: str) -> str:
    return f"draft of {prompt}"


async def test_an_agent_nobody_gave_runs_on_the_model_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")
    # a model agent the document names calls a model (any host): it needs network
    with pytest.raises(
        CapabilityError, match=r"node 'step-2' \(kind agent, in steps.agent\) needs network"
    ):
        plait.load(STEPS, format="steps", executors={"generator": generator})
    workflow = plait.load(
        STEPS, format="steps", executors={"generator": generator}, allow="network"
    )
    result = await workflow.run("cats")
    (output,) = result.outputs
    assert output.startswith("plain: --- Prior Step Outputs ---")
    assert "draft of cats" in output and output.endswith("cats")


async def test_the_steps_config_names_the_model_and_system_prompt() -> None:
    result = await plait.load(WITH_CONFIG, format="steps", allow="network").run("chat")
    assert result.outputs == ["system: You translate. | Translate:\n\nchat"]


async def test_a_python_executor_of_that_name_still_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_LLM_MODEL", "plait-test-plain")

    async def translator(prompt: str) -> str:
        return "python translator"

    executors = {"generator": generator, "translator": translator}
    result = await plait.load(STEPS, format="steps", executors=executors).run("x")
    assert result.outputs == ["python translator"]


def test_without_a_model_the_load_error_says_how_to_name_one() -> None:
    with pytest.raises(LoadError) as info:
        plait.load(STEPS, format="steps", executors={"generator": generator}, allow="network")
    assert "PLAIT_LLM_MODEL" in str(info.value)
