"""Plait checkpoints in Redis: ``redis://`` and ``rediss://``.

Installing ``plait-redis`` registers both URL schemes with Plait's
``plait_register_checkpoint_stores`` hook, so
``wf.run(msg, checkpoint="redis://localhost:6379/0?prefix=myapp:")`` checkpoints every
superstep to Redis and a run can resume on another machine. See
:class:`RedisCheckpointStore` for the key layout and the URL options.

redis-py's asyncio client runs on asyncio only, so this store does too.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register

if TYPE_CHECKING:
    from ._store import RedisCheckpointStore, redact_url

__all__ = ["RedisCheckpointStore", "plait_register_checkpoint_stores", "redact_url"]

# Every process that loads Plait's plugins imports this module (entry point ``redis``), so
# it must stay cheap: redis-py (a quarter of a second) is imported when a store is opened.
_STORE = frozenset({"RedisCheckpointStore", "redact_url"})


def _open_redis(url: str) -> RedisCheckpointStore:
    """Open a ``redis://`` or ``rediss://`` URL (imports redis-py on first use)."""
    from ._store import RedisCheckpointStore

    return RedisCheckpointStore.from_url(url)


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``redis`` and ``rediss``."""
    register("redis", _open_redis)
    register("rediss", _open_redis)


def __getattr__(name: str) -> Any:
    if name in _STORE:
        from . import _store

        return getattr(_store, name)
    raise AttributeError(f"module 'plait_redis' has no attribute {name!r}")
