"""What tracing costs: chain1000 without plait-otel, with it idle, and with it on.

    python tests/benchmarks/bench_otel.py [--n 1000] [--repeat 30] [--rounds 3] [--quick]

Prints one JSON line per mode (seconds per run: the minimum and the median over every
timed run of every round, after a warm-up; microseconds per hop; the ratio of the minimum
to the ``without`` mode's):

* ``without`` — ``PLAIT_DISABLE_PLUGINS=otel``: the kernel runs no observer, the plain code;
* ``idle`` — the plugin loaded, OpenTelemetry not set up (the default of ``plait[all]``);
* ``unsampled`` — the SDK with an ``ALWAYS_OFF`` sampler: the run span is not recorded, so
  the run is not observed;
* ``sdk`` — the SDK recording every span (1 + n supersteps + n invocations per run), through
  a ``SimpleSpanProcessor`` into an exporter that drops them: the cost of making the spans;
* ``sdk_batch`` — the same through a ``BatchSpanProcessor`` (what production uses; its
  export thread competes for the interpreter).

Each mode runs in a fresh interpreter (the process-wide tracer provider can be set once),
and the modes take turns ``--rounds`` times, so a noisy machine hits them alike.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODES = ("without", "idle", "unsampled", "sdk", "sdk_batch")


def _setup(mode: str) -> None:
    if mode in ("without", "idle"):
        return
    import plait_otel
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider(sampler=ALWAYS_OFF if mode == "unsampled" else ALWAYS_ON)
    processor = BatchSpanProcessor if mode == "sdk_batch" else SimpleSpanProcessor
    provider.add_span_processor(processor(Drop()))
    plait_otel.instrument(tracer_provider=provider)


def child(mode: str, n: int, repeat: int) -> None:
    """Time ``repeat`` runs of chain(n) in this process; print the times as JSON."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import workloads_plait

    _setup(mode)
    call = workloads_plait.chain(n)
    if call() != n:  # warm-up, and the correctness check
        raise SystemExit(f"chain{n} gave a wrong result in mode {mode}")
    if mode != "without":
        import plait_otel

        if plait_otel.is_instrumented() is (mode == "idle"):
            raise SystemExit(f"mode {mode}: the plugin is not in the expected state")
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    print(json.dumps(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n=10, one run per mode")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.repeat, args.rounds = 10, 1, 1
    if args.child:
        child(args.child, args.n, args.repeat)
        return 0
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.rounds):
        for mode in MODES:
            env = dict(os.environ)
            disabled = [p for p in env.get("PLAIT_DISABLE_PLUGINS", "").split(",") if p]
            if mode == "without":
                disabled.append("otel")
            env["PLAIT_DISABLE_PLUGINS"] = ",".join(disabled)
            command = [sys.executable, __file__, "--child", mode]
            command += ["--n", str(args.n), "--repeat", str(args.repeat)]
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if done.returncode != 0:
                print(f"mode {mode} failed:\n{done.stderr}", file=sys.stderr)
                return 1
            times[mode].extend(json.loads(done.stdout.splitlines()[-1]))
    base = min(times["without"])
    for mode in MODES:
        best = min(times[mode])
        record = {
            "framework": "plait",
            "workload": f"chain{args.n}",
            "mode": mode,
            "n": args.n,
            "min_s": round(best, 6),
            "median_s": round(statistics.median(times[mode]), 6),
            "per_hop_us": round(best / args.n * 1e6, 3),
            "vs_without": round(best / base, 3),
            "runs": len(times[mode]),
        }
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
