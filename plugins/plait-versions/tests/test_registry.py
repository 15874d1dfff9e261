"""Migrations registered through the ``plait_register_migrations`` hook: found by
workflow and version, checked as they register, a clash named."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import get_plugin_manager
from plait_versions import Migration, RunSnapshot, find_chain, register_migration


def keep(snapshot: RunSnapshot) -> RunSnapshot:
    return snapshot


class Shipping:
    """A distribution's migrations of its ``shipping`` workflow, 1 -> 2 -> 3."""

    @staticmethod
    @plait.hookimpl
    def plait_register_migrations(register: Any) -> None:
        register("shipping@1", Migration("shipping", 1, keep, "adds a carrier"))
        register("shipping@2", Migration("shipping", 2, keep))


def test_a_plugin_registers_a_chain() -> None:
    manager = get_plugin_manager()
    manager.register(Shipping(), "shipping-migrations")
    try:
        chain, missing = find_chain("shipping", 1, 3)
        assert missing is None
        assert [m.name for m in chain] == ["shipping@1", "shipping@2"]
        assert chain[0].description == "adds a carrier" and chain[1].to_version == 3
        chain, missing = find_chain("shipping", 1, 4)
        assert missing == (
            "no migration registered for workflow 'shipping' from version 3 "
            "(registered: shipping@1, shipping@2)"
        )
        assert len(chain) == 2
    finally:
        manager.unregister("shipping-migrations")


@pytest.mark.filterwarnings("ignore::plait.PlaitWarning")  # the clash, said as it registers
def test_a_clash_names_both_plugins() -> None:
    manager = get_plugin_manager()
    manager.register(Shipping(), "shipping-migrations")
    try:
        with pytest.raises(plait.PlaitError, match="shipping@1") as caught:
            register_migration("shipping", 1, keep)
            manager.registry("migration")
        assert "migration:shipping@1" in str(caught.value)
        assert "shipping-migrations" in str(caught.value)
    finally:
        manager.unregister("shipping-migrations")
        manager.unregister("migration:shipping@1")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("", 1, keep), "Migration.workflow must be a workflow name"),
        (("shop", 0, keep), "Migration.from_version must be a positive integer, got 0"),
        (("shop", True, keep), "Migration.from_version must be a positive integer, got True"),
        (("shop", 1, "keep"), "Migration.migrate must be callable"),
    ],
)
def test_a_bad_migration_is_refused_naming_the_field(args: tuple[Any, ...], problem: str) -> None:
    with pytest.raises((ValueError, TypeError), match=problem):
        Migration(*args)
