"""Handoff rules: who may hand the conversation to whom, and what an agent's answer says.

A handoff team (:class:`~plait_teams.HandoffBuilder`) has a start agent and, per agent,
the agents it may hand off to (``add_handoff(triage, [refund, orders])``). After each
turn the agent's answer says one of three things (:class:`Decision`):

- hand off: a target and a reason (``{"handoff_to": "refund", "reason": "..."}`` as
  structured output, a :class:`Handoff` from a Python agent, or the ``handoff`` tool an
  LLM agent calls);
- ask the user: the answer needs the user (``{"needs_user": true}``), so the run asks
  through ``request_info`` and goes on with the same agent when the answer comes;
- answer: the team's work is done (unless the team asks the user after every answer).

:class:`HandoffRules` checks a handoff against the declared edges: a handoff outside them
is a :class:`HandoffError` naming the allowed targets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from plait import PlaitError

__all__ = [
    "Decision",
    "Handoff",
    "HandoffError",
    "HandoffRules",
    "decision_schema",
    "read_decision",
]


class HandoffError(PlaitError):
    """A handoff the team's rules do not allow (or that names no agent), or a rule that
    names an agent the team does not have.

    :param source: the agent that handed off (``None`` for a rule problem).
    :param target: where it tried to hand off.
    :param allowed: the targets it may hand off to.
    """

    def __init__(
        self, message: str, *, source: str | None, target: str, allowed: Sequence[str]
    ) -> None:
        self.source = source
        self.target = target
        self.allowed = tuple(allowed)
        super().__init__(message)


@attrs.frozen
class Handoff:
    """What a Python agent returns to hand the conversation to ``target``.

    :param target: the agent that takes over (one its rules allow).
    :param reason: why, shown in the handoff event.
    :param text: what the agent says before it hands off (may be empty).
    """

    target: str
    reason: str = ""
    text: str = ""


@attrs.frozen
class Decision:
    """What one turn's answer says: hand off (``handoff_to`` and ``reason``), ask the user
    (``needs_user``), or neither (the answer).

    :param text: what the agent said.
    """

    text: str
    handoff_to: str | None = None
    reason: str = ""
    needs_user: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON data (the keys of :func:`decision_schema`)."""
        return attrs.asdict(self)


def decision_schema(targets: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema of an LLM agent's answer in a handoff team: its ``text``, and either
    ``handoff_to`` one of ``targets`` (with a ``reason``), or ``needs_user``."""
    handoff: dict[str, Any] = (
        {"type": ["string", "null"], "enum": [*targets, None]} if targets else {"type": "null"}
    )
    return {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "your answer, or what you say first"},
            "handoff_to": {
                **handoff,
                "description": "the agent to hand the conversation to, or null",
            },
            "reason": {"type": "string", "description": "why you hand off"},
            "needs_user": {
                "type": "boolean",
                "description": "true when you need the user to answer before you go on",
            },
        },
        "required": ["text"],
        "additionalProperties": False,
    }


def read_decision(value: Any) -> Decision:
    """The decision in an agent's answer: a :class:`Decision`, a :class:`Handoff`, a
    mapping (structured output: ``text``, ``handoff_to``, ``reason``, ``needs_user``), or
    anything else, read as the answer's text.

    :raises HandoffError: a mapping whose ``handoff_to`` is not a string.
    """
    if isinstance(value, Decision):
        return value
    if isinstance(value, Handoff):
        return Decision(text=value.text, handoff_to=value.target, reason=value.reason)
    if isinstance(value, Mapping):
        target = value.get("handoff_to")
        if target is not None and not isinstance(target, str):
            raise HandoffError(
                f"handoff_to must be an agent's name, got {target!r}",
                source=None,
                target=str(target),
                allowed=(),
            )
        return Decision(
            text=str(value.get("text", "")),
            handoff_to=target or None,
            reason=str(value.get("reason") or ""),
            needs_user=bool(value.get("needs_user", False)),
        )
    return Decision(text="" if value is None else str(value))


@attrs.frozen
class HandoffRules:
    """The agents of a handoff team, where it starts and who may hand off to whom.

    :param agents: every agent's name, in the team's order.
    :param start: the agent that takes the first turn.
    :param edges: per agent, the agents it may hand off to (an agent with no entry hands
        off to nobody).
    """

    agents: tuple[str, ...]
    start: str
    edges: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)

    def problems(self) -> list[str]:
        """Every rule that names an agent the team does not have, and an agent that hands
        off to itself (each with the names there are)."""
        from plait_documents import did_you_mean

        known = set(self.agents)
        found: list[str] = []
        listing = ", ".join(self.agents)
        if self.start not in known:
            found.append(
                f"the start agent {self.start!r} is not a participant"
                f"{did_you_mean(self.start, self.agents)} (participants: {listing})"
            )
        for source, targets in self.edges.items():
            if source not in known:
                found.append(
                    f"add_handoff({source!r}, ...): {source!r} is not a participant"
                    f"{did_you_mean(source, self.agents)} (participants: {listing})"
                )
            for target in targets:
                if target not in known:
                    found.append(
                        f"add_handoff({source!r}, ...): target {target!r} is not a participant"
                        f"{did_you_mean(target, self.agents)} (participants: {listing})"
                    )
                elif target == source:
                    found.append(
                        f"add_handoff({source!r}, ...): an agent cannot hand off to itself"
                    )
        return found

    def allowed(self, source: str) -> tuple[str, ...]:
        """The agents ``source`` may hand off to."""
        return self.edges.get(source, ())

    def check(self, source: str, target: str) -> None:
        """Refuse a handoff from ``source`` to ``target`` that the rules do not allow.

        :raises HandoffError: naming the targets ``source`` may hand off to.
        """
        allowed = self.allowed(source)
        if target in allowed:
            return
        if allowed:
            can = f"it may hand off to {', '.join(allowed)}"
        else:
            can = "it may hand off to no agent (add_handoff gives it targets)"
        raise HandoffError(
            f"agent {source!r} handed off to {target!r}, which its handoff rules do not "
            f"allow: {can}",
            source=source,
            target=target,
            allowed=allowed,
        )

    @classmethod
    def build(
        cls, agents: Iterable[str], start: str, edges: Mapping[str, Iterable[str]]
    ) -> HandoffRules:
        """Rules from plain iterables (targets in order, each once)."""
        return cls(
            tuple(agents),
            start,
            {source: tuple(dict.fromkeys(targets)) for source, targets in edges.items()},
        )
