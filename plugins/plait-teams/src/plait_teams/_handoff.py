"""Handoff: agents pass the conversation to one another along declared edges.

After MAF's ``HandoffBuilder`` (and AutoGen's ``Swarm``). The team is the graph every team
shares (:mod:`plait_teams._team`): a ``manager`` (here the coordinator,
:class:`HandoffManager`), one executor per agent, and a ``result`` node. The coordinator
gives the conversation to the agent whose turn it is; the agent answers (the turn, a
superstep); the coordinator reads the answer's decision
(:func:`~plait_teams.read_decision`: the message's ``data``) and checks it against the
rules (:class:`~plait_teams.HandoffRules`):

- a handoff to an allowed target: a handoff event, and the target takes the next turn;
- a handoff outside the rules: a :class:`~plait_teams.HandoffError` naming the allowed
  targets (the run fails);
- the answer needs the user: a :class:`UserInputRequest` (``ctx.request_info``, answered
  with a ``str``); the run ends idle with the request pending, and when the answer comes
  (``plait resume``, ``plait ui``, ``Workflow.resume(responses=...)``) the same agent goes
  on with the user's message added;
- an answer: the team is done, and gives the conversation (the answer last).

How an agent hands off: a Python agent returns :class:`~plait_teams.Handoff` (or a
:class:`~plait_teams.Decision`, or a :class:`~plait_teams.Message` whose ``data`` is a
decision); a plait-llm ``agent`` (:class:`HandoffAgentParticipant`) calls a tool
``handoff_to_<target>(reason)`` when its model supports llm's tools, else answers with
structured output (:func:`~plait_teams.decision_schema`, its allowed targets in the
enum); either way its system prompt says whom it may hand off to.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from plait import RequestResponse, WorkflowContext, handler
from plait.spi import PluginManager
from typing_extensions import Self

from ._conversation import Conversation, Message, as_message
from ._handoff_rules import (
    Decision,
    Handoff,
    HandoffError,
    HandoffRules,
    decision_schema,
    read_decision,
)
from ._messages import TurnReply
from ._participants import AgentParticipant
from ._stored import strict_hooks
from ._team import MANAGER, Finish, Speak, TeamBuilder, TeamManager, TeamState

if TYPE_CHECKING:
    from ._participants import Participant

__all__ = ["HandoffAgentParticipant", "HandoffBuilder", "HandoffManager", "UserInputRequest"]


@attrs.frozen
class UserInputRequest:
    """What a handoff team asks the user when an agent's answer needs them (the request
    of ``ctx.request_info``; the answer is a ``str``).

    :param team: the team's name.
    :param agent: the agent that asks (it goes on when the answer comes).
    :param question: what it said.
    """

    team: str
    agent: str
    question: str


class HandoffManager(TeamManager):
    """The coordinator of a handoff team (built by :class:`HandoffBuilder`).

    Its ``ctx.state`` holds, besides the conversation and the round count, whose turn it
    is (``current``), whether the user is being asked (``waiting``) and whether the team
    answered (``done``).

    Events: ``{"handoff": {"from", "to", "reason"}}`` per handoff and ``{"handoff_user":
    {"agent", "question"}}`` when it asks the user; the agents' turn events and the team's
    :class:`~plait_teams.TeamFinished` as in every team.

    :param team: the team's name.
    :param participants: the agents, in order.
    :param rules: the start agent and who may hand off to whom.
    :param max_rounds: the most agent turns a run may take.
    :param id: the executor id.
    """

    request_types = (UserInputRequest,)

    def __init__(
        self,
        team: str,
        participants: Sequence[Participant],
        rules: HandoffRules,
        *,
        max_rounds: int | None = None,
        id: str = MANAGER,
    ) -> None:
        self.rules = rules
        super().__init__(team, participants, max_rounds=max_rounds, id=id)

    #: why a spec cannot rebuild this node from data alone
    nonportable = "a handoff coordinator is built by HandoffBuilder; rebuild it with that"

    async def on_start(self, conversation: Conversation, ctx: WorkflowContext[Any, Any]) -> None:
        """The start agent takes the first turn."""
        ctx.state.update(current=self.rules.start, waiting=False, done=False)

    async def on_reply(self, reply: TurnReply, ctx: WorkflowContext[Any, Any]) -> None:
        """Read the answer's decision: hand off (checked against the rules), ask the user,
        or answer."""
        state = ctx.state
        source = reply.speaker
        decision = _decision(reply.message)
        if decision.handoff_to is not None:
            self.rules.check(source, decision.handoff_to)
            await ctx.add_event(
                {"handoff": {"from": source, "to": decision.handoff_to, "reason": decision.reason}}
            )
            state["current"] = decision.handoff_to
        elif decision.needs_user:
            await ctx.add_event({"handoff_user": {"agent": source, "question": decision.text}})
            state["waiting"] = True
            await ctx.request_info(UserInputRequest(self.team, source, decision.text), str)
        else:
            state["done"] = True

    async def continue_team(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Go on, unless the user is being asked (their answer goes on)."""
        if ctx.state.get("waiting"):
            return
        await super().continue_team(ctx)

    async def decide(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> Speak | Finish:
        """The agent whose turn it is speaks, until one answers."""
        if ctx.state["done"]:
            return Finish("answered")
        return Speak(ctx.state["current"])

    @handler
    async def user_replied(self, reply: RequestResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """The user's answer joins the conversation; the agent that asked goes on."""
        state = ctx.state
        if not state.get("waiting"):
            raise HandoffError(
                f"team {self.team!r}: a user's answer came, but no agent asked",
                source=None,
                target="",
                allowed=(),
            )
        value = reply.value
        text = value if isinstance(value, str) else str(value)
        state["conversation"] = state["conversation"].append(Message("user", "user", text))
        state["waiting"] = False
        await self.continue_team(ctx)


def _decision(message: Message) -> Decision:
    """The decision in an agent's message: its ``data`` when that says one, else an
    answer (the text)."""
    data = message.data
    if isinstance(data, dict) and ("handoff_to" in data or "needs_user" in data):
        return attrs.evolve(
            read_decision(data), text=message.text if "text" not in data else str(data["text"])
        )
    return Decision(text=message.text)


def _handoff_message(value: Any, author: str) -> Message:
    """What a Python agent of a handoff team answered, as a message: a :class:`Handoff`
    becomes a message whose ``data`` is the decision."""
    if isinstance(value, Handoff):
        decision = read_decision(value)
        text = value.text or f"Handing off to {value.target}: {value.reason}".rstrip(": ")
        return Message("assistant", author, text, data={**decision.to_dict(), "text": text})
    if isinstance(value, Decision):
        return Message("assistant", author, value.text, data=value.to_dict())
    return as_message(value, author=author)


class HandoffBuilder(TeamBuilder):
    """A handoff team: the start agent answers first; an agent hands the conversation to
    another along the edges :meth:`add_handoff` declares, asks the user, or answers.

    ::

        team = (
            HandoffBuilder("support")
            .participants({"triage": triage, "refund": refund, "orders": orders})
            .with_start_agent("triage")
            .add_handoff("triage", ["refund", "orders"])
            .build()
        )

    The output is the team's :class:`~plait_teams.Conversation`, the answer last.
    See :mod:`plait_teams._handoff` for the graph, the decisions and the events.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        **builder_options: Any,
    ) -> None:
        super().__init__(name, plugin_manager=plugin_manager, **builder_options)
        self._start: str | None = None
        self._edges: dict[str, list[str]] = {}
        self.with_max_rounds(50)

    def with_start_agent(self, agent: str | Any) -> Self:
        """The agent that takes the first turn (its name, or the object given to
        :meth:`participants`); default: the first participant."""
        self._start = _name_of(agent)
        return self

    def add_handoff(self, source: str | Any, targets: Iterable[str | Any]) -> Self:
        """Let ``source`` hand off to each of ``targets`` (names, or the objects given to
        :meth:`participants`). Calls add up."""
        found = self._edges.setdefault(_name_of(source), [])
        for target in targets:
            name = _name_of(target)
            if name not in found:
                found.append(name)
        return self

    def rules(self) -> HandoffRules:
        """The team's rules.

        :raises HandoffError: a rule names an agent the team does not have (every
            problem, each with the names there are).
        """
        participants = self._participants_or_raise()
        names = [p.name for p in participants]
        rules = HandoffRules.build(names, self._start or names[0], self._edges)
        problems = rules.problems()
        if problems:
            raise HandoffError(
                "HandoffBuilder: " + "; ".join(problems), source=None, target="", allowed=names
            )
        return rules

    def participants(self, participants: Any) -> Self:
        """Set the agents, as :meth:`TeamBuilder.participants` does; a Python agent may
        also return a :class:`~plait_teams.Handoff` or a :class:`~plait_teams.Decision`,
        and a plait-llm ``agent`` hands off by a tool call or structured output
        (:class:`HandoffAgentParticipant`)."""
        super().participants(participants)
        self._participants = [_for_handoff(p) for p in self._participants]
        return self

    def manager(self) -> HandoffManager:
        """A new coordinator for this team (its LLM agents learn their handoff targets)."""
        rules = self.rules()
        # in place: the wiring holds this list
        self._participants[:] = [
            _with_targets(p, rules, self._participants) for p in self._participants
        ]
        return HandoffManager(
            self.team_name, self._participants, rules, max_rounds=self._max_rounds
        )


def _name_of(agent: Any) -> str:
    if isinstance(agent, str):
        return agent
    for attribute in ("name", "id", "__name__"):
        value = getattr(agent, attribute, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"name an agent by its name (a str), got {agent!r}")


def _for_handoff(made: Participant) -> Participant:
    """A Python agent's answer may be a :class:`Handoff`."""
    from ._participants import FunctionParticipant

    if not isinstance(made, FunctionParticipant):
        return made
    fn = made.fn
    author = made.name

    async def answer(argument: Any) -> Message:
        value = fn(argument)
        if inspect.isawaitable(value):
            value = await value
        return _handoff_message(value, author)

    return FunctionParticipant(answer, made.name, made.description, prompt=made.prompt)


def _with_targets(
    made: Participant, rules: HandoffRules, team: Sequence[Participant]
) -> Participant:
    """An LLM agent hands off by a tool call (a model with tools) or structured output."""
    if not isinstance(made, AgentParticipant) or isinstance(made, HandoffAgentParticipant):
        return made
    if getattr(made.agent, "structured_output", None) is not None:
        return made  # the agent's own schema answers: its data says the decision
    described = {p.name: p.description for p in team}
    targets = {t: described.get(t, "") for t in rules.allowed(made.name)}
    return HandoffAgentParticipant(made.agent, made.name, made.description, targets=targets)


class HandoffAgentParticipant(AgentParticipant):
    """A plait-llm ``agent`` in a handoff team: it hands off by calling a tool
    ``handoff_to_<target>(reason)`` (a model that supports llm's tools) or by structured
    output (:func:`~plait_teams.decision_schema`, any other model). Its system prompt says
    whom it may hand off to, and how to ask the user.

    :param agent: the ``agent`` executor.
    :param name: the participant's name.
    :param description: what it does.
    :param targets: the agents it may hand off to, with their descriptions.
    :param via: ``"tool"``, ``"structured_output"``, or ``None``: a tool when the model
        supports tools.
    """

    def __init__(
        self,
        agent: Any,
        name: str | None = None,
        description: str = "",
        *,
        targets: dict[str, str],
        via: str | None = None,
    ) -> None:
        super().__init__(agent, name, description)
        self.targets = dict(targets)
        supports_tools = bool(getattr(agent.model, "supports_tools", False))
        self.via = via or ("tool" if supports_tools and targets else "structured_output")

    def _guide(self) -> str:
        lines = [f"- {t}: {d or '(no description)'}" for t, d in self.targets.items()]
        if self.via == "tool":
            how = "call the tool handoff_to_<name> with your reason"
            ask = "If you need the user to answer before you can go on, end with a question."
        else:
            how = "answer as JSON with 'handoff_to' set to its name and 'reason' saying why"
            ask = (
                "Answer as JSON. Put your answer in 'text'. If you need the user to answer "
                "before you can go on, set 'needs_user' to true."
            )
        hand = (
            f"To hand the conversation to another agent, {how}. You may hand off to:\n"
            + "\n".join(lines)
            if lines
            else ""
        )
        return "\n".join(x for x in (hand, ask) if x)

    def _agent_for(self, recorded: list[tuple[str, str]]) -> Any:
        agent = self.agent
        guide = self._guide()
        system = f"{agent.system}\n\n{guide}" if agent.system else guide
        tools = list(agent.tools)
        schema = None
        if self.via == "tool":
            tools.extend(_handoff_tool(target, recorded) for target in self.targets)
        else:
            schema = decision_schema(list(self.targets))
        return type(agent)(
            agent.id,
            agent.model,
            system=system,
            instruction=agent.instruction,
            options=agent.options,
            structured_output=schema,
            tools=tools,
        )

    async def respond(self, request: Any, ctx: WorkflowContext[Any, Any]) -> Message:
        """Ask the model; a handoff tool it called, or its structured answer, is the
        message's decision."""
        from ._participants import prompt_of

        recorded: list[tuple[str, str]] = []
        answer = await self._agent_for(recorded).ask(prompt_of(request), ctx)
        if isinstance(answer, dict):
            decision = read_decision(answer)
            return Message("assistant", self.name, decision.text, data=decision.to_dict())
        text = str(answer)
        if recorded:
            target, reason = recorded[0]
            decision = Decision(text=text, handoff_to=target, reason=reason)
            return Message("assistant", self.name, text, data=decision.to_dict())
        return Message("assistant", self.name, text)


def _handoff_tool(target: str, recorded: list[tuple[str, str]]) -> Any:
    """The tool ``handoff_to_<target>(reason)``: calling it records the handoff."""

    def handoff(reason: str) -> str:
        recorded.append((target, reason))
        return f"The conversation goes to {target} after your answer."

    handoff.__name__ = f"handoff_to_{target}"
    handoff.__doc__ = f"Hand the conversation to {target}, saying why."
    return handoff


#: the checkpoint hooks of a handoff team's question to the user (a team nested in another
#: workflow passes it out to a run that does not declare the class)
USER_INPUT_HOOKS = strict_hooks(
    UserInputRequest, {"team": str, "agent": str, "question": str}, requires=__name__
)
