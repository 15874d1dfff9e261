"""plait._convert: the converter record plugins register, and registering it (type families,
the decorator, cattrs hooks, chains of converters and the search that finds them are
plait-converters')."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import (
    PlaitWarning,
    PluginConflictError,
    RegistrationError,
    UnknownNameError,
    hookimpl,
)
from plait.spi import Converter, PluginManager
from plait_testing import fake_entry_point, make_plugin_manager


def conv(source: Any, target: Any, name: str, *, lossless: bool = True, cost: float = 1) -> Any:
    return Converter(source, target, lambda v: v, lossless, name, cost)


class Plugin:
    """An in-process plugin registering the converters it is given."""

    def __init__(self, *converters: Any) -> None:
        self.converters = converters

    @hookimpl
    def plait_register_converters(self, register: Any) -> None:
        for c in self.converters:
            register(c.name, c)


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
    with pytest.raises(TypeError, match="'source' must be a type or a type family, got None"):
        Converter(None, float, float, True, "x")


def test_a_converter_calls_its_function() -> None:
    assert Converter(int, float, float, True, "int_to_float")(2) == 2.0


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


def test_cattrs_hooks_are_not_converters() -> None:
    # they have a registry of their own (``plait_register_type_hooks``): as a converter,
    # an object with only ``type`` and hooks does not fit
    class Hooks:
        name = "complex"
        type = complex
        structure = unstructure = None

    with pytest.raises(plait.PluginLoadError, match="does not fit the converter protocol"):
        plait.register(Plugin(Hooks()), "hooks-as-converter")
