"""The memory store: the contract, plus sharing by name."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from plait_durable import CheckpointStore, StoreUnavailableError
from plait_stores import MemoryCheckpointStore
from plait_testing.conformance import CrashConformance, LeaseConformance
from plait_testing.stores import (
    CheckpointStoreContract,
    EventJournalContract,
    flip_byte,
    make_checkpoint,
    new_run_id,
)


class TestMemoryStore(
    CheckpointStoreContract, EventJournalContract, CrashConformance, LeaseConformance
):
    @pytest.fixture
    async def store(self) -> AsyncIterator[MemoryCheckpointStore]:
        name = f"contract-{uuid.uuid4().hex}"
        store = MemoryCheckpointStore.from_url(f"memory://{name}")
        yield store
        await store.aclose()
        MemoryCheckpointStore.discard(name)

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        assert isinstance(store, MemoryCheckpointStore)
        entry = store._space.entries[checkpoint_id]
        entry.data = flip_byte(entry.data)

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        assert isinstance(store, MemoryCheckpointStore) and store.name is not None
        return MemoryCheckpointStore(store.name)


pytestmark = pytest.mark.anyio


async def test_same_name_shares_and_other_names_do_not() -> None:
    name = f"shared-{uuid.uuid4().hex}"
    checkpoint = make_checkpoint(new_run_id())
    try:
        await MemoryCheckpointStore.from_url(f"memory://{name}").save(checkpoint)
        assert await MemoryCheckpointStore(name).load(checkpoint.checkpoint_id) == checkpoint
        other = MemoryCheckpointStore(f"{name}-other")
        assert await other.latest(checkpoint.run_id) is None
        private = MemoryCheckpointStore()
        assert await private.latest(checkpoint.run_id) is None
    finally:
        MemoryCheckpointStore.discard(name)
        MemoryCheckpointStore.discard(f"{name}-other")
    assert await MemoryCheckpointStore(name).latest(checkpoint.run_id) is None


async def test_bare_memory_url_is_the_default_shared_space() -> None:
    checkpoint = make_checkpoint(new_run_id())
    await MemoryCheckpointStore.from_url("memory://").save(checkpoint)
    assert await MemoryCheckpointStore.from_url("memory://").latest(checkpoint.run_id) == checkpoint
    assert await MemoryCheckpointStore("").delete_run(checkpoint.run_id) == 1


async def test_closed_store_refuses_work() -> None:
    store = MemoryCheckpointStore()
    async with store:
        pass
    with pytest.raises(StoreUnavailableError, match="closed"):
        await store.latest("r")


def test_bad_url() -> None:
    with pytest.raises(ValueError, match="memory://NAME"):
        MemoryCheckpointStore.from_url("memory://x?y=1")
