"""Agent names: the one registry every workflow document's names resolve through.

A name a document uses for an agent (a flow's ``writer``, a DAG node's ``agent_name``, a
steps ``name:``) resolves in this order, the same in every format, from Python and from
the command line:

1. the executors passed from Python (``executors=``);
2. the document's own ``agents:`` section (:func:`read_agent`: one schema in every format);
3. the agents installed distributions publish (``plait_register_agents``);
4. the module given as ``agents=`` (``plait run --agents MODULE_OR_FILE.py``): its public
   async functions and executors (:func:`module_agents`).

An unknown name is an error listing where Plait looked and what it found there
(:meth:`AgentNames.unknown`); there is no fallback to another kind of thing.

Errors name the caller's own words: :func:`~plait_documents.spell` gives a Python
argument (``allow_imports=True``) or, inside :func:`~plait_documents.cli_wording`, the
command line's flag (``--allow-imports``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import attrs
from plait import RegistrationError, SourcePosition
from plait.spi import BuildContext

from ._wording import is_cli, spell
from .build import did_you_mean

__all__ = [
    "AGENT_KEYS",
    "AgentDefinition",
    "AgentNames",
    "Found",
    "module_agents",
    "read_agent",
    "record_edge_positions",
    "read_agents",
]

# -- the agents: section ------------------------------------------------------------------

#: the keys of an LLM agent (cagent's shape), built by plait-llm's ``agent`` kind
LLM_KEYS = ("model", "instruction", "system", "structured_output", "tools", "options")
#: every key an entry of an ``agents:`` section may have
AGENT_KEYS = ("ref", "kind", "config", "description", *LLM_KEYS)
_TYPES: dict[str, tuple[type, ...]] = {
    "ref": (str,),
    "kind": (str,),
    "config": (dict,),
    "description": (str,),
    "model": (str,),
    "instruction": (str,),
    "system": (str,),
    "structured_output": (dict,),
    "tools": (list,),
    "options": (dict,),
}
_JSON: dict[type, str] = {str: "a string", dict: "a mapping", list: "a list"}


@attrs.frozen
class AgentDefinition:
    """An agent as data: the executor kind that builds it and that kind's config.

    An ``agents:`` entry ``{ref: module:attr}`` is ``python`` with ``{"ref": ...}``; an
    LLM agent (``model``, ``instruction``, ``structured_output``, ``tools``, ``options``,
    ``system``) is plait-llm's ``agent`` kind; ``{kind: shell, config: {...}}`` is that kind.
    """

    kind: str
    config: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def structured_output(self) -> Mapping[str, Any] | None:
        """The JSON Schema of the agent's answer, when it declares one."""
        schema = self.config.get("structured_output") if self.kind == "agent" else None
        return schema if isinstance(schema, Mapping) else None

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., "config": {...}}``: what a node's config records."""
        return {"kind": self.kind, "config": dict(self.config)}


def read_agent(value: Any) -> tuple[AgentDefinition | None, list[tuple[str, str]]]:
    """One entry of an ``agents:`` section: its definition, or every problem as ``(JSON
    path under the entry, message)`` (an unknown key with the one it probably meant).
    """
    if not isinstance(value, Mapping):
        return None, [
            (
                "",
                "an agent is a mapping: {ref: module:attr}, an LLM agent {model: ..., "
                "instruction: ...}, or {kind: <executor kind>, config: {...}}",
            )
        ]
    problems: list[tuple[str, str]] = []
    for key in value:
        if key not in AGENT_KEYS:
            did = did_you_mean(key, AGENT_KEYS)
            problems.append(
                (f"/{key}", f"unknown key {key!r}{did} (an agent has: {', '.join(AGENT_KEYS)})")
            )
        elif not isinstance(value[key], _TYPES[key]) or isinstance(value[key], bool):
            want = " or ".join(_JSON[t] for t in _TYPES[key])
            problems.append((f"/{key}", f"{key!r} must be {want}, got {value[key]!r}"))
    if problems:
        return None, problems
    forms = [f for f in ("ref", "kind") if f in value]
    llm = [k for k in LLM_KEYS if k in value]
    if len(forms) > 1 or (forms and llm):
        given = ", ".join(repr(k) for k in (*forms, *llm))
        return None, [
            (
                "",
                f"give one form of agent: 'ref' (Python code), 'kind' with 'config' (an "
                f"executor kind), or an LLM agent (model, instruction …); got {given}",
            )
        ]
    if "config" in value and "kind" not in value:
        return None, [("/config", "'config' goes with 'kind' (the executor kind it configures)")]
    if "ref" in value:
        ref = value["ref"]
        if ":" not in ref or not all(ref.partition(":")[::2]):
            return None, [("/ref", f"'ref' is module:attr (my_agents:writer), got {ref!r}")]
        return AgentDefinition("python", {"ref": ref}), []
    if "kind" in value:
        return AgentDefinition(value["kind"], dict(value.get("config") or {})), []
    return AgentDefinition("agent", {k: value[k] for k in llm}), []


def read_agents(
    value: Any,
) -> tuple[dict[str, AgentDefinition], list[tuple[str, str]]]:
    """A whole ``agents:`` section (a mapping of name to agent): the definitions that read,
    and every problem as ``(JSON path under the section, message)``.
    """
    if value is None:
        return {}, []
    if not isinstance(value, Mapping):
        return {}, [("", "'agents' is a mapping of agent names to agents")]
    found: dict[str, AgentDefinition] = {}
    problems: list[tuple[str, str]] = []
    for name, entry in value.items():
        if not isinstance(name, str) or not name:
            problems.append((f"/{name}", f"an agent's name is a non-empty string, got {name!r}"))
            continue
        definition, own = read_agent(entry)
        problems.extend((f"/{name}{path}", message) for path, message in own)
        if definition is not None:
            found[name] = definition
    return found, problems


# -- Python modules of agents -------------------------------------------------------------


def module_agents(module: ModuleType) -> dict[str, Any]:
    """The agents a module offers (``plait run --agents MODULE``): its public async
    functions defined in it, by name, and its :class:`plait.Executor` objects, by their
    id (so an agent can have a name that is no Python identifier: ``greeter-agent``) and
    by attribute name.
    """
    from plait import Executor

    found: dict[str, Any] = {}
    for name, value in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, Executor):
            found[name] = value
            found.setdefault(value.id, value)
        elif (
            inspect.iscoroutinefunction(value)
            and getattr(value, "__module__", None) == module.__name__
        ):
            found[name] = value
    return found


# -- the registry ----------------------------------------------------------------------------


@attrs.frozen
class Found:
    """Where a name resolved: ``tier`` (``executors``, ``document``, ``plugin``,
    ``module``), and either the Python ``obj`` or the ``definition`` (data).
    """

    name: str
    tier: str
    obj: Any = None
    definition: AgentDefinition | None = None
    origin: str = ""


class AgentNames:
    """The agent names of one load, in the documented order (see the module docstring).

    :param executors: the Python objects passed as ``executors=``.
    :param published: the ``agent`` registry of the plugin manager (or ``None``).
    :param module: the agents of the ``agents=`` module, by name.
    :param module_label: how the caller named that module (for errors).

    A loader reads its document's ``agents:`` section and gives it with
    :meth:`set_document` before it resolves names with :meth:`find`.
    """

    def __init__(
        self,
        *,
        executors: Mapping[str, Any] | None = None,
        published: Any = None,
        module: Mapping[str, Any] | None = None,
        module_label: str | None = None,
    ) -> None:
        self.executors = dict(executors or {})
        self.published = published
        self.module = dict(module or {})
        self.module_label = module_label
        self.document: dict[str, AgentDefinition] = {}
        self.declared: set[str] = set()
        #: where the document writes each edge group, by group id (what a loader gives
        #: with :func:`record_edge_positions`): the type check of the built workflow
        #: reports an edge there
        self.edge_positions: Mapping[str, SourcePosition] = {}

    def set_document(
        self, agents: Mapping[str, AgentDefinition], declared: Iterable[Any] = ()
    ) -> None:
        """The document's own ``agents:`` section: the definitions that read, and every
        name it ``declared`` (one whose definition has a problem is reported there, not
        again where it is used)."""
        self.document = dict(agents)
        self.declared = {str(n) for n in declared} | set(agents)

    def is_declared(self, name: str) -> bool:
        """Whether the document's ``agents:`` section names ``name`` (well formed or not)."""
        return name in self.declared

    def _published_names(self) -> list[str]:
        return list(self.published.names()) if self.published is not None else []

    def find(self, name: str) -> Found | None:
        """Where ``name`` resolves first, or ``None``."""
        if name in self.executors:
            return Found(name, "executors", obj=self.executors[name], origin="executors=")
        if name in self.document:
            return Found(
                name, "document", definition=self.document[name], origin="the document's agents:"
            )
        if self.published is not None and name in self.published:
            entry = self.published.entry(name)
            obj = entry.obj
            origin = f"plugin {entry.distribution}"
            if isinstance(obj, Mapping):  # an agents: entry: the kernel checked its shape only
                _, problems = read_agent(obj)
                if problems:
                    raise RegistrationError(
                        f"agent {name!r} that {entry.distribution} publishes is not an agent: "
                        + "; ".join(message for _, message in problems)
                    )
            definition = _as_definition(obj)
            if definition is not None:
                return Found(name, "plugin", definition=definition, origin=origin)
            return Found(name, "plugin", obj=obj, origin=origin)
        if name in self.module:
            label = spell(f"agents={self.module_label!r}", f"--agents {self.module_label}")
            return Found(name, "module", obj=self.module[name], origin=label)
        return None

    def names(self) -> list[str]:
        """Every name that resolves, sorted."""
        return sorted({*self.executors, *self.document, *self._published_names(), *self.module})

    def python_objects(self) -> dict[str, Any]:
        """The Python objects a built workflow may bind by name, lower tiers first so a
        higher one wins: the module's, then the plugins', then ``executors=``; a name the
        document defines is left to the document."""
        found: dict[str, Any] = {}
        for name, obj in self.module.items():
            if name not in self.document:
                found[name] = obj
        for name in self._published_names():
            obj = self.published.get(name)
            if name not in self.document and _as_definition(obj) is None:
                found[name] = obj
        found.update(self.executors)
        return found

    def looked(self) -> str:
        """Where Plait looked for a name and what it found there."""

        def listing(names: Any) -> str:
            names = sorted(names)
            shown = ", ".join(names[:20])
            more = f" … and {len(names) - 20} more" if len(names) > 20 else ""
            return shown + more if names else "none"

        places = []
        if not is_cli():
            places.append(f"executors= ({listing(self.executors)})")
        places.append(f"the document's agents: section ({listing(self.document)})")
        places.append(f"agents installed plugins publish ({listing(self._published_names())})")
        if self.module_label is not None:
            label = spell(f"agents={self.module_label!r}", f"--agents {self.module_label}")
            places.append(f"{label} ({listing(self.module)})")
        else:
            places.append(spell("agents= (not given)", "--agents (not given)"))
        return "Plait looked in " + "; ".join(places)

    def unknown(self, name: str, *, extra: list[str] | None = None) -> str:
        """The message for a name nothing resolves: a did-you-mean, where Plait looked
        and what it found, and how to declare it."""
        candidates = [*self.names(), *(extra or [])]
        did = did_you_mean(name, candidates)
        how = spell(
            "declare it in the document's agents: section, pass executors={...}, or agents=",
            "declare it in the document's agents: section, or name a Python module with "
            "--agents MODULE_OR_FILE.py",
        )
        return f"unknown agent {name!r}{did} ({self.looked()}; {how})"


def record_edge_positions(ctx: BuildContext, positions: Mapping[str, SourcePosition]) -> None:
    """Where a loader's document writes each edge group (``{group id: position}``), kept
    for this load (``ctx.agents``) so that an edge the type check of the built workflow
    refuses is reported there, as the loader's own problems are. Nothing is kept for a
    lookup that is not an :class:`AgentNames`. ``positions`` is kept as given: a mapping
    that makes each position when it is looked up costs nothing for the edges that fit.
    """
    agents = ctx.agents
    if isinstance(agents, AgentNames):
        agents.edge_positions = positions


def _as_definition(obj: Any) -> AgentDefinition | None:
    """A published agent given as data (a definition, or an ``agents:`` entry mapping)."""
    if isinstance(obj, AgentDefinition):
        return obj
    if isinstance(obj, Mapping):
        definition, _ = read_agent(obj)
        return definition
    return None
