"""Plait's YAML steps front-end: format ``steps``, files ``.yaml``/``.yml``.

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

Registering the plugin imports nothing but this module: the loader (and ruamel.yaml) is
imported when a document is first loaded, each executor kind when a node of it is first
built or checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._base import LoopLimitError as LoopLimitError
    from ._context import step_context as step_context
    from ._executors import (
        StepConditionError as StepConditionError,
        StepOutputError as StepOutputError,
    )
    from ._foreach import ForeachItemsError as ForeachItemsError
    from ._loader import StepsLoader as StepsLoader


#: the executor kinds a steps workflow's nodes are built by, and the class of each
_KINDS = {
    "steps.agent": "plait_steps._executors:AgentKind",
    "steps.executor": "plait_steps._executors:ExecutorStepKind",
    "steps.condition": "plait_steps._executors:ConditionKind",
    "steps.fork": "plait_steps._executors:ForkKind",
    "steps.join": "plait_steps._executors:JoinKind",
    "steps.pass": "plait_steps._executors:PassKind",
    "steps.foreach": "plait_steps._foreach:ForeachKind",
    "steps.gather": "plait_steps._foreach:GatherKind",
}


@plait.hookimpl
def plait_register_loaders(register: Register) -> None:
    """Register the ``steps`` loader (imported with the first document it reads)."""
    loader = lazy("plait_steps._loader:StepsLoader", provides=("load",), suffixes=(".yaml", ".yml"))
    register("steps", loader)


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register the kinds a steps workflow's nodes are built by (``steps.agent`` …), each
    imported when a workflow first builds or checks a node of it."""
    for name, kind in _KINDS.items():
        register(name, lazy(kind, provides=("check", "create", "config_schema")))


# importing this package (which every plait command does, to load plugins) imports none of
# its names until one is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
