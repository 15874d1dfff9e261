"""The stores version-safe runs are tested against: SQLite, Redis and PostgreSQL, from
plait-testing's ``plait_store_url`` (``plait_redis_url``, ``plait_postgres_url``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: redis-py's and psycopg's asyncio clients do not run on trio."""
    return "asyncio"


@pytest.fixture
def shop_migration() -> Iterator[None]:
    """The shop workflow's migration from version 1 to 2, registered for one test."""
    from plait import get_plugin_manager
    from plait_versions import register_migration
    from test_migrations import one_to_two

    register_migration("shop", 1, one_to_two)
    yield
    get_plugin_manager().unregister("migration:shop@1")
