"""A chain of four agents whose budget asks a person (``on=ask``), for the test that answers
it in another process.

``python budget_asking.py run STORE RUN_ID LOG`` runs it with ``calls=2,on=ask`` and prints
its status and the ids of the requests it waits on, as JSON; ``python budget_asking.py
hold STORE RUN_ID LOG MARKER`` runs it with ``supersteps=2,on=ask`` (it asks at a superstep
boundary), writes that JSON to MARKER and waits there (the test kills it: kill -9 between
the ask and the answer). ``python budget_asking.py cli
ARGS...`` runs the ``plait`` command line with ARGS (``resume budget_asking.py:workflow
RUN_ID --checkpoint STORE --respond ID=JSON``, ``spend``). Either way the test models are
registered and every model call appends ``<model> <prompt>`` to LOG (the ``BUDGET_LOG``
environment variable for ``cli``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import llm
import plait
from budget_crashy import LoggedCalls, LoggedModels, workflow as _chain
from budget_models import ModelPrices
from plait_durable import open_store


def workflow() -> plait.Workflow:
    """The chain of budget_crashy.py, whose agent ``c`` never blocks here."""
    return _chain()


def _register(log: Path) -> None:
    llm.plugins.pm.register(LoggedModels(LoggedCalls(log, block=False)))
    plait.get_plugin_manager().register(ModelPrices(), "budget-test-prices")


async def run(url: str, run_id: str, budget: str = "calls=2,on=ask") -> dict[str, Any]:
    store = open_store(url)
    try:
        result = await workflow().run("go", run_id=run_id, checkpoint=store, budget=budget)
        return {
            "status": result.status.value,
            "requests": [r.request_id for r in result.pending_requests],
        }
    finally:
        await store.aclose()


async def hold(url: str, run_id: str, marker: Path) -> None:
    """Run until the run asks at its superstep boundary, then wait to be killed."""
    from plait_testing.kills import hold as held

    said = await run(url, run_id, "supersteps=2,on=ask")
    marker.with_suffix(".json").write_text(json.dumps(said))
    await held(marker)


if __name__ == "__main__":
    if sys.argv[1] == "run":
        _register(Path(sys.argv[4]))
        print(json.dumps(anyio.run(run, sys.argv[2], sys.argv[3])))
    elif sys.argv[1] == "hold":
        _register(Path(sys.argv[4]))
        anyio.run(hold, sys.argv[2], sys.argv[3], Path(sys.argv[5]))
    else:
        _register(Path(os.environ["BUDGET_LOG"]))
        from plait_cli import main

        sys.argv = ["plait", *sys.argv[2:]]
        main()
