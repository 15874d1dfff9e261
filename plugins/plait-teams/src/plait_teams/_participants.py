"""Participants: anything that answers a conversation, adapted into a team's executor.

:func:`participant` is the one public way in. It takes:

- a :class:`Participant` (as it is);
- a Python agent: ``async def agent(conversation: Conversation) -> str | Message``, or a
  function of the prompt, ``(prompt: str) -> str`` (its first parameter annotated ``str``;
  it gets the conversation as ``author: text`` lines, and the manager's instruction after
  them); sync or async;
- an ``agent`` executor of plait-llm (``plait_llm.AgentExecutor``), or an ``llm`` model
  (with a ``name``: an agent executor is made on it): prompted with the conversation's
  transcript through the agent's public ``ask``, so its tokens stream as the usual
  ``{"token": …}`` custom events, from the participant's node;
- a :class:`plait.Workflow` (what :meth:`plait.Workflow.as_agent` does): each turn is one
  nested run of it, checkpointed inside the team's run;

and :func:`human` makes a participant that asks a person through ``ctx.request_info``: the
run ends ``idle_with_pending_requests`` with a :class:`HumanTurnRequest`, and the answer
(``plait resume``, ``plait ui``, ``Workflow.resume(..., responses=...)``), a ``str``,
is the human's message.

Each participant becomes a :class:`ParticipantExecutor` (its id: the participant's name),
which answers a :class:`~plait_teams.TurnRequest` with a :class:`~plait_teams.TurnReply`
to the manager and emits a :class:`~plait_teams.TurnEvent`.
"""

from __future__ import annotations

import abc
import inspect
import json
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from plait import Executor, RequestResponse, Workflow, WorkflowContext
from plait.spi import Handler

from ._conversation import Conversation, Message, as_message
from ._messages import TeamMessage, TurnEvent, TurnReply, TurnRequest

if TYPE_CHECKING:
    from plait_converters import CattrsHooks

__all__ = [
    "HUMAN_REQUEST_HOOKS",
    "AgentParticipant",
    "FunctionParticipant",
    "HumanParticipant",
    "HumanTurnRequest",
    "Participant",
    "ParticipantExecutor",
    "WorkflowParticipant",
    "human",
    "participant",
    "prompt_of",
]


def prompt_of(request: TurnRequest) -> str:
    """The prompt a text participant gets for ``request``: the conversation as
    ``author: text`` lines, then the manager's instruction (if any)."""
    text = request.conversation.transcript()
    if request.instruction:
        text = f"{text}\n\n{request.instruction}" if text else request.instruction
    return text


class Participant(abc.ABC):
    """A team member: a name, a description (what a selecting manager reads), and how it
    answers a turn.

    Subclass it for a participant of your own: implement :meth:`respond`, and
    :meth:`answer` if it asks for outside input.

    :param name: its name in the team (its executor id; unique in the team).
    :param description: what it does, for a manager that picks speakers.
    """

    def __init__(self, name: str, description: str = "") -> None:
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(
                f"a participant's name must be a non-empty string without '/', got {name!r}"
            )
        if not isinstance(description, str):
            raise TypeError(f"participant {name!r}: description must be a str, got {description!r}")
        self.name = name
        self.description = description

    @abc.abstractmethod
    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> Message | None:
        """Answer the turn ``request``: a :class:`Message`, or ``None`` when it asked for
        outside input (``ctx.request_info``) and answers in :meth:`answer`."""

    async def answer(
        self, response: RequestResponse, ctx: WorkflowContext[Any, Any]
    ) -> Message | None:
        """An answer to a request :meth:`respond` made arrived: the turn's message, or
        ``None`` to wait for more."""
        raise TypeError(f"participant {self.name!r} got an answer it did not ask for")

    def executor(self, team: str) -> ParticipantExecutor:
        """The executor this participant runs as in ``team``."""
        return ParticipantExecutor(self, team)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class ParticipantExecutor(Executor):
    """A participant's node: a :class:`~plait_teams.TurnRequest` in, a
    :class:`~plait_teams.TurnReply` to the manager out (and a
    :class:`~plait_teams.TurnEvent`); answers to its requests resume the turn.

    The turn it waits on (for a human, a nested workflow asking) is in ``ctx.state``
    (key ``waiting``: ``{request id: [round, instruction]}``), so it survives a resume.
    """

    #: why a spec cannot rebuild this node from data (see ``NodeSpec.nonportable``)
    nonportable = "it is a team's participant node; rebuild the team with its builder"

    def __init__(self, participant: Participant, team: str) -> None:
        self.participant = participant
        self.team = team
        super().__init__(participant.name)

    def declare_handlers(self) -> tuple[Handler, ...]:
        """A turn request (the manager's :class:`~plait_teams.TeamMessage`) and answers to
        requests; each sends a :class:`~plait_teams.TurnReply`."""
        return (
            Handler(
                f"participant:{self.participant.name}", TeamMessage, (TurnReply,), (), self._turn
            ),
            Handler(
                f"participant:{self.participant.name}.answer",
                RequestResponse,
                (TurnReply,),
                (),
                self._answer,
            ),
        )

    async def _turn(self, request: TeamMessage, ctx: WorkflowContext[Any, Any]) -> None:
        if not isinstance(request, TurnRequest):
            raise TypeError(f"participant {self.id!r} takes a TurnRequest, got {request!r}")
        ctx.state["turn"] = request.round
        message = await self.participant.respond(request, ctx)
        if message is not None:
            await self._reply(request.round, message, ctx)

    async def _answer(self, response: RequestResponse, ctx: WorkflowContext[Any, Any]) -> None:
        message = await self.participant.answer(response, ctx)
        if message is not None:
            await self._reply(ctx.state["turn"], message, ctx)

    async def _reply(self, round: int, message: Message, ctx: WorkflowContext[Any, Any]) -> None:
        if not isinstance(message, Message):
            raise TypeError(
                f"participant {self.participant.name!r} answered {message!r}: expected a Message"
            )
        await ctx.add_event(TurnEvent(self.team, self.participant.name, round, message))
        await ctx.send_message(TurnReply(self.participant.name, round, message))

    def __repr__(self) -> str:
        return f"<ParticipantExecutor {self.id!r} of team {self.team!r}>"


# -- Python agents ------------------------------------------------------------------------------


def _takes_prompt(fn: Callable[..., Any]) -> bool:
    """Whether ``fn``'s first parameter is annotated ``str`` (a prompt function)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError):
        return False
    return bool(params) and hints.get(params[0].name) is str


class FunctionParticipant(Participant):
    """A Python agent: ``fn(conversation) -> str | Message`` or, with ``prompt=True``,
    ``fn(prompt: str) -> str``; sync or async. A ``str`` answer becomes an ``assistant``
    message by the participant.

    :param fn: the function.
    :param name: the participant's name (default: the function's ``__name__``).
    :param description: what it does.
    :param prompt: give it the prompt text instead of the conversation (default: its first
        parameter is annotated ``str``).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str = "",
        *,
        prompt: bool | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"a function participant needs a function, got {fn!r}")
        self.fn = fn
        self.prompt = _takes_prompt(fn) if prompt is None else prompt
        super().__init__(name or str(getattr(fn, "__name__", "")), description)

    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> Message:
        """Call the function with the conversation (or the prompt)."""
        argument: Any = prompt_of(request) if self.prompt else request.conversation
        answer = self.fn(argument)
        if inspect.isawaitable(answer):
            answer = await answer
        return as_message(answer, author=self.name)


# -- plait-llm agents ---------------------------------------------------------------------------


class AgentParticipant(Participant):
    """An ``agent`` executor of plait-llm (anything with an ``async ask(prompt, ctx)``):
    prompted with the conversation's transcript and the manager's instruction. Its
    tokens stream as ``{"token": …}`` custom events of the participant's node; a
    structured answer (a dict) becomes the message's ``data``, its JSON the text.

    :param agent: the agent executor.
    :param name: the participant's name (default: the agent's id).
    :param description: what it does.
    """

    def __init__(self, agent: Any, name: str | None = None, description: str = "") -> None:
        if not callable(getattr(agent, "ask", None)):
            raise TypeError(f"an agent participant needs an agent with ask(), got {agent!r}")
        self.agent = agent
        super().__init__(name or str(agent.id), description)

    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> Message:
        """Ask the model."""
        answer = await self.agent.ask(prompt_of(request), ctx)
        if isinstance(answer, str):
            return Message("assistant", self.name, answer)
        return Message("assistant", self.name, json.dumps(answer, ensure_ascii=False), answer)


# -- humans ---------------------------------------------------------------------------------------


@attrs.frozen
class HumanTurnRequest:
    """What a human participant is asked (the request of ``ctx.request_info``; the
    answer is a ``str``).

    :param team: the team's name.
    :param participant: the human's name in the team.
    :param round: the turn's number.
    :param prompt: the question (the participant's prompt, else the manager's
        instruction, else "Your turn").
    :param transcript: the conversation so far, as ``author: text`` lines.
    """

    team: str
    participant: str
    round: int
    prompt: str
    transcript: str


class HumanParticipant(Participant):
    """A person: asks through ``ctx.request_info`` with a :class:`HumanTurnRequest`; the
    answer (a ``str``) is their message (role ``user``).

    :param name: the participant's name.
    :param description: what they do.
    :param prompt: the question they are asked each turn (default: the manager's
        instruction, else "Your turn").
    """

    def __init__(self, name: str, description: str = "", *, prompt: str | None = None) -> None:
        self.prompt = prompt
        super().__init__(name, description)

    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> None:
        """Ask; the run waits for the answer."""
        question = self.prompt or request.instruction or "Your turn"
        asked = HumanTurnRequest(
            request.team, self.name, request.round, question, request.conversation.transcript()
        )
        await ctx.request_info(asked, str)

    async def answer(self, response: RequestResponse, ctx: WorkflowContext[Any, Any]) -> Message:
        """The person's answer is their message."""
        value = response.value
        if not isinstance(value, str):
            raise TypeError(
                f"human participant {self.name!r} was answered {value!r}: expected a str"
            )
        return Message("user", self.name, value)


def human(name: str, description: str = "", *, prompt: str | None = None) -> HumanParticipant:
    """A human participant (see :class:`HumanParticipant`)."""
    return HumanParticipant(name, description, prompt=prompt)


# -- workflows ----------------------------------------------------------------------------------


class WorkflowParticipant(Participant):
    """A whole :class:`plait.Workflow` as a participant (:meth:`plait.Workflow.as_agent`).

    Each turn is one nested run (``Workflow.run_nested``, with the participant's context:
    the inner run's events reach the outer run as :class:`plait.NestedEvent`). The inner
    workflow is given the :class:`~plait_teams.Conversation` when its start accepts one,
    else the prompt text; its last output is the message: a
    :class:`~plait_teams.Message` (re-authored as this participant), the last message of a
    :class:`~plait_teams.Conversation`, or any other value as text.

    An inner run that waits for outside input keeps its state in the participant's
    ``ctx.state`` (checkpointed inside the outer run) and asks the outer caller; the
    answer resumes it.

    :param workflow: the inner workflow.
    :param name: the participant's name (default: the workflow's name).
    :param description: what it does.
    """

    def __init__(self, workflow: Workflow, name: str | None = None, description: str = "") -> None:
        if not isinstance(workflow, Workflow):
            raise TypeError(f"a workflow participant needs a plait.Workflow, got {workflow!r}")
        self.workflow = workflow
        start = workflow.executors[workflow.spec.start]
        self.takes_conversation = any(
            t is Conversation or t is Any for t in start.input_types
        ) and not any(t is str for t in start.input_types)
        super().__init__(name or workflow.name or "", description)

    async def respond(self, request: TurnRequest, ctx: WorkflowContext[Any, Any]) -> Message | None:
        """Run the inner workflow on the conversation."""
        given: Any = request.conversation if self.takes_conversation else prompt_of(request)
        result, saved = await self.workflow.run_nested(given, ctx=ctx)
        return await self._settle(result, saved, ctx)

    async def answer(
        self, response: RequestResponse, ctx: WorkflowContext[Any, Any]
    ) -> Message | None:
        """Resume the inner run that asked."""
        waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
        runs: dict[str, Any] = ctx.state.setdefault("runs", {})
        inner_run, inner_request = waiting.pop(response.request_id)
        saved = runs.pop(inner_run)
        result, saved = await self.workflow.run_nested(
            saved=saved, responses={inner_request: response.value}, ctx=ctx
        )
        return await self._settle(result, saved, ctx)

    async def _settle(
        self, result: Any, saved: Any, ctx: WorkflowContext[Any, Any]
    ) -> Message | None:
        from plait import ExecutorFailedError, RunStatus

        if result.status is RunStatus.FAILED:
            raise ExecutorFailedError(
                f"participant {self.name!r}: its workflow {self.workflow.name or '(unnamed)'} "
                f"failed: {result.error}",
                executor_id=ctx.executor_id,
                superstep=ctx.superstep,
            ) from result.error
        if saved is not None:
            waiting: dict[str, list[str]] = ctx.state.setdefault("requests", {})
            runs: dict[str, Any] = ctx.state.setdefault("runs", {})
            runs[result.run_id] = saved
            asked = {inner for _, inner in waiting.values()}
            for pending in result.pending_requests:
                if pending.request_id not in asked:
                    outer = await ctx.request_info(pending.request, pending.response_type)
                    waiting[outer] = [result.run_id, pending.request_id]
            return None
        if not result.outputs:
            raise ValueError(
                f"participant {self.name!r}: its workflow {self.workflow.name or '(unnamed)'} "
                "gave no output to answer with"
            )
        return self._message(result.outputs[-1])

    def _message(self, output: Any) -> Message:
        if isinstance(output, Conversation):
            output = output.last
        if isinstance(output, Message):
            return Message(output.role, self.name, output.text, output.data)
        if isinstance(output, str):
            return Message("assistant", self.name, output)
        return Message("assistant", self.name, json.dumps(output, ensure_ascii=False, default=str))


# -- the one way in -----------------------------------------------------------------------------


def _is_llm_model(obj: Any) -> bool:
    """Whether ``obj`` looks like an ``llm`` model (a ``model_id`` and a ``prompt``)."""
    return isinstance(getattr(obj, "model_id", None), str) and callable(
        getattr(obj, "prompt", None)
    )


def _agent_of_model(model: Any, name: str | None) -> Any:
    """A plait-llm ``agent`` executor on ``model``, named ``name``."""
    if not name:
        raise ValueError("an llm model as a participant needs a name: participant(model, name=...)")
    try:
        from plait_llm import AgentExecutor
    except ImportError:  # pragma: no cover - plait-llm is what runs a model
        raise ImportError(
            f"participant {name!r} is an llm model: that needs plait-llm (pip install 'plait[llm]')"
        ) from None
    return AgentExecutor(name, model)


def participant(
    obj: Any, *, name: str | None = None, description: str | None = None
) -> Participant:
    """Adapt ``obj`` into a team :class:`Participant` (see the module docstring).

    :param obj: a :class:`Participant`, a function, an ``agent`` executor or a workflow.
    :param name: its name in the team (default: the participant's, the function's
        ``__name__``, the agent's id, the workflow's name).
    :param description: what it does (default: the participant's, else the function's
        docstring's first line).
    :raises TypeError: ``obj`` is none of these, naming what it is.
    """
    made: Participant
    if isinstance(obj, Participant):
        made = obj
        if name is not None and name != obj.name:
            raise ValueError(f"participant {obj.name!r} cannot be renamed {name!r} here")
    elif isinstance(obj, Workflow):
        made = WorkflowParticipant(obj, name)
    elif isinstance(obj, Executor) and callable(getattr(obj, "ask", None)):
        made = AgentParticipant(obj, name)
    elif _is_llm_model(obj):
        made = AgentParticipant(_agent_of_model(obj, name), name)
    elif isinstance(obj, Executor):
        raise TypeError(
            f"executor {obj.id!r} cannot take part in a team: wrap a workflow with "
            "Workflow.as_agent(), or give a function or a plait_teams.Participant"
        )
    elif callable(obj):
        doc = inspect.getdoc(obj) if inspect.isfunction(obj) else None
        made = FunctionParticipant(obj, name, (doc or "").strip().split("\n")[0])
    else:
        raise TypeError(
            f"{obj!r} cannot take part in a team: give a function, an agent executor, a "
            "plait.Workflow or a plait_teams.Participant"
        )
    if description is not None:
        made.description = description
    return made


def _unstructure_request(request: HumanTurnRequest) -> dict[str, Any]:
    return attrs.asdict(request)


def _structure_request(data: Any, _type: Any = HumanTurnRequest) -> HumanTurnRequest:
    if not isinstance(data, dict) or sorted(data) != sorted(
        a.name for a in attrs.fields(HumanTurnRequest)
    ):
        raise ValueError(f"a stored HumanTurnRequest must be a dict of its fields, got {data!r}")
    request = HumanTurnRequest(**data)
    for field in attrs.fields(HumanTurnRequest):
        wanted = int if field.name == "round" else str
        if not isinstance(getattr(request, field.name), wanted):
            raise ValueError(
                f"a stored HumanTurnRequest's {field.name} must be a {wanted.__name__}"
            )
    return request


def _hooks() -> CattrsHooks:
    from plait_converters import CattrsHooks

    return CattrsHooks(
        HumanTurnRequest,
        structure=_structure_request,
        unstructure=_unstructure_request,
        requires=__name__,  # as its lazy registration says
    )


#: the cattrs hooks of :class:`HumanTurnRequest` (a pending request in a checkpoint)
HUMAN_REQUEST_HOOKS = _hooks()
