"""Loading nested workflows: a chain of JSON DAG files, each running the next as a
sub-workflow, and a spec nesting ``workflow``-kind nodes.

    python tests/benchmarks/bench_nested.py [--depth 16] [--repeat 15] [--quick]

Each level used to be built three times per level above it (the ``dag.node`` and
``workflow`` kinds' ``check`` and ``create`` each rebuilt it): 13 files took more than a
minute. A nested workflow is now built once per load, so the load is linear in the depth.
One JSON line per case: the median over ``--repeat``, and how many workflows the load
built (``builds``: the depth plus one when each is built once).

``dag_files``   ``plait.load`` of the first of ``depth`` DAG files, each naming the next
``spec``        ``Workflow.from_spec`` of ``depth`` nested ``workflow``-kind nodes
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plait
from plait import Never, Workflow, WorkflowContext, WorkflowSpec, executor
from plait.rebuild import load_scope

BUDGET_MS = 100.0  # for --depth 16 (the deepest chain of DAG files plait-dag allows)


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text.upper())


async def double(ctx: dict[str, Any]) -> dict[str, Any]:
    return {"n": ctx["n"] * 2}


def dag_files(folder: Path, depth: int) -> Path:
    last = {"nodes": [{"id": "x", "agent_name": "double", "is_entry": True, "is_exit": True}]}
    (folder / f"f{depth - 1}.json").write_text(json.dumps({**last, "connections": []}))
    for i in range(depth - 1):
        node = {"id": "n", "workflow": f"f{i + 1}.json", "is_entry": True, "is_exit": True}
        (folder / f"f{i}.json").write_text(json.dumps({"nodes": [node], "connections": []}))
    return folder / "f0.json"


def nested_spec(depth: int) -> WorkflowSpec:
    spec: dict[str, Any] = {
        "name": "leaf",
        "start": "shout",
        "nodes": [{"id": "shout", "kind": "python", "config": {"ref": "nowhere:shout"}}],
        "edge_groups": [],
    }
    for level in range(depth):
        config = {"spec": spec, "allow_direct_output": True}
        node = {"id": "nest", "kind": "workflow", "config": config}
        spec = {"name": f"level{level}", "start": "nest", "nodes": [node], "edge_groups": []}
    return WorkflowSpec.from_dict(spec)


def timed(load: Callable[[], Workflow], repeat: int) -> tuple[float, int, Workflow]:
    times, builds = [], 0
    workflow = load()  # warm-up: imports, the kinds' schemas
    for _ in range(repeat):
        start = time.perf_counter()
        with load_scope() as scope:
            workflow = load()
        times.append((time.perf_counter() - start) * 1000)
        builds = scope.builds
    return round(statistics.median(times), 2), builds, workflow


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="depth 3, once")
    args = parser.parse_args(argv)
    depth, repeat = (3, 1) if args.quick else (args.depth, args.repeat)
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        first = dag_files(Path(folder), depth)
        ms, builds, workflow = timed(
            lambda: plait.load(first, executors={"double": double}), repeat
        )
        ok &= workflow.run_sync({"n": 2}).outputs == [{"n": 4}]
        record = {"case": "dag_files", "depth": depth, "median_ms": ms, "builds": builds}
        print(json.dumps({"benchmark": "nested", **record, "budget_ms": BUDGET_MS, "ok": ok}))
    spec = nested_spec(depth)
    ms, builds, workflow = timed(lambda: Workflow.from_spec(spec, {"shout": shout}), repeat)
    ok &= workflow.run_sync("deep").outputs == ["DEEP"]
    record = {"case": "spec", "depth": depth, "median_ms": ms, "builds": builds}
    print(json.dumps({"benchmark": "nested", **record, "budget_ms": BUDGET_MS, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
