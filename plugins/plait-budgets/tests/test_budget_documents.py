"""``budget:`` in the three document formats: kept as the workflow's run default (a run
stops at it), and a bad budget is an error at its line and column, from ``plait.load``
and ``plait validate``; on asyncio and trio."""

from __future__ import annotations

from pathlib import Path

import plait
import pytest
from budget_models import Calls
from click.testing import CliRunner
from plait import LoadError
from plait_budgets import BudgetExceededError
from plait_cli import make_cli
from test_budgets import cause

pytestmark = pytest.mark.anyio

AGENTS = """\
agents:
  a: {model: budget-test, options: {max_tokens: 10}}
  b: {model: budget-test, options: {max_tokens: 10}}
"""

STEPS = (
    "budget:\n  model_calls: 1\n"
    + AGENTS
    + """\
workflow:
  - {id: first, type: agent, name: a}
  - {id: second, type: agent, name: b}
"""
)
FLOW = "flow: a -> b\nbudget: calls=1\n" + AGENTS
DAG = """\
{
  "budget": {"model_calls": 1},
  "agents": {"a": {"model": "budget-test", "options": {"max_tokens": 10},
                   "structured_output": {"type": "object"}},
             "b": {"model": "budget-test", "options": {"max_tokens": 10},
                   "structured_output": {"type": "object"}}},
  "nodes": [{"id": "first", "agent_name": "a", "is_entry": true},
            {"id": "second", "agent_name": "b", "is_exit": true}],
  "connections": [{"source_id": "first", "target_id": "second"}]
}
"""
DOCUMENTS = {"steps": STEPS, "flow": FLOW, "dag": DAG}


@pytest.mark.parametrize("format", sorted(DOCUMENTS))
async def test_a_document_s_budget_stops_its_run(calls: Calls, format: str) -> None:
    # (a DAG agent answers JSON: the test model's "ok" gets one corrective retry, which
    # the budget refuses as it would b's call)
    workflow = plait.load(DOCUMENTS[format], format=format, allow=["network"])
    assert workflow.spec.options["budget"] in ({"model_calls": 1}, "calls=1")
    message = {"topic": "go"} if format == "dag" else "go"  # a DAG run takes a context
    result = await workflow.run(message, raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.unit == "model_calls"
    assert len(calls.seen) == 1


BAD = {
    "steps": (STEPS.replace("  model_calls: 1\n", "  model_calls: 1\n  tokenz: 5\n"), (3, 3)),
    "flow": (FLOW.replace("budget: calls=1", "budget: {usd: 1, tokenz: 5}"), (2, 18)),
    "dag": (DAG.replace('{"model_calls": 1}', '{"model_calls": 1, "tokenz": 5}'), (2, 32)),
}


@pytest.mark.parametrize("format", sorted(BAD))
def test_a_bad_budget_is_an_error_at_its_position(format: str) -> None:
    text, (line, column) = BAD[format]
    with pytest.raises(LoadError) as info:
        plait.load(text, format=format, allow=["network"])
    [problem] = info.value.problems
    assert "unknown budget field(s) tokenz (did you mean tokens?)" in str(problem)
    assert (problem.line, problem.column) == (line, column)  # type: ignore[attr-defined]


@pytest.mark.parametrize("format", sorted(BAD))
def test_validate_reports_a_bad_budget_with_its_position(format: str, tmp_path: Path) -> None:
    text, (line, column) = BAD[format]
    suffix = {"steps": "yaml", "flow": "flow.yaml", "dag": "json"}[format]
    path = tmp_path / f"workflow.{suffix}"
    path.write_text(text)
    checked = CliRunner().invoke(
        make_cli(), ["validate", str(path), "--format", format, "--allow", "network"]
    )
    assert checked.exit_code != 0
    assert f"{path}:{line}:{column}" in checked.output
    assert "tokenz (did you mean tokens?)" in checked.output
