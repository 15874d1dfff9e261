"""The plugin author's surface of Plait: what a plugin distribution imports.

``plait`` is for people who write workflows; ``plait.spi`` is for people who extend Plait:
the hook markers and ``Register`` callbacks, the protocol of each kind of thing a plugin
registers (router, merge strategy, converter, loader, executor kind, placement, observer,
durability — with the runner's commit seam it drives —, schedule — with the stretch of a
run it runs and a checkpointer cuts —, the documents machinery behind ``plait.load``), the
spec types and the build context, and the helpers every plugin shares (lazy registration,
code references, expression compilers, the caller's words in errors, the one ``__repr__``
of attrs records). What a checkpoint is (its records, the store protocols, the value codec)
and what stores share (the byte format, the lease rules, prune's rule) come with
``plait-durable``; the spec builder and the problems collector every front-end builds the
IR with come with ``plait-documents``; chains of converters and the static type check they
rest on (``is_assignable``) come with ``plait-converters``. Every other module of the
kernel is private (``plait._*``) and may change.

Names are imported on first use, so ``from plait.spi import hookimpl`` in a plugin's entry
point module costs nothing more than the hook machinery itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _exports

if TYPE_CHECKING:
    from ._building import (
        MAX_LOAD_NODES as MAX_LOAD_NODES,
        MAX_NESTING as MAX_NESTING,
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
    from ._context import (
        DELETED as DELETED,
        OutsideCalls as OutsideCalls,
        RunScope as RunScope,
        add_answerer as add_answerer,
        outside_call as outside_call,
        outside_calls as outside_calls,
        remove_answerer as remove_answerer,
    )
    from ._convert import Converter as Converter
    from ._events import ContextSnapshot as ContextSnapshot
    from ._executor import Handler as Handler
    from ._exports import lazy_exports as lazy_exports
    from ._graph import CompiledGraph as CompiledGraph
    from ._hookspecs import Register as Register, hookimpl as hookimpl, hookspec as hookspec
    from ._observer import (
        RUN_REQUEST as RUN_REQUEST,
        AskFirst as AskFirst,
        Invocation as Invocation,
        RunObserver as RunObserver,
        combine as combine,
    )
    from ._options import RunOptions as RunOptions
    from ._plugins import (
        ENTRY_POINT_GROUP as ENTRY_POINT_GROUP,
        KINDS as KINDS,
        PluginInfo as PluginInfo,
        PluginManager as PluginManager,
        Registry as Registry,
        core_version as core_version,
        observes_when as observes_when,
        set_plugin_manager as set_plugin_manager,
    )
    from ._records import record_repr as record_repr
    from ._registry import lazy as lazy
    from ._routing import (
        Delivery as Delivery,
        EdgeRunner as EdgeRunner,
        MergeStrategy as MergeStrategy,
        Router as Router,
        RouterEnv as RouterEnv,
    )
    from ._runner import (
        RunCommit as RunCommit,
        RunnerView as RunnerView,
        RunWatch as RunWatch,
        Schedule as Schedule,
        ScheduleRun as ScheduleRun,
        make_runner as make_runner,
        on_asyncio as on_asyncio,
    )
    from ._spec import (
        as_executor as as_executor,
        code_ref as code_ref,
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
        compiled_graph as compiled_graph,
        with_placement as with_placement,
    )

if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = _exports.lazy_exports(__name__)
