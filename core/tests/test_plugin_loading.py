"""Loading details: registry hooks go through pluggy, version checks, disabling, interrupts."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import plait
import pytest
from plait.errors import PlaitWarning, PluginLoadErrors
from plait.loading import _fast_contains, _packaging_contains
from plait_testing import broken_entry_point, fake_entry_point, make_plugin_manager


class Strategy:
    def merge(self, values: Any, sources: Any) -> Any:
        return values

    def output_type(self, input_type: Any) -> Any:
        return input_type


def registering(module_name: str, **objs: Any) -> types.ModuleType:
    module = types.ModuleType(module_name)

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        for name, obj in objs.items():
            register(name, obj)

    module.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    return module


def test_registry_hooks_go_through_pluggy_so_wrappers_see_them() -> None:
    seen: list[str] = []
    wrapper = types.ModuleType("plait_wrapper")

    @plait.hookimpl(wrapper=True)
    def plait_register_merge_strategies(register: Any) -> Iterator[None]:
        seen.append("before")
        yield
        seen.append("after")

    wrapper.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())),
        fake_entry_point("wrap", wrapper),
    )
    assert manager.registry("merge_strategy").names() == ["first"]
    assert seen == ["before", "after"]


def test_tryfirst_decides_the_call_order_and_each_name_keeps_its_plugin() -> None:
    order: list[str] = []
    early = types.ModuleType("plait_early")

    @plait.hookimpl(tryfirst=True)
    def plait_register_merge_strategies(register: Any) -> None:
        order.append("early")
        register("early", Strategy())

    early.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    late = registering("plait_late", late=Strategy())
    late_impl = late.plait_register_merge_strategies

    def record(register: Any) -> None:
        order.append("late")
        late_impl(register)

    late.plait_register_merge_strategies = plait.hookimpl(record)  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("late", late, distribution="dist-late"),
        fake_entry_point("early", early, distribution="dist-early"),
    )
    registry = manager.registry("merge_strategy")
    assert order == ["early", "late"]
    assert registry.entry("early").distribution == "dist-early"
    assert registry.entry("late").distribution == "dist-late"


def test_a_failing_registry_hook_fails_only_its_plugin() -> None:
    bad = types.ModuleType("plait_bad")

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        raise RuntimeError("cannot register")

    bad.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("good", registering("plait_good", kept=Strategy())),
        fake_entry_point("bad", bad, distribution="plait-bad"),
    )
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.phase) == ("plait-bad", "validate")
    assert isinstance(error.__cause__, RuntimeError)
    infos = {info.name: info for info in manager.describe()}
    assert infos["good"].registered == {"merge_strategy": ["kept"]}
    assert infos["bad"].status == "failed"


def test_a_broken_plugin_is_one_line_with_the_fix() -> None:
    manager = make_plugin_manager(broken_entry_point("broken", distribution="plait-broken"))
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    message = info.value.message
    assert "\n" not in message
    assert "plait-broken" in message and "PLAIT_DISABLE_PLUGINS=broken" in message


def test_disabling_a_name_that_matches_nothing_warns() -> None:
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())),
        disabled=["onee"],
    )
    with pytest.warns(PlaitWarning, match="'onee'.*plugins: one"):
        manager.load_entrypoints()


def test_an_interrupt_while_loading_leaves_the_manager_unloaded() -> None:
    interrupting = broken_entry_point("stop", KeyboardInterrupt())
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())), interrupting
    )
    with pytest.raises(KeyboardInterrupt):
        manager.load_entrypoints()
    interrupting.load = lambda: registering("plait_stop", second=Strategy())  # type: ignore[method-assign]
    manager.load_entrypoints()  # retried, not "loaded but empty"
    assert manager.registry("merge_strategy").names() == ["first", "second"]


@pytest.mark.parametrize(
    ("requirement", "running"),
    [
        ("plait-core>=0.1,<1", "0.1.0"),
        ("plait-core>=0.1,<1", "1.0"),
        ("plait-core>=0.2", "0.1.9"),
        ("plait-core (>=0.1, <2)", "1.5"),
        ("plait_core==1.0", "1"),
        ("plait-core!=0.1.0", "0.1"),
        ("plait-core<=0.1", "0.1.0"),
        ("plait-core>0.1", "0.1.0"),
        ("plait-core", "0.1.0"),
    ],
)
def test_the_fast_version_check_agrees_with_packaging(requirement: str, running: str) -> None:
    assert _fast_contains(requirement, running) == _packaging_contains(requirement, running)


@pytest.mark.parametrize(
    ("requirement", "running"),
    [
        ("plait-core>=0.1; python_version >= '3'", "0.1.0"),
        ("plait-core~=0.1", "0.1.0"),
        ("plait-core==0.*", "0.1.0"),
        ("plait-core>=0.1", "0.2.0rc1"),
    ],
)
def test_the_fast_check_defers_to_packaging_beyond_plain_releases(
    requirement: str, running: str
) -> None:
    assert _fast_contains(requirement, running) is None
