"""Kill -9 a pipelined run at a random commit, at a random time and in the middle of a
checkpoint's write, on SQLite, Redis and PostgreSQL; resume it in a fresh process, in
the pipelined and the superstep schedule (issue 22).

The workflow is ``pipecrash.py`` (a fan-in inside a loop, beside a slow chain). Each kill
point is drawn from a seed (``PLAIT_KILL_SEED``). The resumed run must give the
uninterrupted run's outputs (the fan-in fires once per round); nothing is lost or run at
another superstep; what the last durable cut had passed never runs again, and nothing
runs more than twice (in flight or committed after the cut, then again). A kill during a
write leaves the cut before it: the store never holds a torn checkpoint.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from plait_testing import kills
from test_pipelined_crash import PIPECRASH, _latest, _ran

SEED = int(os.environ.get("PLAIT_KILL_SEED", "22"))
SLEEP = "0.04"


def _python(*args: str, log: Path, kill: str | None = None) -> subprocess.Popen[str]:
    env = {"PLAIT_PIPECRASH_SLEEP": SLEEP, "PLAIT_PIPECRASH_KILL": kill or ""}
    return kills.spawn(PIPECRASH, *args, str(log), env=env)


#: store URL -> the uninterrupted run's output and what it ran (one run per store)
_CLEAN: dict[str, tuple[dict[str, Any], Counter[tuple[int, str]]]] = {}


def _clean(url: str, log: Path) -> tuple[dict[str, Any], Counter[tuple[int, str]]]:
    scheme = url.split(":")[0]
    if scheme not in _CLEAN:
        clean = _python("run", "superstep", url, f"clean-{uuid.uuid4().hex}", log=log)
        _CLEAN[scheme] = (json.loads(kills.finish(clean)), _ran(log))
    return _CLEAN[scheme]


@pytest.mark.parametrize("kill", ["commit", "write", "time"])
def test_a_pipelined_run_killed_anywhere_resumes_to_the_clean_outputs(
    plait_store_url: str, tmp_path: Path, kill: str
) -> None:
    clean_log, crash_log = tmp_path / "clean.log", tmp_path / "crash.log"
    expected, clean_runs = _clean(plait_store_url, clean_log)
    rng = random.Random(f"{SEED}:{kill}:{plait_store_url.split(':')[0]}")
    resume_schedule = rng.choice(["pipelined", "superstep"])
    run_id = f"kill-{kill}-{uuid.uuid4().hex}"
    if kill == "time":
        # killed as soon as the run is under way (it wrote a checkpoint), wherever it is
        victim = _python("run", "pipelined", plait_store_url, run_id, log=crash_log)
        kills.wait_until(
            lambda: _latest(plait_store_url, run_id) is not None,
            "the run wrote a checkpoint",
            process=victim,
        )
        kills.kill(victim)
    else:
        # the first save is the run's first checkpoint; then one cut per commit or so
        at = f"{kill}:{rng.randrange(2, 20)}"
        victim = _python("run", "pipelined", plait_store_url, run_id, log=crash_log, kill=at)
        kills.killed(victim)  # it kills itself there
    cut = _latest(plait_store_url, run_id)
    assert cut is not None and cut.status == "running", "killed too late to prove anything"

    got = json.loads(
        kills.finish(_python("resume", resume_schedule, plait_store_url, run_id, log=crash_log))
    )
    assert got["outputs"] == expected["outputs"]  # the fan-in fired once per round
    assert got["supersteps"] == expected["supersteps"]

    runs = _ran(crash_log)
    assert set(runs) == set(clean_runs)  # nothing lost, nothing run at another superstep
    assert all(count <= 2 for count in runs.values()), runs  # in flight or uncut, once more
    again = {key for key, count in runs.items() if count > 1}
    # what the cut had passed never runs again
    assert all(superstep > cut.superstep for superstep, _ in again), (cut.superstep, again)
    assert _latest(plait_store_url, run_id).status == "idle"
