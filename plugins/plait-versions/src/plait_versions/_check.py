"""Checking a migrated run against the new workflow before anything runs.

What a chain of migrations returns is untrusted in the same way a store is: every stored
value must decode into the types the new workflow declares
(:func:`plait_durable.declared_types`), every message must go to an executor that has a
handler for it, every state, request and stateful edge group must belong to an executor
or edge group the workflow has. The first value that does not fit is reported with its
path in the snapshot (``pending['writer'][0].body``) and what is wrong with it; the run
is then left as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from plait.spi import type_name
from plait_durable import DecodeError, declared_types, decode_value

from ._snapshot import TAG

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = ["BadValue", "check_state"]

_BUILT_IN_TAGS = frozenset({"dict", "tuple", "set", "frozenset", "bytes", "float"})


class BadValue(Exception):
    """A value of a migrated state that does not fit: ``path`` and ``problem``."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def _key(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _walk(data: Any, path: str, types: Mapping[str, type]) -> None:
    """Check every value of ``data`` (stored JSON) decodes: the deepest bad one first."""
    if isinstance(data, list):
        for index, item in enumerate(data):
            _walk(item, f"{path}[{index}]", types)
        return
    if not isinstance(data, dict):
        return
    if TAG not in data:
        for key, item in data.items():
            _walk(item, _key(path, str(key)), types)
        return
    tag, raw = data.get(TAG), data.get("v")
    if tag in _BUILT_IN_TAGS:
        _walk(raw, path, types)
    else:
        if not isinstance(tag, str) or tag not in types:
            raise BadValue(
                path,
                f"holds a value of type {str(tag)[:200]!r}, which is not a type the new "
                "workflow declares (map it to one of its types in the migration)",
            )
        if isinstance(raw, dict):
            for key, item in raw.items():
                _walk(item, _key(path, str(key)), types)
    try:
        decode_value(data, types)
    except DecodeError as exc:
        raise BadValue(path, _decode_problem(exc, path)) from exc


def _decode_problem(exc: DecodeError, path: str) -> str:
    """What a failed decode says, with cattrs' own paths under ``path`` when it has them
    (``required field missing @ pending['w'][0].body``)."""
    import cattrs

    cause = exc.__cause__
    if isinstance(cause, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(cause, path=path))
    return str(exc)


def check_state(graph: CompiledGraph, state: Mapping[str, Any]) -> None:
    """Check a migrated full state against ``graph`` (see the module docstring).

    :raises BadValue: naming the path of the first value that does not fit.
    """
    types = declared_types(graph)
    executors = graph.executors
    label = f"workflow {graph.spec.name or '(unnamed)'}"
    if graph.spec.workflow_version is not None:
        label += f" version {graph.spec.workflow_version}"
    for eid, value in (state.get("executor_state") or {}).items():
        path = f"executor_state[{eid!r}]"
        if eid not in executors:
            raise BadValue(path, f"is the state of executor {eid!r}, which {label} does not have")
        _walk(value, path, types)
    for eid, messages in (state.get("pending") or {}).items():
        if eid not in executors:
            raise BadValue(f"pending[{eid!r}]", f"goes to executor {eid!r}, which {label} lacks")
        executor = executors[eid]
        for index, message in enumerate(messages):
            path = f"pending[{eid!r}][{index}]"
            _walk(message, path, types)
            decoded = decode_value(message, types)
            if executor.find_handler(decoded) is None:
                takes = ", ".join(type_name(h.input_type) for h in executor.handlers)
                raise BadValue(
                    path,
                    f"is a {type_name(type(decoded))}, which executor {eid!r} has no handler "
                    f"for (it takes {takes or 'nothing'})",
                )
    shared = state.get("shared")
    _walk(shared if shared is not None else {}, "shared", types)
    for index, output in enumerate(state.get("outputs") or []):
        _walk(output, f"outputs[{index}]", types)
    for index, request in enumerate(state.get("requests") or []):
        path = f"requests[{index}]"
        if request.get("executor_id") not in executors:
            raise BadValue(
                f"{path}.executor_id",
                f"names executor {request.get('executor_id')!r}, which {label} does not have",
            )
        _walk(request.get("request"), f"{path}.request", types)
        response_type = request.get("response_type")
        if response_type is not None and response_type not in types:
            raise BadValue(
                f"{path}.response_type",
                f"is {str(response_type)[:200]!r}, which is not a type {label} declares",
            )
    for gid in state.get("router_state") or {}:
        if gid not in graph.edge_runners:
            raise BadValue(f"router_state[{gid!r}]", f"names edge group {gid!r}, not in {label}")
