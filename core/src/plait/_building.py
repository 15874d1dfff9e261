"""Building part of a workflow: :class:`BuildContext`, what a plugin may use while it
builds, :class:`ExecutorKind`, the named factories that build executors from data, and
:class:`Loader`, the front-ends that turn a document's text into a spec.

One type for every builder: a loader turning text into a spec, an executor kind building
a node's executor, a router creating an edge group's runner (it is the
:class:`~plait.spi.RouterEnv` routers see). It looks up other registries and turns the
code a spec records (an expression, a reference to a function) into callables.

Building happens once per workflow, before any run: the runner never imports this.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from ._errors import ConfigError, ExpressionError, NotPortableError
from ._refs import resolve_ref

if TYPE_CHECKING:
    from ._spec import WorkflowSpec

__all__ = [
    "AgentLookup",
    "BuildContext",
    "DOCUMENTS",
    "ExecutorKind",
    "Loader",
]

#: The name the documents plugin (``plait-documents``) registers its machinery under
#: (``plait_register_documents``): what :func:`plait.load` calls.
DOCUMENTS = "documents"


class AgentLookup(Protocol):
    """The agent names of one load, as a loader resolves them (``plait-documents``'
    ``AgentNames`` is the one implementation): executors passed from Python, the document's
    ``agents:`` section, the agents installed distributions publish, then ``agents=``.

    .. versionadded:: 0.1
    """

    def set_document(self, agents: Mapping[str, Any], declared: Iterable[Any] = ()) -> None:
        """The document's own ``agents:`` section (definitions, and every name declared)."""
        ...

    def is_declared(self, name: str) -> bool:
        """Whether the document's ``agents:`` section names ``name``."""
        ...

    def find(self, name: str) -> Any:
        """Where ``name`` resolves first (a record with ``tier``, ``obj``, ``definition``
        and ``origin``), or ``None``."""
        ...

    def names(self) -> list[str]:
        """Every name that resolves, sorted."""
        ...

    def unknown(self, name: str, *, extra: list[str] | None = None) -> str:
        """The message for a name nothing resolves."""
        ...


@attrs.frozen(kw_only=True)
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
        (:class:`AgentLookup`; ``plait_documents.AgentNames``): give it the document's
        ``agents:`` section (:meth:`~AgentLookup.set_document`), then resolve every name
        with :meth:`~AgentLookup.find`. Not given, the documents plugin makes one from
        ``executors`` when a loader first asks for it.

    .. versionadded:: 0.1
    """

    manager: Any = None
    source: str = "<string>"
    node_id: str = ""
    allow_imports: bool = True
    executors: Mapping[str, Any] = attrs.field(factory=dict)
    names: frozenset[str] = frozenset()
    options: Mapping[str, Any] = attrs.field(factory=dict)
    _agents: AgentLookup | None = attrs.field(default=None, alias="agents")

    @property
    def agents(self) -> AgentLookup:
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
            documents = manager.registry("documents").get(DOCUMENTS, what="agent names")
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
        """A Python callable for code a spec records (see :mod:`plait.refs`).

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
            from ._expressions import compile_expression

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
    kind needs (see the module docstring and :mod:`plait.capabilities`).
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

    .. versionadded:: 0.1
    """

    suffixes: tuple[str, ...]

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec for ``text``; raise :class:`~plait.LoadError` with every problem."""
        ...
