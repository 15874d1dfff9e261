"""A group chat run in a process of its own, for the kill -9 test (test_team_kill.py).

    python team_crashy.py run|resume STORE_URL RUN_ID LOG

Scripted agents (each turn sleeps a little, so a kill lands mid-conversation) append
``<superstep> <speaker>`` to LOG for every turn they take; the final conversation is
printed as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import plait
from plait_teams import Conversation, GroupChatBuilder, TeamState

ROUNDS = 12


def build(log: Path) -> plait.Workflow:
    def speaker(name: str) -> Any:
        async def agent(conversation: Conversation) -> str:
            await anyio.sleep(0.05)
            with log.open("a") as out:
                out.write(f"{len(conversation)} {name}\n")
            return f"{name} on {conversation[-1].text!r} ({len(conversation)})"

        agent.__name__ = name
        return agent

    def select(state: TeamState) -> str:
        # not round-robin: who speaks depends on the conversation so far
        return ("writer", "critic", "editor")[sum(len(m.text) for m in state.conversation) % 3]

    return (
        GroupChatBuilder("crashy")
        .participants([speaker("writer"), speaker("critic"), speaker("editor")])
        .with_selector(select)
        .with_max_rounds(ROUNDS)
        .build()
    )


async def main(mode: str, store: str, run_id: str, log: Path) -> None:
    workflow = build(log)
    if mode == "run":
        result = await workflow.run("plan a launch", checkpoint=store, run_id=run_id)
    else:
        result = await workflow.resume(run_id, store)
    [conversation] = result.outputs
    print(json.dumps([[m.author, m.text] for m in conversation]))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4]))
