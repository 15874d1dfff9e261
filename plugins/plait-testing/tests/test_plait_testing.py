"""plait-testing itself: opt-in fixtures, the two-backend module, no effect on other projects."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib import metadata

import plait_testing.plugin
import pytest
from packaging.requirements import Requirement

pytest_plugins = ["pytester"]


def test_register_plugin_unregisters_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import types
        from plait import get_plugin_manager

        def test_register(plait_register_plugin, plait_plugin_manager):
            plait_register_plugin(types.SimpleNamespace(), "visitor")
            assert [i.name for i in get_plugin_manager().describe()] == ["visitor"]

        def test_process_wide_manager_is_untouched(plait_register_plugin):
            plait_register_plugin(types.SimpleNamespace(), "visitor")

        def test_gone():
            assert "visitor" not in [i.name for i in get_plugin_manager().describe()]
        """
    )
    pytester.runpytest_inprocess("-p", "no:randomly").assert_outcomes(passed=3)


ANYIO_TEST = """
    import pytest, sniffio

    @pytest.mark.anyio
    async def test_backend(anyio_backend):
        assert sniffio.current_async_library() == anyio_backend
"""


def test_installing_plait_testing_leaves_anyio_backend_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ANYIO_TEST)
    # in subprocesses: this session's own opt-in must not leak into the inner ones
    with_plugin = pytester.runpytest_subprocess("--collect-only", "-q")
    without_plugin = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:plait")
    ids = [line for line in with_plugin.outlines if "::" in line]
    assert ids and ids == [line for line in without_plugin.outlines if "::" in line]


def test_trio_comes_only_with_the_trio_extra() -> None:
    # anyio (>= 4.12) runs every anyio test on each backend it can import: a hard trio
    # requirement would change the test suites of every project installed beside us
    requirements = [Requirement(r) for r in metadata.requires("plait-testing") or []]
    (trio,) = [r for r in requirements if r.name == "trio"]
    assert trio.marker is not None
    assert trio.marker.evaluate({"extra": "trio"}) and not trio.marker.evaluate({"extra": ""})


def test_the_backends_module_runs_each_anyio_test_on_both(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["plait_testing.backends"]')
    pytester.makepyfile(ANYIO_TEST)
    result = pytester.runpytest_inprocess("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_backend?asyncio? PASSED*", "*test_backend?trio? PASSED*"])


def test_the_backend_fixture_can_be_re_exported(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from plait_testing.backends import anyio_backend  # noqa: F401")
    pytester.makepyfile(ANYIO_TEST)
    pytester.runpytest_inprocess("-p", "no:randomly").assert_outcomes(passed=2)


def test_plait_core_registers_no_pytest_plugin() -> None:
    core = metadata.distribution("plait-core")
    assert [ep for ep in core.entry_points if ep.group == "pytest11"] == []
    ours = metadata.distribution("plait-testing")
    assert [(ep.name, ep.value) for ep in ours.entry_points if ep.group == "pytest11"] == [
        ("plait", "plait_testing.plugin")
    ]


def test_the_pytest_plugin_holds_only_prefixed_opt_in_fixtures() -> None:
    fixtures = {
        name: value
        for name, value in vars(plait_testing.plugin).items()
        if type(value).__name__ == "FixtureFunctionDefinition"
    }
    assert sorted(fixtures) == [
        "plait_hook_recorder",
        "plait_plugin_manager",
        "plait_register_plugin",
    ]
    assert not any(fixture._fixture_function_marker.autouse for fixture in fixtures.values())
    hooks = [name for name in vars(plait_testing.plugin) if name.startswith("pytest_")]
    assert hooks == []


def test_loading_the_plugin_rewrites_no_asserts_and_imports_nothing_of_plait() -> None:
    # what pytest does with the entry point in any project that has plait-testing installed
    code = textwrap.dedent(
        """
        import sys, pytest

        def refuse(*names):
            raise AssertionError(f"register_assert_rewrite{names}")

        pytest.register_assert_rewrite = refuse
        import plait_testing.plugin
        loaded = sorted(m for m in sys.modules if m.startswith("plait_testing"))
        assert loaded == ["plait_testing", "plait_testing.plugin"], loaded
        assert "plait" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)
