"""The stores version-safe runs are tested against: SQLite, Redis and PostgreSQL, from
plait-testing's ``plait_store_url`` (``plait_redis_url``, ``plait_postgres_url``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: redis-py's and psycopg's asyncio clients do not run on trio."""
    return "asyncio"
