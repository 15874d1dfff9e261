"""kill -9 a group chat and a Magentic team at a random turn on SQLite, resume each in a new
process: the final conversation equals an uninterrupted run's, and no turn checkpointed
before the kill runs again.

The victim holds in the chosen turn (``team_crashy.py``, :func:`plait_testing.kills.hold`)
and the test kills it there: the kill lands mid-conversation, at the turn drawn, however
loaded the machine (the harness is plait-testing's, shared with tests/durable)."""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from pathlib import Path

import pytest
from plait_testing.kills import finish, kill, latest_superstep, spawn, wait_until

CRASHY = Path(__file__).with_name("team_crashy.py")
#: the participants' turns of a run (team_crashy.TURNS)
TURNS = 12
#: what a run's conversation holds: per kind, the task and the turns, and for a Magentic
#: team its plan, an instruction a turn and the final answer
MESSAGES = {"group_chat": 1 + TURNS, "magentic": 2 + 2 * TURNS + 1}


def _turns(log: Path) -> Counter[tuple[str, str]]:
    """How often each turn (what its speaker saw, its speaker) started, from a LOG."""
    lines = log.read_text().splitlines()
    return Counter((seen, name) for seen, name in (line.split() for line in lines))


@pytest.mark.parametrize("kind", ["group_chat", "magentic"])
def test_a_team_killed_at_a_random_turn_resumes_to_the_uninterrupted_conversation(
    kind: str, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    clean_log = tmp_path / "clean.log"
    clean = spawn(CRASHY, kind, "run", store, f"clean-{uuid.uuid4().hex}", str(clean_log))
    expected = json.loads(finish(clean))
    assert len(expected) == MESSAGES[kind]
    order = list(_turns(clean_log))  # the turns, in the order they ran
    assert len(order) == TURNS and set(_turns(clean_log).values()) == {1}

    # turn n is superstep 2n (the manager's decisions the odd ones between): held in turn
    # n, the run's last checkpoint is superstep 2n - 1
    turn = random.randint(1, TURNS)
    run_id, log, marker = f"crash-{uuid.uuid4().hex}", tmp_path / "crash.log", tmp_path / "held"
    hold = {"PLAIT_TEAMS_HOLD_AT": str(turn), "PLAIT_TEAMS_HOLD_MARKER": str(marker)}
    victim = spawn(CRASHY, kind, "run", store, run_id, str(log), env=hold)
    wait_until(marker.exists, f"the victim held in turn {turn}", process=victim)
    wait_until(
        lambda: latest_superstep(store, run_id) >= 2 * turn - 1,
        f"the checkpoint before turn {turn}",
        process=victim,
    )
    kill(victim)
    assert latest_superstep(store, run_id) == 2 * turn - 1
    assert list(_turns(log)) == order[:turn]

    resumed = spawn(CRASHY, kind, "resume", store, run_id, str(log))
    assert json.loads(finish(resumed)) == expected, f"killed in turn {turn}"
    # every turn ran; the checkpointed ones once, the one killed in flight again
    runs = _turns(log)
    assert list(runs) == order
    assert [runs[t] for t in order] == [2 if i == turn - 1 else 1 for i in range(TURNS)]
