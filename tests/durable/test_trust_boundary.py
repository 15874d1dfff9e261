"""The checkpoint store is a trust boundary (issue 14, findings 1, 2, 3, 5, 10).

Whoever can write the store can forge a checkpoint and recompute its SHA-256. Resuming
must then fail with a ``PlaitError`` or rebuild only JSON values and the types the
workflow declares: never import a module the data names, never build a class it names.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest
from plait import (
    CheckpointError,
    Executor,
    Never,
    PlaitError,
    Workflow,
    WorkflowContext,
    executor,
    handler,
)
from plait_builders import WorkflowBuilder
from plait_durable import CheckpointDecodeError, CorruptCheckpointError, RunLeaseError, open_store

pytestmark = pytest.mark.anyio

MARKER_MODULE = """
import pathlib, os
pathlib.Path(os.environ["PLAIT_MARKER"]).write_text("imported")

class Gadget:
    def __init__(self, *args, **kwargs):
        pathlib.Path(os.environ["PLAIT_MARKER"]).write_text("built")
"""


@attrs.define
class Payload:
    n: int


def chain() -> Workflow:
    """start (Payload) -> middle (int) -> finish: outputs one int."""

    @executor(id="start")
    async def start(p: Payload, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(p.n + 1)

    @executor(id="middle")
    async def middle(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n * 10)

    @executor(id="finish")
    async def finish(n: int, ctx: WorkflowContext[Never, int]) -> None:
        await ctx.yield_output(n)

    builder = WorkflowBuilder("trust").add_edge(start, middle).add_edge(middle, finish)
    return builder.set_start(start).build()


def seal(body: dict[str, Any]) -> bytes:
    """What a forger writes: any body, with its checksum recomputed."""
    raw = json.dumps(body, separators=(",", ":")).encode()
    return b"PLAITCP1\n" + hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw


def checkpoint_rows(db: Path, run_id: str) -> list[tuple[str, bytes]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT checkpoint_id, data FROM plait_checkpoints WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
    return [(r[0], bytes(r[1])) for r in rows]


def write_row(db: Path, checkpoint_id: str, data: bytes, run_id: str | None = None) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE plait_checkpoints SET data = ? WHERE checkpoint_id = ?", (data, checkpoint_id)
        )
        if run_id is not None:
            conn.execute(
                "UPDATE plait_checkpoints SET run_id = ? WHERE checkpoint_id = ?",
                (run_id, checkpoint_id),
            )


async def paused_run(tmp_path: Path) -> tuple[Workflow, str, Path, str, dict[str, Any]]:
    """A run stopped after superstep 1 (its checkpoint holds a pending int for 'middle'),
    and the body of its latest checkpoint."""
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    wf = chain()
    result = await wf.run(Payload(1), checkpoint=url, max_supersteps=1, raise_on_failure=False)
    run_id = result.run_id
    checkpoint_id, data = checkpoint_rows(db, run_id)[-1]
    body = json.loads(data.split(b"\n", 2)[2])
    assert body["state"]["pending"] == {"middle": [2]}
    return wf, url, db, checkpoint_id, body


async def test_a_forged_tag_never_imports_or_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "marker"
    module = f"plait_marker_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(MARKER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PLAIT_MARKER", str(marker))
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    tag = f"{module}:Gadget"
    body["state"]["pending"] = {"middle": [{"__plait__": tag, "v": {}}]}
    write_row(db, checkpoint_id, seal(body))
    with pytest.raises(CheckpointDecodeError) as caught:
        await wf.resume(body["run_id"], url)
    message = str(caught.value)
    assert body["run_id"] in message and checkpoint_id in message and tag in message
    # a forged response type is refused the same way
    body["state"]["pending"] = {}
    body["state"]["requests"] = [
        {
            "request_id": "r1",
            "executor_id": "middle",
            "request": "ok?",
            "response_type": tag,
            "response_type_name": "Gadget",
            "superstep": 1,
        }
    ]
    write_row(db, checkpoint_id, seal(body))
    with pytest.raises(CheckpointDecodeError, match=tag):
        await wf.resume(body["run_id"], url)
    assert not marker.exists()
    assert module not in sys.modules


async def test_declared_types_still_round_trip(tmp_path: Path) -> None:
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    body["state"]["pending"] = {"start": [{"__plait__": f"{__name__}:Payload", "v": {"n": 4}}]}
    write_row(db, checkpoint_id, seal(body))
    result = await wf.resume(body["run_id"], url, max_supersteps=10)
    assert result.outputs == [50]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = body
        for key in parents:
            target = target[key]
        target[last] = value

    return mutate


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = body
        for key in parents:
            target = target[key]
        del target[last]

    return mutate


def _pending(value: Any) -> Callable[[dict[str, Any]], None]:
    return _set("state.pending", {"middle": [value]})


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


#: Hostile bodies: each mutates a valid checkpoint body; the checksum is recomputed.
BODIES: dict[str, Callable[[dict[str, Any]], None]] = {
    "tag os:system": _pending({"__plait__": "os:system", "v": "echo hi"}),
    "tag builtins:eval": _pending({"__plait__": "builtins:eval", "v": "1"}),
    "tag pathlib:Path": _pending({"__plait__": "pathlib:Path", "v": "/etc"}),
    "tag subprocess:Popen": _pending({"__plait__": "subprocess:Popen", "v": ["true"]}),
    "tag not text": _pending({"__plait__": 123, "v": 1}),
    "tag without value": _pending({"__plait__": "tuple"}),
    "tuple of an int": _pending({"__plait__": "tuple", "v": 5}),
    "set of lists": _pending({"__plait__": "set", "v": [[1], [2]]}),
    "bytes not hex": _pending({"__plait__": "bytes", "v": "zz"}),
    "float not text": _pending({"__plait__": "float", "v": [1]}),
    "dict tag of a list": _pending({"__plait__": "dict", "v": [1, 2]}),
    "declared tag, wrong fields": _pending({"__plait__": f"{__name__}:Payload", "v": {"x": 1}}),
    "wrong message type": _pending("not an int"),
    "nesting 500 deep": _pending(_nested(500)),
    "state is a list": _set("state", []),
    "state without pending": _drop("state.pending"),
    "pending is a list": _set("state.pending", [1, 2]),
    "pending for unknown executor": _set("state.pending", {"ghost": [1]}),
    "pending messages not a list": _set("state.pending", {"middle": 2}),
    "executor_state is text": _set("state.executor_state", "x"),
    "unknown kind": _set("state.kind", "weird"),
    "delta without base": _set("state.kind", "delta"),
    "visits counted in text": _set("state.visits", {"start": "many"}),
    "request of the wrong shape": _set("state.requests", [{"request_id": 1}]),
    "request for unknown executor": _set(
        "state.requests",
        [
            {
                "request_id": "r",
                "executor_id": "ghost",
                "request": 1,
                "response_type": None,
                "superstep": 1,
            }
        ],
    ),
    "outputs not a list": _set("state.outputs", {"a": 1}),
    "shared not a dict": _set("state.shared", [1]),
    "router_state not a dict": _set("state.router_state", 7),
    "newer format": _set("format_version", 99),
    "superstep as text": _set("superstep", "1"),
    "created_at is a bool": _set("created_at", True),
    "metadata not a dict": _set("metadata", "x"),
    "unknown field": _set("surprise", 1),
    "missing signature": _drop("signature"),
    "body names another run": _set("run_id", "someone-else"),
    "body names another checkpoint": _set("checkpoint_id", "c-other"),
}

#: Hostile bytes: whole rows a forger writes.
RAW: dict[str, Callable[[bytes, dict[str, Any]], bytes]] = {
    "truncated": lambda data, body: data[: len(data) // 2],
    "bad magic": lambda data, body: b"NOTPLAIT" + data[8:],
    "checksum mismatch": lambda data, body: data[:-2] + b"}}",
    "empty": lambda data, body: b"",
    "huge number": lambda data, body: seal(body).replace(
        b'"superstep":1', b'"superstep":' + b"9" * 5000
    ),
    "NaN": lambda data, body: _raw(body, b'"created_at":NaN'),
    "Infinity": lambda data, body: _raw(body, b'"created_at":Infinity'),
    "not JSON": lambda data, body: _raw(body, b'"created_at":{{'),
    "nesting 100000 deep": lambda data, body: _deep(body, 100_000),
}


def _deep(body: dict[str, Any], depth: int) -> bytes:
    body["state"]["pending"] = {"middle": ["DEEP"]}
    text = json.dumps(body, separators=(",", ":")).encode()
    raw = text.replace(b'"DEEP"', b"[" * depth + b"1" + b"]" * depth)
    return b"PLAITCP1\n" + hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw


def _raw(body: dict[str, Any], created: bytes) -> bytes:
    text = json.dumps(body, separators=(",", ":")).encode()
    start = text.index(b'"created_at":')
    end = text.index(b",", start)
    raw = text[:start] + created + text[end:]
    return b"PLAITCP1\n" + hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw


def test_the_corpus_has_at_least_30_hostile_checkpoints() -> None:
    assert len(BODIES) + len(RAW) >= 30


async def _resume_hostile(wf: Workflow, url: str, run_id: str) -> None:
    try:
        result = await wf.resume(run_id, url, max_supersteps=10, raise_on_failure=False)
    except PlaitError:
        return
    # decoded: only declared types reached the run, and what came out is declared too
    assert all(type(x) is int for x in result.outputs), result.outputs
    assert result.error is None or isinstance(result.error, PlaitError)


@pytest.mark.parametrize("name", sorted(BODIES))
async def test_hostile_bodies_are_plait_errors_or_declared_types(name: str, tmp_path: Path) -> None:
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    run_id = body["run_id"]
    BODIES[name](body)
    write_row(db, checkpoint_id, seal(body))
    await _resume_hostile(wf, url, run_id)


@pytest.mark.parametrize("name", sorted(RAW))
async def test_hostile_bytes_are_plait_errors(name: str, tmp_path: Path) -> None:
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    data = dict(checkpoint_rows(db, body["run_id"]))[checkpoint_id]
    write_row(db, checkpoint_id, RAW[name](data, body))
    with pytest.raises(PlaitError):
        await wf.resume(body["run_id"], url)


async def test_a_newer_format_is_refused_by_name(tmp_path: Path) -> None:
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    body["format_version"] = 99
    write_row(db, checkpoint_id, seal(body))
    with pytest.raises(CheckpointError, match=r"written by a newer Plait \(format 99\)"):
        await wf.resume(body["run_id"], url)


async def test_an_empty_state_is_corrupt_not_a_key_error(tmp_path: Path) -> None:
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    body["state"] = {}
    write_row(db, checkpoint_id, seal(body))
    with pytest.raises(CorruptCheckpointError, match=checkpoint_id):
        await wf.resume(body["run_id"], url)


async def test_a_row_moved_to_another_run_is_refused(tmp_path: Path) -> None:
    """Finding 3: changing one row's run_id column made resume('A') return run B's result."""
    wf, url, db, checkpoint_id, body = await paused_run(tmp_path)
    write_row(db, checkpoint_id, checkpoint_rows(db, body["run_id"])[-1][1], run_id="A")
    with pytest.raises(CorruptCheckpointError, match="verified body is run"):
        await wf.resume("A", url)


async def test_a_run_named_after_a_checkpoint_id_cannot_take_over_its_resume(
    tmp_path: Path,
) -> None:
    wf, url, _db, checkpoint_id, body = await paused_run(tmp_path)
    await wf.run(
        Payload(5), checkpoint=url, run_id=checkpoint_id, max_supersteps=1, raise_on_failure=False
    )
    with pytest.raises(CheckpointError, match="both a run and a checkpoint"):
        await wf.resume(checkpoint_id, url)
    resumed = await wf.resume(body["run_id"], url, max_supersteps=10)
    assert resumed.outputs == [20]


class Slow(Executor):
    """Waits on an event so a second worker can try the same run meanwhile."""

    gate: anyio.Event

    @handler
    async def run(self, n: int, ctx: WorkflowContext[Never, int]) -> None:
        await self.gate.wait()
        await ctx.yield_output(n)


async def test_a_second_worker_on_a_live_run_fails_at_once_naming_the_holder(
    tmp_path: Path,
) -> None:
    """Finding 5: two workers resumed the same run and both ran to the end."""
    import os

    slow = Slow("slow")
    slow.gate = anyio.Event()
    wf = WorkflowBuilder("one-writer").add_executor(slow).set_start("slow").build()
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = f"live-{uuid.uuid4().hex}"
    results: list[Any] = []

    async def first() -> None:
        results.append(await wf.run(3, checkpoint=url, run_id=run_id))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        store = open_store(url)
        try:
            while await store.latest(run_id) is None:
                await anyio.sleep(0.01)
        finally:
            await store.aclose()
        with pytest.raises(RunLeaseError, match=rf"pid {os.getpid()}, since"):
            await wf.resume(run_id, url)
        with pytest.raises(RunLeaseError):
            await wf.run(3, checkpoint=url, run_id=run_id)
        slow.gate.set()
    assert results[0].outputs == [3]
    # released at the end: the run can be resumed (nothing left to do) by anyone now
    again = await wf.resume(run_id, url)
    assert again.outputs == [3]
