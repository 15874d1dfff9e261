"""Build-time cost of type checks and converter insertion: prints one JSON line per case.

    python tests/benchmarks/bench_typecheck.py [--size 1000] [--repeat 9] [--quick]

A chain of ``--size`` executors is wired once per case; ``build()`` is timed: the first,
cold build (the converter graph searches), then the median of ``--repeat`` builds, the
cases interleaved; ``median_wire_types_s`` is the type pass alone. Cases:

``checks_off``        ``WorkflowBuilder(type_check=False)``
``checks_on``         type checks on, every edge already fits
``convert_every_10``  type checks on, every 10th edge needs ``int_to_float`` (inserted)

The issue's budget: ``checks_on`` within 2x of ``checks_off``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from typing import Any

import plait_converters
import plait_merge
import plait_routing
from plait import Never, WorkflowContext, executor
from plait.spi import PluginManager
from plait_builders import WorkflowBuilder
from plait_documents import wire_types
from plait_testing import fake_entry_point, make_plugin_manager


def _manager() -> PluginManager:
    return make_plugin_manager(
        fake_entry_point("routing", plait_routing, distribution="plait-routing"),
        fake_entry_point("merge", plait_merge, distribution="plait-merge"),
        fake_entry_point("converters", plait_converters, distribution="plait-converters"),
    )


def _node(i: int, *, takes_float: bool, last: bool) -> Any:
    if last:

        @executor(id=f"n{i}")
        async def final(x: int, ctx: WorkflowContext[Never, int]) -> None:
            await ctx.yield_output(x)

        return final

    if takes_float:

        @executor(id=f"n{i}")
        async def widened(x: float, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(int(x) + 1)

        return widened

    @executor(id=f"n{i}")
    async def step(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)

    return step


def _builder(size: int, manager: PluginManager, *, convert_every: int, checks: bool) -> Any:
    nodes = [
        _node(
            i,
            takes_float=convert_every > 0 and i % convert_every == convert_every - 1,
            last=i == size - 1,
        )
        for i in range(size)
    ]
    builder = WorkflowBuilder(plugin_manager=manager, type_check=checks)
    for a, b in zip(nodes, nodes[1:]):
        builder.add_edge(a, b)
    return builder.set_start(nodes[0])


def _wire_types_once(builder: Any) -> float:
    """Seconds for the type pass alone, on copies, as ``build()`` runs it."""
    start = time.perf_counter()
    wire_types(
        dict(builder._executors),
        list(builder._groups),
        builder._manager,
        auto_convert=builder.auto_convert,
        allow_lossy=builder.allow_lossy,
    )
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="size 50, 2 repeats (smoke test)")
    args = parser.parse_args(argv)
    size, repeat = (50, 2) if args.quick else (args.size, args.repeat)
    cases = {
        "checks_off": {"convert_every": 0, "checks": False},
        "checks_on": {"convert_every": 0, "checks": True},
        "convert_every_10": {"convert_every": 10, "checks": True},
    }
    builders = {name: _builder(size, _manager(), **opts) for name, opts in cases.items()}
    cold: dict[str, float] = {}
    workflows: dict[str, Any] = {}
    for name, builder in builders.items():
        gc.collect()
        start = time.perf_counter()
        workflows[name] = builder.build()  # cold: first searches of the converter graph
        cold[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in cases}
    passes: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeat):  # interleaved, so drift on a busy machine hits every case alike
        for name, builder in builders.items():
            gc.collect()
            start = time.perf_counter()
            builder.build()
            times[name].append(time.perf_counter() - start)
            if builder.type_check:
                passes[name].append(_wire_types_once(builder))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    for name, workflow in workflows.items():
        line = {
            "case": name,
            "executors": size,
            "converter_nodes": sum(1 for n in workflow.spec.nodes if n.id.startswith("convert:")),
            "cold_build_s": round(cold[name], 5),
            "median_build_s": round(medians[name], 5),
            "median_wire_types_s": round(statistics.median(passes[name]), 5)
            if passes[name]
            else 0.0,
            "vs_checks_off": round(medians[name] / medians["checks_off"], 2),
            "output": workflow.run_sync(0, max_supersteps=3 * size).outputs,
        }
        print(json.dumps(line), flush=True)
    ratio = medians["checks_on"] / medians["checks_off"]
    if ratio > 2:
        print(f"checks_on is {ratio:.2f}x checks_off, over the 2x budget", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
