"""The compiled graph: routing tables derived once from a workflow, shared by its runs.

The runner and the checkpointer depend on this module, never on :mod:`plait.workflow`.

.. versionadded:: 0.1
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ConfigError, ExpressionError
from .executor import Executor, Handler
from .policies import RetryPolicy
from .refs import NotPortableError, resolve_ref
from .spec import WorkflowSpec

if TYPE_CHECKING:
    # annotations only: plait.attempts imports asyncio, which building a graph never needs
    from .attempts import Policy
    from .plugins import PluginManager
    from .routing import EdgeRunner

__all__ = ["ERROR_ROUTER", "CompiledGraph", "Invocable", "PluginEnv"]

#: The router name of error edges: ``A -error-> fallback``. The runner delivers an
#: :class:`~plait.context.InvocationFailure` along them when A fails after its retries.
ERROR_ROUTER = "error"


class PluginEnv:
    """The :class:`~plait.routing.RouterEnv` routers see while a workflow compiles.

    :param allow_imports: whether code named by the spec (``{"ref": ...}``) may be
        imported; false for documents from untrusted sources.
    """

    def __init__(self, manager: PluginManager, *, allow_imports: bool = True) -> None:
        self.manager = manager
        self.allow_imports = allow_imports

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
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
            from .expressions import compile_expression

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


class Invocable(Protocol):
    """What a run calls for an executor id: the executor, or what stands for it when its
    invocations run elsewhere (:class:`plait.placement.PlacedExecutor`)."""

    @property
    def input_types(self) -> tuple[Any, ...]: ...

    def find_handler(self, message: Any) -> Handler | None: ...


class CompiledGraph:
    """Routing tables derived once from a workflow, shared by its runs."""

    def __init__(
        self,
        spec: WorkflowSpec,
        executors: Mapping[str, Executor],
        edge_runners: Mapping[str, EdgeRunner],
        plugin_manager: PluginManager,
    ) -> None:
        self.spec = spec
        self.executors = dict(executors)
        #: executor id -> its placement, for executors whose invocations run elsewhere than
        #: on the driver (resolved when the workflow compiles: :func:`plait.placement.place`)
        self.placements: dict[str, Any] = {}
        #: what runs call per executor id: the executors, a placed one standing behind
        #: its placement (the same mapping as :attr:`executors` when nothing is placed)
        self.run_executors: Mapping[str, Invocable] = self.executors
        self.edge_runners = dict(edge_runners)
        routes: dict[str, list[tuple[str, EdgeRunner]]] = {}
        errors: dict[str, list[str]] = {}
        for group in spec.edge_groups:
            if group.router == ERROR_ROUTER:
                # not a route for messages: where a source's failures go instead of failing
                for source in group.sources:
                    errors.setdefault(source, []).extend(group.targets)
                continue
            for source in group.sources:
                routes.setdefault(source, []).append((group.id, self.edge_runners[group.id]))
        #: executor id -> the executors its failures are delivered to (error edges)
        self.error_targets = {k: tuple(v) for k, v in errors.items()}
        self.routes_from = {k: tuple(v) for k, v in routes.items()}
        self.flushers = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.needs_flush
        )
        self.stateful = tuple(
            (gid, runner) for gid, runner in self.edge_runners.items() if runner.stateful
        )
        # per-executor limits the executors themselves declare (run options may override)
        nodes = {node.id: node for node in spec.nodes}
        concurrency = {
            eid: nodes[eid].max_concurrency or ex.max_concurrency
            for eid, ex in self.executors.items()
        }
        self.default_concurrency = {eid: n for eid, n in concurrency.items() if n and n > 1}
        visits = {eid: nodes[eid].max_visits or ex.max_visits for eid, ex in self.executors.items()}
        self.default_visit_limits = {eid: n for eid, n in visits.items() if n}
        self.plugin_manager = plugin_manager
        self.policies = policies_of(spec, self.executors)
        for source in self.error_targets:
            # an invocation whose failure an error edge takes is transactional too: what
            # it sent or yielded before failing is dropped
            self.policies.setdefault(source, (None, None))

    @functools.cached_property
    def topology(self) -> dict[str, Any]:
        """The spec's topology (what a run's first checkpoint records), computed once."""
        return self.spec.topology()

    @functools.cached_property
    def signature(self) -> str:
        """The spec's topology signature, computed once."""
        return self.spec.signature()

    @functools.cached_property
    def fingerprint(self) -> dict[str, Any]:
        """The workflow's fingerprint (:func:`plait.fingerprint.workflow_fingerprint`),
        computed once: what checkpoints record and a resume compares."""
        from .fingerprint import workflow_fingerprint

        return workflow_fingerprint(self)

    @functools.cached_property
    def reach(self) -> dict[str, frozenset[str]]:
        """Executor id -> every executor reachable from it (itself included)."""
        return {nid: frozenset(self.spec.reachable_from(nid)) for nid in self.spec.node_ids}


def policies_of(spec: WorkflowSpec, executors: Mapping[str, Executor]) -> dict[str, Policy]:
    """Executor id -> (retry policy, timeout), for executors that have either, from the
    nodes' own fields or the workflow's defaults (``WorkflowSpec.retry``/``.timeout``)."""
    default_retry = spec.retry
    default_timeout = spec.timeout
    out: dict[str, Policy] = {}
    for node in spec.nodes:
        ex = executors.get(node.id)
        retry: Any = node.retry if node.retry is not None else getattr(ex, "retry", None)
        timeout = node.timeout if node.timeout is not None else getattr(ex, "timeout", None)
        retry = retry if retry is not None else default_retry
        timeout = timeout if timeout is not None else default_timeout
        if retry is None and timeout is None:
            continue
        policy = retry if isinstance(retry, RetryPolicy) or retry is None else None
        if retry is not None and policy is None:
            policy = RetryPolicy.from_dict(retry)
        out[node.id] = (policy, float(timeout) if timeout is not None else None)
    return out
