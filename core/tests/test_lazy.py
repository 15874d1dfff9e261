"""plait._registry.lazy and plait.spi.lazy_exports: what a plugin registers, and what a
package exports, load on first use."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import plait
import pytest
from plait import RegistrationError
from plait._exports import reexports
from plait._registry import Lazy
from plait.spi import lazy
from plait_testing import fake_entry_point, make_plugin_manager


@pytest.fixture
def slow_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The name of a module on ``sys.path`` that nobody imported yet."""
    (tmp_path / "plait_slow_impl.py").write_text(
        "class Longest:\n"
        "    def merge(self, values, sources):\n"
        "        return max(values, key=len)\n"
        "\n"
        "    def output_type(self, input_type):\n"
        "        return input_type\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plait_slow_impl", raising=False)
    return "plait_slow_impl"


def test_registering_imports_nothing_until_first_use(slow_module: str) -> None:
    plugin = types.ModuleType("plait_slow")

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        register("longest", lazy("plait_slow_impl:Longest", provides=("merge", "output_type")))

    plugin.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(fake_entry_point("slow", plugin))
    strategy = manager.registry("merge_strategy").get("longest")
    assert isinstance(strategy, Lazy)
    assert slow_module not in sys.modules
    assert strategy.merge(["a", "abc", "ab"], ["x", "y", "z"]) == "abc"
    assert slow_module in sys.modules
    assert "loaded" in repr(strategy)


def test_a_lazy_object_is_checked_against_what_it_declares() -> None:
    plugin = types.ModuleType("plait_half")

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        register("half", lazy("nowhere:Half", provides=("merge",)))

    plugin.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(fake_entry_point("half", plugin))
    (info,) = manager.describe()
    assert info.status == "failed" and "lacks output_type" in str(info.error)
    assert RegistrationError.__name__ in str(info.error)


def test_static_attributes_answer_without_importing() -> None:
    loader = lazy("nowhere_at_all:Loader", provides=("load",), suffixes=(".x",))
    assert loader.suffixes == (".x",)
    with pytest.raises(ModuleNotFoundError):
        loader.load  # noqa: B018 - the first real use imports


SOURCE = """\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping  # for annotations only: not exported
    from . import _checks as checks, _more as more  # submodules under public names
    from ._spec import (
        NodeSpec as NodeSpec,  # a comment, with a comma
        WorkflowSpec as WorkflowSpec,
    )
    from ..outside import Far as Far

if not TYPE_CHECKING:
    pass
"""


def test_the_table_is_what_the_type_checking_block_re_exports() -> None:
    assert reexports(SOURCE, "pkg.sub") == {
        "checks": ("pkg.sub", "_checks"),
        "more": ("pkg.sub", "_more"),
        "NodeSpec": ("pkg.sub._spec", "NodeSpec"),
        "WorkflowSpec": ("pkg.sub._spec", "WorkflowSpec"),
        "Far": ("pkg.outside", "Far"),
    }
    with pytest.raises(ImportError, match="need an `if TYPE_CHECKING:` block"):
        reexports("import os\n", "pkg")


def test_lazy_exports_import_a_name_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "plait_lazypkg"
    root.mkdir()
    (root / "_impl.py").write_text("class A: ...\n")
    (root / "_checks.py").write_text("X = 1\n")
    (root / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from plait.spi import lazy_exports\n"
        "if TYPE_CHECKING:\n"
        "    from . import _checks as checks\n"
        "    from ._impl import A as A\n"
        "def plait_register_x(register): ...\n"
        "if not TYPE_CHECKING:\n"
        "    __getattr__, __dir__ = lazy_exports(__name__)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("plait_lazypkg", "plait_lazypkg._impl", "plait_lazypkg._checks"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import plait_lazypkg  # type: ignore[import-not-found]

    assert "plait_lazypkg._impl" not in sys.modules
    assert plait_lazypkg.A is sys.modules["plait_lazypkg._impl"].A
    assert plait_lazypkg.checks.X == 1
    assert plait_lazypkg.__all__ == ["A", "checks", "plait_register_x"]
    assert {"A", "checks", "plait_register_x"} <= set(dir(plait_lazypkg))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        plait_lazypkg.nope  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute '_private'"):
        plait_lazypkg._private  # noqa: B018


def test_a_lazy_object_that_fails_on_first_use_names_its_plugin_and_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plait_broken_impl.py").write_text("raise RuntimeError('no database driver')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plait_broken_impl", raising=False)
    plugin = types.ModuleType("plait_broken")

    @plait.hookimpl
    def plait_register_merge_strategies(register: Any) -> None:
        register("broken", lazy("plait_broken_impl:Broken", provides=("merge", "output_type")))

    plugin.plait_register_merge_strategies = plait_register_merge_strategies  # type: ignore[attr-defined]
    manager = make_plugin_manager(fake_entry_point("broken", plugin, distribution="dist-broken"))
    strategy = manager.registry("merge_strategy").get("broken")  # registering imported nothing
    with pytest.raises(plait.PluginLoadError) as caught:
        strategy.merge(["a"], ["x"])
    error = caught.value
    assert error.distribution == "dist-broken" and error.phase == "import"
    assert "merge_strategy 'broken' (plait_broken_impl:Broken)" in str(error)
    assert "failed on first use: RuntimeError: no database driver" in str(error)
    assert isinstance(error.__cause__, RuntimeError)
