"""Build-time wiring checks: can every edge's target handle what its source sends?"""

from __future__ import annotations

from typing import Any, Union

from plait import Executor
from plait.plugins import PluginManager
from plait.spec import EdgeGroupSpec
from plait.types import is_assignable, type_name

__all__ = ["wire_types"]


def wire_types(
    executors: dict[str, Executor],
    groups: list[EdgeGroupSpec],
    params: dict[str, dict[str, Any]],
    manager: PluginManager,
    *,
    auto_convert: bool,
    allow_lossy: bool,
) -> list[str]:
    """Check every edge group; return the problems found.

    ``executors``, ``groups`` and ``params`` are the builder's copies: a pass that inserts
    converter nodes edits them in place.
    """
    problems: list[str] = []
    merges = manager.registry("merge_strategy")
    for group in groups:
        sources = [executors[s] for s in group.sources if s in executors]
        sent: list[Any] = []
        for ex in sources:
            sent.extend(t for t in ex.output_types if t not in sent)
        if not sent or Any in sent or len(sources) != len(group.sources):
            continue  # unknown types are checked at run time
        if group.router == "fan_in":
            merge_name = group.options.get("merge", "list")
            if merge_name not in merges:
                continue  # reported when the router is created
            union = sent[0] if len(sent) == 1 else Union[tuple(sent)]  # noqa: UP007
            incoming = [merges.get(merge_name).output_type(union)]
        else:
            incoming = sent
        for target_id in group.targets:
            target = executors.get(target_id)
            if target is None:
                continue
            for tp in incoming:
                if not any(is_assignable(tp, accepted) for accepted in target.input_types):
                    accepts = ", ".join(type_name(t) for t in target.input_types)
                    problems.append(
                        f"edge group {group.id!r}: {target_id!r} cannot handle "
                        f"{type_name(tp)} (it accepts: {accepts or 'nothing'})"
                    )
    return problems
