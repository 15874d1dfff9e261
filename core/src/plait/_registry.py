"""Registries: what plugins registered, by kind and name, and the rules for names.

Each registry hook's ``register`` callback is a :class:`Collector`: it checks the object
against its kind's protocol at once and records which plugin and distribution gave it.
Two registrations of one name are an error naming both distributions unless one says
``replaces=`` (:func:`resolve`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

import attrs

from ._errors import PluginConflictError, PluginLoadError, RegistrationError, UnknownNameError
from ._records import record_repr

__all__ = [
    "KINDS",
    "Lazy",
    "Registration",
    "Registry",
    "lazy",
]

DISABLE_ENV = "PLAIT_DISABLE_PLUGINS"
T = TypeVar("T")


def _has(*attributes: str) -> Callable[[Any], str | None]:
    def check(obj: Any) -> str | None:
        if isinstance(obj, Lazy):  # checked against what it declares, without importing
            missing = [a for a in attributes if a not in obj.provides]
        else:
            missing = [a for a in attributes if not hasattr(obj, a)]
        return f"lacks {', '.join(missing)}" if missing else None

    return check


class Lazy:
    """A registered object that lives in a module imported on first use (see :func:`lazy`).

    Attribute reads go to the real object, made once: ``module:attr`` names a class
    (instantiated without arguments) or an instance. ``static`` attributes (a loader's
    ``suffixes``) answer without importing.
    """

    def __init__(self, ref: str, provides: frozenset[str], static: dict[str, Any]) -> None:
        self.ref = ref
        self.provides = provides | frozenset(static)
        self._target: Any = None
        #: ``(kind, name, plugin)`` it was registered as, set by the registry: named, with
        #: the plugin's distribution and entry point, if it fails to import on first use
        self.origin: tuple[str, str, Any] | None = None
        self.__dict__.update(static)

    def resolve(self) -> Any:
        """The real object (imported and made on first use).

        :raises PluginLoadError: the module does not import, has no such attribute, or
            the class fails to instantiate; in phase ``"import"``, naming what it was
            registered as and the plugin's distribution and entry point (an object nobody
            registered raises what failed as it is).
        """
        if self._target is None:
            from ._spec import import_ref

            try:
                obj = import_ref(self.ref)
                self._target = obj() if isinstance(obj, type) else obj
            except Exception as exc:
                if self.origin is None:  # not registered: nobody to name
                    raise
                kind, name, plugin = self.origin
                raise PluginLoadError(
                    f"{kind} {name!r} ({self.ref}), registered lazily, failed on first use: "
                    f"{type(exc).__name__}: {exc}",
                    distribution=getattr(plugin, "distribution", "(unknown)"),
                    version=getattr(plugin, "version", ""),
                    entry_point=getattr(plugin, "entry_point", self.ref),
                    phase="import",
                ) from exc
        return self._target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_target", "ref", "provides", "origin"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)

    def __repr__(self) -> str:
        state = "loaded" if self._target is not None else "not loaded yet"
        return f"<lazy {self.ref} ({state})>"


class Pending:
    """What an installed plugin registered, as its manifest says, before its module is
    imported: a registry resolves it (``resolve()`` imports the module and asks it again)
    when the name is first looked up. It was checked against its kind's protocol when the
    manifest was written."""

    def __init__(self, resolve: Callable[[], Any]) -> None:
        self.resolve = resolve


def lazy(ref: str, *, provides: tuple[str, ...] = (), **static: Any) -> Lazy:
    """Register ``module:attr`` without importing it: a plugin's registry hook stays cheap
    (a ``plait`` command pays plugin loading on every start), and the module is imported
    when the object is first used. ``provides`` names the protocol attributes it has (the
    registry checks those names instead of importing); ``static`` attributes are answered
    at once (``suffixes=(".flow",)``).
    """
    return Lazy(ref, frozenset(provides), dict(static))


def _is_callable(obj: Any) -> str | None:
    return None if callable(obj) else f"is not callable (got {type(obj).__name__})"


def _is_agent(obj: Any) -> str | None:
    """An agent's shape: an executor or an async function (callable), or an agent as data
    (a mapping, or an object with ``kind`` and ``config``), whose schema plait-documents
    checks where a document names it."""
    if callable(obj) or isinstance(obj, Mapping):
        return None
    if hasattr(obj, "kind") and hasattr(obj, "config"):
        return None
    return f"is neither an executor, an async function nor an agent definition ({obj!r})"


def _is_options_group(obj: Any) -> str | None:
    """A run-option group's shape: an attrs class whose every field has a default."""
    if not (isinstance(obj, type) and attrs.has(obj)):
        return f"is not an attrs class (got {obj!r})"
    bare = [a.name for a in attrs.fields(obj) if a.default is attrs.NOTHING]
    return f"has fields without a default: {', '.join(bare)}" if bare else None


#: Registry hook name -> (kind name, protocol check returning a problem or None).
KINDS: dict[str, tuple[str, Callable[[Any], str | None]]] = {
    "plait_register_executor_kinds": ("executor_kind", _has("check", "create", "config_schema")),
    "plait_register_routers": ("router", _has("create", "stateful")),
    "plait_register_merge_strategies": ("merge_strategy", _has("merge", "output_type")),
    "plait_register_converters": ("converter", _has("source", "target", "fn", "lossless")),
    "plait_register_type_hooks": ("type_hooks", _has("type", "structure", "unstructure")),
    "plait_register_checkpoint_stores": ("checkpoint_store", _is_callable),
    "plait_register_loaders": ("loader", _has("load")),
    "plait_register_fragments": ("fragment", _has("build")),
    "plait_register_agents": ("agent", _is_agent),
    "plait_register_expression_languages": ("expression_language", _has("compile")),
    "plait_register_exporters": ("exporter", _has("export")),
    "plait_register_placements": ("placement", _has("invoke")),
    "plait_register_schedules": ("schedule", _has("pays", "start", "decode_cut")),
    "plait_register_run_options": ("run_options", _is_options_group),
}

#: ``firstresult`` hook name -> protocol check of the one object it gives (the first plugin
#: to answer wins; ``tryfirst=True`` puts a replacement before the plugin it replaces).
SINGLETONS: dict[str, Callable[[Any], str | None]] = {
    "plait_durability": _has(
        "run", "opened", "load", "restore", "snapshot", "pending_requests", "fingerprint"
    ),
    "plait_documents": _has("load", "load_spec", "agent_names"),
}


@attrs.frozen(repr=False)
class Registration(Generic[T]):
    """One object registered under a name by one plugin."""

    __repr__ = record_repr

    kind: str
    name: str
    obj: T
    plugin: str
    distribution: str
    replaces: str | None = None


class Registry(Generic[T]):
    """Every object of one kind, by name. Lookups of unknown names list what exists.

    :param provider: ``provider(kind, name)``: for the error, where a name not installed
        here comes from and how to install it ("it comes with plait-redis (…)"), if a
        plugin knows (``plait_provided_names``, ``plait_install_hint``).
    """

    def __init__(
        self,
        kind: str,
        entries: dict[str, Registration[T]],
        conflicts: dict[str, str] | None = None,
        provider: Callable[[str, str], str | None] | None = None,
    ) -> None:
        self.kind = kind
        self._entries = entries
        self._conflicts = conflicts or {}
        self._provider = provider

    def get(self, name: str, *, what: str | None = None) -> T:
        """Return the object registered as ``name``.

        :raises UnknownNameError: naming ``what`` asked for it and listing installed names.
        """
        try:
            return self.entry(name).obj
        except KeyError:
            if name in self._conflicts:
                raise PluginConflictError(self._conflicts[name]) from None
            known = ", ".join(sorted(self._entries)) or "none"
            asker = f" (for {what})" if what else ""
            hint = self._provider(self.kind, name) if self._provider else None
            raise UnknownNameError(
                f"unknown {self.kind.replace('_', ' ')} {name!r}{asker}; installed: {known}"
                + (f" — {hint}" if hint else "")
            ) from None

    def entry(self, name: str) -> Registration[T]:
        """The full registration record for ``name`` (``KeyError`` if absent), its
        plugin's module imported if the name was registered from a manifest
        (:class:`Pending`)."""
        entry = self._entries[name]
        if isinstance(entry.obj, Pending):
            entry = self._entries[name] = attrs.evolve(entry, obj=entry.obj.resolve())
        return entry

    def plugin(self, name: str) -> str:
        """The plugin that registered ``name`` (``KeyError`` if absent), importing nothing."""
        return self._entries[name].plugin

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> list[Registration[T]]:
        """Registrations sorted by name."""
        return [self.entry(n) for n in self.names()]


class Collector:
    """The ``register`` callback handed to one plugin's registry hook implementation.

    :param plugin: the plugin record (``name``, ``distribution``) of that implementation:
        pluggy says which plugin an implementation belongs to, and each is called with its
        own collector.
    """

    def __init__(
        self,
        kind: str,
        check: Callable[[Any], str | None],
        plugin: Any,
        out: list[Registration[Any]],
    ) -> None:
        self.kind, self.check, self.plugin, self.out = kind, check, plugin, out

    def __call__(self, name: str, obj: Any, *, replaces: str | None = None) -> None:
        plugin = self.plugin
        if not isinstance(name, str) or not name:
            raise RegistrationError(f"{self.kind} names must be non-empty strings, got {name!r}")
        problem = None if isinstance(obj, Pending) else self.check(obj)
        if problem is not None:
            raise RegistrationError(
                f"{self.kind} {name!r} does not fit the {self.kind} protocol: {problem}"
            )
        if isinstance(obj, Lazy):
            obj.origin = (self.kind, name, plugin)
        try:
            setattr(obj, "__plait_distribution__", plugin.distribution)
        except (AttributeError, TypeError):
            pass  # frozen or slotted objects keep their registration record only
        self.out.append(
            Registration(self.kind, name, obj, plugin.name, plugin.distribution, replaces)
        )


def resolve(
    kind: str, name: str, regs: list[Registration[Any]]
) -> tuple[Registration[Any] | None, str | None]:
    if len(regs) == 1:
        return regs[0], None
    replacing = [r for r in regs if r.replaces is not None]
    others = [r for r in regs if r.replaces is None]
    if len(replacing) == 1 and all(
        replacing[0].replaces in (o.distribution, o.plugin) for o in others
    ):
        return replacing[0], None
    who = " and ".join(f"{r.distribution} (plugin {r.plugin!r})" for r in regs)
    return None, (
        f"{kind} {name!r} is registered by both {who}; uninstall or disable one "
        f"({DISABLE_ENV}=name), or pass replaces='<distribution>' in the one that should win"
    )
