"""A recorded chain of four agents on a durable store, for the kill -9 test.

``python replay_crashy.py run STORE RUN_ID LOG`` runs it with ``record=True``; agent
``c``'s model blocks (the test kills the process while that call is in flight).
``python replay_crashy.py resume STORE RUN_ID LOG`` resumes it with ``record=True`` in a new
process. ``python replay_crashy.py replay STORE RUN_ID LOG`` replays the run and prints the
report as JSON. Every model call appends ``<prompt>`` to LOG as it starts.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import llm
import plait
from plait import Never, WorkflowContext, executor
from plait.spi import BuildContext
from plait_builders import WorkflowBuilder
from plait_llm import AgentKind
from plait_replay import replay


class Logged(llm.Model):
    """Answers ``"ok <prompt>"``; logs each prompt as its call starts; in ``run`` mode the
    call of agent ``c`` blocks until the process is killed."""

    model_id = "replay-crashy"

    def __init__(self, log: Path, block: bool) -> None:
        self.log = log
        self.block = block

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        with self.log.open("a") as out:
            out.write(f"{prompt.prompt}\n")
        if self.block and prompt.prompt.startswith("c "):
            time.sleep(300)  # in flight until the test kills the process
        yield f"ok {prompt.prompt}"


class Models:
    def __init__(self, model: Logged) -> None:
        self.model = model

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(self.model)


def workflow() -> plait.Workflow:
    """``a -> b -> c -> d -> collect``: each agent prompts with ``"<id> <input>"``; ``b``
    also draws ``ctx.random()`` (recorded) into what ``collect`` yields."""
    kind = AgentKind()
    nodes = [
        kind.create(
            {"model": "replay-crashy", "instruction": f"{i} {{{{ input }}}}"},
            BuildContext(node_id=i),
        )
        for i in "abcd"
    ]

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(f"{value} {ctx.random():.6f}")

    builder = WorkflowBuilder("crashy").set_start(nodes[0])
    for a, b in zip(nodes, [*nodes[1:], collect]):
        builder.add_edge(a, b)
    return builder.build()


async def main(mode: str, url: str, run_id: str, log: Path) -> None:
    llm.plugins.pm.register(Models(Logged(log, block=mode == "run")))
    if mode == "run":
        await workflow().run("go", run_id=run_id, checkpoint=url, record=True)
    elif mode == "resume":
        result = await workflow().resume(run_id, url, record=True)
        print(json.dumps({"outputs": result.outputs, "status": result.status.value}))
    else:
        report = await replay(workflow(), run_id, url)
        print(json.dumps({"equal": report.equal, "text": report.text(), "calls": report.calls}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
