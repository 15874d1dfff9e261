"""Rebuilding executors from a spec: what :meth:`plait.Workflow.from_spec` does per node.

For each node, in order: the node's executor kind checks its config (every problem at once,
each with its JSON path under ``/nodes/<i>``) and builds the executor — a front-end's kind
may wrap the caller's executor of the same name. A Python object the caller passed (by node
id, or by the name the document used, ``NodeSpec.uses``) is bound to the node instead when
the node's kind is not installed, or when the kind says so with a true attribute
``binds_passed_executors`` (the ``python`` kind: the object passed *is* the code its config
names). A node recorded as not portable (a lambda …) must be passed in.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ._building import BuildContext
from ._errors import ConfigError, LoadError, PlaitError, SourcePosition, spell
from ._executor import Executor
from ._refs import as_executor
from ._spec import NodeSpec, WorkflowSpec

__all__ = ["MAX_LOAD_NODES", "MAX_NESTING", "LoadScope", "build_executors", "load_scope"]

T = TypeVar("T")

#: How deep workflows may nest in one load (a workflow node holding a workflow … ).
MAX_NESTING = 32
#: How many nodes one load may build, nested workflows included.
MAX_LOAD_NODES = 100_000


class LoadScope:
    """What one load shares: :func:`plait.load` or :meth:`plait.Workflow.from_spec`, with
    every nested workflow they build. It bounds what a document may expand to
    (:data:`MAX_NESTING` levels, :data:`MAX_LOAD_NODES` nodes built) and remembers what
    kinds built (:meth:`once`), so a nested workflow is built once per load however many
    times kinds ask for it (a kind's ``check`` and ``create``, and a front-end kind's that
    wraps it, each ask).

    .. versionadded:: 0.1
    """

    def __init__(self) -> None:
        self.depth = 0
        self.nodes = 0
        self.builds = 0  # specs built (what the regression tests count)
        # key -> (the objects the key names by identity, kept alive; the value)
        self._made: dict[tuple[Any, ...], tuple[tuple[Any, ...], Any]] = {}

    def once(self, key: tuple[Any, ...], make: Callable[[], T], *, alive: tuple[Any, ...]) -> T:
        """``make()`` the first time ``key`` is asked for in this load, then the same value.

        :param key: what the value depends on; an object that stands for itself (a config
            mapping) goes in by ``id()``.
        :param alive: the objects the key names by ``id()``: kept alive for the load, so
            an id is never reused while the key stands for it.

        A ``make()`` that raises is not remembered: the next ask tries again.
        """
        found = self._made.get(key)
        if found is not None:
            value: T = found[1]
            return value
        value = make()
        self._made[key] = (alive, value)
        return value


_SCOPE: contextvars.ContextVar[LoadScope | None] = contextvars.ContextVar(
    "plait_load_scope", default=None
)


@contextlib.contextmanager
def load_scope() -> Iterator[LoadScope]:
    """The load in progress, or a new one for the ``with`` block when none is (what
    :func:`plait.load` and :meth:`plait.Workflow.from_spec` open; a kind that builds
    something again in ``create`` that ``check`` built asks it for :meth:`LoadScope.once`).

    .. versionadded:: 0.1
    """
    scope = _SCOPE.get()
    if scope is not None:
        yield scope
        return
    scope = LoadScope()
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


@contextlib.contextmanager
def _nested(spec: WorkflowSpec, source: str | None) -> Iterator[None]:
    """One more level of a load, within its bounds."""
    with load_scope() as scope:
        if scope.depth >= MAX_NESTING:
            raise _too_much(f"workflows nest more than {MAX_NESTING} deep here", spec, source)
        scope.nodes += len(spec.nodes)
        if scope.nodes > MAX_LOAD_NODES:
            raise _too_much(
                f"the document expands to more than {MAX_LOAD_NODES:,} nodes, nested "
                "workflows included",
                spec,
                source,
            )
        scope.depth += 1
        scope.builds += 1
        try:
            yield
        finally:
            scope.depth -= 1


def _too_much(reason: str, spec: WorkflowSpec, source: str | None) -> LoadError:
    fix = (
        "; a workflow file is untrusted input and its expansion is bounded — flatten the "
        "nesting, or build such a workflow in Python"
    )
    where = SourcePosition(source=source, path="/nodes")
    return LoadError([ConfigError(reason + fix, where)], source=source or spec.name)


def build_executors(
    spec: WorkflowSpec,
    executors: Mapping[str, Any],
    *,
    manager: Any,
    allow_imports: bool,
    source: str | None = None,
) -> dict[str, Executor]:
    """One executor per node of ``spec``.

    :raises LoadError: listing every node that cannot be built, with its JSON path; or
        saying the load went over its bounds (:class:`LoadScope`).
    """
    with _nested(spec, source):
        return _build(spec, executors, manager, allow_imports, source)


def _build(
    spec: WorkflowSpec,
    executors: Mapping[str, Any],
    manager: Any,
    allow_imports: bool,
    source: str | None,
) -> dict[str, Executor]:
    built: dict[str, Executor] = {}
    problems: list[PlaitError] = []
    kinds = manager.registry("executor_kind")
    for index, node in enumerate(spec.nodes):
        where = f"/nodes/{index}"
        try:
            # a node of a registered kind builds itself (a front-end's kind may wrap the
            # caller's executor of the same name) unless its kind says a passed executor
            # stands for the node; a node of no registered kind is bound
            kind = kinds.get(node.kind) if node.kind in kinds else None
            own_kind = kind is not None and not getattr(kind, "binds_passed_executors", False)
            executor = None if own_kind else _bound(node, executors, where)
            if executor is None:
                executor = _from_kind(node, index, kinds, executors, manager, allow_imports, source)
        except _NodeProblems as exc:
            problems.extend(exc.problems)
            continue
        except PlaitError as exc:
            problems.append(_positioned(exc, where, source, _at(node)))
            continue
        built[node.id] = executor
    if problems:
        raise LoadError(problems, source=source or spec.name)
    return built


class _NodeProblems(Exception):
    def __init__(self, problems: list[PlaitError]) -> None:
        super().__init__(problems)
        self.problems = problems


def _bound(node: NodeSpec, executors: Mapping[str, Any], where: str) -> Executor | None:
    for key in (node.id, node.uses):
        if key is not None and key in executors:
            return as_executor(executors[key], node.id, what=f"node {node.id!r} ({where})")
    if node.nonportable is not None:
        name = node.uses or node.id
        raise ConfigError(
            f"node {node.id!r} cannot be rebuilt from data: {node.nonportable} ("
            + spell(
                f"pass it as executors={{{name!r}: ...}}",
                f"define {name!r} in a module given with --agents MODULE_OR_FILE.py",
            )
            + ")",
            SourcePosition(path=where),
        )
    return None


def _from_kind(
    node: NodeSpec,
    index: int,
    kinds: Any,
    executors: Mapping[str, Any],
    manager: Any,
    allow_imports: bool,
    source: str | None,
) -> Executor:
    where = f"/nodes/{index}"
    if node.kind not in kinds:
        hint = ""
        if node.uses is not None:
            hint = "; or " + spell(
                f"pass the executor it uses as executors={{{node.uses!r}: ...}}",
                f"define {node.uses!r} in a module given with --agents MODULE_OR_FILE.py",
            )
        raise ConfigError(
            f"node {node.id!r} has executor kind {node.kind!r}, which no installed plugin "
            f"registers; installed kinds: {', '.join(kinds.names()) or 'none'}{hint}",
            SourcePosition(path=f"{where}/kind", source=source),
        )
    kind = kinds.get(node.kind)
    ctx = BuildContext(
        node_id=node.id,
        allow_imports=allow_imports,
        executors=executors,
        manager=manager,
        source=source or "<string>",
    )
    problems = kind.check(node.config, ctx)
    if problems:
        raise _NodeProblems([_positioned(p, where, source, _at(node)) for p in problems])
    executor: Executor = kind.create(node.config, ctx)
    return executor


def _at(node: NodeSpec) -> tuple[int, int] | None:
    """Where a front-end recorded the node in its document: ``at: [line, column]``."""
    at = node.config.get("at") if isinstance(node.config, Mapping) else None
    if isinstance(at, (list, tuple)) and len(at) == 2 and all(type(v) is int for v in at):
        return at[0], at[1]
    return None


def _positioned(
    error: PlaitError, where: str, source: str | None, at: tuple[int, int] | None = None
) -> PlaitError:
    """``error`` with its JSON path prefixed by the node's (``/nodes/3/config/argv``), and
    the line and column the node's kind gave it kept (a YAML step's position), else the
    node's own (``at``, what its front-end recorded)."""
    position = getattr(error, "position", None)
    line, column = at if at is not None else (None, None)
    if isinstance(error, ConfigError) and position is not None:
        path = position.path or ""
        if not path.startswith(where):
            path = f"{where}{path}"
        has_line = position.line is not None
        return ConfigError(
            error.reason,
            SourcePosition(
                source=position.source or source,
                line=position.line if has_line else line,
                column=position.column if has_line else column,
                path=path,
                text=position.text,
            ),
        )
    return ConfigError(
        f"{error}", SourcePosition(source=source, path=where, line=line, column=column)
    )
