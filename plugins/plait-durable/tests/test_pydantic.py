"""Pydantic (v2) models in checkpoints: declared models encode and decode through their
own ``model_dump``/``model_validate`` (plait-durable registers the hooks when pydantic is
installed), and a checkpoint naming a model the workflow does not declare is refused."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import plait
import pytest
from plait import Never, Workflow, WorkflowContext, executor
from plait.spi import CompiledGraph, compiled_graph
from plait_builders import WorkflowBuilder
from plait_durable import (
    CheckpointDecodeError,
    DecodeError,
    declared_types,
    decode_value,
    encode_value,
)
from pydantic import BaseModel, Field

pytestmark = pytest.mark.anyio


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    lines: list[Line]


class Receipt(BaseModel):
    customer: str
    items: int


class Secret(BaseModel):
    """A model of this module that no workflow here declares."""

    customer: str
    items: int


def orders() -> Workflow:
    """take (Order) -> count (Receipt) -> finish: outputs the receipt's text."""

    @executor(id="take")
    async def take(order: Order, ctx: WorkflowContext[Receipt]) -> None:
        items = sum(line.qty for line in order.lines)
        await ctx.send_message(Receipt(customer=order.customer, items=items))

    @executor(id="count")
    async def count(receipt: Receipt, ctx: WorkflowContext[Receipt]) -> None:
        await ctx.send_message(Receipt(customer=receipt.customer, items=receipt.items * 10))

    @executor(id="finish")
    async def finish(receipt: Receipt, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{receipt.customer}: {receipt.items}")

    builder = WorkflowBuilder("orders").add_edge(take, count).add_edge(count, finish)
    return builder.set_start(take).build()


def graph_of(workflow: Workflow) -> CompiledGraph:
    """The compiled graph ``workflow`` runs (what its checkpoints decode against)."""
    graph: CompiledGraph = compiled_graph(workflow)
    return graph


ORDER = Order(customer="ada", lines=[Line(sku="a", qty=2), Line(sku="b", qty=1)])


def test_a_declared_model_round_trips_through_its_own_dump_and_validate() -> None:
    types = declared_types(graph_of(orders()))
    encoded = encode_value(ORDER)
    assert encoded == {
        "__plait__": f"{__name__}:Order",
        "v": {"customer": "ada", "lines": [{"sku": "a", "qty": 2}, {"sku": "b", "qty": 1}]},
    }
    assert json.loads(json.dumps(encoded)) == encoded
    decoded = decode_value(encoded, types)
    assert type(decoded) is Order and decoded == ORDER
    assert type(decoded.lines[0]) is Line  # nested models come back through model_validate


def test_model_validate_checks_the_stored_fields() -> None:
    types = declared_types(graph_of(orders()))
    forged = {"__plait__": f"{__name__}:Order", "v": {"customer": "x", "lines": [{"sku": "a"}]}}
    with pytest.raises(DecodeError, match="lines.0.qty"):
        decode_value(forged, types)


def test_an_undeclared_model_named_in_a_value_is_refused() -> None:
    types = declared_types(graph_of(orders()))
    assert f"{__name__}:Receipt" in types and f"{__name__}:Secret" not in types
    tag = f"{__name__}:Secret"
    with pytest.raises(DecodeError) as caught:
        decode_value({"__plait__": tag, "v": {"customer": "x", "items": 1}}, types)
    assert caught.value.tag == tag


def seal(body: dict[str, Any]) -> bytes:
    """What a forger writes: any body, with its checksum recomputed."""
    raw = json.dumps(body, separators=(",", ":")).encode()
    return b"PLAITCP1\n" + hashlib.sha256(raw).hexdigest().encode() + b"\n" + raw


async def paused(tmp_path: Path) -> tuple[str, Path, str, dict[str, Any]]:
    """A run of :func:`orders` stopped after superstep 1: its latest checkpoint holds a
    Receipt for 'count'."""
    db = tmp_path / "runs.db"
    url = f"sqlite:///{db}"
    result = await orders().run(ORDER, checkpoint=url, max_supersteps=1, raise_on_failure=False)
    with sqlite3.connect(db) as conn:
        checkpoint_id, data = conn.execute(
            "SELECT checkpoint_id, data FROM plait_checkpoints WHERE run_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (result.run_id,),
        ).fetchone()
    body = json.loads(bytes(data).split(b"\n", 2)[2])
    return url, db, checkpoint_id, body


async def test_a_run_with_models_in_flight_checkpoints_and_resumes(tmp_path: Path) -> None:
    url, _, _, body = await paused(tmp_path)
    assert body["state"]["pending"] == {
        "count": [{"__plait__": f"{__name__}:Receipt", "v": {"customer": "ada", "items": 3}}]
    }
    # a workflow built again (as another process would) resumes the stored Receipt
    result = await orders().resume(body["run_id"], url, max_supersteps=10)
    assert result.outputs == ["ada: 30"]


async def test_a_checkpoint_naming_an_undeclared_model_is_refused(tmp_path: Path) -> None:
    url, db, checkpoint_id, body = await paused(tmp_path)
    tag = f"{__name__}:Secret"
    body["state"]["pending"] = {"count": [{"__plait__": tag, "v": {"customer": "x", "items": 1}}]}
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE plait_checkpoints SET data = ? WHERE checkpoint_id = ?",
            (seal(body), checkpoint_id),
        )
    with pytest.raises(CheckpointDecodeError, match=tag):
        await orders().resume(body["run_id"], url)


def test_the_hooks_are_registered_through_the_type_hooks_hook() -> None:
    registry = plait.get_plugin_manager().registry("type_hooks")
    hooks = registry.get("durable.pydantic")
    assert hooks is not None and hooks.type is BaseModel


_LATE_IMPORT = """
import sys
from typing import Never

import attrs
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder


@attrs.frozen
class Count:
    n: int


@executor(id="up")
async def up(x: Count, ctx: WorkflowContext[Count]) -> None:
    await ctx.send_message(Count(x.n + 1))


@executor(id="out")
async def out(x: Count, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(x.n)


plain = WorkflowBuilder("plain").add_edge(up, out).set_start(up).build()
assert plain.run_sync(Count(1), checkpoint="memory://").outputs == [2]
print("after an attrs run:", "pydantic" in sys.modules)

from pydantic import BaseModel  # imported late: the hooks apply from now on


class Note(BaseModel):
    text: str


@executor(id="shout")
async def shout(x: Note, ctx: WorkflowContext[Note]) -> None:
    await ctx.send_message(Note(text=x.text.upper()))


@executor(id="say")
async def say(x: Note, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(x.text)


models = WorkflowBuilder("models").add_edge(shout, say).set_start(shout).build()
assert models.run_sync(Note(text="hi"), checkpoint="memory://").outputs == ["HI"]
print("a model after a late import: ok")
"""


def test_a_run_without_models_never_imports_pydantic_and_a_late_import_still_works(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    script = tmp_path / "late.py"
    script.write_text(_LATE_IMPORT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "after an attrs run: False",
        "a model after a late import: ok",
    ]
