"""Plait checkpoints in PostgreSQL: ``postgresql://`` and ``postgres://``.

Installing ``plait-postgres`` registers both URL schemes with Plait's
``plait_register_checkpoint_stores`` hook, so
``wf.run(msg, checkpoint="postgresql://app@db.internal/app")`` checkpoints every superstep
to PostgreSQL and a run can resume on another machine. The table is created on first
use; see :class:`PostgresCheckpointStore` for the schema, its migrations and the URL
options.

psycopg's async API runs on asyncio only, so this store does too.

.. versionadded:: 0.1
"""

from __future__ import annotations

import plait
from plait.hookspecs import Register

from ._store import MIGRATIONS, SCHEMA_VERSION, PostgresCheckpointStore, redact_url

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "PostgresCheckpointStore",
    "plait_register_checkpoint_stores",
    "redact_url",
]


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``postgresql`` and ``postgres``."""
    register("postgresql", PostgresCheckpointStore.from_url)
    register("postgres", PostgresCheckpointStore.from_url)
