"""Workflows and raw-store helpers the sealing tests share (a plain module beside them)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import attrs
from plait import Never, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@attrs.define
class Payload:
    n: int


def chain() -> Workflow:
    """start (Payload) -> middle (int) -> finish: outputs ``(n + 1) * 10``."""

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


def secret_keeper() -> Workflow:
    """keep (str: holds it in its state, sends it on) -> tell (yields it upper-cased)."""

    @executor(id="keep")
    async def keep(text: str, ctx: WorkflowContext[str]) -> None:
        ctx.state["kept"] = text
        await ctx.send_message(text)

    @executor(id="tell")
    async def tell(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text.upper())

    return WorkflowBuilder("secrets").add_edge(keep, tell).set_start(keep).build()


def with_checksum(body: dict[str, Any]) -> bytes:
    """What a forger writes: any body, with its checksum recomputed."""
    raw = json.dumps(body, separators=(",", ":")).encode()
    return b"PLAITCP1\n" + hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw


def body_of(data: bytes) -> dict[str, Any]:
    """The JSON body of a checkpoint's bytes."""
    body: dict[str, Any] = json.loads(data.split(b"\n", 2)[2])
    return body


def checkpoint_rows(db: Path, run_id: str) -> list[tuple[str, bytes]]:
    """``(checkpoint id, bytes)`` of every row of ``run_id`` in SQLite file ``db``."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT checkpoint_id, data FROM plait_checkpoints WHERE run_id = ? ORDER BY seq",
            (run_id,),
        ).fetchall()
    conn.close()
    return [(r[0], bytes(r[1])) for r in rows]


def write_row(db: Path, checkpoint_id: str, data: bytes) -> None:
    """Overwrite the bytes of one row of SQLite file ``db``."""
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE plait_checkpoints SET data = ? WHERE checkpoint_id = ?", (data, checkpoint_id)
        )
    conn.close()
