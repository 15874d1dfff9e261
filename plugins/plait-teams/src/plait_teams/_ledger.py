"""The Magentic manager's ledgers: what it knows and plans, and how each round goes.

A Magentic manager (:class:`~plait_teams.MagenticBuilder`) keeps two records, after
MAF's ``MagenticOrchestrator`` and AutoGen's ``MagenticOneOrchestrator``:

- the **task ledger** (:class:`TaskLedger`): the facts it has gathered and its plan, made
  once at the start and again at each re-plan;
- a **progress ledger** (:class:`ProgressLedger`) each round: is the request satisfied, is
  the team in a loop, is progress being made, who speaks next and with what instruction.

Each ledger is structured output: a manager (an LLM's JSON answer, or a Python function's
dict) gives a mapping, which is checked against the ledger's JSON Schema
(:func:`task_ledger_schema`, :func:`progress_ledger_schema`: the next speaker is one of the
participants' names) and read into the record; a problem is a :class:`LedgerError` naming
the field, what was wrong and, for the next speaker, the names to choose from. The records
are stored in the checkpoint as their plain dicts (:meth:`TaskLedger.to_dict`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from plait import PlaitError

__all__ = [
    "LedgerError",
    "ProgressLedger",
    "TaskLedger",
    "progress_ledger_schema",
    "read_progress_ledger",
    "read_task_ledger",
    "task_ledger_schema",
]


class LedgerError(PlaitError):
    """A ledger a manager gave does not fit its schema (a missing field, a wrong type, a
    next speaker that is no participant).

    :param ledger: ``"task"`` or ``"progress"``.
    :param problem: what was wrong, with its JSON path.
    """

    def __init__(self, ledger: str, problem: str) -> None:
        self.ledger = ledger
        self.problem = problem
        super().__init__(f"the manager's {ledger} ledger is not usable: {problem}")


@attrs.frozen
class TaskLedger:
    """What the manager knows (``facts``) and means to do (``plan``)."""

    facts: str
    plan: str

    def to_dict(self) -> dict[str, str]:
        """``{"facts": ..., "plan": ...}``: the ledger as JSON data."""
        return {"facts": self.facts, "plan": self.plan}


@attrs.frozen
class ProgressLedger:
    """One round's assessment, and who speaks next with what instruction.

    :param is_request_satisfied: the task is done: the manager writes the final answer.
    :param is_in_loop: the team repeats itself (a stall).
    :param is_progress_being_made: the last rounds moved the task on (if not, a stall).
    :param next_speaker: the participant who speaks next.
    :param instruction: what the manager asks it to do.
    :param reason: why, in the manager's words (shown in the ledger event).
    """

    is_request_satisfied: bool
    is_in_loop: bool
    is_progress_being_made: bool
    next_speaker: str
    instruction: str
    reason: str = ""

    @property
    def stalled(self) -> bool:
        """The round counts as a stall: in a loop, or no progress."""
        return self.is_in_loop or not self.is_progress_being_made

    def to_dict(self) -> dict[str, Any]:
        """The ledger as JSON data (the keys of :func:`progress_ledger_schema`)."""
        return attrs.asdict(self)


def task_ledger_schema() -> dict[str, Any]:
    """The JSON Schema a task ledger answers: ``{"facts": str, "plan": str}``."""
    return {
        "type": "object",
        "properties": {
            "facts": {"type": "string", "description": "what is known, and what to find out"},
            "plan": {"type": "string", "description": "the steps, each naming who does it"},
        },
        "required": ["facts", "plan"],
        "additionalProperties": False,
    }


def progress_ledger_schema(participants: Sequence[str]) -> dict[str, Any]:
    """The JSON Schema a progress ledger answers; ``next_speaker`` is one of
    ``participants``."""
    return {
        "type": "object",
        "properties": {
            "is_request_satisfied": {"type": "boolean"},
            "is_in_loop": {"type": "boolean"},
            "is_progress_being_made": {"type": "boolean"},
            "next_speaker": {"type": "string", "enum": list(participants)},
            "instruction": {"type": "string"},
            "reason": {"type": "string"},
        },
        "required": [
            "is_request_satisfied",
            "is_in_loop",
            "is_progress_being_made",
            "next_speaker",
            "instruction",
        ],
        "additionalProperties": False,
    }


def _best_error(value: Any, schema: Mapping[str, Any]) -> Any:
    """jsonschema's most relevant error of ``value`` against ``schema``, or ``None``."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]

    return best_match(Draft202012Validator(schema).iter_errors(value))


@functools.lru_cache(maxsize=64)
def _schema(participants: tuple[str, ...] | None) -> dict[str, Any]:
    """The task ledger's schema (``None``) or a team's progress ledger schema, made once
    (the same object each round, so the fast check keeps its compiled validator)."""
    if participants is None:
        return task_ledger_schema()
    return progress_ledger_schema(participants)


def _problem(value: Any, participants: tuple[str, ...] | None) -> str | None:
    """What makes ``value`` not fit its ledger's schema, or ``None``: a ledger that fits is
    accepted by plait-documents' compiled check (what a manager gives every round); one
    that does not is explained by jsonschema."""
    from plait_documents import check_config

    schema = _schema(participants)
    if not check_config(schema, value, "manager", root=""):
        return None
    error = _best_error(value, schema)
    if error is None:
        return None
    return f"at {error.json_path}: {error.message}"


def read_task_ledger(value: Any) -> TaskLedger:
    """The task ledger in ``value`` (a :class:`TaskLedger`, or a mapping that fits
    :func:`task_ledger_schema`).

    :raises LedgerError: it does not fit, naming the field.
    """
    if isinstance(value, TaskLedger):
        return value
    problem = _problem(value, None)
    if problem is not None:
        raise LedgerError("task", problem)
    return TaskLedger(facts=value["facts"], plan=value["plan"])


def read_progress_ledger(value: Any, participants: Sequence[str]) -> ProgressLedger:
    """The progress ledger in ``value`` (a :class:`ProgressLedger`, or a mapping that fits
    :func:`progress_ledger_schema`); its next speaker must be one of ``participants``.

    :raises LedgerError: it does not fit, naming the field (and, for an unknown next
        speaker, the participants to choose from).
    """
    if isinstance(value, ProgressLedger):
        data: Any = value.to_dict()
    else:
        data = value
    if (
        isinstance(data, Mapping)
        and isinstance(data.get("next_speaker"), str)
        and data["next_speaker"] not in participants
    ):
        raise LedgerError(
            "progress",
            f"at $.next_speaker: {data['next_speaker']!r} is not a participant; choose one "
            f"of {', '.join(participants)}",
        )
    problem = _problem(data, tuple(participants))
    if problem is not None:
        raise LedgerError("progress", problem)
    return ProgressLedger(
        is_request_satisfied=data["is_request_satisfied"],
        is_in_loop=data["is_in_loop"],
        is_progress_being_made=data["is_progress_being_made"],
        next_speaker=data["next_speaker"],
        instruction=data["instruction"],
        reason=data.get("reason", ""),
    )
