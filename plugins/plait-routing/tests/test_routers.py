"""What each router of plait-routing does, edge runner by edge runner, and in a real run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plait
import plait_routing
import pytest
from plait import (
    EdgeGroupSpec,
    Executor,
    Never,
    NodeSpec,
    RoutingError,
    UnknownNameError,
    Workflow,
    WorkflowContext,
    WorkflowSpec,
    WorkflowValidationError,
    executor,
)
from plait.spi import PluginManager
from plait_routing import DirectRouter, FanInRouter, FanOutRouter, SwitchRouter
from plait_testing import RegisterPlugin, StaticRouterEnv


class ListOf:
    """A stand-in for plait-merge's ``list``: records what it was asked to merge."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[Any], list[str]]] = []

    def merge(self, values: Sequence[Any], sources: Sequence[str]) -> list[Any]:
        self.calls.append((list(values), list(sources)))
        return list(values)

    def output_type(self, input_type: Any) -> Any:
        return list[input_type]  # type: ignore[valid-type,unused-ignore]


def env(merge: Any = None) -> StaticRouterEnv:
    return StaticRouterEnv({"merge_strategy": {"list": merge or ListOf()}})


def group(
    router: str, sources: Sequence[str], targets: Sequence[str], **options: Any
) -> EdgeGroupSpec:
    gid = f"{router}:{','.join(sources)}->{','.join(targets)}"
    return EdgeGroupSpec(gid, router, tuple(sources), tuple(targets), options)


def create(router: Any, spec: EdgeGroupSpec, params: Mapping[str, Any] | None = None) -> Any:
    return router.create(spec, params or {}, env())


# -- direct and conditional ------------------------------------------------------------------


def test_direct_delivers_the_same_object_to_its_target() -> None:
    runner = create(DirectRouter(), group("direct", ["a"], ["b"]))
    message = {"payload": [1, 2]}
    ((target, delivered),) = runner.route("a", message, None, None)
    assert target == "b"
    assert delivered is message  # never copied


def test_direct_honours_an_explicit_target() -> None:
    runner = create(DirectRouter(), group("direct", ["a"], ["b"]))
    assert runner.route("a", "m", "b", None) == [("b", "m")]
    assert runner.route("a", "m", "elsewhere", None) == []


@pytest.mark.parametrize(
    ("sources", "targets", "end"),
    [(["a", "x"], ["b"], "source"), (["a"], ["b", "c"], "target")],
)
def test_direct_needs_exactly_one_source_and_target(
    sources: list[str], targets: list[str], end: str
) -> None:
    with pytest.raises(ValueError, match=f"exactly one {end}"):
        create(DirectRouter(), group("direct", sources, targets))


def test_conditional_delivers_only_what_the_condition_accepts() -> None:
    router = DirectRouter(require_condition=True)
    spec = group("conditional", ["a"], ["b"])
    runner = create(router, spec, {"condition": lambda n: n > 2})
    assert runner.route("a", 3, None, None) == [("b", 3)]
    assert runner.route("a", 1, None, None) == []
    assert runner.route("a", 1, "b", None) == []  # an explicit target does not bypass it


def test_conditional_without_a_condition_is_a_misconfiguration() -> None:
    with pytest.raises(ValueError, match="needs a condition"):
        create(DirectRouter(require_condition=True), group("conditional", ["a"], ["b"]))


def test_a_condition_must_be_callable() -> None:
    with pytest.raises(ValueError, match="condition .* must be callable"):
        create(DirectRouter(), group("direct", ["a"], ["b"]), {"condition": "n > 2"})


# -- fan-out ---------------------------------------------------------------------------------


def test_fan_out_reaches_every_target_in_declaration_order() -> None:
    runner = create(FanOutRouter(), group("fan_out", ["a"], ["c", "b", "d"]))
    assert runner.route("a", "m", None, None) == [("c", "m"), ("b", "m"), ("d", "m")]


def test_fan_out_selection_picks_targets() -> None:
    seen: list[tuple[Any, list[str]]] = []

    def selection(message: Any, targets: list[str]) -> list[str]:
        seen.append((message, targets))
        return [t for t in targets if t != "c"]

    runner = create(
        FanOutRouter(), group("fan_out", ["a"], ["b", "c", "d"]), {"selection": selection}
    )
    assert runner.route("a", "m", None, None) == [("b", "m"), ("d", "m")]
    assert seen == [("m", ["b", "c", "d"])]


def test_fan_out_selection_may_pick_nobody() -> None:
    runner = create(
        FanOutRouter(), group("fan_out", ["a"], ["b", "c"]), {"selection": lambda m, t: []}
    )
    assert runner.route("a", "m", None, None) == []


def test_fan_out_selection_choosing_an_unknown_target_is_a_routing_error() -> None:
    runner = create(
        FanOutRouter(),
        group("fan_out", ["a"], ["b", "c"]),
        {"selection": lambda message, targets: ["b", "ghost"]},
    )
    with pytest.raises(RoutingError, match=r"fan_out:a->b,c.*'ghost'.*b, c"):
        runner.route("a", "m", None, None)


def test_fan_out_explicit_target_bypasses_the_selection() -> None:
    runner = create(
        FanOutRouter(), group("fan_out", ["a"], ["b", "c"]), {"selection": lambda m, t: t}
    )
    assert runner.route("a", "m", "c", None) == [("c", "m")]
    assert runner.route("a", "m", "ghost", None) == []


def test_fan_out_misconfigurations() -> None:
    with pytest.raises(ValueError, match="exactly one source"):
        create(FanOutRouter(), group("fan_out", ["a", "z"], ["b", "c"]))
    with pytest.raises(ValueError, match="selection .* must be callable"):
        create(FanOutRouter(), group("fan_out", ["a"], ["b"]), {"selection": ["b"]})


# -- fan-in ----------------------------------------------------------------------------------


def fan_in(*sources: str, when: str = "all", merge: Any = None) -> tuple[Any, ListOf]:
    strategy = merge or ListOf()
    spec = group("fan_in", list(sources), ["t"], merge="list", when=when)
    return FanInRouter().create(spec, {}, env(strategy)), strategy


def test_fan_in_waits_for_every_source_then_delivers_once_in_declaration_order() -> None:
    runner, strategy = fan_in("a", "b", "c")
    state = runner.initial_state()
    assert runner.route("c", "from c", None, state) == []
    assert runner.route("a", "from a", None, state) == []
    assert runner.route("b", "from b", None, state) == [("t", ["from a", "from b", "from c"])]
    assert strategy.calls == [(["from a", "from b", "from c"], ["a", "b", "c"])]
    assert runner.snapshot(state, lambda m: m) == {"a": [], "b": [], "c": []}  # all consumed


def test_fan_in_rounds_are_first_in_first_out() -> None:
    runner, _ = fan_in("a", "b")
    state = runner.initial_state()
    assert runner.route("a", "a1", None, state) == []
    assert runner.route("a", "a2", None, state) == []
    assert runner.route("b", "b1", None, state) == [("t", ["a1", "b1"])]
    assert runner.route("b", "b2", None, state) == [("t", ["a2", "b2"])]


def test_fan_in_state_is_per_run() -> None:
    runner, _ = fan_in("a", "b")
    first, second = runner.initial_state(), runner.initial_state()
    runner.route("a", "x", None, first)
    assert runner.route("b", "y", None, second) == []
    assert runner.route("b", "y", None, first) == [("t", ["x", "y"])]


def test_fan_in_when_all_is_never_flushed() -> None:
    runner, _ = fan_in("a", "b")
    assert not runner.needs_flush  # the runner only flushes edge runners that ask


def test_fan_in_when_available_flushes_once_the_silent_sources_cannot_send() -> None:
    runner, strategy = fan_in("a", "b", "c", when="available")
    assert runner.needs_flush
    state = runner.initial_state()
    runner.route("c", "from c", None, state)
    runner.route("a", "from a", None, state)
    assert runner.flush(state, lambda source: source == "b") == []  # b may still send
    assert runner.flush(state, lambda source: False) == [("t", ["from a", "from c"])]
    assert strategy.calls[-1] == (["from a", "from c"], ["a", "c"])
    assert runner.flush(state, lambda source: False) == []  # delivered once


def test_fan_in_snapshot_holds_the_buffers_and_restores_them() -> None:
    runner, _ = fan_in("a", "b")
    state = runner.initial_state()
    runner.route("a", {"n": 1}, None, state)
    data = runner.snapshot(state, lambda m: {"wrapped": m})
    assert data == {"a": [{"wrapped": {"n": 1}}], "b": []}
    restored = runner.restore(data, lambda m: m["wrapped"])
    assert runner.route("b", {"n": 2}, None, restored) == [("t", [{"n": 1}, {"n": 2}])]


def test_fan_in_message_types_come_from_the_merge_strategy() -> None:
    runner, _ = fan_in("a", "b")
    assert runner.message_types([str]) == {"t": (list[str],)}


def test_fan_in_misconfigurations() -> None:
    with pytest.raises(ValueError, match="when must be 'all' or 'available'"):
        fan_in("a", "b", when="some")
    with pytest.raises(ValueError, match="exactly one target"):
        create(FanInRouter(), group("fan_in", ["a", "b"], ["t", "u"]))


def test_fan_in_with_an_unknown_merge_lists_the_installed_ones() -> None:
    spec = group("fan_in", ["a", "b"], ["t"], merge="median")
    with pytest.raises(UnknownNameError, match=r"'median' \(for fan-in .*installed: list"):
        FanInRouter().create(spec, {}, env())


def test_fan_in_hands_merge_options_to_the_strategy() -> None:
    class Joined(ListOf):
        def __init__(self, separator: str = ",") -> None:
            super().__init__()
            self.separator = separator

        def with_options(self, options: Any) -> Joined:
            return Joined(options["separator"])

        def merge(self, values: Any, sources: Any) -> Any:
            return self.separator.join(values)

    spec = group("fan_in", ["a", "b"], ["t"], merge="list", merge_options={"separator": " | "})
    runner = FanInRouter().create(spec, {}, env(Joined()))
    state = runner.initial_state()
    assert runner.route("b", "y", None, state) == []
    assert runner.route("a", "x", None, state) == [("t", "x | y")]


def test_fan_in_merge_options_need_a_strategy_that_takes_them() -> None:
    spec = group("fan_in", ["a", "b"], ["t"], merge="list", merge_options={"separator": "-"})
    with pytest.raises(ValueError, match="'list' takes no options, got 'separator'"):
        FanInRouter().create(spec, {}, env())
    bad = group("fan_in", ["a", "b"], ["t"], merge="list", merge_options=["-"])
    with pytest.raises(ValueError, match="merge_options must be a mapping"):
        FanInRouter().create(bad, {}, env())


# -- switch ----------------------------------------------------------------------------------


def switch(default: str | None = "d", **params: Any) -> Any:
    targets = ["b", "c", *([default] if default else [])]
    spec = group("switch", ["a"], targets, case_targets=["b", "c"], default=default)
    cases = params.get("cases", [lambda m: isinstance(m, str), lambda m: m == "both"])
    return SwitchRouter().create(spec, {"cases": cases}, env())


def test_switch_takes_the_first_matching_case() -> None:
    runner = switch(cases=[lambda m: m.startswith("b"), lambda m: m.endswith("h")])
    assert runner.route("a", "both", None, None) == [("b", "both")]
    assert runner.route("a", "each", None, None) == [("c", "each")]


def test_switch_falls_back_to_the_default() -> None:
    runner = switch()
    assert runner.route("a", 7, None, None) == [("d", 7)]


def test_switch_honours_an_explicit_target() -> None:
    runner = switch()
    assert runner.route("a", "text", "c", None) == [("c", "text")]  # not the matching "b"
    assert runner.route("a", "text", "elsewhere", None) == []  # another edge's target


def test_switch_with_no_match_and_no_default_names_the_group() -> None:
    runner = switch(default=None)
    with pytest.raises(RoutingError, match=r"switch 'switch:a->b,c' .* int .* 'a'") as info:
        runner.route("a", 7, None, None)
    assert info.value.executor_id == "a"


@pytest.mark.parametrize(
    ("options", "cases", "problem"),
    [
        ({"case_targets": ["b", "c"]}, [lambda m: True], "2 case target.*1 predicate"),
        ({"case_targets": ["b"]}, ["not callable"], "predicate is not callable"),
        ({"case_targets": ["ghost"]}, [lambda m: True], "'ghost' is not among"),
        ({"case_targets": ["b"], "default": "ghost"}, [lambda m: True], "'ghost' is not"),
        ({"case_targets": []}, [], None),
    ],
)
def test_switch_misconfigurations(options: dict[str, Any], cases: list[Any], problem: str) -> None:
    spec = EdgeGroupSpec("switch:a->b,c", "switch", ("a",), ("b", "c"), options)
    if problem is None:  # no cases at all is allowed: everything goes to the default
        assert SwitchRouter().create(spec, {"cases": cases}, env()).cases == ()
        return
    with pytest.raises(ValueError, match=problem):
        SwitchRouter().create(spec, {"cases": cases}, env())


def test_switch_needs_one_source() -> None:
    spec = EdgeGroupSpec("switch:a,z->b", "switch", ("a", "z"), ("b",), {"case_targets": ["b"]})
    with pytest.raises(ValueError, match="exactly one source"):
        SwitchRouter().create(spec, {"cases": [lambda m: True]}, env())


# -- in a real run, with only the kernel and this plugin -----------------------------------


class ListPlugin:
    """An in-process plugin registering the ``list`` merge the fan-in needs."""

    @plait.hookimpl
    def plait_register_merge_strategies(self, register: Any) -> None:
        register("list", ListOf())


@pytest.fixture
def routing(plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin) -> PluginManager:
    register_plugin(plait_routing, "routing")
    register_plugin(ListPlugin(), "list-merge")
    return plait_plugin_manager


def node(ex: Executor) -> NodeSpec:
    return NodeSpec(ex.id)


@pytest.mark.anyio
async def test_fan_in_when_available_fires_with_what_arrived_in_a_run(
    routing: PluginManager,
) -> None:
    @executor(id="start")
    async def start(n: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(n)

    @executor(id="even")
    async def even(n: int, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"even {n}")

    @executor(id="odd")
    async def odd(n: int, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"odd {n}")

    @executor(id="join")
    async def join(parts: list[str], ctx: WorkflowContext[Never, list[str]]) -> None:
        await ctx.yield_output(parts)

    executors = {e.id: e for e in (start, even, odd, join)}
    spec = WorkflowSpec(
        name="parity",
        start="start",
        nodes=tuple(node(e) for e in executors.values()),
        edge_groups=(
            group("conditional", ["start"], ["even"]),
            EdgeGroupSpec("conditional:start->odd", "conditional", ("start",), ("odd",)),
            group("fan_in", ["even", "odd"], ["join"], merge="list", when="available"),
        ),
    )
    params = {
        "conditional:start->even": {"condition": lambda n: n % 2 == 0},
        "conditional:start->odd": {"condition": lambda n: n % 2 == 1},
    }
    workflow = Workflow(spec, executors, edge_params=params)
    assert (await workflow.run(4)).outputs == [["even 4"]]
    assert (await workflow.run(3)).outputs == [["odd 3"]]


def test_a_workflow_with_a_misconfigured_router_reports_the_group(
    routing: PluginManager,
) -> None:
    @executor(id="a")
    async def a(x: str) -> str:
        return x

    spec = WorkflowSpec(
        name=None,
        start="a",
        nodes=(node(a),),
        edge_groups=(group("conditional", ["a"], ["a"]),),
    )
    with pytest.raises(WorkflowValidationError, match=r"'conditional:a->a': .*needs a condition"):
        Workflow(spec, {"a": a})
