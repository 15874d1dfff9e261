"""kill -9 a recorded run while a model call is in flight, resume it in a new process with
``record=True``, replay it in a third: equal to the record, every model call answered from
it (the calls checkpointed before the kill, and the interrupted one as the resume made it
again), and no model called by the replay."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import anyio
from plait_replay import read_recording
from plait_testing.kills import finish, kill, spawn, wait_until

CRASHY = Path(__file__).with_name("replay_crashy.py")


def test_kill_9_a_recorded_run_resume_it_recorded_and_replay_it_equal(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = f"crashy-{uuid.uuid4().hex}"
    log = tmp_path / "calls.log"
    victim = spawn(CRASHY, "run", store, run_id, str(log))
    wait_until(
        lambda: log.exists() and any(line.startswith("c ") for line in log.read_text().split("\n")),
        "the run reached agent c",
        process=victim,
    )
    kill(victim)

    finished = json.loads(finish(spawn(CRASHY, "resume", store, run_id, str(log)), timeout=300))
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

    report = json.loads(finish(spawn(CRASHY, "replay", store, run_id, str(log)), timeout=300))
    assert report["equal"], report["text"]
    assert report["calls"] == 5  # four model calls and one random number, all answered
    assert len(log.read_text().splitlines()) == 5, "the replay called no model"
