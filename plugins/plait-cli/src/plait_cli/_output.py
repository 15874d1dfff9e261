"""How the CLI prints: values as JSON, events as JSON lines, errors with their cause, tables."""

from __future__ import annotations

import enum
import json
import sys
import textwrap
import traceback
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

import attrs
from plait import PlaitError, WorkflowEvent

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "DISABLE_ENV",
    "describe_error",
    "event_record",
    "format_output",
    "format_table",
    "how_to_install",
    "json_ready",
    "to_json",
]

#: The variable that disables plugins by name (read by ``plait.plugins``).
DISABLE_ENV = "PLAIT_DISABLE_PLUGINS"


def json_ready(value: Any) -> Any:
    """A JSON-ready stand-in for a value ``json`` cannot encode (the ``default=`` hook).

    attrs classes and dataclasses become objects, enums their value, sets sorted lists,
    bytes text, exceptions ``"Type: message"``; anything else its ``repr``.
    """
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if hasattr(type(value), "__dataclass_fields__") and not isinstance(value, type):
        import dataclasses  # (imported by whoever made the dataclass)

        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, BaseException):
        return f"{type(value).__name__}: {value}"
    if isinstance(value, PurePath):
        return str(value)
    return repr(value)


def to_json(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON text (see :func:`json_ready` for values JSON has no type for)."""
    return json.dumps(value, default=json_ready, ensure_ascii=False, indent=indent)


def format_output(value: Any) -> str:
    """One workflow output as printed: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else to_json(value)


def event_record(event: WorkflowEvent) -> dict[str, Any]:
    """An event as a JSON-ready record: ``{"event": "OutputEvent", <its fields>…}``."""
    record: dict[str, Any] = {"event": type(event).__name__}
    for field in attrs.fields(type(event)):
        value = getattr(event, field.name)
        if isinstance(value, BaseException):
            value = f"{type(value).__name__}: {value}"
        record[field.name] = value
    return record


def _where(exc: BaseException) -> str | None:
    """``file:line in function`` where ``exc`` was raised, if it carries a traceback."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}:{exc.lineno}"
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return None
    last = frames[-1]
    return f"{last.filename}:{last.lineno} in {last.name}"


def describe_error(exc: BaseException, *, indent: str = "  ") -> str:
    """``Type: message``, then each grouped error and the cause chain, one per line.

    When the innermost cause is not a Plait error (a handler's exception, an import that
    failed), it says where it was raised (``file:line in function``): what someone fixing
    a handler or a module needs.
    """
    lines = [f"{type(exc).__name__}: {exc}"]
    if isinstance(exc, BaseExceptionGroup):
        lines = [str(exc)]
        lines.extend(f"{indent}- {error}" for error in exc.exceptions)
        return "\n".join(lines)
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    root = exc
    while cause is not None:
        lines.append(f"{indent}caused by {type(cause).__name__}: {cause}")
        root = cause
        cause = cause.__cause__ or (None if cause.__suppress_context__ else cause.__context__)
    # where the kernel raised its own errors helps nobody; where user code raised does
    where = None if isinstance(root, PlaitError) else _where(root)
    if where is not None:
        lines.append(f"{indent}raised at {where}")
    return "\n".join(lines)


def format_table(
    headers: Sequence[str],
    rows: Sequence[tuple[Sequence[str], Sequence[str]]],
    *,
    width: int = 100,
) -> str:
    """A plain-text table: each row is (cells, detail lines printed under it, indented).

    Columns are as wide as their widest cell; the last column is not padded. Detail lines
    are wrapped at ``width`` characters, continuing two spaces further in.
    """
    widths = [len(h) for h in headers]
    for cells, _ in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, cells)]

    def line(cells: Sequence[str]) -> str:
        padded = [c.ljust(w) for c, w in zip(cells[:-1], widths)]
        return "  ".join([*padded, cells[-1]]).rstrip()

    indent = " " * (widths[0] + 2)
    out = [line(headers)]
    for cells, details in rows:
        out.append(line(cells))
        for detail in details:
            for text in detail.splitlines():
                out.extend(
                    textwrap.wrap(
                        text,
                        width=max(width, len(indent) + 40),
                        initial_indent=indent,
                        subsequent_indent=indent + "  ",
                        break_long_words=False,
                        break_on_hyphens=False,
                    )
                )
    return "\n".join(out)


def how_to_install(distribution: str) -> str:
    """How to install ``distribution``, in the words the installed plugins give
    (plait-catalog's for a first-party one: in a checkout, with pip from it, from an index
    that has Plait), so the CLI prints no install command that fails."""
    from plait import get_plugin_manager

    return get_plugin_manager().how_to_install(distribution)
