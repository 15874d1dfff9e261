"""Resume time across Plait versions: what issue 25's "resume ≤ today's time" compares.

    python tests/benchmarks/bench_resume_versions.py --store file|sqlite [--steps 1000]
        [--repeat 15] [--tag TAG]

One store, whatever Plait is importable: the 1,000-step append loop of
``bench_checkpoint_growth.py`` (a list carried in the message, 2 KB appended per step, a
checkpoint per superstep) run once into a fresh temporary store, then resumed ``--repeat``
times from the checkpoint before the last (each resume runs the last step), timed as
``wf.resume(checkpoint_id, checkpoint=url)`` with the store opened inside the timing. Prints
one JSON line: median and minimum CPU (``time.process_time``) and wall ms per resume, the
bytes on disk, the commit it ran. It runs unchanged on a checkout from before checkpoint
blobs (628f91d, where ``open_store`` was ``plait.spi``'s), so the same command in two
environments, alternated round by round, compares the versions:

    git worktree add --detach /tmp/old 628f91d && cd /tmp/old &&
        UV_PROJECT_ENVIRONMENT=/tmp/oldenv bash .ci/uv sync --locked --all-packages \
        --group dev --no-install-package llama-cpp-python
    for round in 1 2 3 4 5 6; do for store in file sqlite; do for env in /tmp/oldenv .venv; do
        $env/bin/python tests/benchmarks/bench_resume_versions.py --store $store; done; done; done

The inline run of the old version stores about 1 GB; the temporary store is removed.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import plait
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder

try:  # since the checkpoint code left the kernel
    from plait_durable import open_store

    OPEN_STORE = "plait_durable.open_store"
except ImportError:  # before (628f91d)
    from plait.spi import open_store  # type: ignore[attr-defined,no-redef]

    OPEN_STORE = "plait.spi.open_store"

MESSAGE = 2048


def message(i: int) -> str:
    """The ``i``-th message: 2 KB of text, as in bench_checkpoint_growth.py."""
    return (f"message {i}: " + "lorem ipsum dolor sit amet " * 80)[:MESSAGE]


def append_workflow(steps: int) -> plait.Workflow:
    @executor(id="agent")
    async def agent(transcript: list[str], ctx: WorkflowContext[list[str], int]) -> None:
        grown = [*transcript, message(len(transcript))]
        if len(grown) >= steps:
            await ctx.yield_output(len(grown))
        else:
            await ctx.send_message(grown)

    builder = WorkflowBuilder("append_message", max_supersteps=steps + 2)
    builder.add_executor(agent).add_edge(agent, agent)
    return builder.set_start(agent).build()


def disk_bytes(path: Path) -> int:
    if path.is_file():
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def measure(url: str, steps: int, repeat: int) -> dict[str, Any]:
    wf = append_workflow(steps)
    start = time.perf_counter()
    result = await wf.run([], checkpoint=url)
    run_s = time.perf_counter() - start
    assert result.outputs == [steps], result.outputs
    store = open_store(url)
    try:
        infos = list(await store.list(result.run_id))
    finally:
        await store.aclose()
    count = len(infos)
    target = infos[-2].checkpoint_id
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        again = await wf.resume(target, checkpoint=url)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        assert again.outputs == [steps], again.outputs

    def ms(values: list[float], how: Any) -> float:
        return round(how(values) * 1000, 2)

    return {
        "checkpoints": count,
        "run_s": round(run_s, 2),
        "resume_cpu_ms_median": ms(cpu, statistics.median),
        "resume_cpu_ms_min": ms(cpu, min),
        "resume_wall_ms_median": ms(wall, statistics.median),
        "resume_wall_ms_min": ms(wall, min),
        "resume_cpu_ms_all": [round(x * 1000, 2) for x in cpu],
        "resume_wall_ms_all": [round(x * 1000, 2) for x in wall],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", choices=["file", "sqlite"], required=True)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    src = Path(plait.__file__).resolve().parent
    commit = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="resume_ab_", ignore_cleanup_errors=True) as tmp:
        path = Path(tmp) / ("runs.db" if args.store == "sqlite" else "runs")
        url = f"sqlite:///{path}" if args.store == "sqlite" else f"file://{path}"
        row = asyncio.run(measure(url, args.steps, args.repeat))
        row["disk_bytes"] = disk_bytes(path)
    print(
        json.dumps(
            {
                "tag": args.tag,
                "store": args.store,
                "steps": args.steps,
                "repeat": args.repeat,
                "plait_version": getattr(plait, "__version__", None),
                "commit": commit,
                "plait_src": str(src),
                "open_store": OPEN_STORE,
                **row,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
