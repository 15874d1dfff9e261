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
from plait import CheckpointError, Executor, WorkflowContext, executor, handler
from plait.spi import compiled_graph
from plait_durable import (
    Checkpoint,
    CorruptCheckpointError,
    decode_checkpoint,
    encode_checkpoint,
    open_store,
)

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
    with pytest.raises(
        CorruptCheckpointError, match="checkpoint 'c2' is corrupt: body.base_id is missing"
    ):
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
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    with pytest.raises(CorruptCheckpointError, match="its body has unknown fields bogus$"):
        decode_checkpoint(_encoded({**fields, "bogus": 1}))


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"superstep": "2"}, "body.superstep holds str '2', expected int"),
        ({"superstep": True}, "body.superstep holds bool True, expected int"),
        ({"run_id": None}, "body.run_id holds NoneType None, expected str"),
        ({"parent_id": 7}, "body.parent_id .*expected str"),
        ({"created_at": "now"}, "body.created_at holds str 'now', expected float or int"),
        ({"state": []}, r"body.state holds list \[\], expected a JSON object"),
        ({"metadata": "m"}, "body.metadata holds str 'm', expected a JSON object"),
    ],
)
def test_a_field_of_the_wrong_type_is_named_by_its_path(change: dict[str, Any], error: str) -> None:
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    with pytest.raises(CorruptCheckpointError, match=f"^run r, checkpoint c is corrupt: {error}"):
        decode_checkpoint(_encoded({**fields, **change}), where="run r, checkpoint c")


def test_every_wrong_field_is_named_up_to_five() -> None:
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    wrong = {name: [] for name in ("run_id", "superstep", "signature", "status", "created_at")}
    with pytest.raises(CorruptCheckpointError) as caught:
        decode_checkpoint(_encoded({**fields, **wrong, "parent_id": 1, "base_id": 2}))
    message = str(caught.value)
    assert message.startswith("checkpoint 'c2' is corrupt: body.run_id holds list [], ")
    assert message.count("expected") == 5 and message.endswith("; and 2 more")


def test_the_body_class_is_the_records_fields_in_order() -> None:
    """The stored body lists the record's fields, in the record's order: the key order of
    every checkpoint ever written."""
    import attrs
    from plait_durable._typed import CheckpointBody

    body = [field.name for field in attrs.fields(CheckpointBody)]
    assert body == [field.name for field in attrs.fields(Checkpoint)]


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


# -- the state's typed layout ----------------------------------------------------------


@pytest.mark.parametrize("path", FORMAT1, ids=[p.stem for p in FORMAT1])
def test_format1_states_structure_and_unstructure_to_what_was_stored(path: Path) -> None:
    from plait_durable._format import dump_json
    from plait_durable._layout import read_state, state_json
    from plait_durable._legacy import read_delta

    _, stored, _ = _format1(path)
    kinds = set()
    for data in stored:
        state = decode_checkpoint(data).state
        kinds.add(state["kind"])
        if state["kind"] == "delta":  # written by an earlier Plait: read, never written
            assert read_delta(state, "c").base == decode_checkpoint(data).base_id
            continue
        typed = read_state(state, "c")
        assert state_json(typed) == state
        if not ("attempts" in state and "pipeline" in state):
            # (a retry's copy of a pipelined cut adds its attempts after the cut: the one
            # key order the classes' field order does not give, kept by the writer)
            assert dump_json(state_json(typed)) == dump_json(state)
    assert "full" in kinds
    assert "delta" in kinds or path.stem == "pipelined"


async def _forged(change: Any) -> tuple[Any, str, str, str]:
    """The format1 run in a fresh store, its latest checkpoint's state changed by
    ``change``: (workflow, url, run id, checkpoint id)."""
    run_id, stored, blobs = _format1(FORMAT1[-1])
    url = f"memory://{uuid.uuid4().hex}"
    store = open_store(url)
    *earlier, last = [decode_checkpoint(data) for data in stored]
    for item in earlier:
        await store.save(item, blobs=blobs)
    state = json.loads(json.dumps(last.state))
    change(state)
    forged = Checkpoint(**{**_fields(last), "state": state})
    await store.save(forged)
    return format_workflows.looping(), url, run_id, last.checkpoint_id


def _fields(checkpoint: Checkpoint) -> dict[str, Any]:
    import attrs

    return attrs.asdict(checkpoint, recurse=False)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            lambda s: s["requests"][0].update(superstep="3"),
            r"state.requests\[0\].superstep holds str '3', expected int",
        ),
        (
            lambda s: s["requests"][0].update(executor_id=None),
            r"state.requests\[0\].executor_id holds NoneType None, expected str",
        ),
        (
            lambda s: s["requests"][0].pop("request_id"),
            r"state.requests\[0\].request_id is missing",
        ),
        (lambda s: s.update(visits={"count": 1.5}), r"state.visits\['count'\] holds float 1.5"),
        (lambda s: s.update(pending={"count": "go"}), r"state.pending\['count'\] holds str 'go'"),
        (lambda s: s.update(kind="delta"), r"state.base is missing"),
        (lambda s: s.update(extra=1), r"its state has unknown fields extra"),
        (lambda s: s.update(attempts={"k": True}), r"state.attempts\['k'\] holds bool True"),
    ],
)
async def test_a_malformed_state_is_corrupt_naming_the_field_and_the_checkpoint(
    change: Any, error: str
) -> None:
    workflow, url, run_id, checkpoint_id = await _forged(change)
    with pytest.raises(
        CorruptCheckpointError, match=f"checkpoint '{checkpoint_id}' is corrupt: .*{error}"
    ):
        await workflow.resume(run_id, url, responses={})


# -- the one pass that writes a state --------------------------------------------------


def test_the_writers_keep_the_classes_field_order() -> None:
    """The checkpointer writes the layout's JSON directly: every key in the order of the
    class that reads it back (the key order of every checkpoint ever written)."""
    import attrs
    from plait_durable._format import checkpoint_fields
    from plait_durable._layout import request_fields, state_fields
    from plait_durable._typed import FullState, StoredRequest

    every = state_fields(
        pending={},
        router_state={},
        requests=[],
        ids={},
        executor_state={},
        shared={},
        outputs=[],
        visits={},
        attempts={},
        pipeline={},
        observed={},
    )
    assert list(every) == [field.name for field in attrs.fields(FullState)]
    request = request_fields(
        request_id="q",
        executor_id="e",
        request=1,
        response_type=None,
        response_type_name="int",
        superstep=1,
    )
    assert list(request) == [field.name for field in attrs.fields(StoredRequest)]
    assert list(checkpoint_fields(checkpoint())) == [f.name for f in attrs.fields(Checkpoint)]


@executor(id="a")
async def _a(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


@executor(id="b")
async def _b(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


def test_one_pass_writes_what_encoding_then_externalizing_writes() -> None:
    """In a store that keeps blobs the checkpointer encodes and externalizes each value in
    one pass: the state is the one :func:`~plait_durable.externalize_state` makes of the
    plain state, with the same blobs."""
    from plait.spi import PendingRequest, RunState
    from plait_builders import WorkflowBuilder
    from plait_durable import externalize_state
    from plait_durable._blobs import BlobWriter
    from plait_durable._checkpointer import Checkpointer
    from plait_stores import MemoryCheckpointStore

    graph = compiled_graph(WorkflowBuilder("w").add_edge(_a, _b).set_start(_a).build())
    state = RunState("r1", None)
    big = "long text " * 100
    state.executor_state.update({"a": {"notes": [big, 1]}, "b": {}})
    state.visits.update({"a": 2, "b": 1})
    state.shared.update({f"k{i}": f"{big}{i}" for i in range(6)})
    state.outputs.extend([big, {"n": 1}, [big, big]])
    state.pending_requests["q1"] = PendingRequest("q1", "b", {"ask": big}, str, 1)
    state.superstep = 1
    inbox = {"b": [big, "short"]}

    one = Checkpointer(MemoryCheckpointStore(), graph, mode="sync")
    checkpoint = one.take(state, inbox, (), "running")
    plain = Checkpointer(None, graph, mode="sync").take(state, inbox, (), "running")
    writer = BlobWriter()
    assert checkpoint.state == externalize_state(plain.state, writer)
    assert one._new_blobs[checkpoint.checkpoint_id] == writer.take_new()
    assert len(one._new_blobs[checkpoint.checkpoint_id]) >= 5


class _Versioned(Executor):
    """Snapshots even an empty state as something (its own ``snapshot_state``)."""

    @handler
    async def take(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text)

    def snapshot_state(self, state: dict[str, Any]) -> Any:
        return {"version": 2, **state}


def test_an_empty_state_is_encoded_unless_it_snapshots_as_it_is() -> None:
    """The checkpointer skips encoding an empty state only for an executor that
    snapshots its state as it is (``Executor``'s own ``snapshot_state``): one that
    overrides it is asked at every checkpoint after it ran, even with an empty state."""
    from plait.spi import RunState
    from plait_builders import WorkflowBuilder
    from plait_durable._checkpointer import Checkpointer

    versioned = _Versioned("v")
    graph = compiled_graph(WorkflowBuilder("w").add_edge(_a, versioned).set_start(_a).build())
    state = RunState("r1", None)
    state.executor_state.update({"a": {}, "v": {}})
    checkpointer = Checkpointer(None, graph, mode="sync")
    assert checkpointer.kept_as_is == {"a"}
    first = checkpointer.take(state, {}, (), "running")
    assert first.state["executor_state"] == {"v": {"version": 2}}
    state.superstep = 1
    again = checkpointer.take(state, {}, {"a": [], "v": []}, "running")
    assert again.state["executor_state"] == {"v": {"version": 2}}
