#!/usr/bin/env python3
"""Run Plait's benchmark workloads side by side with LangGraph's and MAF's.

Usage (from the repository root)::

    python tests/benchmarks/peers/compare.py [--frameworks plait,langgraph,maf]
        [--workloads chain1000,fanout1000] [--repeat 5] [--n N] [--table]
        [--alternatives] [--no-mem] [--allow-missing] [--quick]

``python -m tests.benchmarks.peers.compare`` works too.

Interface of a framework module (``tests/benchmarks/workloads_plait.py`` for Plait,
``tests/benchmarks/peers/peer_*.py`` for the peers):

* ``NAME: str`` and ``VERSION: str`` (the installed package's version);
* ``WORKLOADS: dict[str, Callable[[int], Callable[[], Any]]]``: a factory taking the size
  ``n`` does all set-up and returns a zero-argument sync callable performing one complete
  run and returning its result value;
* optional ``NOTES: dict[str, str]`` (copied into each output row's ``note``),
  ``ALTERNATIVES: dict[str, dict[str, factory]]`` (other API choices, benchmarked as
  ``NAME[variant]`` with ``--alternatives``) and ``SIZES: dict[str, int]`` (default sizes of
  workloads this harness does not know);
* the returned callable may carry a ``close()`` attribute: the harness calls it once it is
  done with that callable, outside any timed region.

Method: for each workload every framework's callable is set up first; then each is run once
as a warm-up, then ``--repeat`` timed runs interleave the frameworks round-robin (plait,
langgraph, maf, plait, ...) in this one process, with ``gc.collect()`` before every run and
``time.perf_counter`` around it. Reported: the median, the median per hop (median / n, in
microseconds) and, from one more run per framework under ``tracemalloc`` (never during timed
runs), the peak of Python allocations made during the run, in MiB (allocations by C
libraries such as SQLite itself are not seen). Every run's result must equal the expected
value and Plait's result; a mismatch exits with status 1 naming the framework and workload.

Output: one JSON line per (framework, workload) on stdout, then a Markdown table on stderr
(on stdout, after the JSON lines, with ``--table``), with each framework's median divided by
Plait's (> 1 means Plait is faster).

Exit status: 0 on success; 1 on a wrong result or a failing run; 2 on bad arguments; 3 if a
requested framework could not be imported (the others still run; ``--allow-missing``
makes that status 0).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import json
import statistics
import sys
import time
import traceback
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

_REPO_ROOT = Path(__file__).resolve().parents[3]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

Run = Callable[[], Any]
Factory = Callable[[int], Run]

#: Framework name -> module implementing the interface above.
FRAMEWORK_MODULES: dict[str, str] = {
    "plait": "tests.benchmarks.workloads_plait",
    "langgraph": "tests.benchmarks.peers.peer_langgraph",
    "maf": "tests.benchmarks.peers.peer_maf",
}

#: Workloads run by default, in this order, with their default sizes.
DEFAULT_SIZES: dict[str, int] = {
    "chain1000": 1000,
    "fanout1000": 1000,
    "loop10000": 10000,
    "chain100_ckpt_memory": 100,
    "chain100_ckpt_sqlite": 100,
    "build1000": 1000,
    "fanout_async": 1000,
}

#: The size every workload runs at with ``--quick``.
QUICK_SIZE = 10

BASELINE = "plait"

EXIT_MISMATCH = 1
EXIT_MISSING = 3


class BenchmarkFailure(Exception):
    """A run failed or returned a wrong result; the message names framework and workload."""


def expected_result(workload: str, n: int) -> Any | None:
    """The result every framework must return for ``workload`` at size ``n``, if known."""
    if workload in DEFAULT_SIZES:
        return n
    return None


@dataclass
class Framework:
    """A loaded framework module."""

    name: str
    version: str
    workloads: dict[str, Factory]
    notes: dict[str, str] = field(default_factory=dict)
    alternatives: dict[str, dict[str, Factory]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


@dataclass
class Participant:
    """One (framework or framework variant, workload) pair being measured."""

    label: str
    framework: Framework
    factory: Factory
    note: str | None
    run: Run | None = None
    times: list[float] = field(default_factory=list)
    peak_bytes: int | None = None
    result: Any = None


def load_framework(name: str) -> Framework:
    """Import framework ``name``; raises :class:`ImportError` if it is not available."""
    if name not in FRAMEWORK_MODULES:
        raise ImportError(f"unknown framework {name!r}")
    module = importlib.import_module(FRAMEWORK_MODULES[name])
    return Framework(
        name=str(module.NAME),
        version=str(module.VERSION),
        workloads=dict(module.WORKLOADS),
        notes=dict(getattr(module, "NOTES", {})),
        alternatives={k: dict(v) for k, v in getattr(module, "ALTERNATIVES", {}).items()},
        sizes=dict(getattr(module, "SIZES", {})),
    )


def _close(run: Run | None) -> None:
    close = getattr(run, "close", None)
    if callable(close):
        close()


class Bench:
    """Runs the workloads for a set of frameworks and checks their results."""

    def __init__(
        self,
        frameworks: list[Framework],
        *,
        repeat: int,
        warmup: bool,
        measure_memory: bool,
        alternatives: bool,
        size_override: int | None,
        out: TextIO,
    ) -> None:
        self.frameworks = frameworks
        self.repeat = repeat
        self.warmup = warmup
        self.measure_memory = measure_memory
        self.alternatives = alternatives
        self.size_override = size_override
        self.out = out
        self.rows: list[dict[str, Any]] = []
        self.notices: list[str] = []

    def size_of(self, workload: str) -> int:
        """The size ``workload`` runs at."""
        if self.size_override is not None:
            return self.size_override
        if workload in DEFAULT_SIZES:
            return DEFAULT_SIZES[workload]
        for framework in self.frameworks:
            if workload in framework.sizes:
                return framework.sizes[workload]
        raise BenchmarkFailure(f"no default size for workload {workload!r}: pass --n")

    def participants(self, workload: str) -> list[Participant]:
        """Frameworks (and, with --alternatives, their variants) that implement ``workload``."""
        found: list[Participant] = []
        for framework in self.frameworks:
            factory = framework.workloads.get(workload)
            if factory is None:
                self.notices.append(f"{framework.name} has no workload {workload!r}")
                continue
            note = framework.notes.get(workload)
            found.append(Participant(framework.name, framework, factory, note))
            if self.alternatives:
                for variant, alt in framework.alternatives.get(workload, {}).items():
                    label = f"{framework.name}[{variant}]"
                    found.append(Participant(label, framework, alt, f"variant: {variant}"))
        return found

    def run_workload(self, workload: str) -> None:
        """Set up, warm up, time, measure and check every participant of ``workload``."""
        n = self.size_of(workload)
        participants = self.participants(workload)
        if not participants:
            return
        expected = expected_result(workload, n)
        try:
            for p in participants:
                gc.collect()
                p.run = self._call(p, workload, functools.partial(p.factory, n))
            if self.warmup:
                for p in participants:
                    self._timed(p, workload, expected, record=False)
            for _ in range(self.repeat):
                for p in participants:
                    self._timed(p, workload, expected, record=True)
            if self.measure_memory:
                for p in participants:
                    self._traced(p, workload, expected)
            self._cross_check(workload, participants)
        finally:
            for p in participants:
                _close(p.run)
                p.run = None
            gc.collect()
        for p in participants:
            self._emit(p, workload, n)

    def _call(self, p: Participant, workload: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            detail = "".join(traceback.format_exception(exc))
            raise BenchmarkFailure(f"{p.label} failed on {workload}:\n{detail}") from exc

    def _check(self, p: Participant, workload: str, result: Any, expected: Any) -> None:
        if expected is not None and result != expected:
            raise BenchmarkFailure(
                f"result mismatch: framework {p.label}, workload {workload}: "
                f"got {result!r}, expected {expected!r}"
            )
        p.result = result

    def _timed(self, p: Participant, workload: str, expected: Any, *, record: bool) -> None:
        run = p.run
        assert run is not None
        gc.collect()
        start = time.perf_counter()
        result = self._call(p, workload, run)
        elapsed = time.perf_counter() - start
        self._check(p, workload, result, expected)
        if record:
            p.times.append(elapsed)

    def _traced(self, p: Participant, workload: str, expected: Any) -> None:
        run = p.run
        assert run is not None
        gc.collect()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            result = self._call(p, workload, run)
            p.peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self._check(p, workload, result, expected)

    def _cross_check(self, workload: str, participants: list[Participant]) -> None:
        """Every framework's result must equal Plait's (or the first one's without Plait)."""
        reference = next((p for p in participants if p.label == BASELINE), participants[0])
        for p in participants:
            if p.result != reference.result:
                raise BenchmarkFailure(
                    f"result mismatch: framework {p.label}, workload {workload}: "
                    f"got {p.result!r}, {reference.label} got {reference.result!r}"
                )

    def _emit(self, p: Participant, workload: str, n: int) -> None:
        median = statistics.median(p.times)
        row: dict[str, Any] = {
            "framework": p.label,
            "version": p.framework.version,
            "workload": workload,
            "n": n,
            "median_s": median,
            "per_hop_us": round(median / n * 1e6, 3),
            "peak_mem_mb": None if p.peak_bytes is None else round(p.peak_bytes / 2**20, 3),
            "result": p.result,
            "repeats": len(p.times),
            "note": p.note,
        }
        self.rows.append(row)
        print(json.dumps(row, default=repr), file=self.out, flush=True)


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """Render ``rows`` as a Markdown table with each median divided by Plait's."""
    baseline = {r["workload"]: r["median_s"] for r in rows if r["framework"] == BASELINE}
    lines = [
        "| workload | n | framework | version | median (ms) | per hop (µs) | peak mem (MiB) "
        "| ÷ plait |",
        "|---|---:|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        base = baseline.get(r["workload"])
        ratio = "n/a" if not base else f"{r['median_s'] / base:.2f}x"
        mem = "n/a" if r["peak_mem_mb"] is None else f"{r['peak_mem_mb']:.2f}"
        lines.append(
            f"| {r['workload']} | {r['n']} | {r['framework']} | {r['version']} "
            f"| {r['median_s'] * 1e3:.2f} | {r['per_hop_us']:.2f} | {mem} | {ratio} |"
        )
    return "\n".join(lines)


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        description="Benchmark Plait against LangGraph and the Microsoft Agent Framework.",
    )
    parser.add_argument(
        "--frameworks",
        type=_split,
        default=list(FRAMEWORK_MODULES),
        help="comma-separated, run in this order (default: %(default)s)",
    )
    parser.add_argument(
        "--workloads",
        type=_split,
        default=list(DEFAULT_SIZES),
        help="comma-separated (default: all of %(default)s)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="timed runs each (default: 5)")
    parser.add_argument("--n", type=int, default=None, help="run every workload at this size")
    parser.add_argument(
        "--table", action="store_true", help="print the table on stdout instead of stderr"
    )
    parser.add_argument(
        "--alternatives",
        action="store_true",
        help="also run each framework's ALTERNATIVES (slower API choices) as NAME[variant]",
    )
    parser.add_argument("--no-mem", action="store_true", help="skip the tracemalloc run")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="exit 0 even if a requested framework cannot be imported",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: every workload once at n={QUICK_SIZE}, no warm-up, no memory run",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.n is not None and args.n < 1:
        parser.error("--n must be at least 1")
    unknown = [name for name in args.frameworks if name not in FRAMEWORK_MODULES]
    if unknown:
        parser.error(f"unknown framework(s) {unknown}; known: {list(FRAMEWORK_MODULES)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = parse_args(argv)
    frameworks: list[Framework] = []
    missing: list[str] = []
    for name in args.frameworks:
        try:
            frameworks.append(load_framework(name))
        except ImportError as exc:
            missing.append(name)
            where = FRAMEWORK_MODULES[name]
            print(f"compare: {name} is missing ({where}: {exc})", file=sys.stderr)
    if not frameworks:
        print("compare: no framework could be imported", file=sys.stderr)
        return EXIT_MISSING

    bench = Bench(
        frameworks,
        repeat=1 if args.quick else args.repeat,
        warmup=not args.quick,
        measure_memory=not (args.quick or args.no_mem),
        alternatives=args.alternatives,
        size_override=QUICK_SIZE if args.quick else args.n,
        out=sys.stdout,
    )
    try:
        for workload in args.workloads:
            bench.run_workload(workload)
    except BenchmarkFailure as failure:
        print(f"compare: {failure}", file=sys.stderr)
        return EXIT_MISMATCH
    finally:
        support = sys.modules.get("tests.benchmarks.peers._support")
        if support is not None:
            support.close_all()

    table_out = sys.stdout if args.table else sys.stderr
    print(markdown_table(bench.rows), file=table_out)
    for notice in bench.notices:
        print(f"note: {notice}", file=sys.stderr)
    if missing:
        print(f"compare: not run, missing: {', '.join(missing)}", file=sys.stderr)
        if not args.allow_missing:
            return EXIT_MISSING
    return 0


if __name__ == "__main__":
    sys.exit(main())
