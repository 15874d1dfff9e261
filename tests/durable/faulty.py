"""A 30-superstep durable run for the disk-fault tests, run in a subprocess.

    python faulty.py STORE_URL RUN_ID run|resume [FULL_AT]

Each executor keeps ~1.5 KB in its state, so every checkpoint is bigger than 1 KB. With
``FULL_AT``, the executor of that superstep makes the disk "full": it caps the size any
file of this process may reach (``RLIMIT_FSIZE``) at what the store's files hold now
(at 1 KB for a file store, whose checkpoints are files of their own), with ``SIGXFSZ``
ignored so a write past it fails with ``EFBIG`` instead of killing the process.

Prints one JSON line: the outputs, or the error's type, message and whether it is a
``PlaitError``.
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from plait import PlaitError, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder

STEPS = 30
PAD = "x" * 1500


def fill_disk(url: str) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if url.startswith("file://"):
        limit = 1024
    else:
        db = Path(url.removeprefix("sqlite:///"))
        files = [p for p in (db, Path(f"{db}-wal")) if p.exists()]
        limit = max(p.stat().st_size for p in files)
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))


def build(url: str, full_at: int | None) -> Workflow:
    def step(i: int) -> Any:
        @executor(id=f"s{i}")
        async def add(n: int, ctx: WorkflowContext[int, int]) -> None:
            if ctx.superstep == full_at:
                fill_disk(url)
            ctx.state["pad"] = f"{PAD}{n}"
            if i == STEPS - 1:
                await ctx.yield_output(n + 1)
            else:
                await ctx.send_message(n + 1)

        return add

    nodes = [step(i) for i in range(STEPS)]
    builder = WorkflowBuilder("faulty", max_supersteps=STEPS + 5).add_executor(nodes[0])
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0]).build()


async def main() -> None:
    url, run_id, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    full_at = int(sys.argv[4]) if len(sys.argv) > 4 else None
    wf = build(url, full_at)
    try:
        if mode == "run":
            result = await wf.run(0, checkpoint=url, run_id=run_id)
        else:
            result = await wf.resume(run_id, url)
    except Exception as exc:
        record = {"error": type(exc).__name__, "message": str(exc)}
        record["plait"] = "yes" if isinstance(exc, PlaitError) else "no"
        print(json.dumps(record))
        return
    print(json.dumps({"outputs": result.outputs, "supersteps": result.supersteps}))


if __name__ == "__main__":
    anyio.run(main)
