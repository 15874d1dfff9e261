"""Servers for the sealed-store tests: Redis and PostgreSQL from ``PLAIT_TEST_REDIS_URL`` /
``PLAIT_TEST_POSTGRES_URL``, or throwaway servers this session starts (never skipped:
without either, the tests fail naming the Debian package; see :mod:`plait_testing.servers`).
"""

from __future__ import annotations

from collections.abc import Iterator

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
