"""The bytes a checkpoint is stored as (``plait_durable._format``): the record's fields in
a checksummed body, and checkpoints written before this Plait (``format1/``) read back
byte for byte and resumed."""

from __future__ import annotations

import hashlib
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from plait import CheckpointError, CorruptCheckpointError
from plait.spi import Checkpoint, open_store
from plait_durable import decode_checkpoint, encode_checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parent))

import format_workflows


def checkpoint(**changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "checkpoint_id": "c2",
        "run_id": "run",
        "superstep": 2,
        "parent_id": "c1",
        "signature": "sig",
        "status": "running",
        "created_at": 1.5,
        "state": {"kind": "delta", "base": "c1", "pending": {}},
        "metadata": {"workflow": "w"},
        "base_id": "c1",
    }
    return Checkpoint(**{**fields, **changes})


def test_base_id_round_trips_through_the_encoding() -> None:
    for value in (checkpoint(), checkpoint(base_id=None, state={"kind": "full"})):
        assert decode_checkpoint(encode_checkpoint(value)) == value


def _encoded(fields: dict[str, Any]) -> bytes:
    body = json.dumps(fields).encode()
    return b"PLAITCP1\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def test_a_body_without_base_id_is_corrupt() -> None:
    """Only the current format is read: no release wrote a body without ``base_id``."""
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    del fields["base_id"]
    with pytest.raises(CorruptCheckpointError, match="its body lacks base_id"):
        decode_checkpoint(_encoded(fields))


@pytest.mark.parametrize("version", [0, -1])
def test_a_format_older_than_the_current_one_is_corrupt(version: int) -> None:
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    fields["format_version"] = version
    with pytest.raises(CorruptCheckpointError, match=f"claims format {version}, which no Plait"):
        decode_checkpoint(_encoded(fields), where="run r, checkpoint c")
    fields["format_version"] = 2
    with pytest.raises(CheckpointError, match=r"newer Plait \(format 2\); this Plait reads"):
        decode_checkpoint(_encoded(fields))


def test_an_explicit_base_id_is_not_overridden_by_the_state() -> None:
    value = checkpoint(base_id=None)  # inconsistent, but the field is what was written
    assert decode_checkpoint(encode_checkpoint(value)).base_id is None


def test_unknown_fields_are_still_corrupt() -> None:
    body = json.dumps({"checkpoint_id": "c", "bogus": 1}).encode()
    data = b"PLAITCP1\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    with pytest.raises(CorruptCheckpointError, match="unknown fields bogus"):
        decode_checkpoint(data)


@pytest.mark.parametrize("fast", [True, False])
def test_encoding_works_with_and_without_orjson(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import plait_durable._format as module

    if not fast:
        monkeypatch.setattr(module, "_orjson", None)
    checkpoint = Checkpoint(
        checkpoint_id="c1",
        run_id="r1",
        superstep=3,
        parent_id=None,
        signature="s",
        status="running",
        created_at=1.5,
        state={"big": 2**80, "text": "žluťoučký", "nested": [1, {"a": None}]},
    )
    data = module.encode_checkpoint(checkpoint)
    assert module.decode_checkpoint(data) == checkpoint


# -- checkpoints an earlier Plait wrote ----------------------------------------------------

FORMAT1 = sorted((Path(__file__).resolve().parent / "format1").glob("*.json"))


def _format1(path: Path) -> tuple[str, list[bytes], dict[str, bytes]]:
    """The run id, the checkpoints' bytes and the run's blobs, as an earlier Plait wrote them."""
    written = json.loads(path.read_text(encoding="utf-8"))
    blobs = {digest: bytes.fromhex(data) for digest, data in written["blobs"].items()}
    return written["run_id"], [text.encode("utf-8") for text in written["checkpoints"]], blobs


@pytest.mark.parametrize("path", FORMAT1, ids=[p.stem for p in FORMAT1])
def test_format1_checkpoints_decode_and_encode_to_the_same_bytes(path: Path) -> None:
    _, stored, _ = _format1(path)
    assert len(stored) >= 6
    for data in stored:
        assert encode_checkpoint(decode_checkpoint(data)) == data


@pytest.mark.anyio
@pytest.mark.parametrize("path", FORMAT1, ids=[p.stem for p in FORMAT1])
async def test_format1_runs_resume(path: Path) -> None:
    run_id, stored, blobs = _format1(path)
    url = f"memory://{uuid.uuid4().hex}"
    store = open_store(url)
    for data in stored:
        await store.save(decode_checkpoint(data), blobs=blobs)
    workflow = format_workflows.looping()
    (request,) = await workflow.pending_requests(run_id, url)
    assert request.request == "publish 'go!!!'?"
    result = await workflow.resume(run_id, url, responses={request.request_id: True})
    assert result.outputs == ["yes"]
    # every checkpoint of the run resumes, the first (a full one) and a delta among them
    for data in stored[:2]:
        again = await workflow.resume(decode_checkpoint(data).checkpoint_id, url)
        assert again.status.value in ("idle", "idle_with_pending_requests")
