"""The ``workflow`` executor kind: a nested workflow running as one executor.

Config: ``{"fragment": "textkit.summarize"}`` names a fragment a distribution publishes
(``plait_register_fragments``); ``{"spec": {...}}`` holds a whole workflow as data (what
``WorkflowSpec.to_dict()`` gives), rebuilt with :meth:`plait.Workflow.from_spec`. Either
way the workflow is wrapped with :meth:`plait.Workflow.as_executor`: each message starts
one inner run, and the inner outputs are sent on (or yielded as outer outputs with
``"allow_direct_output": true``).

.. versionadded:: 0.1
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import plait
from plait import Executor, Workflow
from plait.errors import ConfigError, PlaitError, UnknownNameError
from plait.kinds import KindContext

from .schema import check_config, config_error

__all__ = ["WorkflowKind"]


class WorkflowKind:
    """``workflow``: ``{"fragment": name}`` or ``{"spec": {...}}``, plus
    ``"allow_direct_output"?: bool``.

    .. versionadded:: 0.1
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

    def check(self, config: Mapping[str, Any], ctx: KindContext) -> list[ConfigError]:
        """Schema problems, exactly one of ``fragment`` and ``spec``, and that the fragment
        exists or the spec builds (so a nested problem is found when the outer workflow
        is built)."""
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
        except ConfigError as exc:
            return [exc]
        return []

    def create(self, config: Mapping[str, Any], ctx: KindContext) -> Executor:
        """The nested workflow as an executor with id ``ctx.node_id``.

        :raises ConfigError: the fragment does not exist or the spec does not build.
        """
        workflow = self._workflow(config, ctx)
        return workflow.as_executor(
            id=ctx.node_id, allow_direct_output=bool(config.get("allow_direct_output", False))
        )

    def _workflow(self, config: Mapping[str, Any], ctx: KindContext) -> Workflow:
        if "fragment" in config:
            return _from_fragment(config["fragment"], ctx)
        return _from_spec(config["spec"], ctx)


def _from_fragment(name: str, ctx: KindContext) -> Workflow:
    manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
    registry = manager.registry("fragment")
    try:
        fragment = registry.get(name, what=f"executor {ctx.node_id!r}")
    except UnknownNameError:
        import difflib

        names = registry.names()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(names) or "none (install a plugin that publishes fragments)"
        raise config_error(
            ctx.node_id,
            f"no published fragment {name!r}{hint} (installed: {known})",
            "/config/fragment",
            source=ctx.source,
        ) from None
    try:
        made = fragment.build()
        # a fragment builds a builder (plait-builders' Fragment) or a workflow
        workflow = made if isinstance(made, Workflow) else made.build()
    except PlaitError as exc:
        raise config_error(
            ctx.node_id,
            f"fragment {name!r} does not build: {exc}",
            "/config/fragment",
            source=ctx.source,
        ) from exc
    if not isinstance(workflow, Workflow):
        raise config_error(
            ctx.node_id,
            f"fragment {name!r} built a {type(workflow).__name__}, not a workflow",
            "/config/fragment",
            source=ctx.source,
        )
    return workflow


def _from_spec(spec: Mapping[str, Any], ctx: KindContext) -> Workflow:
    from_spec = getattr(Workflow, "from_spec", None)
    if from_spec is None:
        raise config_error(
            ctx.node_id,
            "an inline 'spec' needs plait-core with Workflow.from_spec; upgrade plait-core "
            "or name a published fragment instead",
            "/config/spec",
            source=ctx.source,
        )
    # pass on what the outer build was allowed, as far as this kernel's from_spec takes it
    offered = {
        "executors": ctx.executors,
        "allow_imports": ctx.allow_imports,
        "manager": ctx.manager,
        "plugin_manager": ctx.manager,
    }
    accepted = inspect.signature(from_spec).parameters
    options = {k: v for k, v in offered.items() if k in accepted and v is not None}
    try:
        workflow = from_spec(spec, **options)
    except PlaitError as exc:
        raise _nested_error(exc, ctx) from exc
    if not isinstance(workflow, Workflow):  # pragma: no cover - a kernel contract
        raise TypeError(f"Workflow.from_spec returned {type(workflow).__name__}")
    return workflow


def _nested_error(exc: PlaitError, ctx: KindContext) -> ConfigError:
    """One error for a nested spec's problems, each positioned under ``/config/spec``."""
    problems = getattr(exc, "problems", None) or [exc]
    lines = []
    first_path = None
    for problem in problems:
        inner = getattr(problem, "path", None)
        where = f"/config/spec{inner}" if isinstance(inner, str) and inner.startswith("/") else None
        first_path = first_path or where
        reason = getattr(problem, "reason", None) or str(problem)
        lines.append(f"{where}: {reason}" if where else str(reason))
    body = "; ".join(lines)
    return config_error(
        ctx.node_id,
        f"the nested spec does not build: {body}",
        first_path or "/config/spec",
        source=ctx.source,
    )
