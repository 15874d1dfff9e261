"""Plait's JSON DAG front-end: format ``dag``.

A document has ``nodes`` (``id``, ``agent_name``, ``is_entry``, ``is_exit``,
``skip_condition``; plus ``join`` and ``workflow``) and ``connections`` (``source_id``,
``target_id``, ``context_passed``, ``condition``; plus ``parallel`` and
``max_iterations``). ``plait.load("flow.json", executors={...})`` gives a runnable
workflow whose input and output are the run context, a JSON object.

This package registers the ``dag`` loader and the ``dag.node`` executor kind. Importing it
imports neither jsonschema nor the expression language: they load with the first document.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._loader import DagLoader as DagLoader
    from ._node import DagMessage as DagMessage, DagNode as DagNode, DagNodeKind as DagNodeKind
    from ._schema import document_schema as document_schema
    from .errors import (
        DagDocumentError as DagDocumentError,
        DagLoopError as DagLoopError,
        DagRunError as DagRunError,
    )


@plait.hookimpl
def plait_register_loaders(register: Register) -> None:
    """Register the ``dag`` loader (JSON, suffix ``.json``)."""
    register("dag", lazy("plait_dag._loader:DagLoader", provides=("load",), suffixes=(".json",)))


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register ``dag.node``, the kind every node of a DAG document is built by."""
    kind = "plait_dag._node:DagNodeKind"
    register("dag.node", lazy(kind, provides=("check", "create", "config_schema")))


# each name is imported on first use (plugin loading stays cheap)
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
