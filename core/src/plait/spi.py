"""The plugin author's surface of Plait: what a plugin distribution imports.

``plait`` is for people who write workflows; ``plait.spi`` is for people who extend Plait:
the hook markers and ``Register`` callbacks, the protocol of each kind of thing a plugin
registers (router, merge strategy, converter, loader, executor kind, placement,
observer, durability — with the runner's commit seam it drives —,
schedule — with the stretch of a run it runs and a checkpointer cuts —, the documents
machinery behind ``plait.load``), the spec types and the build context, and the helpers
every plugin shares (lazy registration, code references, expression compilers, the
caller's words in errors). What a checkpoint is (its records, the store protocols, the
value codec) and what stores share (the byte format, the lease rules, prune's rule) come
with ``plait-durable``; the spec builder and the problems collector every front-end builds
the IR with come with ``plait-documents``; chains of converters and the static type check
they rest on (``is_assignable``) come with ``plait-converters``. Every other module of the
kernel is private (``plait._*``) and may change.

Names are imported on first use, so ``from plait.spi import hookimpl`` in a plugin's entry
point module costs nothing more than the hook machinery itself.

.. versionadded:: 0.1
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._building import (
        AgentLookup as AgentLookup,
        BuildContext as BuildContext,
        CompiledExpression as CompiledExpression,
        CompiledTemplate as CompiledTemplate,
        ExecutorKind as ExecutorKind,
        ExpressionLanguage as ExpressionLanguage,
        Loader as Loader,
        build_executors as build_executors,
        compile_expression as compile_expression,
        compile_template as compile_template,
        load_scope as load_scope,
    )
    from ._context import DELETED as DELETED, RunScope as RunScope
    from ._convert import (
        CattrsHooks as CattrsHooks,
        Converter as Converter,
        TypeFamily as TypeFamily,
        message_converter as message_converter,
    )
    from ._errors import (
        cli_wording as cli_wording,
        grant_text as grant_text,
        is_cli as is_cli,
        spell as spell,
    )
    from ._executor import Handler as Handler
    from ._graph import CompiledGraph as CompiledGraph
    from ._hookspecs import Register as Register, hookimpl as hookimpl
    from ._observer import Invocation as Invocation, RunObserver as RunObserver, combine as combine
    from ._options import RunOptions as RunOptions
    from ._plugins import (
        ENTRY_POINT_GROUP as ENTRY_POINT_GROUP,
        KINDS as KINDS,
        PluginInfo as PluginInfo,
        PluginManager as PluginManager,
        Registry as Registry,
        core_version as core_version,
        set_plugin_manager as set_plugin_manager,
    )
    from ._registry import lazy as lazy, lazy_exports as lazy_exports
    from ._routing import (
        Delivery as Delivery,
        EdgeRunner as EdgeRunner,
        MergeStrategy as MergeStrategy,
        Router as Router,
        RouterEnv as RouterEnv,
    )
    from ._runner import (
        RunCommit as RunCommit,
        Runner as Runner,
        Schedule as Schedule,
        ScheduleRun as ScheduleRun,
        on_asyncio as on_asyncio,
    )
    from ._spec import (
        as_executor as as_executor,
        callable_spec as callable_spec,
        code_ref as code_ref,
        expression_spec as expression_spec,
        import_ref as import_ref,
        nonportable_reason as nonportable_reason,
        spec_converter as spec_converter,
    )
    from ._state import (
        Effects as Effects,
        PendingRequest as PendingRequest,
        RunState as RunState,
        delivery_id as delivery_id,
    )
    from ._streaming import RunWatch as RunWatch
    from ._types import (
        is_instance as is_instance,
        is_literal as is_literal,
        is_newtype as is_newtype,
        is_protocol as is_protocol,
        main_module_name as main_module_name,
        normalize as normalize,
        split as split,
        tuple_shape as tuple_shape,
        type_name as type_name,
        typeddict_fields as typeddict_fields,
        union_members as union_members,
        union_of as union_of,
    )
    from ._workflow import (
        Documents as Documents,
        Durability as Durability,
        Placement as Placement,
        with_placement as with_placement,
    )

#: Where each name lives.
_HOME = {
    "Durability": "_workflow",
    "RunCommit": "_runner",
    "Runner": "_runner",
    "RunState": "_state",
    "main_module_name": "_types",
    "combine": "_observer",
    "Schedule": "_runner",
    "ScheduleRun": "_runner",
    "on_asyncio": "_runner",
    "Effects": "_state",
    "delivery_id": "_state",
    "AgentLookup": "_building",
    "Documents": "_workflow",
    "cli_wording": "_errors",
    "is_cli": "_errors",
    "spell": "_errors",
    "CattrsHooks": "_convert",
    "CompiledExpression": "_building",
    "CompiledGraph": "_graph",
    "CompiledTemplate": "_building",
    "Converter": "_convert",
    "Delivery": "_routing",
    "ENTRY_POINT_GROUP": "_plugins",
    "EdgeRunner": "_routing",
    "ExecutorKind": "_building",
    "ExpressionLanguage": "_building",
    "Handler": "_executor",
    "Invocation": "_observer",
    "KINDS": "_plugins",
    "BuildContext": "_building",
    "Loader": "_building",
    "MergeStrategy": "_routing",
    "PendingRequest": "_state",
    "Placement": "_workflow",
    "PluginInfo": "_plugins",
    "PluginManager": "_plugins",
    "Register": "_hookspecs",
    "Registry": "_plugins",
    "Router": "_routing",
    "RouterEnv": "_routing",
    "RunObserver": "_observer",
    "RunOptions": "_options",
    "RunScope": "_context",
    "RunWatch": "_streaming",
    "DELETED": "_context",
    "TypeFamily": "_convert",
    "as_executor": "_spec",
    "build_executors": "_building",
    "callable_spec": "_spec",
    "code_ref": "_spec",
    "compile_expression": "_building",
    "compile_template": "_building",
    "core_version": "_plugins",
    "expression_spec": "_spec",
    "grant_text": "_errors",
    "hookimpl": "_hookspecs",
    "import_ref": "_spec",
    "is_instance": "_types",
    "lazy": "_registry",
    "lazy_exports": "_registry",
    "load_scope": "_building",
    "message_converter": "_convert",
    "nonportable_reason": "_spec",
    "normalize": "_types",
    "split": "_types",
    "union_members": "_types",
    "is_literal": "_types",
    "is_newtype": "_types",
    "is_protocol": "_types",
    "typeddict_fields": "_types",
    "tuple_shape": "_types",
    "union_of": "_types",
    "set_plugin_manager": "_plugins",
    "spec_converter": "_spec",
    "type_name": "_types",
    "with_placement": "_workflow",
}

#: Every public name: the type checkers read the imports above (``X as X`` re-exports).
__all__ = sorted(_HOME)


#: Names that left the kernel with the concrete thing they belong to: name -> (the module
#: that has it now, the distribution it comes with). Asking for one says where it went, as
#: an ``ImportError`` (``from plait.spi import ...`` would turn an ``AttributeError`` into
#: a bare "cannot import name"); the kernel never imports a plugin itself.
_MOVED = {
    "ConverterGraph": ("plait_converters", "plait-converters"),
    "converter_graph": ("plait_converters", "plait-converters"),
    # chaining converters, and the static type check it rests on: the search's, not the runner's
    "Chain": ("plait_converters", "plait-converters"),
    "Step": ("plait_converters", "plait-converters"),
    "find_chain": ("plait_converters", "plait-converters"),
    "nearest_converters": ("plait_converters", "plait-converters"),
    "is_assignable": ("plait_converters", "plait-converters"),
    "LossyConversion": ("plait_builders", "plait-builders"),
    # one way to build the IR: what every front-end shares, not what the kernel runs
    "SpecBuilder": ("plait_documents", "plait-documents"),
    "edge_group_id": ("plait_documents", "plait-documents"),
    "Problems": ("plait_documents", "plait-documents"),
    "problem_order": ("plait_documents", "plait-documents"),
    "did_you_mean": ("plait_documents", "plait-documents"),
    "check_config": ("plait_documents", "plait-documents"),
    "config_error": ("plait_documents", "plait-documents"),
    "json_pointer": ("plait_documents", "plait-documents"),
    # what a checkpoint is and how its values are encoded: durability's, not the runner's
    "BlobStore": ("plait_durable", "plait-durable"),
    "Checkpoint": ("plait_durable", "plait-durable"),
    "CheckpointInfo": ("plait_durable", "plait-durable"),
    "CheckpointStore": ("plait_durable", "plait-durable"),
    "FORMAT_VERSION": ("plait_durable", "plait-durable"),
    "Lease": ("plait_durable", "plait-durable"),
    "LeaseHolder": ("plait_durable", "plait-durable"),
    "RunInfo": ("plait_durable", "plait-durable"),
    "open_store": ("plait_durable", "plait-durable"),
    "DecodeError": ("plait_durable", "plait-durable"),
    "EncodeError": ("plait_durable", "plait-durable"),
    "declared_types": ("plait_durable", "plait-durable"),
    "decode_value": ("plait_durable", "plait-durable"),
    "encode_value": ("plait_durable", "plait-durable"),
    "type_ref": ("plait_durable", "plait-durable"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        if name in _MOVED:
            module, distribution = _MOVED[name]
            raise ImportError(
                f"plait.spi.{name} moved to {module}: use `from {module} import {name}` "
                f"(it comes with {distribution}: pip install {distribution})",
                name=__name__,
            )
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"plait.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
