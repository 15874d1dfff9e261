"""Executor kinds: named factories that build executors from data.

A :class:`ExecutorKind` is registered by name through ``plait_register_executor_kinds``.
Every node of a :class:`~plait.WorkflowSpec` names its kind and carries a JSON
``config``; :meth:`plait.Workflow.from_spec` asks the kind to :meth:`~ExecutorKind.check`
the config (every problem at once, each with its JSON path) and then to
:meth:`~ExecutorKind.create` the executor. Config errors are found when the workflow is
loaded, never when it runs.

A kind also declares what a node of it may make Plait do, as ``capabilities`` (see
:mod:`plait.capabilities`): a collection of :class:`~plait.spi.Capability`
(``(SUBPROCESS,)``; ``()`` for a pure kind), or a function of ``(config, ctx)`` giving them
(the ``http`` kind's ``network=<host of its URL>``). It is read before any node of a
loaded document is built; registered lazily, pass it as a static attribute
(``lazy("pkg.mod:Kind", provides=..., capabilities=(SUBPROCESS,))``) so that reading it
imports nothing. A kind that declares nothing needs the grant ``kind=<its name>``.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._errors import ConfigError

if TYPE_CHECKING:
    from ._building import BuildContext

__all__ = ["ExecutorKind"]


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
