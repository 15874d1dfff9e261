"""The ``python`` executor kind: an executor or async function named by import path.

Config: ``{"ref": "package.module:qualname"}``. The object found there may be

- an :class:`~plait.Executor` instance, ``@executor``-built functions included: used as is
  when its id is the node's, else copied under the node's id (keeping its limits and
  policies);
- an :class:`~plait.Executor` subclass: instantiated with the node's id;
- an ``async def`` function: wrapped in a :class:`~plait.FunctionExecutor`.

Importing runs code, so a document from an untrusted source (``BuildContext.allow_imports``
false) may not use this kind: :meth:`PythonKind.check` refuses it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from plait import ConfigError, Executor
from plait.spi import BuildContext, as_executor, import_ref
from plait_documents import IMPORTS, check_config, config_error, spell

__all__ = ["PythonKind", "executor_from_object", "resolve_ref"]

_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*"
#: ``package.module:qualname``
REF_PATTERN = f"^{_DOTTED}:{_DOTTED}$"


#: Import ``package.module:qualname`` and return the object (any import error propagates:
#: an import runs module code). The kernel's :func:`plait.spi.import_ref`.
resolve_ref = import_ref


def _what_it_is(obj: Any) -> str | None:
    """Why ``obj`` cannot become an executor, or None when it can."""
    if isinstance(obj, Executor):
        return None
    if isinstance(obj, type) and issubclass(obj, Executor):
        return None
    if inspect.iscoroutinefunction(obj):
        return None
    return f"is a {type(obj).__name__}, not an Executor, an Executor subclass or an async function"


def executor_from_object(obj: Any, node_id: str) -> Executor:
    """An executor with id ``node_id`` made from ``obj`` (see the module docstring;
    :func:`plait.spi.as_executor` does the making).

    :raises TypeError: ``obj`` is none of the accepted things.
    """
    problem = _what_it_is(obj)
    if problem is not None:
        raise TypeError(f"{obj!r} {problem}")
    return as_executor(obj, node_id)


class PythonKind:
    """``python``: ``{"ref": "package.module:qualname"}``, imported when the workflow is built."""

    #: an executor the caller passes under a node's id or ``uses`` name is bound to the
    #: node as it is: it is the code the config names (``Workflow.from_spec`` asks this)
    binds_passed_executors = True

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "python executor",
        "type": "object",
        "properties": {
            "ref": {
                "type": "string",
                "pattern": REF_PATTERN,
                "description": "import path of an Executor, Executor subclass or async "
                "function: package.module:qualname",
            },
        },
        "required": ["ref"],
        "additionalProperties": False,
    }
    #: it imports the code its config names
    capabilities = (IMPORTS,)

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Schema problems; else a refusal when imports are not allowed; else import
        problems (the import runs here, so a bad ref is found when the workflow is built)."""
        errors = check_config(self.config_schema, config, ctx.node_id, source=ctx.source)
        if errors:
            return errors
        ref = config["ref"]
        if not ctx.allow_imports:
            return [
                config_error(
                    ctx.node_id,
                    f"the python kind would import {ref!r}, but imports are not allowed for "
                    "this document (it comes from an untrusted source); "
                    + spell(
                        "pass allow_imports=True when loading it if you trust it, or pass "
                        "the executor itself with executors=",
                        "pass --allow-imports if you trust it, or name the module of "
                        "agents with --agents MODULE_OR_FILE.py",
                    ),
                    "/config/ref",
                    source=ctx.source,
                )
            ]
        try:
            obj = resolve_ref(ref)
        except Exception as exc:  # an import runs arbitrary module code: report anything
            return [self._import_error(ref, exc, ctx)]
        problem = _what_it_is(obj)
        if problem is not None:
            return [config_error(ctx.node_id, f"{ref} {problem}", "/config/ref", source=ctx.source)]
        return []

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """The executor named by ``config["ref"]``, with id ``ctx.node_id``.

        :raises ConfigError: imports are not allowed, or the ref does not resolve to an
            executor.
        """
        errors = self.check(config, ctx)
        if errors:
            raise errors[0]
        ref = config["ref"]
        try:
            return executor_from_object(resolve_ref(ref), ctx.node_id)
        except Exception as exc:
            raise config_error(
                ctx.node_id, f"cannot build an executor from {ref}: {exc}", "/config/ref"
            ) from exc

    def _import_error(self, ref: str, exc: Exception, ctx: BuildContext) -> ConfigError:
        error = config_error(
            ctx.node_id,
            f"cannot import {ref!r}: {type(exc).__name__}: {exc}{_did_you_mean(ref, exc)}",
            "/config/ref",
            source=ctx.source,
        )
        error.__cause__ = exc
        return error


def _did_you_mean(ref: str, exc: Exception) -> str:
    """For a ref whose module imports but lacks the attribute: the closest public name of
    what it names (the module, or the object the attribute path reached)."""
    if not isinstance(exc, AttributeError) or ":" not in ref:
        return ""
    import difflib
    import sys

    module_name, _, qualname = ref.partition(":")
    obj: Any = sys.modules.get(module_name)
    parts = qualname.split(".")
    for part in parts[:-1]:
        obj = getattr(obj, part, None)
    if obj is None:
        return ""
    names = [n for n in dir(obj) if not n.startswith("_")]
    close = difflib.get_close_matches(parts[-1], names, n=1)
    if not close:
        return ""
    fixed = ".".join([*parts[:-1], close[0]])
    return f"; did you mean {module_name}:{fixed}?"
