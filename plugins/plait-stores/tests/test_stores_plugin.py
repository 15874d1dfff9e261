"""plait-stores as a plugin: its hook registers three schemes, ``open_store`` finds them."""

from __future__ import annotations

from pathlib import Path

import plait_stores
import pytest
from plait.spi import PluginManager
from plait_durable import open_store
from plait_stores import FileCheckpointStore, MemoryCheckpointStore, SqliteCheckpointStore
from plait_testing import fake_entry_point, make_plugin_manager
from plait_testing.stores import make_checkpoint, new_run_id


def test_hook_registers_memory_file_and_sqlite() -> None:
    # the kernel's own path: entry point, plugin manager, hook, collector, registry
    manager = make_plugin_manager(
        fake_entry_point("stores", plait_stores, distribution="plait-stores")
    )
    registered = manager.registry("checkpoint_store")
    assert registered.names() == ["file", "memory", "sqlite"]
    assert {registered.entry(name).distribution for name in registered} == {"plait-stores"}
    assert isinstance(registered.get("memory")("memory://x"), MemoryCheckpointStore)
    assert isinstance(registered.get("file")("file:///tmp/x"), FileCheckpointStore)
    assert isinstance(registered.get("sqlite")("sqlite:///x.db"), SqliteCheckpointStore)


@pytest.mark.anyio
async def test_open_store_by_url(plait_plugin_manager: PluginManager, tmp_path: Path) -> None:
    plait_plugin_manager.register(plait_stores, name="stores")
    store = open_store(f"sqlite:///{tmp_path / 'runs.db'}")
    assert isinstance(store, SqliteCheckpointStore)
    checkpoint = make_checkpoint(new_run_id())
    await store.save(checkpoint)
    assert await store.latest(checkpoint.run_id) == checkpoint
    await store.aclose()
