"""plait-testing itself: opt-in fixtures, the two-backend module, no effect on other projects."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import textwrap
import types
from importlib import metadata
from pathlib import Path

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
    trios = [r for r in requirements if r.name == "trio"]
    assert trios, "plait-testing[trio] brings trio"
    for trio in trios:  # the trio extra, and the schedules one (the contract runs on trio)
        assert trio.marker is not None and not trio.marker.evaluate({"extra": ""})
    assert any(t.marker.evaluate({"extra": "trio"}) for t in trios if t.marker is not None)


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
        "plait_postgres_url",
        "plait_redis_url",
        "plait_register_plugin",
        "plait_replay",
        "plait_store_url",
    ]
    assert not any(fixture._fixture_function_marker.autouse for fixture in fixtures.values())
    # options (--plait-record, --plait-live) and markers (plait_replay, plait_live): the
    # one collection hook deselects only a test marked plait_live(only=True) without
    # --plait-live; nothing else changes what is collected or how it is reported
    hooks = sorted(name for name in vars(plait_testing.plugin) if name.startswith("pytest_"))
    assert hooks == ["pytest_addoption", "pytest_collection_modifyitems", "pytest_configure"]


def test_the_store_url_fixture_gives_each_store_a_test_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        seen = []

        def test_store(plait_store_url, tmp_path):
            seen.append(plait_store_url)
            assert plait_store_url == f"sqlite:///{tmp_path / 'runs.db'}"

        def test_again(plait_store_url):
            assert plait_store_url.startswith("sqlite:///") and plait_store_url not in seen
        """
    )
    # the servers start only for the tests that reach them: the SQLite ones need none
    result = pytester.runpytest_inprocess("-v", "-p", "no:randomly", "-k", "sqlite")
    result.assert_outcomes(passed=2, deselected=4)
    result.stdout.fnmatch_lines(["*test_store?sqlite? PASSED*", "*test_again?sqlite? PASSED*"])
    collected = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:randomly")
    collected.stdout.fnmatch_lines(["*test_store?redis?", "*test_store?postgresql?"])


def test_loading_the_plugin_rewrites_no_asserts_and_imports_only_the_kernels_surface() -> None:
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
        # the lazy-export helper, and nothing else of the kernel (attrs is not imported)
        kernel = sorted(m for m in sys.modules if m == "plait" or m.startswith("plait."))
        assert kernel == ["plait", "plait._exports", "plait.spi"], kernel
        assert "attrs" not in sys.modules
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> types.ModuleType:
    """A package ``lazypkg`` with a submodule ``_impl`` (``A``, ``B``) and ``body`` as its
    ``__init__``."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "_impl.py").write_text("class A: ...\nclass B: ...\n")
    (root / "__init__.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("lazypkg", "lazypkg._impl"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module("lazypkg")


#: A package with a hand-written lazy ``__getattr__`` (``check_exports`` checks any).
LAZY = """
    import importlib
    from typing import TYPE_CHECKING
    if TYPE_CHECKING:
        from ._impl import A as A{more}
    _HOME = {homes}
    __all__ = sorted(_HOME)
    def __getattr__(name):
        if name not in _HOME:
            raise AttributeError(name)
        return getattr(importlib.import_module(f"{{__name__}}.{{_HOME[name]}}"), name)
"""


def test_check_exports_passes_for_the_kernel_helper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_testing.exports import check_exports

    body = """
        from typing import TYPE_CHECKING
        from plait.spi import lazy_exports
        if TYPE_CHECKING:
            from ._impl import A as A, B as B
        def plait_register_x(register): ...
        if not TYPE_CHECKING:
            __getattr__, __dir__ = lazy_exports(__name__)
    """
    module = _package(tmp_path, monkeypatch, body)
    assert module.__all__ == ["A", "B", "plait_register_x"]
    check_exports(module, run_time_only={"plait_register_x"})


def test_check_exports_passes_when_both_lists_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_testing.exports import check_exports, declared_for_type_checkers

    module = _package(tmp_path, monkeypatch, LAZY.format(more="", homes='{"A": "_impl"}'))
    assert declared_for_type_checkers(module) == {"A": "lazypkg._impl"}
    check_exports(module)


@pytest.mark.parametrize(
    ("more", "homes", "message"),
    [
        ("", '{"A": "_impl", "B": "_impl"}', "not seen by type checkers: {'B'}"),
        (", B as B", '{"A": "_impl"}', "seen by type checkers but not in __all__: {'B'}"),
        # an import without ``as`` is for annotations: B is not re-exported
        (", B", '{"A": "_impl", "B": "_impl"}', "not seen by type checkers: {'B'}"),
    ],
)
def test_check_exports_names_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, more: str, homes: str, message: str
) -> None:
    from plait_testing.exports import check_exports

    module = _package(tmp_path, monkeypatch, LAZY.format(more=more, homes=homes))
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_exports(module)


def test_a_session_run_in_process_gives_back_the_plugin_manager_it_began_with(
    pytester: pytest.Pytester,
) -> None:
    # a session run inside this one forgets the modules it imported as it ends: a
    # process-wide manager it made would hold registries built from them (a later durable
    # run then found its options under a stale class, and no store)
    from plait.spi import set_plugin_manager

    pytester.makepyfile(
        """
        import types
        from plait import get_plugin_manager

        def test_makes_one(plait_register_plugin):
            plait_register_plugin(types.SimpleNamespace(), "visitor")
            get_plugin_manager().describe()
        """
    )
    began = set_plugin_manager(None)
    try:
        pytester.runpytest_inprocess("-p", "no:randomly").assert_outcomes(passed=1)
        left = set_plugin_manager(None)
    finally:
        set_plugin_manager(began)
    assert left is None
