"""Signed and encrypted checkpoints through :class:`plait_sealing.SealedStore`.

With a key, every checkpoint carries an HMAC-SHA256 over its state, its metadata and its
listing fields; a forger who can write the store (and recompute the SHA-256) is refused.
With encryption, the store's bytes hold no plaintext of the run's values.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from plait import PlaitError, Workflow
from plait_durable import CheckpointAuthError, CorruptCheckpointError
from plait_sealing import (
    CheckpointKey,
    CheckpointKeyError,
    CheckpointKeys,
    SealedStore,
    generate_key,
    resolve_keys,
    seal,
    unseal,
)
from plait_sealing._store import _header
from plait_testing.stores import make_checkpoint, new_run_id
from sealing_workflows import (
    Payload,
    body_of,
    chain,
    checkpoint_rows,
    secret_keeper,
    with_checksum,
    write_row,
)

pytestmark = pytest.mark.anyio

KEY_A = generate_key("a")
KEY_B = generate_key("b")
SECRET = "hunter2-" + uuid.uuid4().hex  # a value no store could hold by chance


async def resume(
    wf: Workflow, run_id: str, url: str, keys: Any, *, encrypt: bool = False, **options: Any
) -> Any:
    """Resume ``run_id`` from ``url`` sealed with ``keys`` (unsealed with ``None``;
    encrypting what the resumed run writes with ``encrypt``)."""
    if keys is None:
        return await wf.resume(run_id, url, **options)
    async with SealedStore(url, keys, encrypt=encrypt) as store:
        return await wf.resume(run_id, store, **options)


async def paused(db: Path, keys: Any = None) -> tuple[Workflow, str, str]:
    """chain() stopped after superstep 1 in SQLite file ``db``: (workflow, url, run id)."""
    url = f"sqlite:///{db}"
    wf = chain()
    if keys is None:
        result = await wf.run(Payload(1), checkpoint=url, max_supersteps=1, raise_on_failure=False)
    else:
        async with SealedStore(url, keys) as store:
            result = await wf.run(
                Payload(1), checkpoint=store, max_supersteps=1, raise_on_failure=False
            )
    return wf, url, result.run_id


async def test_a_signed_run_round_trips_and_carries_a_mac(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, KEY_A)
    rows = checkpoint_rows(db, run_id)
    for _, data in rows:
        state = body_of(data)["state"]
        assert state["kind"] == "sealed" and state["key"] == "a" and len(state["mac"]) == 64
    resumed = await resume(wf, run_id, url, KEY_A, max_supersteps=10)
    assert resumed.outputs == [20]
    assert all(body_of(d)["state"]["key"] == "a" for _, d in checkpoint_rows(db, run_id))


def _edit_payload(body: dict[str, Any]) -> None:
    inner = json.loads(body["state"]["payload"])
    inner["state"]["pending"] = {"middle": [7]}
    body["state"]["payload"] = json.dumps(inner)


def _edit(field: str, value: Any) -> Any:
    def edit(body: dict[str, Any]) -> None:
        body[field] = value

    return edit


def _strip_mac(body: dict[str, Any]) -> None:
    del body["state"]["mac"]


def _unsealed(body: dict[str, Any]) -> None:
    """The forger's downgrade: a plain, unsigned body."""
    inner = json.loads(body["state"]["payload"])
    body["state"], body["metadata"] = inner["state"], inner["metadata"]
    body["state"]["pending"] = {"middle": [7]}


def _mac_of_another(body: dict[str, Any]) -> None:
    body["state"]["mac"] = "0" * 64


TAMPERING = {
    "body (a pending message)": _edit_payload,
    "listing field superstep": _edit("superstep", 0),
    "listing field status": _edit("status", "idle"),
    "listing field parent_id": _edit("parent_id", None),
    "listing field created_at": _edit("created_at", 1.5),
    "stripped MAC": _strip_mac,
    "zeroed MAC": _mac_of_another,
    "seal removed (unsigned body)": _unsealed,
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
async def test_a_tampered_checkpoint_is_refused_naming_run_and_checkpoint(
    how: str, tmp_path: Path
) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, KEY_A)
    checkpoint_id, data = checkpoint_rows(db, run_id)[-1]
    body = body_of(data)
    TAMPERING[how](body)
    write_row(db, checkpoint_id, with_checksum(body))  # the SHA-256 is recomputed
    with pytest.raises(CheckpointAuthError) as caught:
        await resume(wf, run_id, url, KEY_A, max_supersteps=10)
    assert run_id in str(caught.value) and checkpoint_id in str(caught.value)
    assert isinstance(caught.value, CorruptCheckpointError)


async def test_a_wrong_key_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, KEY_A)
    impostor = generate_key("a")  # same id, other secret
    with pytest.raises(CheckpointAuthError, match="fails its MAC check with checkpoint key 'a'"):
        await resume(wf, run_id, url, impostor)
    with pytest.raises(CheckpointAuthError, match=r"key 'a', which is not among .*\(b\)"):
        await resume(wf, run_id, url, KEY_B)
    with pytest.raises(CorruptCheckpointError, match="has kind 'sealed'.* through that wrapper"):
        await resume(wf, run_id, url, None)  # no key at all: the kernel reads the envelope
    resumed = await resume(wf, run_id, url, KEY_A, max_supersteps=10)
    assert resumed.outputs == [20]


async def test_with_a_key_an_unsigned_checkpoint_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db)  # written without a key
    with pytest.raises(CheckpointAuthError, match="carries no MAC"):
        await resume(wf, run_id, url, KEY_A)


async def test_rotation_the_old_key_verifies_and_the_new_key_signs(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, KEY_A)
    old = {cid for cid, _ in checkpoint_rows(db, run_id)}
    resumed = await resume(wf, run_id, url, [KEY_B, KEY_A], max_supersteps=10)
    assert resumed.outputs == [20]
    signers = {cid: body_of(d)["state"]["key"] for cid, d in checkpoint_rows(db, run_id)}
    assert {signers[cid] for cid in old} == {"a"}
    assert {k for cid, k in signers.items() if cid not in old} == {"b"}
    # the retired key alone no longer verifies the new checkpoints
    with pytest.raises(CheckpointAuthError, match="key 'b', which is not among"):
        await resume(wf, run_id, url, KEY_A)


async def test_keys_from_the_environment_and_the_sealed_scheme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", KEY_A)
    wf = chain()
    paused = await wf.run(
        Payload(1), checkpoint=f"sealed:{url}", max_supersteps=1, raise_on_failure=False
    )
    assert body_of(checkpoint_rows(db, paused.run_id)[-1][1])["state"]["key"] == "a"
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", f"{KEY_B}, {KEY_A}")
    resumed = await wf.resume(paused.run_id, f"sealed:{url}", max_supersteps=10)
    assert resumed.outputs == [20]
    assert body_of(checkpoint_rows(db, paused.run_id)[-1][1])["state"]["key"] == "b"
    async with SealedStore(url) as store:  # keys= left out: the environment's
        assert (await store.latest(paused.run_id)) is not None
    monkeypatch.delenv("PLAIT_CHECKPOINT_KEY")
    with pytest.raises(CheckpointKeyError, match="PLAIT_CHECKPOINT_KEY, which is not set"):
        await wf.resume(paused.run_id, f"sealed:{url}")
    with pytest.raises(CheckpointKeyError, match="SealedStore needs a key: pass keys="):
        SealedStore(url)
    with pytest.raises(ValueError, match=r"sealed:URL.*got 'sealed:'"):
        await wf.resume(paused.run_id, "sealed:")


def _store_bytes(root: Path) -> bytes:
    """Every byte under ``root`` (a SQLite file with its WAL, or a file store)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_encrypted_checkpoints_hold_no_plaintext(kind: str, tmp_path: Path) -> None:
    wf = secret_keeper()
    runs = {}
    for name, encrypt in {"plain": False, "sealed": True}.items():
        root = tmp_path / name
        root.mkdir()
        url = f"sqlite:///{root / 'runs.db'}" if kind == "sqlite" else f"file://{root}"
        async with SealedStore(url, KEY_A, encrypt=encrypt) as store:
            result = await wf.run(
                SECRET, checkpoint=store, max_supersteps=1, raise_on_failure=False
            )
        runs[name] = (url, result.run_id)
    # signed only: the secret is there in the clear (so the check below can fail)
    assert SECRET.encode() in _store_bytes(tmp_path / "plain")
    sealed_bytes = _store_bytes(tmp_path / "sealed")
    assert SECRET.encode() not in sealed_bytes
    assert base64.b64encode(SECRET.encode()) not in sealed_bytes
    assert b'"executor_state"' not in sealed_bytes and b'"topology"' not in sealed_bytes
    url, run_id = runs["sealed"]
    with pytest.raises(CorruptCheckpointError, match="has kind 'sealed'"):
        await resume(wf, run_id, url, None)
    with pytest.raises(CheckpointAuthError, match="not among the configured keys"):
        await resume(wf, run_id, url, KEY_B)
    # the resumed run writes with an encrypting store too: its checkpoints (the first a
    # full one, holding every executor's state) never hold the secret in the clear
    resumed = await resume(wf, run_id, url, KEY_A, encrypt=True, max_supersteps=10)
    assert resumed.outputs == [SECRET.upper()]
    assert SECRET.encode() not in _store_bytes(tmp_path / "sealed")


async def test_a_tampered_ciphertext_does_not_decrypt(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    key = CheckpointKey(os.urandom(32), "enc", encrypt=True)  # a key marked for encryption
    wf, url, run_id = await paused(db, key)
    checkpoint_id, data = checkpoint_rows(db, run_id)[-1]
    body = body_of(data)
    assert body["state"]["alg"] == "A256GCM+HS256"
    raw = bytearray(base64.b64decode(body["state"]["payload"]))
    raw[5] ^= 1
    body["state"]["payload"] = base64.b64encode(bytes(raw)).decode()
    write_row(db, checkpoint_id, with_checksum(body))
    with pytest.raises(CheckpointAuthError, match=checkpoint_id):  # the MAC covers it too
        await resume(wf, run_id, url, key)


def test_bad_keys_are_errors_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"file://{tmp_path}"
    with pytest.raises(CheckpointKeyError, match="at least 16 random bytes"):
        SealedStore(url, b"short")
    with pytest.raises(CheckpointKeyError, match="'k' is not base64"):
        SealedStore(url, "k:not base64!")
    with pytest.raises(CheckpointKeyError, match="key ids repeat"):
        SealedStore(url, [KEY_A, KEY_A])
    with pytest.raises(CheckpointKeyError, match="may hold only letters"):
        SealedStore(url, CheckpointKey(b"x" * 16, "no spaces"))
    with pytest.raises(CheckpointKeyError, match="encrypting checkpoints needs a key"):
        SealedStore(url, encrypt=True)
    with pytest.raises(CheckpointKeyError, match="encrypt must be True or False"):
        SealedStore(url, KEY_A, encrypt="yes")  # type: ignore[arg-type]
    with pytest.raises(CheckpointKeyError, match="must be a key .* got int"):
        SealedStore(url, 42)
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", "x:@@@")
    with pytest.raises(CheckpointKeyError, match="PLAIT_CHECKPOINT_KEY: .*'x' is not base64"):
        SealedStore(url)
    assert isinstance(CheckpointKeyError("x"), PlaitError)
    assert list(tmp_path.iterdir()) == []  # nothing was written


async def test_a_store_is_sealed_once(tmp_path: Path) -> None:
    async with SealedStore(f"file://{tmp_path}", KEY_A) as store:
        with pytest.raises(CheckpointKeyError, match="already seals"):
            SealedStore(store, KEY_B)
        assert store.url == f"sealed:file://{tmp_path}"


def test_keys_never_show_their_secret() -> None:
    keys = resolve_keys([KEY_A, b"\x01" * 32])
    assert isinstance(keys, CheckpointKeys)
    secret = KEY_A.split(":")[1]
    assert secret not in repr(keys) and "\\x01" not in repr(keys)
    assert keys.keys[0].key_id == "a" and len(keys.keys[1].key_id) == 12
    assert keys.signing.key_id == "a"
    store = SealedStore("memory://", keys)
    assert secret not in repr(store) and "key_id='a'" in repr(store)


def test_signing_imports_no_cryptography(tmp_path: Path) -> None:
    """``cryptography`` is imported when a checkpoint is encrypted, not before."""
    code = f"""
import sys
sys.path[:0] = {[str(Path(__file__).parent)]!r}
import anyio
from plait_sealing import SealedStore
from sealing_workflows import Payload, chain
assert "cryptography" not in sys.modules
wf = chain()
url = "sqlite:///{tmp_path / "runs.db"}"

async def run(encrypt):
    async with SealedStore(url, {KEY_A!r}, encrypt=encrypt) as store:
        return await wf.run(Payload(1), checkpoint=store)

assert anyio.run(run, False).outputs == [20]
assert "cryptography" not in sys.modules, "signing imported cryptography"
assert anyio.run(run, True).outputs == [20]
assert "cryptography" in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# -- one checkpoint, sealed and unsealed ------------------------------------------------------


def _resigned(checkpoint: Any, key: CheckpointKey, **envelope: str) -> Any:
    """``checkpoint`` with ``envelope`` fields changed and a valid MAC over them: what a
    writer holding the key (or a bug) could produce."""

    state = {**checkpoint.state, **envelope}
    header = _header(checkpoint, state["alg"], state["key"], state.get("nonce", ""))
    mac = hmac.new(key.mac_key, header + state["payload"].encode(), hashlib.sha256)
    return attrs.evolve(checkpoint, state={**state, "mac": mac.hexdigest()})


def test_seal_and_unseal_round_trip_a_checkpoint() -> None:

    for encrypt in (False, True):
        keys = resolve_keys(KEY_A, encrypt)
        assert keys is not None
        checkpoint = make_checkpoint(new_run_id(), 3, state={"kind": "full", "n": 1.5})
        sealed = seal(checkpoint, keys)
        assert sealed.metadata == {} and sealed.state["kind"] == "sealed"
        assert ('"n":1.5' in sealed.state["payload"]) is not encrypt
        assert unseal(sealed, keys) == checkpoint
    huge = make_checkpoint(new_run_id(), state={"kind": "full", "n": 2**70, "t": "é\u2028"})
    assert unseal(seal(huge, keys), keys) == huge  # beyond orjson's ints: the standard library


def test_a_validly_signed_ciphertext_that_does_not_decrypt_is_refused() -> None:

    key = CheckpointKey(os.urandom(32), "enc", encrypt=True)
    keys = CheckpointKeys((key,), encrypt=True)
    sealed = seal(make_checkpoint(new_run_id()), keys)
    raw = bytearray(base64.b64decode(sealed.state["payload"]))
    raw[0] ^= 1
    forged = _resigned(sealed, key, payload=base64.b64encode(bytes(raw)).decode())
    with pytest.raises(CheckpointAuthError, match="does not decrypt with checkpoint key 'enc'"):
        unseal(forged, keys)


@pytest.mark.parametrize(
    ("envelope", "message"),
    [
        ({"payload": "not json"}, "signed payload that does not decode"),
        ({"payload": "[1, 2]"}, "signed payload of the wrong shape"),
        ({"payload": '{"state": {}, "metadata": []}'}, "signed payload of the wrong shape"),
    ],
)
def test_a_signed_payload_that_is_not_a_checkpoint_is_refused(
    envelope: dict[str, str], message: str
) -> None:

    keys = resolve_keys(KEY_A)
    assert keys is not None
    forged = _resigned(seal(make_checkpoint(new_run_id()), keys), keys.signing, **envelope)
    with pytest.raises(CheckpointAuthError, match=message):
        unseal(forged, keys)


@pytest.mark.parametrize(
    "envelope",
    [{"alg": "none"}, {"extra": "x"}, {"nonce": "AAAA"}, {"key": ""}, {"mac": 7}],
    ids=["unknown alg", "unknown field", "nonce when signed", "no key id", "mac not text"],
)
def test_a_mis_shaped_seal_is_refused(envelope: dict[str, Any]) -> None:

    keys = resolve_keys(KEY_A)
    assert keys is not None
    sealed = seal(make_checkpoint(new_run_id()), keys)
    damaged = attrs.evolve(sealed, state={**sealed.state, **envelope})
    with pytest.raises(CheckpointAuthError, match="mis-shaped seal") as caught:
        unseal(damaged, keys)
    assert sealed.checkpoint_id in str(caught.value)
