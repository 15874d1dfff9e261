"""plait._convert: converter records, in-process registration and cattrs hooks (chains of
converters, and the search that finds them, are plait-converters')."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import plait
import pytest
from plait import (
    PlaitWarning,
    PluginConflictError,
    RegistrationError,
    UnknownNameError,
    converter,
    hookimpl,
)
from plait._convert import CattrsHooks
from plait.spi import Converter, PluginManager, TypeFamily, message_converter
from plait_testing import RegisterPlugin, fake_entry_point, make_plugin_manager


def conv(source: Any, target: Any, name: str, *, lossless: bool = True, cost: float = 1) -> Any:
    return Converter(source, target, lambda v: v, lossless, name, cost)


class Plugin:
    """An in-process plugin registering the converters it is given."""

    def __init__(self, *converters: Any) -> None:
        self.converters = converters

    @hookimpl
    def plait_register_converters(self, register: Any) -> None:
        for c in self.converters:
            register(c.name if isinstance(c, Converter) else f"hooks:{c.type.__name__}", c)


# --------------------------------------------------------------------------- records


def test_converter_records_check_their_fields() -> None:
    with pytest.raises(ValueError, match="'cost' must be a positive number, got 0"):
        conv(int, float, "x", cost=0)
    with pytest.raises(TypeError, match="'name' must be a non-empty str"):
        conv(int, float, "")
    with pytest.raises(TypeError, match="'fn' must be callable"):
        Converter(int, float, "not a function", True, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'lossless'"):
        Converter(int, float, float, 1, "x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'source' must be a type or a TypeFamily, got None"):
        Converter(None, float, float, True, "x")


def test_a_converter_calls_its_function() -> None:
    assert Converter(int, float, float, True, "int_to_float")(2) == 2.0


@attrs.frozen
class Point:
    x: int
    y: int


def test_a_type_family_is_a_predicate_over_types() -> None:
    records = TypeFamily("attrs class", attrs.has)
    assert Point in records and int not in records
    assert 1 not in records  # a predicate that chokes on an odd hint does not match it
    assert str(records) == "<attrs class>"
    with pytest.raises(TypeError, match="'name' must be a non-empty str"):
        TypeFamily("", attrs.has)


def test_the_converter_search_hook_is_gone(plait_plugin_manager: PluginManager) -> None:
    # chains are plait-converters' own search now: the kernel has no seam for one
    class OldSearch:
        @hookimpl
        def plait_register_converter_search(self, register: Any) -> None:
            register("chains", object())

    with pytest.raises(RegistrationError, match="unknown hook 'plait_register_converter_search'"):
        plait.register(OldSearch(), "old-search")
    with pytest.raises(UnknownNameError, match="unknown registry kind 'converter_search'"):
        plait_plugin_manager.registry("converter_search")


# --------------------------------------------------------------------------- registration


def test_two_plugins_registering_one_converter_name_is_an_error_naming_both() -> None:
    manager = make_plugin_manager(
        fake_entry_point("first", Plugin(conv(int, float, "widen")), distribution="plait-a"),
        fake_entry_point("second", Plugin(conv(int, str, "widen")), distribution="plait-b"),
    )
    with pytest.warns(PlaitWarning, match="registered by both"):
        manager.load_entrypoints()
    with pytest.raises(PluginConflictError) as info:
        manager.registry("converter").get("widen")
    message = str(info.value)
    assert "converter 'widen' is registered by both" in message
    assert "plait-a (plugin 'first')" in message and "plait-b (plugin 'second')" in message


def test_the_converter_decorator_registers_in_process(plait_plugin_manager: PluginManager) -> None:
    @converter(lossless=True)
    def celsius_to_kelvin(value: int) -> float:
        return value + 273.15

    @converter(lossless=False, name="shout", cost=2)
    async def shout(value: str) -> bytes:
        return value.upper().encode()

    assert isinstance(celsius_to_kelvin, Converter)
    assert (celsius_to_kelvin.source, celsius_to_kelvin.target) == (int, float)
    assert celsius_to_kelvin(0) == 273.15
    registry = plait_plugin_manager.registry("converter")
    assert registry.names() == ["celsius_to_kelvin", "shout"]
    assert registry.entry("shout").plugin == "converter:shout"
    assert registry.get("shout").cost == 2 and not registry.get("shout").lossless

    @converter(lossless=True)  # the same function again (a re-run cell) replaces it
    def celsius_to_kelvin(value: int) -> float:
        return value + 273.0

    assert registry is not plait_plugin_manager.registry("converter")
    assert plait_plugin_manager.registry("converter").get("celsius_to_kelvin")(0) == 273.0


def test_the_converter_decorator_refuses_a_taken_name_and_missing_annotations(
    plait_plugin_manager: PluginManager,
) -> None:
    @converter(lossless=True, name="taken")
    def one(value: int) -> str:
        return str(value)

    with pytest.raises(PluginConflictError, match="converter 'taken' is already registered"):

        @converter(lossless=True, name="taken")
        def two(value: int) -> str:
            return str(value)

    with pytest.raises(TypeError, match=r"@converter needs .*bare annotated"):

        @converter(lossless=True)
        def bare(value):  # type: ignore[no-untyped-def]
            return value


# --------------------------------------------------------------------------- cattrs hooks


class Money:
    """A plugin's own type that cattrs does not know."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and other.cents == self.cents

    __hash__ = None  # type: ignore[assignment]


@attrs.frozen
class Invoice:
    total: Money
    lines: list[str]


def test_cattrs_hooks_register_like_converters_and_reach_the_message_converter(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    hooks = CattrsHooks(Money, lambda data, _: Money(int(data)), lambda m: str(m.cents))
    register_plugin(Plugin(hooks, conv(int, float, "int_to_float")))
    cattrs_converter = message_converter(plait_plugin_manager)
    data = cattrs_converter.unstructure(Invoice(Money(150), ["a"]))
    assert data == {"total": "150", "lines": ["a"]}
    assert cattrs_converter.structure(data, Invoice) == Invoice(Money(150), ["a"])
    assert message_converter(plait_plugin_manager) is cattrs_converter
    with pytest.raises(TypeError, match="needs a hook"):
        CattrsHooks(Money)


def test_register_type_hooks_teaches_the_message_converter_from_a_script(
    plait_plugin_manager: PluginManager,
) -> None:
    plait.register_type_hooks(Money, lambda m: m.cents, lambda data, _: Money(data))
    assert plait_plugin_manager.get_plugin(f"cattrs:{__name__}:Money") is not None
    assert message_converter().unstructure(Invoice(Money(7), [])) == {"total": 7, "lines": []}
    # registering again replaces the hooks, never a conflict
    plait.register_type_hooks(Money, lambda m: str(m.cents), lambda data, _: Money(int(data)))
    data = message_converter().unstructure(Invoice(Money(8), []))
    assert data == {"total": "8", "lines": []}
    assert message_converter().structure(data, Invoice) == Invoice(Money(8), [])


def test_the_message_converter_is_strict(plait_plugin_manager: PluginManager) -> None:
    with pytest.raises(cattrs.ClassValidationError) as info:
        message_converter().structure({"x": 1, "y": 2, "z": 3}, Point)
    assert any("extra fields" in m for m in cattrs.transform_error(info.value))
