"""Runs on a task queue, end to end: ``plait worker`` processes on real PostgreSQL and Redis
(started by the fixtures), submitted runs, SIGTERM, SIGKILL, cancel, answers and grants."""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from plait_cli import make_cli
from plait_workers import QueueError, answer, cancel, queued_runs, submit
from plait_workers._cancel import cancelled_record
from workers_support import HERE, WorkerFactory, latest_status, read_effects, wait_for

STEPS = 5


def _submit(store: str, queue: str, target: str, value: object, **kw: object) -> str:
    return anyio.run(lambda: submit(target, value, store=store, queue=queue, **kw))  # type: ignore[arg-type]


def _states(store: str, queue: str) -> dict[str, str]:
    runs = anyio.run(lambda: queued_runs(store=store, queue=queue))
    found = {run.run_id: run.state for run in runs}
    print("queue:", found)  # (shown when a test fails)
    return found


def _outputs(effects: Path) -> dict[str, str]:
    return {line[1]: line[2] for line in read_effects(effects) if line[0] == "output"}


def _effect_counts(effects: Path, run_id: str) -> collections.Counter[str]:
    return collections.Counter(
        line[2] for line in read_effects(effects) if line[0] == "effect" and line[1] == run_id
    )


def _clean_output(value: int) -> str:
    """What a clean run of ``workers_app:chain`` on ``value`` outputs."""
    for i in range(STEPS):
        value = value * 10 + i
    return str(value)


def _done(store: str, run_ids: list[str]) -> bool:
    return all((latest_status(store, r) or ("", 0))[0] == "idle" for r in run_ids)


def test_submitted_runs_return_an_id_at_once_and_a_worker_runs_them(
    store: str, queue: str, effects: Path, start_worker: WorkerFactory
) -> None:
    run_ids = [_submit(store, queue, "workers_app:chain", i) for i in range(3)]
    assert len(set(run_ids)) == 3
    # nothing runs them yet: they are queued, with no checkpoint
    assert _states(store, queue) == dict.fromkeys(run_ids, "queued")
    assert all(latest_status(store, r) is None for r in run_ids)
    start_worker("--allow-imports", "--concurrency", "3", sleep=0.05)
    wait_for(lambda: _done(store, run_ids), 60, "the three runs finish")
    outputs = _outputs(effects)
    assert {r: outputs[r] for r in run_ids} == {r: _clean_output(i) for i, r in enumerate(run_ids)}
    for run_id in run_ids:  # each step's side effect once: nothing was interrupted
        assert sorted(_effect_counts(effects, run_id).values()) == [1] * STEPS
    wait_for(lambda: set(_states(store, queue).values()) == {"done"}, 30, "the queue says done")
    assert set(_states(store, queue)) == set(run_ids), _states(store, queue)


def test_sigterm_finishes_the_superstep_checkpoints_and_exits_0(
    store: str, queue: str, effects: Path, start_worker: WorkerFactory
) -> None:
    run_id = _submit(store, queue, "workers_app:chain", 7)
    worker = start_worker("--allow-imports", sleep=1.0)
    wait_for(lambda: _effect_counts(effects, run_id), 60, "the first step ran")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    status, superstep = latest_status(store, run_id) or ("", 0)
    assert status == "running" and 1 <= superstep < STEPS
    # every step that ran was checkpointed: none is run again by the next worker
    ran = _effect_counts(effects, run_id)
    assert len(ran) == superstep
    # the run went back on the queue, its lease given back: another worker finishes it
    wait_for(lambda: _states(store, queue).get(run_id) == "queued", 10, "the run is requeued")
    start_worker("--allow-imports", sleep=0.05)
    wait_for(lambda: _done(store, [run_id]), 60, "the second worker finishes the run")
    assert _outputs(effects)[run_id] == _clean_output(7)
    assert sorted(_effect_counts(effects, run_id).values()) == [1] * STEPS


def test_a_worker_killed_mid_superstep_is_recovered_by_another(
    store: str, queue: str, effects: Path, start_worker: WorkerFactory
) -> None:
    run_ids = [_submit(store, queue, "workers_app:chain", i) for i in range(2)]
    victim = start_worker("--allow-imports", "--lease-ttl", "5", sleep=0.7)
    wait_for(lambda: all(_effect_counts(effects, r) for r in run_ids), 60, "both runs took a step")
    victim.send_signal(signal.SIGKILL)  # mid-superstep: steps sleep 0.7 s between effects
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert not _done(store, run_ids)
    start_worker("--allow-imports", "--lease-ttl", "5", sleep=0.05)
    # the queue's sweep hands the jobs on (heartbeat 5 s, sweep 1 s, 5 s for the dead
    # worker's abort), the lease of a dead process is free: no person types anything
    wait_for(lambda: _done(store, run_ids), 60, "another worker finishes both runs")
    outputs = _outputs(effects)
    assert {r: outputs[r] for r in run_ids} == {r: _clean_output(i) for i, r in enumerate(run_ids)}
    for run_id in run_ids:
        counts = _effect_counts(effects, run_id)
        assert len(counts) == STEPS  # every step's key; a re-run keeps its key
        # at most the interrupted superstep ran twice (at least once, documented)
        assert sum(counts.values()) - STEPS <= 1, counts


def test_a_waiting_run_holds_no_worker_and_an_answer_requeues_it(
    store: str, queue: str, effects: Path, start_worker: WorkerFactory
) -> None:
    start_worker("--allow-imports", "--concurrency", "1", sleep=0.05)
    waiting = _submit(store, queue, "workers_app:review", "release")
    wait_for(
        lambda: (latest_status(store, waiting) or ("",))[0] == "idle_with_pending_requests",
        60,
        "the review run waits for an answer",
    )
    # the only slot is free: a second run runs to the end while the first waits
    other = _submit(store, queue, "workers_app:chain", 3)
    wait_for(lambda: _done(store, [other]), 60, "a run finishes while the other waits")
    assert (latest_status(store, waiting) or ("",))[0] == "idle_with_pending_requests"
    request_id = _pending_request(store, waiting)
    wrong = CliRunner().invoke(
        make_cli(), ["answer", other, request_id, "true", "--checkpoint", store, "--queue", queue]
    )
    assert wrong.exit_code == 1 and "is idle, not waiting for answers" in wrong.output
    answered = CliRunner().invoke(
        make_cli(),
        ["answer", waiting, request_id, "true", "--checkpoint", store, "--queue", queue],
    )
    assert answered.exit_code == 0, answered.output
    wait_for(lambda: _done(store, [waiting]), 60, "the answered run finishes")
    assert _outputs(effects)[waiting] == "approved"


def _pending_request(store: str, run_id: str) -> str:
    sys.path.insert(0, str(HERE))
    import workers_app

    async def look() -> str:
        (request,) = await workers_app.review().pending_requests(run_id, store)
        return str(request.request_id)

    return anyio.run(look)


def test_cancel_a_queued_run_and_a_running_one(
    store: str, queue: str, effects: Path, start_worker: WorkerFactory
) -> None:
    queued = _submit(store, queue, "workers_app:chain", 1)
    assert anyio.run(lambda: cancel(queued, store=store, queue=queue)) == "queued"
    assert _states(store, queue)[queued] == "cancelled"
    worker = start_worker("--allow-imports", sleep=1.0)
    running = _submit(store, queue, "workers_app:chain", 2)
    wait_for(lambda: _effect_counts(effects, running), 60, "the run took a step")
    result = CliRunner().invoke(
        make_cli(), ["cancel", running, "--checkpoint", store, "--queue", queue]
    )
    assert result.exit_code == 0, result.output
    assert "(it was running)" in result.output
    wait_for(
        lambda: _states(store, queue)[running] == "cancelled",
        30,
        "the run is cancelled",
    )
    status, superstep = latest_status(store, running) or ("", 0)
    # stopped at a superstep boundary, checkpointed: every step that ran is in it; the
    # cancellation is recorded as the run's failure, which plait runs shows
    assert status == "failed" and superstep == len(_effect_counts(effects, running)) < STEPS
    listed = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", store, "--json"])
    assert listed.exit_code == 0, listed.output
    (row,) = [row for row in json.loads(listed.output) if row["run_id"] == running]
    assert row["status"] == "failed"
    assert row["error"].startswith("RunCancelled")
    assert "cancelled with plait cancel" in row["error"]
    record = cancelled_record(_latest_metadata(store, running))
    assert record is not None and record["superstep"] == superstep
    assert str(record["by"]).endswith(f":{worker.pid}")
    assert latest_status(store, queued) is None  # the queued run never started
    assert worker.poll() is None  # the worker goes on
    with pytest.raises(QueueError, match=r"is cancelled|not on the queue"):
        anyio.run(lambda: cancel(running, store=store, queue=queue))
    assert _states(store, queue)[running] == "cancelled"


def _latest_metadata(store: str, run_id: str) -> dict[str, Any]:
    from plait_durable import opened_store

    async def look() -> dict[str, Any]:
        async with opened_store(store) as opened:
            latest = await opened.latest(run_id)
            assert latest is not None
            return dict(latest.metadata)

    return anyio.run(look)


SHELL = """\
name: pwn
workflow:
  steps:
    - id: pwn
      type: executor
      kind: shell
      config: {argv: [sh, -c, "id > PWNED"], input: none}
"""


def test_an_untrusted_document_needs_the_workers_grant(
    store: str, queue: str, tmp_path: Path, start_worker: WorkerFactory
) -> None:
    document = tmp_path / "pwn.yaml"
    document.write_text(SHELL)
    run_id = _submit(store, queue, str(document), "")
    ungranted = start_worker(cwd=tmp_path)  # no --allow subprocess
    wait_for(lambda: _states(store, queue).get(run_id) == "refused", 60, "the run is refused")
    (refused,) = anyio.run(lambda: queued_runs(store=store, queue=queue, states=("refused",)))
    assert "needs subprocess" in (refused.error or "")
    assert "--allow subprocess" in (refused.error or "")
    assert not (tmp_path / "PWNED").exists()
    assert latest_status(store, run_id) is None
    # a Python target needs the worker's --allow-imports
    python = _submit(store, queue, "workers_app:chain", 1)
    wait_for(lambda: _states(store, queue).get(python) == "refused", 60, "python is refused")
    ungranted.send_signal(signal.SIGTERM)  # (any worker without the grant refuses it)
    assert ungranted.wait(timeout=30) == 0
    granted = _submit(store, queue, str(document), "", run_id="granted-" + run_id)
    start_worker("--allow", "subprocess", cwd=tmp_path)
    wait_for(lambda: _done(store, [granted]), 60, "a worker with the grant runs it")
    assert "uid=" in (tmp_path / "PWNED").read_text()


def test_submit_checks_the_store_and_the_target(redis_url: str, queue: str) -> None:
    with pytest.raises(QueueError, match=r"store 'sqlite:///x.db': workers share runs"):
        _submit("sqlite:///x.db", "q", "workers_app:chain", 1)
    with pytest.raises(QueueError, match=r"TARGET 'nope.yaml': no such file"):
        _submit(redis_url, "q", "nope.yaml", 1)
    result = CliRunner().invoke(
        make_cli(), ["submit", "workers_app:chain", "1", "--checkpoint", "file:///tmp/x"]
    )
    assert result.exit_code == 1 and "workers share runs through PostgreSQL or Redis" in (
        result.output
    )
    # a queue of this test's own: a name reused by another session on the same server
    # (the whole suite, then the plugin alone) would find run r1 there already
    first = _submit(redis_url, queue, "workers_app:chain", 1, run_id="r1")
    with pytest.raises(QueueError, match=r"run r1 is already on queue"):
        _submit(redis_url, queue, "workers_app:chain", 1, run_id=first)


def test_answer_checks_the_run(store: str, queue: str) -> None:
    with pytest.raises(QueueError, match=r"no run 'ghost' in"):
        anyio.run(lambda: answer("ghost", {"r": True}, store=store, queue=queue))


def test_the_cli_submits_and_lists(store: str, queue: str) -> None:
    result = CliRunner().invoke(
        make_cli(),
        [
            "submit",
            "workers_app:chain",
            "4",
            "--json-input",
            "--checkpoint",
            store,
            "--queue",
            queue,
        ],
    )
    assert result.exit_code == 0, result.output
    run_id = result.output.strip()
    listed = CliRunner().invoke(make_cli(), ["queue", "--checkpoint", store, "--queue", queue])
    assert listed.exit_code == 0
    assert listed.output.split()[:2] == [run_id, "queued"]
    assert "workers_app:chain" in listed.output


def test_plait_worker_refuses_a_store_without_a_queue() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "plait_cli", "worker", "--checkpoint", "sqlite:///x.db"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "workers share runs through PostgreSQL or Redis" in done.stderr


CAT = "name: cat\nworkflow:\n  - {id: a, type: executor, kind: shell, config: {argv: [cat]}}\n"


def test_a_workers_run_records_the_document_it_loaded(
    store: str, queue: str, tmp_path: Path, start_worker: WorkerFactory
) -> None:
    from plait_documents import SourceDocument
    from plait_durable import opened_store, stored_document

    document = tmp_path / "cat.yaml"
    document.write_text(CAT)
    run_id = _submit(store, queue, str(document), "hi")
    start_worker("--allow", "subprocess", cwd=tmp_path)
    wait_for(lambda: _done(store, [run_id]), 60, "a worker runs the document")

    async def recorded() -> Any:
        async with opened_store(store) as opened:
            latest = await opened.latest(run_id)
            assert latest is not None
            return await stored_document(opened, latest)

    assert anyio.run(recorded) == SourceDocument("cat.yaml", "steps", CAT)
