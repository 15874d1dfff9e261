"""Scripted Magentic managers and participants: deterministic, and a function of what
they are given (never of calls counted in the object), so a resumed run in a new process
decides exactly as an uninterrupted one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from plait_teams import Conversation, MagenticContext

#: a progress ledger as a function of the manager's context
Progress = Callable[[MagenticContext], Mapping[str, Any]]


def ledger(
    speaker: str,
    instruction: str,
    *,
    done: bool = False,
    loop: bool = False,
    progress: bool = True,
    reason: str = "",
) -> dict[str, Any]:
    """A progress ledger as a manager's structured output (a dict)."""
    return {
        "is_request_satisfied": done,
        "is_in_loop": loop,
        "is_progress_being_made": progress,
        "next_speaker": speaker,
        "instruction": instruction,
        "reason": reason,
    }


def alternate(done_at: int | None = None, *, stalled: bool = False) -> Progress:
    """researcher, writer, researcher … each told the round; satisfied at ``done_at``;
    every round a stall when ``stalled``."""

    def progress(context: MagenticContext) -> Mapping[str, Any]:
        number = context.round + 1
        speaker = ("researcher", "writer")[context.round % 2]
        return ledger(
            speaker,
            f"round {number}: {speaker}, go on",
            done=done_at is not None and number >= done_at,
            progress=not stalled,
        )

    return progress


class ScriptedManager:
    """A Magentic manager whose plans name the re-plan count and any reviewer feedback,
    whose progress ledgers come from ``progress``, and whose final answer names the rounds
    and the plan it ended with."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self.contexts: list[MagenticContext] = []

    async def plan(self, context: MagenticContext) -> dict[str, str]:
        self.contexts.append(context)
        plan = f"plan {context.resets}"
        if context.feedback:
            plan += f" (after: {context.feedback})"
        return {"facts": f"facts of {context.task}", "plan": plan}

    async def progress(self, context: MagenticContext) -> Mapping[str, Any]:
        self.contexts.append(context)
        return self._progress(context)

    async def final_answer(self, context: MagenticContext) -> str:
        plan = context.ledger.plan if context.ledger is not None else "-"
        return f"answer after {context.round} rounds, with {plan}"


#: what each participant was given, by name (a test clears it)
SEEN: dict[str, list[Conversation]] = {}


async def researcher(conversation: Conversation) -> str:
    """Finds facts: says how long its conversation was."""
    SEEN.setdefault("researcher", []).append(conversation)
    return f"researched ({len(conversation)} messages seen)"


async def writer(conversation: Conversation) -> str:
    """Writes: echoes its last instruction."""
    SEEN.setdefault("writer", []).append(conversation)
    last = conversation.last
    return f"wrote for: {last.text if last is not None else ''}"
