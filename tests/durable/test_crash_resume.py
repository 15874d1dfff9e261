"""Kill a durable run with SIGKILL mid-way, resume it in a new process, compare outputs."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

from plait_testing.kills import finish, kill, latest_superstep, spawn, wait_until

CRASHY = Path(__file__).with_name("crashy.py")
KILL_AFTER_SUPERSTEP = 12


def _ran(log: Path) -> Counter[tuple[int, str]]:
    if not log.exists():  # killed at a checkpoint before any executor ran (superstep 0)
        return Counter()
    lines = log.read_text().split()
    return Counter((int(s), e) for s, e in zip(lines[::2], lines[1::2]))


def test_sigkill_then_resume_gives_the_uninterrupted_outputs(
    plait_store_url: str, tmp_path: Path
) -> None:
    clean_log, crash_log = tmp_path / "clean.log", tmp_path / "crash.log"
    clean = spawn(CRASHY, "run", plait_store_url, f"clean-{uuid.uuid4().hex}", str(clean_log))
    expected = json.loads(finish(clean))

    run_id = f"crash-{uuid.uuid4().hex}"
    victim = spawn(CRASHY, "run", plait_store_url, run_id, str(crash_log))
    wait_until(
        lambda: latest_superstep(plait_store_url, run_id) >= KILL_AFTER_SUPERSTEP,
        "the kill point",
        process=victim,
    )
    kill(victim)
    checkpointed = latest_superstep(plait_store_url, run_id)
    assert checkpointed < expected["supersteps"], "killed too late to prove anything"

    resumed = spawn(CRASHY, "resume", plait_store_url, run_id, str(crash_log))
    got = json.loads(finish(resumed))
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
