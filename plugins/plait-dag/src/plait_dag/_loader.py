"""The ``dag`` loader: a JSON DAG document to a :class:`~plait.WorkflowSpec`.

Every problem of a document is reported at once, each at its JSON path: schema problems
(unknown fields with the field they probably meant, wrong types), then seed 001's rules —
exactly one entry, at least one exit, every node reachable from the entry, no cycle that
is not a declared loop, every agent known, every condition parsing — and the rules of the
extensions (parallel forks meet a join, loops go back to an earlier node, sub-workflow
files load).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
from plait import (
    ExpressionError,
    LoadError,
    NodeSpec,
    PlaitError,
    SourcePosition,
    WorkflowSpec,
)
from plait.spi import MAX_LOAD_NODES, BuildContext
from plait_documents import (
    Problems,
    SpecBuilder,
    check_agents,
    did_you_mean,
    problem_order,
    read_agents,
)
from plait_routing import fan_in_options

from ._graph import Connection, Node, check_graph, team_config
from ._node import compiled
from ._positions import (
    MAX_DIGITS,
    at_offset,
    locate,
    locate_values,
    path_at,
    raw_offset,
    scan,
)
from ._schema import schema_problems
from .errors import DagDocumentError

__all__ = ["DagLoader"]

_MAX_DEPTH = 16  # sub-workflow files naming sub-workflow files
#: the largest document (and sub-workflow file) read, in characters: the steps format's
#: bound, with its error; json and the checks after it take seconds and gigabytes past it
MAX_TEXT = 2 * 1024 * 1024
_SUPERSTEP_CAP = 10_000_000
_SECTIONS = {"nodes": 1, "connections": 2}  # problems in document order


class DagLoader:
    """Format ``dag``: JSON with ``nodes`` and ``connections`` (suffix ``.json``).

    Options (``plait.load(..., format="dag", **options)``): none.
    """

    suffixes: tuple[str, ...] = (".json",)

    def detect(self, text: str) -> bool:
        """Whether ``text`` is a JSON object with ``nodes`` or ``connections``."""
        head = text.lstrip()[:1]
        if head != "{" or ('"nodes"' not in text and '"connections"' not in text):
            return False
        if len(text) > MAX_TEXT:  # not parsed: the loader says it is too long
            return True
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):
            return False
        return (
            isinstance(document, dict)
            and ("nodes" in document or "connections" in document)
            and "edge_groups" not in document
        )

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec of the document ``text``.

        :raises LoadError: every problem, each a :class:`~plait_dag.DagDocumentError` at
            its JSON path.
        """
        root = _directory(ctx.source)
        return _load(text, ctx, _Stack(root=root, files=(), loaded={}))[0]


@attrs.frozen
class _Stack:
    """Where a document is in the load: the directory files must be in, the sub-workflow
    files being loaded around it, and what every sub-workflow file loaded to (shared by
    the whole load, so a file named K times is loaded once, not K times per level)."""

    root: Path
    files: tuple[Path, ...]
    # (file, depth) -> (the node's config, problems, nodes it expands to); the depth is
    # part of the key since the nesting bound depends on it
    loaded: dict[tuple[Path, int], tuple[dict[str, Any], list[str], int]]


def _directory(source: str) -> Path:
    if source and not source.startswith("<"):
        return Path(source).resolve().parent
    return Path.cwd().resolve()


def _load(text: str, ctx: BuildContext, stack: _Stack) -> tuple[WorkflowSpec, int]:
    """The spec of ``text``, and how many nodes it expands to (sub-workflow files counted
    at every use: the kernel's bound on what one load builds, ``plait.spi.MAX_LOAD_NODES``,
    counts them so, and is checked here before a sub-workflow's spec is copied into the
    node that names it)."""
    source = ctx.source
    if len(text) > MAX_TEXT:
        message = f"the document is {len(text)} characters long; the limit is {MAX_TEXT}"
        position = at_offset(text, 0, None, source)
        raise LoadError([DagDocumentError(message, position)], source=source)
    document = _parse(text, source)
    problems: list[PlaitError] = list(schema_problems(document, source))
    if not isinstance(document, dict):
        raise LoadError(problems, source=source)
    agents, agent_problems = read_agents(document.get("agents"))
    for path, message in agent_problems:
        problems.append(DagDocumentError(message, _at(f"/agents{path}", source)))
    declared = document.get("agents")
    ctx.agents.set_document(agents, declared if isinstance(declared, dict) else ())
    if ctx.manager is not None:
        for path, message in check_agents(
            agents, ctx.manager, source, allow_imports=ctx.allow_imports
        ):
            problems.append(DagDocumentError(message, _at(f"/agents{path}", source)))
    run_defaults: dict[str, Any] = {}
    if ctx.manager is not None:  # the document's run options (budget): checked, then kept
        from plait_documents import DOCUMENT_RUN_OPTIONS, check_run_option

        for name in DOCUMENT_RUN_OPTIONS:
            if document.get(name) is None:
                continue
            said = check_run_option(name, document[name], ctx.manager)
            if said is not None:  # at the field the message names, else at the section
                named, value = said.split("; known:")[0], document[name]
                keys = [k for k in value if f" {k}" in named] if isinstance(value, dict) else []
                path = f"/{name}/{keys[0]}" if keys else f"/{name}"
                problems.append(DagDocumentError(said, _at(path, source)))
            else:
                run_defaults[name] = document[name]
    nodes = _nodes(document.get("nodes"))
    connections = _connections(document.get("connections"))
    problems.extend(check_graph(nodes, connections, ctx))
    workflows = {}
    expanded = len(nodes)
    for node in nodes:
        if node.workflow is not None:
            config, found, inner = _sub_workflow(node, ctx, stack)
            problems.extend(found)
            workflows[node.index] = config
            expanded += inner
    if expanded > MAX_LOAD_NODES:  # counted before any sub-workflow is copied into the spec
        problems.append(
            DagDocumentError(
                f"the document expands to more than {MAX_LOAD_NODES:,} nodes, nested workflows "
                "included (a sub-workflow file counts at every use); a workflow file is "
                "untrusted input and its expansion is bounded",
                _at("/nodes", source),
            )
        )
    expressions = [
        (n.skip_condition, f"{n.where}/skip_condition")
        for n in nodes
        if n.skip_condition is not None
    ]
    expressions += [(c.condition, f"{c.where}/condition") for c in connections if c.condition]
    problems.extend(_parses(expressions, text, ctx))
    if problems:
        collected = Problems(source, order=_order)
        collected.extend(_placed(problems, text))
        collected.raise_if_any()
    spec = _spec(nodes, connections, workflows, ctx, text)
    version = document.get("version")  # checked by the schema: a positive integer
    if isinstance(version, int) and not isinstance(version, bool):
        spec = attrs.evolve(spec, workflow_version=version)
    if run_defaults:
        spec = attrs.evolve(spec, options={**spec.options, **run_defaults})
    return spec, expanded


def _placed(problems: list[PlaitError], text: str) -> list[PlaitError]:
    """Each problem at its JSON path also at the line and column of that path (or of the
    nearest enclosing member that is in the text)."""
    wanted: set[str] = set()
    for problem in problems:
        path = getattr(problem, "path", None)
        while path:
            wanted.add(path)
            path = path.rsplit("/", 1)[0]
    where = locate(text, wanted)
    placed: list[PlaitError] = []
    for problem in problems:
        path = getattr(problem, "path", None)
        position = getattr(problem, "position", None)
        # a problem inside an expression shows the expression with its own caret
        if not path or position is None or position.line is not None or position.text:
            placed.append(problem)
            continue
        at = path
        while at and at not in where:
            at = at.rsplit("/", 1)[0]
        if not at:
            placed.append(problem)
            continue
        line, column, row = where[at]
        placed.append(
            DagDocumentError(
                getattr(problem, "reason", str(problem)),
                SourcePosition(
                    source=position.source, line=line, column=column, path=path, text=row
                ),
            )
        )
    return placed


# -- parsing -------------------------------------------------------------------------------


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(
            text,
            parse_constant=_no_constant,
            parse_int=_checked_int,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError as exc:
        message, offset, path = _syntax_error(text, exc)
        position = at_offset(text, offset, path, source)
        raise LoadError(
            [DagDocumentError(f"not JSON: {message}", position)], source=source
        ) from None
    except _Constant as exc:
        raise LoadError(
            [DagDocumentError(f"not JSON: {exc} is not a JSON number", _at("", source))],
            source=source,
        ) from None
    except (_Refused, RecursionError):
        # Too deep, a repeated key or a huge integer: json does not say where; scan says.
        problems = [
            DagDocumentError(
                finding.message,
                SourcePosition(
                    source=source,
                    line=finding.line,
                    column=finding.column,
                    path=finding.path,
                    text=finding.text,
                    text_column=finding.text_column,
                ),
            )
            for finding in scan(text)
        ]
        raise LoadError(
            problems or [DagDocumentError("the document nests too deeply", _at("", source))],
            source=source,
        ) from None


def _syntax_error(text: str, exc: json.JSONDecodeError) -> tuple[str, int, str | None]:
    """What :mod:`json` found wrong, its offset, and the JSON path it is in (``None`` for
    the document itself: the line says where). A trailing comma, which json reports as a
    missing name or value at the bracket, is named at the comma, in the object or array
    it ends."""
    before = text[: exc.pos].rstrip()
    closer = text[exc.pos : exc.pos + 1]
    if before.endswith(",") and closer in ("}", "]"):
        comma = len(before) - 1
        container = path_at(text, comma).rsplit("/", 1)[0]
        message = f"a trailing comma before '{closer}' (JSON allows none: remove the ',')"
        return message, comma, container or None
    return exc.msg, exc.pos, path_at(text, exc.pos) or None


class _Constant(ValueError):
    pass


class _Refused(Exception):
    """A value :func:`scan` finds with its position: a repeated key, a huge integer."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):  # JSON allows it and keeps the last; we refuse, as YAML
        raise _Refused
    return result


def _checked_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_DIGITS:
        raise _Refused
    return int(digits)


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _at(path: str, source: str) -> SourcePosition:
    return SourcePosition(source=source, path=path)


def _nodes(value: Any) -> list[Node]:
    """The nodes well-formed enough to check the graph (the schema reports the rest)."""
    if not isinstance(value, list):
        return []
    found = []
    for index, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        found.append(
            Node(
                index=index,
                id=item["id"],
                agent_name=_typed(item, "agent_name", str),
                is_entry=_typed(item, "is_entry", bool) is True,
                is_exit=_typed(item, "is_exit", bool) is True,
                skip_condition=_typed(item, "skip_condition", str),
                join=_typed(item, "join", str),
                workflow=_typed(item, "workflow", str),
                team=_typed(item, "team", dict),
            )
        )
    return found


def _connections(value: Any) -> list[Connection]:
    if not isinstance(value, list):
        return []
    found = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            continue
        source, target = item.get("source_id"), item.get("target_id")
        if not isinstance(source, str) or not isinstance(target, str):
            continue
        passed = item.get("context_passed")
        if not isinstance(passed, list) or not all(isinstance(k, str) for k in passed):
            passed = None
        iterations = item.get("max_iterations")
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            iterations = None
        found.append(
            Connection(
                index=index,
                source_id=source,
                target_id=target,
                context_passed=tuple(dict.fromkeys(passed)) if passed is not None else None,
                condition=_typed(item, "condition", str),
                parallel=_typed(item, "parallel", bool) is True,
                max_iterations=iterations,
            )
        )
    return found


def _typed(item: Mapping[str, Any], key: str, kind: type) -> Any:
    value = item.get(key)
    return value if isinstance(value, kind) and value != "" else None


def _parses(
    expressions: list[tuple[str, str]], text: str, ctx: BuildContext
) -> list[DagDocumentError]:
    """A problem for each expression (``(expression, JSON path)``) that does not compile,
    at its line and column in ``text``: the caret under the document's own line."""
    failed: list[tuple[str, str, ExpressionError]] = []
    for expression, path in expressions:
        try:
            compiled(expression, ctx.manager)
        except ExpressionError as exc:
            failed.append((expression, path, exc))
    if not failed:
        return []
    values = locate_values(text, {path for _, path, _ in failed})
    problems = []
    for expression, path, error in failed:
        message = f"the expression does not parse: {error.reason}"
        lines = expression.split("\n")  # a JSON string's "\n" is a line of the expression
        line = min(max(error.line or 1, 1), len(lines))
        decoded = sum(len(x) + 1 for x in lines[: line - 1]) + (error.column or 1) - 1
        if path in values:
            offset = raw_offset(text, values[path], decoded)
            position = at_offset(text, offset, path, ctx.source)
        else:  # pragma: no cover - every expression read from the text is in it
            position = SourcePosition(source=ctx.source, path=path, text=expression)
        problems.append(DagDocumentError(message, position))
    return problems


# -- sub-workflows -------------------------------------------------------------------------


def _sub_workflow(
    node: Node, ctx: BuildContext, stack: _Stack
) -> tuple[dict[str, Any], list[PlaitError], int]:
    """The ``workflow`` kind's config for a node's ``workflow``: a published fragment, or
    the spec of another DAG file (loaded now, so the outer spec is complete data); the
    problems; and how many nodes it expands to. A file is loaded once per load (and
    depth): the nodes that name it again share its spec."""
    name = str(node.workflow)
    path = f"{node.where}/workflow"
    fragments = ctx.manager.registry("fragment") if ctx.manager is not None else None
    if fragments is not None and name in fragments:
        return {"fragment": name}, [], 0

    def problem(message: str) -> tuple[dict[str, Any], list[PlaitError], int]:
        return {}, [DagDocumentError(message, _at(path, ctx.source))], 0

    if not name.endswith(".json"):
        known = fragments.names() if fragments is not None else []
        hint = did_you_mean(name, known)
        return problem(
            f"no published fragment {name!r}{hint}, nor a path to a .json DAG file "
            f"(fragments: {', '.join(known) or 'none'})"
        )
    base = stack.files[-1].parent if stack.files else stack.root
    file = (base / name).resolve()
    if not file.is_relative_to(stack.root):
        return problem(
            f"sub-workflow file {name!r} is outside {str(stack.root)!r}, the directory of "
            "the document that names it (a document may only name files beside or below it)"
        )
    if file in stack.files:
        return problem(f"sub-workflow file {name!r} includes itself")
    if len(stack.files) >= _MAX_DEPTH:
        return problem(f"sub-workflow files nest deeper than {_MAX_DEPTH}")
    key = (file, len(stack.files))
    if key not in stack.loaded:
        stack.loaded[key] = _load_file(file, name, ctx, stack)
    config, found, expanded = stack.loaded[key]
    inner = [
        DagDocumentError(f"in sub-workflow {name!r}: {p}", _at(path, ctx.source)) for p in found
    ]
    return config, list(inner), expanded


def _load_file(
    file: Path, name: str, ctx: BuildContext, stack: _Stack
) -> tuple[dict[str, Any], list[str], int]:
    """What the sub-workflow file ``file`` (named ``name``) loads to: the node's config,
    the problems (as text), the nodes it expands to."""

    def problem(message: str) -> tuple[dict[str, Any], list[str], int]:
        return {}, [message], 0

    try:
        size = file.stat().st_size
        if size > 4 * MAX_TEXT:  # more characters than MAX_TEXT however it is encoded
            return problem(
                f"sub-workflow file {name!r} is {size} bytes; the limit is {MAX_TEXT} characters"
            )
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return problem(f"cannot read sub-workflow file {name!r}: {exc}")
    inner_ctx = attrs.evolve(ctx, source=str(file))
    inner = attrs.evolve(stack, files=(*stack.files, file))
    try:
        spec, expanded = _load(text, inner_ctx, inner)
    except LoadError as exc:
        return {}, [str(p) for p in exc.problems], 0
    return {"spec": _spec_dict(spec)}, [], expanded


def _spec_dict(spec: WorkflowSpec) -> dict[str, Any]:
    """``spec.to_dict()``, without copying the sub-workflow specs its nodes hold: this load
    made those as data already, one per file, shared by every node naming the file (a copy
    at each level would build the very expansion ``MAX_LOAD_NODES`` bounds)."""
    held: dict[int, Any] = {}
    nodes = []
    for index, node in enumerate(spec.nodes):
        workflow = node.config.get("workflow")
        if isinstance(workflow, Mapping) and "spec" in workflow:
            held[index] = workflow
            node = attrs.evolve(node, config={**node.config, "workflow": {}})
        nodes.append(node)
    data = attrs.evolve(spec, nodes=tuple(nodes)).to_dict()
    for index, workflow in held.items():
        data["nodes"][index].setdefault("config", {})["workflow"] = workflow
    return data


# -- the spec ------------------------------------------------------------------------------


def _spec(
    nodes: list[Node],
    connections: list[Connection],
    workflows: Mapping[int, dict[str, Any]],
    ctx: BuildContext,
    text: str,
) -> WorkflowSpec:
    joins = {n.id for n in nodes if n.join is not None}
    resets: dict[str, list[int]] = {}
    for conn in connections:
        if conn.max_iterations is not None:
            resets.setdefault(conn.target_id, []).append(conn.index)
    routes: dict[str, list[dict[str, Any]]] = {n.id: [] for n in nodes}
    for conn in connections:
        route: dict[str, Any] = {"target": conn.target_id, "connection": conn.index}
        if conn.condition is not None:
            route["condition"] = conn.condition
        if conn.context_passed is not None:
            route["context_passed"] = list(conn.context_passed)
        if conn.parallel:
            route["parallel"] = True
        if conn.max_iterations is not None:
            route["max_iterations"] = conn.max_iterations
        elif conn.target_id in resets:
            route["resets"] = resets[conn.target_id]
        routes[conn.source_id].append(route)
    # where each node is in the text, for what later problems say (a capability's need)
    where = locate(text, {f"/nodes/{n.index}" for n in nodes})
    specs = []
    for node in nodes:
        config: dict[str, Any] = {}
        if node.where in where:
            config["at"] = list(where[node.where][:2])
        if node.team is not None:  # plait-teams' ``team`` kind runs it, as the node's agent
            config["agent"] = node.id
            config["use"] = {"kind": "team", "config": team_config(node, ctx)}
        elif node.agent_name is not None:
            config["agent"] = node.agent_name
            found = ctx.agents.find(node.agent_name)
            if found is not None and found.definition is not None:
                config["use"] = found.definition.to_dict()
        if node.index in workflows:
            config["workflow"] = workflows[node.index]
        if node.skip_condition is not None:
            config["skip_condition"] = node.skip_condition
        if node.join is not None:
            config["join"] = node.join
        if routes[node.id]:
            config["routes"] = routes[node.id]
        specs.append(NodeSpec(node.id, kind="dag.node", config=config))
    spec = SpecBuilder()
    for node_spec in specs:
        spec.add_node(node_spec)
    for node in nodes:
        targets = list(dict.fromkeys(r["target"] for r in routes[node.id]))
        targets = [t for t in targets if t not in joins]
        if len(targets) == 1:
            spec.add_edge_group("direct", [node.id], targets)
        elif targets:
            spec.add_edge_group("fan_out", [node.id], targets)
    for node in nodes:
        if node.join is None:
            continue
        sources = list(dict.fromkeys(c.source_id for c in connections if c.target_id == node.id))
        if sources:
            options = fan_in_options("keyed", when="available")
            spec.add_edge_group("fan_in", sources, [node.id], options)
    entry = next(n.id for n in nodes if n.is_entry)
    return spec.build(
        name=Path(ctx.source).stem if not ctx.source.startswith("<") else None,
        start=entry,
        options={"max_supersteps": _superstep_bound(nodes, connections)},
        # a document without a declared loop is a DAG (cycles were refused above); its
        # spec says so, and keeps saying so wherever it is exported to and rebuilt
        acyclic=all(conn.max_iterations is None for conn in connections),
    )


def _superstep_bound(nodes: list[Node], connections: list[Connection]) -> int:
    """Enough supersteps for any route: every node once per turn of every loop (the loops'
    own counters stop a runaway loop first, with an error naming it)."""
    turns = 1
    for conn in connections:
        if conn.max_iterations is not None:
            turns = min(turns * (conn.max_iterations + 1), _SUPERSTEP_CAP)
    return max(100, min(_SUPERSTEP_CAP, 2 * (len(nodes) + 2) * turns))


# -- problems ------------------------------------------------------------------------------


def _order(problem: PlaitError) -> tuple[Any, ...]:
    """Problems in document order: by line, then nodes before connections, then path."""
    path = getattr(problem, "path", None) or ""
    parts = path.split("/")
    section = _SECTIONS.get(parts[1] if len(parts) > 1 else "", 0)
    if path:  # in JSON path order (it has a line too, where that path is in the text)
        steps = tuple((0, int(p), "") if p.isascii() and p.isdigit() else (1, 0, p) for p in parts)
        return (0, section, 1, steps, ())
    return (getattr(problem, "line", None) or 0, section, 0, (), problem_order(problem))
