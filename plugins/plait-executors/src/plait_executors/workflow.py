"""The ``workflow`` executor kind: a nested workflow running as one executor.

Config: ``{"fragment": "textkit.summarize"}`` names a fragment a distribution publishes
(``plait_register_fragments``); ``{"spec": {...}}`` holds a whole workflow as data (what
``WorkflowSpec.to_dict()`` gives), rebuilt with :meth:`plait.Workflow.from_spec`. Either
way the workflow is wrapped in a :class:`~plait_executors.WorkflowExecutor`: each message
starts one inner run, and the inner outputs are sent on (or yielded as outer outputs with
``"allow_direct_output": true``). :meth:`plait.Workflow.as_executor` wraps through this
kind too (:meth:`WorkflowKind.wrap`).

A nested workflow is built once per load (:func:`plait.spi.load_scope`), however many
times ``check`` and ``create`` — this kind's and a front-end kind's wrapping it — ask for
it; a load's nesting and the nodes it builds are bounded there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import plait
from plait import ConfigError, Executor, PlaitError, UnknownNameError, Workflow, WorkflowSpec
from plait.spi import BuildContext, load_scope
from plait_documents import Capability, check_config, config_error, did_you_mean, needs

from .nested import WorkflowExecutor

__all__ = ["WorkflowKind"]


class WorkflowKind:
    """``workflow``: ``{"fragment": name}`` or ``{"spec": {...}}``, plus
    ``"allow_direct_output"?: bool``.
    """

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "workflow executor",
        "type": "object",
        "properties": {
            "fragment": {
                "type": "string",
                "minLength": 1,
                "description": "a published fragment's name (plait fragments lists them)",
            },
            "spec": {
                "type": "object",
                "description": "a workflow spec, as WorkflowSpec.to_dict() gives it",
            },
            "allow_direct_output": {"type": "boolean", "default": False},
        },
        "additionalProperties": False,
    }

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Capability]:
        """What the nested workflow's nodes need, for an inline ``spec`` (a published
        fragment is code its distribution installed: it needs nothing of the document's).
        A spec that does not read as one needs nothing here; :meth:`check` refuses it."""
        data = config.get("spec")
        if not isinstance(data, Mapping):
            return set()
        try:
            spec = WorkflowSpec.from_dict(data)
        except Exception:  # cattrs reports a bad shape as a group of errors; check says it
            return set()
        found = needs(spec, executors=ctx.executors, manager=ctx.manager, source=ctx.source)
        return {need.capability for need in found}

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Schema problems, exactly one of ``fragment`` and ``spec``, and that the fragment
        exists or the spec builds (so a nested problem is found when the outer workflow
        is built, each at its path under ``/config/spec``)."""
        errors = check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
        if errors:
            return errors
        if ("fragment" in config) == ("spec" in config):
            return [
                config_error(
                    ctx.node_id,
                    "give exactly one of 'fragment' (a published fragment's name) or 'spec' "
                    "(a workflow spec)",
                    source=ctx.source,
                )
            ]
        try:
            self._workflow(config, ctx)
        except _Problems as exc:
            return exc.errors
        return []

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """The nested workflow as an executor with id ``ctx.node_id``.

        :raises ConfigError: the fragment does not exist or the spec does not build (the
            first problem; :meth:`check` gives them all).
        """
        try:
            workflow = self._workflow(config, ctx)
        except _Problems as exc:
            raise exc.errors[0] from exc.__cause__
        return self.wrap(
            workflow,
            id=ctx.node_id,
            allow_direct_output=bool(config.get("allow_direct_output", False)),
        )

    def wrap(
        self,
        workflow: Workflow,
        *,
        id: str | None = None,
        adapter: Callable[[Any], Any] | Any | None = None,
        allow_direct_output: bool = False,
    ) -> WorkflowExecutor:
        """``workflow`` as one executor (what :meth:`plait.Workflow.as_executor` returns;
        arguments as for :class:`~plait_executors.WorkflowExecutor`).
        """
        return WorkflowExecutor(
            workflow, id=id, adapter=adapter, allow_direct_output=allow_direct_output
        )

    def _workflow(self, config: Mapping[str, Any], ctx: BuildContext) -> Workflow:
        """The nested workflow, built once per load: the same config in the same load
        (this kind's ``check``, then its ``create``) gives the same workflow."""
        if "fragment" in config:
            name = config["fragment"]
            key: tuple[Any, ...] = ("fragment", name, id(ctx.manager))
            alive: tuple[Any, ...] = (ctx.manager,)
            make: Callable[[], Workflow] = lambda: _from_fragment(name, ctx)  # noqa: E731
        else:
            data = config["spec"]
            # every empty mapping of executors is the same (callers pass fresh ones)
            passed = id(ctx.executors) if ctx.executors else None
            key = ("spec", id(data), passed, ctx.allow_imports, id(ctx.manager), ctx.source)
            alive = (data, ctx.executors, ctx.manager)
            make = lambda: _from_spec(data, ctx)  # noqa: E731
        with load_scope() as scope:
            return scope.once(key, make, alive=alive)


class _Problems(Exception):
    """Every problem of a nested workflow, as positioned config errors."""

    def __init__(self, errors: list[ConfigError]) -> None:
        super().__init__(errors)
        self.errors = errors


def _from_fragment(name: str, ctx: BuildContext) -> Workflow:
    manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
    registry = manager.registry("fragment")
    try:
        fragment = registry.get(name, what=f"executor {ctx.node_id!r}")
    except UnknownNameError:
        names = registry.names()
        hint = did_you_mean(name, names)
        known = ", ".join(names) or "none (install a plugin that publishes fragments)"
        error = config_error(
            ctx.node_id,
            f"no published fragment {name!r}{hint} (installed: {known})",
            "/config/fragment",
            source=ctx.source,
        )
        raise _Problems([error]) from None
    try:
        # plait-builders' Fragment runs standalone: its exits' results are the outputs
        standalone = getattr(fragment, "standalone", None)
        made = standalone() if callable(standalone) else fragment.build()
        # a fragment builds a builder, or a workflow
        workflow = made if isinstance(made, Workflow) else made.build()
    except PlaitError as exc:
        error = config_error(
            ctx.node_id,
            f"fragment {name!r} does not build: {exc}",
            "/config/fragment",
            source=ctx.source,
        )
        raise _Problems([error]) from exc
    if not isinstance(workflow, Workflow):
        error = config_error(
            ctx.node_id,
            f"fragment {name!r} built a {type(workflow).__name__}, not a workflow",
            "/config/fragment",
            source=ctx.source,
        )
        raise _Problems([error])
    return workflow


def _from_spec(data: Mapping[str, Any], ctx: BuildContext) -> Workflow:
    from_spec = getattr(Workflow, "from_spec", None)
    if from_spec is None:
        raise _Problems(
            [
                config_error(
                    ctx.node_id,
                    "an inline 'spec' needs plait-core with Workflow.from_spec; upgrade "
                    "plait-core or name a published fragment instead",
                    "/config/spec",
                    source=ctx.source,
                )
            ]
        )
    try:
        spec = WorkflowSpec.from_dict(data)
    except Exception as exc:  # cattrs reports a bad shape as a group of errors
        from cattrs import transform_error

        reasons = "; ".join(transform_error(exc, path="spec")) or str(exc)
        error = config_error(
            ctx.node_id, f"not a workflow spec: {reasons}", "/config/spec", source=ctx.source
        )
        raise _Problems([error]) from exc
    # the nested workflow is built under the outer document's trust and plugins
    offered = {
        "executors": ctx.executors,
        "allow_imports": ctx.allow_imports,
        "plugin_manager": ctx.manager,
        "source": ctx.source,
    }
    accepted = inspect.signature(from_spec).parameters
    options = {k: v for k, v in offered.items() if k in accepted and v is not None}
    try:
        workflow = from_spec(spec, **options)
    except PlaitError as exc:
        raise _Problems(_nested_errors(exc, ctx)) from exc
    if not isinstance(workflow, Workflow):  # pragma: no cover - a kernel contract
        raise TypeError(f"Workflow.from_spec returned {type(workflow).__name__}")
    return workflow


_NESTED = "in the nested spec: "


def _nested_errors(exc: PlaitError, ctx: BuildContext) -> list[ConfigError]:
    """One error per problem of a nested spec, at its path under ``/config/spec``."""
    problems = getattr(exc, "problems", None) or [exc]
    errors = []
    for problem in problems:
        inner = getattr(problem, "path", None)
        path = f"/config/spec{inner}" if isinstance(inner, str) and inner.startswith("/") else None
        reason = getattr(problem, "reason", None) or str(problem)
        # a deeper level's problem is said once, by its own executor: the path names every
        # level (a message does not grow with the nesting)
        reason = reason.rsplit(_NESTED, 1)[-1]
        errors.append(
            config_error(
                ctx.node_id,
                f"{_NESTED}{reason}",
                path or "/config/spec",
                source=ctx.source,
            )
        )
    return errors
