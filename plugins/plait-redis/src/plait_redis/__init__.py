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

import plait
from plait.hookspecs import Register

from ._store import RedisCheckpointStore, redact_url

__all__ = ["RedisCheckpointStore", "plait_register_checkpoint_stores", "redact_url"]


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``redis`` and ``rediss``."""
    register("redis", RedisCheckpointStore.from_url)
    register("rediss", RedisCheckpointStore.from_url)
