"""Loading plugins: entry points of group ``plait``, the ``plait-core`` requirement each
declares, and which plugin a registry hook call comes from.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import attrs
import pluggy

from ._version import __version__
from .discovery import installed_entry_points
from .distributions import describe_distribution
from .errors import IncompatiblePluginError, PluginLoadError
from .registry import DISABLE_ENV

__all__ = [
    "ENTRY_POINT_GROUP",
    "EntryPointLike",
    "Plugin",
    "PluginInfo",
    "check_compatible",
    "core_version",
    "describe_distribution",
    "iter_entry_points",
]

ENTRY_POINT_GROUP = "plait"
IN_PROCESS = "(in-process)"


def core_version() -> str:
    """The running version of ``plait-core`` (a constant: no metadata is read)."""
    return __version__


def _canonical(name: str) -> str:
    """PEP 503 normalised distribution name (what ``packaging.utils.canonicalize_name``
    gives), without importing packaging for every plugin."""
    return re.sub(r"[-_.]+", "-", name).lower()


_RELEASE = re.compile(r"^\d+(\.\d+)*$")
_CLAUSE = re.compile(r"^(>=|<=|==|!=|<|>)\s*(\d+(?:\.\d+)*)$")


def _release(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()  # 1.0 == 1 in PEP 440
    return tuple(parts)


def _fast_contains(requirement: str, running: str) -> bool | None:
    """Does ``running`` satisfy a plain ``plait-core>=X,<Y`` requirement? ``None`` when
    the requirement or the version uses anything beyond plain release numbers and the six
    comparison operators — then :func:`_packaging_contains` decides. Plugins nearly always
    declare the plain form, and importing packaging costs more than loading a plugin."""
    if ";" in requirement or not _RELEASE.match(running):
        return None
    spec = _CORE_REQUIREMENT.sub("", requirement, count=1).strip()
    if spec.startswith("(") and spec.endswith(")"):
        spec = spec[1:-1]
    version = _release(running)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        match = _CLAUSE.match(clause)
        if match is None:
            return None
        op, bound = match.group(1), _release(match.group(2))
        ok = {
            ">=": version >= bound,
            "<=": version <= bound,
            ">": version > bound,
            "<": version < bound,
            "==": version == bound,
            "!=": version != bound,
        }[op]
        if not ok:
            return False
    return True


def _packaging_contains(requirement: str, running: str) -> bool | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version

    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return None
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        return None
    return bool(req.specifier.contains(Version(running), prereleases=True))


_CORE_REQUIREMENT = re.compile(r"^\s*plait[-_.]core\b(?![-_.\w])", re.IGNORECASE)


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
    #: names this plugin registers that another plugin registers too (unusable until one
    #: of them is disabled or says ``replaces=``)
    conflicts: list[str] = attrs.field(factory=list)


@attrs.define
class Plugin:
    name: str
    distribution: str
    version: str
    entry_point: str
    obj: Any = None
    status: str = "loaded"
    error: BaseException | None = None


def iter_entry_points(
    entry_points: Iterable[EntryPointLike] | None,
) -> Iterator[tuple[EntryPointLike, str, str, list[str]]]:
    """``(entry point, distribution, version, requirements)`` of group ``plait``, sorted by
    distribution then name, each distribution once even when it is twice on ``sys.path``."""
    seen: set[tuple[str, str]] = set()
    found: list[tuple[EntryPointLike, str, str, list[str]]] = []
    if entry_points is None:
        described: Iterable[tuple[EntryPointLike, str, str, list[str]]]
        described = installed_entry_points(ENTRY_POINT_GROUP)
    else:
        described = (_describe(ep) for ep in entry_points)
    for ep, dist_name, version, requires in described:
        key = (_canonical(dist_name), ep.name)
        if key in seen:  # the same distribution twice on sys.path
            continue
        seen.add(key)
        found.append((ep, dist_name, version, list(requires)))
    found.sort(key=lambda item: (item[1].lower(), item[0].name))
    return iter(found)


def _describe(ep: EntryPointLike) -> tuple[EntryPointLike, str, str, list[str]]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return ep, "(unknown)", "?", []
    return (ep, *describe_distribution(dist))


def check_compatible(requires: list[str], plugin: Plugin, running_version: str) -> None:
    """Raise :class:`IncompatiblePluginError` when ``requires`` excludes the running kernel."""
    for text in requires:
        if not _CORE_REQUIREMENT.match(text):
            continue
        verdict = _fast_contains(text, running_version)
        if verdict is None:  # markers, pre-releases, wildcards: ask packaging
            verdict = _packaging_contains(text, running_version)
        if verdict is False:
            spec = text.split(";")[0].strip()[len("plait-core") :].strip()
            raise IncompatiblePluginError(
                f"it requires plait-core{spec} but the running plait-core is "
                f"{running_version}; upgrade plait-core or install an older "
                f"{plugin.distribution}",
                distribution=plugin.distribution,
                version=plugin.version,
                entry_point=plugin.entry_point,
                phase="compatibility",
            )


class PluggyManager(pluggy.PluginManager):
    """pluggy's manager, looking only at ``plait_*`` names for hook implementations.

    pluggy inspects every attribute of a plugin module; a hook implementation named
    otherwise is refused (as an unknown hook) before pluggy sees the plugin, so only
    ``plait_*`` names can hold one, and skipping the rest halves the cost of loading plugins.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith("plait_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)


#: The plugin whose registry hook implementation is running (set by :func:`attributed`).
CALLING_PLUGIN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "plait_calling", default=None
)


class HookFailed(Exception):
    """A registry hook implementation raised; carries which plugin's (cause chained)."""

    def __init__(self, plugin_name: str) -> None:
        super().__init__(plugin_name)
        self.plugin_name = plugin_name


def attributed(function: Callable[..., Any], plugin_name: str) -> Callable[..., Any]:
    """``function`` (a registry hook implementation) marking which plugin is calling
    ``register`` while it runs, and which plugin failed when it raises."""

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

    call.__wrapped__ = function  # type: ignore[attr-defined]
    return call


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
