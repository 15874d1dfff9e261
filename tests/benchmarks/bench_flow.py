"""Parsing and building a flow of 1,000 agents: prints one JSON line per case.

    python tests/benchmarks/bench_flow.py [--agents 1000] [--repeat 15] [--quick]

The flow mixes chains and parallel blocks (``a0 -> [a1, a2 -> a3] -> a4 -> ...``) over 1,000
agent uses of ten distinct ``async def`` agents; blocks merge by ``first`` (so the one run
that checks the workflow does not grow its text threefold per block). Cases (the issue's
budget: 50 ms for parse + build):

``spec``     ``plait.load.load_spec``: lark parse and the transformer's WorkflowSpec
``workflow`` ``plait.load``: the same, then ``Workflow.from_spec`` (executors bound, routers
             created) — a runnable workflow

The lark parser is built once per process (its first use, measured apart as
``parser_build_ms``); the medians are over later loads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

BUDGET_MS = 50.0


def make_flow(agents: int) -> str:
    """A flow with ``agents`` agent uses: a repeating chain-and-block pattern."""
    parts: list[str] = []
    used = 0
    i = 0
    while used < agents:
        left = agents - used
        if left >= 4 and i % 2 == 0:
            parts.append(f"[a{i % 10}, a{(i + 1) % 10} -> a{(i + 2) % 10}, a{(i + 3) % 10}]")
            used += 4
        else:
            parts.append(f"a{i % 10}")
            used += 1
        i += 1
    return " -> ".join(parts)


def make_agents() -> dict[str, Any]:
    def agent(n: int) -> Any:
        async def run(text: str) -> str:
            return text

        run.__name__ = run.__qualname__ = f"a{n}"
        return run

    return {f"a{n}": agent(n) for n in range(10)}


def timed(fn: Any, repeat: int) -> dict[str, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return {"median_ms": round(statistics.median(samples), 2), "best_ms": round(min(samples), 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="10 agents, 2 repeats")
    args = parser.parse_args(argv)
    if args.quick:
        args.agents, args.repeat = 10, 2

    import plait
    from plait_documents import load_spec

    text, agents = make_flow(args.agents), make_agents()
    start = time.perf_counter()
    first = load_spec(text, format="flow", executors=agents, merge="first")
    parser_build_ms = (time.perf_counter() - start) * 1e3
    nodes = sum(1 for n in first.nodes if n.kind == "python")
    assert nodes == args.agents, (nodes, args.agents)
    workflow = plait.load(text, format="flow", executors=agents, merge="first")
    assert workflow.run_sync("x", max_supersteps=4 * args.agents).outputs, "an output"
    ok = True
    for case, fn in (
        ("spec", lambda: load_spec(text, format="flow", executors=agents, merge="first")),
        ("workflow", lambda: plait.load(text, format="flow", executors=agents, merge="first")),
    ):
        record = {
            "benchmark": "flow",
            "case": case,
            "agents": args.agents,
            "chars": len(text),
            "nodes": len(first.nodes),
            "edge_groups": len(first.edge_groups),
            **timed(fn, args.repeat),
            "first_load_ms": round(parser_build_ms, 2),
            "budget_ms": BUDGET_MS,
            "python": sys.version.split()[0],
        }
        print(json.dumps(record))
        ok = ok and record["median_ms"] <= BUDGET_MS
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
