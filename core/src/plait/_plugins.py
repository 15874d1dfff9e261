"""The plugin manager: entry points of group ``plait``, in-process plugins, registries.

Plugins are found through the entry-point group ``plait``; the entry-point name is the
plugin's user-visible name (what ``plait plugins`` prints and what
``PLAIT_DISABLE_PLUGINS=name,name`` accepts). Each entry point is loaded in four phases —
``compatibility`` (its ``plait-core`` requirement against the running kernel), ``import``,
``register`` (hook implementations checked: known hooks only, no coroutines) and
``validate`` (what its registry hooks register fits each kind's protocol, with no name
clash). A failure in any phase becomes a :class:`~plait.PluginLoadError` naming the
distribution, its version, the entry point and the phase; all failures are raised together.

The entry points come from :func:`importlib.metadata.entry_points`, the requirement check
from :mod:`packaging`, and disabling and the unknown-hook check from pluggy
(``set_blocked``/``is_blocked``, ``check_pending``); nothing is cached between processes.

:class:`HookFacade` types the non-registry hooks, so no kernel code calls
``pm.hook.x(...)`` untyped (tox's pattern); :class:`PluginManager` inherits it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

from . import _hookspecs as hookspecs
from ._errors import (
    PlaitWarning,
    PluginConflictError,
    PluginLoadError,
    PluginLoadErrors,
    RegistrationError,
    UnknownNameError,
)
from ._loading import (
    CALLING_PLUGIN,
    ENTRY_POINT_GROUP,
    IN_PROCESS,
    EntryPointLike,
    HookFailed,
    HookManager,
    Plugin,
    PluginInfo,
    check_compatible,
    core_version,
    iter_entry_points,
    register_hooks,
    summarize_failures,
    unknown_disabled,
)
from ._registry import (
    DISABLE_ENV,
    KIND_NAMES,
    KINDS,
    Collector,
    Registration,
    Registry,
    resolve,
)

if TYPE_CHECKING:
    from ._observer import RunObserver

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
    "HookFacade",
    "HookObserver",
]


class HookFacade:
    """One typed method per observer hook (the command hook is on the manager, which loads
    plugins first)."""

    pm: pluggy.PluginManager
    _observers: tuple[bool, bool, bool, bool] | None

    def observers(self) -> tuple[bool, bool, bool, bool]:
        """Whether any plugin implements run_started, superstep_finished, run_finished,
        observe_run."""
        if self._observers is None:
            hook = self.pm.hook
            self._observers = (
                bool(hook.plait_run_started.get_hookimpls()),
                bool(hook.plait_superstep_finished.get_hookimpls()),
                bool(hook.plait_run_finished.get_hookimpls()),
                bool(hook.plait_observe_run.get_hookimpls()),
            )
        return self._observers

    def notify_superstep_finished(self, run_id: str, superstep: int, ids: list[str]) -> None:
        """Call ``plait_superstep_finished``."""
        self.pm.hook.plait_superstep_finished(run_id=run_id, superstep=superstep, executor_ids=ids)

    def notify_run_finished(self, run_id: str, status: str, error: BaseException | None) -> None:
        """Call ``plait_run_finished``."""
        self.pm.hook.plait_run_finished(run_id=run_id, status=status, error=error)

    def observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Any = None
    ) -> RunObserver | None:
        """The one observer of this run, or ``None`` — at once, and without calling any
        hook, when no plugin observes runs: what ``plait_observe_run`` returns, plus the
        ``plait_superstep_finished`` and ``plait_run_finished`` hooks as an observer
        (:class:`HookObserver`). Calls ``plait_run_started`` first."""
        started, superstep_hook, finished, observe = self.observers()
        if not (started or superstep_hook or finished or observe):
            return None
        if started:
            self.pm.hook.plait_run_started(run_id=run_id, workflow=workflow)
        found = []
        if observe:
            found = self.pm.hook.plait_observe_run(
                run_id=run_id, workflow=workflow, superstep=superstep, resumed=resumed
            )  # implementations that return None are left out by pluggy
        from ._observer import combine

        if superstep_hook or finished:
            found = [HookObserver(self, run_id), *found]
        return combine(found)


class HookObserver:
    """The ``plait_superstep_finished`` and ``plait_run_finished`` hooks, as a
    :class:`~plait.spi.RunObserver` of one run: the runner has one seam, and these
    hooks are told through it (what they are not told of, it ignores)."""

    def __init__(self, manager: Any, run_id: str) -> None:
        self.manager = manager
        self.run_id = run_id
        self.executor_ids: tuple[str, ...] = ()

    def superstep_started(self, superstep: int, executor_ids: tuple[str, ...]) -> None:
        self.executor_ids = executor_ids

    def superstep_finished(self, superstep: int, error: BaseException | None) -> None:
        if error is None:
            self.manager.notify_superstep_finished(self.run_id, superstep, list(self.executor_ids))

    def run_finished(self, status: str, error: BaseException | None) -> None:
        self.manager.notify_run_finished(self.run_id, status, error)

    def invocation_started(self, invocation: Any) -> None:
        return None

    def invocation_retrying(
        self, handle: Any, attempt: int, delay: float, error: BaseException
    ) -> None:
        return None

    def invocation_finished(
        self, handle: Any, attempt: int, status: str, error: BaseException | None
    ) -> None:
        return None

    def request(self, executor_id: str, request_id: str, superstep: int) -> None:
        return None

    def checkpoint_written(self, checkpoint_id: str, superstep: int, status: str) -> None:
        return None

    def checkpoint_metadata(self) -> None:
        return None


class PluginManager(HookFacade):
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
        self.pm: pluggy.PluginManager = HookManager("plait")
        self.pm.add_hookspecs(hookspecs)
        self._entry_points = entry_points
        if disabled is None:
            disabled = (n.strip() for n in os.environ.get(DISABLE_ENV, "").split(","))
        self.disabled = frozenset(n for n in disabled if n)
        for blocked in self.disabled:  # a plugin name or a distribution name
            self.pm.set_blocked(blocked)
        self.running_version = running_version or core_version()
        self._plugins: dict[str, Plugin] = {}
        self._registries: dict[str, Registry[Any]] | None = None
        self._loaded = False
        self._observers: tuple[bool, bool, bool, bool] | None = None
        self._conflicts: dict[str, list[str]] = {}

    # -- loading ---------------------------------------------------------------

    def load_entrypoints(self, *, strict: bool = True) -> None:
        """Load every plugin of group ``plait`` once.

        :param strict: raise :class:`~plait.PluginLoadErrors` with every failure;
            if false, keep going and record failed plugins (``describe()`` shows them).
        """
        if not self._loaded:
            try:
                self._load_all()
            except BaseException:
                # an interrupt mid-import: forget this attempt, so the next use retries
                # instead of finding a manager marked loaded but empty
                self._reset()
                raise
        if strict:
            failed = [p.error for p in self._plugins.values() if p.status == "failed"]
            errors = [e for e in failed if isinstance(e, PluginLoadError)]
            if errors:
                # a failure is never skipped in silence: strict callers see it every time
                raise PluginLoadErrors(summarize_failures(errors), errors)

    def _load_all(self) -> None:
        for ep, dist_name, version, requires in iter_entry_points(self._entry_points):
            spec = f"{ep.name} = {ep.value}"
            plugin = Plugin(ep.name, dist_name, version, spec)
            first = self._plugins.get(ep.name)
            # two distributions may declare the same entry-point name; keep both listed
            key = ep.name if first is None else f"{ep.name} ({dist_name})"
            self._plugins[key] = plugin
            if self.pm.is_blocked(ep.name) or self.pm.is_blocked(dist_name):
                plugin.status = "blocked"  # never imported
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
                check_compatible(requires, plugin, self.running_version)
                phase = "import"
                obj = ep.load()
                phase = "register"
                self._register_hooks(obj, ep.name)
                plugin.obj = obj
            except Exception as exc:
                self._fail(plugin, phase, exc)
        self._build_registries()
        self._loaded = True
        self._warn_unknown_disabled()

    def _reset(self) -> None:
        for plugin in self._plugins.values():
            if plugin.obj is not None:
                self._unregister_hooks(plugin.name)
        self._plugins = {}
        self._registries = None
        self._observers = None
        self._loaded = False

    def _warn_unknown_disabled(self) -> None:
        message = unknown_disabled(self.disabled, self._plugins.values())
        if message is not None:
            warnings.warn(message, PlaitWarning, stacklevel=3)

    def _fail(self, plugin: Plugin, phase: str, exc: BaseException) -> PluginLoadError:
        if plugin.obj is not None:
            self._unregister_hooks(plugin.name)
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
        register_hooks(self.pm, obj, name)
        self._registries = None
        self._observers = None

    def _unregister_hooks(self, name: str) -> None:
        """Remove the hook implementations registered under ``name``, if any."""
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        self._registries = None
        self._observers = None

    def get_plugin(self, name: str) -> Any:
        """The plugin object registered under ``name`` (a module, a class or an object with
        hook implementations), or ``None``.

        .. versionadded:: 0.1
        """
        plugin = self._plugins.get(name)
        return None if plugin is None else plugin.obj

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
        plugin = Plugin(plugin_name, distribution or IN_PROCESS, "", plugin_name, obj)
        if self.pm.is_blocked(plugin_name):  # PLAIT_DISABLE_PLUGINS names it
            plugin.status, plugin.obj = "blocked", None
            self._plugins[plugin_name] = plugin
            return plugin_name
        self._register_hooks(obj, plugin_name)
        self._plugins[plugin_name] = plugin
        failures = self._build_registries()
        if failures:
            self.unregister(plugin_name)
            raise failures[0]
        if plugin_name in self._conflicts:
            # an explicit registration that clashes is refused at once, naming both sides
            error = PluginConflictError(self._conflicts[plugin_name][0])
            self.unregister(plugin_name)
            raise error
        return plugin_name

    def unregister(self, name: str) -> None:
        """Remove a plugin and everything it registered."""
        plugin = self._plugins.pop(name, None)
        if plugin is not None and plugin.obj is not None:
            self._unregister_hooks(plugin.name)

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
        """Collect every plugin's registrations; drop plugins that fail, and retry.

        A name two plugins register (neither saying ``replaces=``) is left out of its
        registry: looking it up raises the :class:`~plait.PluginConflictError`
        naming both distributions, and every other name of both plugins stays available.
        """
        failures: list[PluginLoadError] = []
        while True:
            collected, failed = self._collect()
            failures.extend(failed)
            if not failed:
                break
        registries: dict[str, Registry[Any]] = {}
        self._conflicts = {}
        for kind, by_name in collected.items():
            entries: dict[str, Registration[Any]] = {}
            conflicts: dict[str, str] = {}
            for name, regs in by_name.items():
                winner, error = resolve(kind, name, regs)
                if error is not None:
                    conflicts[name] = error
                    for reg in regs:
                        self._conflicts.setdefault(reg.plugin, []).append(error)
                elif winner is not None:
                    entries[name] = winner
            registries[kind] = Registry(kind, entries, conflicts)
        for plugin_name, errors in self._conflicts.items():
            for error in errors:
                warnings.warn(f"plugin {plugin_name!r}: {error}", PlaitWarning, stacklevel=4)
        self._registries = registries
        return failures

    def _calling_plugin(self) -> Plugin:
        name = CALLING_PLUGIN.get()
        if name is None or name not in self._plugins:
            raise RegistrationError(
                "register() was called outside a plugin's registry hook implementation "
                "(a hook wrapper must not register)"
            )
        return self._plugins[name]

    def _collect(
        self,
    ) -> tuple[dict[str, dict[str, list[Registration[Any]]]], list[PluginLoadError]]:
        """Call each registry hook once, through pluggy (so ``tryfirst``, ``trylast`` and
        wrappers apply), with a collector that knows which plugin each call comes from."""
        collected: dict[str, dict[str, list[Registration[Any]]]] = {k: {} for k in KIND_NAMES}
        for hook_name, (kind, check) in KINDS.items():
            caller = getattr(self.pm.hook, hook_name)
            if not caller.get_hookimpls():
                continue
            regs: list[Registration[Any]] = []
            try:
                caller(register=Collector(kind, check, self._calling_plugin, regs))
            except HookFailed as failed:
                plugin = self._plugins[failed.plugin_name]
                cause = failed.__cause__ or failed
                return collected, [self._fail(plugin, "validate", cause)]
            for reg in regs:
                collected[reg.kind].setdefault(reg.name, []).append(reg)
        return collected, []

    def register_commands(self, cli: Any) -> None:
        """Call ``plait_register_commands`` (after loading plugins) so they add CLI commands."""
        self.load_entrypoints()
        self.pm.hook.plait_register_commands(cli=cli)

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
                    conflicts=list(self._conflicts.get(plugin.name, [])),
                )
            )
        return infos


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
