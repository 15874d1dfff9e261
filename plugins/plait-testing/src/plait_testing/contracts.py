"""Contract suites: the tests every router and every merge strategy must pass.

Subclass a contract under a ``Test…`` name in your plugin's tests and provide the
fixtures it asks for; pytest then runs every contract test against your implementation::

    import pytest
    from plait import EdgeGroupSpec
    from plait_testing.contracts import MergeStrategyContract, RouterContract

    class TestLongest(MergeStrategyContract):
        @pytest.fixture
        def merge_strategy(self):
            return Longest()

        @pytest.fixture
        def expected_merge(self):
            return lambda values, sources: max(values, key=len)

    class TestBroadcast(RouterContract):
        @pytest.fixture
        def router(self):
            return BroadcastRouter()

        @pytest.fixture
        def edge_group(self):
            return EdgeGroupSpec("broadcast:a->b,c", "broadcast", ("a",), ("b", "c"))

The contracts check the protocols :class:`plait.spi.Router` and
:class:`plait.spi.MergeStrategy`, not a particular behaviour: write your own tests for what
your plugin does beyond them.
"""

from __future__ import annotations

import copy
import itertools
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from plait import EdgeGroupSpec, get_plugin_manager
from plait.spi import (
    KINDS,
    BuildContext,
    Delivery,
    EdgeRunner,
    MergeStrategy,
    Router,
    RouterEnv,
    is_instance,
)

__all__ = ["ConverterContract", "MergeStrategyContract", "BuildContext", "RouterContract"]

#: A target id no edge group declares.
NOWHERE = "__plait_contract_nowhere__"


def _identity(value: Any) -> Any:
    return value


def _json_round_trip(data: Any) -> Any:
    return json.loads(json.dumps(data))


class RouterContract:
    """The contract of a :class:`~plait.spi.Router` and the edge runners it creates.

    Provide:

    ``router``
        the router object, as your plugin registers it.
    ``edge_group``
        an :class:`~plait.EdgeGroupSpec` suited to it (right number of sources and
        targets, the options it needs).

    Optionally override:

    ``router_params``
        the callables ``create()`` receives (conditions, selections, predicates);
        default ``{}``.
    ``router_env``
        what the router may look up (merge strategies …); default: the process-wide
        plugin manager's registries. :class:`~plait_testing.StaticRouterEnv` holds fixed
        objects.
    ``messages``
        JSON-ready messages to route; default a string, an int, a dict and a list.
    """

    @pytest.fixture
    def router(self) -> Any:
        """The router under test (override)."""
        pytest.fail(f"{type(self).__name__} must provide a 'router' fixture")

    @pytest.fixture
    def edge_group(self) -> EdgeGroupSpec:
        """An edge group the router can drive (override)."""
        pytest.fail(f"{type(self).__name__} must provide an 'edge_group' fixture")

    @pytest.fixture
    def router_params(self) -> Mapping[str, Any]:
        """Callables for ``create()``."""
        return {}

    @pytest.fixture
    def router_env(self) -> RouterEnv:
        """Lookups for ``create()``."""
        return BuildContext(manager=get_plugin_manager())

    @pytest.fixture
    def messages(self) -> list[Any]:
        """Messages to route, JSON-ready so router state holding them can be snapshot."""
        return ["hello", 42, {"key": "value"}, ["a", 1]]

    @pytest.fixture
    def edge_runner(
        self,
        router: Any,
        edge_group: EdgeGroupSpec,
        router_params: Mapping[str, Any],
        router_env: RouterEnv,
    ) -> Any:
        """The edge runner ``router.create()`` builds for ``edge_group``."""
        return router.create(edge_group, router_params, router_env)

    # -- helpers -----------------------------------------------------------------------

    @staticmethod
    def feed(runner: Any, state: Any, messages: Sequence[Any]) -> list[Delivery]:
        """Route every message from every source, in rounds; return all deliveries."""
        out: list[Delivery] = []
        for message in messages:
            for source in runner.group.sources:
                out.extend(runner.route(source, message, None, state))
        return out

    @staticmethod
    def check_deliveries(deliveries: Any, group: EdgeGroupSpec) -> None:
        """Assert ``deliveries`` is a list of ``(target, message)`` tuples into ``group``."""
        assert isinstance(deliveries, list), f"route/flush must return a list, got {deliveries!r}"
        for delivery in deliveries:
            assert isinstance(delivery, tuple) and len(delivery) == 2, (
                f"a delivery is a (target, message) tuple, got {delivery!r}"
            )
            assert delivery[0] in group.targets, (
                f"delivery to {delivery[0]!r}, which is not a target of {group.id!r} "
                f"(targets: {', '.join(group.targets)})"
            )

    # -- the contract ------------------------------------------------------------------

    def test_router_fits_the_protocol(self, router: Any) -> None:
        """A router has ``stateful`` and ``create`` and passes the registry's check."""
        assert isinstance(router, Router)
        assert isinstance(router.stateful, bool)
        _kind, check = KINDS["plait_register_routers"]
        assert check(router) is None

    def test_create_returns_an_edge_runner(
        self, router: Any, edge_runner: Any, edge_group: EdgeGroupSpec
    ) -> None:
        """``create()`` returns an edge runner for exactly this group."""
        assert isinstance(edge_runner, EdgeRunner)
        assert edge_runner.group == edge_group
        assert isinstance(edge_runner.stateful, bool)
        assert isinstance(edge_runner.needs_flush, bool)
        assert edge_runner.passthrough is None or isinstance(edge_runner.passthrough, str)
        if not router.stateful:
            assert not edge_runner.stateful, "a stateless router created a stateful runner"

    def test_stateless_runners_start_with_no_state(self, edge_runner: Any) -> None:
        """A stateless runner's state is ``None``; a stateful one's is real and fresh per run."""
        first, second = edge_runner.initial_state(), edge_runner.initial_state()
        if not edge_runner.stateful:
            assert first is None and second is None
        else:
            assert first is not None, "a stateful runner's initial_state() must not be None"
            assert first is not second, "two runs must not share state"

    def test_routes_only_to_group_targets(self, edge_runner: Any, messages: list[Any]) -> None:
        """Every delivery is a ``(target, message)`` tuple whose target is in the group."""
        state = edge_runner.initial_state()
        self.check_deliveries(self.feed(edge_runner, state, messages), edge_runner.group)
        for still_sending in (True, False):
            flushed = edge_runner.flush(state, lambda _source, s=still_sending: s)
            self.check_deliveries(flushed, edge_runner.group)

    def test_explicit_target_outside_the_group_delivers_nothing(
        self, edge_runner: Any, messages: list[Any]
    ) -> None:
        """A message sent to an executor this group does not reach goes nowhere through it."""
        state = edge_runner.initial_state()
        for message in messages:
            for source in edge_runner.group.sources:
                assert edge_runner.route(source, message, NOWHERE, state) == []

    def test_explicit_target_inside_the_group_is_honoured(
        self, edge_runner: Any, messages: list[Any]
    ) -> None:
        """A message sent to one target of the group reaches that target or nothing."""
        for target in edge_runner.group.targets:
            state = edge_runner.initial_state()
            for message in messages:
                for source in edge_runner.group.sources:
                    deliveries = edge_runner.route(source, message, target, state)
                    self.check_deliveries(deliveries, edge_runner.group)
                    assert {t for t, _ in deliveries} <= {target}

    def test_a_passthrough_target_gets_every_message_as_it_is(
        self, edge_runner: Any, messages: list[Any]
    ) -> None:
        """A runner naming a ``passthrough`` target (the kernel then delivers without
        calling ``route``) has one source, and routes every message from it to that target,
        the message itself, whether the sender names the target or none."""
        through = edge_runner.passthrough
        if through is None:
            return
        group = edge_runner.group
        assert through in group.targets, f"passthrough {through!r} is not a target of {group.id!r}"
        assert len(group.sources) == 1, f"a passthrough group has one source, not {group.sources}"
        state = edge_runner.initial_state()
        for message in messages:
            for target in (None, through):
                deliveries = edge_runner.route(group.sources[0], message, target, state)
                assert len(deliveries) == 1 and deliveries[0][0] == through, (
                    f"passthrough {through!r}, but route() delivered {deliveries!r}"
                )
                assert deliveries[0][1] is message, "passthrough delivers the message itself"

    def test_nothing_buffered_means_nothing_flushed(self, edge_runner: Any) -> None:
        """``flush`` on a fresh state delivers nothing."""
        state = edge_runner.initial_state()
        assert edge_runner.flush(state, lambda _source: False) == []

    def test_routing_is_deterministic(self, edge_runner: Any, messages: list[Any]) -> None:
        """The same messages on two fresh states give the same deliveries."""
        first = self.feed(edge_runner, edge_runner.initial_state(), messages)
        second = self.feed(edge_runner, edge_runner.initial_state(), messages)
        assert first == second

    def test_runs_are_isolated(self, edge_runner: Any, messages: list[Any]) -> None:
        """Routing in one run's state leaves another run's state as it was."""
        busy, idle = edge_runner.initial_state(), edge_runner.initial_state()
        before = _json_round_trip(edge_runner.snapshot(idle, _identity))
        self.feed(edge_runner, busy, messages[:1])
        assert _json_round_trip(edge_runner.snapshot(idle, _identity)) == before

    def test_snapshot_restore_round_trips_through_json(
        self, edge_runner: Any, messages: list[Any]
    ) -> None:
        """``restore(json(snapshot(state)))`` behaves as ``state`` did."""
        state = edge_runner.initial_state()
        # leave the last source silent so a barrier still holds what arrived
        for message in messages:
            for source in edge_runner.group.sources[:-1] or edge_runner.group.sources:
                edge_runner.route(source, message, None, state)
        data = _json_round_trip(edge_runner.snapshot(state, _identity))
        restored = edge_runner.restore(data, _identity)
        assert _json_round_trip(edge_runner.snapshot(restored, _identity)) == data
        assert self.feed(edge_runner, restored, messages) == self.feed(edge_runner, state, messages)

    def test_message_types_are_keyed_by_targets(self, edge_runner: Any) -> None:
        """``message_types`` maps group targets to sequences of types."""
        for source_types in ([str], [str, int], []):
            types = edge_runner.message_types(source_types)
            assert isinstance(types, Mapping)
            assert set(types) <= set(edge_runner.group.targets)
            for value in types.values():
                assert isinstance(value, Sequence)
            if source_types:
                # an empty answer would leave every edge of the group unchecked at build time
                assert types, f"message_types({source_types!r}) names no target"
                assert all(types.values()), f"message_types({source_types!r}) gave {types!r}"


class MergeStrategyContract:
    """The contract of a :class:`~plait.spi.MergeStrategy`.

    Provide:

    ``merge_strategy``
        the strategy object, as your plugin registers it.

    Optionally override:

    ``merge_inputs``
        ``(values, sources)`` — three or more distinct values, one per source; default
        three strings from sources ``("a", "b", "c")``.
    ``merge_input_type``
        the type of each value (default ``str``), for ``output_type``.
    ``expected_merge``
        ``expected(values, sources) -> merged``, an oracle the contract checks every
        ordering of the inputs against (so order is kept as declared). Without one
        (``None``) the strategy must give the same result for every ordering.
    """

    @pytest.fixture
    def merge_strategy(self) -> Any:
        """The merge strategy under test (override)."""
        pytest.fail(f"{type(self).__name__} must provide a 'merge_strategy' fixture")

    @pytest.fixture
    def merge_inputs(self) -> tuple[list[Any], tuple[str, ...]]:
        """One value per source, in source-declaration order."""
        return ["alpha", "beta", "gamma"], ("a", "b", "c")

    @pytest.fixture
    def merge_input_type(self) -> Any:
        """The type of each input value."""
        return str

    @pytest.fixture
    def expected_merge(self) -> Callable[[Sequence[Any], Sequence[str]], Any] | None:
        """An oracle for the merged value, or ``None`` for order-insensitive strategies."""
        return None

    # -- the contract ------------------------------------------------------------------

    def test_strategy_fits_the_protocol(self, merge_strategy: Any) -> None:
        """A strategy has ``merge`` and ``output_type`` and passes the registry's check."""
        assert isinstance(merge_strategy, MergeStrategy)
        _kind, check = KINDS["plait_register_merge_strategies"]
        assert check(merge_strategy) is None

    def test_merge_is_deterministic(
        self, merge_strategy: Any, merge_inputs: tuple[list[Any], tuple[str, ...]]
    ) -> None:
        """The same inputs merge to the same value, given as lists or as tuples."""
        values, sources = merge_inputs
        first = merge_strategy.merge(list(values), list(sources))
        assert merge_strategy.merge(tuple(values), tuple(sources)) == first
        assert merge_strategy.merge(list(values), list(sources)) == first

    def test_merge_leaves_its_inputs_alone(
        self, merge_strategy: Any, merge_inputs: tuple[list[Any], tuple[str, ...]]
    ) -> None:
        """Merging neither mutates the values nor the source list."""
        values, sources = merge_inputs
        values_copy, sources_copy = copy.deepcopy(list(values)), list(sources)
        given_values, given_sources = list(values), list(sources)
        merge_strategy.merge(given_values, given_sources)
        assert given_values == values_copy
        assert given_sources == sources_copy

    def test_merge_keeps_declaration_order(
        self,
        merge_strategy: Any,
        merge_inputs: tuple[list[Any], tuple[str, ...]],
        expected_merge: Callable[[Sequence[Any], Sequence[str]], Any] | None,
    ) -> None:
        """Every ordering merges as the oracle says (or, without one, all alike)."""
        values, sources = merge_inputs
        results = []
        for order in itertools.permutations(range(len(values))):
            ordered_values = [values[i] for i in order]
            ordered_sources = tuple(sources[i] for i in order)
            merged = merge_strategy.merge(ordered_values, ordered_sources)
            if expected_merge is not None:
                assert merged == expected_merge(ordered_values, ordered_sources), (
                    f"merging in order {ordered_sources}"
                )
            results.append(merged)
        if expected_merge is None:
            assert all(r == results[0] for r in results), (
                "without an expected_merge oracle the strategy must ignore order"
            )

    def test_merging_one_value_works(
        self,
        merge_strategy: Any,
        merge_inputs: tuple[list[Any], tuple[str, ...]],
        merge_input_type: Any,
        expected_merge: Callable[[Sequence[Any], Sequence[str]], Any] | None,
    ) -> None:
        """A fan-in with one source that arrived (``when="available"``) still merges."""
        values, sources = merge_inputs
        merged = merge_strategy.merge([values[0]], (sources[0],))
        if expected_merge is not None:
            assert merged == expected_merge([values[0]], (sources[0],))
        assert is_instance(merged, merge_strategy.output_type(merge_input_type))

    def test_output_type_is_a_type(self, merge_strategy: Any, merge_input_type: Any) -> None:
        """``output_type`` returns a class or a typing form, for the builder's checks."""
        out = merge_strategy.output_type(merge_input_type)
        assert isinstance(out, type) or typing.get_origin(out) is not None or out is Any, (
            f"output_type({merge_input_type!r}) returned {out!r}, not a type"
        )

    def test_merged_value_fits_output_type(
        self,
        merge_strategy: Any,
        merge_inputs: tuple[list[Any], tuple[str, ...]],
        merge_input_type: Any,
    ) -> None:
        """What ``merge`` returns is an instance of what ``output_type`` promises."""
        values, sources = merge_inputs
        merged = merge_strategy.merge(values, sources)
        out = merge_strategy.output_type(merge_input_type)
        assert is_instance(merged, out), f"{merged!r} does not fit output_type {out!r}"


def _apply(conv: Any, value: Any) -> Any:
    """Run a converter on ``value``, awaiting it (on a fresh loop) when it is async."""
    import inspect

    import anyio

    result = conv(value)
    if inspect.isawaitable(result):
        awaitable = result

        async def wait() -> Any:
            return await awaitable

        result = anyio.run(wait)
    return result


class ConverterContract:
    """The contract of a :class:`~plait.spi.Converter`; subclass it and provide fixtures:

    ``converter``
        The converter under test.
    ``converter_samples``
        Values of its source type (include edge cases).
    ``inverse``
        The converter back; required when the converter says ``lossless=True``, which means
        every sample round-trips through it. A converter that loses something on some sample
        must say ``lossless=False`` (it may then leave ``inverse`` out).
    """

    @pytest.fixture
    def converter(self) -> Any:
        """The converter under test (override)."""
        pytest.fail(f"{type(self).__name__} must provide a 'converter' fixture")

    @pytest.fixture
    def converter_samples(self) -> list[Any]:
        """Sample values of the converter's source type (override)."""
        pytest.fail(f"{type(self).__name__} must provide a 'converter_samples' fixture")

    @pytest.fixture
    def inverse(self) -> Any:
        """The converter back, when there is one (override)."""
        return None

    def test_converter_fits_the_protocol(self, converter: Any) -> None:
        for attribute in ("source", "target", "fn", "lossless", "name", "cost"):
            assert hasattr(converter, attribute), f"converter lacks {attribute}"
        assert isinstance(converter.lossless, bool)
        assert isinstance(converter.name, str) and converter.name
        assert converter.cost > 0

    def test_samples_fit_the_source_type(
        self, converter: Any, converter_samples: list[Any]
    ) -> None:
        assert converter_samples, "give at least one sample"
        if isinstance(converter.source, type) or typing.get_origin(converter.source):
            for sample in converter_samples:
                assert is_instance(sample, converter.source), sample

    def test_results_fit_the_target_type(
        self, converter: Any, converter_samples: list[Any]
    ) -> None:
        target = converter.target
        for sample in converter_samples:
            result = _apply(converter, sample)
            if isinstance(target, type) or typing.get_origin(target):
                assert is_instance(result, target), (sample, result)

    def test_conversion_is_deterministic(
        self, converter: Any, converter_samples: list[Any]
    ) -> None:
        for sample in converter_samples:
            assert _apply(converter, sample) == _apply(converter, sample)

    def test_conversion_leaves_its_input_alone(
        self, converter: Any, converter_samples: list[Any]
    ) -> None:
        for sample in converter_samples:
            before = copy.deepcopy(sample)
            _apply(converter, sample)
            assert sample == before

    def test_lossless_means_round_trip(
        self, converter: Any, converter_samples: list[Any], inverse: Any
    ) -> None:
        if inverse is None:
            assert not converter.lossless, (
                f"{converter.name} is marked lossless: give {type(self).__name__} an "
                "'inverse' fixture (the converter back) so the contract can check the round trip"
            )
            return
        lost = [s for s in converter_samples if _apply(inverse, _apply(converter, s)) != s]
        if converter.lossless:
            assert not lost, f"{converter.name} is marked lossless but loses {lost!r}"
