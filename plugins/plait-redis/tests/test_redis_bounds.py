"""No hangs (issue 14, finding 4): a Redis server that accepts connections and never
answers is a StoreUnavailableError within the URL's ``timeout``."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from plait_durable import StoreUnavailableError
from plait_redis import RedisCheckpointStore
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


async def test_a_server_that_never_answers_is_store_unavailable(blackhole: int) -> None:
    store = RedisCheckpointStore(f"redis://127.0.0.1:{blackhole}/0?timeout=0.5")
    with pytest.raises(StoreUnavailableError):
        await store.save(make_checkpoint(new_run_id()))
    with pytest.raises(StoreUnavailableError):
        await store.acquire_lease(new_run_id(), ttl=30)
    await store.aclose()
