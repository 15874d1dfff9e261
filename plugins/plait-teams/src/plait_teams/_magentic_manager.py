"""What a Magentic manager is asked, and the LLM manager that answers through a model.

A Magentic manager answers three questions (:class:`MagenticManager`), each given a
:class:`MagenticContext` (the task, the participants and their descriptions, the
conversation so far, the current task ledger and the round's counters):

- :meth:`~MagenticManager.plan`: the task ledger (facts and plan), at the start and at
  each re-plan (``context.ledger`` is then the plan that stalled; ``context.feedback`` is a
  reviewer's comments when a plan review asked for another plan);
- :meth:`~MagenticManager.progress`: the round's progress ledger;
- :meth:`~MagenticManager.final_answer`: the answer the team gives when it stops.

A Python manager (any object with these three async methods) answers with a
:class:`~plait_teams.TaskLedger` / :class:`~plait_teams.ProgressLedger` or their dicts, and
a ``str``; tests use scripted ones. :class:`LLMMagenticManager` asks a model (plait-llm's
``agent`` executor, any ``llm`` model) for each ledger as structured output: the answer is
parsed and validated against the ledger's schema, with one corrective retry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from ._conversation import Conversation
from ._ledger import (
    ProgressLedger,
    TaskLedger,
    progress_ledger_schema,
    task_ledger_schema,
)

__all__ = ["LLMMagenticManager", "MagenticContext", "MagenticManager"]


@attrs.frozen
class MagenticContext:
    """What a Magentic manager knows when it is asked.

    :param task: the task the team was given.
    :param participants: each participant's name and description, in the team's order.
    :param conversation: what was said so far: the task, the plans, the instructions and
        the answers, oldest first.
    :param ledger: the current task ledger (``None`` before the first plan).
    :param round: the rounds run so far.
    :param stalls: the stall count (rounds in a loop or without progress, net).
    :param resets: the re-plans so far.
    :param feedback: a plan reviewer's comments, when they asked for another plan.
    """

    task: str
    participants: Mapping[str, str]
    conversation: Conversation = attrs.field(factory=Conversation)
    ledger: TaskLedger | None = None
    round: int = 0
    stalls: int = 0
    resets: int = 0
    feedback: str | None = None

    @property
    def names(self) -> list[str]:
        """The participants' names, in order."""
        return list(self.participants)


@runtime_checkable
class MagenticManager(Protocol):
    """What a Magentic team's manager answers (see the module docstring)."""

    async def plan(self, context: MagenticContext) -> TaskLedger | Mapping[str, Any]:
        """The task ledger: facts and plan."""
        ...

    async def progress(self, context: MagenticContext) -> ProgressLedger | Mapping[str, Any]:
        """This round's progress ledger."""
        ...

    async def final_answer(self, context: MagenticContext) -> str:
        """The team's answer to the task."""
        ...


def _team(context: MagenticContext) -> str:
    return "\n".join(
        f"- {name}: {text or '(no description)'}" for name, text in context.participants.items()
    )


def _transcript(context: MagenticContext) -> str:
    return context.conversation.transcript() or "(nothing yet)"


class LLMMagenticManager:
    """A Magentic manager that asks an ``llm`` model (through plait-llm) for each ledger as
    validated structured output, and for the final answer as text.

    :param model: an ``llm`` model id or alias, or an ``llm.Model``.
    :param system: the system prompt of every call.
    :param options: the model's options (``temperature`` …).
    """

    def __init__(
        self,
        model: Any,
        *,
        system: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.system = system
        self.options = dict(options or {})

    def _agent(self, schema: Mapping[str, Any] | None) -> Any:
        import llm
        from plait_llm import AgentExecutor

        model = llm.get_model(self.model) if isinstance(self.model, str) else self.model
        return AgentExecutor(
            "magentic-manager",
            model,
            system=self.system,
            options=self.options,
            structured_output=schema,
        )

    async def plan(self, context: MagenticContext) -> Mapping[str, Any]:
        """Ask for facts and a plan (the previous plan and a reviewer's comments, when
        there are)."""
        prompt = f"You lead a team on this task:\n{context.task}\n\nThe team:\n{_team(context)}\n\n"
        if context.ledger is not None:
            prompt += (
                f"The previous plan made no progress:\n{context.ledger.plan}\n"
                f"What was said:\n{_transcript(context)}\n\n"
            )
        if context.feedback:
            prompt += f"A reviewer asks for another plan: {context.feedback}\n\n"
        prompt += (
            "Write the facts you know and the facts to find out, and a short plan whose "
            "steps each name the team member who does it."
        )
        answer: Mapping[str, Any] = await self._agent(task_ledger_schema()).ask(prompt)
        return answer

    async def progress(self, context: MagenticContext) -> Mapping[str, Any]:
        """Ask whether the task is done, whether the team loops or progresses, and who
        speaks next with what instruction."""
        ledger = context.ledger
        prompt = (
            f"Task:\n{context.task}\n\nPlan:\n{ledger.plan if ledger else ''}\n\n"
            f"The team:\n{_team(context)}\n\nWhat was said:\n{_transcript(context)}\n\n"
            "Is the task done? Is the team repeating itself? Is it making progress? Who of "
            f"{', '.join(context.names)} speaks next, and what do you ask them to do?"
        )
        schema = progress_ledger_schema(context.names)
        answer: Mapping[str, Any] = await self._agent(schema).ask(prompt)
        return answer

    async def final_answer(self, context: MagenticContext) -> str:
        """Ask for the team's answer to the task, from what was said."""
        prompt = (
            f"Task:\n{context.task}\n\nWhat the team said:\n{_transcript(context)}\n\n"
            "Give the final answer to the task."
        )
        return str(await self._agent(None).ask(prompt))

    def __repr__(self) -> str:
        model = self.model if isinstance(self.model, str) else getattr(self.model, "model_id", "")
        return f"LLMMagenticManager({json.dumps(str(model))})"
