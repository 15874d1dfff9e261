"""A Magentic team of 12 rounds, run in a subprocess by the kill -9 test.

    python magentic_crashy.py run    STORE_URL RUN_ID
    python magentic_crashy.py resume STORE_URL RUN_ID

Each participant sleeps a little, so the test can kill the run between checkpoints. The
manager and the participants are functions of what they are given, so a resumed run
decides what an uninterrupted one does. Prints the final conversation as JSON.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from magentic_scripts import ScriptedManager, alternate
from plait_teams import Conversation, MagenticBuilder

SLEEP = float(os.environ.get("PLAIT_TEAMS_CRASHY_SLEEP", "0.05"))


async def researcher(conversation: Conversation) -> str:
    await anyio.sleep(SLEEP)
    return f"found {len(conversation)}"


async def writer(conversation: Conversation) -> str:
    await anyio.sleep(SLEEP)
    last = conversation.last
    return f"wrote {len(conversation)} after {last.text if last else ''}"


def build() -> object:
    manager = ScriptedManager(alternate(done_at=13))
    return (
        MagenticBuilder("crashy")
        .participants({"researcher": researcher, "writer": writer})
        .with_manager(manager, max_round_count=20)
        .build()
    )


async def main(mode: str, url: str, run_id: str) -> None:
    workflow = build()
    if mode == "run":
        result = await workflow.run("otters", checkpoint=url, run_id=run_id)  # type: ignore[attr-defined]
    else:
        result = await workflow.resume(run_id, url)  # type: ignore[attr-defined]
    (conversation,) = result.outputs
    print(json.dumps([[m.role, m.author, m.text, m.data] for m in conversation]))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
