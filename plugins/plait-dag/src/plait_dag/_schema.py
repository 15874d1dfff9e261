"""The document's JSON Schema (``schema.json``) and its errors as positioned problems.

``jsonschema`` is imported when a document is first checked, never when the plugin is
registered.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from plait import SourcePosition
from plait_documents import did_you_mean, json_pointer

from .errors import DagDocumentError

__all__ = ["conforms", "document_schema", "pointer", "schema_problems"]

_REPR_LIMIT = 80


@functools.cache
def document_schema() -> dict[str, Any]:
    """The JSON Schema of a DAG document (draft 2020-12), as shipped in ``schema.json``."""
    text = resources.files("plait_dag").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    return Draft202012Validator(document_schema())


def pointer(parts: Iterable[str | int]) -> str:
    """The JSON pointer (RFC 6901) of ``parts``: ``/nodes/0/is_entry``; ``""`` is the
    whole document."""
    return json_pointer(parts, root="")


def schema_problems(document: Any, source: str) -> list[DagDocumentError]:
    """Every way ``document`` breaks the schema, each at its JSON path; an unknown field
    names the field it probably meant.

    A well-formed document is accepted by :func:`conforms`, a plain-Python check at least
    as strict as the schema (a test holds the two together), in a tenth of jsonschema's
    time; jsonschema explains the documents it refuses."""
    if conforms(document):
        return []
    problems: list[DagDocumentError] = []
    for error in _validator().iter_errors(document):
        problems.extend(_convert(error, source))
    return problems


def _convert(error: Any, source: str) -> list[DagDocumentError]:
    path = pointer(error.absolute_path)
    instance = error.instance
    if error.validator == "additionalProperties" and isinstance(instance, Mapping):
        allowed = sorted(error.schema.get("properties", {}))
        return [
            _unknown_field(key, allowed, pointer([*error.absolute_path, key]), source)
            for key in instance
            if key not in allowed
        ]
    if error.validator == "required" and isinstance(instance, Mapping):
        return [
            _problem(f"{_what(path)} lacks the required field {key!r}", path, source)
            for key in error.validator_value
            if key not in instance
        ]
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        message = f"{_what(path)} must be {_article(expected)}, not {_json_type(instance)}"
        return [_problem(message, path, source)]
    shown = _short(instance)
    message = error.message if len(error.message) < 200 else f"{shown}: fails {error.validator}"
    return [_problem(f"{_what(path)}: {message}", path, source)]


def _unknown_field(key: str, allowed: list[str], path: str, source: str) -> DagDocumentError:

    message = f"unknown field {_short(key)}"
    message += did_you_mean(key, allowed)
    message += f" (fields: {', '.join(allowed)})"
    return _problem(message, path, source)


def _problem(message: str, path: str, source: str) -> DagDocumentError:
    return DagDocumentError(message, SourcePosition(source=source, path=path))


def _what(path: str) -> str:
    return f"{path!r}" if path else "the document"


def _article(name: str) -> str:
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


# -- the fast acceptor -------------------------------------------------------------------------

_NODE_STRINGS = {
    "id": 256,
    "agent_name": 256,
    "join": 256,
    "workflow": 256,
    "skip_condition": 10000,
}
_NODE_BOOLS = frozenset({"is_entry", "is_exit"})
_CONN_STRINGS = {"source_id": 256, "target_id": 256, "condition": 10000}


def _string(value: Any, limit: int) -> bool:
    return type(value) is str and 0 < len(value) <= limit


def _node_ok(node: Any) -> bool:
    if type(node) is not dict or "id" not in node:
        return False
    for key, value in node.items():
        limit = _NODE_STRINGS.get(key)
        if limit is not None:
            if not _string(value, limit):
                return False
        elif key not in _NODE_BOOLS or type(value) is not bool:
            return False
    return True


def _connection_ok(conn: Any) -> bool:
    if type(conn) is not dict or "source_id" not in conn or "target_id" not in conn:
        return False
    for key, value in conn.items():
        limit = _CONN_STRINGS.get(key)
        if limit is not None:
            if not _string(value, limit):
                return False
        elif key == "parallel":
            if type(value) is not bool:
                return False
        elif key == "max_iterations":
            if type(value) is not int or not 1 <= value <= 1_000_000:
                return False
        elif key == "context_passed":
            if type(value) is not list or not all(type(k) is str for k in value):
                return False
            if len(set(value)) != len(value):
                return False
        else:
            return False
    return True


def conforms(document: Any) -> bool:
    """Whether ``document`` certainly fits ``schema.json`` (``False`` may still fit: ask
    jsonschema)."""
    if type(document) is not dict or not {"nodes", "connections"} <= set(document):
        return False
    if not set(document) <= {"nodes", "connections", "agents", "version", "budget"}:
        return False
    version = document.get("version", 1)
    if type(version) is not int or version < 1:
        return False
    if type(document.get("agents", {})) is not dict:
        return False
    nodes, connections = document["nodes"], document["connections"]
    if type(nodes) is not list or type(connections) is not list:
        return False
    return all(_node_ok(n) for n in nodes) and all(_connection_ok(c) for c in connections)
