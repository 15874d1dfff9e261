"""Build-time type wiring: converter chains inserted on every kind of edge, or clear errors."""

from __future__ import annotations

import copy
import importlib
from typing import Any

import plait_merge
import plait_routing
import pytest
from plait import (
    ConverterError,
    Never,
    WorkflowContext,
    WorkflowValidationError,
    executor,
    hookimpl,
)
from plait.spi import Converter, PluginManager
from plait_builders import ConverterExecutor, WorkflowBuilder
from plait_testing import RegisterPlugin

pytestmark = pytest.mark.anyio


class Converters:
    """An in-process plugin registering the converters it is given."""

    def __init__(self, *converters: Converter) -> None:
        self.converters = converters

    @hookimpl
    def plait_register_converters(self, register: Any) -> None:
        for c in self.converters:
            register(c.name, c)


def _float_to_str(value: float) -> str:
    return f"{value:.1f}"


def _fail(value: Any) -> Any:
    raise ValueError("no")


INT_TO_FLOAT = Converter(int, float, float, True, "int_to_float")
FLOAT_TO_STR = Converter(float, str, _float_to_str, True, "float_to_str")
FLOAT_TO_INT = Converter(float, int, int, False, "float_to_int")
JOIN = Converter(list[int], str, lambda xs: ",".join(map(str, xs)), False, "join")


@pytest.fixture
def register(plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin) -> Any:
    """A fresh manager with the routers and merge strategies (not the standard converters);
    ``register(*converters)``. The converter search needs no plugin of its own."""
    register_plugin(plait_routing, "routing")
    register_plugin(plait_merge, "merge")

    def add(*converters: Converter) -> None:
        register_plugin(Converters(*converters), f"converters-{converters[0].name}")

    return add


def sender(id: str, out: Any) -> Any:
    async def send(x: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(x)

    send.__annotations__.update(x=out, ctx=WorkflowContext[out])  # type: ignore[valid-type]
    return executor(send, id=id)


def sink(id: str, accepts: Any) -> Any:
    async def take(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(x)

    take.__annotations__["x"] = accepts
    return executor(take, id=id)


def ids(wf: Any) -> list[str]:
    return [n.id for n in wf.spec.nodes]


def groups(wf: Any) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    return [(g.id, g.sources, g.targets) for g in wf.spec.edge_groups]


A_F, F_S = "convert:int->float:int_to_float", "convert:float->str:float_to_str"


# --------------------------------------------------------------------------- every edge kind


async def test_a_direct_edge_gets_the_chain_and_keeps_its_group_id(register: Any) -> None:
    register(INT_TO_FLOAT, FLOAT_TO_STR)
    wf = WorkflowBuilder().add_edge(sender("a", int), sink("b", str)).set_start("a").build()
    assert ids(wf) == ["a", "b", A_F, F_S]
    assert groups(wf) == [
        ("direct:a->b", ("a",), (A_F,)),
        (f"direct:{A_F}->{F_S}", (A_F,), (F_S,)),
        (f"direct:{F_S}->b", (F_S,), ("b",)),
    ]
    node = wf.spec.node(A_F)
    assert (node.input_types, node.output_types) == (("int",), ("float",))
    assert (await wf.run(2)).outputs == ["2.0"]


async def test_a_conditional_edge_still_tests_what_the_source_sent(register: Any) -> None:
    register(INT_TO_FLOAT, FLOAT_TO_STR)
    wf = (
        WorkflowBuilder()
        .add_edge(sender("a", int), sink("b", str), condition=lambda n: n > 1)
        .set_start("a")
        .build()
    )
    assert wf.spec.edge_groups[0].id == "conditional:a->b"
    assert (await wf.run(2)).outputs == ["2.0"]
    assert (await wf.run(1)).outputs == []


async def test_fan_out_converts_only_for_the_targets_that_need_it(register: Any) -> None:
    register(INT_TO_FLOAT)
    wf = (
        WorkflowBuilder()
        .add_fan_out(sender("a", int), [sink("as_int", int), sink("as_float", float)])
        .set_start("a")
        .build()
    )
    assert groups(wf)[0] == ("fan_out:a->as_int,as_float", ("a",), ("as_int", A_F))
    assert sorted(map(repr, (await wf.run(3)).outputs)) == ["3", "3.0"]


async def test_a_fan_in_target_gets_the_merged_type_converted(register: Any) -> None:
    register(JOIN)
    builder = (
        WorkflowBuilder(allow_lossy=True)
        .add_fan_out(sender("a", int), [sender("b", int), sender("c", int)])
        .add_fan_in(["b", "c"], sink("d", str))
        .set_start("a")
    )
    wf = builder.build()
    join = "convert:list[int]->str:join"
    assert ("fan_in:b,c->d", ("b", "c"), (join,)) in groups(wf)
    assert (await wf.run(4)).outputs == ["4,4"]


async def test_switch_cases_and_default_are_retargeted(register: Any) -> None:
    register(INT_TO_FLOAT)
    wf = (
        WorkflowBuilder()
        .add_switch(
            sender("a", int),
            [(lambda n: n < 0, sink("neg", float)), (lambda n: n == 0, sink("zero", int))],
            default="neg",
        )
        .set_start("a")
        .build()
    )
    switch = wf.spec.edge_groups[0]
    assert switch.targets == (A_F, "zero")
    assert switch.options["case_targets"] == [A_F, "zero"]
    assert switch.options["default"] == A_F
    assert (await wf.run(-2)).outputs == [-2.0]
    assert (await wf.run(0)).outputs == [0]
    assert (await wf.run(5)).outputs == [5.0]


# --------------------------------------------------------------------------- ids and determinism


def test_one_converter_on_several_edges_gets_unique_ids(register: Any) -> None:
    register(INT_TO_FLOAT)
    wf = (
        WorkflowBuilder()
        .add_fan_out(sender("a", int), [sender("b", int), sender("c", int)])
        .add_edge("b", sink("x", float))
        .add_edge("c", "x")
        .add_edge("a", sink("y", float))
        .set_start("a")
        .build()
    )
    assert ids(wf)[-3:] == [A_F, f"{A_F}@x", f"{A_F}@y"]
    assert ("direct:c->x", ("c",), (f"{A_F}@x",)) in groups(wf)


def test_two_builds_are_identical(register: Any) -> None:
    register(INT_TO_FLOAT, FLOAT_TO_STR)

    def build() -> Any:
        return (
            WorkflowBuilder("twice")
            .add_fan_out(sender("a", int), [sink("b", str), sink("c", str)])
            .set_start("a")
            .build()
        )

    first, second = build(), build()
    assert first.spec == second.spec and first.signature() == second.signature()


# --------------------------------------------------------------------------- refusals


def test_a_lossy_chain_needs_permission(register: Any) -> None:
    register(FLOAT_TO_INT)
    builder = WorkflowBuilder().add_edge(sender("a", float), sink("b", int)).set_start("a")
    with pytest.raises(WorkflowValidationError) as info:
        builder.build()
    (problem,) = info.value.problems
    assert problem.startswith(
        "edge group 'direct:a->b': 'b' cannot handle float from 'a' (it accepts: int)"
    )
    assert "needs the lossy converter(s) float_to_int (float -> int, lossy" in problem
    assert (
        "WorkflowBuilder(allow_lossy=True)" in problem
        and "connect(..., allow_lossy=True)" in problem
    )
    allowed = WorkflowBuilder(allow_lossy=True).add_edge(sender("a", float), sink("b", int))
    assert "convert:float->int:float_to_int" in ids(allowed.set_start("a").build())


def test_connect_allows_lossy_on_one_edge(register: Any) -> None:
    register(FLOAT_TO_INT)
    builder = WorkflowBuilder().add_executor(sender("a", float)).add_executor(sink("b", int))
    builder.add_executor(sink("c", int)).add_fan_out("a", ["c"])
    builder.connect("a", "b", allow_lossy=True)
    with pytest.raises(WorkflowValidationError) as info:
        builder.set_start("a").build()
    assert [p.split(":")[0:2] for p in info.value.problems] == [["edge group 'fan_out", "a->c'"]]


def test_no_chain_names_both_types_the_edge_and_the_nearest_converters(register: Any) -> None:
    register(INT_TO_FLOAT, Converter(bytes, str, bytes.decode, False, "bytes_to_str"))
    with pytest.raises(WorkflowValidationError) as info:
        WorkflowBuilder().add_edge(sender("a", int), sink("b", str)).set_start("a").build()
    (problem,) = info.value.problems
    assert problem.startswith(
        "edge group 'direct:a->b': 'b' cannot handle int from 'a' (it accepts: str)"
    )
    assert "no converter chain from int to str; nearest converters: " in problem
    assert (
        "bytes_to_str (bytes -> str, lossy" in problem and "int_to_float (int -> float" in problem
    )


def test_no_converters_at_all_says_what_to_install(register: Any) -> None:
    with pytest.raises(WorkflowValidationError, match=r"none installed \(pip install plait-conv"):
        WorkflowBuilder().add_edge(sender("a", int), sink("b", str)).set_start("a").build()


def test_the_search_chains_whatever_converters_are_registered(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    # the search is plait-converters' own function, not a registered plugin: registered
    # converters are all a chain needs
    register_plugin(plait_routing, "routing")
    register_plugin(Converters(INT_TO_FLOAT, FLOAT_TO_STR))
    builder = WorkflowBuilder().add_edge(sender("a", int), sink("b", str)).set_start("a")
    assert ids(builder.build()) == ["a", "b", A_F, F_S]
    # edges whose types fit need no search
    fits = WorkflowBuilder().add_edge(sender("a", int), sink("b", int)).set_start("a")
    assert fits.build().executors.keys() == {"a", "b"}


def test_with_auto_convert_off_the_error_names_the_chain_that_would_do(register: Any) -> None:
    register(INT_TO_FLOAT, FLOAT_TO_STR)
    builder = WorkflowBuilder(auto_convert=False).add_edge(sender("a", int), sink("b", str))
    with pytest.raises(
        WorkflowValidationError,
        match=r"could bridge it \(int_to_float -> float_to_str\) with auto_convert=True",
    ):
        builder.set_start("a").build()


# --------------------------------------------------------------------------- run-time checks


async def test_a_union_source_passes_what_fits_and_converts_the_rest(register: Any) -> None:
    register(INT_TO_FLOAT)
    wf = WorkflowBuilder().add_edge(sender("a", int | float), sink("b", float)).set_start("a")
    built = wf.build()
    node = built.executors[A_F]
    assert isinstance(node, ConverterExecutor) and node.passthrough == (float,)
    assert built.spec.node(A_F).input_types == ("float", "int")
    assert (await built.run(2)).outputs == [2.0]
    assert (await built.run(2.5)).outputs == [2.5]


def test_an_any_source_is_left_to_the_run_time_check(register: Any) -> None:
    register(INT_TO_FLOAT)
    wf = WorkflowBuilder().add_edge(sender("a", Any), sink("b", float)).set_start("a").build()
    assert ids(wf) == ["a", "b"]


async def test_proven_edges_cost_no_run_time_type_check(
    register: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(JOIN)
    calls: list[Any] = []
    module = importlib.import_module("plait._executor")  # plait.executor is the decorator
    original = module.is_instance

    def counting(value: Any, tp: Any) -> bool:
        calls.append(tp)
        return original(value, tp)

    monkeypatch.setattr(module, "is_instance", counting)

    @executor(id="a")
    async def pair(n: int, ctx: WorkflowContext[list[int]]) -> None:
        await ctx.send_message([n, n])

    wf = WorkflowBuilder(allow_lossy=True).add_edge(pair, sink("b", str)).set_start("a").build()
    assert (await wf.run(1)).outputs == ["1,1"]
    assert calls == []  # the converter node took the list unchecked


async def test_a_failing_converter_names_the_node_and_the_value_type(register: Any) -> None:
    register(Converter(int, float, _fail, True, "broken"))
    wf = WorkflowBuilder().add_edge(sender("a", int), sink("b", float)).set_start("a").build()
    with pytest.raises(ConverterError) as info:
        await wf.run(1)
    assert info.value.executor_id == "convert:int->float:broken"
    assert "on a value of type int" in str(info.value) and "ValueError: no" in str(info.value)


async def test_async_converters_and_cloned_nodes_work(register: Any) -> None:
    async def widen(value: int) -> float:
        return value * 1.0

    register(Converter(int, float, widen, True, "widen"))
    wf = WorkflowBuilder().add_edge(sender("a", int), sink("b", float)).set_start("a").build()
    assert (await wf.run(3)).outputs == [3.0]
    node = wf.executors["convert:int->float:widen"]
    clone = copy.copy(node)
    clone.id = "other"
    assert clone.handlers[0].call.__self__ is clone  # type: ignore[attr-defined]
    assert node.config == {
        "converter": "widen",
        "source": "int",
        "target": "float",
        "lossless": True,
        "distribution": "(in-process)",
    }


# --------------------------------------------------------------------------- imports


def test_only_a_build_that_needs_a_conversion_imports_the_search() -> None:
    import subprocess
    import sys

    code = """if True:
        import sys
        from plait import WorkflowContext, executor
        from plait_builders import WorkflowBuilder

        @executor(id="a")
        async def a(x: int, ctx: WorkflowContext[int]) -> None: ...

        @executor(id="b")
        async def b(x: int, ctx: WorkflowContext[float]) -> None: ...

        @executor(id="c")
        async def c(x: float, ctx: WorkflowContext) -> None: ...

        WorkflowBuilder().add_edge(a, b).set_start(a).build()
        print("plait_converters._graph" in sys.modules)
        WorkflowBuilder().add_edge(a, c).set_start(a).build()  # int -> float: int_to_float
        print("plait_converters._graph" in sys.modules)
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
