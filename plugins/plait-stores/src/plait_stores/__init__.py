"""Plait checkpoint stores that need no server: ``memory://``, ``file://`` and ``sqlite://``.

Installing ``plait-stores`` registers three URL schemes with Plait's
``plait_register_checkpoint_stores`` hook:

- ``memory://NAME`` — :class:`MemoryCheckpointStore`, in this process only, shared by name;
- ``file://DIR`` — :class:`FileCheckpointStore`, one atomically written file per checkpoint;
- ``sqlite:///PATH`` — :class:`SqliteCheckpointStore`, the embedded default for durable runs.

Use them by URL (``wf.run(msg, checkpoint="sqlite:///runs.db")``,
``plait_durable.open_store(url)``) or construct them directly. Every store orders a
run's checkpoints by insertion, keeps the bytes of
:func:`plait_durable.encode_checkpoint` and so detects a corrupted checkpoint on load,
and passes :class:`plait_testing.stores.CheckpointStoreContract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy_exports

if TYPE_CHECKING:
    from ._file import FileCheckpointStore as FileCheckpointStore
    from ._memory import MemoryCheckpointStore as MemoryCheckpointStore
    from ._sqlite import SqliteCheckpointStore as SqliteCheckpointStore


# Every process that loads Plait's plugins imports this module (entry point ``stores``):
# a store's module (``sqlite3`` for one) is imported when a store of its kind is opened.
_MODULES = {
    "FileCheckpointStore": "_file",
    "MemoryCheckpointStore": "_memory",
    "SqliteCheckpointStore": "_sqlite",
}


def _open_memory(url: str) -> MemoryCheckpointStore:
    """Open a ``memory://`` URL."""
    from ._memory import MemoryCheckpointStore

    return MemoryCheckpointStore.from_url(url)


def _open_file(url: str) -> FileCheckpointStore:
    """Open a ``file://`` URL."""
    from ._file import FileCheckpointStore

    return FileCheckpointStore.from_url(url)


def _open_sqlite(url: str) -> SqliteCheckpointStore:
    """Open a ``sqlite://`` URL (imports :mod:`sqlite3` on first use)."""
    from ._sqlite import SqliteCheckpointStore

    return SqliteCheckpointStore.from_url(url)


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``memory``, ``file`` and ``sqlite``."""
    register("memory", _open_memory)
    register("file", _open_file)
    register("sqlite", _open_sqlite)


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
