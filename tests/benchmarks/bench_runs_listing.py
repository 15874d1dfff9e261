"""``plait runs`` on a store of many runs, with and without the columns plugins add
(issue 39: the ``VERSION`` column must keep the listing fast).

    python tests/benchmarks/bench_runs_listing.py [--runs 1000] [--repeat 9] [--store DB]
        [--plait PATH ...] [--quick]

A SQLite store is filled with ``--runs`` finished runs of a versioned two-step workflow
(or ``--store DB``, an existing one, is used as it is), then ``plait runs --checkpoint
URL`` lists it in a new process ``--repeat`` times for each variant, rounds interleaved:
this checkout's ``plait`` with every plugin (``columns``: plait-versions adds
``VERSION``), the same with plait-versions disabled (``no_columns``,
``PLAIT_DISABLE_PLUGINS=versions``), and each ``--plait PATH`` given (another checkout's
``plait``, for a before/after). Bytecode is cached outside the checkouts for all alike
(the first round writes it and is not counted). One JSON line per variant: the runs
listed, the median wall and CPU seconds (user + system: on a busy machine wall time waits
for cores, CPU time does not). Nothing is asserted: numbers depend on the machine.
``--quick`` lists 20 runs once.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@executor(id="take")
async def take(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


@executor(id="give")
async def give(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


async def _fill(url: str, runs: int) -> None:
    workflow = WorkflowBuilder("listed", version=3).add_edge(take, give).set_start(take).build()
    for i in range(runs):
        await workflow.run(f"m{i}", checkpoint=url)


def _time(plait: str, url: str, env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [plait, "runs", "--checkpoint", url],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--store", type=Path, default=None, help="an existing SQLite file")
    parser.add_argument("--plait", action="append", default=[], help="another plait to time")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.repeat = 20, 1
    scratch = Path(tempfile.mkdtemp(prefix="bench-runs-"))
    database = args.store or scratch / "runs.db"
    url = f"sqlite:///{database}"
    if args.store is None:
        anyio.run(_fill, url, args.runs)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    here = str(Path(sys.executable).with_name("plait"))
    variants = {
        "columns": (here, env),
        "no_columns": (here, {**env, "PLAIT_DISABLE_PLUGINS": "versions"}),
        **{f"plait:{path}": (path, env) for path in args.plait},
    }
    for plait, variant_env in variants.values():  # writes the bytecode: not counted
        _time(plait, url, variant_env)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for _ in range(args.repeat):
        for name, (plait, variant_env) in variants.items():
            times[name].append(_time(plait, url, variant_env))
    for name, found in times.items():
        print(
            json.dumps(
                {
                    "measure": "plait_runs",
                    "variant": name,
                    "store": url,
                    "repeat": args.repeat,
                    "median_wall_s": round(statistics.median(w for w, _ in found), 3),
                    "median_cpu_s": round(statistics.median(c for _, c in found), 3),
                }
            )
        )


if __name__ == "__main__":
    main()
