"""An unknown first-party name says which distribution provides it."""

from __future__ import annotations

import re

import pytest
from plait import UnknownNameError
from plait._registry import FIRST_PARTY, provider
from plait.spi import PluginManager, Registry


def test_an_unknown_first_party_name_names_its_distribution() -> None:
    message = (
        "unknown router 'direct'; installed: none — it comes with plait-routing "
        "(pip install plait-routing)"
    )
    with pytest.raises(UnknownNameError, match=f"^{re.escape(message)}$"):
        Registry("router", {}).get("direct")


def test_the_hint_keeps_the_asker_and_the_installed_names() -> None:
    with pytest.raises(UnknownNameError) as info:
        Registry("checkpoint_store", {}).get("redis", what="url 'redis://x'")
    assert str(info.value) == (
        "unknown checkpoint store 'redis' (for url 'redis://x'); installed: none — "
        "it comes with plait-redis (pip install plait-redis)"
    )


def test_a_name_no_first_party_plugin_provides_gets_no_hint() -> None:
    with pytest.raises(UnknownNameError) as info:
        Registry("router", {}).get("teleport")
    assert str(info.value) == "unknown router 'teleport'; installed: none"
    assert provider("merge_strategy", "direct") is None


def test_the_table_matches_what_the_installed_first_party_plugins_register() -> None:
    installed = {
        info.distribution: info.registered
        for info in PluginManager().describe()
        if info.distribution in FIRST_PARTY
    }
    assert installed, "no first-party plugin installed"
    for distribution, registered in installed.items():
        table = {kind: sorted(names.split()) for kind, names in FIRST_PARTY[distribution].items()}
        assert table == {kind: registered.get(kind, []) for kind in table}, distribution
