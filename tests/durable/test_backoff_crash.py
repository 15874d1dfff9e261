"""A crash during a retry's backoff resumes with the attempt count intact, and the
idempotency key is the same before and after."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import backoff_app
from plait_testing.kills import kill, spawn, wait_until


def test_a_crash_during_a_backoff_keeps_the_attempt_count(tmp_path: Path) -> None:
    marks = tmp_path / "marks.txt"
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {"PLAIT_BACKOFF_MARKS": str(marks), "PLAIT_BACKOFF_FAIL": "1"}
    child = spawn(Path(backoff_app.__file__), url, env=env)
    wait_until(
        lambda: marks.exists() and marks.read_text().count("\n") >= 1,
        "the first attempt",
        process=child,
    )
    time.sleep(1.0)  # the attempt failed; the run now waits out its 60 s backoff
    kill(child)
    first = marks.read_text().splitlines()
    assert len(first) == 1 and first[0].startswith("1 pay-1:2:charge:0")

    backoff_app.MARKS = marks  # this process resumes the run, now with a working network

    async def resume() -> list[str]:
        outcome = await backoff_app.build().resume("pay-1", url)
        return [str(o) for o in outcome.outputs]

    assert anyio.run(resume) == ["charged 12 on attempt 2"]
    lines = marks.read_text().splitlines()
    assert lines[1] == "2 pay-1:2:charge:0"  # attempt 2, the same idempotency key
