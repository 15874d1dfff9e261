"""The pipelined schedule against the superstep one, LangGraph and MAF (issue 22).

    python tests/benchmarks/bench_schedules.py [--repeat 3] [--quick] [--no-peers]

Every step is an ``anyio.sleep`` / ``asyncio.sleep`` (I/O-bound work: an LLM call, an HTTP
request), so the wall time is the schedule's. One JSON line per (workload, framework):
the best of ``--repeat`` runs in seconds, and what the issue's table expects.

``two_branches``  2 branches x 20 steps, alternating 100 ms / 10 ms (out of phase)
``lg6320``        LangGraph #6320: ``fast`` 0.1 s → ``after_fast`` 1.0 s beside ``slow``
                  1.2 s; also when ``after_fast`` starts
``maf3087``       MAF #3087 scaled: a chain 50 → 50 → 50 ms beside one 200 ms step
``items100``      100 items x 3 stages of 100 ms, each stage 10 at a time
``lognormal8x6``  8 branches x 6 steps, lognormal step times (seeded)

LangGraph runs a ``StateGraph`` (parallel branches from ``START``; ``Send`` and
``max_concurrency`` for the items); MAF a ``WorkflowBuilder`` graph (fan-out edges and
chains). Neither has a pipelined mode: both run Pregel supersteps, as Plait's default
does. ``--quick`` divides every duration by 100 (a smoke test, no goals checked).

Exit status 0; 1 when a result is wrong. Goals are reported (``goal``, ``met``), never
asserted here: the machine may be shared.
"""

import argparse
import asyncio
import json
import operator
import random
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import anyio
from plait import Never, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder

SCALE = 1.0


def two_branches() -> list[list[float]]:
    a = [0.1 if i % 2 == 0 else 0.01 for i in range(20)]
    b = [0.01 if i % 2 == 0 else 0.1 for i in range(20)]
    return [a, b]


def lg6320() -> list[list[float]]:
    return [[0.1, 1.0], [1.2]]


def maf3087() -> list[list[float]]:
    return [[0.05, 0.05, 0.05], [0.2]]


def lognormal8x6() -> list[list[float]]:
    rng = random.Random(22)
    return [[min(rng.lognormvariate(-2.5, 0.8), 1.0) for _ in range(6)] for _ in range(8)]


BRANCHES: dict[str, Callable[[], list[list[float]]]] = {
    "two_branches": two_branches,
    "lg6320": lg6320,
    "maf3087": maf3087,
    "lognormal8x6": lognormal8x6,
}


def barrier_time(branches: list[list[float]]) -> float:
    """What a superstep schedule takes: per step, the slowest branch."""
    depth = max(len(b) for b in branches)
    return sum(max(b[i] if i < len(b) else 0 for b in branches) for i in range(depth))


def branch_time(branches: list[list[float]]) -> float:
    """What the longest branch takes on its own."""
    return max(sum(b) for b in branches)


# -- Plait ------------------------------------------------------------------------------------


def plait_branches(branches: list[list[float]], started: dict[str, float]) -> Workflow:
    @executor(id="start")
    async def start(n: int, ctx: WorkflowContext[int]) -> None:
        started["t0"] = time.perf_counter()
        await ctx.send_message(n)

    def step(name: str, seconds: float, last: bool) -> Any:
        if last:

            @executor(id=name)
            async def final(n: int, ctx: WorkflowContext[Never, int]) -> None:
                started[name] = time.perf_counter()
                await anyio.sleep(seconds * SCALE)
                await ctx.yield_output(n + 1)

            return final

        @executor(id=name)
        async def link(n: int, ctx: WorkflowContext[int]) -> None:
            started[name] = time.perf_counter()
            await anyio.sleep(seconds * SCALE)
            await ctx.send_message(n + 1)

        return link

    chains = [
        [step(f"b{i}_{j}", s, j == len(b) - 1) for j, s in enumerate(b)]
        for i, b in enumerate(branches)
    ]
    builder = WorkflowBuilder("branches", max_supersteps=1000)
    builder.add_fan_out(start, [chain[0] for chain in chains])
    for chain in chains:
        for a, b in zip(chain, chain[1:]):
            builder.add_edge(a, b)
    return builder.set_start(start).build()


def plait_items(items: int, stages: int, seconds: float, width: int) -> Workflow:
    @executor(id="start")
    async def start(n: int, ctx: WorkflowContext[int]) -> None:
        for i in range(n):
            await ctx.send_message(i)

    def stage(k: int) -> Any:
        last = k == stages - 1

        @executor(id=f"stage{k}", max_concurrency=width)
        async def work(n: int, ctx: WorkflowContext[int, int]) -> None:
            await anyio.sleep(seconds * SCALE)
            if last:
                await ctx.yield_output(n)
            else:
                await ctx.send_message(n)

        return work

    chain = [stage(k) for k in range(stages)]
    builder = WorkflowBuilder("items").add_edge(start, chain[0])
    for a, b in zip(chain, chain[1:]):
        builder.add_edge(a, b)
    return builder.set_start(start).build()


# -- LangGraph --------------------------------------------------------------------------------


class Log(TypedDict, total=False):
    done: Annotated[list[int], operator.add]
    item: int


def langgraph_branches(branches: list[list[float]], started: dict[str, float]) -> Any:
    from langgraph.graph import END, START, StateGraph

    graph: Any = StateGraph(Log)

    def node(name: str, seconds: float) -> Any:
        async def run(state: Log) -> Log:
            started[name] = time.perf_counter()
            await asyncio.sleep(seconds * SCALE)
            return {"done": [1]}

        return run

    for i, b in enumerate(branches):
        names = [f"b{i}_{j}" for j in range(len(b))]
        for name, seconds in zip(names, b):
            graph.add_node(name, node(name, seconds))
        graph.add_edge(START, names[0])
        for a, c in zip(names, names[1:]):
            graph.add_edge(a, c)
        graph.add_edge(names[-1], END)
    return graph.compile()


def langgraph_items(items: int, stages: int, seconds: float, width: int) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, Send

    graph: Any = StateGraph(Log)

    def fan(state: Log) -> list[Any]:
        return [Send("stage0", {"item": i}) for i in range(items)]

    def stage(k: int) -> Any:
        async def run(state: Log) -> Any:
            await asyncio.sleep(seconds * SCALE)
            if k == stages - 1:
                return {"done": [state["item"]]}
            return Command(goto=Send(f"stage{k + 1}", {"item": state["item"]}))

        return run

    for k in range(stages):
        later = (f"stage{k + 1}",) if k < stages - 1 else ()
        graph.add_node(f"stage{k}", stage(k), destinations=later)
    graph.add_conditional_edges(START, fan, ["stage0"])
    graph.add_edge(f"stage{stages - 1}", END)
    return graph.compile()


# -- MAF --------------------------------------------------------------------------------------


def maf_branches(branches: list[list[float]], started: dict[str, float]) -> Any:
    from agent_framework import Executor, WorkflowBuilder, WorkflowContext as MafContext, handler

    class Start(Executor):
        @handler
        async def go(self, n: int, ctx: MafContext[int]) -> None:
            await ctx.send_message(n)

    class Link(Executor):
        def __init__(self, id: str, seconds: float) -> None:
            super().__init__(id=id)
            self.seconds = seconds

        @handler
        async def step(self, n: int, ctx: MafContext[int]) -> None:
            started[self.id] = time.perf_counter()
            await asyncio.sleep(self.seconds * SCALE)
            await ctx.send_message(n + 1)

    class Last(Link):
        @handler
        async def step(self, n: int, ctx: MafContext[Never, int]) -> None:  # type: ignore[override]
            started[self.id] = time.perf_counter()
            await asyncio.sleep(self.seconds * SCALE)
            await ctx.yield_output(n + 1)

    start = Start(id="start")
    chains = [
        [(Last if j == len(b) - 1 else Link)(f"b{i}_{j}", s) for j, s in enumerate(b)]
        for i, b in enumerate(branches)
    ]
    builder = WorkflowBuilder(start_executor=start, max_iterations=1000)
    builder.add_fan_out_edges(start, [chain[0] for chain in chains])
    for chain in chains:
        if len(chain) > 1:
            builder.add_chain(chain)
    return builder.build()


# -- running ----------------------------------------------------------------------------------


def timed_plait(workflow: Workflow, message: Any, **options: Any) -> tuple[float, Any]:
    async def go() -> Any:
        return await workflow.run(message, **options)

    begin = time.perf_counter()
    result = anyio.run(go)
    return time.perf_counter() - begin, result.outputs


def timed_async(make: Callable[[], Any]) -> tuple[float, Any]:
    begin = time.perf_counter()
    result = asyncio.run(make())
    return time.perf_counter() - begin, result


def expected_goal(name: str, branches: list[list[float]] | None) -> dict[str, Any]:
    if name == "items100":
        return {"superstep": 3.0, "pipelined_goal": 1.3}
    assert branches is not None
    barrier, longest = barrier_time(branches), branch_time(branches)
    goals = {
        "two_branches": 1.15,
        "lg6320": 1.25,
        "maf3087": 0.215,
        "lognormal8x6": barrier / 1.5,
    }
    return {"superstep": round(barrier, 3), "longest_branch": round(longest, 3),
            "pipelined_goal": round(goals[name], 3)}  # fmt: skip


def run_branches(name: str, repeat: int, peers: bool) -> list[dict[str, Any]]:
    branches = BRANCHES[name]()
    total = sum(len(b) for b in branches)
    goal = expected_goal(name, branches)
    records: list[dict[str, Any]] = []
    cases: list[tuple[str, Callable[[dict[str, float]], tuple[float, Any]]]] = [
        ("plait-superstep", lambda s: timed_plait(plait_branches(branches, s), 0)),
        (
            "plait-pipelined",
            lambda s: timed_plait(plait_branches(branches, s), 0, schedule="pipelined"),
        ),
    ]
    if peers:

        def langgraph(s: dict[str, float]) -> tuple[float, Any]:
            graph = langgraph_branches(branches, s)
            s["t0"] = time.perf_counter()
            took, out = timed_async(lambda: graph.ainvoke({"done": []}))
            return took, len(out["done"])

        def maf(s: dict[str, float]) -> tuple[float, Any]:
            workflow = maf_branches(branches, s)
            s["t0"] = time.perf_counter()
            took, out = timed_async(lambda: workflow.run(0))
            return took, sorted(out.get_outputs())

        cases += [("langgraph", langgraph), ("maf", maf)]
    for framework, case in cases:
        best, started_best, result = float("inf"), {}, None
        for _ in range(repeat):
            started: dict[str, float] = {}
            took, result = case(started)
            if took < best:
                best, started_best = took, started
        ok = result == total if framework == "langgraph" else _branch_outputs(result, branches)
        record: dict[str, Any] = {
            "workload": name,
            "framework": framework,
            "best_s": round(best, 3),
            "repeats": repeat,
            "ok": ok,
            **goal,
        }
        if framework == "plait-pipelined":
            record["met"] = best <= goal["pipelined_goal"]
        if name == "lg6320" and "b0_1" in started_best and "t0" in started_best:
            record["after_fast_starts_s"] = round(started_best["b0_1"] - started_best["t0"], 3)
        records.append(record)
    return records


def _branch_outputs(result: Any, branches: list[list[float]]) -> bool:
    return sorted(result) == sorted(len(b) for b in branches)


def run_items(repeat: int, peers: bool) -> list[dict[str, Any]]:
    items, stages, seconds, width = 100, 3, 0.1, 10
    goal = expected_goal("items100", None)
    cases: list[tuple[str, Callable[[], tuple[float, Any]]]] = [
        ("plait-superstep", lambda: timed_plait(plait_items(items, stages, seconds, width), items)),
        (
            "plait-pipelined",
            lambda: timed_plait(
                plait_items(items, stages, seconds, width), items, schedule="pipelined"
            ),
        ),
    ]
    if peers:

        def langgraph() -> tuple[float, Any]:
            graph = langgraph_items(items, stages, seconds, width)
            took, out = timed_async(lambda: graph.ainvoke({"done": []}, {"max_concurrency": width}))
            return took, out["done"]

        cases.append(("langgraph", langgraph))
    records = []
    for framework, case in cases:
        best, result = float("inf"), None
        for _ in range(repeat):
            took, result = case()
            best = min(best, took)
        record = {
            "workload": "items100",
            "framework": framework,
            "best_s": round(best, 3),
            "repeats": repeat,
            "ok": sorted(result or []) == list(range(items)),
            **goal,
        }
        if framework == "plait-pipelined":
            record["met"] = best <= goal["pipelined_goal"]
        records.append(record)
    if peers:
        records.append(
            {
                "workload": "items100",
                "framework": "maf",
                "skipped": "MAF has no per-executor concurrency limit to express 10 at a time",
            }
        )
    return records


def checkpoint_counts(name: str) -> list[dict[str, Any]]:
    """How many checkpoints a run of ``name`` writes to SQLite, and their bytes, per
    schedule and durability (steps at a hundredth of their length)."""
    import tempfile
    from pathlib import Path

    from plait_durable import encode_checkpoint, open_store

    global SCALE
    scale, SCALE = SCALE, SCALE / 100
    records = []
    try:
        for schedule in ("superstep", "pipelined"):
            for durability in ("sync", "async"):
                url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='plait-sched-')) / 'runs.db'}"
                workflow = plait_branches(BRANCHES[name](), {})
                run_id = f"{schedule}-{durability}"
                timed_plait(workflow, 0, checkpoint=url, durability=durability,
                            schedule=schedule, run_id=run_id)  # fmt: skip

                async def measure(url: str = url, run_id: str = run_id) -> tuple[int, int]:
                    store = open_store(url)
                    try:
                        infos = await store.list(run_id)
                        sizes = [len(encode_checkpoint(await store.load(i.checkpoint_id)))
                                 for i in infos]  # fmt: skip
                        return len(sizes), sum(sizes)
                    finally:
                        await store.aclose()

                count, size = anyio.run(measure)
                records.append({"workload": name, "checkpoints": count, "bytes": size,
                                "schedule": schedule, "durability": durability,
                                "store": "sqlite"})  # fmt: skip
    finally:
        SCALE = scale
    return records


def main(argv: list[str] | None = None) -> int:
    global SCALE
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="durations / 100, one run each")
    parser.add_argument("--no-peers", action="store_true", help="Plait only")
    parser.add_argument("--workloads", default=",".join([*BRANCHES, "items100"]))
    parser.add_argument(
        "--checkpoints", action="store_true", help="also count SQLite checkpoints and bytes"
    )
    args = parser.parse_args(argv)
    if args.quick:
        SCALE, args.repeat = 0.01, 1
    failed = False
    for name in args.workloads.split(","):
        if name == "items100":
            records = run_items(args.repeat, not args.no_peers)
        else:
            records = run_branches(name, args.repeat, not args.no_peers)
        for record in records:
            if args.quick:
                record.pop("met", None)
            failed |= record.get("ok") is False
            print(json.dumps(record), flush=True)
    if args.checkpoints:
        for name in ("two_branches", "lognormal8x6"):
            for record in checkpoint_counts(name):
                print(json.dumps(record), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
