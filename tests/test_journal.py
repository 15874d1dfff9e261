"""The event journal of a run (run option ``journal=True``): what the runner's observer
seam records, saved with each superstep's checkpoint, on real stores."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from plait import (
    ExecutorFailedError,
    Never,
    RetryPolicy,
    RunOptionError,
    RunStatus,
    WorkflowContext,
    executor,
)
from plait_builders import WorkflowBuilder
from plait_durable import CheckpointStore, EventJournal, JournalEvent, read_journal
from plait_stores import FileCheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "file", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    opened: Any = {
        "memory": lambda: MemoryCheckpointStore(),
        "file": lambda: FileCheckpointStore(tmp_path / "runs"),
        "sqlite": lambda: SqliteCheckpointStore(tmp_path / "runs.db"),
    }[request.param]()
    yield opened
    await opened.aclose()


def flaky_workflow(tries: dict[str, int], *, fail_last: bool = False) -> Any:
    """``first`` → ``flaky`` (fails once, then works; retried) → ``slow`` (times out
    once, then works) → ``last`` (raises when ``fail_last``)."""

    @executor(id="first")
    async def first(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)

    @executor(id="flaky", retry=RetryPolicy(max_attempts=2, delay=0))
    async def flaky(n: int, ctx: WorkflowContext[int]) -> None:
        tries["flaky"] = tries.get("flaky", 0) + 1
        if tries["flaky"] == 1:
            raise ValueError("not yet <b>")
        await ctx.send_message(n + 1)

    @executor(id="slow", timeout=0.05, retry=RetryPolicy(max_attempts=2, delay=0))
    async def slow(n: int, ctx: WorkflowContext[int]) -> None:
        tries["slow"] = tries.get("slow", 0) + 1
        if tries["slow"] == 1:
            await anyio.sleep(10)
        await ctx.send_message(n + 1)

    @executor(id="last")
    async def last(n: int, ctx: WorkflowContext[Never, int]) -> None:
        if fail_last:
            raise KeyError("missing")
        await ctx.yield_output(n)

    builder = WorkflowBuilder("journaled")
    builder.add_edge(first, flaky).add_edge(flaky, slow).add_edge(slow, last)
    return builder.set_start(first).build()


def kinds(events: Any) -> list[tuple[str, str | None, int | None]]:
    return [(e.kind, e.executor, e.attempt) for e in events if e.kind != "superstep_started"]


async def test_a_journaled_run_records_attempts_retries_and_timeouts(
    store: CheckpointStore,
) -> None:
    workflow = flaky_workflow({})
    result = await workflow.run(1, checkpoint=store, journal=True)
    assert result.outputs == [4]
    events = await read_journal(store, result.run_id)
    assert events is not None
    assert kinds(events) == [
        ("invocation_started", "first", 1),
        ("invocation_finished", "first", 1),
        ("invocation_started", "flaky", 1),
        ("attempt_failed", "flaky", 1),
        ("invocation_finished", "flaky", 2),
        ("invocation_started", "slow", 1),
        ("attempt_failed", "slow", 1),
        ("invocation_finished", "slow", 2),
        ("invocation_started", "last", 1),
        ("invocation_finished", "last", 1),
        ("run_finished", None, None),
    ]
    by_kind = {(e.kind, e.executor): e for e in events}
    failed = by_kind["attempt_failed", "flaky"]
    assert failed.error is not None and failed.error["type"] == "ValueError"
    assert failed.error["message"] == "not yet <b>"
    assert "raise ValueError" in failed.error["traceback"]
    assert not failed.timeout and failed.delay == 0
    assert by_kind["attempt_failed", "slow"].timeout
    assert by_kind["invocation_finished", "slow"].status == "ok"
    assert by_kind["run_finished", None].status == "idle"
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    started = by_kind["invocation_started", "slow"]
    finished = by_kind["invocation_finished", "slow"]
    assert finished.mono >= started.mono and finished.wall >= started.wall
    steps = [e.superstep for e in events if e.kind == "superstep_started"]
    assert steps == [1, 2, 3, 4]


async def test_a_failed_invocation_records_its_error(store: CheckpointStore) -> None:
    workflow = flaky_workflow({}, fail_last=True)
    result = await workflow.run(1, checkpoint=store, journal=True, raise_on_failure=False)
    assert result.status is RunStatus.FAILED
    assert isinstance(result.error, ExecutorFailedError)
    events = await read_journal(store, result.run_id)
    assert events is not None
    last = [e for e in events if e.executor == "last" and e.kind == "invocation_finished"]
    assert [(e.status, e.error["type"] if e.error else None) for e in last] == [
        ("failed", "KeyError")
    ]
    assert events[-1].kind == "run_finished" and events[-1].status == "failed"


async def test_a_run_without_journal_writes_none(store: CheckpointStore) -> None:
    result = await flaky_workflow({}).run(1, checkpoint=store)
    assert await read_journal(store, result.run_id) == []


async def test_each_superstep_s_events_are_saved_with_its_checkpoint() -> None:
    """What the journal holds when a superstep's checkpoint is in the store: that
    superstep's events (a crash after it loses none of them)."""
    seen: list[tuple[int, int]] = []

    class Watching(MemoryCheckpointStore):
        async def save_with_events(self, checkpoint: Any, events: Any, **kw: Any) -> None:
            await super().save_with_events(checkpoint, events, **kw)
            journal = await self.read_events(checkpoint.run_id)
            seen.append((checkpoint.superstep, max((e.superstep for e in journal), default=0)))

    store = Watching()
    await flaky_workflow({}).run(1, checkpoint=store, journal=True)
    assert {step for step, _ in seen} == {0, 1, 2, 3, 4}
    assert all(journaled >= step for step, journaled in seen), seen


async def test_journal_needs_a_store_that_keeps_one() -> None:
    with pytest.raises(RunOptionError, match="journal=True needs checkpoint"):
        await flaky_workflow({}).run(1, journal=True)

    class NoJournal:  # a store with the protocol's methods and no journal
        def __init__(self) -> None:
            self.inner = MemoryCheckpointStore()

        def __getattr__(self, name: str) -> Any:
            if name in ("save_with_events", "append_events", "read_events"):
                raise AttributeError(name)
            return getattr(self.inner, name)

    plain = NoJournal()
    assert not isinstance(plain, EventJournal)
    with pytest.raises(RunOptionError, match="keeps an event journal"):
        await flaky_workflow({}).run(1, checkpoint=plain, journal=True)
    assert await read_journal(plain, "x") is None  # type: ignore[arg-type]


def test_journal_events_refuse_what_they_do_not_know() -> None:
    from plait_durable import CorruptCheckpointError

    good = JournalEvent("invocation_started", 1, 1.0, 2.0, "a", attempt=1)
    assert JournalEvent.from_json(good.to_json(), seq=3, where="here").seq == 3
    for bad in (
        "[]",
        '{"kind": "boom", "superstep": 1, "wall": 1, "mono": 1}',
        '{"kind": "run_finished", "superstep": "1", "wall": 1, "mono": 1}',
        '{"kind": "run_finished", "superstep": 1, "wall": 1, "mono": 1, "module": "os"}',
        '{"kind": "run_finished", "superstep": 1, "wall": 1, "mono": 1, "error": {"type": 1}}',
        "not json",
    ):
        with pytest.raises(CorruptCheckpointError, match="journal event 3 of here"):
            JournalEvent.from_json(bad, seq=3, where="here")


async def test_a_run_without_journal_builds_nothing_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Off means free: no journal observer, no store wrapper, no event object."""
    import plait_durable._journal
    import plait_durable._journalevents

    made: list[str] = []
    for module, name in (
        (plait_durable._journal, "RunJournal"),
        (plait_durable._journal, "JournaledStore"),
        (plait_durable._journalevents, "JournalEvent"),
    ):
        cls = getattr(module, name)
        original = cls.__init__

        def counting(
            self: Any, *args: Any, _name: str = name, _init: Any = original, **kw: Any
        ) -> None:
            made.append(_name)
            _init(self, *args, **kw)

        monkeypatch.setattr(cls, "__init__", counting)
    store = MemoryCheckpointStore()
    await flaky_workflow({}).run(1, checkpoint=store)
    assert made == []
    await flaky_workflow({}).run(1, checkpoint=store, journal=True)
    assert {"RunJournal", "JournaledStore", "JournalEvent"} <= set(made)  # the counters count
