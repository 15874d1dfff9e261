"""Scripted, deterministic agents and a round-robin test team, for this folder's tests.

A module of its own, with a name no other test folder uses (a ``conftest`` import would
get whichever ``conftest`` pytest imported first).
"""

from __future__ import annotations

from typing import Any

from plait import WorkflowContext
from plait_teams import Conversation, Finish, Speak, TeamBuilder, TeamManager, TeamState


class RoundRobinManager(TeamManager):
    """Each participant in turn; finishes when a message says ``DONE``."""

    async def decide(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> Speak | Finish:
        last = state.conversation.last
        if last is not None and "DONE" in last.text:
            return Finish("done")
        names = state.participants
        if state.last_speaker is None:
            return Speak(names[0], instruction=f"turn {state.round + 1}")
        following = names[(names.index(state.last_speaker) + 1) % len(names)]
        return Speak(following, instruction=f"turn {state.round + 1}")


class RoundRobinTeam(TeamBuilder):
    """A team of :class:`RoundRobinManager`."""

    def manager(self) -> RoundRobinManager:
        return RoundRobinManager(
            self.team_name, self._participants_or_raise(), max_rounds=self._max_rounds
        )


def scripted(name: str, *, done_at: int | None = None) -> Any:
    """An async agent that says ``<name> <n>`` where n is the conversation's length, and
    ``DONE`` once the conversation has ``done_at`` messages."""

    async def agent(conversation: Conversation) -> str:
        n = len(conversation)
        if done_at is not None and n >= done_at:
            return f"{name} DONE"
        return f"{name} {n}"

    agent.__name__ = name
    return agent
