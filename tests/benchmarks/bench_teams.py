"""Agent teams (plait-teams): what a turn costs a checkpoint, and the team machinery's own
time per turn.

    python tests/benchmarks/bench_teams.py                   # 200 turns, both measures
    python tests/benchmarks/bench_teams.py --turns 40 --repeat 3 --table

Prints JSON lines (``--table``: a Markdown table too). Exits 1 when a bound of issue 37
does not hold.

* ``checkpoint_growth``: a two-participant group chat of ``--turns`` turns with scripted
  agents, each turn a distinct 1 KB message, a checkpoint per superstep into SQLite. The
  bytes a turn adds are its two checkpoints (the participant's superstep and the
  manager's): each checkpoint's encoded bytes plus the blobs it reaches that no earlier
  checkpoint did. ``bytes_per_turn_early`` averages turns 10-17, ``bytes_per_turn_late``
  the last 8; the bound: late within 2x of early (a conversation stored whole in each
  checkpoint would grow 20x from turn 10 to turn 200).
* ``turn_overhead``: the same chat with agents that answer at once, no checkpoint: the
  run's time per turn (``per_turn_ms``), against a bare loop of two executors passing a
  message back and forth for the same supersteps (``bare_per_turn_ms``: the kernel's
  share); ``team_ms`` is the difference, the team machinery's own (the manager's
  bookkeeping and selection, the turn request and reply, the turn event). The bound:
  ``per_turn_ms`` under 1 ms. Medians of ``--repeat``, the two interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import plait
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import blob_refs, encode_checkpoint, load_blob, open_store
from plait_teams import Conversation, GroupChatBuilder

MESSAGE = 1024
WINDOW = 8


def text(i: int) -> str:
    """The ``i``-th 1 KB message (distinct, so nothing deduplicates by accident)."""
    return (f"turn {i}: " + "the tide comes in and the tide goes out " * 30)[:MESSAGE]


def chat(turns: int, *, sized: bool) -> plait.Workflow:
    """Two scripted participants, round-robin, ``turns`` turns."""

    async def writer(conversation: Conversation) -> str:
        return text(len(conversation)) if sized else "w"

    async def critic(conversation: Conversation) -> str:
        return text(len(conversation)) if sized else "c"

    team = GroupChatBuilder("bench").participants({"writer": writer, "critic": critic})
    return team.with_max_rounds(turns).build()


def bare_loop(supersteps: int) -> plait.Workflow:
    """Two executors passing a counter back and forth: the kernel's cost per superstep."""

    @executor(id="ping")
    async def ping(n: int, ctx: WorkflowContext[int, int]) -> None:
        if n >= supersteps:
            await ctx.yield_output(n)
        else:
            await ctx.send_message(n + 1)

    @executor(id="pong")
    async def pong(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n + 1)

    builder = WorkflowBuilder("bare", max_supersteps=supersteps + 4)
    builder.add_executor(ping).add_edge(ping, pong).add_edge(pong, ping)
    return builder.set_start(ping).build()


async def checkpoint_growth(turns: int, tmp: Path) -> dict[str, Any]:
    url = f"sqlite:///{tmp / 'teams.db'}"
    result = await chat(turns, sized=True).run("discuss the tides", checkpoint=url)
    assert len(result.outputs[0]) == turns + 1, result.outputs
    store: Any = open_store(url)  # a SQLite store keeps blobs (blob_hashes, get_blobs)
    try:
        infos = sorted(await store.list(result.run_id), key=lambda info: info.superstep)
        hashes = list(await store.blob_hashes(result.run_id))
        blobs: dict[str, bytes] = {}
        for start in range(0, len(hashes), 500):
            blobs.update(await store.get_blobs(result.run_id, hashes[start : start + 500]))
        seen: set[str] = set()
        by_superstep: dict[int, int] = {}
        for info in infos:
            checkpoint = await store.load(info.checkpoint_id)
            cost = len(encode_checkpoint(checkpoint))
            frontier = blob_refs(checkpoint.state)
            while frontier:
                digest = frontier.pop()
                if digest in seen or digest not in blobs:
                    continue
                seen.add(digest)
                cost += len(blobs[digest])
                frontier |= blob_refs(load_blob(blobs[digest]))
            by_superstep[info.superstep] = cost
    finally:
        await store.aclose()

    def turn_bytes(turn: int) -> int:
        # turn n is superstep 2n (the participant) and 2n + 1 (the manager's next step)
        return by_superstep.get(2 * turn, 0) + by_superstep.get(2 * turn + 1, 0)

    early = statistics.mean(turn_bytes(t) for t in range(10, 10 + WINDOW))
    late = statistics.mean(turn_bytes(t) for t in range(turns - WINDOW + 1, turns + 1))
    return {
        "bench": "checkpoint_growth",
        "turns": turns,
        "checkpoints": len(infos),
        "message_bytes": MESSAGE,
        "bytes_per_turn_early": round(early),
        "bytes_per_turn_late": round(late),
        "late_over_early": round(late / early, 2),
        "stored_bytes": sum(by_superstep.values()),
        "conversation_bytes": turns * MESSAGE,
    }


async def timed(workflow: plait.Workflow, message: Any) -> float:
    start = time.perf_counter()
    await workflow.run(message)
    return time.perf_counter() - start


async def turn_overhead(turns: int, repeat: int) -> dict[str, Any]:
    team, bare = chat(turns, sized=False), bare_loop(2 * turns + 1)
    await timed(team, "warm up")
    await timed(bare, 0)
    team_times, bare_times = [], []
    for _ in range(repeat):  # interleaved: the machine's load falls on both alike
        team_times.append(await timed(team, "go"))
        bare_times.append(await timed(bare, 0))
    per_turn = statistics.median(team_times) / turns * 1000
    bare_per_turn = statistics.median(bare_times) / turns * 1000
    return {
        "bench": "turn_overhead",
        "turns": turns,
        "repeat": repeat,
        "per_turn_ms": round(per_turn, 4),
        "bare_per_turn_ms": round(bare_per_turn, 4),
        "team_ms": round(per_turn - bare_per_turn, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.turns < 10 + WINDOW:
        parser.error(f"--turns must be at least {10 + WINDOW}")

    async def both() -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            growth = await checkpoint_growth(args.turns, Path(tmp))
        return [growth, await turn_overhead(args.turns, args.repeat)]

    records = anyio.run(both)
    for record in records:
        print(json.dumps(record))
    growth, overhead = records
    if args.table:
        print()
        print("| turns | bytes/turn at turn 10 | at the end | ratio | ms/turn | bare loop | team |")
        print("|---|---|---|---|---|---|---|")
        print(
            f"| {args.turns} | {growth['bytes_per_turn_early']} | "
            f"{growth['bytes_per_turn_late']} | {growth['late_over_early']} | "
            f"{overhead['per_turn_ms']} | {overhead['bare_per_turn_ms']} | "
            f"{overhead['team_ms']} |"
        )
    ok = growth["late_over_early"] <= 2 and overhead["per_turn_ms"] < 1
    if not ok:
        print("a bound of issue 37 does not hold", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
