"""Plait checkpoints in Redis: ``redis://`` and ``rediss://``.

Installing ``plait-redis`` registers both URL schemes with Plait's
``plait_register_checkpoint_stores`` hook, so
``wf.run(msg, checkpoint="redis://localhost:6379/0?prefix=myapp:")`` checkpoints every
superstep to Redis and a run can resume on another machine. See
:class:`RedisCheckpointStore` for the key layout and the URL options.

redis-py's asyncio client runs on asyncio only, so this store does too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy_exports

if TYPE_CHECKING:
    from ._store import RedisCheckpointStore as RedisCheckpointStore, redact_url as redact_url


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


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
