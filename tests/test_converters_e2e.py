"""Issue 3, end to end: converter chains inserted by the builder and run by the kernel.

Each test is one "behaviour that must hold" of the types-and-converters issue, with the
real routers, merge strategies and standard converters on a fresh plugin manager.
"""

from __future__ import annotations

from typing import Any

import plait_converters
import plait_export
import plait_merge
import plait_routing
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from plait import (
    ConverterError,
    CustomEvent,
    ExecutorInvoked,
    Never,
    PlaitWarning,
    PluginConflictError,
    UnhandledMessageError,
    WorkflowContext,
    WorkflowValidationError,
    executor,
    hookimpl,
)
from plait.spi import Converter, PluginManager
from plait_builders import LossyConversion, WorkflowBuilder
from plait_converters import JsonText, converter
from plait_testing import RegisterPlugin, fake_entry_point, make_plugin_manager

pytestmark = pytest.mark.anyio

STANDARD = (
    fake_entry_point("routing", plait_routing, distribution="plait-routing"),
    fake_entry_point("merge", plait_merge, distribution="plait-merge"),
    fake_entry_point("converters", plait_converters, distribution="plait-converters"),
    fake_entry_point("export", plait_export, distribution="plait-export"),
)


@pytest.fixture
def manager(plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin) -> PluginManager:
    """The process-wide manager for this test: routers, merges, the standard converters."""
    register_plugin(plait_routing, "routing")
    register_plugin(plait_merge, "merge")
    register_plugin(plait_converters, "converters")
    register_plugin(plait_export, "export")
    return plait_plugin_manager


class Extra:
    """An in-process plugin with extra converters."""

    def __init__(self, *converters: Converter) -> None:
        self.converters = converters

    @hookimpl
    def plait_register_converters(self, register: Any) -> None:
        for c in self.converters:
            register(c.name, c)


@executor(id="count")
async def count(n: int, ctx: WorkflowContext[int]) -> None:
    await ctx.send_message(n)


@executor(id="show")
async def show(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text)


def count_to_show(**options: Any) -> Any:
    return WorkflowBuilder(**options).add_edge(count, show).set_start(count).build()


def converter_ids(workflow: Any) -> list[str]:
    return [n.id for n in workflow.spec.nodes if n.id.startswith("convert:")]


# --------------------------------------------------------------------------- chains


async def test_int_feeding_str_gets_the_int_float_str_chain(manager: PluginManager) -> None:
    @converter(lossless=True)
    def float_to_str(value: float) -> str:
        return repr(value)

    workflow = count_to_show()
    assert converter_ids(workflow) == [
        "convert:int->float:int_to_float",
        "convert:float->str:float_to_str",
    ]
    result = await workflow.run(7, events="all")
    assert result.outputs == ["7.0"]
    invoked = [e.executor_id for e in result.events if isinstance(e, ExecutorInvoked)]
    assert invoked == ["count", *converter_ids(workflow), "show"]  # visible in events
    assert 'convert:int-#gt;float:int_to_float"}}:::converter' in workflow.to_mermaid()
    assert '"convert:float->str:float_to_str"' in workflow.spec.to_json(portable=False)


async def test_the_cheapest_chain_is_chosen(
    manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(
        Extra(
            Converter(float, str, repr, True, "float_to_str"),
            Converter(int, str, str, True, "int_to_str_slowly", cost=3),
        )
    )
    assert converter_ids(count_to_show())[-1] == "convert:float->str:float_to_str"
    register_plugin(Extra(Converter(int, str, str, True, "int_to_str")))
    assert converter_ids(count_to_show()) == ["convert:int->str:int_to_str"]
    assert (await count_to_show().run(7)).outputs == ["7"]


def test_equal_cost_alternatives_give_the_same_choice_on_every_build() -> None:
    alternatives = [
        Converter(float, str, repr, True, "float_to_str"),
        Converter(int, bytes, lambda n: str(n).encode(), True, "int_to_bytes"),
        Converter(bytes, str, bytes.decode, True, "bytes_to_text"),
    ]
    specs = []
    for order in (alternatives, alternatives[::-1]):
        manager = make_plugin_manager(*STANDARD)
        for i, conv in enumerate(order):
            manager.register(Extra(conv), f"extra-{i}")
        for _ in range(2):
            workflow = WorkflowBuilder(plugin_manager=manager).add_edge(count, show)
            specs.append(workflow.set_start(count).build().spec)
    assert all(spec == specs[0] for spec in specs)
    # both chains cost 2; ("int_to_bytes", ...) sorts before ("int_to_float", ...)
    assert [n.id for n in specs[0].nodes][2:] == [
        "convert:int->bytes:int_to_bytes",
        "convert:bytes->str:bytes_to_text",
    ]


# --------------------------------------------------------------------------- lossy


@executor(id="measure")
async def measure(n: int, ctx: WorkflowContext[float]) -> None:
    await ctx.send_message(n + 0.75)


@executor(id="tally")
async def tally(n: int, ctx: WorkflowContext[Never, int]) -> None:
    await ctx.yield_output(n)


async def test_a_lossy_only_path_needs_permission_and_reports_that_it_ran(
    manager: PluginManager,
) -> None:
    with pytest.raises(WorkflowValidationError) as info:
        WorkflowBuilder().add_edge(measure, tally).set_start(measure).build()
    message = str(info.value)
    assert "'tally' cannot handle float from 'measure' (it accepts: int)" in message
    assert "lossy converter(s) float_to_int" in message and "allow_lossy=True" in message

    workflow = WorkflowBuilder(allow_lossy=True).add_edge(measure, tally).set_start(measure).build()
    result = await workflow.run(1)
    assert result.outputs == [1]
    (event,) = [e for e in result.events if isinstance(e, CustomEvent)]
    assert event.executor_id == "convert:float->int:float_to_int"
    assert event.data == LossyConversion(
        node="convert:float->int:float_to_int",
        converter="float_to_int",
        source="float",
        target="int",
    )


async def test_lossless_chains_report_nothing(manager: PluginManager) -> None:
    @executor(id="wide")
    async def wide(x: float, ctx: WorkflowContext[Never, float]) -> None:
        await ctx.yield_output(x)

    result = await WorkflowBuilder().add_edge(count, wide).set_start(count).build().run(2)
    assert result.outputs == [2.0]
    assert not [e for e in result.events if isinstance(e, CustomEvent)]


# --------------------------------------------------------------------------- registration


def test_two_plugins_registering_one_converter_name_is_an_error_naming_both() -> None:
    clash = Extra(Converter(int, float, float, True, "int_to_float"))
    manager = make_plugin_manager(
        *STANDARD, fake_entry_point("numbers", clash, distribution="plait-numbers")
    )
    with pytest.warns(PlaitWarning, match="int_to_float"):
        manager.load_entrypoints()  # a clash never fails loading ...
    with pytest.raises(PluginConflictError) as info:
        manager.registry("converter").get("int_to_float")  # ... only the clashing name
    message = str(info.value)
    assert "converter 'int_to_float' is registered by both" in message
    assert "plait-converters" in message and "plait-numbers" in message
    assert "json_to_dict" in manager.registry("converter")  # every other name stays


def test_a_script_converter_clashing_with_an_installed_one_names_both(
    manager: PluginManager,
) -> None:
    with pytest.raises(Exception, match=r"plait-converters|\(in-process\)") as info:

        @converter(lossless=True)
        def int_to_float(value: int) -> float:
            return float(value)

    assert "registered by both" in str(info.value)
    assert "int_to_float" in manager.registry("converter")  # the installed one stays


async def test_two_converters_for_one_pair_are_kept_and_the_cheaper_wins(
    manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(
        Extra(
            Converter(int, str, lambda n: f"#{n}", True, "hash_number", cost=2),
            Converter(int, str, str, True, "plain_number", cost=1),
        )
    )
    registry = manager.registry("converter")
    assert "hash_number" in registry and "plain_number" in registry
    workflow = count_to_show()
    assert converter_ids(workflow) == ["convert:int->str:plain_number"]
    assert (await workflow.run(5)).outputs == ["5"]


# --------------------------------------------------------------------------- run-time failures


async def test_a_converter_raising_fails_the_run_naming_the_node_and_the_value_type(
    manager: PluginManager,
) -> None:
    @executor(id="reply")
    async def reply(n: int, ctx: WorkflowContext[JsonText]) -> None:
        await ctx.send_message(JsonText("[1, 2]"))

    @executor(id="fields")
    async def fields(data: dict[str, Any], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(",".join(data))

    workflow = WorkflowBuilder().add_edge(reply, fields).set_start(reply).build()
    result = await workflow.run(1, raise_on_failure=False)
    assert not result.ok and isinstance(result.error, ConverterError)
    assert result.error.executor_id == "convert:JsonText->dict[str, Any]:json_to_dict"
    message = str(result.error)
    assert "'convert:JsonText->dict[str, Any]:json_to_dict'" in message
    assert "on a value of type str" in message and "holds a list, not an object" in message


async def test_an_any_source_is_checked_when_its_value_arrives(manager: PluginManager) -> None:
    @executor(id="loose")
    async def loose(n: int, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(n)

    workflow = WorkflowBuilder().add_edge(loose, show).set_start(loose).build()
    assert converter_ids(workflow) == []
    with pytest.raises(
        UnhandledMessageError, match="'show' has no handler for a message of type int"
    ):
        await workflow.run(1)


# --------------------------------------------------------------------------- properties

_types = st.sampled_from(
    [
        int,
        float,
        str,
        bytes,
        bool,
        list[int],
        dict[str, int],
        JsonText,
        plait_converters.ChatMessage,
    ]
)
_MANAGER = make_plugin_manager(*STANDARD)


def _wire(source: Any, target: Any) -> Any:
    async def send(x: Any, ctx: WorkflowContext[Any]) -> None:
        await ctx.send_message(x)

    async def take(x: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(x)

    send.__annotations__.update(ctx=WorkflowContext[source])  # type: ignore[valid-type]
    take.__annotations__.update(x=target)
    builder = WorkflowBuilder(plugin_manager=_MANAGER)
    builder.add_edge(executor(send, id="a"), executor(take, id="b"))
    return builder.set_start("a").build()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_types, _types)
def test_a_type_fits_itself_and_any_union_holding_it_without_a_converter(x: Any, y: Any) -> None:
    assert converter_ids(_wire(x, x)) == []
    assert converter_ids(_wire(x, x | y)) == []


@settings(max_examples=40, deadline=None)
@given(st.text())
def test_text_survives_a_lossless_trip_through_bytes_and_a_chat_message(text: str) -> None:
    @executor(id="start")
    async def start(value: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(value)

    @executor(id="wire")
    async def wire(data: bytes, ctx: WorkflowContext[bytes]) -> None:
        await ctx.send_message(data)

    @executor(id="chat")
    async def chat(message: plait_converters.ChatMessage, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(message.content)

    # bytes -> ChatMessage: bytes_to_str (lossy) then str_to_chat_message (lossless)
    builder = WorkflowBuilder(plugin_manager=_MANAGER, allow_lossy=True)
    workflow = builder.add_edge(start, wire).add_edge(wire, chat).set_start(start).build()
    assert converter_ids(workflow) == [
        "convert:str->bytes:str_to_bytes",
        "convert:bytes->str:bytes_to_str",
        "convert:str->plait_converters.ChatMessage:str_to_chat_message",
    ]
    assert workflow.run_sync(text).outputs == [text]
