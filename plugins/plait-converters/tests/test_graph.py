"""The converter graph: the cheapest-chain search, its rules, its cache, the records of a
chain, and ``plait_converters.find_chain`` over a plugin manager's converters."""

from __future__ import annotations

import itertools
from typing import Any, NewType

import attrs
from hypothesis import given, settings, strategies as st
from plait import hookimpl
from plait.spi import Converter, PluginManager
from plait_converters import (
    CattrsHooks,
    Chain,
    ConverterGraph,
    Step,
    TypeFamily,
    converter_graph,
    find_chain,
    is_assignable,
    nearest_converters,
)
from plait_testing import RegisterPlugin


def conv(source: Any, target: Any, name: str, *, lossless: bool = True, cost: float = 1) -> Any:
    return Converter(source, target, lambda v: v, lossless, name, cost)


def graph(*converters: Converter) -> ConverterGraph:
    return ConverterGraph((c.name, c, "(test)") for c in converters)


class Plugin:
    """An in-process plugin registering the converters it is given."""

    def __init__(self, *converters: Any) -> None:
        self.converters = converters

    @hookimpl
    def plait_register_converters(self, register: Any) -> None:
        for c in self.converters:
            if isinstance(c, Converter):
                register(c.name, c)

    @hookimpl
    def plait_register_type_hooks(self, register: Any) -> None:
        for c in self.converters:
            if isinstance(c, CattrsHooks):
                register(f"hooks:{c.type.__name__}", c)


# --------------------------------------------------------------------------- the search


def test_a_chain_int_float_str_is_found() -> None:
    chain = graph(conv(int, float, "int_to_float"), conv(float, str, "float_to_str")).find_chain(
        int, str
    )
    assert chain is not None
    assert [s.name for s in chain.steps] == ["int_to_float", "float_to_str"]
    assert [s.node_id for s in chain.steps] == [
        "convert:int->float:int_to_float",
        "convert:float->str:float_to_str",
    ]
    assert chain.cost == 2 and chain.lossless and str(chain) == "int_to_float -> float_to_str"


def test_a_type_that_fits_needs_an_empty_chain_and_no_fit_gives_none() -> None:
    g = graph(conv(int, float, "int_to_float"))
    empty = g.find_chain(bool, int)
    assert empty is not None and empty.steps == ()
    # the cached answer equals one a fresh graph computes, not only itself
    assert g.find_chain(bool, int) == graph(conv(int, float, "int_to_float")).find_chain(bool, int)
    assert g.find_chain(str, bytes) is None


def names(g: ConverterGraph, source: Any, target: Any, *, allow_lossy: bool = False) -> Any:
    chain = g.find_chain(source, target, allow_lossy=allow_lossy)
    return None if chain is None else [s.name for s in chain.steps]


def test_the_cheapest_chain_wins() -> None:
    two_steps = (conv(int, float, "a"), conv(float, str, "b"))
    assert names(graph(*two_steps, conv(int, str, "direct", cost=3)), int, str) == ["a", "b"]
    assert names(graph(*two_steps, conv(int, str, "direct")), int, str) == ["direct"]


def test_equal_cost_chains_are_broken_by_the_names_along_them() -> None:
    converters = [
        conv(int, bytes, "m_int_bytes"),
        conv(bytes, str, "z_bytes_str"),
        conv(int, float, "m_int_float"),
        conv(float, str, "a_float_str"),
    ]
    for order in itertools.permutations(converters):
        chain = graph(*order).find_chain(int, str)
        assert chain is not None
        # ("m_int_bytes", "z_bytes_str") < ("m_int_float", "a_float_str") by the first name
        assert [s.name for s in chain.steps] == ["m_int_bytes", "z_bytes_str"]


def test_lossy_converters_join_only_when_allowed() -> None:
    g = graph(conv(float, int, "float_to_int", lossless=False))
    assert g.find_chain(float, int) is None
    chain = g.find_chain(float, int, allow_lossy=True)
    assert chain is not None and [s.name for s in chain.lossy_steps] == ["float_to_int"]
    assert not chain.lossless


def test_a_lossless_detour_beats_a_cheaper_lossy_step_unless_lossy_is_allowed() -> None:
    g = graph(
        conv(float, int, "lossy", lossless=False),
        conv(float, str, "f_s", cost=2),
        conv(str, int, "s_i", cost=2),
    )
    assert names(g, float, int) == ["f_s", "s_i"]
    assert names(g, float, int, allow_lossy=True) == ["lossy"]


Json = NewType("Json", str)


def test_a_produced_newtype_counts_only_as_itself() -> None:
    g = graph(conv(list[Any], Json, "to_json"), conv(Json, dict[str, Any], "parse"))
    assert g.find_chain(list[int], str) is None  # Json is a str, but not for the search
    found = g.find_chain(list[int], Json)
    assert found is not None and [s.name for s in found.steps] == ["to_json"]
    found = g.find_chain(list[int], dict[str, Any])
    assert found is not None and [s.name for s in found.steps] == ["to_json", "parse"]
    assert g.find_chain(list[int], Json | None) is not None
    # a source that *declares* the NewType is a str like any other
    assert graph(conv(str, bytes, "enc")).find_chain(Json, bytes) is not None


@attrs.frozen
class Point:
    x: int
    y: int


@attrs.frozen
class Line:
    x: int
    y: int


def _is_attrs(tp: Any) -> bool:
    return attrs.has(tp)


RECORDS = TypeFamily("attrs class", _is_attrs)


def test_a_family_source_binds_to_the_value_type_and_a_family_target_to_the_goal() -> None:
    g = graph(
        Converter(RECORDS, dict[str, Any], attrs.asdict, True, "record_to_dict"),
        Converter(dict[str, Any], RECORDS, lambda d, cls: cls(**d), True, "dict_to_record"),
    )
    out = g.find_chain(Point, dict[str, Any])
    assert out is not None
    assert out.steps[0].node_id == f"convert:{__name__}.Point->dict[str, Any]:record_to_dict"
    back = g.find_chain(dict[str, int], (str, Point))
    assert back is not None and back.steps[0].target is Point
    assert back.steps[0].function()({"x": 1, "y": 2}) == Point(1, 2)
    assert g.find_chain(dict[str, int], int) is None  # int is not a record: never bound
    # one generic step per chain: a record never becomes another record through a dict
    assert g.find_chain(Point, Line) is None
    assert str(RECORDS) == "<attrs class>" and 1 not in RECORDS  # a choking predicate: False


def test_nearest_lists_converters_touching_either_end() -> None:
    g = graph(
        conv(int, float, "int_to_float"),
        conv(bytes, str, "bytes_to_str"),
        conv(list[int], set[int], "unrelated"),
    )
    assert [s.name for s in g.nearest(int, str)] == ["bytes_to_str", "int_to_float"]
    assert "bytes_to_str (bytes -> str, lossless, (test))" in map(str, g.nearest(int, str))


def test_searches_are_cached_per_registry_version(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(Plugin(conv(int, float, "int_to_float")), "one")
    g = converter_graph(plait_plugin_manager)
    assert converter_graph(plait_plugin_manager) is g
    first = g.find_chain(int, float)
    assert first is not None and g.find_chain(int, float) is first
    register_plugin(Plugin(conv(float, str, "float_to_str")), "two")
    again = converter_graph(plait_plugin_manager)
    assert again is not g and again.find_chain(int, str) is not None


def test_two_converters_for_one_pair_are_both_kept_and_the_cheaper_wins(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    register_plugin(Plugin(conv(int, str, "a_pricey", cost=5), conv(int, str, "b_cheap")))
    assert plait_plugin_manager.registry("converter").names() == ["a_pricey", "b_cheap"]
    chain = converter_graph(plait_plugin_manager).find_chain(int, str)
    assert chain is not None and [s.name for s in chain.steps] == ["b_cheap"]


# --------------------------------------------------------------------------- find_chain


def test_find_chain_searches_the_plugin_managers_converters(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    assert find_chain(int, str) is None  # nothing registered: no chain, and no error
    register_plugin(Plugin(conv(int, float, "int_to_float"), conv(float, str, "float_to_str")))
    chain = find_chain(int, str)
    assert chain is not None and str(chain) == "int_to_float -> float_to_str"
    assert chain == converter_graph().find_chain(int, str)
    assert find_chain(int, (bytes, str), manager=plait_plugin_manager) == chain
    assert [s.name for s in nearest_converters(int, bytes)] == ["int_to_float"]


def test_registering_the_plugin_does_not_import_the_search() -> None:
    import subprocess
    import sys

    code = (
        "import sys, plait, plait_converters; "
        "plait.get_plugin_manager().registry('converter'); "
        "print(sorted(m for m in sys.modules if m.startswith('plait_converters.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --------------------------------------------------------------------------- the records


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


def test_cattrs_hooks_are_not_edges_of_the_graph(
    plait_plugin_manager: PluginManager, register_plugin: RegisterPlugin
) -> None:
    hooks = CattrsHooks(complex, lambda data, _: complex(data), str)
    register_plugin(Plugin(hooks, conv(int, float, "int_to_float")))
    assert [e.name for e in converter_graph(plait_plugin_manager).edges] == ["int_to_float"]


# --------------------------------------------------------------------------- properties

_TYPES = [int, float, str, bytes, bool, list[int], dict[str, int]]
_edges = st.lists(
    st.tuples(
        st.sampled_from(_TYPES),
        st.sampled_from(_TYPES),
        st.integers(1, 4),
        st.booleans(),
    ),
    max_size=10,
)


def _brute_force(converters: list[Converter], source: Any, target: Any, lossy: bool) -> Any:
    """The best (cost, names) over every simple path, by enumeration."""
    best = None
    usable = [c for c in converters if lossy or c.lossless]

    def walk(tp: Any, seen: set[Any], cost: float, names: tuple[str, ...]) -> None:
        nonlocal best
        if is_assignable(tp, target):
            if best is None or (cost, names) < best:
                best = (cost, names)
            return
        for c in usable:
            if is_assignable(tp, c.source) and c.target not in seen:
                walk(c.target, seen | {c.target}, cost + c.cost, (*names, c.name))

    walk(source, {source}, 0, ())
    return best


@settings(max_examples=150, deadline=None)
@given(_edges, st.sampled_from(_TYPES), st.sampled_from(_TYPES), st.booleans(), st.randoms())
def test_the_search_finds_the_cheapest_chain_in_any_registration_order(
    edges: list[tuple[Any, Any, int, bool]], source: Any, target: Any, lossy: bool, rnd: Any
) -> None:
    converters = [conv(s, t, f"c{i}", lossless=ok, cost=c) for i, (s, t, c, ok) in enumerate(edges)]
    shuffled = list(converters)
    rnd.shuffle(shuffled)
    chain = graph(*converters).find_chain(source, target, allow_lossy=lossy)
    assert chain == graph(*shuffled).find_chain(source, target, allow_lossy=lossy)
    expected = _brute_force(converters, source, target, lossy)
    if expected is None:
        assert chain is None
        return
    assert chain is not None
    assert (chain.cost, tuple(s.name for s in chain.steps)) == expected
    current = source
    for step in chain.steps:  # every step takes what the one before it made
        assert is_assignable(current, step.source)
        assert lossy or step.lossless
        current = step.target
    assert is_assignable(current, target)
