"""The workflow whose checkpoints ``legacy/`` holds: checkpoints in the delta layout,
written by Plait before it kept one change-cost mechanism (main at 63c9029, where a run
wrote a full snapshot every 32 checkpoints and deltas between them). Every later Plait
must resume them.

    python plugins/plait-durable/tests/legacy_workflows.py   # on that Plait: legacy/*.json
    python plugins/plait-durable/tests/legacy_workflows.py resume URL ID [ANSWER]

``legacy/blobs.json`` is a run in a store that keeps blobs (its deltas' values are blob
references); ``legacy/inline.json`` one in a store that keeps none (its deltas hold the
shared-state keys that changed, ``shared_changes``). ``resume`` resumes run or
checkpoint ``ID`` in the store at ``URL`` (answering the pending request with
``ANSWER``, ``yes`` or ``no``, if given) and prints what the run holds as JSON: the tests
run it in a process of its own, as an upgraded worker would.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from plait import Executor, Workflow, WorkflowContext, handler
from plait_builders import WorkflowBuilder
from plait_durable import encode_checkpoint, open_store

HERE = Path(__file__).resolve().parent / "legacy"
#: supersteps before the run asks whether to finish: past one full snapshot and its
#: 31 deltas, into the deltas of the next
TURNS = 40


def page(n: int) -> str:
    """Turn ``n``'s shared value: above the blobs' threshold, distinct per turn."""
    return f"page {n}: " + "lorem ipsum dolor sit amet " * 12


class Loop(Executor):
    """Counts turns in its state, writes a shared key per turn, yields every tenth turn,
    and after :data:`TURNS` asks whether to finish."""

    @handler
    async def turn(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        ctx.state["seen"] = ctx.state.get("seen", 0) + 1
        await ctx.set_shared_state(f"k{n}", page(n))
        if n % 10 == 0:
            await ctx.yield_output(n)
        if n < TURNS:
            await ctx.send_message(n + 1)
        else:
            await ctx.request_info(f"finish after {n} turns?", bool)

    @handler
    async def answer(self, finish: bool, ctx: WorkflowContext[int, int]) -> None:
        await ctx.yield_output(ctx.state["seen"] if finish else -1)


def looping() -> Workflow:
    """The one-executor loop of :class:`Loop`."""
    builder = WorkflowBuilder("legacy", max_supersteps=TURNS + 10)
    loop = Loop(id="loop")
    return builder.add_edge(loop, loop).set_start(loop).build()


async def write(name: str) -> None:
    url = f"memory://{uuid.uuid4().hex}"
    result = await looping().run(0, checkpoint=url)
    store = open_store(url)
    infos = sorted(await store.list(result.run_id), key=lambda info: info.superstep)
    encoded = [
        encode_checkpoint(await store.load(info.checkpoint_id)).decode("utf-8") for info in infos
    ]
    if name == "inline":  # as a prune keeping the last ten and their base would (a smaller file)
        encoded = encoded[:3] + encoded[31:]
    blobs = await store.get_blobs(result.run_id, sorted(await store.blob_hashes(result.run_id)))
    written = {
        "run_id": result.run_id,
        "checkpoints": encoded,
        "blobs": {digest: data.hex() for digest, data in sorted(blobs.items())},
    }
    (HERE / f"{name}.json").write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")


async def resume(url: str, id: str, answer: str | None) -> dict[str, Any]:
    """Resume ``id`` and what the run then holds."""
    workflow = looping()
    responses = {}
    if answer is not None:
        (request,) = await workflow.pending_requests(id, url)
        responses[request.request_id] = answer == "yes"
    result = await workflow.resume(id, url, responses=responses)
    return {
        "status": result.status.value,
        "outputs": result.outputs,
        "shared": result.shared,
        "requests": [request.request for request in result.pending_requests],
    }


def main(argv: list[str]) -> None:
    if argv[:1] == ["resume"]:
        answer = argv[3] if len(argv) > 3 else None
        print(json.dumps(asyncio.run(resume(argv[1], argv[2], answer))))
        return
    import plait_durable._checkpointer as checkpointer

    HERE.mkdir(exist_ok=True)
    asyncio.run(write("blobs"))
    checkpointer.has_blobs = lambda store: False  # a store that keeps no blobs
    asyncio.run(write("inline"))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import legacy_workflows

    legacy_workflows.main(sys.argv[1:])
