"""Magentic teams (plait-teams): what a round costs a checkpoint, with each participant's
own conversation in the manager's state, and the time per round.

    python tests/benchmarks/bench_magentic.py                  # 200 rounds, both measures
    python tests/benchmarks/bench_magentic.py --rounds 40 --repeat 3 --table

The methods of ``bench_teams.py`` (its byte accounting and its bare loop), on a Magentic
team of two scripted participants and a scripted manager whose ledgers are dicts, checked
against their schemas every round as an LLM's would be. Prints JSON lines (``--table``: a
Markdown table too); exits 1 when a bound of issue 37 does not hold.

* ``checkpoint_growth``: ``--rounds`` rounds, each answer a distinct 1 KB message, a
  checkpoint per superstep into SQLite. A round's bytes are its two checkpoints' (the
  speaker's superstep and the manager's), each checkpoint's encoded bytes plus the blobs it
  reaches that no earlier checkpoint did. The manager's state holds the team's
  conversation and each participant's own: a checkpoint that stored them whole would grow
  with the round; the bound is the last rounds within 2x of rounds 10-17.
* ``round_overhead``: the same team with answers at once and no checkpoint: the run's time
  per round (manager, ledger checks, the turn, two supersteps), against a bare loop of two
  executors for the same supersteps. The bound: under 1 ms a round. Medians of
  ``--repeat``, interleaved.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import plait
from bench_teams import MESSAGE, WINDOW, bare_loop, text, timed
from plait_durable import blob_refs, encode_checkpoint, load_blob, open_store
from plait_teams import Conversation, MagenticBuilder, MagenticContext


class Manager:
    """Plans once; the researcher and the writer in turn; done after ``rounds`` rounds."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    async def plan(self, context: MagenticContext) -> dict[str, str]:
        return {"facts": "tides", "plan": "research, then write, in turn"}

    async def progress(self, context: MagenticContext) -> dict[str, Any]:
        speaker = ("researcher", "writer")[context.round % 2]
        return {
            "is_request_satisfied": context.round >= self.rounds,
            "is_in_loop": False,
            "is_progress_being_made": True,
            "next_speaker": speaker,
            "instruction": f"round {context.round + 1}",
        }

    async def final_answer(self, context: MagenticContext) -> str:
        return "done"


def team(rounds: int, *, sized: bool) -> plait.Workflow:
    async def researcher(conversation: Conversation) -> str:
        return text(len(conversation)) if sized else "r"

    async def writer(conversation: Conversation) -> str:
        return text(len(conversation)) if sized else "w"

    return (
        MagenticBuilder("bench")
        .participants({"researcher": researcher, "writer": writer})
        .with_manager(Manager(rounds), max_round_count=rounds + 1)
        .build()
    )


async def checkpoint_growth(rounds: int, tmp: Path) -> dict[str, Any]:
    url = f"sqlite:///{tmp / 'magentic.db'}"
    result = await team(rounds, sized=True).run("the tides", checkpoint=url)
    # the task, the plan, an instruction and an answer a round, the final answer
    assert len(result.outputs[0]) == 2 + 2 * rounds + 1, len(result.outputs[0])
    store: Any = open_store(url)
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

    def round_bytes(n: int) -> int:
        # round n's turn is superstep 2n; the manager's next round is 2n + 1
        return by_superstep.get(2 * n, 0) + by_superstep.get(2 * n + 1, 0)

    early = statistics.mean(round_bytes(n) for n in range(10, 10 + WINDOW))
    late = statistics.mean(round_bytes(n) for n in range(rounds - WINDOW + 1, rounds + 1))
    return {
        "bench": "magentic_checkpoint_growth",
        "rounds": rounds,
        "checkpoints": len(infos),
        "message_bytes": MESSAGE,
        "bytes_per_round_early": round(early),
        "bytes_per_round_late": round(late),
        "late_over_early": round(late / early, 2),
    }


async def round_overhead(rounds: int, repeat: int) -> dict[str, Any]:
    magentic, bare = team(rounds, sized=False), bare_loop(2 * rounds + 2)
    await timed(magentic, "warm up")
    await timed(bare, 0)
    team_times, bare_times = [], []
    for _ in range(repeat):  # interleaved: the machine's load falls on both alike
        team_times.append(await timed(magentic, "go"))
        bare_times.append(await timed(bare, 0))
    per_round = statistics.median(team_times) / rounds * 1000
    bare_per_round = statistics.median(bare_times) / rounds * 1000
    return {
        "bench": "magentic_round_overhead",
        "rounds": rounds,
        "repeat": repeat,
        "per_round_ms": round(per_round, 4),
        "bare_per_round_ms": round(bare_per_round, 4),
        "team_ms": round(per_round - bare_per_round, 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.rounds < 10 + WINDOW:
        parser.error(f"--rounds must be at least {10 + WINDOW}")

    async def both() -> list[dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            growth = await checkpoint_growth(args.rounds, Path(tmp))
        return [growth, await round_overhead(args.rounds, args.repeat)]

    records = anyio.run(both)
    for record in records:
        print(json.dumps(record))
    growth, overhead = records
    if args.table:
        print()
        print("| rounds | bytes/round at round 10 | at the end | ratio | ms/round | bare loop |")
        print("|---|---|---|---|---|---|")
        print(
            f"| {args.rounds} | {growth['bytes_per_round_early']} | "
            f"{growth['bytes_per_round_late']} | {growth['late_over_early']} | "
            f"{overhead['per_round_ms']} | {overhead['bare_per_round_ms']} |"
        )
    ok = growth["late_over_early"] <= 2 and overhead["per_round_ms"] < 1
    if not ok:
        print("a bound of issue 37 does not hold", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
