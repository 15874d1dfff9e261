"""kill -9 a Magentic team at a random turn on SQLite, resume it in a new process: the
final conversation equals an uninterrupted run's."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
from plait_durable import open_store

SCRIPT = Path(__file__).with_name("magentic_crashy.py")


def _python(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPT.parent), *sys.path])}
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
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


def test_kill_9_at_a_random_turn_then_resume_equals_the_uninterrupted_run(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    clean_id = f"clean-{uuid.uuid4().hex}"
    clean = _python("run", url, clean_id)
    out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, err
    expected = json.loads(out)
    assert len(expected) == 2 + 2 * 12 + 1  # task, plan, 12 rounds, the final answer
    supersteps = _latest_superstep(url, clean_id)

    kill_at = random.Random().randint(2, supersteps - 3)
    run_id = f"crash-{uuid.uuid4().hex}"
    victim = _python("run", url, run_id)
    deadline = time.monotonic() + 60
    while _latest_superstep(url, run_id) < kill_at:
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    assert victim.returncode == -signal.SIGKILL
    checkpointed = _latest_superstep(url, run_id)
    assert checkpointed < supersteps, f"killed too late (superstep {checkpointed})"

    resumed = _python("resume", url, run_id)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert json.loads(out) == expected, f"killed after superstep {checkpointed}"
