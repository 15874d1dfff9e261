"""Loading details: registry hooks go through pluggy, version checks (packaging), disabling
(pluggy's blocking), interrupts."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import plait
import pytest
from plait import PlaitWarning, PluginLoadErrors
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


def test_a_wrapper_of_a_registry_hook_is_refused_naming_the_plugin() -> None:
    # the kernel calls each plugin's implementation of a registry hook on its own, so
    # that what it registers is that plugin's: a wrapper would never run, and says so
    wrapper = types.ModuleType("plait_wrapper")

    @plait.hookimpl(wrapper=True)
    def plait_register_merge_strategies(register: Any) -> Iterator[None]:
        yield

    wrapper.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())),
        fake_entry_point("wrap", wrapper, distribution="plait-wrap"),
    )
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.phase) == ("plait-wrap", "register")
    assert "'plait_register_merge_strategies' of plugin 'wrap' is a hook wrapper" in str(error)
    assert manager.pm.get_plugin("wrap") is None  # nothing of it stays registered
    infos = {info.name: info for info in manager.describe()}
    assert infos["one"].registered == {"merge_strategy": ["first"]}


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


def _loads_with(requirement: str, running: str) -> bool:
    """Does a plugin declaring ``requirement`` load on a kernel of version ``running``?"""
    ep = fake_entry_point("p", registering("plait_p"), requires=[requirement])
    manager = make_plugin_manager(ep, running_version=running)
    manager.load_entrypoints(strict=False)
    (info,) = manager.describe()
    if info.status == "failed":
        assert "phase 'compatibility'" in (info.error or "")
        assert ep.loads == 0  # refused before import
    return info.status == "loaded"


@pytest.mark.parametrize(
    ("requirement", "running", "loads"),
    [
        ("plait-core>=0.1,<1", "0.1.0", True),
        ("plait-core>=0.1,<1", "1.0", False),
        ("plait-core>=0.2", "0.1.9", False),
        ("plait-core (>=0.1, <2)", "1.5", True),
        ("plait_core==1.0", "1", True),
        ("plait-core!=0.1.0", "0.1", False),
        ("plait-core", "0.1.0", True),
        # the name as PEP 503 reads it: any case, any run of - _ . as one separator
        ("  Plait._Core>=99", "0.1.0", False),
        ("plait-core-extras>=99", "0.1.0", True),  # another distribution
        ("plait>=99", "0.1.0", True),
        # PEP 440 beyond plain release numbers: packaging decides
        ("plait-core~=0.1", "0.9", True),
        ("plait-core~=0.1.0", "0.2.0", False),
        ("plait-core==0.*", "0.1.0", True),
        ("plait-core>=0.1", "0.2.0rc1", True),
        ("plait-core>=0.2", "0.2.0rc1", False),  # a pre-release comes before its release
        ("plait-core>=0.1.post1", "0.1.0", False),
        # a marker that holds applies; one that does not (another Python, an extra) does not
        ("plait-core>=99; python_version >= '3'", "0.1.0", False),
        ("plait-core>=99; python_version < '3'", "0.1.0", True),
        ("plait-core>=99; extra == 'future'", "0.1.0", True),
    ],
)
def test_the_kernel_requirement_is_read_as_pep_440_says(
    requirement: str, running: str, loads: bool
) -> None:
    assert _loads_with(requirement, running) is loads


def test_a_requirement_line_is_parsed_once_a_process_and_only_if_it_can_name_the_kernel() -> None:
    from plait._plugins import _requirement

    _requirement.cache_clear()
    lines = ["attrs>=23", "plait-core>=0.1,<1", "pluggy>=1.5; python_version >= '3.10'"]
    plugins = [
        fake_entry_point(f"p{i}", registering(f"plait_p{i}"), requires=lines) for i in range(5)
    ]
    make_plugin_manager(*plugins).load_entrypoints()
    info = _requirement.cache_info()
    assert (info.misses, info.hits) == (1, 4)  # the kernel's line, read once for five plugins


def test_a_refused_plugin_names_the_requirement_and_the_running_version() -> None:
    ep = fake_entry_point(
        "future", registering("plait_future"), requires=["plait-core>=99"], version="2.0"
    )
    manager = make_plugin_manager(ep, running_version="0.1.0")
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.version, error.phase) == (
        "plait-future",
        "2.0",
        "compatibility",
    )
    assert error.entry_point.startswith("future = ")
    assert "requires plait-core>=99 but the running plait-core is 0.1.0" in str(error)
    assert "install an older plait-future" in str(error)


def test_disabling_blocks_through_pluggy_so_no_hook_of_the_name_registers() -> None:
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())),
        disabled=["one", "two"],
    )
    assert manager.pm.is_blocked("one") and manager.pm.is_blocked("two")
    with pytest.warns(PlaitWarning, match="'two'"):  # no installed plugin has that name
        manager.load_entrypoints()
    # an in-process plugin under a disabled name is blocked too, not registered
    assert manager.register(registering("plait_two", second=Strategy()), "two") == "two"
    assert {i.name: i.status for i in manager.describe()} == {"one": "blocked", "two": "blocked"}
    assert manager.registry("merge_strategy").names() == []


def test_an_unknown_hook_leaves_nothing_registered_for_the_next_plugin() -> None:
    typo = types.ModuleType("plait_typo")
    typo.plait_register_merge_strategy = plait.hookimpl(lambda register: None)  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("typo", typo),
        fake_entry_point("zeta", registering("plait_zeta", kept=Strategy())),
    )
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert error.phase == "register" and "'plait_register_merge_strategy'" in str(error)
    # pluggy's check_pending saw only the broken plugin; the next one loaded
    assert manager.pm.get_plugin("typo") is None
    infos = {i.name: i for i in manager.describe()}
    assert (infos["typo"].status, infos["zeta"].status) == ("failed", "loaded")
    assert infos["zeta"].registered == {"merge_strategy": ["kept"]}


class ClassPlugin:
    """A plugin that is a class, its hook implementation a classmethod."""

    @plait.hookimpl
    @classmethod
    def plait_register_merge_strategies(cls, register: Any) -> None:
        register("from_class", Strategy())


def test_a_class_plugin_registers_and_is_its_own_plugin_object() -> None:
    manager = make_plugin_manager(fake_entry_point("klass", ClassPlugin))
    assert manager.registry("merge_strategy").entry("from_class").plugin == "klass"
    assert manager.get_plugin("klass") is ClassPlugin


def test_each_plugin_is_called_with_a_register_of_its_own() -> None:
    # an unhashable plugin object is fine: pluggy keeps it, and nothing here hashes it
    unhashable = types.SimpleNamespace()

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        register("mine", Strategy())

    unhashable.plait_register_merge_strategies = plait_register_merge_strategies
    bad = types.ModuleType("plait_bad")

    @plait.hookimpl
    def failing(register: Any) -> None:
        register("half", Strategy())  # what a failing plugin registered is dropped
        raise RuntimeError("cannot register")

    bad.plait_register_merge_strategies = failing  # type: ignore[attr-defined]
    manager = make_plugin_manager(
        fake_entry_point("one", registering("plait_one", first=Strategy())),
        fake_entry_point("bad", bad, distribution="plait-bad"),
        fake_entry_point("unhashable", unhashable, distribution="dist-unhashable"),
    )
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    (error,) = info.value.exceptions
    assert (error.distribution, error.phase) == ("plait-bad", "validate")
    infos = {info.name: info for info in manager.describe()}
    assert infos["one"].registered == {"merge_strategy": ["first"]}
    assert infos["unhashable"].registered == {"merge_strategy": ["mine"]}
    assert (infos["bad"].status, infos["bad"].registered) == ("failed", {})


class Durable:
    """What ``plait_durability`` gives, as the protocol asks."""

    def __getattr__(self, name: str) -> Any:
        if name in ("run", "opened", "load", "restore", "snapshot", "pending_requests"):
            return lambda *args, **kwargs: None
        if name == "fingerprint":
            return lambda *args, **kwargs: {}
        raise AttributeError(name)


def giving(module_name: str, obj: Any, **options: Any) -> types.ModuleType:
    module = types.ModuleType(module_name)

    @plait.hookimpl(**options)
    def plait_durability() -> Any:
        if isinstance(obj, Exception):
            raise obj
        return obj

    module.plait_durability = plait_durability  # type: ignore[attr-defined]
    return module


def test_the_first_plugin_to_answer_a_firstresult_hook_gives_the_one_object() -> None:
    first, second = Durable(), Durable()
    manager = make_plugin_manager(
        fake_entry_point("first", giving("plait_first", first)),
        fake_entry_point("second", giving("plait_second", second, tryfirst=True)),
        fake_entry_point("abstains", giving("plait_abstains", None, tryfirst=True)),
    )
    assert manager.durability("a test") is second  # tryfirst answers first; None passes
    infos = {info.name: info.registered for info in manager.describe()}
    assert infos["first"] == infos["second"] == {"hook": ["plait_durability"]}
    # one cache, forgotten whenever the plugins change
    manager.unregister("second")
    assert manager.durability("a test") is first


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (RuntimeError("no durability today"), "RuntimeError: no durability today"),
        (object(), "plait_durability gave an object that does not fit the durability protocol"),
    ],
)
def test_a_plugin_that_gives_nothing_usable_is_named(given: Any, message: str) -> None:
    manager = make_plugin_manager(
        fake_entry_point("broken", giving("plait_broken", given), distribution="plait-broken")
    )
    with pytest.raises(plait.PluginLoadError, match=message) as info:
        manager.durability("a test")
    assert (info.value.distribution, info.value.phase) == ("plait-broken", "validate")
    assert info.value.entry_point.startswith("broken = ")


def test_no_plugin_answering_says_what_needs_it() -> None:
    with pytest.raises(plait.UnknownNameError, match=r"durability \(for a test\)"):
        make_plugin_manager().durability("a test")
