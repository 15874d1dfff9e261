"""Loading plugins: entry points of group ``plait``, the ``plait-core`` requirement each
declares, and which plugin a registry hook call comes from.

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextvars
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import attrs

from ._version import __version__
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


def _metadata() -> Any:
    # importlib.metadata on 3.12+, the backport (with the same entry-point API) before;
    # imported on first use: `import plait` alone never scans distributions
    if sys.version_info >= (3, 12):
        from importlib import metadata
    else:  # pragma: no cover - depends on the interpreter
        import importlib_metadata as metadata
    return metadata


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
    if entry_points is not None:
        eps: Iterable[Any] = entry_points
    else:
        eps = _metadata().entry_points(group=ENTRY_POINT_GROUP)
    described: dict[int, tuple[str, str, list[str]]] = {}  # by id(dist); eps keep them alive
    for ep in eps:
        dist = getattr(ep, "dist", None)
        requires: list[str] = []
        if dist is None:
            dist_name, version = "(unknown)", "?"
        else:
            if id(dist) not in described:
                described[id(dist)] = describe_distribution(dist)
            dist_name, version, requires = described[id(dist)]
        key = (_canonical(dist_name), ep.name)
        if key in seen:  # the same distribution twice on sys.path
            continue
        seen.add(key)
        found.append((ep, dist_name, version, list(requires)))
    found.sort(key=lambda item: (item[1].lower(), item[0].name))
    return iter(found)


#: The METADATA headers the loader needs, lower-cased (header names are case-insensitive).
_WANTED = ("name", "version", "requires-dist")


def describe_distribution(dist: Any) -> tuple[str, str, list[str]]:
    """A distribution's name, version and ``Requires-Dist`` requirements.

    Read with one pass over the header lines of its ``METADATA`` file: the email parser
    that ``dist.metadata`` uses costs a fresh process more than loading every plugin, and
    it is paid again for each of ``metadata``, ``version`` and ``requires``. Anything the
    scan cannot read with certainty (no ``METADATA`` file, a folded header, a missing
    field) is left to the distribution's own API.
    """
    scanned = _scan_metadata(dist)
    if scanned is not None:
        return scanned
    requires = dist.requires
    return dist.metadata["Name"], dist.version, list(requires or [])


def _scan_metadata(dist: Any) -> tuple[str, str, list[str]] | None:
    read_text = getattr(dist, "read_text", None)
    if not callable(read_text):
        return None
    try:
        text = read_text("METADATA")
    except (OSError, UnicodeDecodeError):
        return None
    if not isinstance(text, str):
        return None
    fields: dict[str, list[str]] = {name: [] for name in _WANTED}
    current: list[str] | None = None
    for line in text.split("\n"):
        line = line.rstrip("\r")
        if not line:
            break  # the headers end at the first empty line; the description follows
        if line[0] in " \t":
            if current is not None:
                return None  # a folded Name, Version or Requires-Dist: let the parser decide
            continue
        name, colon, value = line.partition(":")
        if not colon:
            return None
        current = fields.get(name.strip().lower())
        if current is not None:
            current.append(value.lstrip(" \t"))
    names, versions, requires = fields["name"], fields["version"], fields["requires-dist"]
    if len(names) != 1 or len(versions) != 1 or not requires:
        # no Requires-Dist: the distribution's API also looks at egg-info's requires.txt
        return None
    return names[0], versions[0], requires


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
