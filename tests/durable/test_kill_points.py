"""Seeded kill -9 at random points, per store, each resumed and compared with the
uninterrupted outputs (issue 14, fault injection).

``PLAIT_KILL_POINTS`` kill points per store (default 20; ``PLAIT_KILL_SEED`` picks them).
The victims run concurrently, a few at a time, each its own run of ``crashy.py``. A longer
soak: ``PLAIT_KILL_POINTS=200 pytest tests/durable/test_kill_points.py``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest
from plait_testing.kills import finish, kill, spawn, wait_until
from test_crash_resume import CRASHY, _ran

KILL_POINTS = int(os.environ.get("PLAIT_KILL_POINTS", "20"))
SEED = int(os.environ.get("PLAIT_KILL_SEED", "14"))
AT_ONCE = 4


@pytest.fixture(params=["file", "sqlite", "redis", "postgresql"])
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "file":
        return f"file://{tmp_path / 'checkpoints'}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue(
        "plait_redis_url" if request.param == "redis" else "plait_postgres_url"
    )
    return url


def _start(mode: str, url: str, run_id: str, log: Path, hold: str = "") -> subprocess.Popen[str]:
    """``crashy.py``; ``hold``: ``N:MARKER``, held in superstep N (see its docstring)."""
    env = {"PLAIT_CRASHY_SLEEP": "0.005", "PLAIT_CRASHY_HOLD": hold}
    return spawn(CRASHY, mode, url, run_id, str(log), env=env)


def test_seeded_kill_points_all_resume_to_the_uninterrupted_outputs(
    any_store_url: str, tmp_path: Path
) -> None:
    url = any_store_url
    expected = json.loads(
        finish(_start("run", url, f"clean-{uuid.uuid4().hex}", tmp_path / "clean.log"))
    )
    rng = random.Random(f"{SEED}:{url.split(':')[0]}")
    points = [rng.randrange(0, expected["supersteps"]) for _ in range(KILL_POINTS)]
    survived = 0
    for batch_start in range(0, len(points), AT_ONCE):
        batch = points[batch_start : batch_start + AT_ONCE]
        victims = []
        held: list[tuple[Path, subprocess.Popen[str]]] = []
        for i, point in enumerate(batch):
            run_id = f"kill-{batch_start + i}-{uuid.uuid4().hex}"
            log = tmp_path / f"{run_id}.log"
            # held in the superstep after checkpoint `point`: the kill lands there
            marker = tmp_path / f"{run_id}.held"
            proc = _start("run", url, run_id, log, hold=f"{point + 1}:{marker}")
            victims.append((point, run_id, log, proc))
            held.append((marker, proc))
        for marker, proc in held:
            wait_until(marker.exists, f"the run held at {marker.name}", process=proc)
            kill(proc)
        # what each victim logged before it died; the resumer appends to the same log
        before = {run_id: _ran(log) for _, run_id, log, _ in victims}
        resumers = [
            (run_id, log, _start("resume", url, run_id, log)) for _, run_id, log, _ in victims
        ]
        final = (expected["supersteps"], "join")
        for run_id, log, proc in resumers:
            got = json.loads(finish(proc))
            assert got == expected, (run_id, got)
            runs: Counter[tuple[int, str]] = _ran(log)
            # the fan-in fires once per process that runs the final superstep: a victim
            # killed inside it (before its checkpoint) has it re-run on resume — at least
            # once, never twice in one process, and always once in all
            victim, resumer = before[run_id][final], runs[final] - before[run_id][final]
            assert victim <= 1 and resumer <= 1 and victim + resumer >= 1, (victim, resumer)
            if resumer == 0:  # the victim committed the final superstep before it died
                assert victim == 1
            survived += 1
    assert survived == KILL_POINTS
