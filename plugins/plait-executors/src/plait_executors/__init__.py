"""Plait's first-party executor kinds, registered through ``plait_register_executor_kinds``.

- ``python`` (:class:`PythonKind`): an executor or async function by import path;
- ``shell`` (:class:`ShellKind`): a program from an argument list, never a shell string,
  with bounded output and a timeout;
- ``http`` (:class:`HttpKind`): JSON in and out with httpx, a timeout on every request;
- ``workflow`` (:class:`WorkflowKind`): a nested workflow, by fragment name or by spec —
  a :class:`WorkflowExecutor`, which is also what :meth:`plait.Workflow.as_executor`
  returns (the kernel asks this kind's :meth:`WorkflowKind.wrap` for it).

Each kind declares a JSON Schema for its config and reports every problem of a config at
once, each at its JSON path (:func:`plait_documents.check_config`). Importing this package
imports neither jsonschema nor httpx: they load when a config is first checked or a
request first made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from .errors import (
        ExecutorKindError as ExecutorKindError,
        HttpError as HttpError,
        HttpRequestError as HttpRequestError,
        HttpResponseError as HttpResponseError,
        HttpStatusError as HttpStatusError,
        HttpTimeoutError as HttpTimeoutError,
        ShellCommandError as ShellCommandError,
        ShellError as ShellError,
        ShellOutputError as ShellOutputError,
        ShellOutputLimitError as ShellOutputLimitError,
        ShellTimeoutError as ShellTimeoutError,
    )
    from .http import HttpExecutor as HttpExecutor, HttpKind as HttpKind
    from .nested import WorkflowExecutor as WorkflowExecutor
    from .python import (
        PythonKind as PythonKind,
        executor_from_object as executor_from_object,
        resolve_ref as resolve_ref,
    )
    from .schema import check_config as check_config
    from .shell import ShellExecutor as ShellExecutor, ShellKind as ShellKind
    from .workflow import WorkflowKind as WorkflowKind


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


# importing this package (which every plait command does, to load plugins) imports none of
# its names until one is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
