"""The team graph every manager-style team shares: a manager, its participants and a
result node, ordinary executors wired by ordinary edges.

How a team runs (one turn per superstep)::

    task ──> manager ──TurnRequest──> participant ──TurnReply──> manager ──> … ──TeamDone──> result

- The **manager** (:class:`TeamManager`) receives the task (a ``str``, a
  :class:`~plait_teams.Message` or a :class:`~plait_teams.Conversation`), keeps the
  conversation in its per-run state (``ctx.state``, checkpointed) and, each time, asks its
  :meth:`TeamManager.decide` who speaks next: a :class:`Speak` sends a :class:`TurnRequest`
  to that participant alone (``send_message(target=...)``); a :class:`Finish` sends a
  :class:`TeamDone` to the result node.
- A **participant** (:class:`~plait_teams.ParticipantExecutor`, made from anything
  :func:`~plait_teams.participant` adapts) answers a :class:`TurnRequest` in its own
  superstep — the turn — with a :class:`TurnReply` back to the manager, and emits a
  :class:`TurnEvent`. A human participant asks through ``ctx.request_info`` and answers
  when the run is resumed.
- The **result** node (:class:`TeamResult`) yields the final conversation (a team built
  alone) or sends it on (a team composed as a fragment: ``.as_connection()``,
  ``add_workflow``), so extra edges after the team attach to it (port
  ``conversation_out``); the manager is the entry (port ``entry``).

So every turn is a superstep: checkpointed, drawn by ``plait graph``, traced, resumable
after a crash, and scheduled by the pipelined schedule like any other node.

Building a new kind of team (teamsb: Magentic, handoff) on this module:

1. subclass :class:`TeamManager` and implement :meth:`TeamManager.decide` — given a
   :class:`TeamState` (the conversation so far, rounds taken, participants and their
   descriptions, the last speaker), return ``Speak(name, instruction=None)`` or
   ``Finish(reason)``. Keep what the manager must remember between turns (ledgers, stall
   counts, each participant's own history) in ``ctx.state`` as JSON data or registered
   types: it is checkpointed and restored on resume. Override :meth:`TeamManager.on_reply`
   to look at a reply before the next decision, :meth:`TeamManager.view` to choose what a
   participant sees, and add ``@handler`` methods for more messages (answers to the
   manager's own ``ctx.request_info``, e.g. plan review: a ``RequestResponse`` handler);
   call :meth:`TeamManager.continue_team` from them to decide the next turn.
2. subclass :class:`TeamBuilder`, whose :meth:`TeamBuilder.manager` returns that manager:
   participants, names, descriptions, ``max_rounds``, wiring, ports, build and
   composition come with it.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from plait import Executor, Workflow, WorkflowContext
from plait.spi import Handler, PluginManager
from plait_builders import ConnectionMixin, WorkflowBuilder
from typing_extensions import Self

from ._conversation import Conversation, Message
from ._messages import TeamDone, TeamFinished, TeamMessage, TurnReply, TurnRequest

if TYPE_CHECKING:
    from ._participants import Participant

__all__ = [
    "RESERVED",
    "Finish",
    "Speak",
    "TeamBuilder",
    "TeamManager",
    "TeamResult",
    "TeamState",
]

#: executor ids of a team's own nodes: no participant may take them
MANAGER = "manager"
RESULT = "result"
RESERVED = (MANAGER, RESULT)


# -- what a manager decides on, and decides -----------------------------------------------


@attrs.frozen
class TeamState:
    """What a manager (and a speaker-selection function) decides on.

    :param conversation: the conversation so far (the task first).
    :param round: how many turns were taken.
    :param participants: the participants' names, in the order they were given.
    :param descriptions: each participant's description, by name.
    :param last_speaker: who spoke last (``None`` before the first turn).
    """

    conversation: Conversation
    round: int
    participants: tuple[str, ...]
    descriptions: Mapping[str, str]
    last_speaker: str | None


@attrs.frozen
class Speak:
    """A manager's decision: ``speaker`` takes the next turn, with an optional
    ``instruction``."""

    speaker: str
    instruction: str | None = None


@attrs.frozen
class Finish:
    """A manager's decision: the team is done, because of ``reason``."""

    reason: str


# -- the manager ------------------------------------------------------------------------------


def _task_conversation(task: Any) -> Conversation:
    if isinstance(task, Conversation):
        return task
    if isinstance(task, Message):
        return Conversation((task,))
    return Conversation.of(task)


class TeamManager(Executor):
    """The executor that keeps a team's conversation and decides who speaks.

    Subclasses implement :meth:`decide` (see the module docstring). The conversation, the
    round count and the last speaker live in ``ctx.state`` (keys ``conversation``,
    ``round``, ``last``), so they are checkpointed with the run.

    :param team: the team's name (in events and requests).
    :param participants: the team's participants, in order.
    :param max_rounds: finish after this many turns (``None``: no limit here).
    :param id: the executor id (a team composed under a prefix gets ``prefix/manager``).
    """

    def __init__(
        self,
        team: str,
        participants: Sequence[Participant],
        *,
        max_rounds: int | None = None,
        id: str = MANAGER,
    ) -> None:
        if max_rounds is not None and (isinstance(max_rounds, bool) or max_rounds < 1):
            raise ValueError(
                f"team {team!r}: max_rounds must be a positive int, got {max_rounds!r}"
            )
        self.team = team
        self.participant_names = tuple(p.name for p in participants)
        self.descriptions = {p.name: p.description for p in participants}
        self.max_rounds = max_rounds
        super().__init__(id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        """The task (``str``, :class:`Message` or :class:`Conversation`) and each
        :class:`TurnReply`; and any ``@handler`` method of a subclass, first.

        Each sends a :class:`TurnRequest` or a :class:`TeamDone` (both a
        :class:`TeamMessage`, what participants and the result node take): declared by
        name, so a checkpoint holding one decodes (a workflow's declared types are what
        a resume may rebuild)."""
        sends = (TurnRequest, TeamDone)
        own = tuple(super().declare_handlers())
        return (
            *own,
            Handler(f"{type(self).__name__}.reply", TurnReply, sends, (), self._reply),
            *(
                Handler(f"{type(self).__name__}.task", tp, sends, (), self._start)
                for tp in (str, Message, Conversation)
            ),
        )

    # -- what subclasses implement or may override ------------------------------------

    @abc.abstractmethod
    async def decide(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> Speak | Finish:
        """Who speaks next (:class:`Speak`), or :class:`Finish`. Called after the task
        arrives and after every turn, unless ``max_rounds`` finished the team first."""

    async def on_start(self, conversation: Conversation, ctx: WorkflowContext[Any, Any]) -> None:
        """A new task arrived (its conversation is in ``ctx.state``): reset what the
        manager keeps between turns. Default: nothing."""

    async def on_reply(self, reply: TurnReply, ctx: WorkflowContext[Any, Any]) -> None:
        """A turn's reply was appended to the conversation. Default: nothing."""

    def view(self, speaker: str, conversation: Conversation) -> Conversation:
        """What ``speaker`` is shown of ``conversation`` (default: all of it)."""
        return conversation

    # -- the loop -------------------------------------------------------------------------

    def state_of(self, ctx: WorkflowContext[Any, Any]) -> TeamState:
        """The :class:`TeamState` of this run, from ``ctx.state``."""
        return TeamState(
            conversation=ctx.state["conversation"],
            round=ctx.state["round"],
            participants=self.participant_names,
            descriptions=self.descriptions,
            last_speaker=ctx.state.get("last"),
        )

    def node_id(self, local: str) -> str:
        """The executor id of this team's node ``local`` (a participant's name,
        ``result``): under the prefix this manager was composed with."""
        return self.id[: len(self.id) - len(MANAGER)] + local

    async def _start(self, task: Any, ctx: WorkflowContext[Any, Any]) -> None:
        conversation = _task_conversation(task)
        ctx.state.clear()
        ctx.state.update({"conversation": conversation, "round": 0, "last": None})
        await self.on_start(conversation, ctx)
        await self.continue_team(ctx)

    async def _reply(self, reply: TurnReply, ctx: WorkflowContext[Any, Any]) -> None:
        ctx.state["conversation"] = ctx.state["conversation"].append(reply.message)
        ctx.state["round"] = reply.round
        ctx.state["last"] = reply.speaker
        await self.on_reply(reply, ctx)
        await self.continue_team(ctx)

    async def continue_team(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Decide the next turn and send it (or finish): what the task and every reply
        lead to; a subclass's own handlers call it to go on."""
        state = self.state_of(ctx)
        if self.max_rounds is not None and state.round >= self.max_rounds:
            await self.finish(ctx, "max_rounds")
            return
        decision = await self.decide(state, ctx)
        if isinstance(decision, Finish):
            await self.finish(ctx, decision.reason)
            return
        if not isinstance(decision, Speak):
            raise TypeError(
                f"team {self.team!r}: {type(self).__name__}.decide returned {decision!r}, "
                "expected Speak(name) or Finish(reason)"
            )
        await self.ask(ctx, decision.speaker, decision.instruction)

    async def ask(
        self, ctx: WorkflowContext[Any, Any], speaker: str, instruction: str | None = None
    ) -> None:
        """Send the next turn to ``speaker``.

        :raises ValueError: ``speaker`` is not a participant, naming the participants.
        """
        if speaker not in self.descriptions:
            raise ValueError(
                f"team {self.team!r}: {speaker!r} is not a participant "
                f"(the participants: {', '.join(self.participant_names)})"
            )
        state = self.state_of(ctx)
        request = TurnRequest(
            self.team, speaker, state.round + 1, self.view(speaker, state.conversation), instruction
        )
        await ctx.send_message(request, target=self.node_id(speaker))

    async def finish(self, ctx: WorkflowContext[Any, Any], reason: str) -> None:
        """End the team: the final conversation goes to the result node."""
        state = self.state_of(ctx)
        await ctx.add_event(TeamFinished(self.team, reason, state.round))
        done = TeamDone(self.team, state.conversation, reason)
        await ctx.send_message(done, target=self.node_id(RESULT))


class TeamResult(Executor):
    """The team's exit: yields the final :class:`Conversation` (``emit="yield"``, a team
    built alone) or sends it on (``emit="send"``, a team composed as a fragment)."""

    #: why a spec cannot rebuild this node from data (see ``NodeSpec.nonportable``)
    nonportable = "it is a team's result node; rebuild the team with its builder"

    def __init__(self, emit: str, id: str = RESULT) -> None:
        if emit not in ("send", "yield"):
            raise ValueError(f"emit must be 'send' or 'yield', got {emit!r}")
        self.emit = emit
        super().__init__(id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler: a :class:`TeamDone` in, its conversation out."""
        sends = (Conversation,) if self.emit == "send" else ()
        yields = (Conversation,) if self.emit == "yield" else ()
        return (Handler("TeamResult", TeamMessage, sends, yields, self._done),)

    async def _done(self, message: TeamMessage, ctx: WorkflowContext[Any, Any]) -> None:
        if not isinstance(message, TeamDone):
            raise TypeError(f"{self.id!r} takes a TeamDone, got {message!r}")
        if self.emit == "send":
            await ctx.send_message(message.conversation)
        else:
            await ctx.yield_output(message.conversation)


# -- the builder every team shares -------------------------------------------------------------


class TeamBuilder(ConnectionMixin):
    """What every team builder shares: participants, ``max_rounds``, wiring, ports, build
    and composition (``.as_connection()``, ``add_workflow``).

    Subclasses implement :meth:`manager`. The graph: ``manager`` (the entry, port
    ``entry``), an edge from it to each participant and to ``result``, an edge from each
    participant back to it; ``result`` is the exit (port ``conversation_out``).

    :param name: the team's name (the workflow's, and its default prefix when composed).
    :param plugin_manager: passed on to the :class:`~plait_builders.WorkflowBuilder`.
    :param builder_options: other :class:`~plait_builders.WorkflowBuilder` options.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        **builder_options: Any,
    ) -> None:
        self.name = name
        self._plugin_manager = plugin_manager
        self._options = builder_options
        self._participants: list[Participant] = []
        self._max_rounds: int | None = None

    @property
    def team_name(self) -> str:
        """The name events and requests carry: the builder's name, else ``"team"``."""
        return self.name or "team"

    def participants(self, participants: Sequence[Any] | Mapping[str, Any]) -> Self:
        """Set the participants, in order: anything :func:`~plait_teams.participant`
        adapts (a :class:`~plait_teams.Participant`, an async or sync function, an
        ``agent`` executor, a :class:`plait.Workflow`); a mapping names them
        (``{"writer": fn}``).

        :raises ValueError: none given, a name given twice, or a reserved name
            (``manager``, ``result``).
        """
        from ._participants import participant

        if isinstance(participants, Mapping):
            made = [participant(obj, name=name) for name, obj in participants.items()]
        else:
            made = [participant(obj) for obj in participants]
        if not made:
            raise ValueError(f"{type(self).__name__} needs at least one participant")
        seen: set[str] = set()
        for p in made:
            if p.name in RESERVED:
                raise ValueError(
                    f"{type(self).__name__}: a participant may not be named {p.name!r} "
                    f"(reserved: {', '.join(RESERVED)})"
                )
            if p.name in seen:
                raise ValueError(f"{type(self).__name__}: two participants are named {p.name!r}")
            seen.add(p.name)
        self._participants = made
        return self

    def with_max_rounds(self, max_rounds: int | None) -> Self:
        """Finish after ``max_rounds`` turns (``None``: no limit of the team's own; the
        run's ``max_supersteps`` still bounds it).

        A team with a limit sets its workflow's default ``max_supersteps`` to what that
        many turns take (two supersteps a turn, and a few more).
        """
        if max_rounds is not None and (
            isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1
        ):
            raise ValueError(f"max_rounds must be a positive int or None, got {max_rounds!r}")
        self._max_rounds = max_rounds
        return self

    @abc.abstractmethod
    def manager(self) -> TeamManager:
        """A new manager for this team's participants and options."""

    def _participants_or_raise(self) -> list[Participant]:
        if not self._participants:
            raise ValueError(f"{type(self).__name__}: call participants([...]) first")
        return self._participants

    def _wire(self, emit: str) -> WorkflowBuilder:
        participants = self._participants_or_raise()
        manager = self.manager()
        options = dict(self._options)
        if self._max_rounds is not None:  # builder options are run defaults too
            options.setdefault("max_supersteps", 2 * self._max_rounds + 8)
        builder = WorkflowBuilder(self.name, plugin_manager=self._plugin_manager, **options)
        builder.add_executor(manager).set_start(manager)
        result = TeamResult(emit)
        for p in participants:
            node = p.executor(self.team_name)
            builder.add_edge(manager, node)
            builder.add_edge(node, manager)
        builder.add_edge(manager, result)
        builder.add_port("entry", manager, "in")
        builder.add_port("conversation_out", result, "out", semantics="conversation")
        return builder

    def to_builder(self) -> WorkflowBuilder:
        """The fragment form: its ``result`` node sends the final conversation on."""
        return self._wire("send")

    def to_workflow_builder(self) -> WorkflowBuilder:
        """The standalone form: its ``result`` node yields the final conversation."""
        return self._wire("yield")

    def build(self) -> Workflow:
        """Build the team as a workflow of its own (its output: the final
        :class:`Conversation`)."""
        return self.to_workflow_builder().build()
