"""What a budget costs: per model call with a budget, and per run without one.

    python tests/benchmarks/bench_budgets.py [--n 100000] [--repeat 9] [--depth 3]
    python tests/benchmarks/bench_budgets.py --instructions [--n 2000] [--depth 3]
    python tests/benchmarks/bench_budgets.py --no-budget [--runs 2]

The first form prints one JSON line per mode: microseconds per call (the minimum and the
median of ``--repeat`` timed rounds of ``--n`` calls, after a warm-up):

* ``passthrough`` — an answerer of the outside-call seam that passes the call on: the floor
  any answerer pays (the coroutine, the ``await`` of the model's stand-in);
* ``reserve`` — ``InvocationBudget.call`` on an ``llm.prompt`` request, as the outside-call
  seam passes plait-llm's agent's model call to it (the prompt's size estimated, the worst
  case priced, checked and reserved against ``--depth`` nested budgets: run, fragment, node,
  the call passed on, and settled from the answer's usage);
* ``barrier`` — the same, plus the superstep barrier, once per call (a barrier releases
  every call of its superstep at once, so this is the most it adds).

``--instructions`` counts the CPU instructions of each mode per call instead, with
callgrind (``valgrind`` must be installed): each mode runs ``--n`` and twice ``--n`` calls in a
fresh interpreter (``PYTHONHASHSEED=0``), and the difference over ``--n`` is the cost of one
call, start-up cancelled. Instructions do not depend on the machine's load; times do.

``--no-budget`` counts the instructions of ``chain(1000)`` and ``fanout(1000)`` of
``workloads_plait.py`` (one run, and two, in a fresh interpreter each: the difference is a
run) with plait-budgets installed and no budget set, and with it blocked
(``PLAIT_DISABLE_PLUGINS=budgets``): what a run without a budget pays for the plugin
(issue 40: within 2%).

The goal (issue 40) is under 5 µs per reservation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

MODES = ("passthrough", "reserve", "barrier")
WORKLOADS = ("chain", "fanout")


def _meter(depth: int) -> Any:
    from plait_budgets import Budget, Ledger, Price
    from plait_budgets._observer import InvocationBudget

    price = Price(input=2.5, output=10.0, max_output_tokens=4096)
    ledger = Ledger(lambda model_id: price)
    names = ["run", "research/", "research/writer"][:depth]
    accounts = tuple(
        ledger.account(name, Budget(usd=Decimal(10**9), tokens=10**15, model_calls=10**12))
        for name in names
    )
    return ledger, InvocationBudget(ledger, accounts, "research/writer")


class _Passthrough:
    async def call(self, kind: str, request: Any, invoke: Any) -> Any:
        return await invoke(request)


def _round(n: int, depth: int, mode: str) -> float:
    import anyio

    ledger, budget = _meter(depth)
    answerer = _Passthrough() if mode == "passthrough" else budget
    barrier = mode == "barrier"
    prompt = "Summarize the findings of the research team in three sentences. " * 4
    request = {"model": "gpt-4o", "prompt": prompt, "options": {"max_tokens": 256}}
    answer = {"text": "...", "usage": {"input": 60, "output": 120}}

    async def invoke(request: Any) -> Any:
        return answer

    async def calls() -> float:
        started = time.perf_counter()
        for _ in range(n):
            await answerer.call("llm.prompt", request, invoke)
            if barrier:
                ledger.barrier()
        return time.perf_counter() - started

    return anyio.run(calls)


def _workload(name: str, runs: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import workloads_plait

    call = getattr(workloads_plait, name)(1000)
    for _ in range(runs):
        if call() != 1000:  # (both add up to 1000)
            raise SystemExit(f"{name}(1000) gave a wrong result")


def _instructions(args: list[str], env: dict[str, str] | None = None) -> int:
    """The instructions ``python THIS_FILE ARGS`` executes, counted by callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                __file__,
                *args,
            ],
            capture_output=True,
            text=True,
            env={**(env or os.environ), "PYTHONHASHSEED": "0"},
            check=False,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind of {args} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def _per_call(n: int, depth: int) -> None:
    for mode in MODES:
        child = ["--child-call", mode, "--depth", str(depth)]
        once = _instructions([*child, "--n", str(n)])
        twice = _instructions([*child, "--n", str(2 * n)])
        print(
            json.dumps(
                {
                    "mode": mode,
                    "depth": depth,
                    "n": n,
                    "instructions_per_call": round((twice - once) / n),
                }
            ),
            flush=True,
        )


def _no_budget(runs: int) -> None:
    disabled = [p for p in os.environ.get("PLAIT_DISABLE_PLUGINS", "").split(",") if p]
    for workload in WORKLOADS:
        per_run = {}
        for plugin in ("installed", "blocked"):
            env = dict(os.environ)
            env["PLAIT_DISABLE_PLUGINS"] = ",".join(
                disabled + (["budgets"] if plugin == "blocked" else [])
            )
            once = _instructions(["--child-run", workload, "--runs", str(runs)], env)
            twice = _instructions(["--child-run", workload, "--runs", str(2 * runs)], env)
            per_run[plugin] = (twice - once) / runs
        print(
            json.dumps(
                {
                    "workload": f"{workload}1000",
                    "instructions_per_run_installed": round(per_run["installed"]),
                    "instructions_per_run_blocked": round(per_run["blocked"]),
                    "ratio": round(per_run["installed"] / per_run["blocked"], 4),
                }
            ),
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--depth", type=int, default=3, choices=(1, 2, 3))
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--no-budget", action="store_true")
    parser.add_argument("--child-call", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--child-run", choices=WORKLOADS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_call:
        _round(args.n, args.depth, args.child_call)
        return
    if args.child_run:
        _workload(args.child_run, args.runs)
        return
    if args.instructions:
        _per_call(args.n or 2000, args.depth)
        return
    if args.no_budget:
        _no_budget(args.runs)
        return
    n = args.n or 100_000
    for mode in MODES:
        _round(min(n, 1000), args.depth, mode)  # warm-up
        times = [_round(n, args.depth, mode) for _ in range(args.repeat)]
        per_call = [t / n * 1e6 for t in times]
        print(
            json.dumps(
                {
                    "mode": mode,
                    "depth": args.depth,
                    "n": n,
                    "min_us": round(min(per_call), 3),
                    "median_us": round(statistics.median(per_call), 3),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
