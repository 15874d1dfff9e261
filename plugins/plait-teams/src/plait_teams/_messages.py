"""What travels along a team's edges, and the events a team emits (see
:mod:`plait_teams._team` for the graph they travel in)."""

from __future__ import annotations

import attrs

from ._conversation import Conversation, Message

__all__ = ["TeamDone", "TeamFinished", "TeamMessage", "TurnEvent", "TurnReply", "TurnRequest"]


# -- the messages that travel along a team's edges --------------------------------------


class TeamMessage:
    """What a manager sends: a :class:`TurnRequest` to a participant or a
    :class:`TeamDone` to the result node (one declared type, so both edges type-check)."""

    __slots__ = ()


@attrs.frozen
class TurnRequest(TeamMessage):
    """The manager asks ``speaker`` for the turn ``round`` (1-based).

    :param team: the team's name.
    :param speaker: the participant asked.
    :param round: the turn's number.
    :param conversation: what the participant sees (the manager's :meth:`view`).
    :param instruction: what the manager asks of it this turn, if anything.
    """

    team: str
    speaker: str
    round: int
    conversation: Conversation
    instruction: str | None = None


@attrs.frozen
class TeamDone(TeamMessage):
    """The manager is done: the final ``conversation`` and why (``reason``)."""

    team: str
    conversation: Conversation
    reason: str


@attrs.frozen
class TurnReply:
    """A participant's answer to the turn ``round``, back to the manager."""

    speaker: str
    round: int
    message: Message


# -- events --------------------------------------------------------------------------------


@attrs.frozen
class TurnEvent:
    """A turn happened: ``speaker`` said ``message`` in turn ``round`` of ``team`` (the data
    of a :class:`plait.CustomEvent` of the participant's executor, in the turn's
    superstep)."""

    team: str
    speaker: str
    round: int
    message: Message


@attrs.frozen
class TeamFinished:
    """``team`` finished after ``rounds`` turns, because of ``reason`` (``"max_rounds"``,
    ``"condition"``, ``"manager"`` …): the data of a :class:`plait.CustomEvent` of the
    manager."""

    team: str
    reason: str
    rounds: int
