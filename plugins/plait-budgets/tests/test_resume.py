"""A run stopped by its budget is checkpointed and resumes with a raised budget; a resume
that sets no budget keeps the run's; the ledger goes on from the checkpoint and the result
reports the usage (per model, per executor, per budget); on asyncio and trio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from budget_models import Calls
from plait import RunStatus
from plait_budgets import Budget, BudgetExceededError
from plait_durable import open_store
from test_budgets import cause, chain

pytestmark = pytest.mark.anyio


async def test_a_run_out_of_budget_resumes_with_a_raised_budget(
    calls: Calls, priced: None, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b", "c", "d")
    try:
        failed = await workflow.run(
            "go", run_id="r1", checkpoint=store, budget="calls=2", raise_on_failure=False
        )
        error = cause(failed.error)
        assert isinstance(error, BudgetExceededError) and error.executor_id == "c"
        assert failed.status is RunStatus.FAILED and len(calls.seen) == 2
        assert failed.usage is not None and failed.usage["total"]["model_calls"] == 2

        # no budget given: the run's own (2 calls) still holds, and nothing ran again
        again = await workflow.resume("r1", store, raise_on_failure=False)
        assert isinstance(cause(again.error), BudgetExceededError)
        assert len(calls.seen) == 2

        done = await workflow.resume("r1", store, budget=Budget(model_calls=5))
        assert done.outputs == ["ok"] and len(calls.seen) == 4
        usage: Any = done.usage
        assert usage["total"]["model_calls"] == 4  # two before the resume, two after
        assert sorted(usage["by_executor"]) == ["a", "b", "c", "d"]
        assert all(u["model_calls"] == 1 for u in usage["by_executor"].values())
        assert usage["by_model"]["budget-test"]["output_tokens"] == 4 * 5
        assert usage["budgets"]["run"]["limits"] == {"model_calls": 5}
        assert usage["recovered_in_flight"] == 0 and usage["overshoots"] == []
    finally:
        await store.aclose()


async def test_a_tampered_ledger_is_an_error_naming_the_run(calls: Calls, tmp_path: Path) -> None:
    from plait_budgets import Ledger

    ledger = Ledger(lambda model: None)
    with pytest.raises(Exception, match=r"run r9: .*accounts\['run'\]: not a count"):
        ledger.restore(
            {
                "version": 1,
                "accounts": {"run": [1, 2, 3, -4, 5]},
                "by_model": {},
                "by_executor": {},
                "seconds": 1.0,
                "in_flight": 0,
                "unreported": 0,
                "overshoots": 0,
            },
            "run r9: the budget ledger",
        )


async def test_a_run_without_a_budget_has_no_usage(calls: Calls) -> None:
    result = await chain("a").run("go")
    assert result.usage is None and result.outputs == ["ok"]


async def test_a_call_in_flight_at_a_checkpoint_is_counted_at_its_reservation() -> None:
    # (a pipelined run checkpoints while other branches' calls run)
    from plait_budgets import Ledger

    ledger = Ledger(lambda model: None)
    run = ledger.account("run", Budget(tokens=100))
    ticket = ledger.reserve((run,), "writer", "budget-test", 20, 10)
    kept = ledger.snapshot()
    resumed = Ledger(lambda model: None)
    resumed.restore(kept, "run r")
    account = resumed.account("run", Budget(tokens=100))
    assert account.spent.tokens == 30 and account.spent.model_calls == 1
    assert resumed.usage()["recovered_in_flight"] == 1
    assert resumed.usage()["by_executor"]["writer"]["tokens"] == 30
    ticket.settle(2, 3)  # the old process's ledger settles; the resumed one is unchanged
    assert account.spent.tokens == 30


async def test_spend_summary_reads_a_runs_checkpoint(
    calls: Calls, priced: None, tmp_path: Path
) -> None:
    from plait_budgets import spend_summary

    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    try:
        # three calls at $0.011 and 6 tokens each, against $1 and 200k tokens
        await chain("a", "b", "c").run(
            "go", run_id="summary-1", checkpoint=store, budget="usd=1,tokens=200k"
        )
        latest = await store.latest("summary-1")
        assert spend_summary(latest) == "$0.03/$1.00 · 18/200k tok"
        assert spend_summary(dict(latest.metadata)) == "$0.03/$1.00 · 18/200k tok"
        await chain("a").run("go", run_id="summary-2", checkpoint=store, budget="calls=5")
        assert spend_summary(await store.latest("summary-2")) == "$0.01 · 6 tok · 1/5 calls"
        await chain("a").run("go", run_id="summary-3", checkpoint=store)
        assert spend_summary(await store.latest("summary-3")) is None
    finally:
        await store.aclose()


def test_spend_summary_of_a_bad_ledger_says_so_and_trusts_nothing() -> None:
    from plait_budgets import spend_summary

    bad = {"observers": {"budgets": {"version": 1, "accounts": {"run": ["1e9"] * 5}}}}
    assert spend_summary(bad) == "unreadable ledger"
    assert spend_summary({}) is None and spend_summary(None) is None


def test_lost_calls_are_counted_from_the_journal_past_the_checkpoint_only() -> None:
    from plait_budgets import Ledger
    from plait_durable import JournalEvent

    def event(kind: str, superstep: int, call_id: str, counts: list[int]) -> JournalEvent:
        call = {"id": call_id, "model": "m", "accounts": ["run"], "counts": counts}
        return JournalEvent(kind, superstep, 0.0, 0.0, executor="w", call=call)

    ledger = Ledger(lambda model: None)
    first = ledger.account("run", Budget(tokens=1_000))
    ledger.supersteps = 2
    in_flight = ledger.reserve((first,), "w", "m", 10, 10)
    in_flight.id = "kept"
    resumed = Ledger(lambda model: None)
    resumed.restore(ledger.snapshot(), "run r")  # checkpoint of superstep 2, "kept" in flight
    resumed.count_lost(
        [
            event("call_reserved", 2, "old", [10, 10, 1, 0, 0]),  # committed: counted
            event("call_reserved", 3, "kept", [10, 10, 1, 0, 0]),  # counted at the checkpoint
            event("call_reserved", 3, "done", [10, 10, 1, 0, 0]),
            event("call_settled", 3, "done", [3, 4, 1, 0, 0]),
            event("call_reserved", 3, "cut", [7, 10, 1, 0, 0]),
        ]
    )
    assert (resumed.lost_settled, resumed.lost_in_flight) == (1, 1)
    account = resumed.account("run", Budget(tokens=1_000))
    # the one in flight at the checkpoint (20), "done" at its use (7), "cut" at its
    # reservation (17)
    assert account.spent.tokens == 20 + 7 + 17 and account.spent.model_calls == 3
    assert resumed.usage()["lost_calls"] == {"settled": 1, "in_flight": 1}
    kept = resumed.snapshot()
    assert kept["lost"] == [1, 1]


def test_a_call_record_read_from_a_journal_is_checked() -> None:
    from plait_durable import CorruptCheckpointError, JournalEvent

    good = '{"kind":"call_reserved","superstep":3,"wall":1.0,"mono":1.0,"call":{"id":"x"}}'
    assert JournalEvent.from_json(good, seq=1, where="run r").call == {"id": "x"}
    bad = '{"kind":"call_reserved","superstep":3,"wall":1.0,"mono":1.0,"call":{"id":{"a":1}}}'
    with pytest.raises(CorruptCheckpointError, match="call is not a JSON object"):
        JournalEvent.from_json(bad, seq=2, where="run r")
