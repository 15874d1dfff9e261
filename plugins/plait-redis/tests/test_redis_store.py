"""The Redis store against a real server: the contract, prefixes, an unreachable server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import plait_redis
import pytest
import redis.asyncio
from plait_durable import CheckpointStore, StoreUnavailableError
from plait_redis import RedisCheckpointStore, redact_url
from plait_testing import fake_entry_point, make_plugin_manager, servers
from plait_testing.conformance import CrashConformance, LeaseConformance
from plait_testing.stores import (
    CheckpointStoreContract,
    EventJournalContract,
    flip_byte,
    make_checkpoint,
    new_run_id,
)

# redis-py's asyncio client runs on asyncio only, so these tests do too.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: redis-py's asyncio client does not run on trio."""
    return "asyncio"


def _with_option(url: str, option: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{option}"


async def _drop_prefix(url: str, prefix: str) -> None:
    client = redis.asyncio.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


class TestRedisStore(
    CheckpointStoreContract, EventJournalContract, CrashConformance, LeaseConformance
):
    @pytest.fixture
    def anyio_backend(self) -> str:
        """asyncio only: redis-py's asyncio client does not run on trio."""
        return "asyncio"

    @pytest.fixture
    async def store(self, redis_url: str) -> AsyncIterator[RedisCheckpointStore]:
        self.server_url = redis_url
        self.prefix = f"plait-test-{uuid.uuid4().hex}:"
        self.url = _with_option(redis_url, f"prefix={self.prefix}")
        store = RedisCheckpointStore.from_url(self.url)
        yield store
        await store.aclose()
        await _drop_prefix(redis_url, self.prefix)

    async def corrupt(self, store: CheckpointStore, checkpoint_id: str) -> None:
        client = redis.asyncio.Redis.from_url(self.server_url)
        try:
            key = f"{self.prefix}cp:{checkpoint_id}"
            data = await client.hget(key, "data")
            assert isinstance(data, bytes)
            await client.hset(key, "data", flip_byte(data))
        finally:
            await client.aclose()

    def reopen(self, store: CheckpointStore) -> CheckpointStore:
        return RedisCheckpointStore(self.url)


async def test_keys_carry_the_prefix(redis_url: str) -> None:
    prefix = f"plait-test-{uuid.uuid4().hex}:"
    checkpoint = make_checkpoint(new_run_id())
    async with RedisCheckpointStore(_with_option(redis_url, f"prefix={prefix}")) as store:
        await store.save(checkpoint)
    async with RedisCheckpointStore(redis_url) as unprefixed:
        assert await unprefixed.latest(checkpoint.run_id) is None
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        keys = sorted([key.decode() async for key in client.scan_iter(match=f"{prefix}*")])
    finally:
        await client.aclose()
    assert keys == [
        f"{prefix}cp:{checkpoint.checkpoint_id}",
        f"{prefix}run:{checkpoint.run_id}",
        f"{prefix}runs",
        f"{prefix}seq",
    ]
    await _drop_prefix(redis_url, prefix)


@pytest.mark.parametrize("scheme", ["redis", "rediss"])
async def test_unreachable_server_is_store_unavailable(scheme: str) -> None:
    port = servers.closed_port()
    url = f"{scheme}://:s3cret@127.0.0.1:{port}/0?socket_connect_timeout=1"
    store = RedisCheckpointStore.from_url(url)
    # fail_after guards against a hang; how fast the error comes is for the benchmarks
    with anyio.fail_after(10), pytest.raises(StoreUnavailableError) as caught:
        await store.save(make_checkpoint(new_run_id()))
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message and "s3cret" not in message, message
    await store.aclose()


async def test_server_stopped_mid_run_is_store_unavailable(redis_server: Any) -> None:
    store = RedisCheckpointStore(_with_option(redis_server.url, "socket_connect_timeout=1"))
    run_id = new_run_id()
    first = make_checkpoint(run_id, 0)
    await store.save(first)
    redis_server.stop()
    with anyio.fail_after(10), pytest.raises(StoreUnavailableError, match=str(redis_server.port)):
        await store.save(make_checkpoint(run_id, 1, parent_id=first.checkpoint_id))
    with pytest.raises(StoreUnavailableError):
        await store.latest(run_id)
    await store.aclose()


def test_redact_url() -> None:
    assert redact_url("redis://u:pw@h:1/0?x=1") == "redis://u:***@h:1/0?x=1"
    assert redact_url("redis://h:1/0") == "redis://h:1/0"
    assert "pw" not in repr(RedisCheckpointStore("rediss://:pw@h:1/0"))


def test_hook_registers_redis_and_rediss() -> None:
    # the kernel's own path: entry point, plugin manager, hook, collector, registry
    manager = make_plugin_manager(
        fake_entry_point("redis", plait_redis, distribution="plait-redis")
    )
    registered = manager.registry("checkpoint_store")
    assert registered.names() == ["redis", "rediss"]
    assert {registered.entry(name).distribution for name in registered} == {"plait-redis"}
    assert isinstance(registered.get("rediss")("rediss://h:1/0"), RedisCheckpointStore)


async def test_retention_expires_a_whole_run_after_its_last_save(redis_url: str) -> None:
    prefix = f"plait-test-{uuid.uuid4().hex}:"
    url = _with_option(redis_url, f"prefix={prefix}&retention=2")
    store = RedisCheckpointStore(url)
    client = redis.asyncio.Redis.from_url(redis_url)
    run_id = new_run_id("kept-for-a-while")
    try:
        first = make_checkpoint(run_id)
        await store.save(first)
        lease = await store.acquire_lease(run_id, ttl=60)
        await client.expire(f"{prefix}cp:{first.checkpoint_id}", 60)  # as if saved long ago
        second = make_checkpoint(run_id, 1, base_id=first.checkpoint_id)
        await store.save(second, lease=lease)
        # the second save renewed every key of the run, the base of its delta included
        for key in (f"cp:{first.checkpoint_id}", f"cp:{second.checkpoint_id}", f"run:{run_id}"):
            assert 0 < await client.ttl(prefix + key) <= 2, key
        assert 0 < await client.ttl(f"{prefix}lease:{run_id}") <= 2
        assert [info.run_id for info in await store.runs()] == [run_id]
        await anyio.sleep(2.2)
        assert await store.list(run_id) == []
        assert await store.runs() == []
        assert await client.zscore(f"{prefix}runs", run_id) is None  # the index forgot it
    finally:
        await store.aclose()
        await _drop_prefix(redis_url, prefix)
        await client.aclose()


async def test_a_bad_retention_names_the_forms() -> None:
    with pytest.raises(ValueError, match=r"retention in .*'a week' is not an age"):
        RedisCheckpointStore("redis://127.0.0.1:1/0?retention=a week")
