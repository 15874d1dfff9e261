"""Edge routers for Plait, registered through ``plait_register_routers``.

========== ======================================================================
name        behaviour
========== ======================================================================
direct      one source to one target (params: optional ``condition``)
conditional one source to one target when ``condition(message)`` is true
fan_out     one source to every target, or to those ``selection(message, targets)``
            picks
fan_in      a barrier: waits for a message from every source, then delivers one
            message merged by the ``merge`` strategy (default ``list``, configured
            by ``merge_options``) in source-declaration order;
            ``when="available"`` fires with what arrived
            once no pending message can still reach the silent sources
switch      ordered ``cases`` (predicate, target), first match wins, else ``default``
error       an error edge: when a source fails (after its retries), each target gets an
            :class:`plait.InvocationFailure` and the run goes on (the runner delivers
            it; the edge carries no ordinary message)
========== ======================================================================

This module holds the registrations and the options as data (what front-ends import); the
routers live in ``_routers``, imported when a workflow is first built (loading plugins, as
every ``plait`` command does, imports this module only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._routers import (
        DirectRouter as DirectRouter,
        ErrorEdgeRunner as ErrorEdgeRunner,
        ErrorRouter as ErrorRouter,
        FanInBuffers as FanInBuffers,
        FanInEdgeRunner as FanInEdgeRunner,
        FanInRouter as FanInRouter,
        FanOutEdgeRunner as FanOutEdgeRunner,
        FanOutRouter as FanOutRouter,
        SingleEdgeRunner as SingleEdgeRunner,
        SwitchEdgeRunner as SwitchEdgeRunner,
        SwitchRouter as SwitchRouter,
    )


# -- options, as data --------------------------------------------------------------------------


def switch_options(
    case_targets: Sequence[str],
    cases: Sequence[Any],
    default: str | None = None,
) -> dict[str, Any]:
    """The options of a ``switch`` edge group, as its router reads them: ``case_targets``
    (the target of each case, in order), ``cases`` (each case's predicate as data: an
    expression ``{"expr": "branch"}`` or a callable spec; ``None`` for one given as a
    parameter) and ``default`` (where a message no case takes goes).
    """
    if len(case_targets) != len(cases):
        raise ValueError(
            f"a switch needs one target per case: {len(case_targets)} target(s), "
            f"{len(cases)} case(s)"
        )
    return {"case_targets": list(case_targets), "default": default, "cases": list(cases)}


def switch_targets(case_targets: Sequence[str], default: str | None = None) -> list[str]:
    """The targets of a ``switch`` edge group: its case targets, then its default, each
    once, in that order.
    """
    return list(dict.fromkeys([*case_targets, *([default] if default else [])]))


def fan_in_options(
    merge: str = "list", *, when: str = "all", merge_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The options of a ``fan_in`` edge group, as its router reads them: the ``merge``
    strategy's name, ``when`` it fires (``"all"``: every source sent; ``"available"``:
    what arrived, once no pending message can reach the silent sources) and, when given,
    the strategy's ``merge_options``.
    """
    if when not in ("all", "available"):
        raise ValueError(f"fan-in option when must be 'all' or 'available', got {when!r}")
    options: dict[str, Any] = {"merge": merge, "when": when}
    if merge_options:
        options["merge_options"] = dict(merge_options)
    return options


# -- registration --------------------------------------------------------------------------

#: each router's name, where it lives and whether it keeps per-run state (answered without
#: importing it: the registry checks ``create`` and ``stateful``)
_ROUTERS = {
    "direct": ("plait_routing._routers:DirectRouter", False),
    "conditional": ("plait_routing._routers:CONDITIONAL", False),
    "fan_out": ("plait_routing._routers:FanOutRouter", False),
    "fan_in": ("plait_routing._routers:FanInRouter", True),
    "switch": ("plait_routing._routers:SwitchRouter", False),
    "error": ("plait_routing._routers:ErrorRouter", False),
}


@plait.hookimpl
def plait_register_routers(register: Register) -> None:
    """Register the standard routers, imported when a workflow is first built."""
    for name, (ref, stateful) in _ROUTERS.items():
        register(name, lazy(ref, provides=("create",), stateful=stateful))


# the routers and their edge runners, imported on first use
_IN_ROUTERS = [
    "DirectRouter",
    "ErrorEdgeRunner",
    "ErrorRouter",
    "FanInBuffers",
    "FanInEdgeRunner",
    "FanInRouter",
    "FanOutEdgeRunner",
    "FanOutRouter",
    "SingleEdgeRunner",
    "SwitchEdgeRunner",
    "SwitchRouter",
]


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
