"""The first-party observers say which runs they observe (``plait.spi.observes_when``),
so a run that uses none of them imports none of their plugins when the plugins are
registered from their manifests: plait-budgets observes a run that sets ``budget`` or
resumes a budgeted one, plait-replay one that sets ``record`` or ``replay_with`` or
resumes a recorded one, plait-otel one in a process that imported OpenTelemetry."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import plait_budgets
import plait_otel
import plait_replay
import pytest
from plait import _hookspecs as hookspecs
from plait._options import RunOptions
from plait._plugins import KINDS, HookManager, LazyPlugin, Plugin, manifest_of
from plait.spi import PluginManager


class EntryPoint:
    """The module's entry point, counting the times it is loaded: under a name no module
    of this process has (this process imported the module itself, which a plugin
    registered from its manifest is asked about as it is)."""

    def __init__(self, module: types.ModuleType) -> None:
        self.name, self.module = module.__name__, module
        self.value = f"{module.__name__}_not_imported_yet"
        self.loads = 0

    def load(self) -> Any:
        self.loads += 1
        return self.module


def lazy(module: types.ModuleType) -> tuple[Callable[..., list[Any]], EntryPoint]:
    """The module registered from its manifest, as a second process registers it, and
    how pluggy calls its ``plait_observe_run``."""
    manifest = manifest_of(HookManager("plait"), module, module.__name__, {})
    assert manifest is not None and "plait_observe_run" in manifest["when"]
    ep = EntryPoint(module)
    plugin = Plugin(module.__name__, module.__name__, "1", module.__name__)
    pm = HookManager("plait")
    pm.add_hookspecs(hookspecs)
    fail = lambda *failed: AssertionError(failed)  # noqa: E731
    pm.register(LazyPlugin(plugin, ep, manifest, fail, KINDS))

    def observe(resumed: Any, options: Any) -> list[Any]:
        return pm.hook.plait_observe_run(  # type: ignore[no-any-return]
            run_id="r1", workflow=None, superstep=0, resumed=resumed, options=options
        )

    return observe, ep


def options(**given: Any) -> RunOptions:
    return RunOptions.from_kwargs({}, given, PluginManager(disabled=()))


@pytest.mark.parametrize(
    ("module", "given", "resumed"),
    [
        (plait_budgets, {"budget": "tokens=10"}, {"budgets": None}),
        (plait_replay, {"record": True}, {"replay": {"record": True}}),
    ],
)
def test_an_observer_s_plugin_is_imported_only_for_a_run_it_observes(
    module: types.ModuleType, given: dict[str, Any], resumed: dict[str, Any]
) -> None:
    observe, ep = lazy(module)
    plain = options(checkpoint="memory://lazy-observers")
    assert observe(None, plain) == [] and observe({"other": {}}, plain) == []
    assert ep.loads == 0
    observe(resumed, plain)
    assert ep.loads == 1
    observe, ep = lazy(module)
    assert len(observe(None, options(**given))) == 1 and ep.loads == 1


def test_the_tracing_plugin_is_imported_only_where_opentelemetry_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "opentelemetry.trace", raising=False)
    observe, ep = lazy(plait_otel)
    assert observe(None, None) == [] and ep.loads == 0
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", types.ModuleType("stand-in"))
    monkeypatch.setattr(plait_otel, "_tracer", lambda: None)  # (asked: no SDK set up)
    assert observe(None, None) == [] and ep.loads == 1
