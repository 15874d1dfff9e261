"""Rebuilding a workflow from data: ``Workflow.from_spec`` of a 1,000-node spec.

    python tests/benchmarks/bench_from_spec.py [--nodes 1000] [--repeat 15] [--quick]

The spec is what a builder records for a 1,000-executor chain: ``python``-kind nodes
naming module-level ``@executor`` functions by import path, and ``direct`` edges; one JSON
line per case, medians over ``--repeat`` after a warm-up (the issue's budget: 50 ms).

``json``        ``WorkflowSpec.from_json`` of the spec's JSON text
``from_spec``   ``Workflow.from_spec``: every node's config checked and its executor made,
                the graph validated and compiled
``run``         one run of the rebuilt chain (a check that it works)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from plait import Never, Workflow, WorkflowContext, WorkflowSpec, executor

BUDGET_MS = 50.0


@executor(id="step")
async def step(x: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(x + 1)


@executor(id="last")
async def last(x: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(x + 1)


def make_spec(n: int) -> str:
    nodes = [
        {
            "id": f"n{i}",
            "kind": "python",
            "config": {"ref": f"bench_from_spec:{'last' if i == n - 1 else 'step'}"},
        }
        for i in range(n)
    ]
    groups = [
        {
            "id": f"direct:n{i}->n{i + 1}",
            "router": "direct",
            "sources": [f"n{i}"],
            "targets": [f"n{i + 1}"],
        }
        for i in range(n - 1)
    ]
    spec = {
        "name": "chain",
        "start": "n0",
        "nodes": nodes,
        "edge_groups": groups,
        "options": {"max_supersteps": n + 1},
    }
    return json.dumps(spec)


def median_ms(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="10 nodes, once")
    args = parser.parse_args(argv)
    n, repeat = (10, 1) if args.quick else (args.nodes, args.repeat)
    import bench_from_spec  # the refs name this module, as a spec written elsewhere would

    del bench_from_spec
    text = make_spec(n)
    spec = WorkflowSpec.from_json(text)
    workflow = Workflow.from_spec(spec)  # warm-up: imports, the kinds' schemas
    result = workflow.run_sync(0).outputs
    ok = result == [n] and workflow.signature() == spec.signature()
    cases = {
        "json": median_ms(lambda: WorkflowSpec.from_json(text), repeat),
        "from_spec": median_ms(lambda: Workflow.from_spec(spec), repeat),
        "run": median_ms(lambda: workflow.run_sync(0), repeat),
    }
    for case, ms in cases.items():
        record = {"benchmark": "from_spec", "case": case, "nodes": n, "median_ms": ms, "ok": ok}
        if case == "from_spec":
            record["budget_ms"] = BUDGET_MS
        print(json.dumps(record))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
