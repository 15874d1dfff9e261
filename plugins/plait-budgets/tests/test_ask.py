"""The ``ask`` action: a budget that runs out asks a person to approve more; the run ends
idle with the request pending; an answer given on resume raises the budget and the call
goes, a refusal fails the run as ``fail`` would; on asyncio and trio, and in a new process
from SQLite (through ``plait resume --respond``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from budget_models import Calls
from plait import RunStatus
from plait.spi import RUN_REQUEST
from plait_budgets import Budget, BudgetExceededError, BudgetRequest, parse_budget
from plait_durable import ResponseTypeError, open_store
from test_budgets import cause, chain

pytestmark = pytest.mark.anyio

HERE = Path(__file__).parent


async def test_an_ask_budget_waits_for_a_person_and_goes_on_when_approved(
    calls: Calls, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b", "c", "d")
    try:
        waiting = await workflow.run(
            "go", run_id="ask-1", checkpoint=store, budget="calls=2,on=ask"
        )
        assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        assert waiting.error is None and waiting.outputs == []
        assert len(calls.seen) == 2  # c's call did not start
        [pending] = waiting.pending_requests
        assert pending.executor_id == "c"
        request = pending.request
        assert isinstance(request, BudgetRequest)
        assert (request.budget, request.unit, request.limit, request.spent, request.needed) == (
            "run", "model_calls", 2, 2, 1,
        )  # fmt: skip
        assert request.executor_id == "c" and request.model_id == "budget-test"
        assert "needs 1 more" in request.describe()

        # what a stored run waits for reads back typed, from the store
        [stored] = await workflow.pending_requests("ask-1", store)
        assert stored.request == request and stored.request_id == pending.request_id

        # an answer that is not a BudgetApproval changes nothing
        with pytest.raises(ResponseTypeError, match="BudgetApproval"):
            await workflow.resume("ask-1", store, responses={pending.request_id: True})

        # approve two more calls: c and d run, from the message c kept
        done = await workflow.resume(
            "ask-1",
            store,
            responses={pending.request_id: {"approve": True, "model_calls": 2}},
        )
        assert done.status is RunStatus.IDLE and done.outputs == ["ok"]
        assert [prompt for _, prompt in calls.seen] == ["go", "ok", "ok", "ok"]
        usage: Any = done.usage
        assert usage["budgets"]["run"]["spent"]["model_calls"] == 4
        assert usage["approvals"] == [
            {
                "request_id": pending.request_id,
                "budget": "run",
                "approved": True,
                "added": {"model_calls": 2},
            }
        ]
    finally:
        await store.aclose()


async def test_an_approval_without_an_amount_adds_what_the_call_needs(
    calls: Calls, priced: None, tmp_path: Path
) -> None:
    # each call reserves $0.038 and uses $0.011 (see test_money_is_priced_exactly); $0.04
    # holds one call and refuses the second ($0.011 + $0.038 > $0.04)
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b", "c", "d", "e")
    try:
        budget = Budget(usd=Decimal("0.04"), on_exhausted="ask")
        waiting = await workflow.run("go", run_id="ask-2", checkpoint=store, budget=budget)
        [pending] = waiting.pending_requests
        assert (pending.request.unit, pending.request.needed) == ("usd", 0.038)
        again = await workflow.resume(
            "ask-2", store, responses={pending.request_id: {"approve": True}}
        )
        # $0.038 more: b, c and d fit ($0.033 + $0.038 <= $0.078), e asks again
        assert again.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        [second] = again.pending_requests
        assert second.executor_id == "e" and second.request.limit == pytest.approx(0.078)
        assert second.request.spent == pytest.approx(0.044) and len(calls.seen) == 4
        usage: Any = again.usage
        assert usage["approvals"][0]["added"] == {"usd": 0.038}
        assert usage["budgets"]["run"]["limits"] == {"usd": pytest.approx(0.078)}
    finally:
        await store.aclose()


async def test_a_refusal_fails_the_run_as_fail_would(calls: Calls, tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b")
    try:
        waiting = await workflow.run(
            "go", run_id="ask-3", checkpoint=store, budget="calls=1,on=ask"
        )
        [pending] = waiting.pending_requests
        failed = await workflow.resume(
            "ask-3",
            store,
            responses={pending.request_id: {"approve": False}},
            raise_on_failure=False,
        )
        assert failed.status is RunStatus.FAILED
        error = cause(failed.error)
        assert isinstance(error, BudgetExceededError)
        assert (error.budget, error.unit, error.executor_id) == ("run", "model_calls", "b")
        assert error.refused_by == pending.request_id and error.action == "fail"
        assert "a person refused to raise it" in str(error)
        assert len(calls.seen) == 1
        usage: Any = failed.usage
        assert usage["approvals"][0]["approved"] is False

        # as with fail, the failed superstep is not kept: the request is still pending, and
        # a person who changes their mind answers it again
        [still] = await workflow.pending_requests("ask-3", store)
        assert still.request_id == pending.request_id
        done = await workflow.resume(
            "ask-3", store, responses={pending.request_id: {"approve": True}}
        )
        assert done.outputs == ["ok"] and len(calls.seen) == 2
        usage = done.usage  # the ledger goes on from the checkpoint the request waits in
        assert [a["approved"] for a in usage["approvals"]] == [True]
    finally:
        await store.aclose()


async def test_an_ask_scope_asks_for_its_own_budget(calls: Calls, tmp_path: Path) -> None:
    # the run has room; the node's budget does not, and it is the one raised
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b")
    budget = Budget(model_calls=10, scopes={"b": Budget(tokens=10, on_exhausted="ask")})
    try:
        waiting = await workflow.run("go", run_id="ask-4", checkpoint=store, budget=budget)
        [pending] = waiting.pending_requests
        assert (pending.request.budget, pending.request.unit) == ("b", "tokens")
        assert pending.request.needed == 28  # "ok": 2 bytes + 16, and max_tokens 10
        done = await workflow.resume(
            "ask-4", store, responses={pending.request_id: {"approve": True, "tokens": 20}}
        )
        assert done.outputs == ["ok"]
        usage: Any = done.usage
        assert usage["budgets"]["b"]["limits"] == {"tokens": 30}  # 10, and 20 approved
        assert usage["budgets"]["b"]["spent"]["tokens"] == 6
    finally:
        await store.aclose()


def test_ask_is_an_action_of_the_text_and_documents() -> None:
    assert parse_budget("calls=3,on=ask").on_exhausted == "ask"


def _python(*args: str, log: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BUDGET_LOG": str(log)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, cwd=HERE, env=env, timeout=300
    )


def test_a_waiting_run_is_answered_by_plait_resume_in_another_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "calls.log"
    started = _python("budget_asking.py", "run", store, "asked-1", str(log), log=log)
    assert started.returncode == 0, started.stderr
    waiting = json.loads(started.stdout)
    assert waiting["status"] == "idle_with_pending_requests"
    [request_id] = waiting["requests"]

    # plait resume, from the store alone: the request and its answer's type decode there
    answer = json.dumps({"approve": True, "model_calls": 2})
    resumed = _python(
        "budget_asking.py", "cli", "resume", "budget_asking.py:workflow", "asked-1",
        "--checkpoint", store, "--respond", f"{request_id}={answer}", "--json", log=log,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["a", "b", "c", "d"]
    spend = _python(
        "budget_asking.py", "cli", "spend", "asked-1", "--checkpoint", store, "--json", log=log
    )
    assert spend.returncode == 0, spend.stderr
    [row] = json.loads(spend.stdout)
    assert row["status"] == "idle" and row["spend"]["spent"]["run"]["model_calls"] == 4


def test_a_request_read_from_a_store_is_checked_field_by_field() -> None:
    from plait.spi import compiled_graph
    from plait_durable.codec import DecodeError, declared_types, decode_value

    types = declared_types(compiled_graph(chain("a")))
    tag = "plait_budgets._ask:BudgetRequest"
    assert tag in types and "plait_budgets._ask:BudgetApproval" in types
    good = {
        "budget": "run", "unit": "usd", "limit": 1.0, "spent": 1.0, "needed": 0.5,
        "executor_id": "a", "model_id": "m",
    }  # fmt: skip
    assert decode_value({"__plait__": tag, "v": good}, types) == BudgetRequest(**good)
    for forged, said in [
        ({**good, "unit": "minutes"}, "unit must be one of"),
        ({**good, "needed": -1}, "needed must be a number >= 0"),
        ({**good, "code": "import os"}, "has no field"),
    ]:
        with pytest.raises(DecodeError, match=said):
            decode_value({"__plait__": tag, "v": forged}, types)


# -- the run's own units: supersteps and wall time, asked at a superstep boundary ----------


async def test_a_supersteps_budget_asks_at_the_boundary_and_goes_on_when_approved(
    calls: Calls, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b", "c", "d")  # a, b, c, d, collect: five supersteps
    try:
        waiting = await workflow.run(
            "go", run_id="ask-s", checkpoint=store, budget="supersteps=2,on=ask"
        )
        assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        assert waiting.error is None and waiting.supersteps == 2
        assert len(calls.seen) == 2  # a and b ran; c's superstep did not start
        [pending] = waiting.pending_requests
        assert pending.executor_id == RUN_REQUEST and pending.superstep == 2
        request = pending.request
        assert (request.budget, request.unit, request.limit, request.spent, request.needed) == (
            "run", "supersteps", 2, 2, 2,
        )  # fmt: skip
        assert request.executor_id is None and request.model_id is None
        assert request.describe() == "budget 'run' has run 2 of 2 supersteps; approve 2 more?"

        # the checkpoint holds the request, typed, and the superstep's delivery
        [stored] = await workflow.pending_requests("ask-s", store)
        assert stored.request == request and stored.executor_id == RUN_REQUEST
        latest = await store.latest("ask-s")
        assert latest is not None and latest.status == "idle_with_pending_requests"
        assert latest.superstep == 2 and list(latest.state["pending"]) == ["c"]

        # approve one more superstep: c runs (from the boundary: a and b do not run again)
        # and the run asks again before d
        again = await workflow.resume(
            "ask-s", store, responses={pending.request_id: {"approve": True, "supersteps": 1}}
        )
        assert again.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        assert [prompt for _, prompt in calls.seen] == ["go", "ok", "ok"]
        [second] = again.pending_requests
        assert second.request_id != pending.request_id
        assert (second.request.limit, second.request.spent) == (3, 3)

        # approved without an amount: the budget's own limit again (2), enough for the rest
        done = await workflow.resume(
            "ask-s", store, responses={second.request_id: {"approve": True}}
        )
        assert done.status is RunStatus.IDLE and done.outputs == ["ok"]
        assert done.pending_requests == [] and done.supersteps == 5
        assert [prompt for _, prompt in calls.seen] == ["go", "ok", "ok", "ok"]
        usage: Any = done.usage
        assert usage["budgets"]["run"]["limits"] == {"supersteps": 5}
        assert [(a["approved"], a["added"]) for a in usage["approvals"]] == [
            (True, {"supersteps": 1}),
            (True, {"supersteps": 2}),
        ]
    finally:
        await store.aclose()


async def test_a_refused_supersteps_request_fails_the_run_and_stays_pending(
    calls: Calls, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b")
    try:
        waiting = await workflow.run(
            "go", run_id="ask-r", checkpoint=store, budget="supersteps=1,on=ask"
        )
        [pending] = waiting.pending_requests
        failed = await workflow.resume(
            "ask-r",
            store,
            responses={pending.request_id: {"approve": False}},
            raise_on_failure=False,
        )
        assert failed.status is RunStatus.FAILED
        error = cause(failed.error)
        assert isinstance(error, BudgetExceededError)
        assert (error.budget, error.unit, error.executor_id) == ("run", "supersteps", None)
        assert error.refused_by == pending.request_id and error.action == "fail"
        assert len(calls.seen) == 1

        # the request is still pending: answered again, the run goes on from the boundary
        [still] = await workflow.pending_requests("ask-r", store)
        assert still.request_id == pending.request_id
        done = await workflow.resume(
            "ask-r", store, responses={pending.request_id: {"approve": True, "supersteps": 5}}
        )
        assert done.outputs == ["ok"] and [p for _, p in calls.seen] == ["go", "ok"]
    finally:
        await store.aclose()


async def test_a_wall_time_budget_asks_before_the_superstep_that_would_pass_it(
    calls: Calls, tmp_path: Path
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    workflow = chain("a", "b")
    try:
        # no time at all: the run asks before its first superstep, nothing has run
        waiting = await workflow.run(
            "go", run_id="ask-t", checkpoint=store, budget=Budget(seconds=0, on_exhausted="ask")
        )
        assert waiting.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        assert waiting.supersteps == 0 and calls.seen == []
        [pending] = waiting.pending_requests
        assert (pending.request.unit, pending.request.limit) == ("seconds", 0)
        assert "seconds; approve 0 more?" in pending.request.describe()
        done = await workflow.resume(
            "ask-t", store, responses={pending.request_id: {"approve": True, "seconds": 3600}}
        )
        assert done.outputs == ["ok"] and [p for _, p in calls.seen] == ["go", "ok"]
        usage: Any = done.usage
        assert usage["budgets"]["run"]["limits"] == {"seconds": 3600}
        assert usage["approvals"][0]["added"] == {"seconds": 3600}
    finally:
        await store.aclose()


def test_kill_9_between_a_boundary_ask_and_its_answer(tmp_path: Path) -> None:
    # the process that asked dies (kill -9) after its run stopped at the boundary; another
    # answers with plait resume --respond: the run goes on from the boundary, nothing run
    # twice, and the ledger counts each call once
    from plait_testing.kills import kill, spawn, wait_until

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    log, marker = tmp_path / "calls.log", tmp_path / "asked"
    victim = spawn(HERE / "budget_asking.py", "hold", store, "asked-s", str(log), str(marker))
    wait_until(marker.exists, "the run asked at its boundary", process=victim)
    kill(victim)
    waiting = json.loads(marker.with_suffix(".json").read_text())
    assert waiting["status"] == "idle_with_pending_requests"
    [request_id] = waiting["requests"]
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["a", "b"]

    answer = json.dumps({"approve": True, "supersteps": 3})
    resumed = _python(
        "budget_asking.py", "cli", "resume", "budget_asking.py:workflow", "asked-s",
        "--checkpoint", store, "--respond", f"{request_id}={answer}", "--json", log=log,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr + resumed.stdout
    assert [line.split()[1] for line in log.read_text().splitlines()] == ["a", "b", "c", "d"]
    spend = _python(
        "budget_asking.py", "cli", "spend", "asked-s", "--checkpoint", store, "--json", log=log
    )
    assert spend.returncode == 0, spend.stderr
    [row] = json.loads(spend.stdout)
    assert row["status"] == "idle" and row["spend"]["spent"]["run"]["model_calls"] == 4
    assert row["spend"]["lost_calls"] == {"settled": 0, "in_flight": 0}
