"""Workflow documents for Plait: the machinery behind :func:`plait.load`.

The kernel defines the loaders (``plait_register_loaders``), the agents distributions
publish (``plait_register_agents``) and :func:`plait.load` itself; installing
``plait-documents`` registers what ``plait.load`` calls (``plait_register_documents``,
:class:`plait.spi.Documents`):

- reading a document (a path or text, bounded in size) and picking its loader by
  ``format=``, suffix or detection (:func:`load`, :func:`load_spec`);
- the one agent-name registry every format resolves names through (:class:`AgentNames`:
  ``executors=``, the document's ``agents:`` section read by :func:`read_agents`, the
  agents installed plugins publish, then ``agents=``/``--agents``);
- the capability model for workflow files (:class:`Capability`, :func:`needs`,
  :class:`Grants`, :func:`check_granted`): a document that needs a capability its caller
  did not grant is refused with :class:`plait.CapabilityError` before anything runs;
- one way to build the IR (:mod:`plait_documents.build`): the spec builder
  (:class:`SpecBuilder`, :func:`edge_group_id`), the problems collector (:class:`Problems`,
  :func:`problem_order`), the one "did you mean" hint (:func:`did_you_mean`) and JSON
  Schema config errors (:func:`check_config`, :func:`config_error`, :func:`json_pointer`);
- the edge type check the builder and :func:`load` share (:func:`wire_types`, with the
  converter nodes it inserts, :class:`ConverterExecutor`, and the problems it finds,
  :class:`EdgeTypeProblem`); a loader tells it where its document writes each edge with
  :func:`record_edge_positions`.

Loaders (``plait-flow``, ``plait-dag``, ``plait-steps``), the builder API
(``plait-builders``) and executor kinds import these names from here. Names are imported
on first use: loading plugins imports only this module.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._agents import (
        AGENT_KEYS,
        AgentDefinition,
        AgentNames,
        Found,
        module_agents,
        read_agent,
        read_agents,
        record_edge_positions,
    )
    from ._capabilities import (
        CAPABILITY_NAMES,
        IMPORTS,
        SUBPROCESS,
        AllowSpec,
        Capability,
        Grants,
        Need,
        check_granted,
        documents,
        filesystem,
        kind_capabilities,
        needs,
        network,
    )
    from ._load import Documents, agent_names, check_agents, load, load_spec
    from ._wiring import ConverterExecutor, EdgeTypeProblem, LossyConversion, wire_types
    from .build import (
        Problems,
        SpecBuilder,
        check_config,
        config_error,
        did_you_mean,
        edge_group_id,
        json_pointer,
        problem_order,
    )

#: Where each public name lives (imported on first use).
_HOME = {
    "AGENT_KEYS": "_agents",
    "AgentDefinition": "_agents",
    "AgentNames": "_agents",
    "Found": "_agents",
    "module_agents": "_agents",
    "read_agent": "_agents",
    "read_agents": "_agents",
    "record_edge_positions": "_agents",
    "CAPABILITY_NAMES": "_capabilities",
    "IMPORTS": "_capabilities",
    "SUBPROCESS": "_capabilities",
    "AllowSpec": "_capabilities",
    "Capability": "_capabilities",
    "Grants": "_capabilities",
    "Need": "_capabilities",
    "check_granted": "_capabilities",
    "documents": "_capabilities",
    "filesystem": "_capabilities",
    "kind_capabilities": "_capabilities",
    "needs": "_capabilities",
    "network": "_capabilities",
    "Documents": "_load",
    "agent_names": "_load",
    "check_agents": "_load",
    "load": "_load",
    "load_spec": "_load",
    "ConverterExecutor": "_wiring",
    "EdgeTypeProblem": "_wiring",
    "LossyConversion": "_wiring",
    "wire_types": "_wiring",
    "Problems": "build",
    "SpecBuilder": "build",
    "check_config": "build",
    "config_error": "build",
    "did_you_mean": "build",
    "edge_group_id": "build",
    "json_pointer": "build",
    "problem_order": "build",
}

__all__ = [
    "AGENT_KEYS",
    "AgentDefinition",
    "AgentNames",
    "AllowSpec",
    "CAPABILITY_NAMES",
    "Capability",
    "ConverterExecutor",
    "Documents",
    "EdgeTypeProblem",
    "Found",
    "Grants",
    "IMPORTS",
    "LossyConversion",
    "Need",
    "Problems",
    "SUBPROCESS",
    "SpecBuilder",
    "agent_names",
    "check_agents",
    "check_config",
    "check_granted",
    "config_error",
    "did_you_mean",
    "documents",
    "edge_group_id",
    "filesystem",
    "json_pointer",
    "kind_capabilities",
    "load",
    "load_spec",
    "module_agents",
    "needs",
    "network",
    "plait_register_documents",
    "problem_order",
    "read_agent",
    "read_agents",
    "record_edge_positions",
    "wire_types",
]

__getattr__ = lazy_exports(__name__, _HOME)

#: What :class:`plait.spi.Documents` asks of the registered object (checked without
#: importing it: the loading machinery is imported on the first ``plait.load``).
_PROVIDES = ("load", "load_spec", "agent_names")


@plait.hookimpl
def plait_register_documents(register: Register) -> None:
    """Register the documents machinery ``"documents"`` (:class:`Documents`)."""
    register("documents", lazy("plait_documents._load:Documents", provides=_PROVIDES))


def __dir__() -> list[str]:
    return list(__all__)
