"""The plugin manager: entry points of group ``plait``, in-process plugins, registries.

Plugins are found through the entry-point group ``plait``; the entry-point name is the
plugin's user-visible name (what ``plait plugins`` prints and what
``PLAIT_DISABLE_PLUGINS=name,name`` accepts). Each entry point is loaded in four phases —
``compatibility`` (its ``plait-core`` requirement against the running kernel), ``import``,
``register`` (hook implementations checked: known hooks only, no coroutines) and
``validate`` (what its registry hooks register fits each kind's protocol, with no name
clash). A failure in any phase becomes a :class:`~plait.errors.PluginLoadError` naming the
distribution, its version, the entry point and the phase; all failures are raised together.

.. versionadded:: 0.1
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import attrs
import pluggy
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from . import hookspecs
from .errors import (
    IncompatiblePluginError,
    PluginConflictError,
    PluginLoadError,
    PluginLoadErrors,
    RegistrationError,
    UnknownNameError,
)
from .registry import (
    DISABLE_ENV,
    KIND_NAMES,
    KINDS,
    Collector,
    Registration,
    Registry,
    resolve,
)

if sys.version_info >= (3, 12):
    from importlib import metadata as importlib_metadata
else:  # pragma: no cover - depends on the interpreter
    import importlib_metadata

__all__ = [
    "ENTRY_POINT_GROUP",
    "KINDS",
    "PluginInfo",
    "PluginManager",
    "Registration",
    "Registry",
    "core_version",
    "describe",
    "get_plugin_manager",
    "register",
    "set_plugin_manager",
    "unregister",
]

ENTRY_POINT_GROUP = "plait"
IN_PROCESS = "(in-process)"


def core_version() -> str:
    """The installed version of ``plait-core``."""
    try:
        return importlib_metadata.version("plait-core")
    except importlib_metadata.PackageNotFoundError:  # pragma: no cover - source checkout
        return "0.0.0"


class EntryPointLike(Protocol):
    """What the loader needs of an entry point (real or fake, see ``plait.testing``)."""

    name: str
    value: str

    def load(self) -> Any: ...


@attrs.define
class PluginInfo:
    """What ``plait plugins`` shows about one plugin.

    ``status`` is ``loaded``, ``blocked`` (disabled by ``PLAIT_DISABLE_PLUGINS``) or
    ``failed`` (then ``error`` says why). ``registered`` maps kind -> names.
    """

    name: str
    distribution: str
    version: str
    entry_point: str
    status: str
    error: str | None = None
    registered: dict[str, list[str]] = attrs.field(factory=dict)


@attrs.define
class _Plugin:
    name: str
    distribution: str
    version: str
    entry_point: str
    obj: Any = None
    status: str = "loaded"
    error: BaseException | None = None


class PluginManager:
    """Plait's plugin manager: a typed facade over a :class:`pluggy.PluginManager`.

    :param entry_points: entry points to load instead of the installed ones (tests).
    :param disabled: plugin names to block; defaults to ``PLAIT_DISABLE_PLUGINS``.
    :param running_version: the kernel version plugins are checked against.
    """

    def __init__(
        self,
        *,
        entry_points: Iterable[EntryPointLike] | None = None,
        disabled: Iterable[str] | None = None,
        running_version: str | None = None,
    ) -> None:
        self.pm = pluggy.PluginManager("plait")
        self.pm.add_hookspecs(hookspecs)
        self._entry_points = entry_points
        if disabled is None:
            disabled = (n.strip() for n in os.environ.get(DISABLE_ENV, "").split(","))
        self.disabled = frozenset(n for n in disabled if n)
        self.running_version = running_version or core_version()
        self._plugins: dict[str, _Plugin] = {}
        self._registries: dict[str, Registry[Any]] | None = None
        self._loaded = False
        self._observers: tuple[bool, bool, bool] | None = None

    # -- loading ---------------------------------------------------------------

    def load_entrypoints(self, *, strict: bool = True) -> None:
        """Load every plugin of group ``plait`` once.

        :param strict: raise :class:`~plait.errors.PluginLoadErrors` with every failure;
            if false, keep going and record failed plugins (``describe()`` shows them).
        """
        if self._loaded:
            # a failure is never skipped in silence: strict callers see it every time
            failed = [p.error for p in self._plugins.values() if p.status == "failed"]
            errors = [e for e in failed if isinstance(e, PluginLoadError)]
            if errors and strict:
                raise PluginLoadErrors(f"{len(errors)} plugin(s) failed to load", errors)
            return
        self._loaded = True
        failures: list[PluginLoadError] = []
        for ep, dist_name, version, requires in self._iter_entry_points():
            spec = f"{ep.name} = {ep.value}"
            plugin = _Plugin(ep.name, dist_name, version, spec)
            first = self._plugins.get(ep.name)
            # two distributions may declare the same entry-point name; keep both listed
            key = ep.name if first is None else f"{ep.name} ({dist_name})"
            self._plugins[key] = plugin
            if ep.name in self.disabled or dist_name in self.disabled:
                plugin.status = "blocked"
                continue
            phase = "compatibility"
            try:
                if first is not None:
                    phase = "register"
                    raise PluginConflictError(
                        f"the plugin name {ep.name!r} is taken by distribution "
                        f"{first.distribution} {first.version} ({first.entry_point}) and "
                        f"{dist_name} {version} ({spec}); uninstall one or disable one "
                        f"by distribution name ({DISABLE_ENV}={dist_name})"
                    )
                self._check_compatible(requires, plugin)
                phase = "import"
                obj = ep.load()
                phase = "register"
                self._register_hooks(obj, ep.name)
                plugin.obj = obj
            except Exception as exc:
                failures.append(self._fail(plugin, phase, exc))
        failures.extend(self._build_registries())
        if failures and strict:
            raise PluginLoadErrors(f"{len(failures)} plugin(s) failed to load", failures)

    def _iter_entry_points(self) -> Iterator[tuple[EntryPointLike, str, str, list[str]]]:
        seen: set[tuple[str, str]] = set()
        found: list[tuple[EntryPointLike, str, str, list[str]]] = []
        if self._entry_points is not None:
            eps: Iterable[Any] = self._entry_points
        else:
            eps = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
        for ep in eps:
            dist = getattr(ep, "dist", None)
            dist_name = dist.metadata["Name"] if dist is not None else "(unknown)"
            version = dist.version if dist is not None else "?"
            requires = list(dist.requires or []) if dist is not None else []
            key = (canonicalize_name(dist_name), ep.name)
            if key in seen:  # the same distribution twice on sys.path
                continue
            seen.add(key)
            found.append((ep, dist_name, version, requires))
        found.sort(key=lambda item: (item[1].lower(), item[0].name))
        return iter(found)

    def _check_compatible(self, requires: list[str], plugin: _Plugin) -> None:
        running = Version(self.running_version)
        for text in requires:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            if canonicalize_name(req.name) != "plait-core":
                continue
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            if req.specifier and not req.specifier.contains(running, prereleases=True):
                raise IncompatiblePluginError(
                    f"it requires plait-core{req.specifier} but the running plait-core is "
                    f"{self.running_version}; upgrade plait-core or install an older "
                    f"{plugin.distribution}",
                    distribution=plugin.distribution,
                    version=plugin.version,
                    entry_point=plugin.entry_point,
                    phase="compatibility",
                )

    def _fail(self, plugin: _Plugin, phase: str, exc: BaseException) -> PluginLoadError:
        if plugin.obj is not None and self.pm.is_registered(plugin.obj):
            self.pm.unregister(plugin.obj)
        plugin.status, plugin.obj = "failed", None
        if isinstance(exc, PluginLoadError):
            err = exc
        else:
            err = PluginLoadError(
                f"{type(exc).__name__}: {exc}",
                distribution=plugin.distribution,
                version=plugin.version,
                entry_point=plugin.entry_point,
                phase=phase,
            )
            err.__cause__ = exc
        plugin.error = err
        self._registries = None
        self._observers = None
        return err

    def _register_hooks(self, obj: Any, name: str) -> None:
        for attr in dir(obj):
            fn = getattr(obj, attr, None)
            if getattr(fn, "plait_impl", None) is None:
                continue
            if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
                raise RegistrationError(
                    f"hook implementation {attr!r} of plugin {name!r} is a coroutine; "
                    "Plait hooks are synchronous (register async objects instead)"
                )
            if attr not in KINDS and not hasattr(self.pm.hook, attr):
                raise RegistrationError(f"plugin {name!r} implements unknown hook {attr!r}")
        try:
            self.pm.register(obj, name=name)
        except pluggy.PluginValidationError as exc:
            raise RegistrationError(f"plugin {name!r}: {exc}") from exc
        except ValueError as exc:  # pluggy: this object or name is registered already
            raise PluginConflictError(f"plugin {name!r} cannot be registered: {exc}") from exc
        self._registries = None
        self._observers = None

    # -- in-process plugins ------------------------------------------------------

    def register(
        self, obj: Any, name: str | None = None, *, distribution: str | None = None
    ) -> str:
        """Register an in-process plugin (a module or an object with hook implementations).

        Its registrations are validated at once; on failure nothing stays registered and the
        error is raised.

        :return: the plugin's name (``name`` or one pluggy derives).
        """
        self.load_entrypoints()
        plugin_name = name or getattr(obj, "__name__", None) or f"plugin-{id(obj):x}"
        if plugin_name in self._plugins:
            raise PluginConflictError(f"a plugin named {plugin_name!r} is already registered")
        plugin = _Plugin(plugin_name, distribution or IN_PROCESS, "", plugin_name, obj)
        self._register_hooks(obj, plugin_name)
        self._plugins[plugin_name] = plugin
        failures = self._build_registries()
        if failures:
            self.unregister(plugin_name)
            raise failures[0]
        return plugin_name

    def unregister(self, name: str) -> None:
        """Remove a plugin and everything it registered."""
        plugin = self._plugins.pop(name, None)
        if plugin is not None and plugin.obj is not None and self.pm.is_registered(plugin.obj):
            self.pm.unregister(plugin.obj)
        self._registries = None
        self._observers = None

    # -- registries --------------------------------------------------------------

    def registry(self, kind: str) -> Registry[Any]:
        """The registry of ``kind`` (``router``, ``merge_strategy``, ``converter`` …)."""
        self.load_entrypoints()
        if self._registries is None:
            failures = self._build_registries()
            if failures:
                raise PluginLoadErrors(f"{len(failures)} plugin(s) failed to load", failures)
        assert self._registries is not None
        try:
            return self._registries[kind]
        except KeyError:
            raise UnknownNameError(
                f"unknown registry kind {kind!r}; kinds: {', '.join(KIND_NAMES)}"
            ) from None

    def _build_registries(self) -> list[PluginLoadError]:
        """Collect every plugin's registrations; drop plugins that fail, and retry."""
        failures: list[PluginLoadError] = []
        while True:
            collected, failed = self._collect()
            registries: dict[str, Registry[Any]] = {}
            for kind, by_name in collected.items():
                entries: dict[str, Registration[Any]] = {}
                for name, regs in by_name.items():
                    winner, error = resolve(kind, name, regs)
                    if error is not None:
                        loser = self._plugins[regs[-1].plugin]
                        failed.append(self._fail(loser, "validate", PluginConflictError(error)))
                    elif winner is not None:
                        entries[name] = winner
                registries[kind] = Registry(kind, entries)
            failures.extend(failed)
            if not failed:
                self._registries = registries
                return failures

    def _collect(
        self,
    ) -> tuple[dict[str, dict[str, list[Registration[Any]]]], list[PluginLoadError]]:
        collected: dict[str, dict[str, list[Registration[Any]]]] = {k: {} for k in KIND_NAMES}
        failed: list[PluginLoadError] = []
        for plugin in list(self._plugins.values()):
            if plugin.status != "loaded" or plugin.obj is None:
                continue
            mine: list[Registration[Any]] = []
            try:
                for hook_name, (kind, check) in KINDS.items():
                    impl = getattr(plugin.obj, hook_name, None)
                    if impl is None or getattr(impl, "plait_impl", None) is None:
                        continue
                    impl(register=Collector(kind, check, plugin, mine))
            except Exception as exc:
                failed.append(self._fail(plugin, "validate", exc))
                continue
            for reg in mine:
                collected[reg.kind].setdefault(reg.name, []).append(reg)
        return collected, failed

    # -- reporting ---------------------------------------------------------------

    def describe(self) -> list[PluginInfo]:
        """Every plugin with its distribution, version, entry point, status and registrations.

        Never raises for a broken plugin: it is listed as ``failed`` with its error.
        """
        self.load_entrypoints(strict=False)
        if self._registries is None:
            self._build_registries()
        assert self._registries is not None
        infos: list[PluginInfo] = []
        for plugin in self._plugins.values():
            registered: dict[str, list[str]] = {}
            for kind, registry in self._registries.items():
                names = [r.name for r in registry.values() if r.plugin == plugin.name]
                if names:
                    registered[kind] = names
            infos.append(
                PluginInfo(
                    name=plugin.name,
                    distribution=plugin.distribution,
                    version=plugin.version,
                    entry_point=plugin.entry_point,
                    status=plugin.status,
                    error=str(plugin.error) if plugin.error else None,
                    registered=registered,
                )
            )
        return infos

    # -- observers (typed facade over the observer hooks) ---------------------------

    def observers(self) -> tuple[bool, bool, bool]:
        """Whether any plugin implements run_started, superstep_finished, run_finished."""
        if self._observers is None:
            hook = self.pm.hook
            self._observers = (
                bool(hook.plait_run_started.get_hookimpls()),
                bool(hook.plait_superstep_finished.get_hookimpls()),
                bool(hook.plait_run_finished.get_hookimpls()),
            )
        return self._observers

    def notify_run_started(self, run_id: str, workflow: Any) -> None:
        """Call ``plait_run_started``."""
        self.pm.hook.plait_run_started(run_id=run_id, workflow=workflow)

    def notify_superstep_finished(self, run_id: str, superstep: int, ids: list[str]) -> None:
        """Call ``plait_superstep_finished``."""
        self.pm.hook.plait_superstep_finished(run_id=run_id, superstep=superstep, executor_ids=ids)

    def notify_run_finished(self, run_id: str, status: str, error: BaseException | None) -> None:
        """Call ``plait_run_finished``."""
        self.pm.hook.plait_run_finished(run_id=run_id, status=status, error=error)

    def register_commands(self, cli: Any) -> None:
        """Call ``plait_register_commands`` so plugins add CLI sub-commands."""
        self.load_entrypoints()
        self.pm.hook.plait_register_commands(cli=cli)


# -- the process-wide manager --------------------------------------------------------

_manager: PluginManager | None = None


def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loading installed plugins on first use."""
    global _manager
    if _manager is None:
        _manager = PluginManager()
    _manager.load_entrypoints()
    return _manager


def set_plugin_manager(manager: PluginManager | None) -> PluginManager | None:
    """Install ``manager`` as the process-wide one (tests); return the previous one."""
    global _manager
    previous, _manager = _manager, manager
    return previous


def register(obj: Any, name: str | None = None) -> str:
    """Register an in-process plugin with the process-wide manager (``plait.register``)."""
    return get_plugin_manager().register(obj, name)


def unregister(name: str) -> None:
    """Remove an in-process plugin registered with :func:`register`."""
    get_plugin_manager().unregister(name)


def describe() -> list[PluginInfo]:
    """Describe every plugin of the process-wide manager (what ``plait plugins`` prints)."""
    global _manager
    if _manager is None:
        _manager = PluginManager()
    return _manager.describe()
