"""A token budget stops the SmolLM2 scenario of plait-llm's tests (``smollm2.yaml``: a
translator, an explainer reading its answer, a condition that routes to a third agent) at
the call it should: each budget is worked out from what the run refused before it (the
refused call's worst case, what was spent), so the test holds for any prompt the steps
file renders.

The model is the budgets' tests' deterministic stand-in (``budget-test``: "ok", its usage
the prompt's words in and ``min(max_tokens, 5)`` out), not SmolLM2 itself: the real model
needs the ``model`` dependency group (llama.cpp, built from source) or a recorded cassette
of its answers, which these tests do not have.
"""

from __future__ import annotations

from typing import Any

import plait
import pytest
from budget_models import Calls
from plait_budgets import BudgetExceededError
from test_budgets import cause

pytestmark = pytest.mark.anyio

RIVER = """\
name: river
budget: {{tokens: {tokens}}}
agents:
  translator:
    model: budget-test
    instruction: "Translate to French. Answer with the translation only."
    options: {{max_tokens: 10}}
  explainer:
    model: budget-test
    instruction: "A French sentence: {{{{ $steps.translate.output }}}}"
    options: {{max_tokens: 10}}
  answer:
    model: budget-test
    options: {{max_tokens: 10}}
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


async def _run(tokens: int) -> tuple[Any, BudgetExceededError | None]:
    """The river under a budget of ``tokens``: its result, and what stopped it."""
    workflow = plait.load(RIVER.format(tokens=tokens), format="steps", allow=["network"])
    result = await workflow.run("The river flows.", raise_on_failure=False)
    error = cause(result.error)
    assert error is None or isinstance(error, BudgetExceededError)
    return result, error


async def test_a_token_budget_stops_the_river_at_the_expected_call(calls: Calls) -> None:
    # (a step's agent runs inside the step: the calls, not the executor ids, say which
    # step's model call it is)
    # no room for anything: the translator's reservation is what it refuses
    _, first = await _run(1)
    assert first is not None and first.unit == "tokens" and calls.seen == []
    # room for the translator's worst case: it runs, the explainer is refused
    _, second = await _run(first.needed)
    assert second is not None and len(calls.seen) == 1
    assert calls.seen[0][1].startswith("Translate to French.")
    assert second.spent < first.needed  # what it spent: the translator's use
    # room for the explainer's worst case on top of the translator's use (and for the
    # translator's worst case): the explainer runs, then the route's agent, whose worst
    # case ("ok": 2 bytes + 16, and 10 out) fits what the explainer reserved beyond its
    # use (released at the barrier), and the run ends
    calls.seen.clear()
    done, none = await _run(max(first.needed, second.spent + second.needed))
    assert none is None and done.outputs == ["ok"] and len(calls.seen) == 3
    assert calls.seen[1][1].startswith("A French sentence: ok")
    assert calls.seen[2][1] == "ok"  # the route's agent gets the explainer's answer
    usage: Any = done.usage
    assert usage["total"]["model_calls"] == 3
    assert usage["total"]["tokens"] <= max(first.needed, second.spent + second.needed)
    # one token less: the explainer is refused again, the translator ran alone (its
    # prompt, longer than the translator's, makes that the larger of the two)
    assert second.spent + second.needed > first.needed
    calls.seen.clear()
    _, again = await _run(second.spent + second.needed - 1)
    assert again is not None and len(calls.seen) == 1
