"""Cold start: what a new process pays before Plait does anything (issue 9).

    python tests/benchmarks/bench_cold_start.py [--repeat 7] [--n 1000] [--no-peers] [--table]
        [--dont-write-bytecode]

Every sample is a new process (``sys.executable``), and the measures are interleaved
round-robin, so a busy machine slows them alike. "Cold" is a new process, not a new
install: the children may write bytecode caches (``PYTHONDONTWRITEBYTECODE`` is dropped from
their environment, as ``pip install`` compiles them anyway) and one unrecorded round goes
first, so the samples find them warm. ``--dont-write-bytecode`` keeps
``PYTHONDONTWRITEBYTECODE=1`` in the children instead: on an environment where no
``__pycache__`` was ever written (an install that did not compile, on a machine that sets
the variable), every sample then compiles every module it imports from source.
One JSON line per measure, the median of ``--repeat`` samples:

- ``startup``: ``python -c pass``, the interpreter alone (the floor under the next two);
- ``import``: ``python -c "import plait"``, the whole process;
- ``help``: ``plait --help``, the console script beside ``sys.executable``
  (``python -m plait_cli --help`` when there is none), the whole process;
- ``build1000``: the first ``build()`` of an ``--n``-executor chain, plugin discovery
  included, run by ``peers/cold_build.py`` and counted from the child's first statement
  (``median_s``; ``import_s`` and ``build_s`` split it; ``process_s`` is the whole
  process's wall time; ``above_libraries_s`` is what Plait adds to ``libraries``). The
  ``libraries`` record is the same child importing only the libraries outside the
  standard library that a cold build imports (attrs, pluggy, typing_extensions; plugin
  discovery's importlib.metadata and packaging only when the plugin manifest is not
  current, as in the first process after an install) and building nothing: the floor
  under Plait's number, which no change to Plait's own code can go below. LangGraph's and MAF's cold
  builds are measured the same way, in the same run, when they are installed (the
  ``bench`` dependency group); a peer that is not installed is skipped and said so on
  stderr (``--no-peers`` skips them all).

Every record also has ``cpu_s``, the whole child process's CPU time (user + system): on a
busy machine it moves less than the wall times.

Targets: ``import`` <= 150 ms, ``help`` <= 250 ms (issue 9), Plait's ``build1000`` <= 150 ms
and at least twice as fast as both peers' (issue 20; its record says
``x_faster_than_<peer>``). Each record says ``target_s`` and ``met``. ``--table`` also prints
a table on stderr. Exit 1 when a child fails or builds the wrong number of executors;
missed targets do not change the exit code (the numbers depend on the machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COLD_BUILD = Path(__file__).resolve().parent / "peers" / "cold_build.py"
PEERS = {"langgraph": "langgraph", "maf": "agent_framework"}
# bytecode caches are written, as after any ordinary install (--dont-write-bytecode: never)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TARGETS = {("plait", "import"): 0.150, ("plait", "help"): 0.250, ("plait", "build1000"): 0.150}


@dataclass
class Measure:
    """One command sampled in fresh processes."""

    framework: str
    name: str
    command: list[str]
    child_reports: bool = False  # the child prints a JSON line of its own timings
    samples: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)

    def sample(self, n: int, *, keep: bool = True) -> str | None:
        """Run the command once (``keep``: record the timings); return an error, or None."""
        used = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            self.command, capture_output=True, text=True, check=False, env=CHILD_ENV
        )
        elapsed = time.perf_counter() - start
        used = _children_cpu() - used
        if done.returncode != 0:
            return f"{self.framework} {self.name}: exit {done.returncode}\n{done.stderr}"
        report: dict[str, Any] = {}
        if self.child_reports:
            report = json.loads(done.stdout.strip().splitlines()[-1])
            if report["result"] != n:
                return f"{self.framework} {self.name}: built {report['result']} executors, not {n}"
        if keep:
            self.samples.append(elapsed)
            self.cpu.append(used)
            if report:
                self.reports.append(report)
        return None

    def record(self, n: int) -> dict[str, Any]:
        process = statistics.median(self.samples)
        record: dict[str, Any] = {
            "framework": self.framework,
            "workload": "cold_start",
            "measure": self.name,
            "median_s": round(process, 6),
            "cpu_s": round(statistics.median(self.cpu), 6),
            "repeats": len(self.samples),
            "command": " ".join(self.command),
        }
        if self.child_reports:
            record["n"] = n
            for key in ("total_s", "import_s", "build_s"):
                record[key.replace("total_s", "median_s")] = round(
                    statistics.median(r[key] for r in self.reports), 6
                )
            record["process_s"] = round(process, 6)
        target = TARGETS.get((self.framework, self.name))
        if target is not None:
            record["target_s"] = target
            record["met"] = record["median_s"] <= target
        return record


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def help_command() -> list[str]:
    script = Path(sys.executable).with_name("plait")
    if script.exists():
        return [str(script), "--help"]
    found = shutil.which("plait")
    return [found, "--help"] if found else [sys.executable, "-m", "plait_cli", "--help"]


def measures(n: int, peers: bool) -> list[Measure]:
    python = sys.executable
    chosen = [
        Measure("python", "startup", [python, "-c", "pass"]),
        Measure("plait", "import", [python, "-c", "import plait"]),
        Measure("plait", "help", help_command()),
        Measure("plait", "build1000", [python, str(COLD_BUILD), "plait", str(n)], True),
        # the kernel's own libraries imported alone, timed like the builds: Plait's floor
        Measure("libraries", "build1000", [python, str(COLD_BUILD), "libraries", str(n)], True),
    ]
    for peer, module in PEERS.items():
        if not peers:
            continue
        if importlib.util.find_spec(module) is None:
            print(
                f"skipped {peer}: {module} is not installed (the bench dependency group: "
                "bash .ci/uv sync --all-packages --group dev --group bench)",
                file=sys.stderr,
            )
            continue
        chosen.append(Measure(peer, "build1000", [python, str(COLD_BUILD), peer, str(n)], True))
    return chosen


#: Plait's cold build must take at most this share of each peer's (issue 20: twice as fast).
PEER_SHARE = 0.5


def compare_with_peers(records: list[dict[str, Any]]) -> None:
    """Add to Plait's ``build1000`` record how many times faster it was than each peer's in
    this run (``x_faster_than_<peer>``); it ``met`` its target only if it was at least
    ``1 / PEER_SHARE`` times faster than every peer measured."""
    builds = {r["framework"]: r for r in records if r["measure"] == "build1000"}
    plait = builds.pop("plait", None)
    floor = builds.pop("libraries", None)
    if plait is None:
        return
    if floor is not None:
        plait["above_libraries_s"] = round(plait["median_s"] - floor["median_s"], 6)
    for peer, record in builds.items():
        plait[f"x_faster_than_{peer}"] = round(record["median_s"] / plait["median_s"], 2)
        if plait["median_s"] > PEER_SHARE * record["median_s"]:
            plait["met"] = False


def table(records: list[dict[str, Any]]) -> str:
    lines = [
        f"{'framework':<10} {'measure':<10} {'median ms':>10} {'import ms':>10} "
        f"{'build ms':>9} {'process ms':>11} {'cpu ms':>7} {'target ms':>10}  met",
    ]

    def ms(value: Any) -> str:
        return f"{value * 1000:.1f}" if isinstance(value, float) else "-"

    for r in records:
        met = "" if "met" not in r else ("yes" if r["met"] else "NO")
        lines.append(
            f"{r['framework']:<10} {r['measure']:<10} {ms(r['median_s']):>10} "
            f"{ms(r.get('import_s')):>10} {ms(r.get('build_s')):>9} "
            f"{ms(r.get('process_s')):>11} {ms(r['cpu_s']):>7} {ms(r.get('target_s')):>10}  {met}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=7, help="samples per measure (median)")
    parser.add_argument("--n", type=int, default=1000, help="executors in the chain")
    parser.add_argument("--no-peers", action="store_true", help="Plait only")
    parser.add_argument("--table", action="store_true", help="also a table on stderr")
    parser.add_argument(
        "--dont-write-bytecode",
        action="store_true",
        help="the children run with PYTHONDONTWRITEBYTECODE=1 (no bytecode cache is written)",
    )
    args = parser.parse_args(argv)
    if args.dont_write_bytecode:
        CHILD_ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    chosen = measures(args.n, peers=not args.no_peers)
    for round_ in range(args.repeat + 1):
        for measure in chosen:
            error = measure.sample(args.n, keep=round_ > 0)
            if error:
                print(error, file=sys.stderr)
                return 1
    records = [measure.record(args.n) for measure in chosen]
    compare_with_peers(records)
    for record in records:
        print(json.dumps(record), flush=True)
    if args.table:
        print(table(records), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
