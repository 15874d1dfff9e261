"""Plait's first-party executor kinds, registered through ``plait_register_executor_kinds``.

- ``python`` (:class:`PythonKind`): an executor or async function by import path;
- ``shell`` (:class:`ShellKind`): a program from an argument list, never a shell string,
  with bounded output and a timeout;
- ``http`` (:class:`HttpKind`): JSON in and out with httpx, a timeout on every request;
- ``workflow`` (:class:`WorkflowKind`): a nested workflow, by fragment name or by spec —
  a :class:`WorkflowExecutor`, which is also what :meth:`plait.Workflow.as_executor`
  returns (the kernel asks this kind's :meth:`WorkflowKind.wrap` for it).

Each kind declares a JSON Schema for its config and reports every problem of a config at
once, each at its JSON path (:func:`plait.spi.check_config`). Importing this package
imports neither jsonschema nor httpx: they load when a config is first checked or a
request first made.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from .errors import (
        ExecutorKindError,
        HttpError,
        HttpRequestError,
        HttpResponseError,
        HttpStatusError,
        HttpTimeoutError,
        ShellCommandError,
        ShellError,
        ShellOutputError,
        ShellOutputLimitError,
        ShellTimeoutError,
    )
    from .http import HttpExecutor, HttpKind
    from .nested import WorkflowExecutor
    from .python import PythonKind, executor_from_object, resolve_ref
    from .schema import check_config
    from .shell import ShellExecutor, ShellKind
    from .workflow import WorkflowKind

# where each public name lives: importing this package (which every plait command does, to
# load plugins) imports none of them until one is used
_HOMES = {
    **dict.fromkeys(
        [
            "ExecutorKindError",
            "HttpError",
            "HttpRequestError",
            "HttpResponseError",
            "HttpStatusError",
            "HttpTimeoutError",
            "ShellCommandError",
            "ShellError",
            "ShellOutputError",
            "ShellOutputLimitError",
            "ShellTimeoutError",
        ],
        "errors",
    ),
    "HttpExecutor": "http",
    "HttpKind": "http",
    "PythonKind": "python",
    "executor_from_object": "python",
    "resolve_ref": "python",
    "check_config": "schema",
    "ShellExecutor": "shell",
    "ShellKind": "shell",
    "WorkflowExecutor": "nested",
    "WorkflowKind": "workflow",
}

__all__ = [
    "ExecutorKindError",
    "HttpError",
    "HttpExecutor",
    "HttpKind",
    "HttpRequestError",
    "HttpResponseError",
    "HttpStatusError",
    "HttpTimeoutError",
    "PythonKind",
    "ShellCommandError",
    "ShellError",
    "ShellExecutor",
    "ShellKind",
    "ShellOutputError",
    "ShellOutputLimitError",
    "ShellTimeoutError",
    "WorkflowExecutor",
    "WorkflowKind",
    "check_config",
    "executor_from_object",
    "plait_register_executor_kinds",
    "resolve_ref",
]


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register ``python``, ``shell``, ``http`` and ``workflow``."""
    provides = ("check", "create", "config_schema")
    # answered without importing the kind: a node bound to the caller's object stays cheap
    python = lazy(
        "plait_executors.python:PythonKind", provides=provides, binds_passed_executors=True
    )
    register("python", python)
    register("shell", lazy("plait_executors.shell:ShellKind", provides=provides))
    register("http", lazy("plait_executors.http:HttpKind", provides=provides))
    register("workflow", lazy("plait_executors.workflow:WorkflowKind", provides=provides))


__getattr__ = lazy_exports(__name__, _HOMES)
