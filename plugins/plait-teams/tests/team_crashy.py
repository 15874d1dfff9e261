"""A team run in a process of its own, for the kill -9 tests (test_team_kill.py).

    python team_crashy.py group_chat|magentic run|resume STORE_URL RUN_ID LOG

Twelve turns of scripted participants: a group chat whose speaker depends on the
conversation so far, or a Magentic team of a researcher and a writer led by a scripted
manager. Every participant, as it starts a turn, appends ``<messages it sees> <speaker>``
to LOG. With ``PLAIT_TEAMS_HOLD_AT=n`` and ``PLAIT_TEAMS_HOLD_MARKER=path`` the n-th turn
this process starts writes that marker and waits forever (:func:`plait_testing.kills.hold`),
so the test kills the run in that turn whatever the machine's load. The final conversation
is printed as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import plait
from magentic_scripts import ScriptedManager, alternate
from plait_teams import Conversation, GroupChatBuilder, MagenticBuilder, TeamState
from plait_testing.kills import hold

#: the participants' turns in a run, for both kinds
TURNS = 12

#: the turns this process has started (a resumed process counts from its own start)
_started = 0


def speaker(name: str, log: Path) -> Any:
    """A participant that logs the turn it starts, holds there when told to, and answers
    with a function of what it sees."""

    async def agent(conversation: Conversation) -> str:
        global _started
        _started += 1
        with log.open("a") as out:
            out.write(f"{len(conversation)} {name}\n")
        if _started == int(os.environ.get("PLAIT_TEAMS_HOLD_AT", "0")):
            await hold(Path(os.environ["PLAIT_TEAMS_HOLD_MARKER"]))
        last = conversation.last
        return f"{name} on {last.text if last else ''!r} ({len(conversation)})"

    agent.__name__ = name
    return agent


def group_chat(log: Path) -> plait.Workflow:
    """Writer, critic and editor; not round-robin: who speaks depends on the conversation."""

    def select(state: TeamState) -> str:
        return ("writer", "critic", "editor")[sum(len(m.text) for m in state.conversation) % 3]

    return (
        GroupChatBuilder("crashy")
        .participants([speaker(name, log) for name in ("writer", "critic", "editor")])
        .with_selector(select)
        .with_max_rounds(TURNS)
        .build()
    )


def magentic(log: Path) -> plait.Workflow:
    """A researcher and a writer in turn; the manager is satisfied after ``TURNS`` rounds."""
    return (
        MagenticBuilder("crashy")
        .participants({name: speaker(name, log) for name in ("researcher", "writer")})
        .with_manager(ScriptedManager(alternate(done_at=TURNS + 1)), max_round_count=20)
        .build()
    )


async def main(kind: str, mode: str, store: str, run_id: str, log: Path) -> None:
    workflow = {"group_chat": group_chat, "magentic": magentic}[kind](log)
    if mode == "run":
        result = await workflow.run("plan a launch", checkpoint=store, run_id=run_id)
    else:
        result = await workflow.resume(run_id, store)
    [conversation] = result.outputs
    print(json.dumps([[m.role, m.author, m.text, m.data] for m in conversation]))


if __name__ == "__main__":
    kind, mode, store, run_id, log = sys.argv[1:6]
    anyio.run(main, kind, mode, store, run_id, Path(log))
