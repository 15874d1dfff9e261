"""kill -9 a recorded run while a model call is in flight, resume it in a new process with
``record=True``, replay it in a third: equal to the record, every model call answered from
it (the calls checkpointed before the kill, and the interrupted one as the resume made it
again), and no model called by the replay."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
from plait_replay import read_recording

CRASHY = Path(__file__).with_name("replay_crashy.py")


def _python(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CRASHY), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent,
    )


def test_kill_9_a_recorded_run_resume_it_recorded_and_replay_it_equal(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = f"crashy-{uuid.uuid4().hex}"
    log = tmp_path / "calls.log"
    victim = _python("run", store, run_id, str(log))
    deadline = time.monotonic() + 120  # a generous wait for the event, on a loaded machine
    while not (log.exists() and any(line.startswith("c ") for line in log.read_text().split("\n"))):
        assert victim.poll() is None, victim.communicate()
        assert time.monotonic() < deadline, "the run never reached agent c"
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL

    resumed = _python("resume", store, run_id, str(log))
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    finished = json.loads(out)
    assert finished["status"] == "idle"
    [output] = finished["outputs"]
    assert output.startswith("ok d ok c ok b ok a go ")
    # a and b ran once (checkpointed), c twice (killed in flight, then again), d once
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["a", "b", "c", "c", "d"]

    recording = anyio.run(read_recording, store, run_id)
    assert recording.input == ["go"]
    prompts = sorted(
        c["request"]["prompt"] for c in recording.calls.values() if c["kind"] == "llm.prompt"
    )
    assert [p.split()[0] for p in prompts] == ["a", "b", "c", "d"], "each call recorded once"
    assert [c["kind"] for c in recording.calls.values()].count("random") == 1

    replayed = _python("replay", store, run_id, str(log))
    out, err = replayed.communicate(timeout=300)
    assert replayed.returncode == 0, err
    report = json.loads(out)
    assert report["equal"], report["text"]
    assert report["calls"] == 5  # four model calls and one random number, all answered
    assert len(log.read_text().splitlines()) == 5, "the replay called no model"
