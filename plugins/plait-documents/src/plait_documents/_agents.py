"""Agent names: the one registry every workflow document's names resolve through.

A name a document uses for an agent (a flow's ``writer``, a DAG node's ``agent_name``, a
steps ``name:``) resolves in this order, the same in every format, from Python and from
the command line:

1. the executors passed from Python (``executors=``);
2. the document's own ``agents:`` section (:func:`~plait_documents.read_agent`: one schema in
   every format, in :mod:`plait_documents._definitions`);
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
from typing import TYPE_CHECKING, Any

from plait import RegistrationError, SourcePosition
from plait.spi import BuildContext

from ._wording import is_cli, spell
from .build import did_you_mean

if TYPE_CHECKING:
    from ._definitions import AgentDefinition, Found

__all__ = ["AgentNames", "module_agents", "record_edge_positions"]

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
        from ._definitions import Found, as_definition, read_agent

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
            definition = as_definition(obj)
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
        published = self._published_names()
        if published:  # an agent a plugin publishes as data is a definition, not an object
            from ._definitions import as_definition

            for name in published:
                obj = self.published.get(name)
                if name not in self.document and as_definition(obj) is None:
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
