"""Kill a durable run with SIGKILL mid-way, resume it in a new process, compare outputs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import anyio
from plait_durable import open_store

CRASHY = Path(__file__).with_name("crashy.py")
KILL_AFTER_SUPERSTEP = 12


def _python(*args: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CRASHY), *args, str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _latest_superstep(url: str, run_id: str) -> int:
    async def look() -> int:
        store = open_store(url)
        try:
            latest = await store.latest(run_id)
            return -1 if latest is None else latest.superstep
        finally:
            await store.aclose()

    return anyio.run(look)


def _ran(log: Path) -> Counter[tuple[int, str]]:
    if not log.exists():  # killed at a checkpoint before any executor ran (superstep 0)
        return Counter()
    lines = log.read_text().split()
    return Counter((int(s), e) for s, e in zip(lines[::2], lines[1::2]))


def test_sigkill_then_resume_gives_the_uninterrupted_outputs(
    plait_store_url: str, tmp_path: Path
) -> None:
    clean_log, crash_log = tmp_path / "clean.log", tmp_path / "crash.log"
    clean = _python("run", plait_store_url, f"clean-{uuid.uuid4().hex}", log=clean_log)
    clean_out, err = clean.communicate(timeout=60)
    assert clean.returncode == 0, err
    expected = json.loads(clean_out)

    run_id = f"crash-{uuid.uuid4().hex}"
    victim = _python("run", plait_store_url, run_id, log=crash_log)
    deadline = time.monotonic() + 30
    while _latest_superstep(plait_store_url, run_id) < KILL_AFTER_SUPERSTEP:
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    assert victim.returncode == -signal.SIGKILL
    checkpointed = _latest_superstep(plait_store_url, run_id)
    assert checkpointed < expected["supersteps"], "killed too late to prove anything"

    resumed = _python("resume", plait_store_url, run_id, log=crash_log)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    got = json.loads(out)
    assert got["outputs"] == expected["outputs"]  # the fan-in fired once, with both inputs
    assert got["supersteps"] == expected["supersteps"]

    runs = _ran(crash_log)
    clean_runs = _ran(clean_log)
    assert set(runs) == set(clean_runs)  # nothing lost
    for (superstep, executor_id), count in runs.items():
        # completed (checkpointed) supersteps never run again; only the one in flight may
        limit = 1 if superstep <= checkpointed else 2
        assert count <= limit, (superstep, executor_id, count)
    assert runs[(expected["supersteps"], "join")] == 1
