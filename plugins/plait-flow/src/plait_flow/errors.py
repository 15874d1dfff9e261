"""The errors of the flow DSL front-end, under the seed's names.

A flow that does not load raises :class:`InvalidFlowError`, a :class:`plait.LoadError`
holding every problem with its position (each a :class:`~plait_flow._parser.FlowError`
or, for a YAML flow document, a :class:`plait.DocumentError`). When one of the problems
is a name nothing resolves, it is the subclass :class:`AgentNotFoundInFlowError`, which
also names the first such agent and every name the flow could have used. Code written
against the seed's ``InvalidFlowError`` and ``AgentNotFoundInFlowError`` catches them;
code catching ``plait.LoadError`` still does. The messages are Plait's own.
"""

from __future__ import annotations

from collections.abc import Sequence

from plait import LoadError, PlaitError, SourcePosition

from ._parser import FlowError

__all__ = ["AgentNotFoundInFlowError", "InvalidFlowError", "UnknownAgent", "flow_load_error"]


class InvalidFlowError(LoadError):
    """A flow text (or YAML flow document) does not load; ``problems`` holds every
    problem, each with its line and column."""


class AgentNotFoundInFlowError(InvalidFlowError):
    """A flow names an agent nothing resolves.

    :param name: the first unknown name, in the text's order.
    :param available_agents: every name the flow could have used (agents, published
        fragments and executor kinds), sorted.
    :param problems: every problem of the flow (the unknown names among them).
    """

    def __init__(
        self,
        name: str,
        available_agents: Sequence[str],
        problems: Sequence[PlaitError],
        *,
        source: str | None = None,
    ) -> None:
        self.name = name
        self.available_agents = list(available_agents)
        super().__init__(problems, source=source)


class UnknownAgent(FlowError):
    """The problem of a name nothing resolves, positioned like every flow problem; it
    makes the whole load an :class:`AgentNotFoundInFlowError`.

    :param name: the unknown name.
    :param available_agents: every name the flow could have used.
    """

    def __init__(
        self, message: str, position: SourcePosition, name: str, available: Sequence[str]
    ) -> None:
        self.name = name
        self.available_agents = list(available)
        super().__init__(message, position)


def flow_load_error(problems: Sequence[PlaitError], source: str | None) -> InvalidFlowError:
    """The error a flow with ``problems`` raises: :class:`AgentNotFoundInFlowError` when
    one of them is an unknown name (the first, in the order given), else
    :class:`InvalidFlowError`."""
    unknown = next((p for p in problems if isinstance(p, UnknownAgent)), None)
    if unknown is None:
        return InvalidFlowError(problems, source=source)
    return AgentNotFoundInFlowError(unknown.name, unknown.available_agents, problems, source=source)
