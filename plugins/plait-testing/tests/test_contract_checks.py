"""The contract suites fail an implementation that breaks them (run with pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

VIOLATIONS = """
import pytest
from plait.spi import Converter
from plait import EdgeGroupSpec
from plait_testing import ConverterContract, RouterContract

class Forgetful:
    '''Says it is stateful, but keeps its state nowhere; and types nothing.'''
    stateful = True
    needs_flush = False
    passthrough = None
    def __init__(self, group=None):
        self.group = group
    def create(self, group, params, env):
        return Forgetful(group)
    def route(self, source, message, target, state):
        if target not in (None, self.group.targets[0]):
            return []
        return [(self.group.targets[0], message)]
    def initial_state(self): return None
    def flush(self, state, can_still_send): return []
    def snapshot(self, state, encode): return None
    def restore(self, data, decode): return None
    def message_types(self, source_types): return {}

class TestForgetful(RouterContract):
    @pytest.fixture
    def router(self):
        return Forgetful()
    @pytest.fixture
    def edge_group(self):
        return EdgeGroupSpec("forgetful:a->b", "forgetful", ("a",), ("b",))

class EmptyTypes(Forgetful):
    stateful = False
    def create(self, group, params, env):
        return EmptyTypes(group)
    def message_types(self, source_types): return {"b": []}

class TestEmptyTypes(TestForgetful):
    @pytest.fixture
    def router(self):
        return EmptyTypes()

class TestLosslessWithoutInverse(ConverterContract):
    @pytest.fixture
    def converter(self):
        return Converter(int, str, str, lossless=True, name="int_to_str")
    @pytest.fixture
    def converter_samples(self):
        return [1, 2]
"""


def failed(result: pytest.RunResult) -> set[str]:
    return {
        line.split(" ")[1].split("::", 1)[1]
        for line in result.stdout.lines
        if line.startswith("FAILED ")
    }


def test_the_contracts_refuse_none_state_empty_types_and_unchecked_lossless(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(VIOLATIONS)
    result = pytester.runpytest_inprocess("-q", "-rf", "-p", "no:randomly")
    assert failed(result) == {
        "TestForgetful::test_stateless_runners_start_with_no_state",
        "TestForgetful::test_message_types_are_keyed_by_targets",
        "TestEmptyTypes::test_message_types_are_keyed_by_targets",
        "TestLosslessWithoutInverse::test_lossless_means_round_trip",
    }
    result.stdout.fnmatch_lines(["*initial_state() must not be None*"])
    result.stdout.fnmatch_lines(["*names no target*"])
    result.stdout.fnmatch_lines(["*int_to_str is marked lossless*'inverse' fixture*"])


NO_RUNS = """
import pytest
from plait_testing.stores import CheckpointStoreContract

class Unlisted:
    # a store written before run listings: it has no runs() (nor much else)
    async def aclose(self):
        pass

class TestUnlisted(CheckpointStoreContract):
    @pytest.fixture
    def anyio_backend(self):
        return "asyncio"
    @pytest.fixture
    async def store(self):
        yield Unlisted()
    async def corrupt(self, store, checkpoint_id): ...
    def reopen(self, store):
        return Unlisted()
"""


def test_the_store_contract_refuses_a_store_without_runs(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(NO_RUNS)
    selected = "test_runs_is_offered or test_is_a_checkpoint_store"
    result = pytester.runpytest_inprocess("-q", "-rf", "-p", "no:randomly", "-k", selected)
    assert failed(result) == {
        "TestUnlisted::test_runs_is_offered",
        "TestUnlisted::test_is_a_checkpoint_store",
    }
    result.stdout.fnmatch_lines(["*Unlisted has no runs(*, limit=None) method*"])


def test_every_store_suite_asks_reopen_of_one_shared_base() -> None:
    from plait_testing.conformance import CrashConformance, LeaseConformance
    from plait_testing.stores import CheckpointStoreContract, SameBacking

    suites = (CheckpointStoreContract, CrashConformance, LeaseConformance)
    assert {suite.reopen for suite in suites} == {SameBacking.reopen}

    class TestForgotReopen(CrashConformance, LeaseConformance):
        pass

    with pytest.raises(pytest.fail.Exception, match="TestForgotReopen must implement reopen"):
        TestForgotReopen().reopen(object())  # type: ignore[arg-type]
