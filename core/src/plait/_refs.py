"""References to code in a workflow spec: importable names, expressions, and bindings.

A spec is data, so every piece of code it needs is one of:

- an import path ``package.module:qualname`` (a function, an executor, a class), recorded
  for whatever the builder API got as a plain Python callable. A lambda, a closure or a
  function defined in a function still runs in-process, but is recorded as
  ``{"ref": ..., "nonportable": "<why>"}``: serialising the spec or rebuilding it in
  another process names the node or edge and says why;
- an expression in a registered expression language: ``{"expr": "...", "language": ...}``.

Importing runs code, so :func:`resolve_ref` only imports when the caller allows it; a
document from an untrusted source never imports what it names.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from ._errors import ConfigError, NotPortableError, SourcePosition, spell
from ._executor import Executor, FunctionExecutor
from ._types import main_module_name

__all__ = [
    "NotPortableError",
    "as_executor",
    "callable_spec",
    "code_ref",
    "expression_spec",
    "import_ref",
    "nonportable_reason",
    "resolve_ref",
]

# a pattern, compiled (and cached by re) on first use: a cold start never pays
_REF = r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"


def code_ref(obj: Any) -> str:
    """``module:qualname`` of a function or class; a script's ``__main__`` is named by the
    module it would be when imported, so the name is the same however it was started."""
    module = getattr(obj, "__module__", None) or "?"
    if module == "__main__":
        module = main_module_name()
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{qualname}"


def nonportable_reason(obj: Any) -> str | None:
    """Why ``obj`` cannot be found again by its import path, or ``None`` when it can."""
    qualname = getattr(obj, "__qualname__", None)
    if qualname is None:
        return f"it is a {type(obj).__name__} instance, not a module-level function or class"
    if getattr(obj, "__name__", "") == "<lambda>":
        return "it is a lambda"
    if "<locals>" in qualname:
        return "it is defined inside a function (a closure or local)"
    if code_ref(obj).startswith("__main__:"):
        return "it is defined in __main__ without a file to import it from"
    return None


def callable_spec(fn: Any) -> dict[str, Any]:
    """How a spec records a Python callable given to the builder."""
    data: dict[str, Any] = {"ref": code_ref(fn)}
    reason = nonportable_reason(fn)
    if reason is not None:
        data["nonportable"] = reason
    return data


def expression_spec(text: str, language: str | None = None) -> dict[str, Any]:
    """How a spec records an expression (``language`` ``None``: the default one)."""
    data: dict[str, Any] = {"expr": text}
    if language is not None:
        data["language"] = language
    return data


def import_ref(ref: str) -> Any:
    """Import ``package.module:qualname`` and return the object, with no checks: callers
    decide whether importing is allowed (:func:`resolve_ref` does).

    :raises ImportError: the module does not import.
    :raises AttributeError: it has no such attribute.
    """
    module_name, _, qualname = ref.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_ref(ref: str, *, allow_imports: bool, what: str) -> Any:
    """Import ``package.module:qualname`` and return the object.

    :param what: what needs it (``"edge group 'x' condition"``), named in errors.
    :raises ConfigError: imports are not allowed, the ref is malformed, or it does not
        import (the cause chained).
    """
    if not isinstance(ref, str) or not re.match(_REF, ref):
        raise ConfigError(f"{what}: {ref!r} is not an import path 'package.module:qualname'")
    if not allow_imports:
        raise ConfigError(
            f"{what}: {ref!r} names code to import, and this document's source is not "
            "trusted to import code ("
            + spell(
                "pass allow_imports=True, or executors=/callables in Python instead",
                "pass --allow-imports if you trust it, or name one module of agents with "
                "--agents MODULE_OR_FILE.py",
            )
            + ")"
        )
    try:
        return import_ref(ref)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: cannot import {ref!r}: {type(exc).__name__}: {exc}") from exc


def as_executor(obj: Any, node_id: str, *, what: str | None = None) -> Executor:
    """An executor with id ``node_id`` made from ``obj``: an executor (copied under the
    new id when its id differs, so one object can serve several nodes), an executor class
    (instantiated with the id) or an ``async def`` function.

    :raises ConfigError: ``obj`` is none of these.
    """
    if isinstance(obj, Executor):
        return obj if obj.id == node_id else obj.with_id(node_id)
    if isinstance(obj, type) and issubclass(obj, Executor):
        return obj(node_id)
    if inspect.iscoroutinefunction(obj):
        return FunctionExecutor(obj, id=node_id)
    raise ConfigError(
        f"{what or f'executor {node_id!r}'}: {obj!r} is not an Executor, an Executor "
        "subclass or an async function",
        SourcePosition(path=f"/nodes/{node_id}"),
    )


def describe_code(value: Any) -> str:
    """A short human form of a recorded callable or expression (for graphs and errors)."""
    if isinstance(value, Mapping):
        if "expr" in value:
            return str(value["expr"])
        if "ref" in value:
            return str(value["ref"])
    return str(value)


Predicate = Callable[[Any], Any]
