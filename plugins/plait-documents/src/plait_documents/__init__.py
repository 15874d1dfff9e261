"""Workflow documents for Plait: the machinery behind :func:`plait.load`.

The kernel defines the loaders (``plait_register_loaders``), the agents distributions
publish (``plait_register_agents``) and :func:`plait.load` itself; installing
``plait-documents`` registers what ``plait.load`` calls (``plait_documents``,
:class:`plait.spi.Documents`):

- reading a document (a path or text, bounded in size) and picking its loader by
  ``format=``, suffix or detection (:func:`load`, :func:`load_spec`);
- the document a loaded workflow was read from, carried with it (:class:`SourceDocument`,
  :func:`source_document`): the text its loader parsed, which ``plait-durable`` records
  with every durable run of the workflow;
- the one agent-name registry every format resolves names through (:class:`AgentNames`:
  ``executors=``, the document's ``agents:`` section read by :func:`read_agents`, the
  agents installed plugins publish, then ``agents=``/``--agents``);
- the capability model for workflow files (:class:`Capability`, :func:`needs`,
  :class:`Grants`, :func:`check_granted`): a document that needs a capability its caller
  did not grant is refused with :class:`CapabilityError` before anything runs;
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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import lazy, lazy_exports

if TYPE_CHECKING:
    from ._agents import (
        AgentNames as AgentNames,
        module_agents as module_agents,
        record_edge_positions as record_edge_positions,
    )
    from ._capabilities import (
        CAPABILITY_NAMES as CAPABILITY_NAMES,
        IMPORTS as IMPORTS,
        SUBPROCESS as SUBPROCESS,
        AllowSpec as AllowSpec,
        Capability as Capability,
        CapabilityError as CapabilityError,
        Flags as Flags,
        Grants as Grants,
        Need as Need,
        check_granted as check_granted,
        documents as documents,
        filesystem as filesystem,
        grant_text as grant_text,
        kind_capabilities as kind_capabilities,
        needs as needs,
        network as network,
    )
    from ._converter_nodes import (
        ConverterExecutor as ConverterExecutor,
        LossyConversion as LossyConversion,
    )
    from ._definitions import (
        AGENT_KEYS as AGENT_KEYS,
        AgentDefinition as AgentDefinition,
        Found as Found,
        read_agent as read_agent,
        read_agents as read_agents,
    )
    from ._load import (
        Documents as Documents,
        agent_names as agent_names,
        check_agents as check_agents,
        load as load,
        load_spec as load_spec,
    )
    from ._mismatch import EdgeTypeProblem as EdgeTypeProblem
    from ._run_defaults import (
        DOCUMENT_RUN_OPTIONS as DOCUMENT_RUN_OPTIONS,
        check_run_option as check_run_option,
    )
    from ._source import (
        SourceDocument as SourceDocument,
        attach_source as attach_source,
        source_document as source_document,
    )
    from ._wiring import wire_types as wire_types
    from ._wording import (
        cli_wording as cli_wording,
        in_cli_words as in_cli_words,
        is_cli as is_cli,
        spell as spell,
    )
    from .build import (
        Problems as Problems,
        SpecBuilder as SpecBuilder,
        check_config as check_config,
        config_error as config_error,
        did_you_mean as did_you_mean,
        edge_group_id as edge_group_id,
        json_pointer as json_pointer,
        problem_order as problem_order,
    )


#: What :class:`plait.spi.Documents` asks of the registered object (checked without
#: importing it: the loading machinery is imported on the first ``plait.load``).
_PROVIDES = ("load", "load_spec", "agent_names")


#: The one documents machinery, made on first use (the kernel keeps what the hook gives).
_DOCUMENTS = lazy("plait_documents._load:Documents", provides=_PROVIDES)


@plait.hookimpl
def plait_documents() -> object:
    """Give the documents machinery (:class:`Documents`)."""
    return _DOCUMENTS


# each name is imported on first use (plugin loading stays cheap)
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
