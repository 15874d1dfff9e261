"""LangGraph versions of the Plait benchmark workloads.

Every workload is a compiled ``StateGraph``: the public, documented way to build a LangGraph
workflow. Where LangGraph offers a sync and an async way to run the same graph, the faster
one on CPython 3.11 with LangGraph 1.2 is in :data:`WORKLOADS` and the other is kept in
:data:`ALTERNATIVES` so ``compare.py --alternatives`` can re-check the choice:

* chains and the self-loop: plain sync node functions run by ``invoke`` (sync nodes are
  called inline; async nodes under ``ainvoke`` pay for a task per step; sync nodes under
  ``ainvoke`` pay for a thread hop per step and are the slowest of all);
* fan-out: ``Send`` to one ``async`` worker node, run by ``ainvoke`` (under ``invoke`` the
  1,000 sync tasks go through a thread pool);
* checkpointed chains: ``durability="sync"``, so each superstep's checkpoint is saved
  before the next superstep starts, as with Plait's default durability. ``"async"`` also
  saves one checkpoint per superstep but overlaps the save with the next step (kept as an
  alternative); ``"exit"`` saves only at the end and would do less work than Plait, so it
  is not used. With ``InMemorySaver``, async nodes under ``ainvoke`` are the faster pair
  (~31 ms against ~50 ms for sync nodes under ``invoke``, which hand each synchronous save
  to a background thread and wait for it); with ``SqliteSaver`` the sync pair is faster
  (``AsyncSqliteSaver`` goes through ``aiosqlite``'s thread for every statement).

Async runs reuse one event loop per workload instance (see :mod:`._support`).
"""

from __future__ import annotations

import asyncio
import operator
import os
import sqlite3
import tempfile
import uuid
from importlib.metadata import version
from typing import Annotated, Any, Literal, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from ._support import LoopRunner, Run, Workload, bind_cleanup, remover

__all__ = ["NAME", "VERSION", "WORKLOADS", "ALTERNATIVES", "NOTES"]

NAME = "langgraph"
VERSION = version("langgraph")

Mode = Literal["sync", "async"]
Durability = Literal["sync", "async"]

# Room above the number of supersteps a run needs (LangGraph counts supersteps against it).
_RECURSION_HEADROOM = 10


class Counter(TypedDict):
    """State of the chains and the loop: one integer, last value wins."""

    value: int


class FanState(TypedDict, total=False):
    """State of the fan-out: the seed sent to every worker, their parts, and the sum."""

    seed: int
    parts: Annotated[list[int], operator.add]
    result: int


# --------------------------------------------------------------------------- nodes


def _add_one(state: Counter) -> dict[str, int]:
    return {"value": state["value"] + 1}


async def _add_one_async(state: Counter) -> dict[str, int]:
    return {"value": state["value"] + 1}


def _source(state: FanState) -> None:
    return None


async def _source_async(state: FanState) -> None:
    return None


def _worker(value: int) -> dict[str, list[int]]:
    return {"parts": [value]}


async def _worker_async(value: int) -> dict[str, list[int]]:
    return {"parts": [value]}


async def _sleeping_worker(value: int) -> dict[str, list[int]]:
    await asyncio.sleep(0.01)
    return {"parts": [value]}


def _join(state: FanState) -> dict[str, int]:
    return {"result": sum(state["parts"])}


async def _join_async(state: FanState) -> dict[str, int]:
    return {"result": sum(state["parts"])}


# --------------------------------------------------------------------------- graphs


def _chain_builder(n: int, mode: Mode) -> StateGraph[Any]:
    """``START -> step0 -> ... -> step{n-1} -> END``, each step adding 1."""
    node = _add_one if mode == "sync" else _add_one_async
    builder: StateGraph[Any] = StateGraph(Counter)
    previous = START
    for i in range(n):
        name = f"step{i}"
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def _fanout_builder(n: int, mode: Mode, *, sleep: bool = False) -> StateGraph[Any]:
    """``source`` sends its seed to ``n`` worker tasks with ``Send``; ``join`` sums them."""
    if sleep:
        worker: Any = _sleeping_worker
    else:
        worker = _worker if mode == "sync" else _worker_async

    def fan_out(state: FanState) -> list[Send]:
        seed = state["seed"]
        return [Send("worker", seed) for _ in range(n)]

    builder: StateGraph[Any] = StateGraph(FanState)
    builder.add_node("source", _source if mode == "sync" else _source_async)
    builder.add_node("worker", worker)
    builder.add_node("join", _join if mode == "sync" else _join_async)
    builder.add_edge(START, "source")
    builder.add_conditional_edges("source", fan_out, ["worker"])
    builder.add_edge("worker", "join")
    builder.add_edge("join", END)
    return builder


def _loop_builder(n: int, mode: Mode) -> StateGraph[Any]:
    """One ``step`` node routed back to itself by a conditional edge until ``value == n``."""

    def route(state: Counter) -> str:
        return "step" if state["value"] < n else END

    builder: StateGraph[Any] = StateGraph(Counter)
    builder.add_node("step", _add_one if mode == "sync" else _add_one_async)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", route, ["step", END])
    return builder


# --------------------------------------------------------------------------- workloads


def _counter_run(builder: StateGraph[Any], steps: int, mode: Mode) -> Run:
    graph = builder.compile()
    config: Any = {"recursion_limit": steps + _RECURSION_HEADROOM}
    if mode == "sync":

        def run() -> int:
            return int(graph.invoke({"value": 0}, config)["value"])

        return run

    runner = LoopRunner()

    def run_async() -> int:
        return int(runner.run(graph.ainvoke({"value": 0}, config))["value"])

    return bind_cleanup(run_async, runner.close)


def chain(n: int, mode: Mode = "sync") -> Run:
    """``n`` nodes in a chain, each adding 1 to the state; returns ``n``."""
    return _counter_run(_chain_builder(n, mode), n, mode)


def loop(n: int, mode: Mode = "sync") -> Run:
    """One node cycling on itself ``n`` times through a conditional edge; returns ``n``."""
    return _counter_run(_loop_builder(n, mode), n, mode)


def _fan_run(builder: StateGraph[Any], mode: Mode) -> Run:
    graph = builder.compile()
    if mode == "sync":

        def run() -> int:
            return int(graph.invoke({"seed": 1})["result"])

        return run

    runner = LoopRunner()

    def run_async() -> int:
        return int(runner.run(graph.ainvoke({"seed": 1}))["result"])

    return bind_cleanup(run_async, runner.close)


def fanout(n: int, mode: Mode = "async") -> Run:
    """A source ``Send``-s 1 to ``n`` worker tasks; a join node sums their parts."""
    return _fan_run(_fanout_builder(n, mode), mode)


def fanout_async(n: int) -> Run:
    """Like :func:`fanout`, but each worker first awaits ``asyncio.sleep(0.01)``."""
    return _fan_run(_fanout_builder(n, "async", sleep=True), "async")


def _checkpointed_run(
    n: int,
    saver: BaseCheckpointSaver[Any],
    mode: Mode,
    durability: Durability,
    runner: LoopRunner | None,
) -> Run:
    """A chain compiled with ``saver``; every run uses a fresh thread id (a fresh history)."""
    graph = _chain_builder(n, mode).compile(checkpointer=saver)
    limit = n + _RECURSION_HEADROOM

    def config() -> Any:
        return {"configurable": {"thread_id": uuid.uuid4().hex}, "recursion_limit": limit}

    if runner is None:

        def run() -> int:
            out = graph.invoke({"value": 0}, config(), durability=durability)
            return int(out["value"])

        return run

    loop_runner = runner

    def run_async() -> int:
        out = loop_runner.run(graph.ainvoke({"value": 0}, config(), durability=durability))
        return int(out["value"])

    return run_async


def chain_ckpt_memory(n: int, mode: Mode = "async", durability: Durability = "sync") -> Run:
    """An ``n``-node chain checkpointed after every superstep into an ``InMemorySaver``."""
    saver = InMemorySaver()
    if mode == "sync":
        return _checkpointed_run(n, saver, mode, durability, None)
    runner = LoopRunner()
    return bind_cleanup(_checkpointed_run(n, saver, mode, durability, runner), runner.close)


def chain_ckpt_sqlite(n: int, mode: Mode = "sync", durability: Durability = "sync") -> Run:
    """An ``n``-node chain checkpointed after every superstep into SQLite in a temp file.

    Sync mode uses ``SqliteSaver`` over :mod:`sqlite3`; async mode uses
    ``AsyncSqliteSaver`` over ``aiosqlite``. Both create their tables here, before timing.
    """
    directory = tempfile.mkdtemp(prefix="bench-langgraph-sqlite-")
    path = os.path.join(directory, "checkpoints.sqlite")
    remove_dir = remover(directory)
    if mode == "sync":
        conn = sqlite3.connect(path, check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        run = _checkpointed_run(n, saver, mode, durability, None)
        return bind_cleanup(run, conn.close, remove_dir)

    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async def open_saver() -> AsyncSqliteSaver:
        # The saver binds itself to the running loop, so it is made on the runner's loop.
        async_saver = AsyncSqliteSaver(await aiosqlite.connect(path))
        await async_saver.setup()
        return async_saver

    runner = LoopRunner()
    async_saver = runner.run(open_saver())
    run = _checkpointed_run(n, async_saver, mode, durability, runner)
    return bind_cleanup(run, lambda: runner.run(async_saver.conn.close()), runner.close, remove_dir)


def build(n: int) -> Run:
    """Build and compile (which validates) an ``n``-node chain; returns the node count."""

    def run() -> int:
        graph = _chain_builder(n, "sync").compile()
        return len(graph.builder.nodes)

    return run


WORKLOADS: dict[str, Workload] = {
    "chain1000": chain,
    "fanout1000": fanout,
    "loop10000": loop,
    "chain100_ckpt_memory": chain_ckpt_memory,
    "chain100_ckpt_sqlite": chain_ckpt_sqlite,
    "build1000": build,
    "fanout_async": fanout_async,
}

#: The slower API choices, kept so the choice made in :data:`WORKLOADS` can be re-measured.
ALTERNATIVES: dict[str, dict[str, Workload]] = {
    "chain1000": {"async": lambda n: chain(n, "async")},
    "fanout1000": {"sync": lambda n: fanout(n, "sync")},
    "loop10000": {"async": lambda n: loop(n, "async")},
    "chain100_ckpt_memory": {
        "sync": lambda n: chain_ckpt_memory(n, "sync"),
        "durability_async": lambda n: chain_ckpt_memory(n, "async", "async"),
    },
    "chain100_ckpt_sqlite": {
        "async": lambda n: chain_ckpt_sqlite(n, "async"),
        "durability_async": lambda n: chain_ckpt_sqlite(n, "sync", "async"),
    },
}

_SQLITE_VERSION = version("langgraph-checkpoint-sqlite")

#: Per-workload remarks the harness copies into its output's ``note`` field.
NOTES: dict[str, str] = {
    "chain1000": "StateGraph, sync nodes, invoke",
    "fanout1000": "StateGraph, Send to one async worker node, ainvoke",
    "loop10000": "StateGraph, sync node, conditional edge, invoke",
    "chain100_ckpt_memory": "InMemorySaver, durability=sync, async nodes, ainvoke",
    "chain100_ckpt_sqlite": (
        f"SqliteSaver (langgraph-checkpoint-sqlite {_SQLITE_VERSION}) on a temp file, "
        "durability=sync, sync nodes, invoke"
    ),
    "build1000": "StateGraph construction + compile()",
    "fanout_async": "StateGraph, Send to one async worker node, ainvoke",
}
