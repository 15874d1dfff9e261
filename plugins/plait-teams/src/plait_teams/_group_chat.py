"""Group chat: participants take turns in one conversation; a manager picks who speaks.

:class:`GroupChatBuilder` (after MAF's ``GroupChatBuilder`` and AutoGen's
``RoundRobinGroupChat``/``SelectorGroupChat``):

- participants with descriptions (:meth:`~plait_teams.TeamBuilder.participants`,
  :meth:`GroupChatBuilder.add_participant`);
- speaker selection: round-robin (the default), a function ``(state) -> name | None``
  (:meth:`GroupChatBuilder.with_selector`; ``None`` finishes), or an LLM manager that picks
  the next speaker from the descriptions (:meth:`GroupChatBuilder.with_llm_manager`:
  structured output ``{"next": name, "done": bool}``, the name validated; an unknown name
  is retried once, then an error naming the choices);
- termination: ``max_rounds``, a condition on the conversation (a function of the
  :class:`~plait_teams.TeamState`, or an expression of the plait expression language over
  ``round``, ``last`` and ``messages``), or the manager saying done;
- what each participant sees: the full conversation (default) or a filter
  (:meth:`GroupChatBuilder.with_view`).

The graph is the team graph of :mod:`plait_teams._team`: a :class:`GroupChatManager` and
one node per participant, one turn per superstep.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from plait import ExpressionError, PlaitError, WorkflowContext
from typing_extensions import Self

from ._conversation import Conversation
from ._participants import participant
from ._team import Finish, Speak, TeamBuilder, TeamManager, TeamState

__all__ = [
    "GroupChatBuilder",
    "GroupChatManager",
    "LLMSelector",
    "SelectionError",
    "condition_data",
    "round_robin",
]

Selector = Callable[[TeamState], Any]
Condition = Callable[[TeamState], Any]
View = Callable[[str, Conversation], Conversation]


class SelectionError(PlaitError):
    """A speaker selection named no participant (an LLM manager's twice): names the
    choices."""


def round_robin(state: TeamState) -> str:
    """The participant after the last speaker, in the order given (the first to start)."""
    names = state.participants
    if state.last_speaker is None:
        return names[0]
    return names[(names.index(state.last_speaker) + 1) % len(names)]


class _ConditionData(Mapping[str, Any]):
    """What a termination expression reads: ``round``, ``last`` (the newest message as a
    dict) and ``messages`` (every message, built only when the expression reads it)."""

    __slots__ = ("_state",)

    _KEYS = ("round", "last", "messages", "speaker")

    def __init__(self, state: TeamState) -> None:
        self._state = state

    def __getitem__(self, key: str) -> Any:
        from ._conversation import unstructure_message

        state = self._state
        if key == "round":
            return state.round
        if key == "speaker":
            return state.last_speaker
        if key == "last":
            last = state.conversation.last
            return None if last is None else unstructure_message(last)
        if key == "messages":
            return [unstructure_message(m) for m in state.conversation]
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


def condition_data(state: TeamState) -> Mapping[str, Any]:
    """What a termination expression is evaluated over: ``round`` (turns taken),
    ``speaker`` (who spoke last), ``last`` (the newest message: ``role``, ``author``,
    ``text``, ``data``) and ``messages`` (all of them, oldest first)."""
    return _ConditionData(state)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


#: the structured output an LLM manager answers with
SELECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "next": {"type": ["string", "null"], "description": "who speaks next"},
        "done": {"type": "boolean", "description": "whether the task is complete"},
    },
    "required": ["next", "done"],
}


class LLMSelector:
    """Picks the next speaker by asking a model, from the participants' descriptions.

    The model answers ``{"next": name, "done": bool}`` (structured output through
    plait-llm's ``agent`` executor: parsed and checked against the schema, with its own
    corrective retry). ``done`` finishes the team; a ``next`` that names no participant is
    asked again once, saying what the choices are, then a :class:`SelectionError` naming
    them.

    :param agent: anything with ``async ask(prompt, ctx) -> dict`` (a plait-llm
        ``AgentExecutor`` with ``structured_output``), or a model (an ``llm`` model or
        its id), for which one is made.
    :param instruction: what the manager is told before the participants and the
        conversation.
    """

    def __init__(self, agent: Any, *, instruction: str | None = None) -> None:
        if not callable(getattr(agent, "ask", None)):
            agent = _agent_for(agent)
        self.agent = agent
        self.instruction = instruction or (
            "You manage a group chat. Choose who speaks next to make progress on the task, "
            "or say that the task is done."
        )

    def prompt(self, state: TeamState) -> str:
        """What the model is asked."""
        listed = "\n".join(
            f"- {name}: {state.descriptions.get(name) or '(no description)'}"
            for name in state.participants
        )
        return (
            f"{self.instruction}\n\nParticipants:\n{listed}\n\nConversation:\n"
            f"{state.conversation.transcript()}\n\n"
            'Answer with a JSON object: {"next": "<a participant\'s name>", "done": false}, '
            'or {"next": null, "done": true} when the task is done.'
        )

    async def __call__(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> str | None:
        """The next speaker's name, or ``None`` when the model says done.

        :raises SelectionError: the model named no participant twice.
        """
        choices = ", ".join(state.participants)
        prompt = self.prompt(state)
        answers: list[Any] = []
        for _ in range(2):
            answer = await self.agent.ask(prompt, ctx)
            answers.append(answer)
            if isinstance(answer, Mapping):
                if answer.get("done") is True:
                    return None
                name = answer.get("next")
                if isinstance(name, str) and name in state.participants:
                    return name
            prompt = (
                f"{self.prompt(state)}\n\nYour answer {json.dumps(answer, default=str)} "
                f"named no participant. Choose one of: {choices}."
            )
        raise SelectionError(
            f"the LLM manager named no participant twice ({answers[0]!r}, then "
            f"{answers[1]!r}); the choices: {choices}"
        )


def _agent_for(model: Any, options: Mapping[str, Any] | None = None) -> Any:
    """A plait-llm agent answering :data:`SELECTION_SCHEMA` on ``model`` (an ``llm``
    model, or a model id), with the model's ``options`` if given."""
    try:
        from plait_llm import AgentExecutor
    except ImportError:  # pragma: no cover - plait-llm is what the LLM manager runs on
        raise ImportError(
            "an LLM group chat manager needs plait-llm: pip install 'plait[llm]'"
        ) from None
    if isinstance(model, str):
        import llm

        model = llm.get_model(model)
    return AgentExecutor(
        "group_chat_manager", model, structured_output=SELECTION_SCHEMA, options=options
    )


class GroupChatManager(TeamManager):
    """The group chat's manager: termination first (the condition), then the selection.

    :param team: the team's name.
    :param participants: the participants.
    :param selector: ``(state) -> name | None`` (sync or async), or an
        :class:`LLMSelector`; ``None`` is round-robin.
    :param condition: finish when ``condition(state)`` is true (a function, or a compiled
        expression with ``evaluate(data)``), checked after every turn.
    :param view: what each participant sees: ``view(name, conversation)``.
    :param max_rounds: finish after this many turns.
    """

    def __init__(
        self,
        team: str,
        participants: Any,
        *,
        selector: Any = None,
        condition: Any = None,
        view: View | None = None,
        max_rounds: int | None = None,
    ) -> None:
        self.selector = selector
        self.condition = condition
        self.view_filter = view
        super().__init__(team, participants, max_rounds=max_rounds)

    async def decide(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> Speak | Finish:
        """Finish if the condition holds, else select."""
        if state.round > 0 and self.condition is not None and await self._holds(state):
            return Finish("condition")
        selector = self.selector
        if selector is None:
            return Speak(round_robin(state))
        if isinstance(selector, LLMSelector):
            chosen = await selector(state, ctx)
        else:
            chosen = await _maybe_await(selector(state))
        if chosen is None:
            return Finish("manager")
        if chosen not in state.descriptions:
            raise SelectionError(
                f"group chat {self.team!r}: the selector chose {chosen!r}, which is no "
                f"participant (the choices: {', '.join(state.participants)})"
            )
        return Speak(chosen)

    async def _holds(self, state: TeamState) -> bool:
        condition = self.condition
        if callable(getattr(condition, "evaluate", None)):
            try:
                value = condition.evaluate(condition_data(state))
            except ExpressionError as exc:
                raise ExpressionError(
                    f"group chat {self.team!r}: its termination condition failed: {exc}"
                ) from exc
        else:
            value = await _maybe_await(condition(state))
        return bool(value)

    def view(self, speaker: str, conversation: Conversation) -> Conversation:
        """The filter's view, else the whole conversation."""
        if self.view_filter is None:
            return conversation
        seen = self.view_filter(speaker, conversation)
        if not isinstance(seen, Conversation):
            raise TypeError(
                f"group chat {self.team!r}: the view for {speaker!r} returned {seen!r}, "
                "expected a Conversation"
            )
        return seen


class GroupChatBuilder(TeamBuilder):
    """Build a group chat (see the module docstring).

    ::

        chat = (
            GroupChatBuilder("review")
            .participants([writer, critic])
            .with_max_rounds(6)
            .with_termination("contains(last.text, 'APPROVED')")
            .build()
        )
        result = await chat.run("Write a haiku about tides")
        conversation = result.outputs[0]
    """

    def __init__(self, name: str | None = None, **options: Any) -> None:
        super().__init__(name, **options)
        self._selector: Any = None
        self._condition: Any = None
        self._condition_text: str | None = None
        self._view: View | None = None

    def add_participant(
        self, obj: Any, *, name: str | None = None, description: str | None = None
    ) -> Self:
        """Add one participant (anything :func:`~plait_teams.participant` adapts), with
        its description."""
        made = participant(obj, name=name, description=description)
        return self.participants([*self._participants, made])

    def with_round_robin(self) -> Self:
        """Participants speak in the order given (the default)."""
        self._selector = None
        return self

    def with_selector(self, selector: Selector) -> Self:
        """A function picks the next speaker: ``selector(state) -> name | None`` (sync or
        async; ``state`` a :class:`~plait_teams.TeamState`); ``None`` finishes."""
        if not callable(selector):
            raise TypeError(f"with_selector needs a function, got {selector!r}")
        self._selector = selector
        return self

    def with_llm_manager(self, agent: Any, *, instruction: str | None = None) -> Self:
        """A model picks the next speaker from the descriptions (:class:`LLMSelector`).

        :param agent: an ``llm`` model or its id, or an agent with ``ask`` (a plait-llm
            ``AgentExecutor`` with ``structured_output``).
        :param instruction: what the manager is told first.
        """
        self._selector = (
            agent if isinstance(agent, LLMSelector) else LLMSelector(agent, instruction=instruction)
        )
        return self

    def with_termination(self, condition: str | Condition) -> Self:
        """Finish when ``condition`` holds, checked after every turn: a function of the
        :class:`~plait_teams.TeamState` (sync or async), or an expression of the plait
        expression language over ``round``, ``speaker``, ``last`` and ``messages``
        (:func:`condition_data`), compiled now.

        :raises plait.ExpressionError: the expression does not compile, with its position.
        """
        if isinstance(condition, str):
            self._condition = self._compile(condition)
            self._condition_text = condition
        elif callable(condition):
            self._condition, self._condition_text = condition, None
        else:
            raise TypeError(
                f"with_termination needs an expression or a function, got {condition!r}"
            )
        return self

    def _compile(self, text: str) -> Any:
        from plait import get_plugin_manager

        manager = self._plugin_manager or get_plugin_manager()
        language = manager.registry("expression_language").get(
            "plait", what="a group chat's termination condition"
        )
        return language.compile(text)

    def with_view(self, view: View) -> Self:
        """What each participant sees: ``view(name, conversation) -> Conversation``
        (default: the whole conversation)."""
        if not callable(view):
            raise TypeError(f"with_view needs a function, got {view!r}")
        self._view = view
        return self

    def manager(self) -> GroupChatManager:
        """The group chat's manager."""
        return GroupChatManager(
            self.team_name,
            self._participants_or_raise(),
            selector=self._selector,
            condition=self._condition,
            view=self._view,
            max_rounds=self._max_rounds,
        )
