"""Checkpoint growth: what a run that carries a growing value stores, per store.

    python tests/benchmarks/bench_checkpoint_growth.py     # every store, 100 and 1,000 steps
    python tests/benchmarks/bench_checkpoint_growth.py --stores sqlite --steps 100 --table
    python tests/benchmarks/bench_checkpoint_growth.py --peers         # and LangGraph's SqliteSaver

Prints JSON lines (``--table``: a Markdown table too). The workloads:

* ``append``: an agent-style loop of ``n`` supersteps, each appending a 2 KB message to a
  list and sending the list on (``where=message``), or keeping it in shared state
  (``where=shared``); a checkpoint per superstep. ``raw_bytes`` is the final transcript
  (``n`` x 2 KB); ``stored_bytes`` everything the run stored: every checkpoint's bytes
  (:func:`~plait_durable.encode_checkpoint`) plus every blob of the run; ``file_bytes`` the
  size on disk (SQLite database or file store directory). ``per_checkpoint_ms`` is the
  run's time over its checkpoints. ``resume_ms`` resumes the checkpoint before the last
  (it holds the whole transcript but one message) and runs the last step;
  ``resume_cpu_ms`` is this process's CPU time for it (every thread; not a server's),
  which other jobs on a shared machine disturb less than the wall-clock time.
* ``resume_ab`` (``--resume-ab``): the append loop's resume, with blobs against the same
  store with its blob methods hidden (inline: what every store did before blobs), each
  run written once and resumed ``--repeat`` x 2 times, the two interleaved in one process;
  process CPU ms (medians) and the blobs one resume reads. ``calls_cpu_ms``: the blobs
  run resumed through a wrapper that passes every call on, so the checkpoint and its
  blobs are read in separate calls (as before ``load_with_blobs``), interleaved too.
* ``fanout``: 1,000 workers and a fan-in, a checkpoint per superstep (SQLite): bytes.
* ``chain100``: 100 executors in a chain, a checkpoint per superstep, on ``memory://``
  and SQLite: time per run (median of ``--repeat``), with blobs and inline (the same
  store with its blob methods hidden: what every store did before), interleaved.

It runs against whatever Plait is importable, so the same command measures a checkout
before and after a change (a kernel without blobs stores everything inline).
``--peers`` runs the same append loop in LangGraph (``StateGraph`` with
``messages: Annotated[list, operator.add]``, ``SqliteSaver``, ``durability="sync"``) in
the same process; LangGraph's ``stored_bytes`` is its ``checkpoints`` and ``writes``
tables' payloads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import operator
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

import plait
import workloads_plait
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import encode_checkpoint, open_store

MESSAGE = 2048


class LangGraphState(TypedDict):
    """LangGraph's state for the append loop: the messages list, appended by its reducer."""

    messages: Annotated[list[str], operator.add]


def message(i: int) -> str:
    """The ``i``-th 2 KB message (distinct, so nothing deduplicates by accident)."""
    return (f"message {i}: " + "lorem ipsum dolor sit amet " * 80)[:MESSAGE]


def append_workflow(steps: int, where: str) -> plait.Workflow:
    """An agent loop: each superstep appends a 2 KB message to the transcript."""
    if where == "message":

        @executor(id="agent")
        async def agent(transcript: list, ctx: WorkflowContext[list, int]) -> None:
            grown = [*transcript, message(len(transcript))]
            if len(grown) >= steps:
                await ctx.yield_output(len(grown))
            else:
                await ctx.send_message(grown)

    else:

        @executor(id="agent")
        async def agent(turn: int, ctx: WorkflowContext[int, int]) -> None:
            transcript = await ctx.get_shared_state("transcript", [])
            await ctx.set_shared_state("transcript", [*transcript, message(turn)])
            if turn + 1 >= steps:
                await ctx.yield_output(turn + 1)
            else:
                await ctx.send_message(turn + 1)

    builder = WorkflowBuilder(f"append_{where}", max_supersteps=steps + 2)
    builder.add_executor(agent).add_edge(agent, agent)
    return builder.set_start(agent).build()


async def stored_bytes(store: Any, run_id: str) -> tuple[int, int, int]:
    """(checkpoints, their bytes, the run's blob bytes)."""
    infos = await store.list(run_id)
    total = 0
    for info in infos:
        total += len(encode_checkpoint(await store.load(info.checkpoint_id)))
    blobs = 0
    if hasattr(store, "blob_hashes"):
        hashes = list(await store.blob_hashes(run_id))
        for start in range(0, len(hashes), 500):
            got = await store.get_blobs(run_id, hashes[start : start + 500])
            blobs += sum(len(data) for data in got.values())
    return len(infos), total, blobs


def disk_bytes(path: Path) -> int:
    if path.is_file():
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def append_run(url: str, disk: Path | None, steps: int, where: str) -> dict[str, Any]:
    wf = append_workflow(steps, where)
    start = time.perf_counter()
    result = await wf.run([] if where == "message" else 0, checkpoint=url)
    elapsed = time.perf_counter() - start
    assert result.outputs == [steps], result.outputs
    store = open_store(url)
    try:
        count, checkpoint_bytes, blob_bytes = await stored_bytes(store, result.run_id)
        infos = await store.list(result.run_id)
        target = infos[-2].checkpoint_id
        resume_times, resume_cpu = [], []
        for _ in range(7):
            start, cpu = time.perf_counter(), time.process_time()
            again = await wf.resume(target, checkpoint=url)
            resume_times.append(time.perf_counter() - start)
            resume_cpu.append(time.process_time() - cpu)
            assert again.outputs == [steps], again.outputs
    finally:
        await store.aclose()
    raw = steps * MESSAGE
    total = checkpoint_bytes + blob_bytes
    return {
        "bench": "append",
        "where": where,
        "steps": steps,
        "checkpoints": count,
        "raw_bytes": raw,
        "stored_bytes": total,
        "checkpoint_bytes": checkpoint_bytes,
        "blob_bytes": blob_bytes,
        "x_raw": round(total / raw, 2),
        "bytes_per_checkpoint": round(total / count),
        "file_bytes": disk_bytes(disk) if disk is not None else None,
        "per_checkpoint_ms": round(elapsed / count * 1000, 3),
        "resume_ms": round(statistics.median(resume_times) * 1000, 2),
        "resume_cpu_ms": round(statistics.median(resume_cpu) * 1000, 2),
    }


@contextlib.contextmanager
def store_urls(kind: str, tmp: Path) -> Iterator[Callable[[], tuple[str, Path | None]]]:
    """Fresh stores of ``kind``, one per call (a throwaway server for Redis and
    PostgreSQL, a key prefix per call on Redis)."""
    if kind in ("redis", "postgres"):
        from plait_testing import servers

        with (servers.redis_url if kind == "redis" else servers.postgres_url)() as url:
            if kind == "redis":
                yield lambda: (f"{url}?prefix={uuid.uuid4().hex[:12]}:", None)
            else:
                yield lambda: (url, None)
        return

    def fresh() -> tuple[str, Path | None]:
        name = uuid.uuid4().hex[:12]
        if kind == "memory":
            return f"memory://{name}", None
        if kind == "sqlite":
            return f"sqlite:///{tmp / f'{name}.db'}", tmp / f"{name}.db"
        if kind == "file":
            return f"file://{tmp / name}", tmp / name
        raise SystemExit(f"unknown store {kind!r}")

    yield fresh


async def fanout_bytes(tmp: Path) -> dict[str, Any]:
    path = tmp / "fanout.db"
    url = f"sqlite:///{path}"
    wf = workloads_plait._fanout_workflow(1000)
    start = time.perf_counter()
    result = await wf.run(1, checkpoint=url)
    elapsed = time.perf_counter() - start
    store = open_store(url)
    try:
        count, checkpoint_bytes, blob_bytes = await stored_bytes(store, result.run_id)
    finally:
        await store.aclose()
    return {
        "bench": "fanout1000",
        "store": "sqlite",
        "checkpoints": count,
        "stored_bytes": checkpoint_bytes + blob_bytes,
        "blob_bytes": blob_bytes,
        "run_ms": round(elapsed * 1000, 1),
    }


class InlineOnly:
    """A store with its blob methods out of sight: values stay inline, as before blobs."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name in ("get_blobs", "blob_hashes", "load_with_blobs", "latest_with_blobs"):
            raise AttributeError(name)
        return getattr(self._store, name)


class Passing:
    """A store behind a wrapper that passes every attribute on: a resume then reads the
    checkpoint and its blobs in separate calls (``latest``, ``load``, then the tree), as
    before ``load_with_blobs``, which a resume takes only from the store's own class."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


async def resume_ab(url: str, steps: int, repeat: int) -> dict[str, Any]:
    """The append loop's resume with blobs, inline (:class:`InlineOnly`) and with blobs
    read in separate calls (:class:`Passing`), interleaved."""
    wf = append_workflow(steps, "message")
    store = open_store(url)
    stores = {"blobs": store, "inline": InlineOnly(store), "calls": Passing(store)}
    targets = {}
    reads: list[int] = []
    # count what a resume reads: through get_blobs, the closure read, and the blobs a
    # store reads with the checkpoint (load_with_blobs, latest_with_blobs)
    readers = {
        name: getattr(store, name)
        for name in ("get_blobs", "get_blob_closure", "load_with_blobs", "latest_with_blobs")
        if hasattr(store, name)
    }

    def counting(read: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(*args: Any) -> Any:
            got = await read(*args)
            reads.append(len(got[1] if type(got) is tuple else got))
            return got

        return counted

    try:
        for variant in ("blobs", "inline"):
            result = await wf.run([], checkpoint=stores[variant])
            targets[variant] = (await store.list(result.run_id))[-2].checkpoint_id
        targets["calls"] = targets["blobs"]
        cpu: dict[str, list[float]] = {variant: [] for variant in stores}
        wall: dict[str, list[float]] = {variant: [] for variant in stores}
        for k in range(repeat * 2 + 1):
            for variant in ("blobs", "inline", "calls") if k % 2 else ("calls", "inline", "blobs"):
                reads.clear()
                for name, read in readers.items():
                    setattr(store, name, counting(read))
                start, started = time.process_time(), time.perf_counter()
                again = await wf.resume(targets[variant], checkpoint=stores[variant])
                if k:  # the first round warms up
                    cpu[variant].append(time.process_time() - start)
                    wall[variant].append(time.perf_counter() - started)
                for name in readers:
                    delattr(store, name)
                assert again.outputs == [steps], again.outputs
                if variant == "blobs":
                    blobs_read = sum(reads)
    finally:
        await store.aclose()
    medians = {v: statistics.median(t) * 1000 for v, t in cpu.items()}
    walls = {v: statistics.median(t) * 1000 for v, t in wall.items()}
    return {
        "bench": "resume_ab",
        "steps": steps,
        "blobs_read": blobs_read,
        "blobs_cpu_ms": round(medians["blobs"], 2),
        "inline_cpu_ms": round(medians["inline"], 2),
        "ratio": round(medians["blobs"] / medians["inline"], 3),
        # wall-clock time too: a store's I/O and its server's work are not this process's CPU
        "blobs_ms": round(walls["blobs"], 2),
        "inline_ms": round(walls["inline"], 2),
        "wall_ratio": round(walls["blobs"] / walls["inline"], 3),
        # the same store read in separate calls (before load_with_blobs; where a store has
        # no such method, the same as blobs_cpu_ms)
        "calls_cpu_ms": round(medians["calls"], 2),
        "calls_ratio": round(medians["calls"] / medians["inline"], 3),
    }


def chain_times(repeat: int, tmp: Path) -> list[dict[str, Any]]:
    """chain100 with a checkpoint per superstep, with blobs and inline (the same store
    without its blob methods: what a store did before), interleaved in one process."""
    rows = []
    wf = workloads_plait.chain_workflow(100)
    loop = asyncio.new_event_loop()
    for label in ("memory", "sqlite"):
        stores = {}
        for variant in ("blobs", "inline"):
            url = (
                f"memory://chain-{variant}"
                if label == "memory"
                else f"sqlite:///{tmp / f'chain-{variant}.db'}"
            )
            opened = open_store(url)
            stores[variant] = opened if variant == "blobs" else InlineOnly(opened)
        times: dict[str, list[float]] = {"blobs": [], "inline": []}
        for k in range(repeat + 1):
            for variant in ("blobs", "inline") if k % 2 else ("inline", "blobs"):
                start = time.perf_counter()
                result = loop.run_until_complete(wf.run(0, checkpoint=stores[variant]))
                if k:  # the first round warms up
                    times[variant].append(time.perf_counter() - start)
                assert result.outputs == [100]
        medians = {v: statistics.median(t) * 1000 for v, t in times.items()}
        rows.append(
            {
                "bench": "chain100_ckpt",
                "store": label,
                "blobs_ms": round(medians["blobs"], 2),
                "inline_ms": round(medians["inline"], 2),
                "ratio": round(medians["blobs"] / medians["inline"], 3),
            }
        )
        for opened in stores.values():
            loop.run_until_complete(opened.aclose())
    return rows


def langgraph_append(steps: int, tmp: Path) -> dict[str, Any]:
    """The append loop in LangGraph, checkpointed into SQLite after every step."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    def agent(state: LangGraphState) -> dict[str, Any]:
        return {"messages": [message(len(state["messages"]))]}

    def more(state: LangGraphState) -> str:
        return "agent" if len(state["messages"]) < steps else END

    graph = StateGraph(LangGraphState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", more)
    path = tmp / f"langgraph-{uuid.uuid4().hex[:8]}.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        app = graph.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "t"}, "recursion_limit": steps + 10}
        start = time.perf_counter()
        out = app.invoke({"messages": []}, config, durability="sync")
        elapsed = time.perf_counter() - start
        assert len(out["messages"]) == steps
        (checkpoints, checkpoint_bytes) = conn.execute(
            "SELECT count(*), sum(length(checkpoint) + length(metadata)) FROM checkpoints"
        ).fetchone()
        (write_bytes,) = conn.execute(
            "SELECT coalesce(sum(length(value)), 0) FROM writes"
        ).fetchone()
        history = list(app.get_state_history(config))
        resume_from = history[1].config
        start = time.perf_counter()
        app.invoke(None, resume_from, durability="sync")
        resume = time.perf_counter() - start
    finally:
        conn.close()
    raw = steps * MESSAGE
    total = checkpoint_bytes + write_bytes
    return {
        "bench": "append",
        "framework": "langgraph",
        "where": "state",
        "steps": steps,
        "store": "sqlite",
        "checkpoints": checkpoints,
        "raw_bytes": raw,
        "stored_bytes": total,
        "x_raw": round(total / raw, 2),
        "bytes_per_checkpoint": round(total / checkpoints),
        "file_bytes": disk_bytes(path),
        "per_checkpoint_ms": round(elapsed / checkpoints * 1000, 3),
        "resume_ms": round(resume * 1000, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="sqlite,file,redis,postgres,memory")
    parser.add_argument("--steps", default="100,1000")
    parser.add_argument("--where", default="message,shared")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--peers", action="store_true", help="also LangGraph (100 steps)")
    parser.add_argument("--skip-extra", action="store_true", help="only the append loop")
    parser.add_argument("--table", action="store_true")
    parser.add_argument(
        "--resume-ab", action="store_true", help="also resume with blobs against inline"
    )
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="plait-growth-"))
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        row.setdefault("framework", "plait")
        row["version"] = plait.__version__
        rows.append(row)
        print(json.dumps(row), flush=True)

    loop = asyncio.new_event_loop()
    for kind in args.stores.split(","):
        with store_urls(kind, tmp) as fresh:
            for steps in (int(s) for s in args.steps.split(",")):
                for where in args.where.split(","):
                    url, disk = fresh()
                    row = loop.run_until_complete(append_run(url, disk, steps, where))
                    row["store"] = kind
                    emit(row)
                if args.resume_ab:
                    url, _ = fresh()
                    row = loop.run_until_complete(resume_ab(url, steps, args.repeat))
                    row["store"] = kind
                    emit(row)
    if not args.skip_extra:
        emit(loop.run_until_complete(fanout_bytes(tmp)))
        for row in chain_times(args.repeat, tmp):
            emit(row)
    if args.peers:
        emit(langgraph_append(100, tmp))
    if args.table:
        print()
        print(
            "| framework | store | where | steps | stored | x raw | per checkpoint "
            "| ms/checkpoint | resume ms |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            if row["bench"] == "append":
                print(
                    f"| {row['framework']} | {row['store']} | {row['where']} | {row['steps']} "
                    f"| {row['stored_bytes'] / 1024:,.0f} KB | {row['x_raw']} "
                    f"| {row['bytes_per_checkpoint']:,} B | {row['per_checkpoint_ms']} "
                    f"| {row['resume_ms']} |"
                )
    os.environ.get("PLAIT_BENCH_KEEP") or _cleanup(tmp)
    return 0


def _cleanup(tmp: Path) -> None:
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
