"""The store kit (``plait_durable.kit``): the base every store subclasses, its glue over
a store's primitives, its lifecycle, URLs, wording, listing rows and prune's rule."""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import plait_durable
import plait_durable.kit
import pytest
from plait import CheckpointError
from plait_durable import (
    Checkpoint,
    CheckpointInfo,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    JournalEvent,
    Lease,
    LeaseHolder,
    RunLeaseError,
    StoreUnavailableError,
)
from plait_durable.kit import CheckpointStoreBase
from plait_testing.stores import make_checkpoint

INFO_FIELDS = CheckpointStoreBase.INFO_FIELDS
info_row = CheckpointStoreBase._info_row
info_fields = CheckpointStoreBase._info_fields
prune_plan = CheckpointStoreBase._prune_plan
redact_url = CheckpointStoreBase.redact_url


@pytest.mark.anyio
async def test_async_with_closes_the_store_and_a_closed_store_refuses_work() -> None:
    store = NamedStore("dict://x")
    await store.latest()
    async with store as entered:
        assert entered is store
    with pytest.raises(StoreUnavailableError, match=r"checkpoint store dict://x is closed"):
        await store.latest()


def test_repr_names_the_class_and_url() -> None:
    assert repr(NamedStore("dict://x")) == "<NamedStore 'dict://x'>"


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("redis://u:pw@h:1/0?x=1", "redis://u:***@h:1/0?x=1"),
        ("rediss://:pw@h:1/0", "rediss://:***@h:1/0"),
        ("postgres://u:pw@h/db", "postgres://u:***@h/db"),
        ("redis://h:1/0", "redis://h:1/0"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_a_duplicate_names_the_run_the_checkpoint_and_the_store() -> None:
    assert CheckpointStoreBase._where("r1", "c7") == "run 'r1', checkpoint 'c7'"
    checkpoint = make_checkpoint("r1", checkpoint_id="c7")
    error = NamedStore("memory://x")._duplicate(checkpoint)
    assert type(error) is CheckpointError
    assert str(error).startswith("run 'r1', checkpoint 'c7' is already stored in memory://x ")
    assert "checkpoint ids must be unique" in str(error)


def test_info_rows_and_fields_follow_checkpoint_info() -> None:
    assert tuple(field.name for field in attrs.fields(CheckpointInfo)) == INFO_FIELDS
    checkpoint = make_checkpoint("r1", 3, parent_id="c0", base_id="c0")
    info = checkpoint.info
    assert info_row(checkpoint) == info_row(info) == attrs.astuple(info)
    assert CheckpointInfo(*info_row(checkpoint)) == info
    assert list(info_fields(checkpoint)) == list(INFO_FIELDS)
    assert CheckpointInfo(**info_fields(info)) == info


def info(checkpoint_id: str, base_id: str | None = None) -> CheckpointInfo:
    return CheckpointInfo(checkpoint_id, "run", 0, None, "running", 0.0, base_id)


# -- prune_plan ------------------------------------------------------------------------


def test_prune_plan_deletes_all_but_the_newest() -> None:
    infos = [info(f"c{i}") for i in range(5)]
    assert prune_plan(infos, 2) == ["c1", "c2"]  # the first stays: it holds the topology
    assert prune_plan(infos, 5) == []
    assert prune_plan(infos, 50) == []
    assert prune_plan(infos, 0) == ["c0", "c1", "c2", "c3", "c4"]
    assert prune_plan([], 0) == [] and prune_plan([], 3) == []


def test_prune_plan_keeps_the_bases_of_kept_deltas() -> None:
    c1, c2, c3 = info("c1"), info("c2", "c1"), info("c3", "c1")
    assert prune_plan([c1, c2, c3], 1) == ["c2"]
    assert prune_plan([c1, c2, c3], 2) == []
    c4 = info("c4")
    assert prune_plan([c1, c3, c4], 1) == ["c3"]
    assert prune_plan([c1, c2, c3], 0) == ["c1", "c2", "c3"]


def test_prune_plan_keeps_only_bases_kept_checkpoints_name() -> None:
    infos = [info("f1"), info("d1", "f1"), info("f2"), info("d2", "f2"), info("d3", "f2")]
    assert prune_plan(infos, 1) == ["d1", "d2"]
    assert prune_plan(infos, 3) == ["d1"]
    assert prune_plan(infos, 4) == []  # d1 is kept, so is its base f1
    # a base that is not in the list (pruned earlier, another run) changes nothing
    assert prune_plan([info("y"), info("x"), info("d", "elsewhere")], 1) == ["x"]


@pytest.mark.parametrize("bad", [-1, -10, True, False, 1.0, "2", None])
@pytest.mark.anyio
async def test_keep_last_must_be_a_non_negative_integer(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"prune\(keep_last=\.\.\.\) needs an integer >= 0"):
        prune_plan([info("c1")], bad)
    with pytest.raises(ValueError, match="keep_last"):
        await DictStore().prune("run", keep_last=bad)


# -- the glue over a store's primitives ----------------------------------------------------


class DictStore(CheckpointStoreBase):
    """A store written against the kit alone: its primitives over dicts."""

    def __init__(self) -> None:
        self.url = "dict://"
        self.data: dict[str, tuple[str, bytes]] = {}
        self.journal: dict[str, list[tuple[int, str]]] = {}
        self.leases: dict[str, int] = {}

    async def _write(
        self,
        checkpoint: Checkpoint,
        data: bytes,
        events: Sequence[str],
        lease: Lease | None,
        blobs: Mapping[str, bytes] | None,
    ) -> None:
        if lease is not None and self.leases.get(checkpoint.run_id) != lease.token:
            raise self._lost(lease)
        stored = self.data.setdefault(checkpoint.checkpoint_id, (checkpoint.run_id, data))
        if stored[1] != data:
            raise self._duplicate(checkpoint)
        if events:
            await self._append(checkpoint.run_id, events, None)

    async def _append(self, run_id: str, events: Sequence[str], lease: Lease | None) -> None:
        journal = self.journal.setdefault(run_id, [])
        last = len(journal)
        journal.extend((last + i, text) for i, text in enumerate(events, start=1))

    async def _events(self, run_id: str, after: int, limit: int) -> Sequence[tuple[int, str]]:
        return [(seq, text) for seq, text in self.journal.get(run_id, []) if seq > after][:limit]

    async def _read(self, checkpoint_id: str) -> tuple[str, bytes] | None:
        return self.data.get(checkpoint_id)

    async def _newest(self, run_id: str) -> tuple[str, bytes] | None:
        mine = [(i, data) for i, (run, data) in self.data.items() if run == run_id]
        return mine[-1] if mine else None

    async def _heads(self, limit: int | None) -> Sequence[tuple[str, str, bytes, float | None]]:
        runs = dict.fromkeys(run for run, _ in self.data.values())
        heads = []
        for run_id in reversed(runs):
            newest = await self._newest(run_id)
            assert newest is not None
            heads.append((run_id, newest[0], newest[1], None))
        return heads[:limit]

    async def _prune(self, run_id: str, keep_last: int) -> int:
        mine = [i for i, (run, _) in self.data.items() if run == run_id]
        doomed = mine[: max(len(mine) - keep_last, 0)]
        for checkpoint_id in doomed:
            del self.data[checkpoint_id]
        return len(doomed)

    async def _release(self, lease: Lease) -> None:
        if self.leases.get(lease.run_id) == lease.token:
            del self.leases[lease.run_id]


class NamedStore(DictStore):
    """A store of a given URL, whose ``latest`` only checks the store is open."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    async def latest(self) -> None:  # type: ignore[override]
        self._check_open()


def test_a_store_without_a_write_primitive_cannot_be_made() -> None:
    class NoPrune(DictStore):
        _prune = CheckpointStoreBase._prune  # the base's abstract one, not DictStore's

    with pytest.raises(TypeError, match="abstract method _prune"):
        NoPrune()


def test_a_store_that_neither_reads_a_primitive_nor_overrides_its_reader_is_refused() -> None:
    with pytest.raises(
        TypeError,
        match=r"\.Blind defines neither _read nor load: a store reads through the primitive",
    ):

        class Blind(CheckpointStoreBase):
            async def _newest(self, run_id: str) -> None:
                return None

            async def _heads(self, limit: int | None) -> list[tuple[str, str, bytes, None]]:
                return []

    class OwnReads(CheckpointStoreBase):  # overriding the readers is the other way
        async def load(self, checkpoint_id: str) -> Any:
            raise LookupError(checkpoint_id)

        async def latest(self, run_id: str) -> None:
            return None

        async def _runs(self, limit: int | None) -> list[Any]:
            return []

    assert OwnReads.load is not CheckpointStoreBase.load


@pytest.mark.anyio
async def test_a_store_of_primitives_gets_the_protocol_from_the_kit() -> None:
    store = DictStore()
    first = make_checkpoint("r1", 0, checkpoint_id="c1")
    second = make_checkpoint("r1", 1, checkpoint_id="c2", status="completed")
    event = JournalEvent("superstep_started", 1, 1.0, 1.0)
    await store.save(first)
    await store.save(first)  # the same checkpoint again: nothing happens
    await store.save_with_events(second, [event])
    await store.append_events("r1", [event, event])
    await store.append_events("r1", [])  # nothing to append: the primitive is not called
    assert await store.load("c1") == first
    assert await store.latest("r1") == second
    assert await store.latest("nobody") is None
    assert [e.seq for e in await store.read_events("r1", after=1)] == [2, 3]
    assert [(r.run_id, r.status) for r in await store.runs()] == [("r1", "completed")]
    with pytest.raises(CheckpointNotFoundError, match=r"no checkpoint 'c9' in dict://"):
        await store.load("c9")
    with pytest.raises(CheckpointError, match=r"run 'r1', checkpoint 'c1' is already stored"):
        await store.save(attrs.evolve(first, superstep=5))
    with pytest.raises(ValueError, match=r"read_events\(after=\.\.\.\)"):
        await store.read_events("r1", after=-1)
    with pytest.raises(ValueError, match=r"runs\(limit=\.\.\.\)"):
        await store.runs(limit=-1)
    stale = Lease("r1", 7, LeaseHolder.here(), 0.0)
    with pytest.raises(RunLeaseError, match=r"the lease of run 'r1' in dict:// was taken over"):
        await store.save(make_checkpoint("r1", 2), lease=stale)


@pytest.mark.anyio
async def test_a_store_lists_a_run_whose_latest_checkpoint_does_not_decode_as_corrupt() -> None:
    store = DictStore()
    await store.save(make_checkpoint("r1", 0, checkpoint_id="c1"))
    store.data["c1"] = ("r1", store.data["c1"][1][:-3] + b"???")
    [listed] = await store.runs()
    assert (listed.run_id, listed.status) == ("r1", "corrupt")
    with pytest.raises(CorruptCheckpointError, match=r"run 'r1', checkpoint 'c1' in dict://"):
        await store.load("c1")


@pytest.mark.anyio
async def test_a_closed_store_refuses_the_kits_methods_too() -> None:
    store = DictStore()
    await store.aclose()
    with pytest.raises(StoreUnavailableError, match="dict:// is closed"):
        await store.save(make_checkpoint("r1", 0))
    with pytest.raises(StoreUnavailableError, match="dict:// is closed"):
        await store.read_events("r1")


# -- the kit is narrow ------------------------------------------------------------------

_PLUGINS = Path(__file__).resolve().parents[2]
_STORES = [
    _PLUGINS / "plait-stores/src/plait_stores/_memory.py",
    _PLUGINS / "plait-stores/src/plait_stores/_file.py",
    _PLUGINS / "plait-stores/src/plait_stores/_sqlite.py",
    _PLUGINS / "plait-redis/src/plait_redis/_store.py",
    _PLUGINS / "plait-postgres/src/plait_postgres/_store.py",
]


def test_the_kit_is_the_base_and_the_user_surface_does_not_repeat_it() -> None:
    assert [n for n in plait_durable.kit.__all__ if not n.startswith("_")] == [
        "CheckpointStoreBase"
    ]
    assert "CheckpointStoreBase" not in plait_durable.__all__
    # the rules a store applies are the base's, not names of the user surface
    for helper in ("take_lease", "lost_error", "duplicate_error", "prune_plan", "page_sql"):
        assert helper not in plait_durable.__all__


@pytest.mark.parametrize("path", _STORES, ids=lambda p: p.parent.name + "/" + p.name)
def test_each_of_the_five_stores_imports_at_most_ten_names_of_plait_durable(path: Path) -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("plait_durable"):
            imported.update(alias.name for alias in node.names)
    assert "CheckpointStoreBase" in imported
    # the errors a store raises (each a plait.CheckpointError) are the protocol's words,
    # not glue: the kit is the base and the records it keeps
    kit = {name for name in imported if not name.endswith("Error")}
    assert len(kit) <= 10, sorted(kit)
    for method in ("save", "save_with_events", "append_events", "read_events"):
        assert f"async def {method}(" not in path.read_text(), method  # the kit's glue
