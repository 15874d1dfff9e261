"""A Redis server for the tests: ``PLAIT_TEST_REDIS_URL``, or a throwaway one started here.

Never skips: without a URL and without ``redis-server`` the tests fail, naming the Debian
package to install (see :mod:`plait.testing.servers`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from plait_testing import servers


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a Redis server the tests may write to."""
    with servers.redis_url() as url:
        yield url


@pytest.fixture
def redis_server() -> Iterator[servers.RedisServer]:
    """A Redis server of this test's own, which the test may stop."""
    with servers.RedisServer() as server:
        yield server
