"""One way to build the IR: the spec builder and the helpers every front-end shares.

Every front-end (flow, JSON DAG, YAML steps) and the builder API turn their input into a
:class:`~plait.WorkflowSpec` through the same pieces, so a workflow is the same data
whichever way it was written and its errors read the same. They are not the kernel's
(it takes a spec, however it was made): they come with ``plait-documents``, which every
front-end depends on, and are importable from here or from :mod:`plait_documents`:

- :class:`SpecBuilder`: nodes and edge groups added as data; it owns the edge-group id
  scheme (:func:`edge_group_id`: ``router:sources->targets``, ``#2``, ``#3`` … on a clash);
- :class:`Problems`: every problem of a document, deduplicated and sorted by position,
  raised together as one :class:`~plait.LoadError`;
- :func:`did_you_mean`: the one "did you mean 'writer'?" hint;
- :func:`check_config`: a config checked against a JSON Schema, each violation a
  :class:`~plait.ConfigError` at its JSON pointer (a plugin that calls it depends on
  ``jsonschema``, which is imported only to explain a config that does not fit: whether one
  fits is asked of ``jsonschema-rs`` first, which imports in a tenth of the time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from plait import (
    ConfigError,
    EdgeGroupSpec,
    LoadError,
    NodeSpec,
    PlaitError,
    SourcePosition,
    WorkflowSpec,
)

__all__ = [
    "Problems",
    "SpecBuilder",
    "check_config",
    "config_error",
    "did_you_mean",
    "edge_group_id",
    "json_pointer",
    "problem_order",
]


# -- did you mean ---------------------------------------------------------------------------


def did_you_mean(name: object, names: Iterable[object]) -> str:
    """The hint to append to a message about an unknown ``name``: ``"; did you mean
    'writer'?"`` with the closest of ``names`` (``difflib``'s ratio, at least 0.6), or
    ``""`` when none is close.
    """
    import difflib  # here: only a document with a mistake pays its import

    close = difflib.get_close_matches(str(name), [str(n) for n in names], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# -- problems -----------------------------------------------------------------------------------


def _path_parts(path: str) -> tuple[tuple[int, int, str], ...]:
    # numbers in order of their value: /nodes/2 before /nodes/10
    return tuple(
        (0, int(part), "") if part.isascii() and part.isdigit() else (1, 0, part)
        for part in path.split("/")
    )


def problem_order(problem: PlaitError) -> tuple[Any, ...]:
    """Where ``problem`` is, as a sort key: line, column, then JSON path (its numbers by
    value); a problem with no position sorts first.
    """
    position = getattr(problem, "position", None)
    line = getattr(position, "line", None) or 0
    column = getattr(position, "column", None) or 0
    path = getattr(position, "path", None) or ""
    return (line, column, _path_parts(path))


class Problems:
    """Every problem of one document, collected as they are found, then reported at once.

    ``add`` takes a positioned error (a :class:`~plait.DocumentError`, a
    :class:`~plait.ConfigError` …); :meth:`sorted` gives them without duplicates (same
    message), sorted by position (:func:`problem_order`, or ``order``), and
    :meth:`raise_if_any` raises them as one :class:`~plait.LoadError`.

    :param source: the document's name, for the :class:`~plait.LoadError`.
    :param order: the sort key (default: :func:`problem_order`).
    """

    def __init__(
        self,
        source: str | None = None,
        *,
        order: Callable[[PlaitError], Any] = problem_order,
    ) -> None:
        self.source = source
        self.order = order
        self._found: list[PlaitError] = []

    def add(self, problem: PlaitError) -> None:
        """Collect one problem."""
        self._found.append(problem)

    def extend(self, problems: Iterable[PlaitError]) -> None:
        """Collect several problems."""
        self._found.extend(problems)

    def __len__(self) -> int:
        return len(self._found)

    def __bool__(self) -> bool:
        return bool(self._found)

    def __iter__(self) -> Iterator[PlaitError]:
        return iter(self.sorted())

    def sorted(self) -> list[PlaitError]:
        """The problems, each message once, sorted by position."""
        seen: set[str] = set()
        unique = []
        for problem in self._found:
            text = str(problem)
            if text not in seen:
                seen.add(text)
                unique.append(problem)
        return sorted(unique, key=self.order)

    def raise_if_any(self) -> None:
        """Raise every problem as one :class:`~plait.LoadError` (nothing when none)."""
        if self._found:
            raise LoadError(self.sorted(), source=self.source)


# -- JSON Schema configs ----------------------------------------------------------------------

#: compiled validators by ``id(schema)``; the schema is kept so its id is never reused
_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}
#: the same for ``jsonschema-rs`` (``None``: the schema is for jsonschema alone)
_FAST_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}
#: The keywords the two libraries may read differently — regular expressions (Python's
#: ``re`` against ECMA-262), formats, float division, references and how they are found —
#: and the ones that name another schema: a schema holding any of them anywhere (as a
#: keyword or as a property name alike) is checked by jsonschema alone.
_JSONSCHEMA_ONLY = frozenset(
    {
        "pattern",
        "patternProperties",
        "format",
        "multipleOf",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
    }
)
#: jsonschema-rs reads integers as 64-bit numbers: a larger one is jsonschema's to judge
_INT_BOUND = 2**63


def json_pointer(parts: Iterable[str | int], *, root: str = "/config") -> str:
    """The JSON pointer (RFC 6901) of ``parts`` under ``root``: ``/config/argv/0``."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return root + "".join(f"/{p}" for p in escaped)


def config_error(
    node_id: str, message: str, path: str = "/config", *, source: str | None = None
) -> ConfigError:
    """A :class:`~plait.ConfigError` for executor ``node_id`` at JSON ``path``."""
    return ConfigError(f"executor {node_id!r}: {message}", SourcePosition(source=source, path=path))


def check_config(
    schema: Mapping[str, Any],
    config: Any,
    node_id: str,
    *,
    source: str | None = None,
    root: str = "/config",
) -> list[ConfigError]:
    """Every way ``config`` breaks ``schema`` (JSON Schema draft 2020-12), sorted by path.

    Each error names ``node_id`` and carries the JSON pointer of the offending value
    (``/config/argv/0``) as its position's ``path``. An unknown key is reported at its own
    path, with the closest allowed key as a suggestion. An empty list means valid.
    A plugin that calls this depends on ``jsonschema``: it is imported when a config does
    not fit (to say how), or when ``jsonschema-rs`` cannot tell (:func:`_fits`).

    :param schema: the kind's ``config_schema``.
    :param config: the node's config, as loaded (any JSON value).
    :param node_id: the node being checked, named in every message.
    :param source: the document the node came from, for the error position.
    :param root: the pointer of ``config`` within its document.
    """
    if _fits(schema, config):
        return []
    errors: list[ConfigError] = []
    for error in _validator(schema).iter_errors(config):
        errors.extend(_convert(error, node_id, source, root))
    errors.sort(key=lambda e: (e.path or "", str(e)))
    return errors


def _fits(schema: Mapping[str, Any], config: Any) -> bool:
    """Whether ``config`` certainly fits ``schema``, asked of ``jsonschema-rs`` (a
    compiled draft 2020-12 validator that imports in a few milliseconds, where jsonschema
    takes tens): true only when it accepts a config of plain JSON values against a schema
    both libraries read alike, so the answer is jsonschema's own. Anything else — a config
    it rejects, a value it would convert (a tuple, a big integer, ``NaN``), a schema
    with a keyword of :data:`_JSONSCHEMA_ONLY` — is left to jsonschema, which also
    explains each violation."""
    cached = _FAST_VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        validator = None
        if isinstance(schema, dict) and not _mentions(schema, _JSONSCHEMA_ONLY):
            import jsonschema_rs

            try:
                validator = jsonschema_rs.Draft202012Validator(schema)
            except Exception:  # not a schema it takes: jsonschema says why
                validator = None
        cached = _FAST_VALIDATORS[id(schema)] = (schema, validator)
    validator = cached[1]
    if validator is None or not _plain_json(config):
        return False
    try:
        return bool(validator.is_valid(config))
    except Exception:  # a value it cannot read (a lone surrogate …): jsonschema's to judge
        return False


def _mentions(schema: Any, keys: frozenset[str]) -> bool:
    """Whether any mapping in ``schema`` (at any depth) has a key in ``keys``."""
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            if not keys.isdisjoint(value):
                return True
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return False


def _plain_json(config: Any) -> bool:
    """Whether ``config`` is made of JSON values only, each of its exact built-in type
    (``dict`` with ``str`` keys, ``list``, ``str``, ``bool``, a 64-bit ``int``, a finite
    ``float``, ``None``): what both validators read the same way."""
    stack = [config]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            if not all(type(key) is str for key in value):
                return False
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is int:
            if not -_INT_BOUND <= value < _INT_BOUND:
                return False
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is not str and kind is not bool and value is not None:
            return False
    return True


def _validator(schema: Mapping[str, Any]) -> Any:
    """A compiled ``jsonschema.Draft202012Validator`` (untyped: jsonschema ships no types)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    validator = Draft202012Validator(schema)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def _convert(error: Any, node_id: str, source: str | None, root: str) -> list[ConfigError]:
    """ConfigErrors for one ``jsonschema.ValidationError``."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]

        error = best_match(error.context)
    path = json_pointer(error.absolute_path, root=root)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        unknown = _unknown_keys(error.instance, error.schema)
        if unknown:
            return [_unknown_key(node_id, key, error.schema, path, source) for key in unknown]
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return [
                config_error(node_id, f"{key!r} is required", path, source=source)
                for key in missing
            ]
    where = f"config value {path.removeprefix(root) or '(whole config)'}"
    return [config_error(node_id, f"{where}: {error.message}", path, source=source)]


def _unknown_keys(instance: Mapping[str, Any], schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    known = set(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in instance
        if key not in known and not any(re.search(p, str(key)) for p in patterns)
    ]


def _unknown_key(
    node_id: str, key: str, schema: Mapping[str, Any], path: str, source: str | None
) -> ConfigError:
    allowed = sorted(schema.get("properties", {}))
    message = f"unknown config key {key!r}{did_you_mean(key, allowed)}"
    if allowed:
        message += f" (allowed: {', '.join(allowed)})"
    return config_error(node_id, message, json_pointer([key], root=path), source=source)


# -- the spec builder ---------------------------------------------------------------------------


def edge_group_id(
    router: str, sources: Sequence[str], targets: Sequence[str], taken: Iterable[str] = ()
) -> str:
    """The id of an edge group: ``router:a,b->c,d``; ``#2``, ``#3`` … appended while it is
    in ``taken`` (two groups of one router between the same executors).
    """
    base = f"{router}:{','.join(sources)}->{','.join(targets)}"
    used = taken if isinstance(taken, (set, frozenset)) else set(taken)
    gid, n = base, 2
    while gid in used:
        gid, n = f"{base}#{n}", n + 1
    return gid


class SpecBuilder:
    """A :class:`~plait.WorkflowSpec` built as data, node by node and group by group.

    Front-ends and builders add what they compile; the builder names every edge group
    (:func:`edge_group_id`) and refuses a node id given twice.
    """

    def __init__(self) -> None:
        self.nodes: dict[str, NodeSpec] = {}
        self.groups: list[EdgeGroupSpec] = []
        self.group_ids: set[str] = set()

    def add_node(self, node: NodeSpec) -> NodeSpec:
        """Add ``node``; :class:`ValueError` when its id is taken."""
        if node.id in self.nodes:
            raise ValueError(f"node id {node.id!r} is used twice")
        self.nodes[node.id] = node
        return node

    def add_edge_group(
        self,
        router: str,
        sources: Sequence[str],
        targets: Sequence[str],
        options: Mapping[str, Any] | None = None,
    ) -> EdgeGroupSpec:
        """Add a group of edges ``router`` drives from ``sources`` to ``targets``, with
        router ``options`` (JSON-ready; plait-routing's constructors build its own)."""
        gid = edge_group_id(router, sources, targets, self.group_ids)
        self.group_ids.add(gid)
        group = EdgeGroupSpec(gid, router, tuple(sources), tuple(targets), dict(options or {}))
        self.groups.append(group)
        return group

    def build(self, *, start: str, name: str | None = None, **fields: Any) -> WorkflowSpec:
        """The spec: the nodes and groups in the order added, and ``fields`` (``options``,
        ``retry``, ``timeout``, ``placement``) as :class:`~plait.WorkflowSpec` takes them."""
        return WorkflowSpec(
            name=name,
            start=start,
            nodes=tuple(self.nodes.values()),
            edge_groups=tuple(self.groups),
            **fields,
        )
