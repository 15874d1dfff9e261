"""Signed and encrypted checkpoints (issue 14, authenticity and confidentiality).

With a key, every checkpoint carries an HMAC-SHA256 over its state, its metadata and its
listing fields; a forger who can write the store (and recompute the SHA-256) is refused.
With encryption, the store's bytes hold no plaintext of the run's values.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from plait import Never, Workflow, WorkflowContext, executor
from plait.errors import CheckpointAuthError, CorruptCheckpointError, RunOptionError
from plait.sealing import CheckpointKey, CheckpointKeys, generate_key, resolve_keys
from plait_builders import WorkflowBuilder
from test_trust_boundary import Payload, chain, checkpoint_rows, write_row
from test_trust_boundary import seal as with_checksum

pytestmark = pytest.mark.anyio

KEY_A = generate_key("a")
KEY_B = generate_key("b")
SECRET = "hunter2-" + uuid.uuid4().hex  # a value no store could hold by chance


def secret_keeper() -> Workflow:
    """keep (str: holds it in its state, sends it on) -> tell (yields it)."""

    @executor(id="keep")
    async def keep(text: str, ctx: WorkflowContext[str]) -> None:
        ctx.state["kept"] = text
        await ctx.send_message(text)

    @executor(id="tell")
    async def tell(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text.upper())

    return WorkflowBuilder("secrets").add_edge(keep, tell).set_start(keep).build()


async def paused(db: Path, **options: Any) -> tuple[Workflow, str, str]:
    """chain() stopped after superstep 1 in SQLite file ``db``: (workflow, url, run id)."""
    url = f"sqlite:///{db}"
    wf = chain()
    result = await wf.run(
        Payload(1), checkpoint=url, max_supersteps=1, raise_on_failure=False, **options
    )
    return wf, url, result.run_id


def body_of(data: bytes) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(data.split(b"\n", 2)[2])
    return body


async def test_a_signed_run_round_trips_and_carries_a_mac(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, checkpoint_key=KEY_A)
    rows = checkpoint_rows(db, run_id)
    for _, data in rows:
        state = body_of(data)["state"]
        assert state["kind"] == "sealed" and state["key"] == "a" and len(state["mac"]) == 64
    resumed = await wf.resume(run_id, url, checkpoint_key=KEY_A, max_supersteps=10)
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
    wf, url, run_id = await paused(db, checkpoint_key=KEY_A)
    checkpoint_id, data = checkpoint_rows(db, run_id)[-1]
    body = body_of(data)
    TAMPERING[how](body)
    write_row(db, checkpoint_id, with_checksum(body))  # the SHA-256 is recomputed
    with pytest.raises(CheckpointAuthError) as caught:
        await wf.resume(run_id, url, checkpoint_key=KEY_A, max_supersteps=10)
    assert run_id in str(caught.value) and checkpoint_id in str(caught.value)
    assert isinstance(caught.value, CorruptCheckpointError)


async def test_a_wrong_key_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, checkpoint_key=KEY_A)
    impostor = generate_key("a")  # same id, other secret
    with pytest.raises(CheckpointAuthError, match="fails its MAC check with checkpoint key 'a'"):
        await wf.resume(run_id, url, checkpoint_key=impostor)
    with pytest.raises(CheckpointAuthError, match=r"key 'a', which is not among .*\(b\)"):
        await wf.resume(run_id, url, checkpoint_key=KEY_B)
    with pytest.raises(CheckpointAuthError, match="signed with checkpoint key 'a'; pass"):
        await wf.resume(run_id, url)  # no key at all
    resumed = await wf.resume(run_id, url, checkpoint_key=KEY_A, max_supersteps=10)
    assert resumed.outputs == [20]


async def test_with_a_key_an_unsigned_checkpoint_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db)  # written without a key
    with pytest.raises(CheckpointAuthError, match="carries no MAC"):
        await wf.resume(run_id, url, checkpoint_key=KEY_A)


async def test_rotation_the_old_key_verifies_and_the_new_key_signs(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    wf, url, run_id = await paused(db, checkpoint_key=KEY_A)
    old = {cid for cid, _ in checkpoint_rows(db, run_id)}
    resumed = await wf.resume(run_id, url, checkpoint_key=[KEY_B, KEY_A], max_supersteps=10)
    assert resumed.outputs == [20]
    signers = {cid: body_of(d)["state"]["key"] for cid, d in checkpoint_rows(db, run_id)}
    assert {signers[cid] for cid in old} == {"a"}
    assert {k for cid, k in signers.items() if cid not in old} == {"b"}
    # the retired key alone no longer verifies the new checkpoints
    with pytest.raises(CheckpointAuthError, match="key 'b', which is not among"):
        await wf.resume(run_id, url, checkpoint_key=KEY_A)


async def test_keys_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", KEY_A)
    wf, url, run_id = await paused(db)
    assert body_of(checkpoint_rows(db, run_id)[-1][1])["state"]["key"] == "a"
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", f"{KEY_B}, {KEY_A}")
    resumed = await wf.resume(run_id, url, max_supersteps=10)
    assert resumed.outputs == [20]
    assert body_of(checkpoint_rows(db, run_id)[-1][1])["state"]["key"] == "b"
    monkeypatch.delenv("PLAIT_CHECKPOINT_KEY")
    with pytest.raises(CheckpointAuthError, match="pass checkpoint_key="):
        await wf.resume(run_id, url)


def _store_bytes(root: Path) -> bytes:
    """Every byte under ``root`` (a SQLite file with its WAL, or a file store)."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


@pytest.mark.parametrize("kind", ["sqlite", "file"])
async def test_encrypted_checkpoints_hold_no_plaintext(kind: str, tmp_path: Path) -> None:
    wf = secret_keeper()
    urls = {
        "plain": (tmp_path / "plain", KEY_A, False),
        "sealed": (tmp_path / "sealed", KEY_A, True),
    }
    run_ids = {}
    for name, (root, key, encrypt) in urls.items():
        root.mkdir()
        url = f"sqlite:///{root / 'runs.db'}" if kind == "sqlite" else f"file://{root}"
        result = await wf.run(
            SECRET, checkpoint=url, checkpoint_key=key, checkpoint_encrypt=encrypt,
            max_supersteps=1, raise_on_failure=False,
        )  # fmt: skip
        run_ids[name] = (url, result.run_id)
    # signed only: the secret is there in the clear (so the check below can fail)
    assert SECRET.encode() in _store_bytes(tmp_path / "plain")
    sealed_bytes = _store_bytes(tmp_path / "sealed")
    assert SECRET.encode() not in sealed_bytes
    assert base64.b64encode(SECRET.encode()) not in sealed_bytes
    assert b'"executor_state"' not in sealed_bytes and b'"topology"' not in sealed_bytes
    url, run_id = run_ids["sealed"]
    with pytest.raises(CheckpointAuthError, match="and encrypted; pass checkpoint_key="):
        await wf.resume(run_id, url)
    with pytest.raises(CheckpointAuthError, match="not among the configured keys"):
        await wf.resume(run_id, url, checkpoint_key=KEY_B)
    resumed = await wf.resume(run_id, url, checkpoint_key=KEY_A, max_supersteps=10)
    assert resumed.outputs == [SECRET.upper()]
    assert SECRET.encode() not in _store_bytes(tmp_path / "sealed")


async def test_a_tampered_ciphertext_does_not_decrypt(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    key = CheckpointKey(os.urandom(32), "enc", encrypt=True)  # a key marked for encryption
    wf, url, run_id = await paused(db, checkpoint_key=key)
    checkpoint_id, data = checkpoint_rows(db, run_id)[-1]
    body = body_of(data)
    assert body["state"]["alg"] == "A256GCM+HS256"
    raw = bytearray(base64.b64decode(body["state"]["payload"]))
    raw[5] ^= 1
    body["state"]["payload"] = base64.b64encode(bytes(raw)).decode()
    write_row(db, checkpoint_id, with_checksum(body))
    with pytest.raises(CheckpointAuthError, match=checkpoint_id):
        await wf.resume(run_id, url, checkpoint_key=key)


def test_bad_keys_are_run_option_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    wf = chain()
    with pytest.raises(RunOptionError, match="at least 16 random bytes"):
        wf.run_sync(Payload(1), checkpoint="memory://", checkpoint_key=b"short")
    with pytest.raises(RunOptionError, match="'k' is not base64"):
        wf.run_sync(Payload(1), checkpoint="memory://", checkpoint_key="k:not base64!")
    with pytest.raises(RunOptionError, match="key ids repeat"):
        wf.run_sync(Payload(1), checkpoint="memory://", checkpoint_key=[KEY_A, KEY_A])
    with pytest.raises(RunOptionError, match="checkpoint_encrypt needs a key"):
        wf.run_sync(Payload(1), checkpoint="memory://", checkpoint_encrypt=True)
    with pytest.raises(RunOptionError, match="must be True or False"):
        wf.run_sync(Payload(1), checkpoint="memory://", checkpoint_encrypt="yes")
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", "x:@@@")
    with pytest.raises(RunOptionError, match="PLAIT_CHECKPOINT_KEY: .*'x' is not base64"):
        wf.run_sync(Payload(1), checkpoint="memory://")
    assert wf.run_sync(Payload(1)).outputs == [20]  # no checkpoint: the key is not read


def test_keys_never_show_their_secret() -> None:
    keys = resolve_keys([KEY_A, b"\x01" * 32])
    assert isinstance(keys, CheckpointKeys)
    secret = KEY_A.split(":")[1]
    assert secret not in repr(keys) and "\\x01" not in repr(keys)
    assert keys.keys[0].key_id == "a" and len(keys.keys[1].key_id) == 12
    assert keys.signing.key_id == "a"


def test_signing_imports_no_cryptography(tmp_path: Path) -> None:
    """``cryptography`` is imported when a checkpoint is encrypted, not before."""
    code = f"""
import sys
sys.path[:0] = {[str(Path(__file__).parent)]!r}
import plait
from test_trust_boundary import Payload, chain
assert "cryptography" not in sys.modules
wf = chain()
url = "sqlite:///{tmp_path / "runs.db"}"
r = wf.run_sync(Payload(1), checkpoint=url, checkpoint_key={KEY_A!r})
assert r.outputs == [20], r.outputs
assert "cryptography" not in sys.modules, "signing imported cryptography"
wf.run_sync(Payload(1), checkpoint=url, checkpoint_key={KEY_A!r}, checkpoint_encrypt=True)
assert "cryptography" in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
