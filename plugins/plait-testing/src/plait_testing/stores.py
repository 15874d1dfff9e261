"""The contract every checkpoint store keeps, as a pytest test class.

It reads runs back through ``plait-durable`` (the run index, views, blobs), which every
store distribution depends on: install ``plait-testing[durable]`` where it is not there.

Subclass :class:`CheckpointStoreContract` in a test module under a ``Test…`` name and
provide:

- a ``store`` fixture: an async generator fixture that yields an open store and closes it
  afterwards;
- ``async def corrupt(self, store, checkpoint_id)``: flip one byte of that checkpoint's
  stored bytes where the store really keeps them (the file, the row, the key), so the
  test sees what a damaged disk or a bad write leaves behind;
- ``def reopen(self, store)``: a second, independent store object on the same backing
  (same directory, file, database or server) — what a resume in a new process gets.

For example::

    from plait_testing.stores import CheckpointStoreContract
    from plait_stores import SqliteCheckpointStore

    class TestSqliteStore(CheckpointStoreContract):
        @pytest.fixture
        async def store(self, tmp_path):
            store = SqliteCheckpointStore(tmp_path / "runs.db")
            yield store
            await store.aclose()

        async def corrupt(self, store, checkpoint_id): ...

        def reopen(self, store):
            return SqliteCheckpointStore(store.path)

Every test runs on asyncio and on trio through the anyio pytest plugin (the
``anyio_backend`` fixture of the class). A store whose client library runs only on
asyncio overrides ``anyio_backend`` to return ``"asyncio"`` and says why.

Run ids are fresh UUIDs in every test, so a suite can share one database or server with
other suites and with itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
import attrs
import pytest
from plait import CheckpointError
from plait_durable import (
    BlobWriter,
    Checkpoint,
    CheckpointNotFoundError,
    CheckpointStore,
    CorruptCheckpointError,
    EventJournal,
    JournalEvent,
    LeaseHolder,
    RunInfo,
    RunLeaseError,
    blob_hash,
    blob_refs,
    checkpoint_view,
    diff_views,
    externalize_state,
    fork_run,
    has_blobs,
    list_runs,
    load_blob,
    read_journal,
    resolve_state,
)

__all__ = [
    "CheckpointStoreContract",
    "SameBacking",
    "EventJournalContract",
    "journal_event",
    "flip_byte",
    "dead_pid",
    "make_checkpoint",
    "new_run_id",
]


def dead_pid() -> int:
    """The pid of a process of this host that has exited (for a lease left by a dead
    worker)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _elsewhere(label: str) -> LeaseHolder:
    """A holder on another host: only its lease's expiry frees it."""
    return LeaseHolder(f"elsewhere-{label}.invalid", 1, time.time(), uuid.uuid4().hex)


def new_run_id(label: str = "run") -> str:
    """A run id no other test uses: ``label`` plus a UUID."""
    return f"{label}-{uuid.uuid4().hex}"


def flip_byte(data: bytes, position: int = -1) -> bytes:
    """``data`` with the byte at ``position`` XOR-ed with 1.

    The default, the last byte, lies in the checksummed JSON body of
    :func:`~plait_durable.encode_checkpoint`'s bytes: what ``corrupt`` hooks flip.
    """
    damaged = bytearray(data)
    damaged[position] ^= 0x01
    return bytes(damaged)


def make_checkpoint(
    run_id: str,
    superstep: int = 0,
    *,
    parent_id: str | None = None,
    status: str = "running",
    state: dict[str, Any] | None = None,
    checkpoint_id: str | None = None,
    base_id: str | None = None,
) -> Checkpoint:
    """A checkpoint of ``run_id`` with a fresh id and a small, JSON-ready state.

    With ``base_id`` it is a delta building on that full checkpoint, and its default state
    names the base as the runner's deltas do (``state["base"]``).
    """
    if state is None:
        state = {"superstep": superstep, "pending": []}
        if base_id is not None:
            state.update(kind="delta", base=base_id)
    return Checkpoint(
        checkpoint_id=checkpoint_id or uuid.uuid4().hex,
        run_id=run_id,
        superstep=superstep,
        parent_id=parent_id,
        signature="sig-" + "0" * 60,
        status=status,
        created_at=time.time(),
        state=state,
        metadata={"workflow": "contract"},
        base_id=base_id,
    )


def _chain(run_id: str, supersteps: Sequence[int]) -> list[Checkpoint]:
    """Checkpoints of one run, each the parent of the next."""
    out: list[Checkpoint] = []
    for superstep in supersteps:
        parent = out[-1].checkpoint_id if out else None
        out.append(make_checkpoint(run_id, superstep, parent_id=parent))
    return out


async def _save_all(store: CheckpointStore, checkpoints: Sequence[Checkpoint]) -> None:
    for checkpoint in checkpoints:
        await store.save(checkpoint)


async def _ids(store: CheckpointStore, run_id: str) -> list[str]:
    return [info.checkpoint_id for info in await store.list(run_id)]


class SameBacking:
    """What every store suite of this package asks of a store's test class besides its
    ``store`` fixture: ``reopen(store)``. :class:`CheckpointStoreContract` and the
    conformance suites (:mod:`plait_testing.conformance`) inherit it, so a test class that
    mixes them in provides it once."""

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        """Override: a new, independent store object on the same backing as ``store``
        (as another process would open)."""
        pytest.fail(f"{type(self).__name__} must implement reopen()")


class CheckpointStoreContract(SameBacking):
    """The tests every :class:`~plait_durable.CheckpointStore` must pass.

    See the module docstring for what a subclass provides.
    """

    pytestmark = [pytest.mark.anyio]

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(self, request: pytest.FixtureRequest) -> str:
        """Run every test on asyncio and on trio."""
        return str(request.param)

    @pytest.fixture
    async def store(self) -> AsyncIterator[CheckpointStore]:
        """Override: yield an open store, close it afterwards."""
        pytest.fail(f"{type(self).__name__} must provide a 'store' fixture")
        yield  # pragma: no cover - makes this an async generator like the overrides

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        """Override: flip one byte of the stored bytes of ``checkpoint_id``."""
        pytest.fail(f"{type(self).__name__} must implement corrupt()")

    # -- round trips -----------------------------------------------------------------

    async def test_is_a_checkpoint_store(self, store: CheckpointStore) -> None:
        assert isinstance(store, CheckpointStore), f"{store!r} misses protocol methods"

    async def test_save_load_round_trip(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        state = {
            "pending": [{"target": "writer", "message": {"text": "héllo ✓ \x00", "n": 3}}],
            "float": 0.1,
            "none": None,
            "nested": {"a": [1, [2, [3]]], "b": True},
            "large": "x" * 200_000,
        }
        checkpoint = make_checkpoint(run_id, 4, parent_id="p" * 32, status="idle", state=state)
        await store.save(checkpoint)
        loaded = await store.load(checkpoint.checkpoint_id)
        assert loaded == checkpoint, "a loaded checkpoint differs from the one saved"
        assert list(await store.list(run_id)) == [checkpoint.info]

    async def test_saved_checkpoints_are_visible_to_another_store(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 1])
        await _save_all(store, checkpoints)
        other = self.reopen(store)
        try:
            assert await other.latest(run_id) == checkpoints[-1]
            assert await other.load(checkpoints[0].checkpoint_id) == checkpoints[0]
        finally:
            await other.aclose()

    async def test_saving_the_same_checkpoint_again_does_nothing(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        checkpoint = make_checkpoint(run_id)
        await store.save(checkpoint)
        await store.save(checkpoint)
        assert await _ids(store, run_id) == [checkpoint.checkpoint_id]

    async def test_reusing_an_id_for_other_contents_is_an_error(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        checkpoint = make_checkpoint(run_id, 1)
        await store.save(checkpoint)
        clash = make_checkpoint(run_id, 2, checkpoint_id=checkpoint.checkpoint_id)
        with pytest.raises(CheckpointError, match=checkpoint.checkpoint_id):
            await store.save(clash)
        assert await store.load(checkpoint.checkpoint_id) == checkpoint

    async def test_unusual_ids_round_trip(self, store: CheckpointStore) -> None:
        run_id = new_run_id("run/../ é:*?\\")
        checkpoint = make_checkpoint(run_id, checkpoint_id=new_run_id("../cp ✓/"))
        await store.save(checkpoint)
        assert await store.load(checkpoint.checkpoint_id) == checkpoint
        assert await _ids(store, run_id) == [checkpoint.checkpoint_id]
        assert await store.delete_run(run_id) == 1

    async def test_load_unknown_id_raises_not_found(self, store: CheckpointStore) -> None:
        missing = uuid.uuid4().hex
        with pytest.raises(CheckpointNotFoundError, match=missing):
            await store.load(missing)

    # -- listing and ordering ------------------------------------------------------------

    async def test_list_is_oldest_first_in_insertion_order(self, store: CheckpointStore) -> None:
        # Superstep numbers repeat after a resume from an earlier checkpoint; the order
        # is the order of saving, not of superstep.
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 1, 2, 1, 2, 3, 0])
        await _save_all(store, checkpoints)
        assert list(await store.list(run_id)) == [c.info for c in checkpoints]

    async def test_list_of_unknown_run_is_empty(self, store: CheckpointStore) -> None:
        assert list(await store.list(new_run_id())) == []

    async def test_latest_is_the_last_saved(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 5, 3])
        for checkpoint in checkpoints:
            await store.save(checkpoint)
            assert await store.latest(run_id) == checkpoint

    async def test_latest_of_unknown_run_is_none(self, store: CheckpointStore) -> None:
        assert await store.latest(new_run_id()) is None

    # -- removal ---------------------------------------------------------------------

    async def test_delete(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 1, 2])
        await _save_all(store, checkpoints)
        await store.delete(checkpoints[2].checkpoint_id)
        with pytest.raises(CheckpointNotFoundError):
            await store.load(checkpoints[2].checkpoint_id)
        assert await _ids(store, run_id) == [c.checkpoint_id for c in checkpoints[:2]]
        assert await store.latest(run_id) == checkpoints[1]
        await store.delete(checkpoints[2].checkpoint_id)  # already gone: no error
        await store.delete(uuid.uuid4().hex)
        following = make_checkpoint(run_id, 3, parent_id=checkpoints[1].checkpoint_id)
        await store.save(following)
        assert await store.latest(run_id) == following

    async def test_prune_keeps_the_newest(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 1, 2, 3, 4])
        await _save_all(store, checkpoints)
        # the first checkpoint stays while anything is kept: it holds the topology
        assert await store.prune(run_id, keep_last=2) == 2
        kept = [checkpoints[0], *checkpoints[3:]]
        assert await _ids(store, run_id) == [c.checkpoint_id for c in kept]
        for gone in checkpoints[1:3]:
            with pytest.raises(CheckpointNotFoundError):
                await store.load(gone.checkpoint_id)
        assert await store.prune(run_id, keep_last=2) == 0
        assert await store.prune(run_id, keep_last=10) == 0
        assert await store.prune(run_id, keep_last=0) == 3
        assert await store.latest(run_id) is None
        assert await store.prune(new_run_id(), keep_last=1) == 0
        with pytest.raises(ValueError, match="keep_last"):
            await store.prune(run_id, keep_last=-1)

    async def test_list_and_load_carry_the_base_of_a_delta(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        full = make_checkpoint(run_id, 0)
        delta = make_checkpoint(run_id, 1, parent_id=full.checkpoint_id, base_id=full.checkpoint_id)
        await _save_all(store, [full, delta])
        infos = list(await store.list(run_id))
        assert [i.base_id for i in infos] == [None, full.checkpoint_id]
        assert infos == [full.info, delta.info]
        assert (await store.load(delta.checkpoint_id)).base_id == full.checkpoint_id
        assert await store.latest(run_id) == delta

    async def test_prune_keeps_the_bases_of_kept_deltas(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        c1 = make_checkpoint(run_id, 0)
        c2 = make_checkpoint(run_id, 1, parent_id=c1.checkpoint_id, base_id=c1.checkpoint_id)
        c3 = make_checkpoint(run_id, 2, parent_id=c2.checkpoint_id, base_id=c1.checkpoint_id)
        await _save_all(store, [c1, c2, c3])
        assert await store.prune(run_id, keep_last=2) == 0  # c1 is the base of c2 and c3
        assert await store.prune(run_id, keep_last=1) == 1
        assert await _ids(store, run_id) == [c1.checkpoint_id, c3.checkpoint_id]
        with pytest.raises(CheckpointNotFoundError):
            await store.load(c2.checkpoint_id)
        assert await store.load(c1.checkpoint_id) == c1
        assert await store.latest(run_id) == c3
        assert await store.prune(run_id, keep_last=1) == 0  # idempotent
        # A new full snapshot needs no base: the old base and its delta can go.
        c4 = make_checkpoint(run_id, 3, parent_id=c3.checkpoint_id)
        await store.save(c4)
        assert await store.prune(run_id, keep_last=1) == 1  # c1 stays: it is the first
        assert await _ids(store, run_id) == [c1.checkpoint_id, c4.checkpoint_id]
        with pytest.raises(CheckpointNotFoundError):
            await store.load(c3.checkpoint_id)

    async def test_prune_keeps_only_bases_that_kept_checkpoints_name(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        f1 = make_checkpoint(run_id, 0)
        d1 = make_checkpoint(run_id, 1, parent_id=f1.checkpoint_id, base_id=f1.checkpoint_id)
        f2 = make_checkpoint(run_id, 2, parent_id=d1.checkpoint_id)
        d2 = make_checkpoint(run_id, 3, parent_id=f2.checkpoint_id, base_id=f2.checkpoint_id)
        d3 = make_checkpoint(run_id, 4, parent_id=d2.checkpoint_id, base_id=f2.checkpoint_id)
        other_run = new_run_id()
        elsewhere = make_checkpoint(other_run, 0)
        await _save_all(store, [f1, d1, f2, d2, elsewhere, d3])
        # d3 is kept and names f2; f1 stays as the run's first; d1 and d2 go.
        assert await store.prune(run_id, keep_last=1) == 2
        assert await _ids(store, run_id) == [f1.checkpoint_id, f2.checkpoint_id, d3.checkpoint_id]
        assert await _ids(store, other_run) == [elsewhere.checkpoint_id]
        # keep_last=0 keeps nothing, bases and the first included.
        assert await store.prune(run_id, keep_last=0) == 3
        assert list(await store.list(run_id)) == []
        with pytest.raises(ValueError, match="keep_last"):
            await store.prune(run_id, keep_last=-1)

    async def test_delete_run(self, store: CheckpointStore) -> None:
        run_id, other_run = new_run_id(), new_run_id()
        checkpoints = _chain(run_id, [0, 1, 2])
        others = _chain(other_run, [0])
        await _save_all(store, [*checkpoints, *others])
        assert await store.delete_run(run_id) == 3
        assert list(await store.list(run_id)) == []
        assert await store.latest(run_id) is None
        with pytest.raises(CheckpointNotFoundError):
            await store.load(checkpoints[0].checkpoint_id)
        assert await store.latest(other_run) == others[0]
        assert await store.delete_run(run_id) == 0
        again = make_checkpoint(run_id)
        await store.save(again)
        assert await _ids(store, run_id) == [again.checkpoint_id]

    async def test_runs_are_isolated(self, store: CheckpointStore) -> None:
        first, second = new_run_id(), new_run_id()
        a, b = _chain(first, [0, 1, 2]), _chain(second, [0, 1, 2])
        for x, y in zip(a, b, strict=True):
            await store.save(x)
            await store.save(y)
        assert await _ids(store, first) == [c.checkpoint_id for c in a]
        assert await _ids(store, second) == [c.checkpoint_id for c in b]
        assert await store.prune(first, keep_last=1) == 1
        assert await _ids(store, first) == [a[0].checkpoint_id, a[2].checkpoint_id]
        assert await _ids(store, second) == [c.checkpoint_id for c in b]
        assert await store.latest(second) == b[-1]

    # -- the run listing ----------------------------------------------------------------

    async def test_runs_is_offered(self, store: CheckpointStore) -> None:
        runs = getattr(store, "runs", None)
        if not callable(runs):
            pytest.fail(
                f"{type(store).__name__} has no runs(*, limit=None) method: every checkpoint "
                "store lists its runs, newest first (see plait_durable.CheckpointStore.runs)"
            )

    async def test_runs_lists_each_run_from_its_latest_checkpoint(
        self, store: CheckpointStore
    ) -> None:
        waiting, failed = new_run_id("waiting"), new_run_id("failed")
        now = time.time()
        error = {"executor": "parse", "type": "ValueError", "message": "bad", "superstep": 2}
        saved = [
            *_chain(waiting, [0, 1]),
            make_checkpoint(failed, 0),
            make_checkpoint(
                waiting,
                2,
                status="idle_with_pending_requests",
                state={"pending": {}, "requests": [{"request_id": "a"}, {"request_id": "b"}]},
            ),
            attrs.evolve(
                make_checkpoint(failed, 1, status="failed"),
                metadata={"workflow": "other", "error": error},
            ),
        ]
        saved = [attrs.evolve(c, created_at=now + i) for i, c in enumerate(saved)]
        await _save_all(store, saved)
        listed = [r for r in await store.runs() if r.run_id in (waiting, failed)]
        assert [r.run_id for r in listed] == [failed, waiting], "runs() is not newest first"
        assert listed[0] == RunInfo(
            run_id=failed,
            workflow="other",
            status="failed",
            superstep=1,
            pending_requests=0,
            error="ValueError in 'parse' (superstep 2): bad",
            created_at=now + 2,
            updated_at=now + 4,
        )
        assert listed[1] == RunInfo(
            run_id=waiting,
            workflow="contract",
            status="idle_with_pending_requests",
            superstep=2,
            pending_requests=2,
            error=None,
            created_at=now,
            updated_at=now + 3,
        )

    async def test_runs_limit_keeps_the_newest(self, store: CheckpointStore) -> None:
        ids = [new_run_id(f"limit{i}") for i in range(3)]
        now = time.time() + 100  # newer than anything another test saved
        await _save_all(
            store, [attrs.evolve(make_checkpoint(r), created_at=now + i) for i, r in enumerate(ids)]
        )
        assert [r.run_id for r in await store.runs(limit=2)] == [ids[2], ids[1]]
        assert list(await store.runs(limit=0)) == []
        with pytest.raises(ValueError, match="limit"):
            await store.runs(limit=-1)

    async def test_runs_leaves_out_deleted_runs(self, store: CheckpointStore) -> None:
        gone, kept = new_run_id("gone"), new_run_id("kept")
        await _save_all(store, [*_chain(gone, [0, 1]), make_checkpoint(kept)])
        await store.delete_run(gone)
        listed = {r.run_id for r in await store.runs()}
        assert kept in listed and gone not in listed
        single = make_checkpoint(new_run_id("single"))
        await store.save(single)
        await store.delete(single.checkpoint_id)
        assert single.run_id not in {r.run_id for r in await store.runs()}

    async def test_runs_lists_a_run_whose_latest_checkpoint_is_corrupt_as_corrupt(
        self, store: CheckpointStore
    ) -> None:
        # One damaged run must not hide the others.
        sound, damaged = new_run_id("sound"), new_run_id("damaged")
        checkpoints = [*_chain(sound, [0, 1]), *_chain(damaged, [0, 1])]
        await _save_all(store, checkpoints)
        await self.corrupt(store, checkpoints[-1].checkpoint_id)
        listed = {r.run_id: r for r in await store.runs() if r.run_id in (sound, damaged)}
        assert listed.keys() == {sound, damaged}, "a corrupt run hid the listing"
        assert (listed[sound].status, listed[sound].superstep) == ("running", 1)
        bad = listed[damaged]
        assert (bad.status, bad.workflow, bad.superstep) == ("corrupt", None, -1)
        assert bad.error is not None and checkpoints[-1].checkpoint_id in bad.error, bad.error

    # -- concurrency and damage ---------------------------------------------------------

    async def test_concurrent_saves_are_all_readable(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        checkpoints = [make_checkpoint(run_id, i) for i in range(50)]
        async with anyio.create_task_group() as tg:
            for checkpoint in checkpoints:
                tg.start_soon(store.save, checkpoint)
        listed = await _ids(store, run_id)
        assert sorted(listed) == sorted(c.checkpoint_id for c in checkpoints)
        for checkpoint in checkpoints:
            assert await store.load(checkpoint.checkpoint_id) == checkpoint
        latest = await store.latest(run_id)
        assert latest is not None and latest.checkpoint_id == listed[-1]

    async def test_corrupt_checkpoint_is_an_error_naming_run_and_checkpoint(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        checkpoints = _chain(run_id, [0, 1, 2])
        await _save_all(store, checkpoints)
        damaged = checkpoints[1].checkpoint_id
        await self.corrupt(store, damaged)
        with pytest.raises(CorruptCheckpointError) as caught:
            await store.load(damaged)
        message = str(caught.value)
        assert run_id in message and damaged in message, f"error does not name it: {message}"
        assert await store.load(checkpoints[0].checkpoint_id) == checkpoints[0]
        assert await store.load(checkpoints[2].checkpoint_id) == checkpoints[2]
        assert await store.latest(run_id) == checkpoints[2]
        assert await _ids(store, run_id) == [c.checkpoint_id for c in checkpoints]
        # A corrupt newest checkpoint is an error too, never a silent step back.
        await self.corrupt(store, checkpoints[2].checkpoint_id)
        with pytest.raises(CorruptCheckpointError, match=checkpoints[2].checkpoint_id):
            await store.latest(run_id)

    # -- one writer per run ------------------------------------------------------------

    async def test_a_live_run_has_one_lease_and_its_holder_is_named(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        lease = await store.acquire_lease(run_id, ttl=30)
        with pytest.raises(RunLeaseError, match=rf"pid {os.getpid()}, since"):
            await store.acquire_lease(run_id, ttl=30)
        renewed = await store.renew_lease(lease, ttl=60)
        assert renewed.token == lease.token and renewed.expires_at >= lease.expires_at
        checkpoint = make_checkpoint(run_id)
        await store.save(checkpoint, lease=renewed)
        await store.release_lease(renewed)
        again = await store.acquire_lease(run_id, ttl=30)
        assert again.token > lease.token  # a token is never handed out twice
        await store.release_lease(again)
        assert await store.latest(run_id) == checkpoint

    async def test_a_holder_on_another_host_keeps_its_lease_until_it_expires(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        far = await store.acquire_lease(run_id, ttl=30, holder=_elsewhere("a"))
        with pytest.raises(RunLeaseError, match="elsewhere-a.invalid"):
            await store.acquire_lease(run_id, ttl=30)
        short = await store.acquire_lease(new_run_id(), ttl=0.001, holder=_elsewhere("b"))
        await anyio.sleep(0.05)  # let it expire: never renewed
        taken = await store.acquire_lease(short.run_id, ttl=30)
        assert taken.token > short.token
        await store.release_lease(taken)
        await store.release_lease(far)

    async def test_a_dead_holder_on_this_host_loses_its_lease_at_once(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id()
        dead = LeaseHolder(socket.gethostname(), dead_pid(), time.time(), uuid.uuid4().hex)
        old = await store.acquire_lease(run_id, ttl=3600, holder=dead)
        lease = await store.acquire_lease(run_id, ttl=30)
        assert lease.token > old.token
        await store.release_lease(lease)

    async def test_a_stale_holder_can_no_longer_write(self, store: CheckpointStore) -> None:
        run_id = new_run_id()
        stale = await store.acquire_lease(run_id, ttl=0.001, holder=_elsewhere("c"))
        await anyio.sleep(0.05)
        current = await store.acquire_lease(run_id, ttl=30)
        with pytest.raises(RunLeaseError, match="taken over"):
            await store.save(make_checkpoint(run_id), lease=stale)
        with pytest.raises(RunLeaseError, match="taken over"):
            await store.renew_lease(stale, ttl=30)
        save_many = getattr(store, "save_many", None)
        if save_many is not None:
            with pytest.raises(RunLeaseError):
                await save_many([make_checkpoint(run_id), make_checkpoint(run_id)], lease=stale)
        await store.release_lease(stale)  # a stale release changes nothing
        with pytest.raises(RunLeaseError):
            await store.acquire_lease(run_id, ttl=30)
        written = make_checkpoint(run_id)
        await store.save(written, lease=current)
        assert await _ids(store, run_id) == [written.checkpoint_id]
        await store.release_lease(current)

    # -- inspecting runs: the run index, checkpoint views, diffs, forks ---------------------
    # Through plait_durable's functions, so a store that offers RunIndex is checked through
    # its own index and any other through the fallback on runs(). Each test filters on a
    # workflow name of its own: stores are shared between tests.

    async def test_list_runs_filters_by_status_workflow_id_and_time(
        self, store: CheckpointStore
    ) -> None:
        workflow = new_run_id("wf")
        a, b, c = new_run_id("a"), new_run_id("b"), new_run_id("c")
        now = time.time()
        saved = [
            _of(make_checkpoint(a, 0), workflow, now),
            _of(make_checkpoint(b, 0, status="failed"), workflow, now + 10),
            _of(make_checkpoint(c, 0, status="idle"), workflow, now + 20),
            _of(make_checkpoint(a, 1, status="idle"), workflow, now + 30),
        ]
        await _save_all(store, saved)
        everything = await list_runs(store, workflow=workflow)
        assert [r.run_id for r in everything.runs] == [a, c, b], "not newest first"
        assert everything.next_cursor is None
        idle = await list_runs(store, workflow=workflow, status="idle")
        assert [r.run_id for r in idle.runs] == [a, c]
        assert [r.run_id for r in (await list_runs(store, workflow=workflow, search=b)).runs] == [b]
        window = await list_runs(store, workflow=workflow, since=now + 5, until=now + 25)
        assert [r.run_id for r in window.runs] == [c, b]
        assert (await list_runs(store, workflow=new_run_id("none"))).runs == []

    async def test_list_runs_pages_with_a_cursor(self, store: CheckpointStore) -> None:
        workflow = new_run_id("wf")
        ids = [new_run_id(f"page{i}") for i in range(5)]
        await _save_all(store, [_of(make_checkpoint(r), workflow) for r in ids])
        seen: list[str] = []
        cursor: str | None = None
        sizes = []
        while True:
            page = await list_runs(store, workflow=workflow, limit=2, cursor=cursor)
            sizes.append(len(page.runs))
            seen.extend(r.run_id for r in page.runs)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert sizes == [2, 2, 1]
        assert seen == ids[::-1], "pages overlap, skip runs or are not newest first"
        with pytest.raises(ValueError, match="cursor"):
            await list_runs(store, cursor="not a cursor")
        with pytest.raises(ValueError, match="limit"):
            await list_runs(store, limit=0)

    async def test_list_runs_summarises_each_run(self, store: CheckpointStore) -> None:
        workflow = new_run_id("wf")
        run_id = new_run_id("summary")
        now = time.time()
        error = {"executor": "parse", "type": "ValueError", "message": "bad", "superstep": 2}
        first = _of(make_checkpoint(run_id, 0), workflow, now)
        waiting = _of(
            make_checkpoint(
                run_id,
                1,
                status="idle_with_pending_requests",
                state={"pending": {}, "requests": [{"request_id": "q"}]},
            ),
            workflow,
            now + 1,
        )
        failed = attrs.evolve(
            _of(make_checkpoint(run_id, 2, status="failed"), workflow, now + 2),
            metadata={"workflow": workflow, "error": error},
        )
        await store.save(first)
        await store.save(waiting)
        (summary,) = (await list_runs(store, workflow=workflow)).runs
        assert (summary.status, summary.superstep, summary.pending_requests) == (
            "idle_with_pending_requests",
            1,
            1,
        )
        assert (summary.created_at, summary.updated_at) == (now, now + 1)
        assert summary.forked_from is None
        await store.save(failed)
        (summary,) = (await list_runs(store, workflow=workflow)).runs
        assert summary.status == "failed"
        assert summary.error == "ValueError in 'parse' (superstep 2): bad"
        await store.delete(failed.checkpoint_id)
        (summary,) = (await list_runs(store, workflow=workflow)).runs
        assert summary.status == "idle_with_pending_requests", "the index kept a deleted one"
        await store.delete_run(run_id)
        assert (await list_runs(store, workflow=workflow)).runs == []

    async def test_a_checkpoint_view_merges_a_delta_with_its_base(
        self, store: CheckpointStore
    ) -> None:
        run_id = new_run_id("view")
        full = make_checkpoint(
            run_id,
            0,
            state={
                "kind": "full",
                "pending": {"b": [1]},
                "executor_state": {"a": {"n": 1}, "b": {"n": 5}},
                "shared": {"k": "v"},
                "outputs": ["x"],
                "visits": {"a": 1},
                "router_state": {},
                "requests": [],
            },
        )
        delta = make_checkpoint(
            run_id,
            1,
            parent_id=full.checkpoint_id,
            base_id=full.checkpoint_id,
            state={
                "kind": "delta",
                "base": full.checkpoint_id,
                "pending": {"c": [2]},
                "executor_state": {"a": {"n": 2}},
                "outputs": ["y"],
                "visits": {"b": 1},
                "router_state": {},
                "requests": [],
            },
        )
        await _save_all(store, [full, delta])
        view = await checkpoint_view(store, delta.checkpoint_id)
        assert view.base_id == full.checkpoint_id
        assert view.state["executor_state"] == {"a": {"n": 2}, "b": {"n": 5}}
        assert view.state["shared"] == {"k": "v"}
        assert view.state["outputs"] == ["x", "y"]
        assert view.state["visits"] == {"a": 1, "b": 1}
        assert view.state["pending"] == {"c": [2]}
        before = await checkpoint_view(store, full.checkpoint_id)
        changes = {(c.where, c.op) for c in diff_views(before, view)}
        assert changes == {
            ("pending.b", "removed"),
            ("pending.c", "added"),
            ("executor_state.a.n", "changed"),
            ("outputs", "changed"),
        }

    async def test_a_fork_is_a_new_run_linked_both_ways(self, store: CheckpointStore) -> None:
        workflow = new_run_id("wf")
        run_id = new_run_id("origin")
        chain = [_of(c, workflow) for c in _chain(run_id, [0, 1, 2])]
        chain[0] = attrs.evolve(
            chain[0], metadata={"workflow": workflow, "topology": {"start": "a"}}
        )
        await _save_all(store, chain)
        forked = await fork_run(store, run_id, chain[1].checkpoint_id)
        assert forked != run_id
        (copy,) = await store.list(forked)
        loaded = await store.load(copy.checkpoint_id)
        assert loaded.superstep == 1 and loaded.parent_id is None
        assert loaded.state["kind"] == "full"
        assert loaded.metadata["topology"] == {"start": "a"}
        assert loaded.metadata["forked_from"] == {
            "run_id": run_id,
            "checkpoint_id": chain[1].checkpoint_id,
        }
        summaries = {r.run_id: r for r in (await list_runs(store, workflow=workflow)).runs}
        assert summaries[forked].forked_from == run_id
        assert summaries[forked].forked_from_checkpoint == chain[1].checkpoint_id
        forks = await list_runs(store, forked_from=run_id)
        assert [r.run_id for r in forks.runs] == [forked]
        with pytest.raises(CheckpointError, match="belongs to run"):
            await fork_run(store, forked, chain[1].checkpoint_id)
        edited = await fork_run(store, run_id, chain[2].checkpoint_id, edits={"shared": {"k": 1}})
        (copy,) = await store.list(edited)
        loaded = await store.load(copy.checkpoint_id)
        assert loaded.state["shared"] == {"k": 1} and loaded.metadata["edited"] == ["shared"]
        with pytest.raises(ValueError, match="cannot edit outputs"):
            await fork_run(store, run_id, chain[2].checkpoint_id, edits={"outputs": []})

    # -- blobs (plait_durable.BlobStore) -----------------------------------------------------

    async def test_blobs_are_kept_or_values_stay_inline(self, store: CheckpointStore) -> None:
        # a store without blobs keeps every value inline: a run's values still round-trip
        run_id = new_run_id()
        writer = BlobWriter() if has_blobs(store) else None
        checkpoint, blobs = _growing(run_id, 0, 30, writer)
        await _save_with(store, checkpoint, blobs)
        loaded = await store.load(checkpoint.checkpoint_id)
        state = await resolve_state(loaded.state, store=store, run_id=run_id, where="here")
        assert state["shared"]["transcript"] == _transcript(30)
        assert bool(blob_refs(loaded.state)) == has_blobs(store)

    async def test_blobs_round_trip_and_only_what_is_asked_comes_back(
        self, store: CheckpointStore
    ) -> None:
        if not has_blobs(store):
            assert not callable(getattr(store, "get_blobs", None)) or not has_blobs(store)
            return
        run_id = new_run_id()
        blobs = {blob_hash(data): data for data in (b'"one"', b"[1,2,3]", bytes(range(256)))}
        checkpoint = make_checkpoint(run_id, state={"kind": "full"})
        await _save_with(store, checkpoint, blobs)
        await _save_with(store, checkpoint, blobs)  # the same save again does nothing
        wanted = sorted(blobs)[:2]
        missing = blob_hash(b"never stored")
        got = await store.get_blobs(run_id, [*wanted, missing])  # type: ignore[attr-defined]
        assert dict(got) == {h: blobs[h] for h in wanted}
        assert sorted(await store.blob_hashes(run_id)) == sorted(blobs)  # type: ignore[attr-defined]
        other = self.reopen(store)
        try:
            again = await other.get_blobs(run_id, sorted(blobs))  # type: ignore[attr-defined]
            assert dict(again) == blobs
        finally:
            await other.aclose()

    async def test_a_growing_value_costs_what_changed(self, store: CheckpointStore) -> None:
        if not has_blobs(store):
            return
        run_id = new_run_id()
        writer = BlobWriter()
        sizes = []
        for step in range(1, 65):
            checkpoint, blobs = _growing(run_id, step, step, writer)
            await _save_with(store, checkpoint, blobs)
            sizes.append(sum(len(b) for b in blobs.values()) + len(str(checkpoint.state)))
        stored = await store.blob_hashes(run_id)  # type: ignore[attr-defined]
        got = await store.get_blobs(run_id, list(stored))  # type: ignore[attr-defined]
        raw = len(repr(_transcript(64)))
        assert sum(len(data) for data in got.values()) < 2 * raw
        assert max(sizes[32:]) < 4 * _ITEM  # an append writes about one item, never all
        latest = await store.latest(run_id)
        assert latest is not None
        state = await resolve_state(latest.state, store=store, run_id=run_id, where="latest")
        assert state["shared"]["transcript"] == _transcript(64)

    async def test_a_blob_closure_is_every_blob_a_tree_reaches(
        self, store: CheckpointStore
    ) -> None:
        closure = getattr(store, "get_blob_closure", None)
        if not has_blobs(store) or closure is None:
            return  # optional: resolving fetches level by level instead
        run_id = new_run_id()
        checkpoint, blobs = _growing(run_id, 0, 40, BlobWriter())
        await _save_with(store, checkpoint, blobs)
        roots = sorted(blob_refs(checkpoint.state))
        got = await closure(run_id, [*roots, blob_hash(b"absent")])
        assert dict(got) == blobs  # every blob of the tree, nothing else

    async def test_a_checkpoint_read_with_its_blobs_is_the_checkpoint_and_its_closure(
        self, store: CheckpointStore
    ) -> None:
        load_with = getattr(type(store), "load_with_blobs", None)
        latest_with = getattr(type(store), "latest_with_blobs", None)
        if not has_blobs(store) or (load_with is None and latest_with is None):
            return  # optional: a resume calls load/latest, then reads the blobs
        run_id = new_run_id()
        checkpoint, blobs = _growing(run_id, 0, 40, BlobWriter())
        await _save_with(store, checkpoint, blobs)
        roots = blob_refs(checkpoint.state)
        for read, key in ((load_with, checkpoint.checkpoint_id), (latest_with, run_id)):
            if read is None:
                continue
            got, found = await read(store, key)
            assert got is not None and got.checkpoint_id == checkpoint.checkpoint_id
            assert got.state == checkpoint.state
            # the roots at least; what it leaves out, the reader fetches level by level
            assert roots <= set(found) and set(found) <= set(blobs)
            assert all(found[h] == blobs[h] for h in found)
        if latest_with is not None:
            assert await latest_with(store, new_run_id("none")) == (None, {})
        if load_with is not None:
            missing = uuid.uuid4().hex
            with pytest.raises(CheckpointNotFoundError, match=missing):
                await load_with(store, missing)

    async def test_a_missing_or_altered_blob_names_the_checkpoint_and_the_hash(
        self, store: CheckpointStore
    ) -> None:
        if not has_blobs(store):
            return
        run_id = new_run_id()
        data = b'"' + b"v" * 500 + b'"'
        digest = blob_hash(data)
        altered = blob_hash(b'"something else"')
        state = {
            "kind": "full",
            "shared": {"k": {"__plait__": "blob", "h": digest}},
            "other": {"__plait__": "blob", "h": altered},
        }
        checkpoint = make_checkpoint(run_id, state=state)
        # the store does not check what it is given; the reader checks what it reads
        await _save_with(store, checkpoint, {digest: data, altered: b'"tampered"'})
        where = f"run {run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
        loaded = await store.load(checkpoint.checkpoint_id)
        with pytest.raises(CorruptCheckpointError, match=f"{altered} does not match its hash"):
            await resolve_state(loaded.state, store=store, run_id=run_id, where=where)
        missing = blob_hash(b'"gone"')
        lacking = make_checkpoint(run_id, 1, state={"v": {"__plait__": "blob", "h": missing}})
        await store.save(lacking)
        with pytest.raises(CorruptCheckpointError) as caught:
            await resolve_state(lacking.state, store=store, run_id=run_id, where=where)
        assert missing in str(caught.value) and checkpoint.checkpoint_id in str(caught.value)

    async def test_a_reference_never_reaches_another_runs_blobs(
        self, store: CheckpointStore
    ) -> None:
        if not has_blobs(store):
            return
        first, second = new_run_id("a"), new_run_id("b")
        writer = BlobWriter()
        checkpoint, blobs = _growing(first, 0, 8, writer)
        await _save_with(store, checkpoint, blobs)
        # the same state saved under another run, without blobs of its own
        stolen = make_checkpoint(second, state=checkpoint.state)
        await store.save(stolen)
        with pytest.raises(CorruptCheckpointError, match="missing from its run's blobs"):
            await resolve_state(stolen.state, store=store, run_id=second, where="stolen")
        assert await store.blob_hashes(second) == []  # type: ignore[attr-defined]

    async def test_prune_and_delete_leave_no_unreferenced_blob(
        self, store: CheckpointStore
    ) -> None:
        if not has_blobs(store):
            return
        run_id, bystander = new_run_id(), new_run_id("bystander")
        writer = BlobWriter()
        saved = []
        for step in range(8):
            # a value that grows, then is replaced by another: old blobs go unreferenced
            items = step + 4 if step < 5 else step
            checkpoint, blobs = _growing(run_id, step, items, writer, salt=step // 5)
            await _save_with(store, checkpoint, blobs)
            saved.append(checkpoint)
        other, other_blobs = _growing(bystander, 0, 6, BlobWriter())
        await _save_with(store, other, other_blobs)
        before = set(await store.blob_hashes(run_id))  # type: ignore[attr-defined]
        removed = await store.prune(run_id, keep_last=1)
        assert removed == 6  # all but the newest and the first
        after = set(await store.blob_hashes(run_id))  # type: ignore[attr-defined]
        reachable = await _reachable(store, run_id, [saved[0], saved[-1]])
        assert after == reachable  # every blob left is used, every used blob is left
        assert len(after) < len(before)
        for kept in (saved[0], saved[-1]):
            state = await resolve_state(kept.state, store=store, run_id=run_id, where="kept")
            assert state["shared"]["transcript"][0] == _transcript(1, salt=kept.superstep // 5)[0]
        await store.delete(saved[0].checkpoint_id)
        assert set(await store.blob_hashes(run_id)) == await _reachable(  # type: ignore[attr-defined]
            store, run_id, [saved[-1]]
        )
        assert await store.delete_run(run_id) == 1
        assert list(await store.blob_hashes(run_id)) == []  # type: ignore[attr-defined]
        assert sorted(await store.blob_hashes(bystander)) == sorted(other_blobs)  # type: ignore[attr-defined]

    async def test_a_stale_writer_leaves_no_blob(self, store: CheckpointStore) -> None:
        if not has_blobs(store):
            return
        run_id = new_run_id()
        first = await store.acquire_lease(run_id, ttl=60, holder=_elsewhere("1"))
        await store.release_lease(first)
        await store.acquire_lease(run_id, ttl=60, holder=_elsewhere("2"))
        checkpoint, blobs = _growing(run_id, 0, 8, BlobWriter())
        with pytest.raises(RunLeaseError):
            await store.save(checkpoint, lease=first, blobs=blobs)  # type: ignore[call-arg]
        assert list(await store.blob_hashes(run_id)) == []  # type: ignore[attr-defined]

    async def test_a_fork_takes_its_blobs_along(self, store: CheckpointStore) -> None:
        if not has_blobs(store):
            return
        run_id = new_run_id("origin")
        checkpoint, blobs = _growing(run_id, 3, 12, BlobWriter())
        await _save_with(store, checkpoint, blobs)
        forked = await fork_run(store, run_id, checkpoint.checkpoint_id)
        await store.delete_run(run_id)
        (copy,) = await store.list(forked)
        view = await checkpoint_view(store, copy.checkpoint_id)
        assert view.state["shared"]["transcript"] == _transcript(12)


_ITEM = 600  # characters of one item of a growing value in the blob tests


def _transcript(n: int, salt: int = 0) -> list[str]:
    return [f"{salt}:{i}:" + "m" * _ITEM for i in range(n)]


def _growing(
    run_id: str, superstep: int, items: int, writer: BlobWriter | None, salt: int = 0
) -> tuple[Checkpoint, dict[str, bytes]]:
    """A full checkpoint whose shared state holds a transcript of ``items`` items, its
    values rewritten by ``writer`` (inline without one), and the blobs it adds."""
    state: dict[str, Any] = {
        "kind": "full",
        "pending": {},
        "router_state": {},
        "requests": [],
        "executor_state": {},
        "shared": {"transcript": _transcript(items, salt)},
        "outputs": [],
        "visits": {},
    }
    if writer is None:
        return make_checkpoint(run_id, superstep, state=state), {}
    state = externalize_state(state, writer)
    blobs = writer.take_new()
    writer.settle()
    return make_checkpoint(run_id, superstep, state=state), blobs


async def _save_with(
    store: CheckpointStore, checkpoint: Checkpoint, blobs: dict[str, bytes]
) -> None:
    if blobs:
        await store.save(checkpoint, blobs=blobs)  # type: ignore[call-arg]
    else:
        await store.save(checkpoint)


async def _reachable(store: CheckpointStore, run_id: str, kept: Sequence[Checkpoint]) -> set[str]:
    """The hashes ``kept`` reach through the run's blobs."""
    seen: set[str] = set()
    frontier = set().union(*(blob_refs(c.state) for c in kept))
    while frontier:
        got = await store.get_blobs(run_id, sorted(frontier))  # type: ignore[attr-defined]
        seen |= frontier
        frontier = set().union(*(blob_refs(load_blob(data)) for data in got.values())) - seen
    return seen


def _of(checkpoint: Checkpoint, workflow: str, created_at: float | None = None) -> Checkpoint:
    """``checkpoint`` of workflow ``workflow`` (taken at ``created_at``, if given)."""
    metadata = {**checkpoint.metadata, "workflow": workflow}
    if created_at is None:
        return attrs.evolve(checkpoint, metadata=metadata)
    return attrs.evolve(checkpoint, metadata=metadata, created_at=created_at)


def journal_event(
    kind: str = "invocation_started", superstep: int = 1, executor: str | None = "a", **fields: Any
) -> JournalEvent:
    """A journal event taken now (``fields``: the other :class:`~plait_durable.JournalEvent`
    fields)."""
    return JournalEvent(kind, superstep, time.time(), time.monotonic(), executor, **fields)


class EventJournalContract:
    """The tests of a store that keeps an event journal (:class:`~plait_durable.EventJournal`).

    Mix it into a :class:`CheckpointStoreContract` subclass; it uses the same ``store``
    fixture.
    """

    pytestmark = [pytest.mark.anyio]

    async def test_is_an_event_journal(self, store: CheckpointStore) -> None:
        assert isinstance(store, EventJournal), f"{store!r} misses journal methods"

    async def test_events_round_trip_in_order_after_a_sequence_number(
        self, store: CheckpointStore
    ) -> None:
        assert isinstance(store, EventJournal)
        run_id = new_run_id("journal")
        error = {"type": "ValueError", "message": "bad <b>", "traceback": "Traceback …"}
        written = [
            journal_event("superstep_started", 1, None),
            journal_event("invocation_started", 1, "a", index=0, attempt=1),
            journal_event(
                "attempt_failed", 1, "a", index=0, attempt=1, delay=0.5, timeout=True, error=error
            ),
            journal_event("invocation_finished", 1, "a", index=0, attempt=2, status="ok"),
        ]
        await store.append_events(run_id, written[:1])
        await store.append_events(run_id, written[1:])
        read = await store.read_events(run_id)
        seqs = [event.seq for event in read]
        assert seqs == sorted(set(seqs)) and seqs[0] > 0, "seq must grow strictly"
        assert [attrs.evolve(event, seq=0) for event in read] == written
        assert list(await store.read_events(run_id, after=seqs[1])) == list(read[2:])
        assert list(await store.read_events(run_id, after=seqs[0], limit=2)) == list(read[1:3])
        assert await store.read_events(run_id, after=seqs[-1]) == []
        assert await store.read_events(new_run_id("unknown")) == []
        assert await read_journal(store, run_id, after=seqs[2]) == [read[3]]
        with pytest.raises(ValueError, match="after"):
            await store.read_events(run_id, after=-1)
        with pytest.raises(ValueError, match="limit"):
            await store.read_events(run_id, limit=0)

    async def test_journals_are_per_run_and_numbered_in_order(self, store: CheckpointStore) -> None:
        assert isinstance(store, EventJournal)
        a, b = new_run_id("ja"), new_run_id("jb")
        for superstep in range(1, 4):
            await store.append_events(a, [journal_event(superstep=superstep)])
            await store.append_events(b, [journal_event(superstep=10 + superstep)])
        assert [e.superstep for e in await store.read_events(a)] == [1, 2, 3]
        assert [e.superstep for e in await store.read_events(b)] == [11, 12, 13]
        again: CheckpointStore = self.reopen(store)  # type: ignore[attr-defined]
        try:
            assert isinstance(again, EventJournal)
            assert [e.superstep for e in await again.read_events(a)] == [1, 2, 3]
        finally:
            await again.aclose()

    async def test_save_with_events_writes_both(self, store: CheckpointStore) -> None:
        assert isinstance(store, EventJournal)
        run_id = new_run_id("together")
        lease = await store.acquire_lease(run_id, ttl=30)
        first = make_checkpoint(run_id, 0)
        await store.save_with_events(first, [journal_event(superstep=0)], lease=lease)
        second = make_checkpoint(run_id, 1, parent_id=first.checkpoint_id)
        await store.save_with_events(
            second, [journal_event(superstep=1), journal_event(superstep=1, executor="b")]
        )
        await store.save_with_events(make_checkpoint(run_id, 2), [], lease=lease)
        assert len(await store.list(run_id)) == 3
        events = await store.read_events(run_id)
        assert [(e.superstep, e.executor) for e in events] == [(0, "a"), (1, "a"), (1, "b")]
        await store.save_with_events(second, [journal_event(superstep=9)])  # saved already
        assert len(await store.read_events(run_id)) == 3, "a repeated save appended events"
        await store.release_lease(lease)

    async def test_a_stale_lease_writes_neither_checkpoint_nor_events(
        self, store: CheckpointStore
    ) -> None:
        assert isinstance(store, EventJournal)
        run_id = new_run_id("fenced")
        stale = await store.acquire_lease(run_id, ttl=0.001, holder=_elsewhere("j"))
        await anyio.sleep(0.05)
        current = await store.acquire_lease(run_id, ttl=30)
        with pytest.raises(RunLeaseError):
            await store.save_with_events(make_checkpoint(run_id), [journal_event()], lease=stale)
        with pytest.raises(RunLeaseError):
            await store.append_events(run_id, [journal_event()], lease=stale)
        assert await store.list(run_id) == []
        assert await store.read_events(run_id) == []
        await store.append_events(run_id, [journal_event()], lease=current)
        assert len(await store.read_events(run_id)) == 1
        await store.release_lease(current)

    async def test_delete_run_removes_its_journal(self, store: CheckpointStore) -> None:
        assert isinstance(store, EventJournal)
        run_id = new_run_id("gone")
        await store.save_with_events(make_checkpoint(run_id), [journal_event()])
        await store.delete_run(run_id)
        assert await store.read_events(run_id) == []
