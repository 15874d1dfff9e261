"""Plait's own benchmarks: prints one JSON line per workload.

    python tests/benchmarks/run.py [--repeat 7] [--workloads chain1000,loop10000] [--quick]
                                   [--schedule pipelined]

Median seconds over ``--repeat`` timed runs after one warm-up, and microseconds per hop
(per executor invocation). ``--quick`` runs each workload once at a tiny size, as a smoke
test. Compare with LangGraph and MAF with ``tests/benchmarks/peers/compare.py``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workloads_plait as plait_side

# workload -> (size, hops per run for that size)
SIZES = {
    "chain1000": (1000, lambda n: n),
    "fanout1000": (1000, lambda n: n + 2),
    "loop10000": (10000, lambda n: n),
    "wide_loop": (100, lambda n: n * 100 + 1),
    "build1000": (1000, lambda n: n),
    "fanout_async": (1000, lambda n: n + 2),
    "chain100_ckpt_memory": (100, lambda n: n),
    "chain100_ckpt_sqlite": (100, lambda n: n),
}
EXPECTED = {"wide_loop": lambda n: n}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--workloads", default="chain1000,fanout1000,loop10000,wide_loop")
    parser.add_argument("--quick", action="store_true", help="each workload once at n=10")
    parser.add_argument(
        "--schedule", choices=["superstep", "pipelined"], help="the runs' schedule (issue 22)"
    )
    args = parser.parse_args(argv)
    if args.schedule is not None:
        plait_side.RUN_OPTIONS["schedule"] = args.schedule
    names = [w for w in args.workloads.split(",") if w]
    for name in names:
        size, hops = SIZES[name]
        n = 10 if args.quick else size
        call = plait_side.WORKLOADS[name](n)
        expected = EXPECTED.get(name, lambda n: n)(n)
        result = call()  # warm-up, and the correctness check
        if result != expected:
            print(f"{name}: expected {expected}, got {result}", file=sys.stderr)
            return 1
        times = []
        for _ in range(1 if args.quick else args.repeat):
            gc.collect()
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        record = {
            "framework": "plait",
            "schedule": args.schedule or "superstep",
            "workload": name,
            "n": n,
            "median_s": round(median, 6),
            "per_hop_us": round(median / hops(n) * 1e6, 3),
            "repeats": len(times),
            "result": result,
        }
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
