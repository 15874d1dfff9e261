"""The workflows whose checkpoints ``format1/`` holds: bytes written by format 1 before
its body was typed, which every later Plait must read back byte for byte and resume.

    python plugins/plait-durable/tests/format_workflows.py   # writes format1/*.json again

Regenerate only when the format changes (and then bump :data:`plait_durable.FORMAT_VERSION`).
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import attrs
from plait import Executor, Never, RetryPolicy, Workflow, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder
from plait_durable import encode_checkpoint, open_store

HERE = Path(__file__).resolve().parent / "format1"


@attrs.frozen
class Note:
    """A message of a declared class: stored under its type tag."""

    text: str
    n: int


class Ask(Executor):
    """Asks for an approval once ``count`` reaches 3, and yields the answer."""

    @handler
    async def ask(self, note: Note, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["last"] = note.n
        if note.n == 3:
            await ctx.request_info(f"publish {note.text!r}?", bool)

    @handler
    async def answer(self, approved: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("yes" if approved else "no")


def looping() -> Workflow:
    """``count`` loops to 3 (executor state, shared state with a tuple, ``Note`` messages),
    failing once on its second turn (a retry: attempt counts); ``ask`` sees every note and
    requests an approval at the third."""
    left = {"n": 1}

    @executor(id="count")
    async def count(note: Note, ctx: WorkflowContext[Note]) -> None:
        ctx.state["seen"] = ctx.state.get("seen", 0) + 1
        await ctx.set_shared_state(f"k{note.n}", {"at": note.n, "pair": (note.n, "žluť")})
        if note.n == 2 and left["n"] > 0:
            left["n"] -= 1
            raise RuntimeError("transient")
        if note.n < 3:
            await ctx.send_message(Note(note.text + "!", note.n + 1))

    builder = WorkflowBuilder("format1", max_supersteps=20)
    builder.add_executor(count, retry=RetryPolicy(max_attempts=2, delay=0))
    builder.add_edge(count, count).add_edge(count, Ask(id="ask"))
    return builder.set_start(count).build()


async def write(name: str, **options: Any) -> None:
    url = f"memory://{uuid.uuid4().hex}"
    result = await looping().run(Note("go", 0), checkpoint=url, **options)
    store = open_store(url)
    encoded = [
        encode_checkpoint(await store.load(info.checkpoint_id)).decode("utf-8")
        for info in await store.list(result.run_id)
    ]
    blobs = await store.get_blobs(result.run_id, sorted(await store.blob_hashes(result.run_id)))
    written = {
        "run_id": result.run_id,
        "checkpoints": encoded,
        "blobs": {digest: data.hex() for digest, data in sorted(blobs.items())},
    }
    (HERE / f"{name}.json").write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    """Write ``format1/`` again (the tests import this module as ``format_workflows``, so
    the type tags the checkpoints hold name it so)."""
    HERE.mkdir(exist_ok=True)
    asyncio.run(write("superstep"))
    asyncio.run(write("pipelined", schedule="pipelined"))
    asyncio.run(write("async", durability="async"))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import format_workflows

    format_workflows.main()
