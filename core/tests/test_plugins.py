"""The plugin manager (loading, conflicts, disabling, describe) and plait.testing itself."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import plait
import pytest
from plait import (
    EdgeGroupSpec,
    IncompatiblePluginError,
    Never,
    NodeSpec,
    PlaitWarning,
    PluginConflictError,
    PluginLoadError,
    PluginLoadErrors,
    RegistrationError,
    UnknownNameError,
    Workflow,
    WorkflowContext,
    WorkflowSpec,
    WorkflowValidationError,
    executor,
    get_plugin_manager,
)
from plait.spi import PluginManager
from plait_testing import (
    FakeEntryPoint,
    HookRecorder,
    MergeStrategyContract,
    RegisterPlugin,
    RouterContract,
    StaticRouterEnv,
    broken_entry_point,
    fake_entry_point,
    make_plugin_manager,
)

if sys.version_info < (3, 11):
    from exceptiongroup import ExceptionGroup  # type: ignore[import-not-found,unused-ignore]

pytest_plugins = ["pytester"]


# -- a kernel-only router and merge strategy, and plugins that register them -------------------


class SingleRunner:
    """Delivers every message to the group's only target."""

    stateful = False
    needs_flush = False

    def __init__(self, group: EdgeGroupSpec) -> None:
        self.group = group
        self.target = group.targets[0]
        self.passthrough = self.target

    def route(self, source: str, message: Any, target: str | None, state: Any) -> list[Any]:
        return [(self.target, message)] if target in (None, self.target) else []

    def initial_state(self) -> None:
        return None

    def flush(self, state: Any, can_still_send: Callable[[str], bool]) -> list[Any]:
        return []

    def snapshot(self, state: Any, encode: Callable[[Any], Any]) -> None:
        return None

    def restore(self, data: Any, decode: Callable[[Any], Any]) -> None:
        return None

    def message_types(self, source_types: Sequence[Any]) -> Mapping[str, Sequence[Any]]:
        return {self.target: source_types}


class Single:
    """A router: one edge, every message."""

    stateful = False

    def create(self, group: EdgeGroupSpec, params: Mapping[str, Any], env: Any) -> SingleRunner:
        if len(group.targets) != 1:
            raise ValueError(f"router 'single' needs one target, got {len(group.targets)}")
        return SingleRunner(group)


class Longest:
    """A merge strategy: the longest value (the first of equals)."""

    def merge(self, values: Sequence[str], sources: Sequence[str]) -> str:
        return max(values, key=len)

    def output_type(self, input_type: Any) -> Any:
        return input_type


def plugin(module_name: str, **hooks: Callable[..., Any]) -> types.ModuleType:
    """A plugin module with ``hooks`` (hook name -> function) marked as hook implementations."""
    module = types.ModuleType(module_name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, plait.hookimpl(fn))
    return module


def registering(
    module_name: str, hook: str = "plait_register_merge_strategies", **objs: Any
) -> types.ModuleType:
    """A plugin whose ``hook`` registers each of ``objs`` under its keyword name."""
    replaces = objs.pop("replaces", None)

    def register_all(register: Any) -> None:
        for name, obj in objs.items():
            register(name, obj, replaces=replaces)

    return plugin(module_name, **{hook: register_all})


def load_errors(manager: PluginManager) -> list[PluginLoadError]:
    with pytest.raises(PluginLoadErrors) as info:
        manager.load_entrypoints()
    assert isinstance(info.value, ExceptionGroup)
    return list(info.value.exceptions)


# -- loading -------------------------------------------------------------------------------------


def test_fake_entry_points_load_and_register() -> None:
    ep = fake_entry_point("longest", registering("plait_longest", longest=Longest()))
    manager = make_plugin_manager(ep)
    assert manager.registry("merge_strategy").names() == ["longest"]
    entry = manager.registry("merge_strategy").entry("longest")
    assert (entry.plugin, entry.distribution) == ("longest", "plait-longest")
    assert entry.obj.__plait_distribution__ == "plait-longest"
    assert ep.loads == 1
    manager.load_entrypoints()  # once only
    assert ep.loads == 1


def test_a_broken_plugin_names_its_distribution_version_entry_point_and_phase() -> None:
    manager = make_plugin_manager(broken_entry_point("broken", distribution="plait-broken"))
    (error,) = load_errors(manager)
    assert (error.distribution, error.version, error.phase) == ("plait-broken", "0.1.0", "import")
    assert error.entry_point == "broken = plait_broken"
    assert isinstance(error.__cause__, ImportError)
    assert "'broken = plait_broken' from distribution plait-broken 0.1.0" in str(error)
    assert "phase 'import'" in str(error)


def test_every_failure_is_reported_together() -> None:
    manager = make_plugin_manager(
        broken_entry_point("zeta", RuntimeError("boom")),
        fake_entry_point("ok", registering("plait_ok", longest=Longest())),
        broken_entry_point("alpha", ImportError),
    )
    errors = load_errors(manager)
    assert [(e.distribution, e.phase) for e in errors] == [
        ("plait-alpha", "import"),
        ("plait-zeta", "import"),
    ]
    assert "RuntimeError: boom" in str(errors[1])


def test_a_later_use_fails_again_instead_of_skipping_the_broken_plugin() -> None:
    manager = make_plugin_manager(broken_entry_point("broken"))
    load_errors(manager)
    load_errors(manager)
    with pytest.raises(PluginLoadErrors):
        manager.registry("router")


def test_a_plugin_needing_a_newer_kernel_is_refused_before_import() -> None:
    ep = fake_entry_point("future", plugin("plait_future"), requires=["plait-core>=99"])
    (error,) = load_errors(make_plugin_manager(ep, running_version="0.1.0"))
    assert isinstance(error, IncompatiblePluginError)
    assert error.phase == "compatibility"
    assert "plait-core>=99" in str(error) and "running plait-core is 0.1.0" in str(error)
    assert ep.loads == 0


@pytest.mark.parametrize(
    "requirement",
    [
        "plait_core>=99",
        "Plait.Core>=99",
        "plait-core<0.1",
    ],
)
def test_kernel_requirements_are_matched_by_normalised_name(requirement: str) -> None:
    ep = fake_entry_point("future", plugin("plait_future"), requires=[requirement])
    (error,) = load_errors(make_plugin_manager(ep, running_version="0.1.0"))
    assert error.phase == "compatibility"


@pytest.mark.parametrize(
    "requirement",
    ["plait-core>=0.1,<1", "plait-core>=99; extra == 'future'", "attrs>=99", "not a requirement"],
)
def test_other_requirements_do_not_block_loading(requirement: str) -> None:
    ep = fake_entry_point("fine", plugin("plait_fine"), requires=[requirement])
    make_plugin_manager(ep, running_version="0.1.0").load_entrypoints()
    assert ep.loads == 1


async def _async_hook(register: Any) -> None:
    register("never", Longest())


def test_a_coroutine_hook_implementation_is_rejected_naming_the_plugin() -> None:
    ep = fake_entry_point("asyncy", plugin("plait_asyncy", plait_register_routers=_async_hook))
    (error,) = load_errors(make_plugin_manager(ep))
    assert error.phase == "register"
    assert "'plait_register_routers' of plugin 'asyncy' is a coroutine" in str(error)
    with pytest.raises(RegistrationError, match="plugin 'inproc' is a coroutine"):
        make_plugin_manager().register(
            plugin("inproc", plait_register_routers=_async_hook), "inproc"
        )


def test_an_unknown_hook_is_rejected() -> None:
    typo = plugin("plait_typo", plait_register_router=lambda register: None)
    (error,) = load_errors(make_plugin_manager(fake_entry_point("typo", typo)))
    assert error.phase == "register"
    assert "plugin 'typo' implements unknown hook 'plait_register_router'" in str(error)


def test_a_hook_with_arguments_the_spec_lacks_is_rejected_naming_the_plugin() -> None:
    def observe(run_id: str, flow: Any) -> None: ...

    with pytest.raises(RegistrationError, match="(?s)plugin 'observer'.*flow"):
        make_plugin_manager().register(plugin("obs", plait_observe_run=observe), "observer")


# -- names -------------------------------------------------------------------------------------


def clashing(manager: PluginManager) -> str:
    """Load ``manager`` (a clash warns, never fails loading) and return the error that
    looking up the clashing merge strategy ``concat`` raises."""
    with pytest.warns(PlaitWarning, match="registered by both"):
        manager.load_entrypoints()
    with pytest.raises(PluginConflictError) as info:
        manager.registry("merge_strategy").get("concat")
    return str(info.value)


def test_one_name_from_two_distributions_is_an_error_naming_both() -> None:
    manager = make_plugin_manager(
        fake_entry_point(
            "a", registering("plait_a", concat=Longest(), keep_a=Longest()), distribution="dist-a"
        ),
        fake_entry_point(
            "b", registering("plait_b", concat=Longest(), keep_b=Longest()), distribution="dist-b"
        ),
    )
    message = clashing(manager)
    assert "merge_strategy 'concat' is registered by both" in message
    assert "dist-a (plugin 'a')" in message and "dist-b (plugin 'b')" in message
    assert "replaces=" in message
    # only the clashing name is unusable: both plugins stay loaded with their other names
    assert manager.registry("merge_strategy").names() == ["keep_a", "keep_b"]
    infos = {info.name: info for info in manager.describe()}
    assert infos["a"].status == infos["b"].status == "loaded"
    assert infos["a"].conflicts and infos["b"].conflicts


def test_a_clash_in_an_explicit_registration_is_refused_at_once() -> None:
    manager = make_plugin_manager(
        fake_entry_point("a", registering("plait_a", concat=Longest()), distribution="dist-a")
    )
    with pytest.raises(PluginConflictError, match="registered by both"):
        manager.register(registering("plait_c", concat=Longest()), "c")
    assert manager.registry("merge_strategy").names() == ["concat"]
    assert "c" not in {info.name for info in manager.describe()}


def test_replaces_names_the_distribution_that_loses() -> None:
    winner = Longest()
    manager = make_plugin_manager(
        fake_entry_point("a", registering("plait_a", concat=Longest()), distribution="dist-a"),
        fake_entry_point(
            "b", registering("plait_b", concat=winner, replaces="dist-a"), distribution="dist-b"
        ),
    )
    entry = manager.registry("merge_strategy").entry("concat")
    assert entry.obj is winner and entry.replaces == "dist-a"


def test_replaces_naming_another_distribution_does_not_win() -> None:
    manager = make_plugin_manager(
        fake_entry_point("a", registering("plait_a", concat=Longest()), distribution="dist-a"),
        fake_entry_point(
            "b", registering("plait_b", concat=Longest(), replaces="dist-z"), distribution="dist-b"
        ),
    )
    assert "registered by both" in clashing(manager)


def test_one_plugin_name_from_two_distributions_is_an_error_naming_both() -> None:
    manager = make_plugin_manager(
        fake_entry_point("same", registering("plait_one", one=Longest()), distribution="dist-1"),
        fake_entry_point("same", registering("plait_two", two=Longest()), distribution="dist-2"),
    )
    (error,) = load_errors(manager)
    assert error.phase == "register" and error.distribution == "dist-2"
    assert "taken by distribution dist-1" in str(error) and "dist-2" in str(error)
    described = manager.describe()
    assert [(i.distribution, i.status) for i in described] == [
        ("dist-1", "loaded"),
        ("dist-2", "failed"),
    ]


def test_the_same_distribution_seen_twice_is_loaded_once() -> None:
    module = registering("plait_twice", longest=Longest())
    first = fake_entry_point("twice", module, distribution="plait-twice")
    second = fake_entry_point("twice", module, distribution="Plait_Twice")
    manager = make_plugin_manager(first, second)
    assert [i.name for i in manager.describe()] == ["twice"]
    assert first.loads + second.loads == 1


def test_a_registration_that_does_not_fit_its_kind_is_a_validate_error_naming_it() -> None:
    bad = registering("plait_bad", hook="plait_register_routers", wobbly=Longest())
    (error,) = load_errors(make_plugin_manager(fake_entry_point("bad", bad)))
    assert error.phase == "validate"
    assert "router 'wobbly' does not fit the router protocol: lacks create, stateful" in str(error)


def test_a_registry_hook_that_raises_fails_in_validate_with_its_cause() -> None:
    def explode(register: Any) -> None:
        raise KeyError("config")

    bad = plugin("plait_bad", plait_register_loaders=explode)
    (error,) = load_errors(make_plugin_manager(fake_entry_point("bad", bad)))
    assert error.phase == "validate" and isinstance(error.__cause__, KeyError)


def test_registered_names_must_be_non_empty_strings() -> None:
    bad = plugin("plait_bad", plait_register_loaders=lambda register: register("", Longest()))
    assert "names must be non-empty strings" in str(
        load_errors(make_plugin_manager(fake_entry_point("bad", bad)))[0]
    )


def test_an_unknown_name_lists_what_is_installed() -> None:
    manager = make_plugin_manager(
        fake_entry_point("m", registering("plait_m", longest=Longest(), shortest=Longest()))
    )
    registry = manager.registry("merge_strategy")
    with pytest.raises(UnknownNameError, match=r"'median' \(for fan-in 'x'\); installed: longest"):
        registry.get("median", what="fan-in 'x'")
    with pytest.raises(LookupError, match="installed: none"):
        manager.registry("router").get("direct")
    with pytest.raises(UnknownNameError, match="kinds: executor_kind, router"):
        manager.registry("routers")


# -- disabling and describing ----------------------------------------------------------------


def test_plait_disable_plugins_blocks_by_name_or_distribution(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLAIT_DISABLE_PLUGINS", "one, plait-two")
    eps = [
        fake_entry_point("one", registering("plait_one", one=Longest())),
        fake_entry_point("two", registering("plait_two", two=Longest())),
        fake_entry_point("three", registering("plait_three", three=Longest())),
    ]
    manager = PluginManager(entry_points=eps)
    assert {i.name: i.status for i in manager.describe()} == {
        "one": "blocked",
        "two": "blocked",
        "three": "loaded",
    }
    assert manager.registry("merge_strategy").names() == ["three"]
    assert [ep.loads for ep in eps] == [0, 0, 1]


def test_make_plugin_manager_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAIT_DISABLE_PLUGINS", "one")
    manager = make_plugin_manager(fake_entry_point("one", plugin("plait_one")))
    assert [i.status for i in manager.describe()] == ["loaded"]


def test_describe_lists_every_plugin_even_when_one_failed() -> None:
    manager = make_plugin_manager(
        fake_entry_point("kit", registering("plait_kit", longest=Longest(), shortest=Longest())),
        fake_entry_point("routes", registering("r", hook="plait_register_routers", one=Single())),
        fake_entry_point("off", plugin("plait_off")),
        broken_entry_point("broken"),
        disabled=["off"],
    )
    infos = {i.name: i for i in manager.describe()}
    assert infos["kit"].registered == {"merge_strategy": ["longest", "shortest"]}
    assert infos["routes"].registered == {"router": ["one"]}
    assert (infos["kit"].distribution, infos["kit"].version) == ("plait-kit", "0.1.0")
    assert infos["kit"].entry_point.startswith("kit = ")
    assert (infos["off"].status, infos["off"].registered) == ("blocked", {})
    assert infos["broken"].status == "failed"
    assert "phase 'import'" in (infos["broken"].error or "")
    assert infos["kit"].error is None


# -- in-process plugins ------------------------------------------------------------------------


def test_plait_register_adds_an_in_process_plugin(plait_plugin_manager: PluginManager) -> None:
    name = plait.register(registering("my_strategies", longest=Longest()))
    assert name == "my_strategies"
    entry = get_plugin_manager().registry("merge_strategy").entry("longest")
    assert entry.distribution == "(in-process)"
    assert [i.name for i in plait.describe()] == ["my_strategies"]
    plait.unregister(name)
    assert "longest" not in plait_plugin_manager.registry("merge_strategy")


def test_a_bad_in_process_registration_leaves_nothing_registered(
    plait_plugin_manager: PluginManager,
) -> None:
    half_good = registering("half", hook="plait_register_routers", good=Single(), bad=Longest())
    with pytest.raises(PluginLoadError, match="router 'bad' does not fit") as info:
        plait.register(half_good, "half")
    assert info.value.phase == "validate"
    assert plait_plugin_manager.registry("router").names() == []
    assert not plait_plugin_manager.pm.is_registered(half_good)
    assert plait.describe() == []


def test_an_in_process_plugin_may_not_take_a_name_twice(
    plait_plugin_manager: PluginManager,
) -> None:
    plait.register(plugin("first"), "mine")
    with pytest.raises(PluginConflictError, match="'mine' is already registered"):
        plait.register(plugin("second"), "mine")


# -- plait.testing: fakes ------------------------------------------------------------------------


def test_a_fake_entry_point_looks_like_a_real_one() -> None:
    module = plugin("plait_thing")
    ep = fake_entry_point(
        "thing", module, distribution="plait-thing", version="1.2", requires=["plait-core>=0.1"]
    )
    assert (ep.name, ep.group, ep.value) == ("thing", "plait", "plait_thing")
    assert ep.dist.metadata["Name"] == "plait-thing"
    assert (ep.dist.version, ep.dist.requires) == ("1.2", ["plait-core>=0.1"])
    assert ep.load() is module
    assert fake_entry_point("bare", Single).value == f"{__name__}:Single"
    assert fake_entry_point("bare", object()).dist.requires is None


def test_a_broken_entry_point_raises_on_load() -> None:
    with pytest.raises(ImportError, match="No module named 'plait_gone'"):
        broken_entry_point("gone").load()
    with pytest.raises(ValueError, match="bad config"):
        broken_entry_point("bad", ValueError("bad config")).load()
    with pytest.raises(ZeroDivisionError):
        broken_entry_point("bad", ZeroDivisionError).load()


def test_a_fake_entry_point_needs_an_object_or_a_loader() -> None:
    with pytest.raises(TypeError, match="exactly one of obj or loader"):
        FakeEntryPoint("nothing")
    with pytest.raises(TypeError, match="exactly one of obj or loader"):
        FakeEntryPoint("both", object(), loader=object)


def test_a_static_router_env_lists_what_it_holds() -> None:
    env = StaticRouterEnv({"merge_strategy": {"longest": Longest()}})
    assert isinstance(env.lookup("merge_strategy", "longest", what="x"), Longest)
    with pytest.raises(UnknownNameError, match=r"'list' \(for fan-in 'f'\); installed: longest"):
        env.lookup("merge_strategy", "list", what="fan-in 'f'")
    assert env.lookups == [("merge_strategy", "longest"), ("merge_strategy", "list")]


# -- plait.testing: fixtures -----------------------------------------------------------------------


def test_plait_plugin_manager_is_fresh_and_process_wide(
    plait_plugin_manager: PluginManager,
) -> None:
    assert get_plugin_manager() is plait_plugin_manager
    assert plait_plugin_manager.describe() == []


def test_register_plugin_registers_on_the_current_manager(
    register_plugin: RegisterPlugin, plait_plugin_manager: PluginManager
) -> None:
    name = register_plugin(registering("plait_mine", longest=Longest()), distribution="mine")
    entry = plait_plugin_manager.registry("merge_strategy").entry("longest")
    assert (entry.plugin, entry.distribution) == (name, "mine")


@executor(id="shout")
async def shout(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text.upper())


@executor(id="echo")
async def echo(text: str, ctx: WorkflowContext[Never, str]) -> None:
    if text == "BOOM":
        raise RuntimeError("echo exploded")
    await ctx.yield_output(text)


def shout_then_echo() -> Workflow:
    group = EdgeGroupSpec("single:shout->echo", "single", ("shout",), ("echo",))
    spec = WorkflowSpec("loud", "shout", (NodeSpec("shout"), NodeSpec("echo")), (group,))
    return Workflow(spec, {"shout": shout, "echo": echo})


@pytest.mark.anyio
async def test_the_hook_recorder_sees_every_observer_call(
    plait_plugin_manager: PluginManager,
    register_plugin: RegisterPlugin,
    plait_hook_recorder: HookRecorder,
) -> None:
    register_plugin(registering("single", hook="plait_register_routers", single=Single()))
    workflow = shout_then_echo()
    result = await workflow.run("hi", run_id="run-1")
    assert result.outputs == ["HI"]
    assert plait_hook_recorder.names() == [
        "observe_run",
        "superstep_started",
        "invocation_started",
        "invocation_finished",
        "superstep_finished",
        "superstep_started",
        "invocation_started",
        "invocation_finished",
        "superstep_finished",
        "run_finished",
    ]
    started = plait_hook_recorder.calls[0]
    assert started.workflow is workflow and plait_hook_recorder.run_ids() == ["run-1"]
    first, second = plait_hook_recorder.getcalls("superstep_started")
    assert [first.superstep, first.executor_ids, second.executor_ids] == [1, ["shout"], ["echo"]]
    ended = plait_hook_recorder.getcalls("invocation_finished")
    assert [(call.executor_id, call.status) for call in ended] == [("shout", "ok"), ("echo", "ok")]
    (finished,) = plait_hook_recorder.getcalls("run_finished")
    assert (finished.run_id, finished.status, finished.error) == ("run-1", "idle", None)

    plait_hook_recorder.clear()
    failed = await workflow.run("boom", raise_on_failure=False)
    (finished,) = plait_hook_recorder.getcalls("run_finished")
    assert finished.status == "failed" and finished.error is failed.error
    with pytest.raises(AttributeError, match="no argument 'nope'"):
        _ = finished.nope


# -- plait.testing: contract suites ------------------------------------------------------------


class TestSingleRouter(RouterContract):
    """The kernel-only router above keeps the router contract."""

    @pytest.fixture
    def router(self) -> Single:
        return Single()

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        return EdgeGroupSpec("single:a->b", "single", ("a",), ("b",))


class TestLongestMerge(MergeStrategyContract):
    """The kernel-only merge strategy above keeps the merge contract."""

    @pytest.fixture
    def merge_strategy(self) -> Longest:
        return Longest()

    @pytest.fixture
    def merge_inputs(self) -> tuple[list[Any], tuple[str, ...]]:
        return ["a", "bbb", "cc"], ("x", "y", "z")


CONTRACT_VIOLATIONS = """
import pytest
from plait import EdgeGroupSpec
from plait_testing import MergeStrategyContract, RouterContract

class Leaky:
    stateful = False
    needs_flush = False
    passthrough = None
    def __init__(self, group):
        self.group = group
    def create(self, group, params, env):
        return Leaky(group)
    def route(self, source, message, target, state):
        return [("somewhere-else", message)]
    def initial_state(self): return None
    def flush(self, state, can_still_send): return []
    def snapshot(self, state, encode): return None
    def restore(self, data, decode): return None
    def message_types(self, source_types): return {"somewhere-else": source_types}

class TestLeaky(RouterContract):
    @pytest.fixture
    def router(self):
        return Leaky(None)
    @pytest.fixture
    def edge_group(self):
        return EdgeGroupSpec("leaky:a->b", "leaky", ("a",), ("b",))

class TestForgotTheRouter(RouterContract):
    pass

class Reversed:
    def merge(self, values, sources): return list(values)[::-1]
    def output_type(self, input_type): return "a list, probably"

class TestReversed(MergeStrategyContract):
    @pytest.fixture
    def merge_strategy(self):
        return Reversed()
"""


def _outcomes(result: pytest.RunResult, outcome: str) -> set[str]:
    """``Class::test`` names the short summary lists as ``outcome`` (FAILED, ERROR)."""
    return {
        line.split(" ")[1].split("::", 1)[1]
        for line in result.stdout.lines
        if line.startswith(f"{outcome} ")
    }


def test_the_contracts_catch_violations(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CONTRACT_VIOLATIONS)
    result = pytester.runpytest_inprocess("-q", "-rfE")
    assert _outcomes(result, "FAILED") == {
        "TestLeaky::test_routes_only_to_group_targets",
        "TestLeaky::test_explicit_target_outside_the_group_delivers_nothing",
        "TestLeaky::test_explicit_target_inside_the_group_is_honoured",
        "TestLeaky::test_message_types_are_keyed_by_targets",
        "TestReversed::test_merge_keeps_declaration_order",
        "TestReversed::test_output_type_is_a_type",
    }
    assert _outcomes(result, "ERROR") == {
        f"TestForgotTheRouter::{name}" for name in dir(RouterContract) if name.startswith("test_")
    }
    result.stdout.fnmatch_lines(["*must provide a 'router' fixture*"])
    result.stdout.fnmatch_lines(["*not a target of 'leaky:a->b'*"])
    result.stdout.fnmatch_lines(["*without an expected_merge oracle the strategy must ignore*"])


class Forgetful(Single):
    """A router whose edge runner lacks a member of the protocol (an older plugin's)."""

    def create(self, group: EdgeGroupSpec, params: Mapping[str, Any], env: Any) -> SingleRunner:
        runner = SingleRunner(group)
        del runner.passthrough
        return runner


def test_an_edge_runner_missing_a_protocol_member_is_named_at_build(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(
        registering("single", hook="plait_register_routers", single=Forgetful()),
        distribution="plait-forgetful",
    )
    with pytest.raises(WorkflowValidationError) as info:
        shout_then_echo()
    (problem,) = info.value.problems
    assert problem == (
        "edge group 'single:shout->echo': router 'single' of plait-forgetful made an edge "
        "runner without passthrough (see plait.spi.EdgeRunner)"
    )


# -- hooks a plugin declares (plait_addhooks) ---------------------------------------------------


class Specs:
    """The hooks a plugin calls: one answered by every plugin, one by the first."""

    @plait.spi.hookspec
    def plait_greetings(self, who: str) -> str | None:
        """Say hello to ``who``."""

    @plait.spi.hookspec(firstresult=True)
    def plait_farewell(self) -> Any:
        """Say goodbye."""


class Declares:
    """A plugin that declares :class:`Specs` for the plugins that extend it."""

    @plait.hookimpl
    def plait_addhooks(self, pluginmanager: PluginManager) -> None:
        pluginmanager.add_hookspecs(Specs)


class Greets:
    """A plugin that answers the declared hooks."""

    def __init__(self, word: str) -> None:
        self.word = word

    @plait.hookimpl
    def plait_greetings(self, who: str) -> str:
        return f"{self.word} {who}"

    @plait.hookimpl
    def plait_farewell(self) -> Any:
        return types.SimpleNamespace(names=("bye",), prepare=None, word=self.word)


class GreetsIfDeclared:
    """A plugin that answers a declared hook of a plugin that may not be installed."""

    @plait.hookimpl(optionalhook=True)
    def plait_greetings(self, who: str) -> str:
        return f"hi {who}"


def test_a_plugin_loaded_before_the_one_declaring_a_hook_may_implement_it() -> None:
    # entry points load by distribution: "a-greets" before "z-declares", whose hooks are
    # known only once it is registered; nothing fails, and the hook calls both answers
    manager = make_plugin_manager(
        fake_entry_point("greets", Greets("hello"), distribution="a-greets"),
        fake_entry_point("declares", Declares(), distribution="z-declares"),
    )
    manager.load_entrypoints()
    assert [p.status for p in manager.describe()] == ["loaded", "loaded"]
    answers = [(name, call(who="Ada")) for name, call in manager.implementations("plait_greetings")]
    assert answers == [("greets", "hello Ada")]
    farewell = manager.first("plait_farewell", "farewell", "the test", ("names", "prepare"))
    assert farewell.word == "hello"
    # plait plugins lists the firstresult hook a plugin answers, declared by a plugin or not
    infos = {info.name: info.registered for info in manager.describe()}
    assert infos["greets"] == {"hook": ["plait_farewell"]}


def test_a_hook_no_installed_plugin_declares_fails_its_plugin_unless_optional() -> None:
    manager = make_plugin_manager(
        fake_entry_point("greets", Greets("hello"), distribution="a-greets"),
        fake_entry_point("optional", GreetsIfDeclared(), distribution="b-optional"),
    )
    manager.load_entrypoints(strict=False)
    infos = {info.name: info for info in manager.describe()}
    assert infos["optional"].status == "loaded"
    assert infos["greets"].status == "failed"
    assert infos["greets"].error is not None
    assert "plugin 'greets' implements unknown hook 'plait_farewell', 'plait_greetings'" in (
        infos["greets"].error
    )
    assert "phase 'register'" in infos["greets"].error


def test_an_in_process_plugin_declares_hooks_as_it_is_registered(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    with pytest.raises(RegistrationError, match="implements unknown hook 'plait_farewell'"):
        plait_plugin_manager.register(Greets("hey"), "early")
    assert plait_plugin_manager.get_plugin("early") is None
    register_plugin(Declares(), "declares")
    register_plugin(Greets("hey"), "greets")
    with pytest.raises(PluginLoadError, match="does not fit the farewell protocol: lacks other"):
        plait_plugin_manager.first("plait_farewell", "farewell", "the test", ("names", "other"))


def test_a_raising_plait_addhooks_leaves_nothing_registered(
    plait_plugin_manager: PluginManager,
) -> None:
    class Raises:
        @plait.hookimpl
        def plait_addhooks(self, pluginmanager: PluginManager) -> None:
            raise RuntimeError("no specs today")

    with pytest.raises(RegistrationError, match="plait_addhooks raised RuntimeError"):
        plait_plugin_manager.register(Raises(), "raises")
    assert plait_plugin_manager.pm.get_plugin("raises") is None


class TipSpecs:
    """A registry hook a plugin declares: the plugins that extend it register tips."""

    @plait.spi.hookspec
    def plait_register_tips(self, register: Any) -> None:
        """Register tips."""


class DeclaresTips:
    @plait.hookimpl
    def plait_addhooks(self, pluginmanager: PluginManager) -> None:
        pluginmanager.add_hookspecs(TipSpecs)
        pluginmanager.add_registry("plait_register_tips", "tip", ("text",))


class WrapsTips:
    """Wraps the declared registry hook: it would never run, as a wrapper of the kernel's."""

    @plait.hookimpl(wrapper=True)
    def plait_register_tips(self, register: Any) -> Any:
        return (yield)


def test_a_wrapper_of_a_registry_hook_a_plugin_declares_is_refused_as_the_kernels_are() -> None:
    # loaded before the plugin that declares the hook and its registry kind: refused once
    # every plugin has declared its hooks, in phase "register", as a kernel hook's wrapper
    manager = make_plugin_manager(
        fake_entry_point("wraps", WrapsTips(), distribution="a-wraps"),
        fake_entry_point("declares", DeclaresTips(), distribution="z-declares"),
    )
    manager.load_entrypoints(strict=False)
    infos = {info.name: info for info in manager.describe()}
    assert infos["declares"].status == "loaded"
    assert infos["wraps"].status == "failed" and infos["wraps"].error is not None
    assert "'plait_register_tips' of plugin 'wraps' is a hook wrapper" in infos["wraps"].error
    assert "phase 'register'" in infos["wraps"].error
    assert manager.pm.get_plugin("wraps") is None


def test_an_in_process_wrapper_of_a_declared_registry_hook_is_refused(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(DeclaresTips(), "declares")
    with pytest.raises(RegistrationError, match="'plait_register_tips' of plugin 'late'"):
        plait_plugin_manager.register(WrapsTips(), "late")
    assert plait_plugin_manager.get_plugin("late") is None
