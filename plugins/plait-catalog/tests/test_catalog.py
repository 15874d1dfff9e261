"""An unknown name says which distribution provides it, when a plugin knows."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import plait_catalog
import pytest
from plait import PlaitWarning, UnknownNameError, hookimpl
from plait.spi import PluginManager


def _bare() -> PluginManager:
    """A manager that loads no installed plugin."""
    return PluginManager(entry_points=[])


def test_an_unknown_first_party_name_names_its_distribution() -> None:
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    message = (
        "unknown router 'direct'; installed: none — it comes with plait-routing (part of "
        "plait: in a checkout of plait, bash .ci/uv sync --locked; with pip, from that "
        "checkout's folder, pip install ./plugins/plait-routing; from a package index that "
        "has plait, pip install plait)"
    )
    with pytest.raises(UnknownNameError, match=f"^{re.escape(message)}$"):
        manager.registry("router").get("direct")


def test_the_hint_keeps_the_asker_and_the_installed_names() -> None:
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    with pytest.raises(UnknownNameError) as info:
        manager.registry("checkpoint_store").get("redis", what="url 'redis://x'")
    assert str(info.value) == (
        "unknown checkpoint store 'redis' (for url 'redis://x'); installed: none — "
        "it comes with plait-redis (the plait[redis] extra: in a checkout of plait, bash "
        ".ci/uv sync --locked --extra redis; with pip, from that checkout's folder, pip "
        "install ./plugins/plait-redis; from a package index that has plait, pip install "
        "'plait[redis]')"
    )


def test_without_the_catalog_an_unknown_name_lists_what_is_installed_only() -> None:
    with pytest.raises(UnknownNameError) as info:
        _bare().registry("router").get("direct")
    assert str(info.value) == "unknown router 'direct'; installed: none"


def test_a_name_no_first_party_plugin_provides_gets_no_hint() -> None:
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    with pytest.raises(UnknownNameError) as info:
        manager.registry("router").get("teleport")
    assert str(info.value) == "unknown router 'teleport'; installed: none"
    assert manager.provider("merge_strategy", "direct") is None
    assert manager.provider("router", "direct") == "plait-routing"


class _Other:
    """A third-party catalog that claims a first-party name, and one of its own."""

    @staticmethod
    @hookimpl
    def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
        return {"zz-routers": {"router": ["direct", "teleport"]}}


def test_answers_merge_and_the_first_distribution_in_sorted_order_wins() -> None:
    manager = _bare()
    manager.register(_Other(), "other")
    manager.register(plait_catalog, "catalog")
    assert manager.provider("router", "direct") == "plait-routing"
    assert manager.provider("router", "teleport") == "zz-routers"
    manager.unregister("catalog")  # asked again after the plugins changed
    assert manager.provider("router", "direct") == "zz-routers"


class _Broken:
    @staticmethod
    @hookimpl
    def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
        raise RuntimeError("catalog unreadable")


def test_a_failing_catalog_warns_and_the_unknown_name_error_stays() -> None:
    manager = _bare()
    manager.register(_Broken(), "broken")
    unknown = "^unknown router 'direct'; installed: none$"
    with (
        pytest.warns(PlaitWarning, match="catalog unreadable"),
        pytest.raises(UnknownNameError, match=unknown),
    ):
        manager.registry("router").get("direct")


def test_the_table_matches_what_the_installed_first_party_plugins_register() -> None:
    installed = {
        info.distribution: info.registered
        for info in PluginManager().describe()
        if info.distribution in plait_catalog.FIRST_PARTY and info.status == "loaded"
    }
    # the test group installs plait-routing, plait-merge, plait-stores and plait-export
    assert {"plait-routing", "plait-merge", "plait-stores", "plait-export"} <= set(installed)
    for distribution, registered in installed.items():
        table = {  # (a command is no registry kind: plait-cli's tests check those)
            kind: sorted(names)
            for kind, names in plait_catalog.FIRST_PARTY[distribution].items()
            if kind != "command"
        }
        assert table == {kind: registered.get(kind, []) for kind in table}, distribution


class _Malformed:
    @staticmethod
    @hookimpl
    def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
        return {"zz-broken": "not a mapping of kinds"}  # type: ignore[dict-item]


def test_a_broken_answer_names_its_plugin_and_the_others_still_count() -> None:
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    manager.register(_Broken(), "broken", distribution="dist-broken")
    manager.register(_Malformed(), "malformed")
    with pytest.warns(PlaitWarning) as caught:
        assert manager.provider("router", "direct") == "plait-routing"
    broken, malformed = sorted((str(w.message) for w in caught), key=lambda m: "malformed" in m)
    assert "dist-broken (plugin 'broken')" in broken and "catalog unreadable" in broken
    assert "(in-process) (plugin 'malformed')" in malformed


ROOT = Path(__file__).resolve().parents[3]


def test_the_extras_are_the_root_pyprojects() -> None:
    # the hints name extras of the plait meta-distribution: they must exist there
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 reads TOML with tomli, when installed
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = {
        requirement: extra
        for extra, requirements in project["optional-dependencies"].items()
        for requirement in requirements
        if re.fullmatch(r"plait-[a-z]+", requirement)
    }
    assert extras == dict(plait_catalog.EXTRAS)
    base = {re.split(r"[<>=\[;]", r)[0] for r in project["dependencies"]}
    hinted = set(plait_catalog.FIRST_PARTY) | {"plait-durable", "plait-documents"}
    for distribution in hinted - set(extras):  # what needs no extra comes with plait
        assert distribution in base, distribution
    for distribution in hinted | set(extras):  # and pip install ./plugins/NAME finds it
        assert (ROOT / "plugins" / distribution / "pyproject.toml").is_file(), distribution


def test_a_third_party_distribution_gets_no_first_party_hint() -> None:
    assert plait_catalog.install_hint("zz-routers") is None
    manager = _bare()
    manager.register(_Other(), "other")
    manager.register(plait_catalog, "catalog")
    with pytest.raises(UnknownNameError) as info:
        manager.registry("router").get("teleport")
    assert str(info.value).endswith(
        "— it comes with zz-routers (install the distribution zz-routers)"
    )


def test_the_kernels_own_seams_name_their_distribution_without_the_catalog() -> None:
    # issue 34: checkpointing without plait-durable said "unknown durability
    # 'checkpoints'; installed: none" and named no package
    with pytest.raises(UnknownNameError) as info:
        _bare().durability("a checkpointed run")
    assert str(info.value) == (
        "no installed plugin gives the durability (for a checkpointed run): none implements "
        "plait_durability — it comes with plait-durable (install the distribution "
        "plait-durable)"
    )
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    with pytest.raises(UnknownNameError, match="bash .ci/uv sync --locked;"):
        manager.durability("a checkpointed run")
    with pytest.raises(UnknownNameError, match=r"plait-documents \(part of plait"):
        manager.documents("plait.load")


def test_an_optional_command_says_how_to_get_it() -> None:
    manager = _bare()
    manager.register(plait_catalog, "catalog")
    assert manager.install_hint("command", "ui") == (
        "it comes with plait-ui (the plait[ui] extra: in a checkout of plait, bash .ci/uv "
        "sync --locked --extra ui; with pip, from that checkout's folder, pip install "
        "./plugins/plait-ui; from a package index that has plait, pip install 'plait[ui]')"
    )
    assert manager.install_hint("command", "teleport") is None


class _Hinting:
    """A third-party catalog that says how to install its own distribution."""

    @staticmethod
    @hookimpl
    def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
        return {"zz-routers": {"router": ["teleport"]}}

    @staticmethod
    @hookimpl
    def plait_install_hint(distribution: str) -> str | None:
        return "pip install zz-routers" if distribution == "zz-routers" else None


class _BrokenHint:
    @staticmethod
    @hookimpl
    def plait_install_hint(distribution: str) -> str | None:
        raise RuntimeError("hint unreadable")


def test_a_plugin_says_how_to_install_its_distribution_and_a_broken_one_warns() -> None:
    manager = _bare()
    manager.register(_Hinting(), "hinting")
    manager.register(plait_catalog, "catalog")
    with pytest.raises(UnknownNameError) as info:
        manager.registry("router").get("teleport")
    assert str(info.value).endswith("— it comes with zz-routers (pip install zz-routers)")
    manager.register(_BrokenHint(), "broken")
    with pytest.warns(PlaitWarning, match="hint unreadable"):
        assert manager.install_hint("router", "teleport") == (
            "it comes with zz-routers (install the distribution zz-routers)"
        )
