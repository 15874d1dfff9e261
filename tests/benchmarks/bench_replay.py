"""Replaying a recorded run (issue 38): a 1,000-superstep run, recorded once, replayed
offline with the network shut.

    python tests/benchmarks/bench_replay.py [--steps 1000] [--repeat 5] [--store memory]
        [--quick]

The run is one executor in a loop: each superstep makes one outside call (through
``plait.spi.outside_call``, as an ``http`` step or a model call does) and draws
``ctx.random()``, so the record holds two answers per superstep. One JSON line per
measure:

- ``record``: the recorded run (``record=True``), median seconds;
- ``plain``: the same run without recording, median seconds (what recording costs);
- ``replay``: ``plait_replay.replay`` of the recorded run, median seconds: reading the
  record, the run with every call answered from it, the comparison superstep by
  superstep; ``calls_made`` counts the outside calls that went out (0: every one was
  answered) and ``network`` the network attempts (0: the guard turns one into a
  divergence, which stops the benchmark). Target: under 1 s for 1,000 supersteps, with
  zero network calls.

``--quick`` runs each once at 10 supersteps, as a smoke test. Targets are reported
(``met``), never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import uuid
from typing import Any

import anyio
from plait import WorkflowContext, executor
from plait.spi import outside_call
from plait_builders import WorkflowBuilder
from plait_replay import replay

#: the outside calls that went out for real
MADE = [0]


def looping(steps: int) -> Any:
    @executor(id="step")
    async def step(n: int, ctx: WorkflowContext[int, int]) -> None:
        async def really(request: Any) -> dict[str, Any]:
            MADE[0] += 1
            return {"status": 200, "body": n * 2}

        answer = await outside_call("http", {"url": "https://example.org/n", "n": n}, really)
        if ctx.random() < 0:  # never: the draw is what is recorded
            return
        if n + 1 >= steps:
            await ctx.yield_output(answer["body"])
        else:
            await ctx.send_message(n + 1)

    return WorkflowBuilder(name="loop").set_start(step).add_edge(step, step).build()


def _url(kind: str, tmp: str) -> str:
    if kind == "memory":
        return f"memory://bench-replay-{uuid.uuid4().hex}"
    return f"sqlite:///{tmp}/replay-{uuid.uuid4().hex}.db"


async def measure(steps: int, repeat: int, store: str, tmp: str) -> list[dict[str, Any]]:
    workflow = looping(steps)
    limit = steps + 10
    plain, recorded, replayed = [], [], []
    last: Any = None
    for _ in range(repeat):
        url = _url(store, tmp)
        start = time.perf_counter()
        await workflow.run(0, checkpoint=url, max_supersteps=limit)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = await workflow.run(0, checkpoint=url, record=True, max_supersteps=limit)
        recorded.append(time.perf_counter() - start)
        MADE[0] = 0
        start = time.perf_counter()
        last = await replay(workflow, result.run_id, url)
        replayed.append(time.perf_counter() - start)
        if not last.equal:
            raise SystemExit(f"the replay diverged: {last.text()}")
    median = statistics.median(replayed)
    base = {"steps": steps, "store": store, "repeat": repeat}
    return [
        {**base, "measure": "plain", "median_s": round(statistics.median(plain), 4)},
        {**base, "measure": "record", "median_s": round(statistics.median(recorded), 4)},
        {
            **base,
            "measure": "replay",
            "median_s": round(median, 4),
            "calls_answered": last.calls,
            "calls_made": MADE[0],
            "network": 0,
            "target_s": 1.0,
            "met": median < 1.0 and MADE[0] == 0,
        },
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--store", choices=["memory", "sqlite"], default="memory")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat = 10, 1
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        records = anyio.run(measure, args.steps, args.repeat, args.store, tmp)
    for record in records:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
