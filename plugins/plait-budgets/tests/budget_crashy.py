"""A budgeted chain of four agents on a durable store, for the kill -9 test (a fan-out of
two, ``p`` and ``q``, when RUN_ID starts with ``fan``).

``python budget_crashy.py run STORE RUN_ID LOG`` runs it with a budget; agent ``c``'s
(``q``'s) model blocks (the test kills the process while that call is in flight).
``python budget_crashy.py resume STORE RUN_ID LOG`` resumes it with a raised budget and
prints the run's usage as JSON. Every model call appends ``<model> <prompt>`` to LOG as
it starts.
"""

from __future__ import annotations

import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import llm
import plait
from budget_models import Calls, FakeModels, MeteredModel, ModelPrices
from plait import Never, WorkflowContext, executor
from plait.spi import BuildContext
from plait_budgets import Budget
from plait_builders import WorkflowBuilder
from plait_durable import open_store
from plait_llm import AgentKind


class LoggedCalls(Calls):
    def __init__(self, log: Path, block: bool) -> None:
        super().__init__()
        self.log = log
        self.block = block


class Logged(MeteredModel):
    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
        calls: Any = self.calls
        with calls.log.open("a") as out:
            out.write(f"{self.model_id} {prompt.prompt}\n")
        if calls.block and prompt.prompt.startswith(("c ", "q ")):
            time.sleep(120)  # in flight until the test kills the process
        yield from super().execute(prompt, stream, response, conversation)


class LoggedModels(FakeModels):
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(Logged("budget-test", self.calls))


def fan() -> plait.Workflow:
    """``start`` fans out to agents ``p`` and ``q`` (one superstep), then a collector."""
    kind = AgentKind()
    p, q = (
        kind.create(
            {
                "model": "budget-test",
                "instruction": f"{i} {{{{ input }}}}",
                "options": {"max_tokens": 10},
            },
            BuildContext(node_id=i),
        )
        for i in "pq"
    )

    @executor(id="start")
    async def start(value: str, ctx: WorkflowContext[str, Never]) -> None:
        await ctx.send_message(value)

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    return (
        WorkflowBuilder("budgeted-fan")
        .set_start(start)
        .add_fan_out(start, [p, q])
        .add_edge(p, collect)
        .add_edge(q, collect)
        .build()
    )


def workflow() -> plait.Workflow:
    kind = AgentKind()
    nodes = [
        kind.create(
            {
                "model": "budget-test",
                "instruction": f"{i} {{{{ input }}}}",
                "options": {"max_tokens": 10},
            },
            BuildContext(node_id=i),
        )
        for i in "abcd"
    ]

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    builder = WorkflowBuilder("budgeted").set_start(nodes[0])
    for a, b in zip(nodes, [*nodes[1:], collect]):
        builder.add_edge(a, b)
    return builder.build()


async def main(mode: str, url: str, run_id: str, log: Path) -> None:
    import json

    llm.plugins.pm.register(LoggedModels(LoggedCalls(log, block=mode == "run")))
    plait.get_plugin_manager().register(ModelPrices(), "budget-test-prices")
    store = open_store(url)
    made = fan if run_id.startswith("fan") else workflow
    try:
        if mode == "run":
            await made().run(
                "go", run_id=run_id, checkpoint=store, budget=Budget(usd=Decimal("0.2"))
            )
        else:
            result = await made().resume(run_id, store, budget=Budget(usd=Decimal("1")))
            print(json.dumps({"outputs": result.outputs, "usage": result.usage}))
    finally:
        await store.aclose()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
