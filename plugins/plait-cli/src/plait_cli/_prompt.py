"""Asking a person at a terminal for the answers a run waits for, each checked against the
type its executor asked for (the kernel checks again when the run resumes).
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import click
from plait.spi import RUN_REQUEST, PendingRequest, is_instance, type_name

from ._output import to_json

__all__ = ["ask_for_answers", "can_prompt", "parse_answer"]

_YES = {"y", "yes", "true"}
_NO = {"n", "no", "false"}


def can_prompt() -> bool:
    """Whether a person can answer: standard input and standard error are terminals."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def parse_answer(text: str, response_type: Any) -> Any:
    """What a typed answer means for ``response_type``.

    JSON first (``true``, ``42``, ``"text"``, ``{"a": 1}``); for a ``bool``, also ``y``/``yes``
    and ``n``/``no``; where a string is accepted, text that is not JSON is taken as it is.

    :raises ValueError: the answer is neither, saying what was expected.
    """
    stripped = text.strip()
    if response_type is bool and stripped.lower() in _YES | _NO:
        return stripped.lower() in _YES
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as exc:
        if is_instance(text, response_type):
            return text
        raise ValueError(
            f"not valid JSON ({exc.msg}); answer with {type_name(response_type)} as JSON"
        ) from None


def asker(request: PendingRequest) -> str:
    """Who asks ``request``: its executor, or the run (a request of the run's own, such as
    a budget's at a superstep boundary)."""
    if request.executor_id == RUN_REQUEST:
        return "the run"
    return f"executor {request.executor_id!r}"


def ask_for_answers(requests: Sequence[PendingRequest]) -> dict[str, Any]:
    """Prompt for each request in turn (on standard error), until every answer has the
    type its executor asked for; return ``{request_id: answer}``."""
    answers: dict[str, Any] = {}
    for request in requests:
        wanted = type_name(request.response_type)
        click.secho(
            f"{asker(request)} asks (request {request.request_id}):",
            err=True,
            bold=True,
        )
        click.echo(textwrap.indent(to_json(request.request, indent=2), "  "), err=True)
        while True:
            text = click.prompt(f"answer ({wanted})", err=True, prompt_suffix=": ")
            try:
                value = parse_answer(text, request.response_type)
            except ValueError as exc:
                click.secho(f"  {exc}; try again", err=True, fg="yellow")
                continue
            if is_instance(value, request.response_type):
                answers[request.request_id] = value
                break
            click.secho(
                f"  the answer must be {wanted}, got {type_name(type(value))}; try again",
                err=True,
                fg="yellow",
            )
    return answers
