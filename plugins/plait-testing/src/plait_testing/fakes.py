"""Test doubles for the plugin manager: fake distributions and entry points, a router env.

A :class:`FakeEntryPoint` behaves like an :class:`importlib.metadata.EntryPoint` of group
``plait`` as far as :class:`~plait.spi.PluginManager` is concerned — it has a ``name``,
a ``value``, a ``dist`` with metadata, version and requirements, and ``load()`` — but
``load()`` returns an object you hand it (or calls a loader you hand it) instead of
importing a module. Pass fake entry points to :func:`make_plugin_manager` to test how a
plugin loads, conflicts, or fails, without installing anything::

    from plait_testing import broken_entry_point, fake_entry_point, make_plugin_manager

    manager = make_plugin_manager(
        fake_entry_point("mine", my_plugin_module, distribution="plait-mine"),
        broken_entry_point("broken"),
    )
    manager.load_entrypoints(strict=False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from plait import UnknownNameError
from plait.spi import ENTRY_POINT_GROUP, PluginManager

__all__ = [
    "FakeDistribution",
    "FakeEntryPoint",
    "StaticRouterEnv",
    "broken_entry_point",
    "fake_entry_point",
    "make_plugin_manager",
]

_NO_OBJECT: Any = object()


class FakeDistribution:
    """A stand-in for :class:`importlib.metadata.Distribution`.

    :param name: the distribution's name (``metadata["Name"]``), e.g. ``"plait-mine"``.
    :param version: its version.
    :param requires: its requirement strings (``["plait-core>=0.1,<1"]``); ``None`` or
        empty means it declares none (``requires`` is then ``None``, as for real ones).
    """

    def __init__(
        self, name: str, version: str = "0.1.0", requires: Iterable[str] | None = None
    ) -> None:
        self.name = name
        self.version = version
        self.requires: list[str] | None = list(requires) if requires else None
        self.metadata: Mapping[str, str] = {"Name": name, "Version": version}

    def __repr__(self) -> str:
        return f"<FakeDistribution {self.name} {self.version}>"


class FakeEntryPoint:
    """A stand-in for an entry point of group ``plait``.

    :param name: the entry-point name, which is the plugin's user-visible name.
    :param obj: what :meth:`load` returns (a module, a class or an object with hook
        implementations).
    :param dist: the distribution that declares it (default: ``plait-<name>`` 0.1.0).
    :param value: the ``module:attr`` text shown in errors (default: derived from ``obj``).
    :param loader: called by :meth:`load` instead of returning ``obj`` — raise from it to
        simulate a plugin that fails to import.
    """

    group = ENTRY_POINT_GROUP

    def __init__(
        self,
        name: str,
        obj: Any = _NO_OBJECT,
        dist: FakeDistribution | None = None,
        *,
        value: str | None = None,
        loader: Callable[[], Any] | None = None,
    ) -> None:
        if (obj is _NO_OBJECT) == (loader is None):
            raise TypeError(f"FakeEntryPoint {name!r} needs exactly one of obj or loader")
        self.name = name
        self.dist = dist if dist is not None else FakeDistribution(f"plait-{name}")
        self.value = value or _value_of(name, obj)
        self._obj = obj
        self._loader = loader
        self.loads = 0

    def load(self) -> Any:
        """Return the plugin object (or call the loader); counts calls in ``loads``."""
        self.loads += 1
        if self._loader is not None:
            return self._loader()
        return self._obj

    def __repr__(self) -> str:
        return f"<FakeEntryPoint {self.name} = {self.value} ({self.dist.name})>"


def _value_of(name: str, obj: Any) -> str:
    if obj is _NO_OBJECT:
        return f"fake_{name.replace('-', '_')}"
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if module and qualname:
        return f"{module}:{qualname}"
    return str(getattr(obj, "__name__", None) or f"fake_{name.replace('-', '_')}")


def fake_entry_point(
    name: str,
    obj: Any,
    *,
    distribution: str | None = None,
    version: str = "0.1.0",
    requires: Iterable[str] | None = None,
    value: str | None = None,
) -> FakeEntryPoint:
    """An entry point ``name`` of distribution ``distribution`` whose ``load()`` returns ``obj``.

    :param distribution: the distribution name (default ``plait-<name>``).
    :param requires: requirement strings, e.g. ``["plait-core>=99"]`` for a plugin that
        needs a newer kernel.
    """
    dist = FakeDistribution(distribution or f"plait-{name}", version, requires)
    return FakeEntryPoint(name, obj, dist, value=value)


def broken_entry_point(
    name: str,
    exc: BaseException | type[BaseException] | None = None,
    *,
    distribution: str | None = None,
    version: str = "0.1.0",
    requires: Iterable[str] | None = None,
) -> FakeEntryPoint:
    """An entry point whose ``load()`` raises ``exc``, like a plugin that fails to import.

    :param exc: the exception (or exception class) to raise; default
        ``ImportError("No module named 'plait_<name>'")``.
    """
    module = f"plait_{name.replace('-', '_')}"

    def load() -> Any:
        if exc is None:
            raise ImportError(f"No module named {module!r}", name=module)
        raise exc

    dist = FakeDistribution(distribution or f"plait-{name}", version, requires)
    return FakeEntryPoint(name, dist=dist, value=module, loader=load)


def make_plugin_manager(
    *entry_points: FakeEntryPoint,
    disabled: Iterable[str] = (),
    running_version: str | None = None,
) -> PluginManager:
    """A :class:`~plait.spi.PluginManager` that sees only ``entry_points``.

    Nothing is loaded until the manager is first used (``load_entrypoints()``,
    ``describe()``, ``registry()`` …), so a test can choose ``strict``.

    :param disabled: plugin or distribution names to block (instead of reading
        ``PLAIT_DISABLE_PLUGINS``).
    :param running_version: the kernel version plugins are checked against (default: the
        installed ``plait-core``).
    """
    return PluginManager(
        entry_points=list(entry_points), disabled=list(disabled), running_version=running_version
    )


class StaticRouterEnv:
    """A :class:`~plait.spi.RouterEnv` over fixed objects, for testing routers alone.

    :param objects: ``{kind: {name: object}}``, e.g.
        ``{"merge_strategy": {"list": ListMerge()}}``.

    A name it does not hold raises :class:`~plait.UnknownNameError` listing the
    names it does, as the real registry does.
    """

    def __init__(self, objects: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.objects = {kind: dict(names) for kind, names in (objects or {}).items()}
        self.lookups: list[tuple[str, str]] = []

    def lookup(self, kind: str, name: str, *, what: str) -> Any:
        """The ``kind`` object registered as ``name``; records the lookup in ``lookups``."""
        self.lookups.append((kind, name))
        names = self.objects.get(kind, {})
        if name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise UnknownNameError(
                f"unknown {kind.replace('_', ' ')} {name!r} (for {what}); installed: {known}"
            )
        return names[name]
