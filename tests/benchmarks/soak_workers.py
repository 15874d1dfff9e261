"""Soak of ``plait worker``: many runs, several worker processes, a busy one SIGKILLed every
few seconds and restarted. Its 200-run, 2-kill size runs in the test suite
(``plugins/plait-workers/tests/test_workers_soak.py``); the full size by hand.

    python tests/benchmarks/soak_workers.py [--runs 10000] [--workers 4] [--kills 0]
        [--kill-every 3-6] [--concurrency 25] [--lease-ttl 10] [--step-sleep 0.05]
        [--backend postgresql,redis]

Stores: ``PLAIT_TEST_POSTGRES_URL`` / ``PLAIT_TEST_REDIS_URL`` (``source .ci/services.sh``).
``--kills 0`` kills every few seconds until every run is submitted and half of them are
done; a number stops after that many kills.

The workflow (``soak_workers:chain``, imported by the workers from this file): 5 steps, one
superstep each; every step records its side effect by ``ctx.idempotency_key`` in a log (a
line per effect: run, key, worker pid, start and end times), the last one its output. Per
backend it prints one JSON line:

- ``completed``, ``lost`` (no output after the deadline), ``wrong`` (an output that is not a
  clean run's);
- ``duplicate_effects`` (a key recorded twice) and ``excess_duplicates``: those beyond the
  documented at-least-once re-run of the superstep a killed worker was in (one per run per
  kill that interrupted it);
- ``takeover_p50_s`` / ``takeover_p99_s``: from a kill to the first step of an interrupted
  run on another worker;
- ``runs_per_s`` (submission of the first run to the last output), ``boundary_p99_ms``:
  between one step's end and the next step's start in the same worker (the checkpoint write
  and the next dispatch);
- ``worker_rss_mb``: each worker process's resident memory, sampled every second (max).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
from plait import WorkflowContext, executor
from plait_builders import WorkflowBuilder

HERE = Path(__file__).resolve().parent
STEPS = 5


# -- the workflow the workers run ---------------------------------------------------------


def chain() -> Any:
    """Five steps, one superstep each, a side effect per step recorded by its key."""
    log = os.environ.get("PLAIT_SOAK_EFFECTS", "")
    sleep = float(os.environ.get("PLAIT_SOAK_STEP_SLEEP", "0.05"))

    def record(line: str) -> None:
        with open(log, "a") as out:
            out.write(line + "\n")

    def step(i: int) -> Any:
        @executor(id=f"step{i}")
        async def run(x: int, ctx: WorkflowContext[int, int]) -> None:
            started = time.time()
            await anyio.sleep(sleep)
            value = x * 10 + i
            record(f"e {ctx.run_id} {ctx.idempotency_key} {os.getpid()} {started} {time.time()}")
            if i == STEPS - 1:
                record(f"o {ctx.run_id} {value} {os.getpid()} {time.time()}")
                await ctx.yield_output(value)
            else:
                await ctx.send_message(value)

        return run

    steps = [step(i) for i in range(STEPS)]
    builder = WorkflowBuilder("soak", max_supersteps=STEPS + 2).add_executor(steps[0])
    for a, b in zip(steps, steps[1:]):
        builder.add_edge(a, b)
    return builder.set_start(steps[0]).build()


def clean_output(value: int) -> int:
    for i in range(STEPS):
        value = value * 10 + i
    return value


# -- the soak -----------------------------------------------------------------------------


def _rss_mb(pid: int) -> float:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _submit_all(store: str, queue: str, runs: int) -> dict[str, int]:
    from plait_workers import submit

    inputs: dict[str, int] = {}

    async def main() -> None:
        limiter = anyio.Semaphore(4)

        async def one(i: int) -> None:
            async with limiter:
                run_id = await submit("soak_workers:chain", i, store=store, queue=queue)
                inputs[run_id] = i

        async with anyio.create_task_group() as group:
            for i in range(runs):
                group.start_soon(one, i)

    anyio.run(main)
    return inputs


def soak(
    store: str,
    *,
    runs: int,
    workers: int,
    kills: int,
    kill_every: tuple[float, float],
    concurrency: int,
    lease_ttl: float,
    step_sleep: float = 0.05,
    deadline: float = 3600.0,
) -> dict[str, Any]:
    """Run the soak on ``store``; return its report (see the module's docstring)."""
    queue = f"soak{uuid.uuid4().hex[:8]}"
    folder = Path(tempfile.mkdtemp(prefix="plait-soak-"))
    effects = folder / "effects.log"
    effects.touch()
    env = {
        **os.environ,
        "PLAIT_SOAK_EFFECTS": str(effects),
        "PLAIT_SOAK_STEP_SLEEP": str(step_sleep),
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    command = [sys.executable, "-m", "plait_cli", "worker", "--checkpoint", store]
    command += ["--queue", queue, "--allow-imports", "--concurrency", str(concurrency)]
    command += ["--lease-ttl", str(lease_ttl)]

    def start(n: int) -> subprocess.Popen[bytes]:
        log = open(folder / f"worker{n}.log", "ab")  # noqa: SIM115
        return subprocess.Popen(command, cwd=HERE, env=env, stdout=log, stderr=log)

    procs = [start(n) for n in range(workers)]
    rss: dict[int, float] = collections.defaultdict(float)
    kill_times: list[tuple[float, int]] = []
    began = time.time()
    inputs: dict[str, int] = {}
    submitted: list[float] = []

    def submit_all() -> None:  # while workers run, and get killed
        inputs.update(_submit_all(store, queue, runs))
        submitted.append(time.time())

    submitter = threading.Thread(target=submit_all)
    submitter.start()
    next_kill = time.time() + random.uniform(*kill_every)
    outputs: dict[str, tuple[int, float]] = {}
    try:
        while time.time() - began < deadline:
            for line in effects.read_text().splitlines():
                if line.startswith("o "):
                    _, run_id, value, _pid, at = line.split()
                    outputs.setdefault(run_id, (int(value), float(at)))
            if len(outputs) >= runs or (submitted and not inputs):
                break
            for proc in procs:
                rss[proc.pid] = max(rss[proc.pid], _rss_mb(proc.pid))
            want_more = (kills == 0 and len(outputs) < runs // 2) or len(kill_times) < kills
            victim = _busy_victim(effects, procs) if want_more else None
            if victim is not None and time.time() >= next_kill:
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                kill_times.append((time.time(), procs[victim].pid))
                procs[victim] = start(victim)
                next_kill = time.time() + random.uniform(*kill_every)
            time.sleep(0.5)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    submitter.join()
    ended = max((at for _, at in outputs.values()), default=time.time())
    done_submitting = submitted[0] if submitted else ended
    report = _report(
        store, effects, inputs, outputs, kill_times, rss, began, done_submitting, ended
    )
    report["lost_states"] = _states(store, queue, [r for r in inputs if r not in outputs])
    return report


def _busy_victim(effects: Path, procs: list[subprocess.Popen[bytes]]) -> int | None:
    """A worker to kill: one that started a step in the last second, so that the kill
    interrupts runs (the takeover is measured on them); ``None`` while none has."""
    recent = time.time() - 1.0
    busy: set[int] = set()
    for line in effects.read_text().splitlines()[-400:]:
        if line.startswith("e "):
            _, _run, _key, pid, started, _end = line.split()
            if float(started) >= recent:
                busy.add(int(pid))
    choices = [n for n, proc in enumerate(procs) if proc.pid in busy]
    return random.choice(choices) if choices else None


def _states(store: str, queue: str, run_ids: list[str]) -> dict[str, int]:
    """How many of the lost runs the queue holds in each state (queued, running …)."""
    from plait_workers import queued_runs

    wanted = set(run_ids)
    runs = anyio.run(lambda: queued_runs(store=store, queue=queue))
    found = collections.Counter(run.state for run in runs if run.run_id in wanted)
    found["not on the queue"] = len(wanted) - sum(found.values())
    return {state: n for state, n in found.items() if n}


def _report(
    store: str,
    effects: Path,
    inputs: dict[str, int],
    outputs: dict[str, tuple[int, float]],
    kill_times: list[tuple[float, int]],
    rss: dict[int, float],
    began: float,
    submitted: float,
    ended: float,
) -> dict[str, Any]:
    per_run: dict[str, list[tuple[str, int, float, float]]] = collections.defaultdict(list)
    for line in effects.read_text().splitlines():
        if line.startswith("e "):
            _, run_id, key, pid, start, end = line.split()
            per_run[run_id].append((key, int(pid), float(start), float(end)))
    duplicates = excess = 0
    takeovers: list[float] = []
    boundaries: list[float] = []
    for run_id, steps in per_run.items():
        steps.sort(key=lambda s: s[2])
        counts = collections.Counter(key for key, *_ in steps)
        dups = sum(n - 1 for n in counts.values())
        allowed = 0
        for killed_at, pid in kill_times:
            before = [s for s in steps if s[1] == pid and s[2] < killed_at]
            done_at = outputs.get(run_id, (0, float("inf")))[1]
            after = [s[2] for s in steps if s[1] != pid and s[2] >= killed_at]
            # the run was on the victim, unfinished: its output not yet written, or written
            # by a last step whose checkpoint the kill cut off (another worker ran a step
            # of it after the kill)
            if before and (done_at > killed_at or after):
                allowed += 1
                if after:
                    takeovers.append(min(after) - killed_at)
        duplicates += dups
        excess += max(0, dups - allowed)
        for a, b in zip(steps, steps[1:]):
            if a[1] == b[1] and b[2] >= a[3]:
                boundaries.append(b[2] - a[3])
    wrong = sum(1 for r, (v, _) in outputs.items() if v != clean_output(inputs.get(r, -1)))
    p50, p99 = _percentile(takeovers, 0.5), _percentile(takeovers, 0.99)
    boundary = _percentile(boundaries, 0.99)
    return {
        "store": store.partition("://")[0],
        "runs": len(inputs),
        "completed": len(outputs),
        "lost": len(inputs) - len(outputs),
        "wrong": wrong,
        "kills": len(kill_times),
        "duplicate_effects": duplicates,
        "excess_duplicates": excess,
        "takeovers": len(takeovers),
        "takeover_p50_s": None if p50 is None else round(p50, 2),
        "takeover_p99_s": None if p99 is None else round(p99, 2),
        "submit_s": round(submitted - began, 1),
        "runs_per_s": round(len(outputs) / max(ended - began, 1e-9), 1),
        "boundary_p99_ms": None if boundary is None else round(boundary * 1000, 1),
        "worker_rss_mb": round(max(rss.values(), default=0.0), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kills", type=int, default=0)
    parser.add_argument("--kill-every", default="3-6")
    parser.add_argument("--concurrency", type=int, default=25)
    parser.add_argument("--lease-ttl", type=float, default=10.0)
    parser.add_argument("--backend", default="postgresql,redis")
    parser.add_argument("--deadline", type=float, default=3600.0, help="seconds per backend")
    parser.add_argument("--step-sleep", type=float, default=0.05, help="seconds per step")
    args = parser.parse_args()
    low, _, high = args.kill_every.partition("-")
    every = (float(low), float(high or low))
    urls = {
        "postgresql": os.environ.get("PLAIT_TEST_POSTGRES_URL"),
        "redis": os.environ.get("PLAIT_TEST_REDIS_URL"),
    }
    for backend in args.backend.split(","):
        url = urls[backend]
        if not url:
            sys.exit(f"set PLAIT_TEST_{backend.upper()}_URL (source .ci/services.sh)")
        report = soak(
            url,
            runs=args.runs,
            workers=args.workers,
            kills=args.kills,
            kill_every=every,
            concurrency=args.concurrency,
            lease_ttl=args.lease_ttl,
            step_sleep=args.step_sleep,
            deadline=args.deadline,
        )
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
