"""The stores version-safe runs are tested against: SQLite, Redis and PostgreSQL.

Redis and PostgreSQL come from ``PLAIT_TEST_REDIS_URL`` / ``PLAIT_TEST_POSTGRES_URL``
(``source .ci/services.sh`` starts both), or are throwaway servers this session starts;
without either the tests fail, naming the Debian package (:mod:`plait.testing.servers`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from plait_testing import servers


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis server the tests may write to."""
    with servers.redis_url() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server the tests may write to."""
    with servers.postgres_url() as url:
        yield url


@pytest.fixture(params=["sqlite", "redis", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of each durable store in turn: a new SQLite file, or a shared server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    fixture = "redis_url" if request.param == "redis" else "postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture
def anyio_backend() -> str:
    """asyncio: redis-py's and psycopg's asyncio clients do not run on trio."""
    return "asyncio"
