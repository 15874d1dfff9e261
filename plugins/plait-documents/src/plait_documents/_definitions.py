"""Agents as data: an ``agents:`` section read into definitions, and where a name resolved.

:func:`read_agent` reads one entry of a document's ``agents:`` section (one schema in every
format) into an :class:`AgentDefinition`, :func:`read_agents` a whole section, and
:class:`Found` is what :meth:`~plait_documents.AgentNames.find` answers. A load whose
document has no ``agents:`` section and resolves no agent name imports none of it (the
registry, :mod:`plait_documents._agents`, imports it on first use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from .build import did_you_mean

__all__ = [
    "AGENT_KEYS",
    "AgentDefinition",
    "Found",
    "as_definition",
    "read_agent",
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


def as_definition(obj: Any) -> AgentDefinition | None:
    """A published agent given as data (a definition, or an ``agents:`` entry mapping)."""
    if isinstance(obj, AgentDefinition):
        return obj
    if isinstance(obj, Mapping):
        definition, _ = read_agent(obj)
        return definition
    return None
