"""kill -9 a budgeted run while a model call is in flight, resume it in a new process with
a raised budget: the ledger goes on from the checkpoint (no reset), the calls checkpointed
before the kill are neither run nor counted again, the call that was in flight when the
process died is counted at its reservation (its reservation was written to the run's
journal before it went out), and the run says so; the interrupted superstep's call runs
again and is counted at its use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from plait_testing.kills import finish, kill, spawn, wait_until

CRASHY = Path(__file__).with_name("budget_crashy.py")


def test_kill_9_mid_call_then_resume_keeps_the_ledger_exact(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "calls.log"
    victim = spawn(CRASHY, "run", store, "budgeted", str(log))
    wait_until(
        lambda: log.exists() and "budget-test c go" in log.read_text().replace("ok", "go"),
        "the run reached agent c",
        process=victim,
    )
    kill(victim)

    report = json.loads(finish(spawn(CRASHY, "resume", store, "budgeted", str(log))))
    assert report["outputs"] == ["ok"]
    started = log.read_text().splitlines()
    # a and b ran once (checkpointed), c twice (killed in flight, then again), d once
    assert [line.split()[1] for line in started] == ["a", "b", "c", "c", "d"]
    usage = report["usage"]
    # the ledger counts a and b from the checkpoint, c twice (the lost call at its
    # reservation, from the journal, and the one that ran again at its use), d once
    assert {e: u["model_calls"] for e, u in usage["by_executor"].items()} == {
        "a": 1, "b": 1, "c": 2, "d": 1,
    }  # fmt: skip
    assert usage["total"]["model_calls"] == 5
    assert usage["lost_calls"] == {"settled": 0, "in_flight": 1}
    # each call that ran: prompt "x ok"/"a go" is 2 words in, 5 out: $0.002 + $0.010; the
    # lost one reserved "c ok" (4 bytes + 16 = 20 tokens in) and max_tokens 10 out: $0.04
    assert usage["by_executor"]["c"]["usd"] == pytest.approx(0.012 + 0.04)
    assert usage["budgets"]["run"]["spent"]["usd"] == pytest.approx(4 * 0.012 + 0.04)
    assert usage["budgets"]["run"]["limits"] == {"usd": 1}

    # plait spend and the run lists' summary say so too, from the latest checkpoint
    spend = subprocess.run(
        [sys.executable, "-m", "plait_cli", "spend", "budgeted", "--checkpoint", store, "--json"],
        capture_output=True, text=True, cwd=Path(__file__).parent, timeout=120,
    )  # fmt: skip
    assert spend.returncode == 0, spend.stderr
    [row] = json.loads(spend.stdout)
    assert row["spend"]["lost_calls"] == {"settled": 0, "in_flight": 1}
    assert row["spend"]["spent"]["run"]["model_calls"] == 5


def test_kill_9_counts_a_call_that_ended_in_the_lost_superstep_at_its_use(tmp_path: Path) -> None:
    # p and q run in one superstep: p's call ends (its use is in the journal), q's is in
    # flight when the process dies; the superstep never committed, so both run again
    import anyio
    from plait_durable import open_store, read_journal

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    log = tmp_path / "calls.log"
    victim = spawn(CRASHY, "run", store, "fan-1", str(log))

    async def settled() -> int:
        opened = open_store(store)
        try:
            events = await read_journal(opened, "fan-1") or []
        finally:
            await opened.aclose()
        return sum(1 for e in events if e.kind == "call_settled")

    wait_until(
        lambda: log.exists() and "budget-test q go" in log.read_text() and anyio.run(settled) == 1,
        "p ended while q was in flight",
        process=victim,
    )
    kill(victim)

    usage = json.loads(finish(spawn(CRASHY, "resume", store, "fan-1", str(log))))["usage"]
    assert usage["lost_calls"] == {"settled": 1, "in_flight": 1}
    assert {e: u["model_calls"] for e, u in usage["by_executor"].items()} == {"p": 2, "q": 2}
    # p: twice at its use ($0.012); q: once at its use, once at its reservation ("q go":
    # 4 bytes + 16 in, 10 out: $0.04)
    assert usage["budgets"]["run"]["spent"]["usd"] == pytest.approx(3 * 0.012 + 0.04)
