"""Kill the docs review midway with SIGKILL, then resume it from its last checkpoint.

Run it from the folder whose ``.plait/`` should hold the store and the report (the
repository root in the README)::

    python docs/examples/demo/kill_and_resume.py [FOLDER]

FOLDER (default: this repository's docs) is the folder of Markdown the runs review.

1. ``plait run docs/examples/demo/docs_review.yaml --allow-imports --checkpoint
   sqlite:///.plait/runs.db`` starts (the store ``plait run`` uses by default), with
   ``PLAIT_DEMO_SLOW`` set so each page's step takes a moment;
2. the store is polled until the run has checkpointed superstep 7 — the pages that
   passed the quality gate in the first round are in the ``pages`` foreach's gather, the
   others are being summarised again — and the process is killed with SIGKILL: no
   clean-up, no final checkpoint;
3. ``plait runs`` still lists the run as ``running``; ``plait resume`` continues it in a
   new process from its last checkpoint, and it finishes;
4. an uninterrupted run of the same workflow writes the same report, byte for byte.

Exit status 0 when all of that held.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import attrs
from plait_durable import open_store

HERE = Path(__file__).resolve().parent
_WORKFLOW = os.path.relpath(HERE / "docs_review.yaml")
#: The workflow file, named relative to the working directory when it is below it.
TARGET = _WORKFLOW if not _WORKFLOW.startswith("..") else str(HERE / "docs_review.yaml")
STORE = "sqlite:///.plait/runs.db"
REPORT = Path(".plait") / "demo" / "report.md"
#: Kill once this many supersteps are checkpointed: scan, pages, profile, summarise,
#: gate, again, then the gather (the pages that passed) with summarise (the others); the
#: slow gate of superstep 8 leaves time to do it.
KILL_AFTER = 7
SLOW = os.environ.get("PLAIT_DEMO_SLOW") or "0.6"
#: The run's MESSAGE: the folder to review (none: the default, this repository's docs).
FOLDER = sys.argv[1:2]
PLAIT = [sys.executable, "-m", "plait_cli"]


def plait(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``plait ARGS`` to completion, echoing the command."""
    print("$", "plait", *args, flush=True)
    return subprocess.run(
        [*PLAIT, *args], env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )


def runs() -> list[dict[str, Any]]:
    """What ``plait runs --json`` lists, read from the store in this process (it is polled
    every 50 ms, faster than starting ``plait runs`` each time)."""

    async def listing() -> list[dict[str, Any]]:
        store = open_store(STORE)
        try:
            return [attrs.asdict(info) for info in await store.runs()]
        finally:
            await store.aclose()

    if not Path(".plait", "runs.db").exists():
        return []
    return anyio.run(listing)


def start_and_kill() -> str:
    """Start a slow run, kill it with SIGKILL after ``KILL_AFTER`` supersteps; its id."""
    before = {r["run_id"] for r in runs()}
    log = Path(".plait") / "demo" / "killed-run.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"$ PLAIT_DEMO_SLOW={SLOW} plait run {' '.join([TARGET, *FOLDER])} --allow-imports "
        f"--checkpoint {STORE} &",
        flush=True,
    )
    with log.open("w") as output:
        process = subprocess.Popen(
            [*PLAIT, "run", TARGET, *FOLDER, "--allow-imports", "--checkpoint", STORE],
            env={**os.environ, "PLAIT_DEMO_SLOW": SLOW},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    run: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the run ended (status {process.returncode}) before it was killed")
        run = next((r for r in runs() if r["run_id"] not in before), None)
        if run is not None and run["superstep"] >= KILL_AFTER:
            break
        time.sleep(0.05)
    else:
        process.kill()
        raise SystemExit(f"the run did not reach superstep {KILL_AFTER} within 60 s")
    assert run is not None
    os.kill(process.pid, signal.SIGKILL)
    process.wait()  # reaped: its lease is free at once (a dead pid on this host)
    print(f"killed pid {process.pid} (SIGKILL) after superstep {run['superstep']}", flush=True)
    return str(run["run_id"])


def main() -> int:
    """Kill, resume, compare; 0 when the resumed run finished with the same report."""
    REPORT.unlink(missing_ok=True)
    run_id = start_and_kill()
    listed = plait("runs", "--checkpoint", STORE, "--limit", "1")
    print(listed.stdout, end="")
    (killed,) = [r for r in runs() if r["run_id"] == run_id]
    if killed["status"] != "running":
        raise SystemExit(f"the killed run is {killed['status']}: it was killed too late")
    if REPORT.exists():
        raise SystemExit("the killed run wrote a report: it was killed too late")
    resumed = plait("resume", TARGET, run_id, "--allow-imports", "--checkpoint", STORE, "--events")
    print(resumed.stdout, end="")
    if resumed.returncode != 0:
        print(resumed.stderr, end="", file=sys.stderr)
        return 1
    # the events (JSON lines on stderr) show where it went on: after the last checkpoint
    for line in resumed.stderr.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("event") == "SuperstepStarted":
            print(f"  superstep {event['superstep']}: {', '.join(event['executor_ids'])}")
    (done,) = [r for r in runs() if r["run_id"] == run_id]
    print(f"  run {run_id}: {done['status']}, {done['superstep']} supersteps")
    after_resume = REPORT.read_bytes()
    fresh = plait("run", TARGET, *FOLDER, "--allow-imports", "--checkpoint", STORE)
    if fresh.returncode != 0:
        print(fresh.stderr, end="", file=sys.stderr)
        return 1
    same = REPORT.read_bytes() == after_resume
    print(f"report {REPORT}: {'identical to' if same else 'DIFFERENT from'} an uninterrupted run")
    return 0 if same and done["status"] == "idle" else 1


if __name__ == "__main__":
    sys.exit(main())
