"""The plugin author's surface of Plait: what a plugin distribution imports.

``plait`` is for people who write workflows; ``plait.spi`` is for people who extend Plait:
the hook markers and ``Register`` callbacks, the protocol of each kind of thing a plugin
registers (router, merge strategy, converter, checkpoint store, loader, executor kind,
placement, observer, durability — with the runner's commit seam it drives —, the
documents machinery behind ``plait.load``), the spec types and the build context, and the
helpers every plugin shares (lazy registration, code references, expression compilers,
the caller's words in errors). What checkpoint stores share beyond the protocol (the byte
format, the lease rules, prune's rule) comes with ``plait-durable``. Every other module of
the kernel is private (``plait._*``) and may change.

Names are imported on first use, so ``from plait.spi import hookimpl`` in a plugin's entry
point module costs nothing more than the hook machinery itself.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._build import (
        Problems,
        SpecBuilder,
        check_config,
        config_error,
        did_you_mean,
        edge_group_id,
        json_pointer,
        problem_order,
    )
    from ._building import (
        AgentLookup,
        BuildContext,
        ExecutorKind,
        Loader,
        build_executors,
        load_scope,
    )
    from ._checkpoint import (
        FORMAT_VERSION,
        BlobStore,
        Checkpoint,
        CheckpointInfo,
        CheckpointStore,
        Lease,
        LeaseHolder,
        RunInfo,
        open_store,
    )
    from ._codec import (
        DecodeError,
        EncodeError,
        declared_types,
        decode_value,
        encode_value,
        type_ref,
    )
    from ._context import DELETED, RunScope
    from ._convert import (
        CattrsHooks,
        Converter,
        ConverterGraph,
        LossyConversion,
        Step,
        TypeFamily,
        converter_graph,
        message_converter,
    )
    from ._errors import cli_wording, grant_text, is_cli, spell
    from ._executor import Handler
    from ._expressions import (
        CompiledExpression,
        CompiledTemplate,
        ExpressionLanguage,
        compile_expression,
        compile_template,
    )
    from ._graph import CompiledGraph
    from ._hookspecs import Register, hookimpl
    from ._observer import Invocation, RunObserver, combine
    from ._options import RunOptions
    from ._pipeline import decode_cut
    from ._placement import Placement
    from ._plugins import (
        ENTRY_POINT_GROUP,
        KINDS,
        PluginInfo,
        PluginManager,
        Registry,
        core_version,
        set_plugin_manager,
    )
    from ._refs import (
        as_executor,
        callable_spec,
        code_ref,
        expression_spec,
        import_ref,
        nonportable_reason,
    )
    from ._registry import lazy, lazy_exports
    from ._routing import Delivery, EdgeRunner, MergeStrategy, Router, RouterEnv
    from ._runner import RunCommit, Runner
    from ._spec import spec_converter
    from ._state import PendingRequest, RunState
    from ._streaming import RunWatch
    from ._types import is_assignable, is_instance, main_module_name, type_name
    from ._workflow import Documents, Durability, with_placement

__all__ = [
    "Durability",
    "FORMAT_VERSION",
    "RunCommit",
    "Runner",
    "RunState",
    "EncodeError",
    "DecodeError",
    "main_module_name",
    "combine",
    "decode_cut",
    "AgentLookup",
    "Documents",
    "cli_wording",
    "is_cli",
    "spell",
    "BlobStore",
    "DELETED",
    "CattrsHooks",
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStore",
    "CompiledExpression",
    "CompiledGraph",
    "CompiledTemplate",
    "Converter",
    "ConverterGraph",
    "Delivery",
    "ENTRY_POINT_GROUP",
    "EdgeRunner",
    "ExecutorKind",
    "ExpressionLanguage",
    "Handler",
    "Invocation",
    "KINDS",
    "BuildContext",
    "Lease",
    "LeaseHolder",
    "Loader",
    "LossyConversion",
    "MergeStrategy",
    "PendingRequest",
    "Placement",
    "PluginInfo",
    "PluginManager",
    "Problems",
    "Register",
    "Registry",
    "Router",
    "RouterEnv",
    "RunInfo",
    "RunObserver",
    "RunOptions",
    "RunScope",
    "RunWatch",
    "SpecBuilder",
    "Step",
    "TypeFamily",
    "as_executor",
    "build_executors",
    "callable_spec",
    "check_config",
    "code_ref",
    "compile_expression",
    "compile_template",
    "config_error",
    "converter_graph",
    "core_version",
    "declared_types",
    "decode_value",
    "did_you_mean",
    "edge_group_id",
    "encode_value",
    "expression_spec",
    "grant_text",
    "hookimpl",
    "import_ref",
    "is_assignable",
    "is_instance",
    "json_pointer",
    "lazy",
    "lazy_exports",
    "load_scope",
    "message_converter",
    "nonportable_reason",
    "open_store",
    "problem_order",
    "set_plugin_manager",
    "spec_converter",
    "type_name",
    "type_ref",
    "with_placement",
]

#: Where each name lives.
_HOME = {
    "Durability": "_workflow",
    "RunCommit": "_runner",
    "Runner": "_runner",
    "RunState": "_state",
    "EncodeError": "_codec",
    "DecodeError": "_codec",
    "main_module_name": "_types",
    "combine": "_observer",
    "decode_cut": "_pipeline",
    "AgentLookup": "_building",
    "Documents": "_workflow",
    "cli_wording": "_errors",
    "is_cli": "_errors",
    "spell": "_errors",
    "BlobStore": "_checkpoint",
    "CattrsHooks": "_convert",
    "Checkpoint": "_checkpoint",
    "CheckpointInfo": "_checkpoint",
    "CheckpointStore": "_checkpoint",
    "FORMAT_VERSION": "_checkpoint",
    "CompiledExpression": "_expressions",
    "CompiledGraph": "_graph",
    "CompiledTemplate": "_expressions",
    "Converter": "_convert",
    "ConverterGraph": "_convert",
    "Delivery": "_routing",
    "ENTRY_POINT_GROUP": "_plugins",
    "EdgeRunner": "_routing",
    "ExecutorKind": "_building",
    "ExpressionLanguage": "_expressions",
    "Handler": "_executor",
    "Invocation": "_observer",
    "KINDS": "_plugins",
    "BuildContext": "_building",
    "Lease": "_checkpoint",
    "LeaseHolder": "_checkpoint",
    "Loader": "_building",
    "LossyConversion": "_convert",
    "MergeStrategy": "_routing",
    "PendingRequest": "_state",
    "Placement": "_placement",
    "PluginInfo": "_plugins",
    "PluginManager": "_plugins",
    "Problems": "_build",
    "Register": "_hookspecs",
    "Registry": "_plugins",
    "Router": "_routing",
    "RouterEnv": "_routing",
    "RunInfo": "_checkpoint",
    "RunObserver": "_observer",
    "RunOptions": "_options",
    "RunScope": "_context",
    "RunWatch": "_streaming",
    "DELETED": "_context",
    "SpecBuilder": "_build",
    "Step": "_convert",
    "TypeFamily": "_convert",
    "as_executor": "_refs",
    "build_executors": "_building",
    "callable_spec": "_refs",
    "check_config": "_build",
    "code_ref": "_refs",
    "compile_expression": "_expressions",
    "compile_template": "_expressions",
    "config_error": "_build",
    "converter_graph": "_convert",
    "core_version": "_plugins",
    "declared_types": "_codec",
    "decode_value": "_codec",
    "did_you_mean": "_build",
    "edge_group_id": "_build",
    "encode_value": "_codec",
    "expression_spec": "_refs",
    "grant_text": "_errors",
    "hookimpl": "_hookspecs",
    "import_ref": "_refs",
    "is_assignable": "_types",
    "is_instance": "_types",
    "json_pointer": "_build",
    "lazy": "_registry",
    "lazy_exports": "_registry",
    "load_scope": "_building",
    "message_converter": "_convert",
    "nonportable_reason": "_refs",
    "open_store": "_checkpoint",
    "problem_order": "_build",
    "set_plugin_manager": "_plugins",
    "spec_converter": "_spec",
    "type_name": "_types",
    "type_ref": "_codec",
    "with_placement": "_workflow",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"plait.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
