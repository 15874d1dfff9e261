"""The plugin manager: entry points of group ``plait``, in-process plugins, registries,
and loading them.

Plugins are found through the entry-point group ``plait``; the entry-point name is the
plugin's user-visible name (what ``plait plugins`` prints and what
``PLAIT_DISABLE_PLUGINS=name,name`` accepts). Each entry point is loaded in four phases —
``compatibility`` (its ``plait-core`` requirement against the running kernel), ``import``,
``register`` (hook implementations checked: known hooks only, no coroutines) and
``validate`` (what its registry hooks register fits each kind's protocol, with no name
clash). A failure in any phase becomes a :class:`~plait.PluginLoadError` naming the
distribution, its version, the entry point and the phase; all failures are raised together.

The entry points come from :func:`importlib.metadata.entry_points`, the requirement check
from :mod:`packaging`, and disabling, the unknown-hook check and which plugin implements
what from pluggy (``set_blocked``/``is_blocked``, ``check_pending``, ``get_hookimpls()``
and ``HookImpl.plugin_name``). What those two libraries found and decided is kept between
processes as Python keeps bytecode (:class:`InstalledPlugins`): beside the kernel's own
``.pyc`` files, written by whoever may write them, and used only while every directory on
``sys.path`` is as it was when it was written.

:class:`PluginManager` has one typed method per hook the kernel calls (tox's pattern), so
no kernel code calls ``pm.hook.x(...)`` untyped.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import os
import re
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs
import pluggy

from . import _hookspecs as hookspecs
from ._errors import (
    IncompatiblePluginError,
    PlaitWarning,
    PluginConflictError,
    PluginLoadError,
    PluginLoadErrors,
    RegistrationError,
    UnknownNameError,
)
from ._records import record_repr
from ._registry import (
    DISABLE_ENV,
    KINDS,
    SINGLETONS,
    Collector,
    Lazy,
    Pending,
    Registration,
    Registry,
    _has,
    resolve,
)
from ._version import __version__

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from ._observer import RunObserver
    from ._options import DeclaredOption

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
    "EntryPointLike",
    "Plugin",
    "check_compatible",
    "iter_entry_points",
    "CachedEntryPoint",
    "InstalledPlugins",
]


F = TypeVar("F", bound=Callable[..., Any])

# -- loading: entry points and requirements -------------------------------------------------

ENTRY_POINT_GROUP = "plait"
IN_PROCESS = "(in-process)"
#: The distribution whose version plugins declare a requirement on (PEP 503 normalised).
CORE_DISTRIBUTION = "plait-core"
#: The distributions behind the kernel's own seams, named by the kernel so that a bare
#: ``plait-core`` (no catalog installed) still says what durable runs and ``plait.load``
#: need; ``plait_provided_names`` answers for everything else.
_SEAMS: dict[tuple[str, str], str] = {
    ("hook", "plait_durability"): "plait-durable",
    ("hook", "plait_documents"): "plait-documents",
    ("hook", "plait_workflow_as_connection"): "plait-builders",
    ("hook", "plait_workflow_as_agent"): "plait-teams",
    # the run option that makes a run durable (``Workflow.resume``'s word too)
    ("run_option", "checkpoint"): "plait-durable",
    ("run_option", "max_lead"): "plait-pipeline",  # the pipelined schedule's lead
}


def core_version() -> str:
    """The running version of ``plait-core`` (a constant: no metadata is read)."""
    return __version__


class EntryPointLike(Protocol):
    """What the loader needs of an entry point (real or fake, see ``plait_testing``).

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


@attrs.define(repr=False)
class PluginInfo:
    """What ``plait plugins`` shows about one plugin.

    ``status`` is ``loaded``, ``blocked`` (disabled by ``PLAIT_DISABLE_PLUGINS``) or
    ``failed`` (then ``error`` says why). ``registered`` maps kind -> names.
    """

    __repr__ = record_repr

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


@attrs.define(repr=False)
class Plugin:
    """One plugin the manager knows: where it comes from, and how loading it went."""

    __repr__ = record_repr

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
        key = (_normalize(dist_name), ep.name)
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
    metadata: Any = getattr(dist, "metadata", None)
    get_all = getattr(metadata, "get_all", None)
    if get_all is None:  # not an importlib.metadata distribution (a test's fake)
        return str(dist.name), str(dist.version), list(dist.requires or [])
    # METADATA parsed once: ``dist.name``, ``.version`` and ``.requires`` each parse it again,
    # which made up two thirds of describing the installed plugins
    requires = get_all("Requires-Dist")
    if requires is None:  # none there, or an egg-info's requires.txt: dist.requires reads it
        requires = dist.requires
    return str(metadata["Name"]), str(metadata["Version"]), list(requires or [])


def check_compatible(requires: Iterable[str], plugin: Plugin, running_version: str) -> None:
    """Raise :class:`IncompatiblePluginError` when one of ``requires`` (a distribution's
    ``Requires-Dist`` lines) names ``plait-core`` with a specifier that excludes
    ``running_version``. A requirement behind a marker that does not hold here (an extra,
    another Python) does not apply; a line :mod:`packaging` cannot read is not ours to judge
    (the installer accepted it).

    Only the lines that can name ``plait-core`` are read (:func:`_may_name_core`), each
    distinct one once a process (:func:`_requirement`): a plugin declares several
    requirements, and the installed plugins all declare the same one on the kernel. A
    plugin with a manifest (:meth:`InstalledPlugins.manifest`) passed this check with
    this kernel, and is not checked again."""
    for text in requires:
        if not _may_name_core(text):
            continue
        requirement = _requirement(text)
        if requirement is None:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        from packaging.version import InvalidVersion, Version

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


def _normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it: each run of ``-``, ``_`` and ``.`` is
    one ``-``, case-insensitively (the rule :func:`packaging.utils.canonicalize_name`
    applies, without importing :mod:`packaging.tags` for it)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _may_name_core(text: str) -> bool:
    """Whether the requirement ``text`` can be one on ``plait-core``: a requirement starts
    with its distribution's name (:func:`_normalize`). A line that fails this cannot name
    the kernel, so it is never parsed; one that passes (``plait-core-extras`` too) is left
    to :mod:`packaging`."""
    return _normalize(text.lstrip()).startswith(CORE_DISTRIBUTION)


@functools.lru_cache(maxsize=64)
def _requirement(text: str) -> Requirement | None:
    """``text`` read by :mod:`packaging` if it names ``plait-core``, else ``None`` (another
    distribution's, or a line packaging cannot read)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    return requirement if canonicalize_name(requirement.name) == CORE_DISTRIBUTION else None


# -- what discovery found, kept between processes --------------------------------------------

#: The file that keeps what discovery found, in the kernel's ``__pycache__`` directory.
CACHE_NAME = "plait-entry-points.json"
#: How many states of ``sys.path`` (a console script, ``python -m`` in a few directories,
#: another virtual environment using the same source) one file remembers.
CACHE_STATES = 8
#: A directory changed less than this long ago (nanoseconds) is not remembered: a second
#: change within the file system's timestamp granularity would look like no change.
_SETTLE_NS = 2_000_000_000
_CACHE_FORMAT = 1
_CACHE_MAX_BYTES = 1 << 20


@attrs.frozen(repr=False)
class CachedEntryPoint:
    """An installed entry point as :class:`InstalledPlugins` remembers it."""

    __repr__ = record_repr

    name: str
    #: ``module`` or ``module:attr.attr``, optionally followed by ``[extras]``.
    value: str

    def load(self) -> Any:
        """Import the module and return what ``value`` names, as
        :meth:`importlib.metadata.EntryPoint.load` does."""
        import importlib

        module, _, attr = self.value.partition("[")[0].partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in attr.strip().split("."):
            if part:
                obj = getattr(obj, part)
        return obj


class InstalledPlugins:
    """The installed plugins (entry points of group ``plait``) and what each registers
    (its manifest), kept between processes.

    :mod:`importlib.metadata` reads every installed distribution's ``entry_points.txt``
    and :mod:`packaging` parses the plugins' requirements; together with their imports
    that is about a third of a small ``plait`` command, and importing every plugin's
    module most of the rest of loading them. What the first two answer changes only
    when a directory on ``sys.path`` changes (an install or removal adds or deletes a
    ``*.dist-info`` directory, which changes its parent's modification time), so their
    answer is kept with the state of every ``sys.path`` directory it was worked out for
    (path, modification time, inode, device, size), and used only while all of them
    are the same. Directories changed in the last two seconds are not remembered. A
    plugin's manifest is kept the same way, with the state of its package's module files
    (:meth:`manifest`).

    The file lives where Python keeps the kernel's bytecode (``plait/__pycache__``,
    :func:`importlib.util.cache_from_source`) and follows bytecode's rules: whoever may
    write it may change the kernel's code, so it is trusted as far as the code is (a
    file anywhere else, such as the user's cache directory, is never read);
    ``PYTHONDONTWRITEBYTECODE`` stops writing it; a file that cannot be written, read
    or understood is ignored and nothing else changes. A custom distribution finder on
    ``sys.meta_path`` turns it off (what it finds is not in any directory's state).

    :param running_version: the kernel version the remembered manifests hold for.
    :param path: the file (tests); ``None`` for the one beside the kernel's bytecode.
    """

    def __init__(self, running_version: str, path: str | None = None) -> None:
        self.running_version = running_version
        self.path = path if path is not None else _cache_path()
        self.state = _path_state(running_version)
        self._found: list[tuple[str, str, str, str, list[str]]] | None = None
        #: entry-point name -> manifest (:meth:`manifest`)
        self.manifests: dict[str, Any] = {}
        self._records: list[Any] = []
        self._table: list[Any] = []  # the file's manifests, which its states name by place
        self._changed = False

    def found(self) -> list[Found]:
        """What :func:`iter_entry_points` finds, remembered or worked out (and then
        remembered by :meth:`save`)."""
        if self._found is None:
            self._recall()
        if self._found is None:
            self._found = [
                (ep.name, ep.value, dist, version, [r for r in requires if _may_name_core(r)])
                for ep, dist, version, requires in iter_entry_points(None)
            ]
            self._changed = True
        return [
            (CachedEntryPoint(name, value), dist, version, list(requires))
            for name, value, dist, version, requires in self._found
        ]

    def manifest(self, name: str) -> dict[str, Any] | None:
        """What the entry point ``name`` registers (its hook implementations, the names
        its registry hooks register and its run options), remembered when its module was
        last imported, or ``None``: never imported with this ``sys.path``, or one of its
        package's module files changed since (modification time or size, as bytecode is
        checked)."""
        manifest = self.manifests.get(name)
        if not isinstance(manifest, dict):
            return None
        try:
            for path, mtime, size in manifest["files"]:
                st = os.stat(path)
                if [st.st_mtime_ns, st.st_size] != [mtime, size]:
                    return None
            for attr, hook_name, argnames, opts in manifest["hooks"]:
                if not (_is_strings([attr, hook_name, *argnames]) and isinstance(opts, dict)):
                    return None
                if not all(_is_argname(arg) for arg in argnames):  # (what pluggy reads)
                    return None
            options = manifest.get("options", {})
            if not all(_is_strings(names) for names in options.values()):
                return None
            for when in manifest.get("when", {}).values():
                if not all(_is_strings(when[key]) for key in ("options", "sections", "modules")):
                    return None
            for regs in manifest["registered"].values():
                for name, replaces, made in regs:
                    if not _is_strings([name, *([replaces] if replaces else [])]):
                        return None
                    if made is not None and not _is_strings([made[0], *made[1]]):
                        return None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):  # of the wrong shape
            return None
        return manifest

    def remember(self, name: str, manifest: dict[str, Any]) -> None:
        """Keep ``manifest`` of the entry point ``name``, just imported (:meth:`manifest`)."""
        if self.manifests.get(name) != manifest:
            self.manifests[name] = manifest
            self._changed = True

    def _recall(self) -> None:
        if self.path is None or self.state is None:
            return
        import json

        try:
            with open(self.path, "rb") as file:
                data = file.read(_CACHE_MAX_BYTES + 1)
            document = json.loads(data) if len(data) <= _CACHE_MAX_BYTES else None
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON, nested too deep
            return
        if not isinstance(document, dict) or document.get("format") != _CACHE_FORMAT:
            return
        records, table = document.get("states"), document.get("manifests", [])
        if not isinstance(records, list) or not isinstance(table, list):
            return
        self._records, self._table = records, table
        for record in records:
            if isinstance(record, dict) and record.get("state") == self.state:
                found: Any = record.get("found")
                if _is_found(found):
                    self._found = [(a, b, c, d, list(e)) for a, b, c, d, e in found]
                    self.manifests = _unshared(record.get("plugins"), table)
                return

    def save(self) -> None:
        """Write what was worked out, if anything was and the state is settled."""
        import sys
        import time

        if not self._changed or self.path is None or self.state is None:
            return
        if sys.dont_write_bytecode or self._found is None:
            return
        now = time.time_ns()
        changed = (stat[0] for _, stat in self.state["sys.path"] if stat is not None)
        if any(now - mtime < _SETTLE_NS for mtime in changed):
            return
        import json
        import tempfile

        table: dict[str, int] = {}  # each manifest once (as JSON), however many states use it

        def shared(manifests: dict[str, Any]) -> dict[str, int]:
            return {
                name: table.setdefault(json.dumps(manifest, sort_keys=True), len(table))
                for name, manifest in manifests.items()
            }

        record = {"state": self.state, "found": self._found, "plugins": shared(self.manifests)}
        others = [
            {**r, "plugins": shared(_unshared(r.get("plugins"), self._table))}
            for r in self._records
            if isinstance(r, dict) and r.get("state") != self.state
        ][: CACHE_STATES - 1]
        document = {
            "format": _CACHE_FORMAT,
            "states": [record, *others],
            "manifests": [json.loads(manifest) for manifest in table],
        }
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".plait-entry-points-", dir=directory)
            try:
                os.chmod(fd, os.stat(__file__).st_mode & 0o666)  # the source's, as a .pyc
                with os.fdopen(fd, "w", encoding="utf-8") as file:
                    json.dump(document, file)
                os.replace(temporary, self.path)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:  # as Python does with bytecode: an unwritable place is not an error
            return
        self._changed = False


def _cache_path() -> str | None:
    """Where :class:`InstalledPlugins` keeps its file: the kernel's ``__pycache__``."""
    from importlib.util import cache_from_source

    try:
        return os.path.join(os.path.dirname(cache_from_source(__file__)), CACHE_NAME)
    except (NotImplementedError, ValueError):  # no bytecode cache on this interpreter
        return None


def _path_state(running_version: str) -> dict[str, Any] | None:
    """The state of every ``sys.path`` directory, or ``None`` when a distribution finder
    other than the standard library's could find plugins elsewhere."""
    import sys
    from importlib.machinery import PathFinder

    for finder in sys.meta_path:
        if hasattr(finder, "find_distributions") and finder is not PathFinder:
            return None
    directories: list[Any] = []
    for entry in sys.path:
        try:
            st = os.stat(entry or ".")
        except (OSError, ValueError):
            directories.append([entry, None])
        else:
            directories.append([entry, [st.st_mtime_ns, st.st_ino, st.st_dev, st.st_size]])
    return {"python": sys.hexversion, "kernel": running_version, "sys.path": directories}


def _unshared(shared: Any, table: list[Any]) -> dict[str, Any]:
    """A state's manifests, by entry-point name, from the places in ``table`` it names."""
    if not isinstance(shared, dict):
        return {}
    return {
        name: table[i] for name, i in shared.items() if isinstance(i, int) and 0 <= i < len(table)
    }


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_argname(text: str) -> bool:
    """Can ``text`` name a stub's argument: an identifier, not a keyword? A manifest
    whose argument names are anything else is not used (pluggy would read them as the
    implementation's arguments)."""
    return text.isidentifier() and not keyword.iskeyword(text)


def _is_found(value: Any) -> bool:
    """Whether ``value`` is a list of ``[name, value, distribution, version, [requires]]``."""
    return isinstance(value, list) and all(
        isinstance(item, list)
        and len(item) == 5
        and all(isinstance(part, str) for part in item[:4])
        and _is_strings(item[4])
        for item in value
    )


# -- registering a plugin's hook implementations ---------------------------------------------


class HookManager(pluggy.PluginManager):
    """pluggy's manager, looking only at a plugin's ``plait_*`` attributes (pluggy's
    documented way to choose what counts as a hook implementation): one is named for its
    hook, and reading every attribute of every plugin module, as pluggy does by default,
    costs each ``plait`` command about 10 ms instead of 1 for the first-party plugins."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith("plait_"):
            return None
        return super().parse_hookimpl_opts(plugin, name)


def register_hooks(
    pm: pluggy.PluginManager,
    obj: Any,
    name: str,
    *,
    check: bool = True,
    kinds: Mapping[str, Any] = KINDS,
) -> None:
    """Register ``obj``'s hook implementations with ``pm`` under ``name``, or raise
    :class:`~plait.RegistrationError` leaving nothing registered: no coroutines, only hooks
    Plait or a plugin specifies, no wrapper of a registry hook (``kinds``) or a singleton
    hook (:func:`check_known`, unless ``check`` is false: loading the installed plugins
    checks once all of them have declared their hooks and registry kinds), with arguments
    their specification has."""
    try:
        pm.register(obj, name=name)
    except pluggy.PluginValidationError as exc:
        raise RegistrationError(f"plugin {name!r}: {exc}") from exc
    except Exception as exc:
        if pm.get_plugin(name) is obj:  # its plait_addhooks raised as pluggy called it
            pm.unregister(name=name)
            raise RegistrationError(f"plugin {name!r}: plait_addhooks raised {exc!r}") from exc
        if isinstance(exc, ValueError):  # pluggy: this name (or object) is registered already
            raise PluginConflictError(f"plugin {name!r} cannot be registered: {exc}") from exc
        raise
    mine = [
        (caller.name, impl)
        for caller in pm.get_hookcallers(obj) or ()
        for impl in caller.get_hookimpls()
        if impl.plugin_name == name
    ]
    for hook_name, impl in mine:
        function = impl.function
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            pm.unregister(name=name)
            raise RegistrationError(
                f"hook implementation {hook_name!r} of plugin {name!r} is a coroutine; "
                "Plait hooks are synchronous (register async objects instead)"
            )
    if check:
        check_known(pm, name, kinds)


def check_known(pm: pluggy.PluginManager, name: str, kinds: Mapping[str, Any] = KINDS) -> None:
    """Raise :class:`~plait.RegistrationError`, unregistering plugin ``name``, when it
    implements a hook that neither Plait nor a plugin declares (``plait_addhooks``) and
    that it does not mark ``optionalhook=True`` (pluggy's ``check_pending``), or wraps a
    registry hook (``kinds``: the kernel's and those plugins declare) or a singleton hook."""
    callers = pm.get_hookcallers(pm.get_plugin(name)) or ()
    unknown = [
        caller.name
        for caller in callers
        if not caller.has_spec()
        and any(i.plugin_name == name and not i.optionalhook for i in caller.get_hookimpls())
    ]
    if unknown:
        pm.unregister(name=name)
        raise RegistrationError(
            f"plugin {name!r} implements unknown hook {', '.join(map(repr, unknown))}"
        )
    for caller in callers:
        if caller.name not in kinds and caller.name not in SINGLETONS:
            continue
        for impl in caller.get_hookimpls():
            if impl.plugin_name == name and (impl.wrapper or impl.hookwrapper):
                pm.unregister(name=name)
                raise RegistrationError(
                    f"hook implementation {caller.name!r} of plugin {name!r} is a hook "
                    "wrapper; the kernel calls each plugin's implementation of this hook on "
                    "its own (so what it registers is that plugin's), and a wrapper would "
                    "never run"
                )


def call_each(pm: pluggy.PluginManager, hook_name: str) -> Iterator[pluggy.HookImpl]:
    """The implementations of ``hook_name``, in pluggy's call order (``tryfirst`` and
    ``trylast`` apply), for the kernel to call one at a time (:func:`call_impl`): what a
    call registers, returns or raises is that plugin's, and pluggy says which plugin an
    implementation belongs to (``HookImpl.plugin_name``), so nothing is wrapped to find
    out. Wrappers are refused on such hooks (:func:`check_known`)."""
    caller: pluggy.HookCaller = getattr(pm.hook, hook_name)
    return reversed(caller.get_hookimpls())


def call_impl(impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    """Call one hook implementation with the arguments it takes (pluggy passes arguments
    by name, and an implementation may take fewer than its specification)."""
    return impl.function(*(kwargs[name] for name in impl.argnames))


# -- an installed plugin registered from its manifest, imported on first use -----------------


class LazyPlugin:
    """Stands in for an entry point's module with pluggy, made from the module's manifest
    (:meth:`InstalledPlugins.manifest`) instead of importing it: one stub per hook
    implementation, with the implementation's name, arguments and options, so pluggy
    orders, checks and lists them as it would the module's own. A stub imports the module
    and calls the real implementation; a registry hook's stub registers the manifest's
    names instead, whether the module is imported yet or not (objects made lazily with
    :func:`plait.spi.lazy` as they were; any other as a :class:`~plait._registry.Pending`
    that imports the module when it is first looked up). :meth:`load` is phase
    ``import``; a name the module no longer registers, phase ``validate``.

    :param fail: the manager's ``(plugin, phase, exception) -> PluginLoadError``.
    :param kinds: the manager's registry hooks (:attr:`PluginManager.kinds`).
    """

    def __init__(
        self,
        plugin: Plugin,
        ep: EntryPointLike,
        manifest: dict[str, Any],
        fail: Callable[[Plugin, str, BaseException], PluginLoadError],
        kinds: Mapping[str, tuple[str, Callable[[Any], str | None]]],
    ) -> None:
        self._plugin, self._ep, self._manifest, self._fail = plugin, ep, manifest, fail
        self._kinds = kinds
        self._obj: Any = None
        self._made: dict[str, dict[str, Any]] = {}  # registry hook -> name -> real object
        self._attrs: dict[str, str] = {}  # hook -> the attribute implementing it
        for attr, hook_name, argnames, opts in manifest["hooks"]:
            self._attrs[hook_name] = attr
            target = functools.partial(self._implementation, attr, hook_name)
            wraps = bool(opts.get("wrapper") or opts.get("hookwrapper"))
            stub = _stub(attr, tuple(argnames), wraps, target)
            stub.plait_impl = dict(opts)  # type: ignore[attr-defined]
            self.__dict__[attr] = stub

    def load(self) -> Any:
        """The plugin's module (or object), imported on first use."""
        if self._obj is None:
            try:
                self._obj = self._ep.load()
            except Exception as exc:
                raise self._fail(self._plugin, "import", exc) from exc
        return self._obj

    def option_names(self, group: str) -> list[str] | None:
        """The names of the run options of ``group`` (a class this plugin registers with
        ``plait_register_run_options``), as the manifest keeps them, or ``None``."""
        names: list[str] | None = self._manifest.get("options", {}).get(group)
        return names

    def _implementation(
        self, attr: str, hook_name: str, arguments: dict[str, Any] | None = None
    ) -> Callable[..., Any]:
        if hook_name in self._kinds:  # (imported or not: plait_addhooks imports a module)
            return functools.partial(self._replay, hook_name)
        when = self._manifest.get("when", {}).get(attr)
        if self._obj is None and when is not None:
            module = self._ep.value.partition(":")[0].strip()  # imported: ask it, as it is
            if not _observes(when, arguments or {}, module):
                return _no_observer
        return getattr(self.load(), attr)  # type: ignore[no-any-return]

    def _replay(self, hook_name: str, register: Callable[..., None]) -> None:
        for name, replaces, made in self._manifest["registered"].get(hook_name, ()):
            if made is None:
                obj: Any = Pending(functools.partial(self._resolve, hook_name, name))
            else:
                ref, provides, static = made
                obj = Lazy(ref, frozenset(provides), {k: _thawed(v) for k, v in static})
            register(name, obj, replaces=replaces)

    def _resolve(self, hook_name: str, name: str) -> Any:
        """The object the module registers as ``name`` with ``hook_name`` (imported now)."""
        kind, check = self._kinds[hook_name]
        if hook_name not in self._made:
            module = self.load()
            regs: list[Registration[Any]] = []
            try:
                implementation = getattr(module, self._attrs[hook_name])
                implementation(register=Collector(kind, check, self._plugin, regs))
            except Exception as exc:
                raise self._fail(self._plugin, "validate", exc) from exc
            self._made[hook_name] = {reg.name: reg.obj for reg in regs}
        try:
            return self._made[hook_name][name]
        except KeyError:
            gone = RegistrationError(f"it no longer registers {kind} {name!r} as imported")
            raise self._fail(self._plugin, "validate", gone) from None


def _stub(
    attr: str,
    argnames: tuple[str, ...],
    wraps: bool,
    target: Callable[[dict[str, Any]], Callable[..., Any]],
) -> Callable[..., Any]:
    """A stub for the hook implementation ``attr`` taking ``argnames``: it passes its
    arguments on by name to what ``target(arguments)`` gives (the implementation,
    imported on first call).
    pluggy calls an implementation with its arguments in the order of their names, and
    reads those names from the function that ``__wrapped__`` leads to (:func:`_arguments`);
    a hook wrapper's stub is a generator function, as pluggy requires."""
    if wraps:

        def stub(*args: Any, **kwargs: Any) -> Any:
            named = dict(zip(argnames, args), **kwargs)
            return (yield from target(named)(**named))

    else:

        def stub(*args: Any, **kwargs: Any) -> Any:
            named = dict(zip(argnames, args), **kwargs)
            return target(named)(**named)

    stub.__name__ = stub.__qualname__ = attr
    stub.__wrapped__ = _arguments(argnames)  # type: ignore[attr-defined]
    return stub


def _never_called() -> None:
    """The body of :func:`_arguments`' functions (never called)."""


@functools.lru_cache(maxsize=32)
def _arguments(argnames: tuple[str, ...]) -> Callable[..., None]:
    """A function taking ``argnames`` and doing nothing, for pluggy (and
    :func:`inspect.signature`) to read a stub's argument names from: a copy of
    :func:`_never_called`'s code with those names as its arguments, so no text is ever
    compiled from a manifest. Made once a process per distinct argument list."""
    code = _never_called.__code__.replace(
        co_argcount=len(argnames), co_nlocals=len(argnames), co_varnames=argnames
    )
    return types.FunctionType(code, {}, "arguments")


def observes_when(
    *, options: Iterable[str] = (), sections: Iterable[str] = (), modules: Iterable[str] = ()
) -> Callable[[F], F]:
    """Declare when a ``plait_observe_run`` implementation can return an observer, so that
    a run need not import its plugin to ask: a run that sets one of the run ``options``,
    resumes from a checkpoint whose observers kept one of the ``sections``
    (:meth:`~plait.spi.RunObserver.checkpoint_metadata`; the implementation takes
    ``resumed``), or runs in a process that has imported one of the ``modules`` or the
    plugin's own module. Any other run is not observed by it, and its plugin (registered
    from its manifest) is not imported for it; once that module is imported, it is
    called for every run.
    """

    def declare(function: F) -> F:
        function.plait_observes_when = {  # type: ignore[attr-defined]
            "options": sorted(options),
            "sections": sorted(sections),
            "modules": sorted(modules),
        }
        return function

    return declare


def _observes(when: dict[str, list[str]], arguments: dict[str, Any], module: str) -> bool:
    """Whether a run called with ``arguments`` is one ``when`` (:func:`observes_when`)
    names, or the plugin's ``module`` is imported already."""
    import sys

    values = getattr(arguments.get("options"), "plugin_values", None) or {}
    resumed = arguments.get("resumed")
    return (
        any(values.get(name) is not None for name in when["options"])
        or (
            isinstance(resumed, Mapping) and any(section in resumed for section in when["sections"])
        )
        or any(name in sys.modules for name in [*when["modules"], module])
    )


def _no_observer(**arguments: Any) -> None:
    """What a declared observer (:func:`observes_when`) of a run it does not observe
    returns, without its plugin being imported."""


def manifest_of(pm: pluggy.PluginManager, obj: Any, name: str, registered: Any) -> Any:
    """The manifest of plugin ``name`` (``obj``, just imported and registered): its hook
    implementations, what its registry hooks registered (``registered``: hook -> list of
    :class:`Registration`), the names of the run options of each group it declares, and
    the files of its package's modules imported so far, with
    their modification time and size. ``None`` when a file changed in the last two seconds
    or none was found (nothing to tell an edit by)."""
    import sys
    import time

    hooks = []
    when = {}  # the observers that say which runs they observe (observes_when)
    for attr in dir(obj):
        opts = pm.parse_hookimpl_opts(obj, attr)
        if opts is not None:
            impl = pluggy.HookImpl(obj, name, getattr(obj, attr), opts)
            hooks.append([attr, opts.get("specname") or attr, list(impl.argnames), opts])
            declared = getattr(impl.function, "plait_observes_when", None)
            if declared is not None:
                when[attr] = declared
    module = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "")
    package = str(module).partition(".")[0]
    files = []
    for module_name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if package and path and (module_name + ".").startswith(package + "."):
            st = os.stat(path)
            if time.time_ns() - st.st_mtime_ns < _SETTLE_NS:
                return None
            files.append([path, st.st_mtime_ns, st.st_size])
    made: dict[str, list[Any]] = {}
    for hook_name, regs in registered.items():
        for reg in regs:
            made.setdefault(hook_name, []).append([reg.name, reg.replaces, _frozen(reg.obj)])
    if not files:
        return None
    options = {  # a run asks which group declares an option without importing any group
        reg.name: [field.name for field in attrs.fields(reg.obj)]
        for reg in registered.get("plait_register_run_options", ())
    }
    return {
        "files": sorted(files),
        "hooks": hooks,
        "registered": made,
        "options": options,
        "when": when,
    }


def _frozen(obj: Any) -> Any:
    """A :class:`Lazy` registration as the manifest keeps it, ``[ref, provides, static]``,
    or ``None`` (not lazy, or a static attribute JSON cannot keep as it is)."""
    if not isinstance(obj, Lazy):
        return None
    static = [[k, v] for k, v in vars(obj).items() if k in obj.provides]
    for item in static:
        if isinstance(item[1], tuple) and _is_strings(list(item[1])):
            item[1] = {"tuple": list(item[1])}
        elif not isinstance(item[1], (str, int, float, type(None))):  # (bool is an int)
            return None
    return [obj.ref, sorted(obj.provides), static]


def _thawed(value: Any) -> Any:
    """A static attribute of a :class:`Lazy` as :func:`_frozen` kept it."""
    return tuple(value["tuple"]) if isinstance(value, dict) else value


class RunOptionTable(Mapping[str, "DeclaredOption"]):
    """The run options the plugins declare, by name (:meth:`PluginManager.run_options`):
    which group and distribution declare each is known without importing the group, and
    a group's class is looked up in its registry (importing its plugin's module, if it
    was registered from a manifest) when one of its options is first asked for.

    :param registry: the registry of kind ``run_options``.
    :param declared: option name -> (group, distribution).
    """

    def __init__(self, registry: Registry[Any], declared: dict[str, tuple[str, str]]) -> None:
        self._registry, self._declared = registry, declared
        self._made: dict[str, DeclaredOption] = {}

    def __getitem__(self, name: str) -> DeclaredOption:
        made = self._made.get(name)
        if made is None:
            from ._options import DeclaredOption

            group, distribution = self._declared[name]
            made = self._made[name] = DeclaredOption(self._registry.get(group), distribution)
        return made

    def __contains__(self, name: object) -> bool:
        return name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)


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


# -- the plugin manager --------------------------------------------------------------------


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
        self._loaded = False
        self._conflicts: dict[str, list[str]] = {}
        #: plugin -> registry hook -> what it registered, as the registries were last built
        self._registered: dict[str, dict[str, list[Registration[Any]]]] = {}
        #: registry hook -> (its kind, the protocol check of what it registers): the
        #: kernel's (:data:`KINDS`) and those plugins declare (:meth:`add_registry`)
        self.kinds = dict(KINDS)
        self._changed()
        # every plugin registered from now on declares its own hooks as it is registered
        self.pm.hook.plait_addhooks.call_historic(kwargs={"pluginmanager": self})

    def add_hookspecs(self, module_or_class: Any) -> None:
        """Add the hook specifications (``@plait.spi.hookspec``, ``plait_*``) of
        ``module_or_class``: what a plugin's ``plait_addhooks`` implementation calls to
        declare the hooks it calls. Implementations registered before are checked against
        them at once.

        :raises RegistrationError: an implementation registered before takes an argument
            its new specification does not have, naming the hook and the plugin.
        """
        try:
            self.pm.add_hookspecs(module_or_class)
        except pluggy.PluginValidationError as exc:
            raise RegistrationError(str(exc)) from exc
        self._changed()

    def add_registry(self, hook_name: str, kind: str, provides: tuple[str, ...] = ()) -> None:
        """Make ``hook_name``, a hook a plugin declares (:meth:`add_hookspecs`) taking a
        ``register`` callback, a registry hook, filling the registry ``kind`` with objects
        that have the attributes ``provides``: what a plugin's ``plait_addhooks`` calls
        for a registry it reads (``plait-budgets``' prices), as the kernel's own are."""
        self.kinds[hook_name] = (kind, _has(*provides))
        self._changed()

    def _changed(self) -> None:
        """Forget everything worked out from the registered hook implementations: called
        whenever they change (a plugin registered or unregistered), and nowhere else."""
        self._registries: dict[str, Registry[Any]] | None = None
        self._observing: bool | None = None
        self._provided: dict[tuple[str, str], str] | None = None
        self._singletons: dict[str, Any] = {}
        self._run_options: RunOptionTable | None = None

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
        installed = None
        if self._entry_points is None:
            installed = InstalledPlugins(self.running_version)
            found = installed.found()
        else:
            found = list(iter_entry_points(self._entry_points))
        imported: list[Plugin] = []
        for ep, dist_name, version, requires in found:
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
                manifest = installed.manifest(ep.name) if installed is not None else None
                if manifest is None:
                    check_compatible(requires, plugin, self.running_version)
                    phase = "import"
                    obj = ep.load()
                    imported.append(plugin)
                else:  # its module is imported when one of its hooks or names is used
                    obj = LazyPlugin(plugin, ep, manifest, self._fail, self.kinds)
                phase = "register"
                self._register_hooks(obj, ep.name, check=False)
                plugin.obj = obj
            except Exception as exc:
                self._fail(plugin, phase, exc)
        for plugin in self._plugins.values():  # every plugin has declared its hooks now
            if plugin.obj is not None:
                try:
                    check_known(self.pm, plugin.name, self.kinds)
                except RegistrationError as exc:
                    self._fail(plugin, "register", exc)
        self._build_registries()
        if installed is not None:
            for plugin in imported:
                if plugin.status == "loaded":
                    registered = self._registered.get(plugin.name, {})
                    manifest = manifest_of(self.pm, plugin.obj, plugin.name, registered)
                    if manifest is not None:
                        installed.remember(plugin.name, manifest)
            installed.save()
        self._loaded = True
        self._warn_unknown_disabled()

    def _reset(self) -> None:
        for plugin in self._plugins.values():
            if plugin.obj is not None:
                self._unregister_hooks(plugin.name)
        self._plugins = {}
        self._loaded = False
        self._changed()

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
        return err

    def _register_hooks(self, obj: Any, name: str, *, check: bool = True) -> None:
        register_hooks(self.pm, obj, name, check=check, kinds=self.kinds)
        self._changed()

    def _unregister_hooks(self, name: str) -> None:
        """Remove the hook implementations registered under ``name``, if any."""
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        self._changed()

    def get_plugin(self, name: str) -> Any:
        """The plugin object registered under ``name`` (a module, a class or an object with
        hook implementations), or ``None``.
        """
        plugin = self._plugins.get(name)
        if plugin is not None and isinstance(plugin.obj, LazyPlugin):
            return plugin.obj.load()
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
                f"unknown registry kind {kind!r}; kinds: {', '.join(self._registries)}"
            ) from None

    def run_options(self) -> Mapping[str, DeclaredOption]:
        """Every run option the plugins declare (``plait_register_run_options``), by name,
        with its group class and distribution; worked out once until the plugins change.
        A group registered from its plugin's manifest (which keeps its field names) is
        imported when one of its options is first looked up (:class:`RunOptionTable`).

        :raises PluginConflictError: two groups (or a group and the kernel) declare one
            name, naming both distributions.
        """
        if self._run_options is None:
            from ._options import RunOptions

            kernel = {a.name for a in attrs.fields(RunOptions)}
            registry = self.registry("run_options")
            found: dict[str, tuple[str, str]] = {}  # option -> (group, distribution)
            for group in registry.names():
                plugin = self._plugins[registry.plugin(group)]
                names = (
                    plugin.obj.option_names(group) if isinstance(plugin.obj, LazyPlugin) else None
                )
                if names is None:
                    names = [field.name for field in attrs.fields(registry.get(group))]
                for name in names:
                    if name in kernel:
                        raise PluginConflictError(
                            f"run option {name!r} of {plugin.distribution} "
                            f"(group {group!r}) is one of the kernel's own"
                        )
                    taken = found.get(name)
                    if taken is not None:
                        raise PluginConflictError(
                            f"run option {name!r} is declared by both {taken[1]} and "
                            f"{plugin.distribution} (group {group!r}); uninstall or disable "
                            f"one ({DISABLE_ENV})"
                        )
                    found[name] = (group, plugin.distribution)
            self._run_options = RunOptionTable(registry, found)
        return self._run_options

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
            registries[kind] = Registry(kind, entries, conflicts, self.install_hint)
        for plugin_name, errors in self._conflicts.items():
            for error in errors:
                warnings.warn(f"plugin {plugin_name!r}: {error}", PlaitWarning, stacklevel=4)
        self._registries = registries
        return failures

    def provider(self, kind: str, name: str) -> str | None:
        """The distribution that provides ``name`` of ``kind``, as the installed plugins
        say (``plait_provided_names``; asked once, when a lookup first fails), or
        ``None``. An answer that raises or has the wrong shape is a :class:`PlaitWarning`
        naming its plugin and distribution; the other answers still count."""
        if self._provided is None:
            self.load_entrypoints(strict=False)  # (loaded already when a lookup failed)
            answers: list[tuple[str, str, list[str]]] = []
            for impl in self.pm.hook.plait_provided_names.get_hookimpls():
                try:
                    answer: Any = impl.function() or {}
                    answers += [
                        (str(distribution), str(known_kind), [str(n) for n in names])
                        for distribution, kinds in answer.items()
                        for known_kind, names in kinds.items()
                    ]
                except Exception as exc:  # a hint must not hide the error it was asked for
                    plugin = self._plugins.get(impl.plugin_name)
                    where = (
                        f"{plugin.distribution} (plugin {plugin.name!r})"
                        if plugin
                        else impl.plugin_name
                    )
                    warnings.warn(
                        f"plait_provided_names of {where} failed ({type(exc).__name__}: "
                        f"{exc}); its names are reported without what to install",
                        PlaitWarning,
                        stacklevel=3,
                    )
            provided: dict[tuple[str, str], str] = dict(_SEAMS)
            for distribution, known_kind, names in sorted(answers, key=lambda a: a[0]):
                for known in names:
                    provided.setdefault((known_kind, known), distribution)
            self._provided = provided
        return self._provided.get((kind, name))

    def install_hint(self, kind: str, name: str) -> str | None:
        """Where ``name`` of ``kind``, not installed here, comes from and how to install it
        — "it comes with plait-redis (HOW)", HOW from :meth:`how_to_install` — or ``None``
        when no plugin knows the name (:meth:`provider`).
        """
        distribution = self.provider(kind, name)
        if distribution is None:
            return None
        return f"it comes with {distribution} ({self.how_to_install(distribution)})"

    def how_to_install(self, distribution: str) -> str:
        """How to install ``distribution``, as a plugin says (``plait_install_hint``), else
        "install the distribution NAME" (no command: one that fails is worse than none).
        A hint that raises is a :class:`PlaitWarning`. Only the plugins loaded already
        answer (a failed lookup has loaded them).
        """
        how: Any = None
        try:
            how = self.pm.hook.plait_install_hint(distribution=distribution)
        except Exception as exc:  # a hint must not hide the error it was asked for
            warnings.warn(
                f"plait_install_hint for {distribution} failed ({type(exc).__name__}: {exc})",
                PlaitWarning,
                stacklevel=3,
            )
        if not isinstance(how, str) or not how:
            return f"install the distribution {distribution}"
        return how

    def _collect(
        self,
    ) -> tuple[dict[str, dict[str, list[Registration[Any]]]], list[PluginLoadError]]:
        """Call each registry hook's implementations one at a time, in pluggy's order (so
        ``tryfirst`` and ``trylast`` apply), each with a ``register`` that knows its
        plugin: a failure is that plugin's, in phase ``validate``."""
        collected: dict[str, dict[str, list[Registration[Any]]]] = {
            kind: {} for kind, _ in self.kinds.values()
        }
        self._registered = {}
        for hook_name, (kind, check) in self.kinds.items():
            regs: list[Registration[Any]] = []
            for impl in call_each(self.pm, hook_name):
                plugin = self._plugins[impl.plugin_name]
                made: list[Registration[Any]] = []
                try:
                    call_impl(impl, register=Collector(kind, check, plugin, made))
                except Exception as exc:
                    return collected, [self._fail(plugin, "validate", exc)]
                self._registered.setdefault(plugin.name, {})[hook_name] = made
                regs += made
            for reg in regs:
                collected[reg.kind].setdefault(reg.name, []).append(reg)
        return collected, []

    def first(
        self,
        hook_name: str,
        kind: str,
        what: str,
        provides: tuple[str, ...] = (),
        **arguments: Any,
    ) -> Any:
        """What the first plugin to answer ``hook_name`` (a ``firstresult`` hook) gives,
        checked against the protocol of ``kind``: the kernel's singletons, and those a
        plugin declares (``plait_addhooks``) for what it calls, kept until the plugins
        change; made anew each time for a hook asked with ``arguments``
        (:meth:`plait.Workflow.as_connection` and :meth:`~plait.Workflow.as_agent`).

        :param hook_name: the hook.
        :param kind: what the answer is, for errors ("durability").
        :param what: what it is asked for, for errors ("plait resume --on-change").
        :param provides: the attributes the answer must have (a lazy one, declare);
            the kernel knows its own singletons'.
        :param arguments: the hook's arguments, by name.

        :raises UnknownNameError: no plugin answers, naming the distribution that would.
        :raises PluginLoadError: the plugin that answers raises or gives an object that
            does not fit, naming its distribution, entry point and phase ``validate``.
        """
        found = self._singletons.get(hook_name)
        if found is not None:
            return found
        self.load_entrypoints()
        check = SINGLETONS.get(hook_name) or _has(*provides)
        for impl in call_each(self.pm, hook_name):
            plugin = self._plugins[impl.plugin_name]
            try:
                found = call_impl(impl, **arguments)
                if found is None:
                    continue
                problem = check(found)
                if problem is not None:
                    raise RegistrationError(
                        f"{hook_name} gave an object that does not fit the {kind} protocol: "
                        f"{problem}"
                    )
            except Exception as exc:
                raise self._fail(plugin, "validate", exc) from exc
            if isinstance(found, Lazy):
                found.origin = (kind, hook_name, plugin)
            if not arguments:
                self._singletons[hook_name] = found
            return found
        hint = self.install_hint("hook", hook_name)
        raise UnknownNameError(
            f"no installed plugin gives the {kind} (for {what}): none implements {hook_name}"
            + (f" — {hint}" if hint else "")
        )

    def durability(self, what: str) -> Any:
        """The durability (``plait_durability``; ``plait-durable`` gives it), for ``what``:
        a :class:`plait.spi.Durability`.

        :raises UnknownNameError: no plugin gives one, naming the distribution to install.
        """
        return self.first("plait_durability", "durability", what)

    def documents(self, what: str) -> Any:
        """The documents machinery (``plait_documents``; ``plait-documents`` gives it), for
        ``what``: a :class:`plait.spi.Documents`.

        :raises UnknownNameError: no plugin gives one, naming the distribution to install.
        """
        return self.first("plait_documents", "documents", what)

    def implementations(self, hook_name: str) -> list[tuple[str, Callable[..., Any]]]:
        """Each plugin's implementation of ``hook_name``, with the plugin's name, in
        pluggy's call order (``tryfirst`` and ``trylast`` apply): for the caller of a hook
        a plugin declares (``plait_addhooks``) to call one at a time, so that what each
        returns or raises is that plugin's. ``call(**arguments)`` passes the arguments the
        implementation takes (it may take fewer than its specification)."""
        self.load_entrypoints()
        return [
            (impl.plugin_name, functools.partial(call_impl, impl))
            for impl in call_each(self.pm, hook_name)
        ]

    def observe_run(
        self, run_id: str, workflow: Any, superstep: int, resumed: Any = None, options: Any = None
    ) -> RunObserver | None:
        """The one observer of this run (what the ``plait_observe_run`` implementations
        return, combined), or ``None`` — at once, and without calling any hook, when no
        plugin observes runs."""
        if self._observing is None:
            self._observing = bool(self.pm.hook.plait_observe_run.get_hookimpls())
        if not self._observing:
            return None
        found = self.pm.hook.plait_observe_run(
            run_id=run_id, workflow=workflow, superstep=superstep, resumed=resumed, options=options
        )  # implementations that return None are left out by pluggy
        from ._observer import combine

        return combine(found)

    # -- reporting ---------------------------------------------------------------

    def describe(self) -> list[PluginInfo]:
        """Every plugin with its distribution, version, entry point, status and registrations
        (kind -> names; kind ``hook`` lists the ``firstresult`` hooks it answers, such as
        ``plait_durability``).

        Never raises for a broken plugin: it is listed as ``failed`` with its error.
        """
        self.load_entrypoints(strict=False)
        if self._registries is None:
            self._build_registries()
        assert self._registries is not None
        infos: list[PluginInfo] = []
        gives = {
            caller.name: {impl.plugin_name for impl in caller.get_hookimpls()}
            for caller in vars(self.pm.hook).values()
            if isinstance(caller, pluggy.HookCaller)
            and caller.spec is not None
            and caller.spec.opts.get("firstresult")
        }
        for plugin in self._plugins.values():
            registered: dict[str, list[str]] = {}
            for kind, registry in self._registries.items():
                names = [n for n in registry.names() if registry.plugin(n) == plugin.name]
                if names:
                    registered[kind] = names
            hooks = [hook_name for hook_name, givers in gives.items() if plugin.name in givers]
            if hooks:  # what there is one of: the hook it answers
                registered["hook"] = sorted(hooks)
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
