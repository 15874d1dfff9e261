"""Plait checkpoint stores that need no server: ``memory://``, ``file://`` and ``sqlite://``.

Installing ``plait-stores`` registers three URL schemes with Plait's
``plait_register_checkpoint_stores`` hook:

- ``memory://NAME`` — :class:`MemoryCheckpointStore`, in this process only, shared by name;
- ``file://DIR`` — :class:`FileCheckpointStore`, one atomically written file per checkpoint;
- ``sqlite:///PATH`` — :class:`SqliteCheckpointStore`, the embedded default for durable runs.

Use them by URL (``wf.run(msg, checkpoint="sqlite:///runs.db")``,
``plait.checkpoint.open_store(url)``) or construct them directly. Every store orders a
run's checkpoints by insertion, keeps the bytes of
:func:`plait.checkpoint.encode_checkpoint` and so detects a corrupted checkpoint on load,
and passes :class:`plait.testing.stores.CheckpointStoreContract`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import plait
from plait.hookspecs import Register

from ._file import FileCheckpointStore
from ._memory import MemoryCheckpointStore
from ._sqlite import SqliteCheckpointStore

__all__ = [
    "FileCheckpointStore",
    "MemoryCheckpointStore",
    "SqliteCheckpointStore",
    "plait_register_checkpoint_stores",
]


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``memory``, ``file`` and ``sqlite``."""
    register("memory", MemoryCheckpointStore.from_url)
    register("file", FileCheckpointStore.from_url)
    register("sqlite", SqliteCheckpointStore.from_url)
