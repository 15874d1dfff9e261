"""plait._convert: converter records, in-process registration, cattrs hooks, and the seam
to the converter search (the search itself is plait-converters')."""

from __future__ import annotations

from typing import Any

import attrs
import cattrs
import plait
import pytest
from plait import PlaitWarning, PluginConflictError, UnknownNameError, converter, hookimpl
from plait._convert import CattrsHooks
from plait.spi import (
    Chain,
    Converter,
    PluginManager,
    Registry,
    Step,
    TypeFamily,
    find_chain,
    message_converter,
    nearest_converters,
)
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


def test_a_step_names_its_node_and_binds_a_family_target() -> None:
    records = TypeFamily("attrs class", attrs.has)
    to_record = Converter(dict, records, lambda d, cls: cls(**d), True, "dict_to_record")
    step = Step("dict_to_record", to_record, dict, Point, True, 1, "plait-x", bound=True)
    assert step.node_id == f"convert:dict->{__name__}.Point:dict_to_record"
    assert step.function()({"x": 1, "y": 2}) == Point(1, 2)
    assert str(step) == f"dict_to_record (dict -> {__name__}.Point, lossless, plait-x)"
    lossy = Step("trunc", conv(float, int, "trunc", lossless=False), float, int, False, 1)
    chain = Chain(dict, (step, lossy), 2)
    assert str(chain) == "dict_to_record -> trunc" and not chain.lossless
    assert chain.lossy_steps == (lossy,) and str(Chain(int, ())) == "(no conversion)"


# --------------------------------------------------------------------------- the search's seam


class Search:
    """A converter search that answers one chain and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, ...]] = []

    def find_chain(
        self, converters: Registry[Any], source: Any, target: Any, *, allow_lossy: bool = False
    ) -> Chain | None:
        self.asked.append((converters.names(), source, target, allow_lossy))
        return Chain(source, ())

    def nearest(self, converters: Registry[Any], source: Any, target: Any) -> list[Step]:
        return []


class SearchPlugin:
    def __init__(self, search: Search) -> None:
        self.search = search

    @hookimpl
    def plait_register_converter_search(self, register: Any) -> None:
        register("chains", self.search)


class Catalog:
    """Says where the converter search comes from, as plait-catalog does."""

    @staticmethod
    @hookimpl
    def plait_provided_names() -> dict[str, dict[str, list[str]]]:
        return {"plait-converters": {"converter_search": ["chains"]}}


def test_find_chain_without_a_search_names_the_distribution_to_install(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    with pytest.raises(UnknownNameError) as info:
        find_chain(int, (str, bytes))
    assert str(info.value) == (
        "unknown converter search 'chains' (for converting int to str | bytes); installed: none"
    )
    register_plugin(Catalog(), "catalog")
    with pytest.raises(UnknownNameError) as info:
        find_chain(int, (str, bytes))
    assert str(info.value) == (
        "unknown converter search 'chains' (for converting int to str | bytes); installed: "
        "none — it comes with plait-converters (pip install plait-converters)"
    )
    with pytest.raises(UnknownNameError, match=r"\(for the label\).*plait-converters"):
        nearest_converters(int, str, what="the label")


def test_find_chain_asks_the_installed_search_with_the_converter_registry(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    search = Search()
    register_plugin(SearchPlugin(search), "search")
    register_plugin(Plugin(conv(int, float, "int_to_float")))
    assert find_chain(int, float, allow_lossy=True) == Chain(int, ())
    assert nearest_converters(int, float) == []
    assert search.asked == [(["int_to_float"], int, float, True)]


def test_a_search_must_fit_the_protocol(register_plugin: RegisterPlugin) -> None:
    class Half:
        @hookimpl
        def plait_register_converter_search(self, register: Any) -> None:
            register("chains", object())

    manager = make_plugin_manager(fake_entry_point("half", Half(), distribution="plait-half"))
    with pytest.raises(Exception, match="lacks find_chain, nearest"):
        manager.load_entrypoints()


def test_names_that_moved_to_plugins_say_where_they_went() -> None:
    import plait.spi

    with pytest.raises(ImportError, match=r"plait.spi.converter_graph moved to plait_converters"):
        from plait.spi import converter_graph  # noqa: F401
    with pytest.raises(ImportError, match=r"pip install plait-builders"):
        plait.spi.LossyConversion  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        plait.spi.nothing_here  # noqa: B018


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
