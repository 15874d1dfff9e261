"""kill -9 a group chat at a random turn on SQLite, resume it in a new process: the final
conversation equals an uninterrupted run's, and no completed turn runs again."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
from plait_durable import open_store

CRASHY = Path(__file__).with_name("team_crashy.py")


def _python(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CRASHY), *args],
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


def test_a_group_chat_killed_at_a_random_turn_resumes_to_the_same_conversation(
    tmp_path: Path,
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    clean = _python("run", store, "clean", str(tmp_path / "clean.log"))
    clean_out, err = clean.communicate(timeout=120)
    assert clean.returncode == 0, err
    expected = json.loads(clean_out)
    assert len(expected) == 13  # the task and 12 turns

    # turn n is superstep 2n: kill after a random turn's checkpoint, before the last
    kill_at = 2 * random.randint(1, 10)
    log = tmp_path / "crash.log"
    victim = _python("run", store, "crash", str(log))
    deadline = time.monotonic() + 60
    while _latest_superstep(store, "crash") < kill_at:
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    assert victim.returncode == -signal.SIGKILL
    checkpointed = _latest_superstep(store, "crash")
    assert checkpointed < 2 * 12, f"killed too late (after superstep {checkpointed})"

    resumed = _python("resume", store, "crash", str(log))
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert json.loads(out) == expected, f"killed after superstep {checkpointed}"

    # every turn ran; a turn checkpointed before the kill never ran again (the one in
    # flight may have run twice: a superstep commits atomically, executors run at least once)
    turns = Counter(tuple(line.split()) for line in log.read_text().splitlines())
    assert len(turns) == 12
    for (length, _speaker), count in turns.items():
        turn = int(length)  # the conversation a turn sees has `turn` messages
        assert count <= (1 if 2 * turn <= checkpointed else 2), (turn, count, checkpointed)
