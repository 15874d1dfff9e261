"""Loading plugins: entry points of group ``plait`` (from :mod:`importlib.metadata`), the
``plait-core`` requirement each declares (checked with :mod:`packaging`), and which plugin
a registry hook call comes from.

Nothing here reads distribution files itself or keeps anything between processes: what is
installed is what :func:`importlib.metadata.entry_points` says now.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import attrs
import pluggy

from ._errors import (
    IncompatiblePluginError,
    PluginConflictError,
    PluginLoadError,
    RegistrationError,
)
from ._registry import DISABLE_ENV, KINDS
from ._version import __version__

__all__ = [
    "ENTRY_POINT_GROUP",
    "EntryPointLike",
    "Plugin",
    "PluginInfo",
    "check_compatible",
    "core_version",
    "iter_entry_points",
]

ENTRY_POINT_GROUP = "plait"
IN_PROCESS = "(in-process)"
#: The distribution whose version plugins declare a requirement on (PEP 503 normalised).
CORE_DISTRIBUTION = "plait-core"


def core_version() -> str:
    """The running version of ``plait-core`` (a constant: no metadata is read)."""
    return __version__


class EntryPointLike(Protocol):
    """What the loader needs of an entry point (real or fake, see ``plait.testing``).

    A real one is an :class:`importlib.metadata.EntryPoint`; its ``dist`` (when it has one)
    answers ``name``, ``version`` and ``requires``.
    """

    @property
    def name(self) -> str:
        """The entry point's name: the plugin's user-visible name."""

    @property
    def value(self) -> str:
        """What it names, ``module`` or ``module:attr``."""

    def load(self) -> Any:
        """Import and return the plugin object."""


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
    #: names this plugin registers that another plugin registers too (unusable until one
    #: of them is disabled or says ``replaces=``)
    conflicts: list[str] = attrs.field(factory=list)


@attrs.define
class Plugin:
    """One plugin the manager knows: where it comes from, and how loading it went."""

    name: str
    distribution: str
    version: str
    entry_point: str
    obj: Any = None
    status: str = "loaded"
    error: BaseException | None = None


#: ``(entry point, distribution, version, requirements)``
Found = tuple[EntryPointLike, str, str, list[str]]


def iter_entry_points(entry_points: Iterable[EntryPointLike] | None) -> Iterator[Found]:
    """``(entry point, distribution, version, requirements)`` of group ``plait``, sorted by
    distribution then name, each distribution once even when it is twice on ``sys.path``.

    :param entry_points: the entry points to describe; ``None`` reads the installed ones
        (:func:`importlib.metadata.entry_points`, which keeps the first distribution of a
        name on ``sys.path``, as the import system does).
    """
    from packaging.utils import canonicalize_name

    if entry_points is None:
        # the standard library's, on every Python we support (3.10+ has ``group=`` and
        # ``EntryPoint.dist``): on 3.11 it lists and describes the installed plugins in
        # about a third of the time the importlib-metadata backport takes
        from importlib.metadata import entry_points as installed

        listed: Iterable[EntryPointLike] = installed(group=ENTRY_POINT_GROUP)
    else:
        listed = entry_points
    seen: set[tuple[str, str]] = set()
    found: list[Found] = []
    for ep in listed:
        dist_name, version, requires = _describe(ep)
        key = (canonicalize_name(dist_name), ep.name)
        if key in seen:  # the same distribution twice on sys.path (or passed twice)
            continue
        seen.add(key)
        found.append((ep, dist_name, version, requires))
    found.sort(key=lambda item: (item[1].lower(), item[0].name))
    return iter(found)


def _describe(ep: EntryPointLike) -> tuple[str, str, list[str]]:
    """The name, version and requirements of the distribution that declares ``ep``."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "(unknown)", "?", []
    return str(dist.name), str(dist.version), list(dist.requires or [])


def check_compatible(requires: Iterable[str], plugin: Plugin, running_version: str) -> None:
    """Raise :class:`IncompatiblePluginError` when one of ``requires`` (a distribution's
    ``Requires-Dist`` lines) names ``plait-core`` with a specifier that excludes
    ``running_version``. A requirement behind a marker that does not hold here (an extra,
    another Python) does not apply; a line :mod:`packaging` cannot read is not ours to judge
    (the installer accepted it)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    for text in requires:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) != CORE_DISTRIBUTION:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        try:
            running = Version(running_version)
        except InvalidVersion as exc:
            raise IncompatiblePluginError(
                f"the running plait-core version {running_version!r} is not a PEP 440 version",
                distribution=plugin.distribution,
                version=plugin.version,
                entry_point=plugin.entry_point,
                phase="compatibility",
            ) from exc
        if not requirement.specifier.contains(running, prereleases=True):
            raise IncompatiblePluginError(
                f"it requires plait-core{requirement.specifier} but the running plait-core is "
                f"{running_version}; upgrade plait-core or install an older "
                f"{plugin.distribution}",
                distribution=plugin.distribution,
                version=plugin.version,
                entry_point=plugin.entry_point,
                phase="compatibility",
            )


# -- which plugin is calling ``register`` ------------------------------------------------------

#: The plugin whose registry hook implementation is running (set by :class:`HookAdapter`).
CALLING_PLUGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "plait_calling", default=None
)


class HookFailed(Exception):
    """A registry hook implementation raised; carries which plugin's (cause chained)."""

    def __init__(self, plugin_name: str) -> None:
        super().__init__(plugin_name)
        self.plugin_name = plugin_name


class HookAdapter:
    """What pluggy registers for one plugin: the plugin's hook implementations, those of
    registry hooks wrapped so that ``register`` knows which plugin calls it and a failure
    names the plugin. pluggy calls them as it calls any plugin's (``tryfirst``, ``trylast``
    and wrappers apply); the plugin object itself is never changed.

    :param obj: the plugin (a module, a class or an object with hook implementations).
    :param name: the plugin's name.
    :param implementations: hook name -> (function, pluggy's hookimpl options), as
        :func:`hook_implementations` finds them.
    """

    def __init__(
        self,
        obj: Any,
        name: str,
        implementations: dict[str, tuple[Callable[..., Any], dict[str, Any]]],
    ) -> None:
        self.plugin = obj
        self.name = name
        self.options: dict[str, dict[str, Any]] = {}
        for hook_name, (function, options) in implementations.items():
            self.options[hook_name] = options
            wraps_calls = options.get("wrapper") or options.get("hookwrapper")
            if hook_name in KINDS and not wraps_calls:
                function = _attributed(function, name)
            setattr(self, hook_name, function)

    def __repr__(self) -> str:
        return f"<plugin {self.name!r}: {self.plugin!r}>"


def _attributed(function: Callable[..., Any], plugin_name: str) -> Callable[..., Any]:
    """``function`` (a registry hook implementation) marking which plugin is calling
    ``register`` while it runs, and which plugin failed when it raises."""

    @functools.wraps(function)  # pluggy reads the argument names through __wrapped__
    def call(*args: Any, **kwargs: Any) -> Any:
        token = CALLING_PLUGIN.set(plugin_name)
        try:
            return function(*args, **kwargs)
        except HookFailed:
            raise
        except Exception as exc:
            raise HookFailed(plugin_name) from exc
        finally:
            CALLING_PLUGIN.reset(token)

    return call


class HookManager(pluggy.PluginManager):
    """pluggy's manager, taking a :class:`HookAdapter`'s implementations as they were found
    on the plugin (so a marker on a ``classmethod`` or ``staticmethod`` counts)."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if isinstance(plugin, HookAdapter):
            return plugin.options.get(name)
        return super().parse_hookimpl_opts(plugin, name)


def hook_implementations(
    pm: pluggy.PluginManager, obj: Any
) -> dict[str, tuple[Callable[..., Any], dict[str, Any]]]:
    """The hook implementations of ``obj``: every ``plait_*`` attribute pluggy's marker
    (``plait.hookimpl``) is on. Other names are not looked at: reading every attribute of a
    plugin module costs a cold start, and a hook implementation is named for its hook."""
    found: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {}
    for name in dir(obj):
        if not name.startswith("plait_"):
            continue
        options = pm.parse_hookimpl_opts(obj, name)
        if options is not None:
            found[name] = (getattr(obj, name), dict(options))
    return found


def register_hooks(pm: pluggy.PluginManager, obj: Any, name: str) -> None:
    """Register ``obj``'s hook implementations with ``pm`` under ``name`` (through a
    :class:`HookAdapter`), or raise :class:`~plait.RegistrationError` leaving nothing
    registered: no coroutines, only hooks Plait specifies (pluggy's ``check_pending``), with
    arguments their specification has."""
    implementations = hook_implementations(pm, obj)
    for hook_name, (function, _) in implementations.items():
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            raise RegistrationError(
                f"hook implementation {hook_name!r} of plugin {name!r} is a coroutine; "
                "Plait hooks are synchronous (register async objects instead)"
            )
    try:
        pm.register(HookAdapter(obj, name, implementations), name=name)
    except pluggy.PluginValidationError as exc:
        raise RegistrationError(f"plugin {name!r}: {exc}") from exc
    except ValueError as exc:  # pluggy: this name is registered already
        raise PluginConflictError(f"plugin {name!r} cannot be registered: {exc}") from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        unknown = [h for h in implementations if not getattr(pm.hook, h).has_spec()]
        pm.unregister(name=name)
        raise RegistrationError(
            f"plugin {name!r} implements unknown hook {', '.join(map(repr, unknown))}"
        ) from exc


# -- messages ------------------------------------------------------------------------------------


def summarize_failures(errors: list[PluginLoadError]) -> str:
    """One line per broken plugin, each with the fix."""
    lines = [f"{e} — disable it with {DISABLE_ENV}={e.entry_point.split(' = ')[0]}" for e in errors]
    return "; ".join(lines)


def unknown_disabled(disabled: frozenset[str], plugins: Iterable[Plugin]) -> str | None:
    """The warning for names in ``PLAIT_DISABLE_PLUGINS`` that match no plugin (by plugin
    name or distribution), or ``None``."""
    plugins = list(plugins)
    known = {p.name for p in plugins} | {p.distribution for p in plugins}
    unknown = sorted(disabled - known)
    if not unknown:
        return None
    installed = ", ".join(sorted(p.name for p in plugins)) or "none"
    names = ", ".join(repr(n) for n in unknown)
    return (
        f"{DISABLE_ENV} names {names}, but no installed plugin or distribution has that "
        f"name; plugins: {installed}"
    )
