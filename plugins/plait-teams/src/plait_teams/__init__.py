"""Agent teams for Plait: group chat, and workflow-as-agent, as graphs of ordinary executors.

A team is a manager executor and participant executors wired by edges (see
:mod:`plait_teams._team`): each turn is a superstep, so it is checkpointed, drawn by
``plait graph``, traced, resumable after a crash and composable as a fragment
(``.as_connection()``, ``builder.add_workflow(team)``).

- :class:`Message` and :class:`Conversation`: what a team says, an append-only tuple of
  messages that a checkpoint stores for what a new turn adds (registered through
  ``plait_register_type_hooks``);
- :func:`participant`: the one way to make anything a participant (a Python agent, a
  plait-llm ``agent`` executor, a :class:`plait.Workflow`); :func:`human` asks a person
  through ``ctx.request_info``;
- :class:`GroupChatBuilder`: participants with descriptions, speaker selection
  (round-robin, a function, an LLM manager), termination (``max_rounds``, a condition, the
  manager);
- :meth:`plait.Workflow.as_agent` (this distribution answers its hook,
  ``plait_workflow_as_agent``): any workflow as a participant;
- :class:`TeamManager` and :class:`TeamBuilder`: what a new kind of team builds on;
- :class:`TurnEvent` and :class:`TeamFinished`: what a run's listeners see of a team.

Loading plugins imports this module alone: its names are imported on first use, and the
conversation's checkpoint hooks are registered lazily (they apply once a conversation
can exist).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._conversation import (
        Conversation as Conversation,
        Message as Message,
        as_message as as_message,
    )
    from ._group_chat import (
        GroupChatBuilder as GroupChatBuilder,
        GroupChatManager as GroupChatManager,
        LLMSelector as LLMSelector,
        SelectionError as SelectionError,
        condition_data as condition_data,
        round_robin as round_robin,
    )
    from ._handoff import (
        HandoffAgentParticipant as HandoffAgentParticipant,
        HandoffBuilder as HandoffBuilder,
        HandoffManager as HandoffManager,
        UserInputRequest as UserInputRequest,
    )
    from ._handoff_rules import (
        Decision as Decision,
        Handoff as Handoff,
        HandoffError as HandoffError,
        HandoffRules as HandoffRules,
        decision_schema as decision_schema,
        read_decision as read_decision,
    )
    from ._kind import (
        MODES as MODES,
        TeamKind as TeamKind,
        team_config_schema as team_config_schema,
        team_problems as team_problems,
    )
    from ._ledger import (
        LedgerError as LedgerError,
        ProgressLedger as ProgressLedger,
        TaskLedger as TaskLedger,
        progress_ledger_schema as progress_ledger_schema,
        read_progress_ledger as read_progress_ledger,
        read_task_ledger as read_task_ledger,
        task_ledger_schema as task_ledger_schema,
    )
    from ._magentic import (
        MagenticBuilder as MagenticBuilder,
        MagenticError as MagenticError,
        MagenticManagerExecutor as MagenticManagerExecutor,
        MagenticOptions as MagenticOptions,
        PlanReviewRequest as PlanReviewRequest,
        PlanReviewResponse as PlanReviewResponse,
    )
    from ._magentic_manager import (
        LLMMagenticManager as LLMMagenticManager,
        MagenticContext as MagenticContext,
        MagenticManager as MagenticManager,
    )
    from ._messages import (
        TeamDone as TeamDone,
        TeamFinished as TeamFinished,
        TeamMessage as TeamMessage,
        TurnEvent as TurnEvent,
        TurnReply as TurnReply,
        TurnRequest as TurnRequest,
    )
    from ._participants import (
        AgentParticipant as AgentParticipant,
        FunctionParticipant as FunctionParticipant,
        HumanParticipant as HumanParticipant,
        HumanTurnRequest as HumanTurnRequest,
        Participant as Participant,
        ParticipantExecutor as ParticipantExecutor,
        WorkflowParticipant as WorkflowParticipant,
        human as human,
        participant as participant,
        prompt_of as prompt_of,
    )
    from ._team import (
        Finish as Finish,
        Speak as Speak,
        TeamBuilder as TeamBuilder,
        TeamManager as TeamManager,
        TeamResult as TeamResult,
        TeamState as TeamState,
    )

#: the checkpoint hooks of the types a team stores: (registered name, ``module:attr``)
_HOOKS = {
    "teams.message": "plait_teams._conversation:MESSAGE_HOOKS",
    "teams.conversation": "plait_teams._conversation:CONVERSATION_HOOKS",
    "teams.human_request": "plait_teams._participants:HUMAN_REQUEST_HOOKS",
    "teams.user_input_request": "plait_teams._handoff:USER_INPUT_HOOKS",
    "teams.plan_review_request": "plait_teams._magentic:PLAN_REVIEW_REQUEST_HOOKS",
    "teams.plan_review_response": "plait_teams._magentic:PLAN_REVIEW_RESPONSE_HOOKS",
}


@plait.hookimpl
def plait_register_type_hooks(register: Register) -> None:
    """Register how a :class:`Message`, a :class:`Conversation` and the requests a team
    makes (:class:`HumanTurnRequest`, :class:`UserInputRequest`, :class:`PlanReviewRequest`
    and its answer) are checkpointed. Lazily, each requiring its own module: a value of the
    type exists only once that is imported, so a run without a team never imports it."""
    for name, ref in _HOOKS.items():
        module = ref.split(":")[0]
        register(name, lazy(ref, provides=("type", "structure", "unstructure"), requires=module))


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register ``team``: a whole team declared as data (what a workflow file's ``team``
    step or ``team`` node becomes; :class:`TeamKind`)."""
    register(
        "team", lazy("plait_teams._kind:TeamKind", provides=("check", "create", "config_schema"))
    )


@plait.hookimpl
def plait_workflow_as_agent(workflow: plait.Workflow, name: str | None, description: str) -> Any:
    """``Workflow.as_agent()``: the workflow as a team participant
    (:class:`WorkflowParticipant`)."""
    from ._participants import WorkflowParticipant

    return WorkflowParticipant(workflow, name, description)


# its entry point registers lazily: loading plugins imports this module, none of its names
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
