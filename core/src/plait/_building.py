"""Building part of a workflow: :class:`BuildContext`, what a plugin may use while it
builds, :class:`ExecutorKind`, the named factories that build executors from data, and
:class:`Loader`, the front-ends that turn a document's text into a spec, and rebuilding a
spec's executors through those kinds (:func:`build_executors`, what
:meth:`plait.Workflow.from_spec` does per node).

One type for every builder: a loader turning text into a spec, an executor kind building
a node's executor, a router creating an edge group's runner (it is the
:class:`~plait.spi.RouterEnv` routers see). It looks up other registries and turns the
code a spec records (an expression, a reference to a function) into callables.

Expressions are in languages plugins register by name
(``plait_register_expression_languages``; the first-party one, ``plait-expr``'s, is named
``"plait"`` and is every front-end's default). An expression is compiled once, when a
workflow is built, so a syntax error is reported then, with line, column and a caret
(:class:`~plait.ExpressionError`); a compiled expression only ever reads JSON-like data:
nothing reaches Python attributes, nothing is imported, nothing is ``eval``'d.

Building happens once per workflow, before any run: the runner never imports this.

Rebuilding a spec, node by node, in order: the node's executor kind checks its config (every
problem at once, each with its JSON path under ``/nodes/<i>``) and builds the executor — a
front-end's kind may wrap the caller's executor of the same name. A Python object the caller
passed (by node id, or by the name the document used, ``NodeSpec.uses``) is bound to the node
instead when the node's kind is not installed, or when the kind says so with a true attribute
``binds_passed_executors`` (the ``python`` kind: the object passed *is* the code its config
names). A node recorded as not portable (a lambda …) must be passed in.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import attrs

from ._errors import (
    ConfigError,
    ExpressionError,
    LoadError,
    NotPortableError,
    PlaitError,
    SourcePosition,
)
from ._executor import Executor
from ._records import record_repr
from ._spec import NodeSpec, WorkflowSpec, as_executor, resolve_ref

__all__ = [
    "build_executors",
    "BuildContext",
    "ExecutorKind",
    "load_scope",
    "Loader",
    "LoadScope",
    "MAX_LOAD_NODES",
    "MAX_NESTING",
    "DEFAULT_LANGUAGE",
    "CompiledExpression",
    "CompiledTemplate",
    "ExpressionLanguage",
    "compile_expression",
    "compile_template",
]


@attrs.frozen(kw_only=True, repr=False)
class BuildContext:
    """What a loader, an executor kind or a router may use while it builds.

    :param manager: the plugin manager (a :class:`plait.spi.PluginManager`), for other
        registries (merge strategies, expression languages, fragments, loaders).
    :param source: the document being built from (a file name; ``<string>`` for text, or
        a workflow not loaded from text); put it in every error position.
    :param node_id: the node being built, for an executor kind (name it in errors).
    :param allow_imports: whether code named by the document (``{"ref": ...}``,
        ``ref: module:attr``) may be imported. False for documents from untrusted sources
        (``plait.load`` of a file, unless the caller says otherwise): a builder that would
        import refuses with a :class:`~plait.ConfigError`.
    :param executors: the Python objects the caller passed by name (``executors=``).
    :param names: every name the text may use for an executor: ``executors``' keys,
        installed executor kinds and published fragments (for "did you mean …?").
    :param options: loader options the caller passed to :func:`plait.load` (``merge=`` …).
    :param agents: for a loader, the agent names of this load in the documented order
        (``plait_documents.AgentNames``): give it the document's ``agents:`` section
        (``set_document``), then resolve every name with ``find``. Not given, the
        documents plugin makes one from ``executors`` when a loader first asks for it.
    """

    __repr__ = record_repr

    manager: Any = None
    source: str = "<string>"
    node_id: str = ""
    allow_imports: bool = True
    executors: Mapping[str, Any] = attrs.field(factory=dict)
    names: frozenset[str] = frozenset()
    options: Mapping[str, Any] = attrs.field(factory=dict)
    _agents: Any = attrs.field(default=None, alias="agents")

    @property
    def agents(self) -> Any:
        """The agent names of this load (see ``agents`` above), made on first use through
        the documents plugin when none was given.

        :raises UnknownNameError: ``plait-documents`` is not installed (naming it).
        """
        found = self._agents
        if found is None:
            manager = self.manager
            if manager is None:
                from ._plugins import get_plugin_manager

                manager = get_plugin_manager()
            documents = manager.documents("agent names")
            found = documents.agent_names(self.executors)
            object.__setattr__(self, "_agents", found)  # made once: frozen otherwise
        return found

    def for_node(self, node_id: str, *, allow_imports: bool | None = None) -> BuildContext:
        """This context, building node ``node_id`` (imports allowed as given, or as
        here)."""
        allowed = self.allow_imports if allow_imports is None else allow_imports
        return attrs.evolve(self, node_id=node_id, allow_imports=allowed)

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
        """The ``kind`` registered as ``name`` (an ``UnknownNameError`` naming ``what``)."""
        return self.manager.registry(kind).get(name, what=what)

    def callable(self, value: Any, *, what: str, role: str = "predicate") -> Callable[..., Any]:
        """A Python callable for code a spec records (see :func:`plait.spi.import_ref`).

        ``{"expr": ...}`` compiles an expression once: as a ``predicate`` it is called with
        the message and must give a boolean (``null`` counts as false); as a ``selection``
        it is called with ``(message, targets)`` and gives a target id or a list of them.
        The expression sees the message as ``message`` and, when the message is a mapping,
        its keys at the top level (plus ``targets`` for a selection). ``{"ref": ...}``
        imports the function (when imports are allowed).

        :raises NotPortableError: the spec records in-process code that is not here.
        :raises ConfigError: the reference cannot be imported or is not allowed to be.
        :raises ExpressionError: the expression does not compile.
        """
        if isinstance(value, Mapping) and "expr" in value:
            compiled = compile_expression(
                str(value["expr"]), language=value.get("language"), manager=self.manager
            )
            if role == "selection":
                return _expression_selection(compiled, what)
            return _expression_predicate(compiled, what)
        if isinstance(value, Mapping) and "ref" in value:
            if value.get("nonportable"):
                raise NotPortableError(
                    f"{what}: {value['ref']} cannot be rebuilt from data because "
                    f"{value['nonportable']}; pass the callable in Python, or use an "
                    "expression or a module-level function"
                )
            fn = resolve_ref(str(value["ref"]), allow_imports=self.allow_imports, what=what)
            if not callable(fn):
                raise ConfigError(f"{what}: {value['ref']} is not callable")
            return fn  # type: ignore[no-any-return]
        raise ConfigError(
            f"{what}: expected {{'expr': ...}} or {{'ref': 'module:function'}}, got {value!r}"
        )


def _scope(message: Any) -> dict[str, Any]:
    # the message's own keys win: a context with a key "message" keeps it
    scope: dict[str, Any] = {"message": message}
    if isinstance(message, Mapping):
        scope.update(message)
    return scope


def _expression_predicate(compiled: Any, what: str) -> Callable[[Any], bool]:
    def predicate(message: Any) -> bool:
        value = compiled.evaluate(_scope(message))
        if value is None:
            return False
        if not isinstance(value, bool):
            raise ExpressionError(
                f"{what}: {compiled.text!r} gave {type(value).__name__} {value!r}, not a boolean"
            )
        return value

    return predicate


def _expression_selection(compiled: Any, what: str) -> Callable[[Any, list[str]], list[str]]:
    def selection(message: Any, targets: list[str]) -> list[str]:
        scope = _scope(message)
        scope["targets"] = list(targets)
        value = compiled.evaluate(scope)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
        raise ExpressionError(
            f"{what}: {compiled.text!r} gave {value!r}; a selection gives a target id or a "
            "list of target ids"
        )

    return selection


@runtime_checkable
class ExecutorKind(Protocol):
    """A named way of building executors from a JSON config.

    ``config_schema`` is a JSON Schema (draft 2020-12) for the config, shown by
    ``plait plugins`` and used by :meth:`check`. Optionally (not part of the structural
    check, so kinds written before it still register), ``capabilities``: what a node of the
    kind needs (see the module docstring and :mod:`plait_documents`).
    """

    config_schema: Mapping[str, Any]

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every problem of ``config`` (empty when it is valid), each with a JSON path
        (``/config/argv/0``) in its position."""
        ...

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Any:
        """Build the executor (a :class:`plait.Executor` whose id is ``ctx.node_id``) from a
        config :meth:`check` accepted."""
        ...


@runtime_checkable
class Loader(Protocol):
    """A front-end: text in one format to a :class:`~plait.WorkflowSpec`
    (``plait_register_loaders``).

    ``suffixes`` (``(".flow",)``), ``load(text, ctx)`` and, optionally, ``detect(text) ->
    bool`` for text given without a format or a file name, and ``options``: the loader
    options it accepts (:func:`plait.load` refuses any other, naming the accepted ones).
    """

    suffixes: tuple[str, ...]

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec for ``text``; raise :class:`~plait.LoadError` with every problem."""
        ...


# -- rebuilding executors from a spec (what Workflow.from_spec does per node) ------------


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
    wraps it, each ask). The bounds are the kernel's, not a front-end's: a spec from an
    untrusted source may reach :meth:`~plait.Workflow.from_spec` without a document, and
    every nested build (a ``workflow`` node's, a step's) passes through it.
    """

    def __init__(self) -> None:
        self.depth = 0
        self.nodes = 0
        self.builds = 0  # specs built (what the regression tests count)
        #: the bounds of this load (a test of the bounds lowers them for one load)
        self.max_nesting, self.max_nodes = MAX_NESTING, MAX_LOAD_NODES
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
        if scope.depth >= scope.max_nesting:
            raise _too_much(f"workflows nest more than {scope.max_nesting} deep here", spec, source)
        scope.nodes += len(spec.nodes)
        if scope.nodes > scope.max_nodes:
            raise _too_much(
                f"the document expands to more than {scope.max_nodes:,} nodes, nested "
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
            problems.append(_positioned(exc, where, source))
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
        words = f"pass it as executors={{{name!r}: ...}}"
        raise ConfigError(
            f"node {node.id!r} cannot be rebuilt from data: {node.nonportable} ({words})",
            SourcePosition(path=where),
            fix=("executors", name, words),
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
        hint, fix = "", None
        if node.uses is not None:
            words = f"pass the executor it uses as executors={{{node.uses!r}: ...}}"
            hint, fix = f"; or {words}", ("executors", node.uses, words)
        raise ConfigError(
            f"node {node.id!r} has executor kind {node.kind!r}, which no installed plugin "
            f"registers; installed kinds: {', '.join(kinds.names()) or 'none'}{hint}",
            SourcePosition(path=f"{where}/kind", source=source),
            fix=fix,
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
        raise _NodeProblems([_positioned(p, where, source) for p in problems])
    executor: Executor = kind.create(node.config, ctx)
    return executor


def _positioned(error: PlaitError, where: str, source: str | None) -> PlaitError:
    """``error`` with its JSON path prefixed by the node's (``/nodes/3/config/argv``), and
    the line and column the node's kind gave it kept (a YAML step's position)."""
    position = getattr(error, "position", None)
    if isinstance(error, ConfigError) and position is not None:
        path = position.path or ""
        if not path.startswith(where):
            path = f"{where}{path}"
        return ConfigError(
            error.reason,
            SourcePosition(
                source=position.source or source,
                line=position.line,
                column=position.column,
                path=path,
                text=position.text,
            ),
            fix=error.fix,
        )
    return ConfigError(f"{error}", SourcePosition(source=source, path=where))


# -- expression languages: safe conditions and templates over JSON-like data ---------------

#: The language front-ends use when a document does not name one.
DEFAULT_LANGUAGE = "plait"


@runtime_checkable
class CompiledExpression(Protocol):
    """An expression, parsed and ready to evaluate many times."""

    #: the source text
    text: str
    #: the top-level names it reads (``steps``, ``attempts`` …), for load-time checks
    names: frozenset[str]

    def evaluate(self, data: Mapping[str, Any]) -> Any:
        """The value of the expression over ``data`` (JSON-like). Raises
        :class:`~plait.ExpressionError` (never another exception) when evaluation
        fails or exceeds a bound."""
        ...


@runtime_checkable
class CompiledTemplate(Protocol):
    """A string with ``{{ expr }}`` parts, parsed and ready to render."""

    text: str
    names: frozenset[str]

    def render(self, data: Mapping[str, Any]) -> str:
        """The text with every ``{{ expr }}`` replaced by its value (strings as-is,
        other values as JSON)."""
        ...

    def value(self, data: Mapping[str, Any]) -> Any:
        """For a template that is exactly one ``{{ expr }}``, the expression's raw value
        (a bool for a condition); otherwise :meth:`render`."""
        ...


@runtime_checkable
class ExpressionLanguage(Protocol):
    """A safe expression language."""

    def compile(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledExpression:
        """Parse ``text``. ``line``/``column`` say where it starts in its document, so
        errors point into the document. Raises :class:`~plait.ExpressionError`."""
        ...

    def compile_template(
        self, text: str, *, source: str | None = None, line: int = 1, column: int = 1
    ) -> CompiledTemplate:
        """Parse a template with ``{{ expr }}`` parts."""
        ...


def _language(language: str | None, manager: Any) -> ExpressionLanguage:
    if manager is None:
        from ._plugins import get_plugin_manager

        manager = get_plugin_manager()
    lang: ExpressionLanguage = manager.registry("expression_language").get(
        language or DEFAULT_LANGUAGE, what="an expression"
    )
    return lang


def compile_expression(
    text: str,
    *,
    language: str | None = None,
    source: str | None = None,
    line: int = 1,
    column: int = 1,
    manager: Any = None,
) -> CompiledExpression:
    """Compile ``text`` in ``language`` (default :data:`DEFAULT_LANGUAGE`)."""
    return _language(language, manager).compile(text, source=source, line=line, column=column)


def compile_template(
    text: str,
    *,
    language: str | None = None,
    source: str | None = None,
    line: int = 1,
    column: int = 1,
    manager: Any = None,
) -> CompiledTemplate:
    """Compile a ``{{ }}`` template in ``language`` (default :data:`DEFAULT_LANGUAGE`)."""
    return _language(language, manager).compile_template(
        text, source=source, line=line, column=column
    )
