"""A sealed store around every checkpoint store: memory, file, SQLite, Redis, PostgreSQL.

The wrapped store keeps, lists, leases and prunes sealed checkpoints as its own; what it
holds is the seal (no plaintext when encrypted), and only the right key reads it back.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from plait_durable import (
    CheckpointAuthError,
    CheckpointStore,
    CorruptCheckpointError,
    RunLeaseError,
    encode_checkpoint,
    open_store,
)
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


#: A value a reader of the store could guess: a 4-digit PIN in a known sentence, long
#: enough to be stored as a blob.
PIN_TEMPLATE = "Your card's PIN is {:04d}. " + "Keep it to yourself and never write it down. " * 8


async def _inner_blobs(url: str, run_id: str) -> tuple[set[str], bytes]:
    """The blob addresses the wrapped store holds for ``run_id``, and every byte of its
    checkpoints and blobs, as a reader of the store sees them."""
    store = open_store(url)
    try:
        addresses = set(await store.blob_hashes(run_id))  # type: ignore[attr-defined]
        blobs = await store.get_blobs(run_id, addresses)  # type: ignore[attr-defined]
        checkpoints = [await store.load(i.checkpoint_id) for i in await store.list(run_id)]
    finally:
        await store.aclose()
    seen = b"".join([*map(encode_checkpoint, checkpoints), *blobs.values()])
    return addresses, seen


async def test_an_encrypted_store_shows_no_hash_of_a_value_to_guess_it_by(store_url: str) -> None:
    """Issue 34, N3: an encrypted store kept each value's SHA-256 in the clear (blob
    keys and the seal's ``refs``), so a reader recovered a 4-digit PIN by hashing the
    10,000 candidates. Now it keys blobs by an HMAC under the store key."""
    import hashlib

    import orjson

    pin = 4821
    wf = secret_keeper()
    async with SealedStore(store_url, KEY, encrypt=True) as store:
        paused = await wf.run(
            PIN_TEMPLATE.format(pin), checkpoint=store, max_supersteps=1, raise_on_failure=False
        )
    addresses, seen = await _inner_blobs(store_url, paused.run_id)
    assert addresses, "the value is stored as a blob"
    recovered = [
        guess
        for guess in range(10_000)
        if (digest := hashlib.sha256(orjson.dumps(PIN_TEMPLATE.format(guess))).hexdigest())
        in addresses
        or digest.encode() in seen
    ]
    assert recovered == []
    # the sealed store still reads them, and stores a value once
    async with SealedStore(store_url, KEY, encrypt=True) as store:
        done = await wf.resume(paused.run_id, store, max_supersteps=10)
        assert done.outputs == [PIN_TEMPLATE.format(pin).upper()]
    after, _ = await _inner_blobs(store_url, paused.run_id)
    assert addresses <= after and len(after) <= len(addresses) + 1  # the upper-cased output


LEGACY_KEY = "legacy:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
LEGACY_SECRET = "PIN 4821 " + "the legacy secret that is long enough to be a blob " * 12


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_encrypted_store_written_before_keyed_addresses_still_resumes(
    tmp_path: Path,
) -> None:
    """``data/legacy-encrypted.db`` was written by the code before keyed addresses (its
    blob is stored under its SHA-256): SealedStore(f"sqlite:///{db}", LEGACY_KEY,
    encrypt=True) running ``secret_keeper()`` on LEGACY_SECRET with ``max_supersteps=1``
    and ``run_id="legacy-run"``."""
    import shutil

    db = tmp_path / "legacy.db"
    shutil.copyfile(Path(__file__).parent / "data" / "legacy-encrypted.db", db)
    async with SealedStore(f"sqlite:///{db}", LEGACY_KEY, encrypt=True) as store:
        done = await secret_keeper().resume("legacy-run", store, max_supersteps=10)
        assert done.outputs == [LEGACY_SECRET.upper()]
        again = await secret_keeper().resume(done.run_id, store)  # its new blobs read back
        assert again.status == "idle"
