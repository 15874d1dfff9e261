"""Kill -9 a pipelined run and resume it in a fresh process, in either schedule (issue 22).

The workflow (``pipecrash.py``) has a fan-in inside a loop; the victim is killed once its
latest checkpoint (a cut) holds the fan-in's buffer partly filled. The resumed run must
give the uninterrupted run's outputs; nothing is lost; an invocation runs again only if
its commit had not reached a cut (at most twice in all).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from plait_durable import open_store
from plait_testing.kills import finish, kill, spawn, wait_until

PIPECRASH = Path(__file__).with_name("pipecrash.py")


def _python(*args: str, log: Path) -> subprocess.Popen[str]:
    return spawn(PIPECRASH, *args, str(log))


def _latest(url: str, run_id: str) -> Any:
    async def look() -> Any:
        store = open_store(url)
        try:
            return await store.latest(run_id)
        finally:
            await store.aclose()

    return anyio.run(look)


def _partly_filled(checkpoint: Any) -> bool:
    """The checkpoint's fan-in holds a message from one source and none from the other,
    and it is a pipelined cut."""
    if checkpoint is None or "pipeline" not in checkpoint.state:
        return False
    for buffers in checkpoint.state["router_state"].values():
        filled = [source for source, queue in buffers.items() if queue]
        if len(filled) == 1 and len(buffers) == 2:
            return True
    return False


def _ran(log: Path) -> Counter[tuple[int, str]]:
    lines = log.read_text().split()
    return Counter((int(s), e) for s, e in zip(lines[::2], lines[1::2]))


@pytest.mark.parametrize("resume_schedule", ["pipelined", "superstep"])
def test_sigkill_with_a_partly_filled_fan_in_in_a_loop_resumes_to_the_clean_outputs(
    plait_store_url: str, tmp_path: Path, resume_schedule: str
) -> None:
    clean_log, crash_log = tmp_path / "clean.log", tmp_path / "crash.log"
    clean = _python("run", "superstep", plait_store_url, f"clean-{uuid.uuid4().hex}", log=clean_log)
    expected = json.loads(finish(clean))

    run_id = f"crash-{uuid.uuid4().hex}"
    victim = _python("run", "pipelined", plait_store_url, run_id, log=crash_log)

    def reached() -> bool:  # the second cut with a partly filled buffer: a round or more in
        latest = _latest(plait_store_url, run_id)
        return _partly_filled(latest) and latest.superstep > 4

    wait_until(reached, "the run reached the kill point", process=victim)
    kill(victim)
    cut = _latest(plait_store_url, run_id)
    assert cut.status == "running", "killed too late to prove anything"

    got = json.loads(
        finish(_python("resume", resume_schedule, plait_store_url, run_id, log=crash_log))
    )
    assert got["outputs"] == expected["outputs"]  # the fan-in fired once per round
    assert got["supersteps"] == expected["supersteps"]

    runs, clean_runs = _ran(crash_log), _ran(clean_log)
    assert set(runs) == set(clean_runs)  # nothing lost, nothing run at another superstep
    assert all(count <= 2 for count in runs.values()), runs
    # what the cut had passed (every superstep up to its own) never runs again
    again = {key for key, count in runs.items() if count > 1}
    assert all(superstep > cut.superstep for superstep, _ in again), (cut.superstep, again)
    final = _latest(plait_store_url, run_id)
    assert final.status == "idle"
