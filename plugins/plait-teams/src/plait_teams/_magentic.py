"""Magentic orchestration: a manager with a task ledger and a progress ledger per round.

After MAF's ``MagenticBuilder`` (and AutoGen's ``MagenticOneGroupChat``). The team is the
graph every team shares (:mod:`plait_teams._team`): a ``manager`` executor
(:class:`MagenticManagerExecutor`, a :class:`~plait_teams.TeamManager`), one executor per
participant and a ``result`` node. Each round is two supersteps: the manager writes the
round's progress ledger and sends the next speaker its own conversation, ending with the
instruction (targeted); the speaker answers (the turn); the answer comes back to the
manager, which appends it to every participant's conversation (the broadcast) and starts
the next round.

The manager's state (the task, the task ledger, the counters and each participant's
conversation) is its ``ctx.state``, so every checkpoint holds it: a resumed team carries on
with the same histories. Conversations are stored through the blob layer, so a round costs
the checkpoint what it adds.

The manager's answers come from a :class:`~plait_teams.MagenticManager` (a Python object,
or :class:`~plait_teams.LLMMagenticManager` on a model). The team's conversation (its
output) records the task, each plan, each instruction and each answer, and ends with the
manager's final answer.

Limits: ``max_round_count`` rounds, then the final answer; ``max_stall_count`` stalled
rounds (in a loop, or no progress) in a row, net of progressing ones, then a re-plan
(``max_reset_count`` re-plans, then the final answer). With ``plan_review``, the first
plan goes out as a :class:`PlanReviewRequest` (``ctx.request_info``); a
:class:`PlanReviewResponse` approves it, replaces it with an edited plan, or sends comments
that make the manager plan again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError, WorkflowContext, handler
from plait.spi import PluginManager
from typing_extensions import Self

from ._conversation import Conversation, Message
from ._ledger import TaskLedger, read_progress_ledger, read_task_ledger
from ._magentic_manager import MagenticContext, MagenticManager
from ._messages import TurnReply, TurnRequest
from ._stored import strict_hooks
from ._team import MANAGER, Finish, Speak, TeamBuilder, TeamManager, TeamState

if TYPE_CHECKING:
    from ._participants import Participant

__all__ = [
    "MagenticBuilder",
    "MagenticError",
    "MagenticManagerExecutor",
    "MagenticOptions",
    "PlanReviewRequest",
    "PlanReviewResponse",
]


@attrs.frozen
class PlanReviewRequest:
    """The plan a Magentic manager asks a human to review before work starts.

    :param task: the team's task.
    :param facts: the task ledger's facts.
    :param plan: the plan to approve or edit.
    """

    task: str
    facts: str
    plan: str


@attrs.frozen
class PlanReviewResponse:
    """A reviewer's answer to a :class:`PlanReviewRequest`.

    :param approved: go on with the plan (or with ``plan``, when given).
    :param plan: an edited plan that replaces the manager's (implies approval).
    :param comments: when not approved and no plan is given: what the manager's next
        plan should take into account.
    """

    approved: bool = True
    plan: str | None = None
    comments: str = ""


def _count(minimum: int) -> Any:
    return [attrs.validators.instance_of(int), attrs.validators.ge(minimum)]


@attrs.frozen
class MagenticOptions:
    """The limits of a Magentic team (see the module docstring).

    :param max_round_count: rounds before the manager must answer.
    :param max_stall_count: stalled rounds (net) before a re-plan.
    :param max_reset_count: re-plans before the manager must answer.
    :param plan_review: ask a human to review the first plan.
    """

    max_round_count: int = attrs.field(default=20, validator=_count(1))
    max_stall_count: int = attrs.field(default=3, validator=_count(0))
    max_reset_count: int = attrs.field(default=2, validator=_count(0))
    plan_review: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))


class MagenticError(PlaitError):
    """A Magentic manager's answer could not be used (see :class:`LedgerError`)."""


class MagenticManagerExecutor(TeamManager):
    """The manager node of a Magentic team (built by :class:`MagenticBuilder`).

    Besides what every :class:`~plait_teams.TeamManager` keeps (the conversation, the
    round count), its ``ctx.state`` holds the task, the task ledger (as data), the stall
    and reset counts, whether a plan review is pending, and each participant's own
    conversation (``histories``), so a resumed team carries on with the same histories.

    Events (``ctx.add_event``, data of a :class:`plait.CustomEvent`): ``{"magentic":
    "task_ledger", "facts", "plan", "resets"}``, ``{"magentic": "plan_review",
    "approved", "edited"}``, ``{"magentic": "progress_ledger", "round", ...the ledger,
    "stalls"}`` and ``{"magentic": "reset", "round", "resets"}``; the participants' turn
    events and the team's :class:`~plait_teams.TeamFinished` as in every team.

    :param team: the team's name.
    :param participants: the participants, in order.
    :param manager: what answers the manager's questions (:class:`MagenticManager`).
    :param options: the team's limits and plan review.
    :param id: the executor id.
    """

    request_types = (PlanReviewRequest,)

    def __init__(
        self,
        team: str,
        participants: Sequence[Participant],
        manager: MagenticManager,
        options: MagenticOptions,
        *,
        id: str = MANAGER,
    ) -> None:
        for method in ("plan", "progress", "final_answer"):
            if not callable(getattr(manager, method, None)):
                raise TypeError(
                    f"a Magentic manager needs async methods plan, progress and "
                    f"final_answer; {manager!r} has no {method}"
                )
        self.manager = manager
        self.options = options
        super().__init__(team, participants, max_rounds=options.max_round_count, id=id)

    #: why a spec cannot rebuild this node from data alone
    nonportable = "a Magentic manager holds Python objects; rebuild it with MagenticBuilder"

    # -- what the manager is asked on -----------------------------------------------------

    def _context(
        self, ctx: WorkflowContext[Any, Any], feedback: str | None = None
    ) -> MagenticContext:
        state = ctx.state
        ledger = state.get("ledger")
        return MagenticContext(
            task=state["task"],
            participants=self.descriptions,
            conversation=state["conversation"],
            ledger=read_task_ledger(ledger) if ledger is not None else None,
            round=state["round"],
            stalls=state["stalls"],
            resets=state["resets"],
            feedback=feedback,
        )

    def _say(self, ctx: WorkflowContext[Any, Any], message: Message, to: str | None = None) -> None:
        """Record ``message`` in the team's conversation and in ``to``'s history
        (everyone's when ``to`` is None: the broadcast)."""
        state = ctx.state
        state["conversation"] = state["conversation"].append(message)
        self._tell(ctx, message, to)

    def _tell(
        self, ctx: WorkflowContext[Any, Any], message: Message, to: str | None = None
    ) -> None:
        histories: dict[str, Conversation] = ctx.state["histories"]
        for name in [to] if to is not None else list(histories):
            histories[name] = histories[name].append(message)

    # -- the team's hooks ------------------------------------------------------------------

    async def on_start(self, conversation: Conversation, ctx: WorkflowContext[Any, Any]) -> None:
        """Plan; with plan review, ask for it (the team waits for the answer)."""
        task = "\n".join(m.text for m in conversation if m.role == "user")
        ctx.state.update(
            task=task or conversation.transcript(),
            ledger=None,
            stalls=0,
            resets=0,
            reviewing=False,
            histories={name: conversation for name in self.participant_names},
        )
        await self._plan(ctx)
        if self.options.plan_review:
            await self._ask_review(ctx)

    async def continue_team(self, ctx: WorkflowContext[Any, Any]) -> None:
        """Go on, unless a plan review is pending (its answer goes on)."""
        if ctx.state.get("reviewing"):
            return
        await super().continue_team(ctx)

    async def on_reply(self, reply: TurnReply, ctx: WorkflowContext[Any, Any]) -> None:
        """Every participant hears the answer (the team's conversation has it already)."""
        self._tell(ctx, reply.message)

    async def decide(self, state: TeamState, ctx: WorkflowContext[Any, Any]) -> Speak | Finish:
        """The round's progress ledger: finish when the request is satisfied; count a
        stall; past ``max_stall_count`` re-plan (past ``max_reset_count``, finish);
        else the next speaker and its instruction."""
        options = self.options
        store = ctx.state
        while True:  # at most twice: a re-plan resets the stall count
            answer = await self.manager.progress(self._context(ctx))
            progress = read_progress_ledger(answer, list(self.participant_names))
            store["stalls"] = (
                store["stalls"] + 1 if progress.stalled else max(0, store["stalls"] - 1)
            )
            await ctx.add_event(
                {
                    "magentic": "progress_ledger",
                    "round": state.round + 1,
                    **progress.to_dict(),
                    "stalls": store["stalls"],
                }
            )
            if progress.is_request_satisfied:
                return Finish("satisfied")
            if store["stalls"] <= options.max_stall_count:
                return Speak(progress.next_speaker, progress.instruction)
            if store["resets"] >= options.max_reset_count:
                return Finish("max_reset_count")
            store["resets"] += 1
            store["stalls"] = 0
            await ctx.add_event(
                {"magentic": "reset", "round": state.round + 1, "resets": store["resets"]}
            )
            await self._plan(ctx)
            # the participants start again from the task and the new plan
            plan = store["conversation"][-1]
            fresh = Conversation.of(store["task"]).append(plan)
            store["histories"] = {name: fresh for name in self.participant_names}

    async def ask(
        self, ctx: WorkflowContext[Any, Any], speaker: str, instruction: str | None = None
    ) -> None:
        """Send ``speaker`` its own conversation, ending with the instruction (which the
        team's conversation records too)."""
        if speaker not in self.descriptions:
            raise ValueError(
                f"team {self.team!r}: {speaker!r} is not a participant "
                f"(the participants: {', '.join(self.participant_names)})"
            )
        if instruction:
            message = Message("user", MANAGER, instruction, data={"instruction_for": speaker})
            self._say(ctx, message, to=speaker)
        state = ctx.state
        request = TurnRequest(
            self.team, speaker, state["round"] + 1, state["histories"][speaker], None
        )
        await ctx.send_message(request, target=self.node_id(speaker))

    async def finish(self, ctx: WorkflowContext[Any, Any], reason: str) -> None:
        """The manager's final answer ends the conversation, then the team is done."""
        answer = await self.manager.final_answer(self._context(ctx))
        if not isinstance(answer, str):
            raise MagenticError(
                f"team {self.team!r}: the Magentic manager's final_answer gave {answer!r}, "
                "not a str"
            )
        self._say(ctx, Message("assistant", MANAGER, answer, data={"final_answer": reason}))
        await super().finish(ctx, reason)

    # -- planning and plan review ------------------------------------------------------------

    async def _plan(self, ctx: WorkflowContext[Any, Any], feedback: str | None = None) -> None:
        """Ask the manager for a task ledger, keep it and tell everyone the plan."""
        state = ctx.state
        ledger = read_task_ledger(await self.manager.plan(self._context(ctx, feedback)))
        state["ledger"] = ledger.to_dict()
        await ctx.add_event(
            {"magentic": "task_ledger", **ledger.to_dict(), "resets": state["resets"]}
        )
        self._say(ctx, _plan_message(ledger))

    async def _ask_review(self, ctx: WorkflowContext[Any, Any]) -> None:
        state = ctx.state
        ledger = read_task_ledger(state["ledger"])
        state["reviewing"] = True
        await ctx.request_info(
            PlanReviewRequest(task=state["task"], facts=ledger.facts, plan=ledger.plan),
            PlanReviewResponse,
        )

    @handler
    async def review(self, review: PlanReviewResponse, ctx: WorkflowContext[Any, Any]) -> None:
        """A plan review's answer: approve, edit (the edited plan replaces the manager's)
        or neither (the manager plans again with the comments, and asks again)."""
        state = ctx.state
        if not state.get("reviewing"):
            raise MagenticError(
                f"team {self.team!r}: a plan review answer came, but none was asked"
            )
        edited = review.plan is not None
        await ctx.add_event(
            {"magentic": "plan_review", "approved": review.approved or edited, "edited": edited}
        )
        if review.plan is not None:
            ledger = attrs.evolve(read_task_ledger(state["ledger"]), plan=review.plan)
            state["ledger"] = ledger.to_dict()
            self._say(ctx, _plan_message(ledger, edited=True))
        elif not review.approved:
            await self._plan(ctx, feedback=review.comments or "the plan was not approved")
            await self._ask_review(ctx)
            return
        state["reviewing"] = False
        await self.continue_team(ctx)


def _plan_message(ledger: TaskLedger, *, edited: bool = False) -> Message:
    """What the team is told of a plan (its facts and steps)."""
    head = "The plan (edited by a reviewer)" if edited else "The plan"
    return Message(
        "assistant",
        MANAGER,
        f"Facts:\n{ledger.facts}\n\n{head}:\n{ledger.plan}",
        data={"task_ledger": ledger.to_dict()},
    )


class MagenticBuilder(TeamBuilder):
    """A Magentic team: a manager that plans (task ledger), then each round assesses
    progress (progress ledger) and picks the next speaker with an instruction; stalls make
    it re-plan; it answers when the request is satisfied or a limit is reached.

    ::

        team = (
            MagenticBuilder("research")
            .participants({"searcher": search, "writer": write})
            .with_manager(LLMMagenticManager("gpt-4o-mini"), max_round_count=10)
            .with_plan_review()
            .build()
        )

    The output is the team's :class:`~plait_teams.Conversation`, ending with the final
    answer. See :mod:`plait_teams._magentic` for the graph, the state and the events.
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        plugin_manager: PluginManager | None = None,
        **builder_options: Any,
    ) -> None:
        super().__init__(name, plugin_manager=plugin_manager, **builder_options)
        self._manager: MagenticManager | None = None
        self._magentic = MagenticOptions()
        self.with_max_rounds(self._magentic.max_round_count)

    def with_manager(
        self,
        manager: MagenticManager,
        *,
        max_round_count: int | None = None,
        max_stall_count: int | None = None,
        max_reset_count: int | None = None,
    ) -> Self:
        """Set the manager (a :class:`MagenticManager`: a Python object or
        :class:`~plait_teams.LLMMagenticManager`) and the team's limits (defaults: 20
        rounds, 3 stalls, 2 re-plans).

        :raises TypeError: ``manager`` lacks ``plan``, ``progress`` or ``final_answer``.
        :raises ValueError: a limit is not a non-negative int (rounds: positive).
        """
        for method in ("plan", "progress", "final_answer"):
            if not callable(getattr(manager, method, None)):
                raise TypeError(
                    f"a Magentic manager needs async methods plan, progress and "
                    f"final_answer; {manager!r} has no {method}"
                )
        changes: dict[str, Any] = {
            k: v
            for k, v in (
                ("max_round_count", max_round_count),
                ("max_stall_count", max_stall_count),
                ("max_reset_count", max_reset_count),
            )
            if v is not None
        }
        try:
            self._magentic = attrs.evolve(self._magentic, **changes)
        except TypeError as exc:
            raise ValueError(f"MagenticBuilder.with_manager: {exc}") from None
        self._manager = manager
        self.with_max_rounds(self._magentic.max_round_count)
        return self

    def with_plan_review(self, enabled: bool = True) -> Self:
        """Ask a human to review the first plan before work starts: the run ends idle
        with a pending :class:`PlanReviewRequest`; answer it with a
        :class:`PlanReviewResponse` (``plait resume``, ``plait ui`` or
        ``Workflow.resume(..., responses={request_id: PlanReviewResponse(...)})``)."""
        self._magentic = attrs.evolve(self._magentic, plan_review=enabled)
        return self

    @property
    def options(self) -> MagenticOptions:
        """The team's limits and plan review."""
        return self._magentic

    def manager(self) -> MagenticManagerExecutor:
        """A new manager node for this team.

        :raises ValueError: no manager was set (:meth:`with_manager`).
        """
        if self._manager is None:
            raise ValueError("MagenticBuilder: call with_manager(...) first")
        return MagenticManagerExecutor(
            self.team_name, self._participants_or_raise(), self._manager, self._magentic
        )


#: the checkpoint hooks of a plan review's request and answer (a team nested in another
#: workflow passes its request out to a run that does not declare these classes)
PLAN_REVIEW_REQUEST_HOOKS = strict_hooks(
    PlanReviewRequest, {"task": str, "facts": str, "plan": str}, requires=__name__
)
PLAN_REVIEW_RESPONSE_HOOKS = strict_hooks(
    PlanReviewResponse,
    {"approved": bool, "plan": (str, type(None)), "comments": str},
    requires=__name__,
)
