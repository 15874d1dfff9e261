"""The Redis store's run index: a RunIndex over the ``runs`` sorted set, paged by the
seq of each run's latest save."""

from __future__ import annotations

import uuid

import attrs
import pytest
import redis.asyncio
from plait_durable import RunIndex, list_runs
from plait_redis import RedisCheckpointStore
from plait_testing.stores import make_checkpoint

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: redis-py's asyncio client does not run on trio."""
    return "asyncio"


async def test_pages_of_runs_newest_first_and_filtered(redis_url: str) -> None:
    prefix = f"plait-test-{uuid.uuid4().hex}:"
    url = f"{redis_url}{'&' if '?' in redis_url else '?'}prefix={prefix}"
    store = RedisCheckpointStore.from_url(url)
    client = redis.asyncio.Redis.from_url(redis_url)
    try:
        assert isinstance(store, RunIndex)
        for i in range(5):
            checkpoint = make_checkpoint(f"run-{i}", 1, status=("idle", "failed")[i % 2])
            await store.save(attrs.evolve(checkpoint, metadata={"workflow": "wf"}))
        pages, cursor = [], None
        while True:
            page = await list_runs(store, limit=2, cursor=cursor)
            pages.append([r.run_id for r in page.runs])
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert pages == [["run-4", "run-3"], ["run-2", "run-1"], ["run-0"]]
        failed = await list_runs(store, status="failed")
        assert [r.run_id for r in failed.runs] == ["run-3", "run-1"]
        assert failed.runs[0].workflow == "wf" and failed.next_cursor is None
    finally:
        await store.aclose()
        keys = [key async for key in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()
