"""Defining converters and message types: type families, the ``converter`` decorator, and
Plait's message converter with the cattrs hooks plugins register for their own types
(``plait_register_type_hooks``)."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import pytest
from plait import PluginConflictError, hookimpl
from plait.spi import Converter, PluginManager
from plait_converters import (
    CattrsHooks,
    TypeFamily,
    converter,
    message_converter,
    register_type_hooks,
)
from plait_testing import RegisterPlugin


@attrs.frozen
class Point:
    x: int
    y: int


class Plugin:
    """An in-process plugin registering the cattrs hooks it is given."""

    def __init__(self, *hooks: CattrsHooks) -> None:
        self.hooks = hooks

    @hookimpl
    def plait_register_type_hooks(self, register: Any) -> None:
        for h in self.hooks:
            register(f"hooks:{h.type.__name__}", h)


def test_a_type_family_is_a_predicate_over_types() -> None:
    records = TypeFamily("attrs class", attrs.has)
    assert Point in records and int not in records
    assert 1 not in records  # a predicate that chokes on an odd hint does not match it
    assert str(records) == "<attrs class>"
    with pytest.raises(TypeError, match="'name' must be a non-empty str"):
        TypeFamily("", attrs.has)


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


def test_cattrs_hooks_reach_the_message_converter(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    hooks = CattrsHooks(Money, lambda data, _: Money(int(data)), lambda m: str(m.cents))
    register_plugin(Plugin(hooks))
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
    register_type_hooks(Money, lambda m: m.cents, lambda data, _: Money(data))
    assert plait_plugin_manager.get_plugin(f"cattrs:{__name__}:Money") is not None
    assert message_converter().unstructure(Invoice(Money(7), [])) == {"total": 7, "lines": []}
    # registering again replaces the hooks, never a conflict
    register_type_hooks(Money, lambda m: str(m.cents), lambda data, _: Money(int(data)))
    data = message_converter().unstructure(Invoice(Money(8), []))
    assert data == {"total": "8", "lines": []}
    assert message_converter().structure(data, Invoice) == Invoice(Money(8), [])


def test_the_message_converter_is_strict(plait_plugin_manager: PluginManager) -> None:
    with pytest.raises(cattrs.ClassValidationError) as info:
        message_converter().structure({"x": 1, "y": 2, "z": 3}, Point)
    assert any("extra fields" in m for m in cattrs.transform_error(info.value))
