"""Plait's YAML steps front-end (seed 002): format ``steps``, files ``.yaml``/``.yml``.

.. code-block:: yaml

    workflow:
      - type: agent
        name: generator
      - type: agent
        name: translator

Each step sees every prior step's output in its user message; conditions branch and loop
(bounded by ``max_loop_iterations``); ``parallel`` blocks nest; ``foreach`` runs its steps
once per item of a list, concurrently, and gives the list of their outputs; ``retry`` uses
the kernel's retry policy; ``{{ $steps.<id>.output }}`` templates read prior outputs. See
``docs/steps.md``.

Registering the plugin imports nothing heavy: ruamel.yaml is imported when a document is
first loaded.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register

from ._context import step_context
from ._loader import StepsLoader

if TYPE_CHECKING:
    from ._executors import LoopLimitError, StepConditionError, StepOutputError
    from ._foreach import ForeachItemsError

__all__ = [
    "ForeachItemsError",
    "LoopLimitError",
    "StepConditionError",
    "StepOutputError",
    "StepsLoader",
    "plait_register_executor_kinds",
    "plait_register_loaders",
    "step_context",
]


def __getattr__(name: str) -> Any:
    if name in ("LoopLimitError", "StepConditionError", "StepOutputError"):
        from . import _executors

        return getattr(_executors, name)
    if name == "ForeachItemsError":
        from . import _foreach

        return _foreach.ForeachItemsError
    raise AttributeError(f"module 'plait_steps' has no attribute {name!r}")


@plait.hookimpl
def plait_register_loaders(register: Register) -> None:
    """Register the ``steps`` loader."""
    register("steps", StepsLoader())


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register the kinds a steps workflow's nodes are built by (``steps.agent`` …)."""
    from ._executors import KINDS
    from ._foreach import KINDS as FOREACH_KINDS

    for name, kind in {**KINDS, **FOREACH_KINDS}.items():
        register(name, kind)
