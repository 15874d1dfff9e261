"""Migrations: functions that carry a stored run of a workflow from version N to N+1.

They live in the kernel's ``migration`` registry: a distribution registers them through
``plait_register_migrations``, a script with :func:`register_migration` (or the
:func:`migration` decorator), which registers an in-process plugin as
``plait_converters.register_type_hooks`` does. Two migrations of one workflow from one
version are the kernel's duplicate-name error, naming both (the registered name is
``"<workflow>@<from_version>"``). :func:`find_chain` picks the chain N → N+1 → … → M.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import plait
from plait import get_plugin_manager

if TYPE_CHECKING:
    from plait.spi import PluginManager

    from ._snapshot import RunSnapshot

__all__ = ["Migration", "find_chain", "migration", "migration_name", "register_migration"]


def _positive(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Migration.{attribute.name} must be a positive integer, got {value!r}")


def _nonempty(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"Migration.{attribute.name} must be a workflow name, got {value!r}")


def _callable(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not callable(value):
        raise TypeError(f"Migration.{attribute.name} must be callable, got {value!r}")


def migration_name(workflow: str, from_version: int) -> str:
    """The name a migration is registered under: ``"<workflow>@<from_version>"``."""
    return f"{workflow}@{from_version}"


@attrs.frozen
class Migration:
    """A migration of workflow ``workflow``'s stored runs from version ``from_version`` to
    the next.

    :param workflow: the workflow's name (:attr:`plait.Workflow.name`).
    :param from_version: the version it migrates from; it migrates to ``from_version + 1``.
    :param migrate: ``migrate(snapshot) -> snapshot``: takes the run's
        :class:`~plait_versions.RunSnapshot` at ``from_version`` and returns the one at the
        next version (the same object, edited, or a new one). It must not have effects
        outside the snapshot: a migration may run again (``plait compat`` dry-runs it, a
        crashed resume repeats it).
    :param description: one line for ``plait compat`` and the docs.
    """

    workflow: str = attrs.field(validator=_nonempty)
    from_version: int = attrs.field(validator=_positive)
    migrate: Callable[[RunSnapshot], RunSnapshot] = attrs.field(validator=_callable)
    description: str = ""

    @property
    def name(self) -> str:
        """``"<workflow>@<from_version>"``."""
        return migration_name(self.workflow, self.from_version)

    @property
    def to_version(self) -> int:
        """The version it migrates to: ``from_version + 1``."""
        return self.from_version + 1


def register_migration(
    workflow: str,
    from_version: int,
    migrate: Callable[[RunSnapshot], RunSnapshot],
    *,
    description: str = "",
    plugin_manager: PluginManager | None = None,
) -> Migration:
    """Register a migration from a script (a distribution registers it through
    ``plait_register_migrations`` instead): an in-process plugin named
    ``migration:<workflow>@<from_version>``; registering the same name again replaces it.

    :raises ValueError: ``workflow`` or ``from_version`` is not valid.
    """
    found = Migration(workflow, from_version, migrate, description)
    name = found.name

    class _Plugin:
        @staticmethod
        @plait.hookimpl
        def plait_register_migrations(register: Any) -> None:
            register(name, found)

    manager = plugin_manager or get_plugin_manager()
    manager.unregister(f"migration:{name}")
    manager.register(_Plugin(), f"migration:{name}")
    return found


def migration(
    workflow: str, from_version: int, *, description: str = ""
) -> Callable[[Callable[[RunSnapshot], RunSnapshot]], Callable[[RunSnapshot], RunSnapshot]]:
    """Decorate a function to register it as the migration of ``workflow`` from
    ``from_version`` (:func:`register_migration`); the function is returned as it is."""

    def decorate(
        fn: Callable[[RunSnapshot], RunSnapshot],
    ) -> Callable[[RunSnapshot], RunSnapshot]:
        register_migration(workflow, from_version, fn, description=description or _doc(fn))
        return fn

    return decorate


def _doc(fn: Any) -> str:
    doc = (getattr(fn, "__doc__", None) or "").strip()
    return doc.splitlines()[0] if doc else ""


def find_chain(
    workflow: str,
    from_version: int,
    to_version: int,
    plugin_manager: PluginManager | None = None,
) -> tuple[Sequence[Migration], str | None]:
    """The migrations from ``from_version`` to ``to_version`` in order, and ``None``; or
    what is missing (``"no migration registered for workflow 'orders' from version 2"``)
    and the chain as far as it goes."""
    registry = (plugin_manager or get_plugin_manager()).registry("migration")
    chain: list[Migration] = []
    for version in range(from_version, to_version):
        name = migration_name(workflow, version)
        if name not in registry:
            known = sorted(n for n in registry.names() if n.startswith(f"{workflow}@"))
            return chain, (
                f"no migration registered for workflow {workflow!r} from version {version} "
                f"(registered: {', '.join(known) or 'none'})"
            )
        found: Migration = registry.get(name)
        chain.append(found)
    return chain, None
