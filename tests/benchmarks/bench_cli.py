"""The ``plait`` command as a user pays for it (issues 15 and 34).

    python tests/benchmarks/bench_cli.py [--repeat 7] [--supersteps 1000] [--table]
    python tests/benchmarks/bench_cli.py --imports   # what a small plait run imports

Three measures, one JSON line each:

- ``run_yaml2``: ``plait run steps.yaml MESSAGE --allow subprocess`` of a two-step YAML
  file (shell steps: ``tr``, ``tr``), from the command to exit, in a new process each
  time (bytecode warm: the first round writes it), with the default durable store (SQLite
  under ``.plait/`` of a scratch folder), progress lines on a pipe. The median and the
  fastest of ``--repeat`` runs, and the median CPU time (user + system of the process and
  its ``tr`` children: on a busy machine wall time waits for cores, CPU time does not);
  target: median <= 0.2 s.
- ``run_yaml3``: the same with a third step (``rev``); target: median <= 0.5 s.
- ``libraries`` (in each ``run_yaml`` record: ``libraries_median_s``, ``libraries_cpu_s``):
  the floor under that run. A new process imports every module from outside Plait that the
  same ``plait run`` imported (the standard library's and third-party ones, listed from a
  ``-X importtime`` run of the same command: asyncio and anyio's backend, click, attrs,
  pluggy, ruamel.yaml, sqlite3, jsonschema_rs, zstandard, ...) and does nothing else. Its
  samples are taken in the same rounds as the run's, so a busy machine slows both alike.
  Plait's own code can go below it only by importing fewer libraries; ``plait_share``
  is the part of the run's median above it.
- ``progress_overhead``: one run of ``--supersteps`` supersteps (an executor that sends
  itself a counter) in this process: ``Workflow.run`` alone (``none``), and through what
  ``plait run`` does (``_follow``: Ctrl-C handling, the event feed) with no display
  (``quiet``), plain lines (to a pipe) and the rich live display (to a terminal-like
  file). Twice: supersteps that return at once, and supersteps that await ``--step-ms``
  (default 1 ms; the live display shows after 0.2 s, so only this run draws it). Rounds
  are interleaved; the median per variant. ``*_display_overhead`` is what the display adds
  to the same CLI run without it. Target: <= 10 %.

``--table`` also prints a table on stderr. The targets are reported (``met``), never
asserted: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_cli._follow import Display, _follow

SHOUT = """\
  - id: shout
    type: executor
    kind: shell
    config:
      argv: ["tr", "a-z", "A-Z"]
      input: message
"""
MIRROR = """\
  - id: mirror
    type: executor
    kind: shell
    config:
      argv: ["rev"]
      input: message
"""
QUIET = """\
  - id: quiet
    type: executor
    kind: shell
    config:
      argv: ["tr", "A-Z", "a-z"]
      input: message
"""
#: the three-step file (``tialp olleh``) and the two-step one (``hello plait``)
STEPS = "workflow:\n" + SHOUT + MIRROR + QUIET
STEPS2 = "workflow:\n" + SHOUT + QUIET


def _plait_command() -> list[str]:
    script = Path(sys.executable).with_name("plait")
    if script.is_file():
        return [str(script)]
    found = shutil.which("plait")
    return [found] if found else [sys.executable, "-m", "plait_cli"]


def _cpu_s(before: Any, after: Any) -> float:
    """The CPU time (user + system) children spent between two ``getrusage`` readings."""
    return float(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def bench_run_yaml(
    repeat: int, steps: str = STEPS, expect: str = "tialp olleh", target_s: float = 0.5
) -> dict[str, Any]:
    import resource

    command = _plait_command()
    samples: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        workflow = Path(scratch) / "steps.yaml"
        workflow.write_text(steps)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        floor = _floor_command(_imported_modules(command, workflow, scratch, env))
        floor_samples: list[float] = []
        floor_cpu: list[float] = []
        for round_ in range(repeat + 1):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(floor, cwd=scratch, env=env, check=True)
            took = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:
                floor_samples.append(took)
                floor_cpu.append(_cpu_s(before, after))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            done = subprocess.run(
                [*command, "run", str(workflow), "hello plait", "--allow", "subprocess"],
                cwd=scratch,
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            took = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0 or expect not in done.stdout:
                raise SystemExit(f"plait run failed ({done.returncode}): {done.stderr}")
            if round_:  # the first round writes bytecode caches, as an install would
                samples.append(took)
                cpu.append(_cpu_s(before, after))
    median = statistics.median(samples)
    return {
        "bench": f"run_yaml{steps.count('- id:')}",
        "median_s": round(median, 4),
        "min_s": round(min(samples), 4),
        "cpu_median_s": round(statistics.median(cpu), 4),
        "libraries_median_s": round(statistics.median(floor_samples), 4),
        "libraries_cpu_s": round(statistics.median(floor_cpu), 4),
        "plait_share_s": round(median - statistics.median(floor_samples), 4),
        "repeat": repeat,
        "target_s": target_s,
        "met": median <= target_s,
    }


def _importtime(command: list[str], workflow: Path, scratch: str, env: dict[str, str]) -> str:
    """The ``-X importtime`` report of ``plait run`` of ``workflow``, bytecode warm."""
    # the console script, as a user runs it (``-m`` would put the new scratch folder,
    # changed a moment ago, first on sys.path)
    command = command[1:] if command[0] == sys.executable else command
    argv = [sys.executable, "-X", "importtime", *command, "run", str(workflow)]
    argv += ["hello plait", "--allow", "subprocess"]
    for _ in range(2):  # the first writes bytecode
        done = subprocess.run(argv, cwd=scratch, capture_output=True, text=True, env=env)
    return done.stderr


def _imported_modules(
    command: list[str], workflow: Path, scratch: str, env: dict[str, str]
) -> list[str]:
    """Every module from outside Plait that ``plait run`` of ``workflow`` has imported when
    it exits, in the order their imports began (``sys.modules``' order). ``-X importtime``
    would miss those imported with ``importlib.import_module`` (anyio's backend, every
    lazy export), so the run itself writes them down, at exit."""
    if command[0] == sys.executable:  # ``python -m plait_cli``: no console script
        script, start = command[-1], f"runpy.run_module({command[-1]!r}, run_name='__main__')"
    else:
        script, start = command[0], f"runpy.run_path({command[0]!r}, run_name='__main__')"
    listing = Path(scratch) / "modules.json"
    probe = (
        "import atexit, json, runpy, sys\n"
        "def write():\n"
        f"    with open({str(listing)!r}, 'w') as out:\n"
        "        json.dump(list(sys.modules), out)\n"
        "atexit.register(write)\n"
        f"sys.argv = [{script!r}, 'run', {str(workflow)!r}, 'hello plait', '--allow', "
        "'subprocess']\n"
        # the console script's folder first on sys.path, as when it runs itself
        f"sys.path[0] = {str(Path(script).parent)!r}\n{start}\n"
    )
    subprocess.run([sys.executable, "-c", probe], cwd=scratch, env=env, capture_output=True)
    names = json.loads(listing.read_text())
    return [
        name
        for name in names
        if not name.startswith(("plait", "__main__", "__mp_main__")) and name != "sitecustomize"
    ]


def _floor_command(modules: list[str]) -> list[str]:
    """A process that imports ``modules`` (each that imports here) and does nothing else."""
    script = (
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception:  # a module that needs what only the run sets up\n"
        "        pass\n"
    )
    return [sys.executable, "-c", script]


def import_costs(top: int = 15) -> list[tuple[float, str]]:
    """The modules a two-step ``plait run`` imports at the top level (directly or through
    a lazy ``import_module``), by cumulative import time in ms, from ``-X importtime``."""
    with tempfile.TemporaryDirectory() as scratch:
        workflow = Path(scratch) / "steps.yaml"
        workflow.write_text(STEPS2)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        report = _importtime(_plait_command(), workflow, scratch, env)
    costs = []
    for line in report.splitlines():
        if line.startswith("import time:") and not line.startswith("import time: self"):
            _, cumulative, name = line[len("import time:") :].split("|")
            if not name.startswith("  "):  # a top-level import
                costs.append((int(cumulative) / 1000, name.strip()))
    return sorted(costs, reverse=True)[:top]


class _TerminalSink(io.StringIO):
    """A file that says it is a terminal, so rich draws its live display into it."""

    def isatty(self) -> bool:
        return True


def bench_progress(supersteps: int, repeat: int, step_s: float = 0.0) -> dict[str, Any]:
    @executor(id="tick")
    async def tick(n: int, ctx: WorkflowContext[int, int]) -> None:
        if step_s:
            await anyio.sleep(step_s)
        if n < supersteps:
            await ctx.send_message(n + 1)
        else:
            await ctx.yield_output(n)

    workflow = (
        WorkflowBuilder("ticks", max_supersteps=supersteps + 1)
        .add_edge(tick, tick)
        .set_start(tick)
        .build()
    )

    async def plain() -> None:
        await workflow.run(1)

    def through_cli(display: Display) -> Any:
        async def start(extra: dict[str, Any]) -> Any:
            return await workflow.run(1, **extra)

        async def go() -> None:
            outcome = await _follow(start, "bench", display)
            assert outcome.outputs == [supersteps], outcome

        return go

    sink = open(os.devnull, "w")  # noqa: SIM115 - open for the whole benchmark
    quiet = through_cli(Display(quiet=True))
    lines = through_cli(Display(stream=sink))
    live = through_cli(Display(stream=_TerminalSink()))

    variants = {"none": plain, "quiet": quiet, "lines": lines, "live": live}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for round_ in range(repeat + 1):
        for name, variant in variants.items():
            started = time.perf_counter()
            anyio.run(variant)
            if round_:
                times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(samples) for name, samples in times.items()}
    base, quiet_s = medians["none"], medians["quiet"]
    overhead = {name: medians[name] / base - 1 for name in ("quiet", "lines", "live")}
    # what the display itself adds: the same CLI run, with it and without it (--quiet)
    display = {name: medians[name] / quiet_s - 1 for name in ("lines", "live")}
    return {
        "bench": "progress_overhead",
        "supersteps": supersteps,
        "step_s": step_s,
        "none_s": round(base, 4),
        "quiet_s": round(medians["quiet"], 4),
        "lines_s": round(medians["lines"], 4),
        "live_s": round(medians["live"], 4),
        "quiet_overhead": round(overhead["quiet"], 3),
        "lines_overhead": round(overhead["lines"], 3),
        "live_overhead": round(overhead["live"], 3),
        "lines_display_overhead": round(display["lines"], 3),
        "live_display_overhead": round(display["live"], 3),
        "target_overhead": 0.10,
        "met": max(display.values()) <= 0.10,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--supersteps", type=int, default=1000)
    parser.add_argument("--step-ms", type=float, default=1.0)
    parser.add_argument("--table", action="store_true")
    parser.add_argument("--imports", action="store_true", help="print import costs, run nothing")
    args = parser.parse_args(argv)
    if args.imports:
        for took, name in import_costs():
            print(f"{took:8.1f} ms  {name}")
        return 0
    records = [
        bench_run_yaml(args.repeat, STEPS2, "hello plait", 0.2),
        bench_run_yaml(args.repeat),
        bench_progress(args.supersteps, args.repeat),
        bench_progress(args.supersteps, max(3, args.repeat // 2), step_s=args.step_ms / 1000),
    ]
    for record in records:
        print(json.dumps(record))
    if args.table:
        lines = [
            f"plait run, {record['bench'][-1]}-step YAML: median {record['median_s'] * 1000:.0f} "
            f"ms, fastest {record['min_s'] * 1000:.0f} ms, CPU {record['cpu_median_s'] * 1000:.0f}"
            f" ms (target {record['target_s'] * 1000:.0f} ms); the libraries it imports, "
            f"alone: {record['libraries_median_s'] * 1000:.0f} ms, so Plait's share is "
            f"{record['plait_share_s'] * 1000:.0f} ms"
            for record in records[:2]
        ]
        for record in records[2:]:
            lines.append(
                f"{record['supersteps']} supersteps of {record['step_s'] * 1000:g} ms: "
                f"run() {record['none_s'] * 1000:.1f} ms, plait run --quiet "
                f"{record['quiet_s'] * 1000:.1f} ms, lines {record['lines_s'] * 1000:.1f} ms "
                f"({record['lines_display_overhead']:+.1%}), live "
                f"{record['live_s'] * 1000:.1f} ms ({record['live_display_overhead']:+.1%}); "
                "target +10%"
            )
        print("\n".join(lines), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
