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
  run on another worker (see below); ``rekilled``: takeovers cut short by a later kill of
  the worker that took the run over before it ran a step (counted from that later kill;
  ``takeover_p99_with_rekilled_s`` counts them from the first);
- ``runs_per_s`` (submission of the first run to the last output), ``boundary_p99_ms``:
  between one step's end and the next step's start in the same worker (the checkpoint write
  and the next dispatch);
- ``worker_rss_mb``: each worker process's resident memory, sampled every second (max);
- ``load_average``: the machine's at the end (it is shared: times stretch under load);
- ``phases``: where the takeovers' time went (:func:`_phases`).

A takeover: a run that had started a step on a worker when it was SIGKILLed, and had not
finished; its latency runs from the kill to the start of the run's first step on another
worker (the first step of the run's next delivery).
"""

from __future__ import annotations

import argparse
import collections
import collections.abc
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
    from plait_workers import submit_many

    async def main() -> list[str]:
        return await submit_many("soak_workers:chain", range(runs), store=store, queue=queue)

    return {run_id: i for i, run_id in enumerate(anyio.run(main))}


def worker_main() -> None:
    """``plait worker`` (arguments from the command line) with the queue's INFO lines (the
    sweep's hand-ons, each delivery taken, each lease refusal) timestamped on stderr: the
    report reads them to split each takeover into its phases."""
    import logging

    from plait_cli import main

    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(created).3f %(process)d %(message)s"))
    logger = logging.getLogger("plait_workers")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    main()


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
    command = [sys.executable, "-c", "import soak_workers; soak_workers.worker_main()"]
    command += ["worker", "--checkpoint", store]
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
    tail = _Tail(effects)
    try:
        while time.time() - began < deadline:
            for line in tail.read():
                if line.startswith("o "):
                    _, run_id, value, _pid, at = line.split()
                    outputs.setdefault(run_id, (int(value), float(at)))
            if len(outputs) >= runs or (submitted and not inputs):
                break
            for proc in procs:
                rss[proc.pid] = max(rss[proc.pid], _rss_mb(proc.pid))
            want_more = (kills == 0 and len(outputs) < runs // 2) or len(kill_times) < kills
            victim = _busy_victim(tail.recent, procs) if want_more else None
            if victim is not None and time.time() >= next_kill:
                procs[victim].send_signal(signal.SIGKILL)
                procs[victim].wait()
                kill_times.append((time.time(), procs[victim].pid))
                with open(folder / "kills.log", "a") as out:
                    out.write(f"{kill_times[-1][0]} {kill_times[-1][1]}\n")
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


class _Tail:
    """The effects log read as it grows (each read returns the complete lines written
    since the last; read whole every half second, a 10,000-run soak's log cost the
    driver a core's worth of time towards its end), and the last few hundred lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.recent: collections.deque[str] = collections.deque(maxlen=400)

    def read(self) -> list[str]:
        with open(self.path, "rb") as log:
            log.seek(self.offset)
            data = log.read()
        end = data.rfind(b"\n") + 1  # (a line still being written waits for the next read)
        self.offset += end
        lines = data[:end].decode().splitlines()
        self.recent.extend(lines)
        return lines


def _busy_victim(
    recent: collections.abc.Iterable[str], procs: list[subprocess.Popen[bytes]]
) -> int | None:
    """A worker to kill: one that started a step in the last second (among the ``recent``
    lines of the effects log), so that the kill interrupts runs (the takeover is measured
    on them); ``None`` while none has."""
    since = time.time() - 1.0
    busy: set[int] = set()
    for line in recent:
        if line.startswith("e "):
            _, _run, _key, pid, started, _end = line.split()
            if float(started) >= since:
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
    logs = _read_logs(effects.parent)
    duplicates = excess = 0
    takeovers: list[float] = []
    interrupted: list[tuple[str, float, float]] = []
    rekilled: list[float] = []
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
                if after and _rekilled(run_id, killed_at, min(after), kill_times, per_run, logs):
                    # counted from the last kill that cut it short (the kill before its
                    # job's last hand-on)
                    rekilled.append(min(after) - killed_at)
                    last = max(
                        [at for at in logs.handed[run_id] if killed_at <= at <= min(after)]
                        or [killed_at]
                    )
                    again = max(at for at, _ in kill_times if at <= last)
                    takeovers.append(min(after) - again)
                    interrupted.append((run_id, again, min(after)))
                elif after:
                    takeovers.append(min(after) - killed_at)
                    interrupted.append((run_id, killed_at, min(after)))
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
        "rekilled": len(rekilled),
        "takeover_p50_s": None if p50 is None else round(p50, 2),
        "takeover_p99_s": None if p99 is None else round(p99, 2),
        "takeover_p99_with_rekilled_s": _rounded(_percentile(takeovers + rekilled, 0.99)),
        "submit_s": round(submitted - began, 1),
        "runs_per_s": round(len(outputs) / max(ended - began, 1e-9), 1),
        "boundary_p99_ms": None if boundary is None else round(boundary * 1000, 1),
        "worker_rss_mb": round(max(rss.values(), default=0.0), 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "false_hand_ons": _false_hand_ons(logs, kill_times),
        "phases": _phases(logs, interrupted),
        "logs": str(effects.parent),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _rekilled(
    run_id: str,
    killed_at: float,
    first_step: float,
    kill_times: list[tuple[float, int]],
    per_run: dict[str, list[tuple[str, int, float, float]]],
    logs: _Logs,
) -> bool:
    """Was the run's takeover after the kill at ``killed_at`` cut short: a later kill, before
    the run's first step elsewhere, hit a worker that had taken the run over (the sweep
    handed the run's job on twice meanwhile, or the worker ran a step of the run later, or
    logged that it took it, and died first)? Such a takeover is counted apart
    (``rekilled``): its time is two takeovers'."""
    if sum(1 for at in logs.handed[run_id] if killed_at <= at <= first_step) > 1:
        return True
    steps_on = {pid for _key, pid, start, _end in per_run[run_id] if start >= killed_at}
    return any(
        killed_at < at < first_step and pid in steps_on | _takers(logs, run_id, killed_at, at)
        for at, pid in kill_times
    )


class _Logs:
    """The workers' queue log lines (:func:`worker_main`), by run: when the sweep handed its
    job on, when a worker took a delivery (and which), when a delivery met a held lease."""

    def __init__(self) -> None:
        self.handed: dict[str, list[float]] = collections.defaultdict(list)
        self.taken: dict[str, list[tuple[float, int]]] = collections.defaultdict(list)
        self.refused: dict[str, list[float]] = collections.defaultdict(list)


def _read_logs(folder: Path) -> _Logs:
    logs = _Logs()
    for log in folder.glob("worker*.log"):
        for line in log.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) < 6:
                continue
            try:
                at, pid = float(parts[0]), int(parts[1])
            except ValueError:
                continue
            if parts[2:4] == ["handing", "on"]:
                logs.handed[parts[5].rstrip(":")].append(at)
            elif parts[2] == "run" and parts[-1] == "taken":
                logs.taken[parts[3].rstrip(":")].append((at, pid))
            elif parts[2] == "run" and "held;" in parts:
                logs.refused[parts[3].rstrip(":")].append(at)
    return logs


def _takers(logs: _Logs, run_id: str, since: float, until: float) -> set[int]:
    return {pid for at, pid in logs.taken[run_id] if since <= at <= until}


def _false_hand_ons(logs: _Logs, kill_times: list[tuple[float, int]], window: float = 30.0) -> int:
    """Hand-ons of live workers' jobs (a worker slow to beat, not dead): a run's job handed
    on more than ``window`` seconds after every kill (an upper bound: a run a dead worker
    had just taken, and handed on late, counts too)."""
    kills = sorted(at for at, _ in kill_times)
    return sum(
        1
        for times in logs.handed.values()
        for at in times
        if not any(k <= at <= k + window for k in kills)
    )


def _phases(logs: _Logs, interrupted: list[tuple[str, float, float]]) -> dict[str, Any]:
    """Where each takeover's time went, from the workers' log lines (:func:`worker_main`):

    - ``detect``: the kill to the sweep handing the run's job on (the sweep waits until
      the job has had no heartbeat for ``stuck_after``, and runs every second);
    - ``queue``: the hand-on to the first delivery taken by a worker (a free slot);
    - ``lease``: that delivery to the one that ran (deliveries refused because the lease
      was still held, each back on the queue);
    - ``start``: the delivery that ran to its first step (load, resume, dispatch).

    Each as p50/p99 seconds, plus the phases of the slowest takeover, and how many
    deliveries were refused for the lease."""
    handed, refused = logs.handed, logs.refused
    taken = {run_id: [at for at, _ in found] for run_id, found in logs.taken.items()}
    rows: list[dict[str, float]] = []
    refusals = missing = 0
    for run_id, killed_at, first_step in interrupted:
        hand = [t for t in handed[run_id] if killed_at <= t <= first_step]
        since = hand[0] if hand else killed_at
        takes = [t for t in taken.get(run_id, []) if since <= t <= first_step]
        if not hand or not takes:
            missing += 1
            continue
        refusals += sum(1 for t in refused[run_id] if hand[0] <= t <= first_step)
        rows.append(
            {
                "total": first_step - killed_at,
                "detect": hand[0] - killed_at,
                "queue": takes[0] - hand[0],
                "lease": takes[-1] - takes[0],
                "start": first_step - takes[-1],
            }
        )
    found: dict[str, Any] = {"measured": len(rows), "unexplained": missing}
    found["lease_refusals"] = refusals
    for phase in ("detect", "queue", "lease", "start"):
        values = [row[phase] for row in rows]
        p50, p99 = _percentile(values, 0.5), _percentile(values, 0.99)
        found[phase] = [None if p is None else round(p, 2) for p in (p50, p99)]
    if rows:
        worst = max(rows, key=lambda row: row["total"])
        found["slowest"] = {phase: round(v, 2) for phase, v in worst.items()}
    return found


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
