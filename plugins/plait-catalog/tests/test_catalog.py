"""An unknown name says which distribution provides it, when a plugin knows."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

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
        "unknown router 'direct'; installed: none — it comes with plait-routing "
        "(pip install plait-routing)"
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
        "it comes with plait-redis (pip install plait-redis)"
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
        table = {
            kind: sorted(names) for kind, names in plait_catalog.FIRST_PARTY[distribution].items()
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
