"""Composition benchmark: 100 fragments of 10 executors each, composed and built.

    python tests/benchmarks/bench_compose.py [--fragments 100] [--size 10] [--repeat 7]

Prints one JSON line per variant: the median seconds to compose (``add_workflow`` and
``connect`` for every fragment), to build (type checks on), and both together. Variants:

- ``function``: fragments of ``@executor`` functions (handlers reused by the clones);
- ``class``: fragments of ``Executor`` subclasses (handlers collected again per clone);
- ``workflow``: a built workflow composed as the fragment (cloned by ``add_workflow``).

The target (issue 5): under one second for 100 x 10. Each variant's composed workflow is
also run once, as a correctness check (the message passes 1,000 increments).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from plait import Executor, Never, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder


def function_step(i: int) -> Executor:
    @executor(id=f"s{i}")
    async def step(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)

    return step


class ClassStep(Executor):
    """An executor subclass: its handler is a bound method, re-collected on each clone."""

    @handler
    async def step(self, x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)


def class_step(i: int) -> Executor:
    return ClassStep(f"s{i}")


def fragment(size: int, make: Callable[[int], Executor]) -> WorkflowBuilder:
    steps = [make(i) for i in range(size)]
    builder = WorkflowBuilder("chunk").set_start(steps[0]).add_executor(steps[0])
    for before, after in zip(steps, steps[1:]):
        builder.add_edge(before, after)
    return builder


@executor(id="done")
async def done(x: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(x)


def compose(source: Any, fragments: int) -> WorkflowBuilder:
    builder = WorkflowBuilder("composed")
    previous = None
    for n in range(fragments):
        handle = builder.add_workflow(source, prefix=f"f{n}")
        if previous is None:
            builder.set_start(handle.start)
        else:
            builder.connect(previous, handle)
        previous = handle
    builder.connect(previous, done)
    return builder


def measure(name: str, source: Any, fragments: int, size: int, repeat: int) -> dict[str, Any]:
    workflow = compose(source, fragments).build()  # warm-up and correctness check
    result = workflow.run_sync(0, max_supersteps=fragments * size + 10)
    assert result.outputs == [fragments * size], result.outputs
    composing, building, total = [], [], []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        builder = compose(source, fragments)
        middle = time.perf_counter()
        builder.build()
        end = time.perf_counter()
        composing.append(middle - start)
        building.append(end - middle)
        total.append(end - start)
    return {
        "benchmark": "compose",
        "variant": name,
        "fragments": fragments,
        "executors_per_fragment": size,
        "executors": fragments * size + 1,
        "compose_s": round(statistics.median(composing), 4),
        "build_s": round(statistics.median(building), 4),
        "total_s": round(statistics.median(total), 4),
        "repeat": repeat,
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fragments", type=int, default=100)
    parser.add_argument("--size", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    variants = {
        "function": fragment(args.size, function_step),
        "class": fragment(args.size, class_step),
        "workflow": fragment(args.size, function_step).build(),
    }
    slowest = 0.0
    for name, source in variants.items():
        row = measure(name, source, args.fragments, args.size, args.repeat)
        slowest = max(slowest, row["total_s"])
        print(json.dumps(row), flush=True)
    return 0 if slowest < 1.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
