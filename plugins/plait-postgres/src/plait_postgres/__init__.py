"""Plait checkpoints in PostgreSQL: ``postgresql://`` and ``postgres://``.

Installing ``plait-postgres`` registers both URL schemes with Plait's
``plait_register_checkpoint_stores`` hook, so
``wf.run(msg, checkpoint="postgresql://app@db.internal/app")`` checkpoints every superstep
to PostgreSQL and a run can resume on another machine. The table is created on first
use; see :class:`PostgresCheckpointStore` for the schema, its migrations and the URL
options.

psycopg's async API runs on asyncio only, so this store does too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy_exports

if TYPE_CHECKING:
    from ._store import (
        MIGRATIONS as MIGRATIONS,
        SCHEMA_VERSION as SCHEMA_VERSION,
        PostgresCheckpointStore as PostgresCheckpointStore,
        redact_url as redact_url,
    )


# Every process that loads Plait's plugins imports this module (entry point ``postgres``),
# so it must stay cheap: psycopg and psycopg_pool are imported when a store is opened.
_STORE = frozenset({"MIGRATIONS", "SCHEMA_VERSION", "PostgresCheckpointStore", "redact_url"})


def _open_postgres(url: str) -> PostgresCheckpointStore:
    """Open a ``postgresql://`` or ``postgres://`` URL (imports psycopg on first use)."""
    from ._store import PostgresCheckpointStore

    return PostgresCheckpointStore.from_url(url)


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``postgresql`` and ``postgres``."""
    register("postgresql", _open_postgres)
    register("postgres", _open_postgres)


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
