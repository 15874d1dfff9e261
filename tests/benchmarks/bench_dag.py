"""The JSON DAG front-end: load, validate and build a large DAG; run a long chain. Prints
one JSON line per case.

    python tests/benchmarks/bench_dag.py [--n 1000] [--repeat 7] [--quick]

Cases (``n`` nodes):

``load_chain``    ``plait.load`` of a chain of ``n`` nodes (JSON parse, the JSON Schema,
                  seed 001's rules, every condition compiled, ``Workflow.from_spec``) — the
                  issue's budget: 100 ms or less for 1,000 nodes
``load_branchy``  the same for ``n`` nodes where every node has a conditional connection
                  to the next and a skip condition, and every tenth node forks into two
                  parallel branches joined again (``keyed``)
``validate_bad``  a chain of ``n`` nodes with an error in every tenth node: all reported
``run_chain``     one run through the chain (each agent returns one update)

The first ``load`` in a process also imports jsonschema and the expression parser's tables:
``first_load_ms`` reports it apart; the other numbers are the median of ``repeat`` loads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio
import plait
from plait import LoadError


async def step(ctx: dict[str, Any]) -> dict[str, Any]:
    return {"hops": ctx.get("hops", 0) + 1}


def chain(n: int) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [{"id": f"n{i}", "agent_name": "step"} for i in range(n)]
    nodes[0]["is_entry"] = True
    nodes[-1]["is_exit"] = True
    connections = [{"source_id": f"n{i}", "target_id": f"n{i + 1}"} for i in range(n - 1)]
    return {"nodes": nodes, "connections": connections}


def branchy(n: int) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    connections: list[dict[str, Any]] = []
    i = 0
    previous: str | None = None
    while len(nodes) < n:
        if i % 10 == 5 and previous is not None:
            a, b, join = f"a{i}", f"b{i}", f"j{i}"
            nodes += [
                {"id": a, "agent_name": "step"},
                {"id": b, "agent_name": "step"},
                {"id": join, "agent_name": "step", "join": "keyed"},
            ]
            connections += [
                {"source_id": previous, "target_id": a, "parallel": True},
                {
                    "source_id": previous,
                    "target_id": b,
                    "parallel": True,
                    "context_passed": ["hops"],
                },
                {"source_id": a, "target_id": join},
                {"source_id": b, "target_id": join},
            ]
            previous = join
        else:
            node = f"n{i}"
            nodes.append({"id": node, "agent_name": "step", "skip_condition": f"skip_{i} == true"})
            if previous is not None:
                connections.append(
                    {"source_id": previous, "target_id": node, "condition": "hops >= 0"}
                )
            previous = node
        i += 1
    nodes[0]["is_entry"] = True
    nodes[0].pop("skip_condition", None)
    nodes[-1]["is_exit"] = True
    return {"nodes": nodes, "connections": connections}


def broken(n: int) -> dict[str, Any]:
    document = chain(n)
    for index in range(5, n, 10):
        document["nodes"][index]["agent_nme"] = "step"
    return document


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="n=20, repeat=1 (a smoke run)")
    args = parser.parse_args()
    n, repeat = (20, 1) if args.quick else (args.n, args.repeat)
    agents = {"step": step}
    chain_text, branchy_text, broken_text = (
        json.dumps(chain(n)),
        json.dumps(branchy(n)),
        json.dumps(broken(n)),
    )

    t0 = time.perf_counter()
    plait.load(chain_text, executors=agents)
    first = (time.perf_counter() - t0) * 1e3

    def bad() -> int:
        try:
            plait.load(broken_text, executors=agents)
        except LoadError as exc:
            return len(exc.problems)
        raise AssertionError("the broken document loaded")

    records = [
        {
            "case": "load_chain",
            "n": n,
            "median_ms": median_ms(lambda: plait.load(chain_text, executors=agents), repeat),
            "first_load_ms": first,
        },
        {
            "case": "load_branchy",
            "n": n,
            "median_ms": median_ms(lambda: plait.load(branchy_text, executors=agents), repeat),
        },
        {"case": "validate_bad", "n": n, "problems": bad(), "median_ms": median_ms(bad, repeat)},
    ]
    workflow = plait.load(chain_text, executors=agents)

    def run() -> Any:
        return anyio.run(workflow.run, {})

    result = run()
    assert result.outputs == [{"hops": n}], result.outputs
    records.append({"case": "run_chain", "n": n, "median_ms": median_ms(run, repeat)})
    branchy_result = anyio.run(plait.load(branchy_text, executors=agents).run, {})
    assert branchy_result.ok and len(branchy_result.outputs) == 1
    for record in records:
        print(json.dumps(record))


if __name__ == "__main__":
    main()
