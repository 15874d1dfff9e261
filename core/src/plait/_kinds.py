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
from typing import Any, Protocol, runtime_checkable

import attrs

from ._errors import ConfigError

__all__ = ["ExecutorKind", "KindContext"]


@attrs.frozen(kw_only=True)
class KindContext:
    """What a kind may use while it builds an executor.

    :param node_id: the node being built (name it in errors).
    :param allow_imports: whether importing code named by the config is allowed. False for
        documents from untrusted sources (``plait.load`` of a file, unless the caller says
        otherwise); a kind that would import refuses with a :class:`~plait.ConfigError`.
    :param executors: the Python objects the caller passed by name (``executors=``).
    :param manager: the plugin manager (a :class:`plait.spi.PluginManager`), for kinds
        that look up other registries (fragments, loaders).
    :param source: the document the node came from, for error positions.
    """

    node_id: str
    allow_imports: bool = True
    executors: Mapping[str, Any] = attrs.field(factory=dict)
    manager: Any = None
    source: str | None = None


@runtime_checkable
class ExecutorKind(Protocol):
    """A named way of building executors from a JSON config.

    ``config_schema`` is a JSON Schema (draft 2020-12) for the config, shown by
    ``plait plugins`` and used by :meth:`check`. Optionally (not part of the structural
    check, so kinds written before it still register), ``capabilities``: what a node of the
    kind needs (see the module docstring and :mod:`plait.capabilities`).
    """

    config_schema: Mapping[str, Any]

    def check(self, config: Mapping[str, Any], ctx: KindContext) -> list[ConfigError]:
        """Every problem of ``config`` (empty when it is valid), each with a JSON path
        (``/config/argv/0``) in its position."""
        ...

    def create(self, config: Mapping[str, Any], ctx: KindContext) -> Any:
        """Build the executor (a :class:`plait.Executor` whose id is ``ctx.node_id``) from a
        config :meth:`check` accepted."""
        ...
