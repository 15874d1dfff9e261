"""Ray placement: the speed-up on CPU-bound work, and what each invocation costs.

    python tests/benchmarks/bench_ray.py [--width 64] [--ms 50] [--trivial 200] [--repeat 3]

Starts a local Ray cluster with 2 CPUs (no dashboard) and prints one JSON line per
measurement, then a summary line with the two targets:

* ``fanout_cpu`` — a fan-out of ``--width`` executors each doing ``--ms`` ms of pure-Python
  work, local (anyio tasks, one interpreter) versus ``placement="ray"``; target speed-up
  >= 1.7x on 2 CPUs. ``ray_tasks_speedup`` is what bare Ray tasks doing the same work get
  in the same run: the parallelism the machine gives right now (a busy shared machine
  gives less than 2x to anyone);
* ``overhead`` — trivial executors with Ray placement, per invocation: ``sequential`` (one
  invocation per superstep, ``--trivial`` supersteps) and ``batched`` (``--trivial``
  invocations in one superstep), each against Ray's own bare task round trip measured in
  the same run (``ray.get(f.remote())`` in a loop; ``ray.get([f.remote() ...])``); target
  <= 1.5x.

Times are the median of ``--repeat`` runs after a warm-up run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _median(fn: Any, repeat: int) -> float:
    fn()  # warm-up: actors start, executors are rebuilt
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _calibrate(ms: float) -> int:
    from ray_workloads import burn

    rounds = 100_000
    while True:
        start = time.perf_counter()
        burn(rounds)
        took = time.perf_counter() - start
        if took > 0.02:
            return int(rounds * (ms / 1000) / took)
        rounds *= 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--ms", type=float, default=50.0)
    parser.add_argument("--trivial", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run each")
    args = parser.parse_args(argv)
    if args.quick:
        args.width, args.ms, args.trivial, args.repeat = 4, 5.0, 10, 1
    sys.path.insert(0, str(HERE))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import anyio
    import ray
    import ray_workloads as w

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="WARNING",
        runtime_env={"env_vars": {"PYTHONPATH": str(HERE)}},
    )
    try:
        results = _measure(args, w, anyio, ray)
    finally:
        ray.shutdown()
    for line in results:
        print(json.dumps(line))
    return 0


def _measure(args: Any, w: Any, anyio: Any, ray: Any) -> list[dict[str, Any]]:
    rounds = _calibrate(args.ms)
    out: list[dict[str, Any]] = []

    # -- CPU-bound fan-out: local versus Ray --------------------------------------------
    expected = w.burn(rounds) * args.width
    times = {}
    for placement in (None, "ray"):
        wf = w.fan(args.width, w.Burn, placement)

        def run(wf: Any = wf) -> None:
            result = anyio.run(wf.run, rounds)
            assert w.outputs_sum(result) == expected, result

        times[placement or "local"] = _median(run, args.repeat)
    burn_task = ray.remote(num_cpus=1)(w.burn)

    def bare_tasks() -> None:
        assert sum(ray.get([burn_task.remote(rounds) for _ in range(args.width)])) == expected

    times["ray_tasks"] = _median(bare_tasks, args.repeat)
    speedup = times["local"] / times["ray"]
    out.append(
        {
            "measure": "fanout_cpu",
            "width": args.width,
            "ms_each": args.ms,
            "local_s": round(times["local"], 3),
            "ray_s": round(times["ray"], 3),
            "speedup": round(speedup, 2),
            "ray_tasks_s": round(times["ray_tasks"], 3),
            "ray_tasks_speedup": round(times["local"] / times["ray_tasks"], 2),
        }
    )

    # -- per-invocation overhead: Plait with Ray placement versus bare Ray tasks --------
    n = args.trivial

    @ray.remote
    def nothing(x: int) -> int:
        return x

    def bare_sequential() -> None:
        for i in range(n):
            ray.get(nothing.remote(i))

    def bare_batched() -> None:
        assert len(ray.get([nothing.remote(i) for i in range(n)])) == n

    hops = w.hops("ray", n)
    fan = w.fan(n, w.Echo, "ray")

    def plait_sequential() -> None:
        assert anyio.run(hops.run, n).outputs == [1]

    def plait_batched() -> None:
        assert len(anyio.run(fan.run, 1).outputs) == n

    for mode, bare, plait in (
        ("sequential", bare_sequential, plait_sequential),
        ("batched", bare_batched, plait_batched),
    ):
        bare_t = _median(bare, args.repeat) / n
        plait_t = _median(plait, args.repeat) / n
        out.append(
            {
                "measure": "overhead",
                "mode": mode,
                "n": n,
                "ray_task_ms": round(bare_t * 1000, 3),
                "plait_ray_ms": round(plait_t * 1000, 3),
                "ratio": round(plait_t / bare_t, 2),
            }
        )
    out.append(
        {
            "measure": "summary",
            "speedup": out[0]["speedup"],
            "speedup_target_met": out[0]["speedup"] >= 1.7,
            "overhead_ratios": {o["mode"]: o["ratio"] for o in out[1:]},
            "overhead_target_met": all(o["ratio"] <= 1.5 for o in out[1:]),
        }
    )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
