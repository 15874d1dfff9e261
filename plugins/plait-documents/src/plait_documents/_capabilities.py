"""Capabilities: what a workflow document may make Plait do, what a document needs, and
what a caller grants it (:class:`Grants`, and the refusal of a document that needs more).

A workflow file is untrusted input, and a file that can run a program is code. So every
executor kind declares the capabilities a node of its kind needs, as data on the kind
(``capabilities``): a collection of :class:`Capability`, or a function of the node's config
(and its :class:`~plait.spi.BuildContext`) giving them — the ``http`` kind needs
``network=<the URL's host>``, a nested workflow needs what its nodes need. Kinds that do
nothing but compute (a flow's join, a pass-through step) declare none.

======================  ======================================================
capability              what it lets a document do
======================  ======================================================
``imports``             import Python code it names (``python`` kind, ``ref``)
``subprocess``          start programs (``shell`` kind)
``network[=HOST]``      send requests (to HOST; no HOST: to any host)
``filesystem[=PATH]``   read or write files (below PATH; no PATH: anywhere)
``documents[=PATH]``    read further workflow documents it names
``kind=NAME``           use kind NAME, which declares no capabilities
======================  ======================================================

A document needs the union of its nodes' capabilities (nested workflows included:
:func:`needs`), and a :func:`plait.load` of it is refused before anything runs — before
any code is imported or any node built — unless the caller grants each one (``allow=`` in
Python; ``--allow``, ``--allow-imports`` and ``--trust`` on the command line; see
:class:`~plait_documents.Grants`). Nothing is granted by default: a document may then use only the
executors its caller passes and the pure kinds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, Literal, Union

import attrs
from plait import (
    ConfigError,
    DocumentError,
    LoadError,
    PlaitError,
    SourcePosition,
    get_plugin_manager,
)
from plait.spi import BuildContext, record_repr

__all__ = [
    "CAPABILITY_NAMES",
    "IMPORTS",
    "SUBPROCESS",
    "Capability",
    "Need",
    "documents",
    "filesystem",
    "kind_capabilities",
    "needs",
    "network",
    "AllowSpec",
    "Grants",
    "check_granted",
    "CapabilityError",
    "Flags",
    "grant_text",
]

#: Every capability name, in the order they are listed.
CAPABILITY_NAMES = ("imports", "subprocess", "network", "filesystem", "documents", "kind")
_UNSCOPED = frozenset({"imports", "subprocess"})


#: Whose words an error speaks: a Python caller's (``allow=``) or the command line's.
Flags = Literal["python", "cli"]


class CapabilityError(LoadError):
    """A document needs capabilities its caller did not grant (see
    :func:`check_granted`). ``missing`` holds each need not granted (``plait_documents.Need``); each
    problem names the node, its kind, its position, the capability and the flag (or
    ``allow=``) that grants it. ``granted`` is what was granted (``plait_documents.Grants``).
    """

    def __init__(
        self,
        missing: Sequence[Any],
        *,
        source: str | None = None,
        flags: Flags = "python",
        granted: Any = None,
    ) -> None:
        self.missing = list(missing)
        self.flags: Flags = flags
        self.granted = granted
        problems: list[PlaitError] = []
        for need in self.missing:
            problems.append(
                DocumentError(
                    f"{need} needs {need.capability}, which is not granted; "
                    f"grant it with {grant_text([need.capability], flags)}",
                    need.position,
                )
            )
        super().__init__(problems, source=source)
        everything = "--trust" if flags == "cli" else "allow='all'"
        hint = (
            f"\nGranted: {'none' if granted is None else granted}. If you trust this "
            "document, grant what it needs: "
            f"{grant_text([n.capability for n in self.missing], flags)} "
            f"(or {everything} for every capability)"
        )
        PlaitError.__init__(self, f"{self.args[0]}{hint}")

    def for_cli(self) -> CapabilityError:
        """The same error, naming the command line's flags."""
        return CapabilityError(self.missing, source=self.source, flags="cli", granted=self.granted)


def grant_text(capabilities: Iterable[Any], flags: Flags) -> str:
    """How to grant ``capabilities`` (``plait_documents.Capability`` objects, or anything
    whose ``str()`` is a capability's flag form): ``--allow-imports --allow subprocess`` on
    the command line, ``allow=['imports', 'subprocess']`` in Python.
    """
    wanted = sorted(set(capabilities))
    if flags == "python":
        return f"allow={[str(c) for c in wanted]!r}"
    words = ["--allow-imports"] if any(str(c) == "imports" for c in wanted) else []
    rest = [str(c) for c in wanted if str(c) != "imports"]
    if rest:
        words.append(f"--allow {','.join(rest)}")
    return " ".join(words)


def _check_name(instance: Any, attribute: Any, value: str) -> None:
    if value not in CAPABILITY_NAMES:
        raise ValueError(
            f"unknown capability {value!r}; capabilities are: {', '.join(CAPABILITY_NAMES)}"
        )


@attrs.frozen(repr=False)
class Capability:
    """One thing a document may make Plait do: a ``name`` and, for ``network``,
    ``filesystem``, ``documents`` and ``kind``, a ``scope`` (a host, a path, a kind name;
    ``None``: any). Hashable and ordered; ``str()`` is its flag form
    (``network=api.example.com``), which :meth:`parse` reads back.
    """

    __repr__ = record_repr

    name: str = attrs.field(validator=_check_name)
    scope: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.scope is not None and self.name in _UNSCOPED:
            raise ValueError(f"capability {self.name!r} takes no scope (got {self.scope!r})")
        if self.name == "kind" and not self.scope:
            raise ValueError("capability 'kind' needs a kind name: kind=NAME")
        if self.scope == "":
            raise ValueError(f"capability {self.name!r} has an empty scope; leave out '='")

    def __str__(self) -> str:
        return self.name if self.scope is None else f"{self.name}={self.scope}"

    def __lt__(self, other: Capability) -> bool:
        """Ordered as :data:`CAPABILITY_NAMES` lists them, then by scope (any first)."""
        if not isinstance(other, Capability):
            return NotImplemented
        return self._key() < other._key()

    def _key(self) -> tuple[int, str, str]:
        return (
            CAPABILITY_NAMES.index(self.name),
            "" if self.scope is None else "=",
            self.scope or "",
        )

    @classmethod
    def parse(cls, text: str) -> Capability:
        """The capability written ``name`` or ``name=scope`` (``network=127.0.0.1``).

        :raises ValueError: an unknown name, a scope where none is taken, an empty scope.
        """
        name, sep, scope = text.strip().partition("=")
        name = name.strip()
        if name == "network" and sep:
            scope = scope.strip().lower()
        return cls(name, scope.strip() if sep else None)

    def covers(self, needed: Capability) -> bool:
        """Whether granting this capability grants ``needed``: the same name, and no scope
        (any), the same host (ignoring case), or a path at or below this one (both
        resolved: a symbolic link below this path that leads out of it is outside)."""
        if self.name != needed.name:
            return False
        if self.scope is None:
            return True
        if needed.scope is None:
            return False
        if self.name == "network":
            return self.scope.lower() == needed.scope.lower()
        if self.name in ("filesystem", "documents"):
            return _within(needed.scope, self.scope)
        return self.scope == needed.scope


def _within(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or below it, both resolved (symbolic links followed,
    ``..`` applied) as the operating system will: a link inside ``root`` that leads out of
    it is outside, as the file store refuses it."""
    import os

    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


#: ``imports``: import Python code the document names.
IMPORTS = Capability("imports")
#: ``subprocess``: start programs.
SUBPROCESS = Capability("subprocess")


def network(host: str | None = None) -> Capability:
    """``network=host`` (``None``: any host); the host is compared without case."""
    return Capability("network", host.lower() if host else None)


def filesystem(path: str | None = None) -> Capability:
    """``filesystem=path`` (``None``: anywhere)."""
    return Capability("filesystem", path or None)


def documents(path: str | None = None) -> Capability:
    """``documents=path``: read the workflow document at ``path`` (``None``: any)."""
    return Capability("documents", path or None)


@attrs.frozen(repr=False)
class Need:
    """One capability one node needs: the ``node_id`` and its ``kind`` (``edge group`` for
    an edge group's code), where the node is in its document, and ``via``: the kind inside
    it that needs the capability (a ``steps.executor`` step's ``shell``, a nested
    workflow's ``http`` node) or the placement that does, when it is not the node's own.
    """

    __repr__ = record_repr

    capability: Capability
    node_id: str
    kind: str
    position: SourcePosition = attrs.field(eq=False)
    via: str | None = None

    def __str__(self) -> str:
        """``node 'pwn' (kind shell, in steps.executor)``: what needs it."""
        if self.kind == "edge group":
            return f"edge group {self.node_id!r} (its code)"
        if self.kind == "run options":
            return f"workflow {self.node_id!r} (its run option checkpoint)"
        if self.via is None:
            return f"node {self.node_id!r} (kind {self.kind})"
        if " " in self.via:  # not a kind: "placement ray", "run option checkpoint"
            return f"node {self.node_id!r} (kind {self.kind}, {self.via})"
        return f"node {self.node_id!r} (kind {self.via}, in {self.kind})"


_UNDECLARED = object()
#: while :func:`needs` asks one node: which kind declared each capability first (the
#: ``shell`` inside a ``steps.executor`` step, a nested workflow's ``http`` node)
_ORIGINS: ContextVar[dict[Capability, str] | None] = ContextVar("plait_origins", default=None)


def kind_capabilities(
    kind_name: str, config: Mapping[str, Any], ctx: BuildContext
) -> frozenset[Capability]:
    """What a node of ``kind_name`` with ``config`` needs, by the kind's declaration (its
    ``capabilities``: a collection, or a function of ``(config, ctx)``). A kind that
    declares nothing needs ``kind=<its name>``; a kind nobody registered needs nothing
    here (building the node fails with its own error). For kinds that nest workflows."""
    manager = ctx.manager
    if manager is None:
        manager = get_plugin_manager()
    kinds = manager.registry("executor_kind")
    if kind_name not in kinds:
        return frozenset()
    declared: Any = getattr(kinds.get(kind_name), "capabilities", _UNDECLARED)
    if declared is _UNDECLARED:
        result = frozenset({Capability("kind", kind_name)})
    else:
        result = frozenset(declared(config, ctx) if callable(declared) else declared)
    for capability in result:
        if not isinstance(capability, Capability):
            raise TypeError(
                f"executor kind {kind_name!r} declares {capability!r} as a capability; "
                "declare plait_documents.Capability objects"
            )
    origins = _ORIGINS.get()
    if origins is not None:  # the innermost kind says it first: a wrapper's kind does not
        for capability in result:
            origins.setdefault(capability, kind_name)
    return result


def _bound(node: Any, executors: Mapping[str, Any], kinds: Any) -> bool:
    """Whether the node is the caller's own executor (as :func:`plait.spi.build_executors`
    binds it: a node of an installed kind builds itself, unless the kind binds passed
    executors)."""
    if node.kind in kinds and not getattr(kinds.get(node.kind), "binds_passed_executors", False):
        return False
    return node.id in executors or (node.uses is not None and node.uses in executors)


def node_at(config: Any) -> tuple[int, int] | None:
    """Where a front-end recorded a node in its document: ``[line, column]`` as the
    node's ``config["at"]`` (``plait-steps`` and ``plait-dag`` record it), or ``None``."""
    at = config.get("at") if isinstance(config, Mapping) else None
    if isinstance(at, (list, tuple)) and len(at) == 2 and all(type(v) is int for v in at):
        return at[0], at[1]
    return None


def _position(config: Mapping[str, Any], path: str, source: str | None) -> SourcePosition:
    at = node_at(config)
    line, column = at if at is not None else (None, None)
    return SourcePosition(source=source, line=line, column=column, path=path)


def _names_code(value: Any, depth: int = 0) -> bool:
    """Whether router options hold ``{"ref": ...}`` (code to import)."""
    if isinstance(value, Mapping) and "ref" in value:
        return True
    items = value.values() if isinstance(value, Mapping) else value
    if depth > 16 or not isinstance(value, (Mapping, list, tuple)):
        return False
    return any(_names_code(v, depth + 1) for v in items)


def needs(
    spec: Any,
    *,
    executors: Mapping[str, Any] | None = None,
    manager: Any = None,
    source: str | None = None,
) -> list[Need]:
    """Every capability each node of ``spec`` (a :class:`~plait.WorkflowSpec`) needs,
    in node order, then the edge groups that name code. Nodes bound to the caller's
    ``executors`` need nothing.
    """
    if manager is None:
        manager = get_plugin_manager()
    executors = executors or {}
    kinds = manager.registry("executor_kind")
    found: list[Need] = []
    outer = _ORIGINS.get()  # a nested spec's kinds are named to the outer node's need
    for index, node in enumerate(spec.nodes):
        path = f"/nodes/{index}"
        position = _position(node.config, path, source)
        placement = node.placement or spec.placement
        if placement not in (None, "local"):  # it starts or reaches workers elsewhere
            via = f"placement {placement}"
            for capability in (SUBPROCESS, network()):
                found.append(Need(capability, node.id, node.kind, position, via=via))
                if outer is not None:
                    outer.setdefault(capability, via)
        if _bound(node, executors, kinds):
            continue
        # nothing may be imported while we ask what the document needs
        ctx = BuildContext(
            node_id=node.id,
            allow_imports=False,
            executors=executors,
            manager=manager,
            source=source or "<string>",
        )
        origins = outer if outer is not None else {}
        token = _ORIGINS.set(origins)
        try:
            capabilities = kind_capabilities(node.kind, node.config, ctx)
        except (TypeError, ValueError, KeyError) as exc:  # a kind's declaration failed
            reason = f"node {node.id!r}: cannot tell what its kind {node.kind!r} needs: {exc}"
            where = SourcePosition(source=source, path=path)
            raise LoadError([ConfigError(reason, where)], source=source) from exc
        finally:
            _ORIGINS.reset(token)
        for capability in sorted(capabilities):
            origin = origins.get(capability)
            inner = None if origin == node.kind else origin
            found.append(Need(capability, node.id, node.kind, position, via=inner))
    for index, group in enumerate(spec.edge_groups):
        if _names_code(group.options):
            where = SourcePosition(source=source, path=f"/edge_groups/{index}")
            found.append(Need(IMPORTS, group.id, "edge group", where))
    store = (spec.options or {}).get("checkpoint")
    if store is not None:  # a store the document names: its files or its host
        where = SourcePosition(source=source, path="/options/checkpoint")
        for capability in _store_capabilities(store):
            found.append(Need(capability, spec.name or "workflow", "run options", where))
            if outer is not None:
                outer.setdefault(capability, "run option checkpoint")
    return found


def _store_capabilities(url: Any) -> list[Capability]:
    """What writing checkpoints to the store at ``url`` does: files at its path
    (``file://``, ``sqlite:///``), requests to its host (Redis, PostgreSQL); nothing in
    memory; files and requests anywhere for a scheme this does not know."""
    import os
    from urllib.parse import urlsplit

    if not isinstance(url, str):
        return [network(), filesystem()]
    try:
        parts = urlsplit(url)
        scheme, host, path = parts.scheme.lower(), parts.hostname, parts.path
    except ValueError:
        return [network(), filesystem()]
    if scheme == "memory":
        return []
    if scheme in ("file", "sqlite"):
        folder = (parts.netloc + path) if scheme == "file" else path.removeprefix("/")
        # where the files will be: a link on the way is followed, so the need (and the
        # grant it asks for) names the folder written, not the link
        return [filesystem(os.path.realpath(folder or "."))]
    if scheme in ("redis", "rediss", "postgres", "postgresql"):
        return [network(host)]
    return [network(), filesystem()]


#: What ``allow=`` accepts: ``None`` (nothing), ``"all"`` or ``True`` (everything), a
#: comma-separated string (``"subprocess,network=api.example.com"``), capabilities or their
#: strings, or :class:`Grants`.
AllowSpec = Union[None, bool, str, Iterable[str | Capability], "Grants"]


@attrs.frozen(repr=False)
class Grants:
    """What the caller grants a document: some capabilities, or ``everything`` but the
    capabilities named in ``withheld``.
    """

    __repr__ = record_repr

    capabilities: frozenset[Capability] = frozenset()
    everything: bool = False
    withheld: frozenset[str] = frozenset()

    @classmethod
    def to_build(cls, *, allow_imports: bool = False) -> Grants:
        """What building a workflow without running it needs (``plait validate``, ``plait
        graph``): every capability but ``imports`` (an import runs code), unless
        ``allow_imports``."""
        return cls(
            everything=True, withheld=frozenset() if allow_imports else frozenset({"imports"})
        )

    @classmethod
    def of(cls, allow: AllowSpec, *, allow_imports: bool = False) -> Grants:
        """The grants ``allow`` (see :data:`AllowSpec`) names, plus ``imports`` when
        ``allow_imports``.

        :raises ValueError: naming a capability that does not exist.
        """
        if isinstance(allow, Grants):
            grants = allow
        elif allow is None or allow is False:
            grants = cls()
        elif allow is True or (isinstance(allow, str) and allow.strip() == "all"):
            grants = cls(everything=True)
        else:
            given = allow.split(",") if isinstance(allow, str) else allow
            items = [i for i in given if not (isinstance(i, str) and not i.strip())]
            for item in items:
                if not isinstance(item, (str, Capability)):
                    raise TypeError(f"allow= takes capability names or Capabilities: {item!r}")
            found = {c if isinstance(c, Capability) else Capability.parse(c) for c in items}
            grants = cls(frozenset(found))
        if allow_imports and not grants.covers(IMPORTS):
            grants = attrs.evolve(grants, capabilities=grants.capabilities | {IMPORTS})
        return grants

    def covers(self, needed: Capability) -> bool:
        """Whether ``needed`` is granted."""
        if self.everything and needed.name not in self.withheld:
            return True
        return any(g.covers(needed) for g in self.capabilities)

    def __str__(self) -> str:
        if self.everything:
            return "all" + "".join(f" but {name}" for name in sorted(self.withheld))
        return ",".join(str(c) for c in sorted(self.capabilities)) or "none"


def check_granted(
    spec: Any,
    grants: Grants,
    *,
    executors: Mapping[str, Any] | None = None,
    manager: Any = None,
    source: str | None = None,
) -> list[Need]:
    """Every :class:`Need` of ``spec`` (see :func:`needs`), once all are granted.

    :raises CapabilityError: listing each one ``grants`` does not cover.
    """
    found = needs(spec, executors=executors, manager=manager, source=source)
    missing = [n for n in found if not grants.covers(n.capability)]
    if missing:
        raise CapabilityError(missing, source=source, granted=grants)
    return found
