"""What ``plait.load`` calls: text in any installed format, as a runnable workflow.

Loaders are plugins (``plait_register_loaders``). A loader (:class:`plait.spi.Loader`)
turns text into a :class:`~plait.WorkflowSpec`, reporting every problem at once with its
position (line:column or JSON path) and the names that exist; :func:`load` picks the
loader (by format, suffix or detection), resolves the document's agent names
(:class:`~plait_documents.AgentNames`), refuses a document that needs a capability not
granted (:func:`~plait_documents.check_granted`), rebuilds the workflow with
:meth:`plait.Workflow.from_spec`, then checks its edges' types as ``WorkflowBuilder``
does (:func:`~plait_documents.wire_types`), each problem at the place the document writes
the edge. The workflow carries the text it was read from
(:func:`~plait_documents.source_document`). :class:`Documents` is what this distribution gives
(``plait_documents``), so that the kernel's :func:`plait.load` reaches it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from plait import (
    ConfigError,
    DocumentError,
    LoadError,
    PlaitError,
    SourcePosition,
    UnknownNameError,
    get_plugin_manager,
)
from plait.spi import BuildContext, Loader

from ._agents import AgentNames, module_agents
from ._source import SourceDocument, attach_source
from ._wording import in_cli_words, is_cli, spell
from .build import did_you_mean

if TYPE_CHECKING:
    from plait import Workflow, WorkflowSpec

    from ._capabilities import AllowSpec
    from ._definitions import AgentDefinition

__all__ = ["Documents", "agent_names", "check_agents", "load", "load_spec"]

_MAX_BYTES = 16 * 1024 * 1024  # a workflow document larger than this is refused


def _read(
    source: str | os.PathLike[str], suffixes: set[str], format: str | None = None
) -> tuple[str, str, str | None]:
    """``(text, source name, suffix)``: a path is read; a string is text unless it names
    an existing file with a known suffix."""
    from pathlib import Path  # here: `import plait` does not pay for pathlib

    if isinstance(source, os.PathLike) or (
        isinstance(source, str)
        and "\n" not in source
        and len(source) < 4096
        and source.lower().endswith(tuple(suffixes))
        and Path(source).is_file()
    ):
        path = Path(source)
        try:
            size = path.stat().st_size
            if size > _MAX_BYTES:
                raise LoadError(
                    [PlaitError(f"the file is {size} bytes; the limit is {_MAX_BYTES}")],
                    source=str(path),
                )
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LoadError([PlaitError(f"cannot read it: {exc}")], source=str(path)) from exc
        # the longest suffix a loader claims wins: ".spec.json" over ".json"
        claimed = [s for s in suffixes if path.name.lower().endswith(s)]
        suffix = max(claimed, key=len) if claimed else path.suffix.lower()
        return text, str(path), suffix
    if not isinstance(source, str):
        raise TypeError(f"plait.load needs text or a path, got {type(source).__name__}")
    if (
        format is None  # with a format given, a string is the document's text
        and "\n" not in source
        and len(source) < 4096
        and "->" not in source
        and source.strip().lower().endswith(tuple(suffixes))
    ):  # a file name, never a document: say the file is missing
        from pathlib import Path

        what = "is a directory" if Path(source).is_dir() else "does not exist"
        raise LoadError([PlaitError(f"no such file: {source} {what}")], source=source)
    if len(source) > _MAX_BYTES:
        raise LoadError([PlaitError(f"the text is longer than {_MAX_BYTES} characters")])
    return source, "<string>", None


def _choose(
    loaders: Any, format: str | None, suffix: str | None, text: str, source: str
) -> tuple[str, Loader]:
    names = loaders.names()
    if format is not None:
        if format not in loaders:
            raise UnknownNameError(
                f"unknown workflow format {format!r}; installed: {', '.join(names) or 'none'}"
            )
        return format, loaders.get(format)
    if suffix is not None:
        for name in names:
            if suffix in getattr(loaders.get(name), "suffixes", ()):
                return name, loaders.get(name)
    for name in names:
        detect = getattr(loaders.get(name), "detect", None)
        if detect is not None and detect(text):
            return name, loaders.get(name)
    raise LoadError(
        [
            PlaitError(
                "cannot tell the format of this document; pass "
                f"{spell('format=', '--format')} "
                f"(installed formats: {', '.join(names) or 'none'})"
            )
        ],
        source=source,
    )


def load_spec(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    executors: Mapping[str, Any] | None = None,
    agents: ModuleType | Mapping[str, Any] | None = None,
    plugin_manager: Any = None,
    **options: Any,
) -> WorkflowSpec:
    """The spec a document describes, without building it (what ``plait validate`` and
    ``plait graph`` use). Arguments as for :func:`load`."""
    return _load_spec(source, format, executors, agents, plugin_manager, options).spec


def agent_names(
    executors: Mapping[str, Any] | None,
    agents: ModuleType | Mapping[str, Any] | None,
    plugin_manager: Any,
) -> AgentNames:
    """The agent names of one load: ``executors=``, the plugins' agents, ``agents=``."""
    label: str | None = None
    module: Mapping[str, Any] = {}
    if isinstance(agents, ModuleType):
        label = agents.__name__
        module = module_agents(agents)
    elif agents is not None:
        if not isinstance(agents, Mapping):
            raise TypeError(
                f"agents= is a module or a mapping of names to agents, got {type(agents).__name__}"
            )
        label, module = "(a mapping)", dict(agents)
    return AgentNames(
        executors=executors,
        published=plugin_manager.registry("agent"),
        module=module,
        module_label=label,
    )


class _Loaded(NamedTuple):
    """What one reading of a document gave: its spec, the name errors give it, its agent
    names, and the document as read (what the workflow carries: :class:`SourceDocument`)."""

    spec: WorkflowSpec
    name: str
    registry: AgentNames
    source: SourceDocument


def _load_spec(
    source: str | os.PathLike[str],
    format: str | None,
    executors: Mapping[str, Any] | None,
    agents: ModuleType | Mapping[str, Any] | None,
    plugin_manager: Any,
    options: Mapping[str, Any],
    allow_imports: bool = False,
) -> _Loaded:
    if plugin_manager is None:
        plugin_manager = get_plugin_manager()
    loaders = plugin_manager.registry("loader")
    suffixes = {s for n in loaders.names() for s in getattr(loaders.get(n), "suffixes", ())}
    text, name, suffix = _read(source, suffixes, format)
    if "\x00" in text:
        offset = text.index("\x00")
        line = text.count("\n", 0, offset) + 1
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        row = text[start : end if end != -1 else len(text)].replace("\x00", " ")
        where = SourcePosition(source=name, line=line, column=offset - start + 1, text=row)
        raise LoadError([DocumentError("the text holds a NUL byte", where)], source=name)
    if suffix == ".py" and format is None:  # code, never a document (even with a "->")
        raise LoadError(
            [PlaitError("a .py file is Python code, never read as a workflow document")],
            source=name,
        )
    format_name, loader = _choose(loaders, format, suffix, text, name)
    accepted = getattr(loader, "options", None)
    if accepted is not None and (unknown := sorted(set(options) - set(accepted))):
        raise LoadError(
            [
                ConfigError(
                    f"unknown option(s) for the {format_name} loader: {', '.join(unknown)}; "
                    f"accepted: {', '.join(accepted) or 'none'}",
                    SourcePosition(source=name),
                )
            ],
            source=name,
        )
    executors = dict(executors or {})
    registry = agent_names(executors, agents, plugin_manager)
    names = set(registry.names())
    names |= set(plugin_manager.registry("executor_kind").names())
    names |= set(plugin_manager.registry("fragment").names())
    ctx = BuildContext(
        source=name,
        # what the document may import is its grants' business: a loader imports code it
        # names only to check it, and only when the caller trusts it to
        allow_imports=allow_imports,
        executors=executors,
        names=frozenset(names),
        options=options,
        manager=plugin_manager,
        agents=registry,
    )
    # the text read once: what the loader parses is what the workflow carries
    document = SourceDocument(_file_name(name, suffix), format_name, text)
    return _Loaded(loader.load(text, ctx), name, registry, document)


def _file_name(name: str, suffix: str | None) -> str:
    """A document's file name, no folder (``<string>`` for text: ``suffix`` is ``None``)."""
    if suffix is None:
        return name
    from pathlib import Path

    return Path(name).name


def load(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    executors: Mapping[str, Any] | None = None,
    allow_imports: bool = False,
    allow: AllowSpec = None,
    agents: ModuleType | Mapping[str, Any] | None = None,
    plugin_manager: Any = None,
    **options: Any,
) -> Workflow:
    """A runnable workflow from a document in any installed format: what
    :func:`plait.load` calls, with its arguments, errors and documentation (reading the
    text, picking the loader, the agent names, the grants check, then
    :meth:`plait.Workflow.from_spec`).
    """
    from plait import Workflow
    from plait.spi import load_scope

    from ._capabilities import IMPORTS, Grants, check_granted
    from ._wiring import wire_document

    if plugin_manager is None:
        plugin_manager = get_plugin_manager()

    grants = Grants.of(allow, allow_imports=allow_imports)
    # one load: what the loader's checks build, the build reuses (see LoadScope)
    with load_scope():
        spec, name, registry, document = _load_spec(
            source, format, executors, agents, plugin_manager, options, grants.covers(IMPORTS)
        )
        # the Python agents the document resolved to, from every tier, by name
        bound = registry.python_objects()
        check_granted(spec, grants, executors=bound, manager=plugin_manager, source=name)
        try:
            workflow = Workflow.from_spec(
                spec,
                bound,
                allow_imports=grants.covers(IMPORTS),
                plugin_manager=plugin_manager,
                source=name,
            )
        except LoadError as exc:
            # each problem at its node's place in the text, its fix in the caller's words
            said = _at_nodes(exc, spec)
            said = in_cli_words(said) if is_cli() else said
            if said is exc:
                raise
            raise said from exc
        # the edge check WorkflowBuilder.build() runs, over the executors the nodes were
        # built into: a plain function's annotations count however it was wired
        wired = wire_document(
            workflow,
            registry.edge_positions,
            manager=plugin_manager,
            allow_imports=grants.covers(IMPORTS),
            source=name,
        )
        # the document it was loaded from, as read: what its durable runs record
        return attach_source(wired, document)


_NODE = re.compile(r"/nodes/(\d+)(?:/|$)")


def _at_nodes(error: LoadError, spec: WorkflowSpec) -> LoadError:
    """``error`` (building ``spec``) with each problem that has no line at the line and
    column the front-end recorded for its node (``config["at"]``); ``error`` itself when
    none moves."""
    from ._capabilities import node_at

    problems: list[PlaitError] = []
    for problem in error.problems:
        where = problem.position if isinstance(problem, ConfigError) else None
        node = _NODE.match(where.path or "") if where is not None and where.line is None else None
        index = int(node[1]) if node is not None else len(spec.nodes)
        at = node_at(spec.nodes[index].config) if index < len(spec.nodes) else None
        if not isinstance(problem, ConfigError) or where is None or at is None:
            problems.append(problem)
            continue
        placed = SourcePosition(
            source=where.source, line=at[0], column=at[1], path=where.path, text=where.text
        )
        problems.append(ConfigError(problem.reason, placed, fix=problem.fix))
    if all(new is old for new, old in zip(problems, error.problems)):
        return error
    return LoadError(problems, source=error.source)


def check_agents(
    agents: Mapping[str, AgentDefinition],
    manager: Any,
    source: str | None = None,
    *,
    allow_imports: bool = False,
) -> list[tuple[str, str]]:
    """Every config problem of a document's agents, found when the document is loaded, as
    ``(JSON path under the agents: section, message)`` in the document's own keys
    (``/qa/model``, ``/fetch/config/url``): the kind that builds each agent checks it.
    Code (a ``ref`` agent, an LLM agent's ``tools``) is imported to be checked only when
    the caller trusts the document (``allow_imports``); else it is checked when it is
    built, under that trust.
    """
    kinds = manager.registry("executor_kind")
    problems: list[tuple[str, str]] = []
    for name, definition in agents.items():
        if definition.kind == "python" and not allow_imports:
            continue
        if definition.kind not in kinds:
            installed = [k for k in kinds.names() if "." not in k]
            if definition.kind == "agent":
                problems.append(
                    (
                        f"/{name}",
                        f"agent {name!r} is an LLM agent, which needs plait-llm "
                        "(pip install plait-llm)",
                    )
                )
                continue
            did = did_you_mean(definition.kind, installed)
            problems.append(
                (
                    f"/{name}/kind",
                    f"no executor kind {definition.kind!r}{did} (installed: "
                    f"{', '.join(installed) or 'none'})",
                )
            )
            continue
        ctx = BuildContext(
            node_id=name, allow_imports=allow_imports, manager=manager, source=source or ""
        )
        config = dict(definition.config)
        if definition.kind == "agent" and not allow_imports:  # code: checked when built
            config.pop("tools", None)
        try:
            found = kinds.get(definition.kind).check(config, ctx)
        except Exception as exc:  # a kind's own bug must not escape as a non-Plait error
            found = [exc]
        for problem in found:
            position = getattr(problem, "position", None)
            inner = getattr(position, "path", None) or "/config"
            if definition.kind in ("agent", "python"):  # its keys are the agent's own
                inner = inner.removeprefix("/config") or ""
            reason = getattr(problem, "reason", None) or str(problem)
            reason = reason.removeprefix(f"executor {name!r}: ").removeprefix(f"node {name!r}: ")
            problems.append((f"/{name}{inner}", f"agent {name!r}: {reason}"))
    return problems


class Documents:
    """The documents machinery behind :func:`plait.load` (a :class:`plait.spi.Documents`),
    given by the ``plait_documents`` hook.
    """

    load = staticmethod(load)
    load_spec = staticmethod(load_spec)

    def agent_names(self, executors: Mapping[str, Any]) -> AgentNames:
        """The agent names of a load with only ``executors`` (a loader called without
        :func:`load`)."""
        return AgentNames(executors=executors)
