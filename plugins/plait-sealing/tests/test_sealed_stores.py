"""A sealed store around every checkpoint store: memory, file, SQLite, Redis, PostgreSQL.

The wrapped store keeps, lists, leases and prunes sealed checkpoints as its own; what it
holds is the seal (no plaintext when encrypted), and only the right key reads it back.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from plait import CheckpointAuthError, CorruptCheckpointError, RunLeaseError
from plait_durable import CheckpointStore, encode_checkpoint, open_store
from plait_sealing import SealedStore, generate_key
from sealing_workflows import secret_keeper

pytestmark = pytest.mark.anyio

KEY = generate_key("k1")
OTHER = generate_key("k2")

#: (store, backend): Redis and PostgreSQL clients run on asyncio only.
CASES = [
    (kind, backend) for kind in ("memory", "file", "sqlite") for backend in ("asyncio", "trio")
]
CASES += [("redis", "asyncio"), ("postgresql", "asyncio")]


@pytest.fixture(params=CASES, ids=[f"{kind}-{backend}" for kind, backend in CASES])
def case(request: pytest.FixtureRequest) -> tuple[str, str]:
    """One store kind and the async backend it runs on."""
    value: tuple[str, str] = request.param
    return value


@pytest.fixture
def anyio_backend(case: tuple[str, str]) -> str:
    """The case's backend."""
    return case[1]


@pytest.fixture
def store_url(case: tuple[str, str], tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A URL of the case's store kind, private to this test."""
    kind = case[0]
    if kind == "memory":
        return f"memory://sealing-{uuid.uuid4().hex}"
    if kind == "file":
        return f"file://{tmp_path / 'store'}"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    if kind == "redis":
        server: str = request.getfixturevalue("redis_url")
        return f"{server}{'&' if '?' in server else '?'}prefix=plait-sealing-{uuid.uuid4().hex}:"
    url: str = request.getfixturevalue("postgres_url")
    return url


async def _raw(url: str, run_id: str) -> list[Any]:
    """Every checkpoint of ``run_id`` as the wrapped store holds it (sealed)."""
    store = open_store(url)
    try:
        return [await store.load(info.checkpoint_id) for info in await store.list(run_id)]
    finally:
        await store.aclose()


@pytest.mark.parametrize("encrypt", [False, True], ids=["signed", "encrypted"])
async def test_a_sealed_run_pauses_and_resumes_in_every_store(
    store_url: str, encrypt: bool
) -> None:
    secret = "s3cret-" + uuid.uuid4().hex
    wf = secret_keeper()
    async with SealedStore(store_url, KEY, encrypt=encrypt) as store:
        paused = await wf.run(secret, checkpoint=store, max_supersteps=1, raise_on_failure=False)
        assert paused.outputs == []
    raw = await _raw(store_url, paused.run_id)
    assert raw, "the wrapped store holds the run's checkpoints"
    for checkpoint in raw:
        assert checkpoint.state["kind"] == "sealed" and checkpoint.metadata == {}
        assert checkpoint.state["alg"] == ("A256GCM+HS256" if encrypt else "HS256")
        # encrypted: not a byte of the secret in what the store keeps
        assert (secret.encode() in encode_checkpoint(checkpoint)) is not encrypt
    async with SealedStore(store_url, OTHER) as wrong:
        with pytest.raises(CheckpointAuthError, match=f"{paused.run_id}.*'k1', which is not"):
            await wf.resume(paused.run_id, wrong)
    with pytest.raises(CorruptCheckpointError, match="has kind 'sealed'"):
        await wf.resume(paused.run_id, store_url)
    async with SealedStore(store_url, [OTHER, KEY]) as rotated:
        done = await wf.resume(paused.run_id, rotated, max_supersteps=10)
        assert done.outputs == [secret.upper()]
        latest = await rotated.latest(paused.run_id)
        assert latest is not None and latest.state["kind"] == "full"  # unsealed on the way in
    assert (await _raw(store_url, paused.run_id))[-1].state["key"] == "k2"


async def test_listing_leases_and_pruning_go_through_to_the_store(store_url: str) -> None:
    wf = secret_keeper()
    async with SealedStore(store_url, KEY) as store:
        result = await wf.run("x", checkpoint=store)
        infos = list(await store.list(result.run_id))
        assert len(infos) >= 2 and infos[-1].status == "idle"
        listed = {run.run_id: run for run in await store.runs()}
        assert listed[result.run_id].status == "idle"
        assert listed[result.run_id].workflow is None  # the name is inside the seal
        lease = await store.acquire_lease(result.run_id, ttl=30)
        other: CheckpointStore = SealedStore(store_url, KEY)
        try:
            with pytest.raises(RunLeaseError):
                await other.acquire_lease(result.run_id, ttl=30)
        finally:
            await other.aclose()
        await store.release_lease(lease)
        assert await store.prune(result.run_id, keep_last=1) == len(infos) - 2
        kept = [i.checkpoint_id for i in await store.list(result.run_id)]
        assert kept == [infos[0].checkpoint_id, infos[-1].checkpoint_id]
        await store.delete(kept[-1])
        assert [i.checkpoint_id for i in await store.list(result.run_id)] == kept[:1]
        assert await store.delete_run(result.run_id) == 1
        assert await store.latest(result.run_id) is None
