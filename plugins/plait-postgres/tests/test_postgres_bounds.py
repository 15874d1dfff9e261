"""No hangs (issue 14, finding 4): a lock held by another session, or a server that
accepts connections and never answers, is a StoreUnavailableError within the URL's
``timeout``, never a hang. (Assert the error, not the time: the bound is in the URL.)"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import psycopg
import pytest
from plait_durable import StoreUnavailableError
from plait_postgres import PostgresCheckpointStore
from plait_testing.stores import make_checkpoint, new_run_id

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A port that accepts TCP connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


async def test_a_table_lock_held_elsewhere_is_store_unavailable(fresh_database: str) -> None:
    store = PostgresCheckpointStore(f"{fresh_database}?timeout=1")
    run_id = new_run_id()
    await store.save(make_checkpoint(run_id))
    with psycopg.connect(fresh_database) as other:
        other.execute("LOCK TABLE plait_checkpoints IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(StoreUnavailableError, match="timeout"):
            await store.save(make_checkpoint(run_id))
        with pytest.raises(StoreUnavailableError):
            await store.latest(run_id)
        other.rollback()
    assert len(await store.list(run_id)) == 1  # usable again once the lock goes
    await store.aclose()


async def test_a_lease_row_locked_elsewhere_is_store_unavailable(fresh_database: str) -> None:
    store = PostgresCheckpointStore(f"{fresh_database}?timeout=1")
    run_id = new_run_id()
    lease = await store.acquire_lease(run_id, ttl=30)
    with psycopg.connect(fresh_database) as other:
        other.execute("SELECT 1 FROM plait_leases WHERE run_id = %s FOR UPDATE", (run_id,))
        with pytest.raises(StoreUnavailableError):
            await store.save(make_checkpoint(run_id), lease=lease)
        other.rollback()
    await store.release_lease(lease)
    await store.aclose()


async def test_a_server_that_never_answers_is_store_unavailable(blackhole: int) -> None:
    store = PostgresCheckpointStore(f"postgresql://postgres@127.0.0.1:{blackhole}/x?timeout=1")
    with pytest.raises(StoreUnavailableError, match=str(blackhole)):
        await store.save(make_checkpoint(new_run_id()))
    await store.aclose()


def test_the_session_bounds_are_set() -> None:
    store = PostgresCheckpointStore("postgresql://u@h/db?timeout=2")
    conninfo = store._conninfo
    for part in (
        "statement_timeout%3D2000",
        "lock_timeout%3D2000",
        "keepalives=1",
        "tcp_user_timeout=2000",
    ):
        assert part in conninfo, conninfo
