"""PostgreSQL for the tests: ``PLAIT_TEST_POSTGRES_URL``, or a throwaway cluster started here.

``PLAIT_TEST_POSTGRES_URL`` must let the tests create and drop databases (a superuser,
as ``.ci/services.sh`` provides). Without it the session starts its own cluster with
``initdb``/``pg_ctl`` (as the ``postgres`` OS user when running as root). Never skips:
without a URL and without the binaries the tests fail, naming the Debian package (see
:mod:`plait.testing.servers`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from plait_testing import servers


def database_url(server_url: str, name: str) -> str:
    """``server_url`` pointing at database ``name``."""
    return urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))


@contextmanager
def new_database(server_url: str) -> Iterator[str]:
    """A new, empty database on ``server_url`` for the ``with`` block, dropped after it."""
    name = f"plait_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a PostgreSQL server where the tests may create databases."""
    with servers.postgres_url() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_database(postgres_url: str) -> Iterator[str]:
    """One database for the whole session, dropped at the end."""
    with new_database(postgres_url) as url:
        yield url


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    """An empty database of this test's own."""
    with new_database(postgres_url) as url:
        yield url


@pytest.fixture
def postgres_server() -> Iterator[servers.PostgresServer]:
    """A PostgreSQL cluster of this test's own, which the test may stop."""
    with servers.PostgresServer() as server:
        yield server
