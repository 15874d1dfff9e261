"""The document a workflow was loaded from: its source, carried with the workflow.

:func:`plait.load` (:func:`plait_documents.load`) reads a document once, from a path or
as text, and the workflow it returns carries that text as a :class:`SourceDocument`:
:func:`source_document` gives it back, for whoever needs to know what the workflow was
built from. ``plait-durable`` records it with the run on the first checkpoint of every
durable run of the workflow, whoever starts it (Python, ``plait run``, a worker,
``plait ui``), so a run keeps the exact text its loader parsed, never a second reading
of the file.

It lives in the workflow's compiled graph (:meth:`plait.spi.CompiledGraph.cached`, the
place a plugin keeps a value per compiled workflow), set when the workflow is loaded. A
workflow made another way (built in Python, :meth:`plait.Workflow.from_spec`, composed)
has none.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import attrs
from plait.spi import record_repr

if TYPE_CHECKING:
    from plait import Workflow
    from plait.spi import CompiledGraph

__all__ = ["SourceDocument", "attach_source", "source_document"]

#: The key of a workflow's source document in its compiled graph's cache.
SOURCE_KEY = ("plait_documents", "source")


def _no_source(graph: CompiledGraph) -> SourceDocument | None:
    return None


@attrs.frozen(repr=False)
class SourceDocument:
    """A workflow document as its loader read it.

    :param name: the document's file name (``orders.yaml``), no folder; ``<string>`` for
        a document given as text.
    :param format: the loader that read it (``steps``, ``dag``, ``flow`` …); ``None``
        only in a record written without one.
    :param text: the document, exactly as parsed.

    :attr:`sha256` is computed from :attr:`text` (never given), so a source document
    always names the hash of its own bytes.
    """

    __repr__ = record_repr

    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    format: str | None = attrs.field(
        validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )
    text: str = attrs.field(validator=attrs.validators.instance_of(str), repr=False)
    #: the SHA-256 (hex) of :attr:`text`'s UTF-8 bytes (a lone surrogate, which no file holds
    #: but a caller's string may, as its ``surrogatepass`` bytes)
    sha256: str = attrs.field(init=False)

    @sha256.default
    def _hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def short(self) -> str:
        """The first 12 characters of :attr:`sha256`."""
        return self.sha256[:12]


def _graph(workflow: Any) -> CompiledGraph:
    from plait import Workflow
    from plait.spi import compiled_graph

    if isinstance(workflow, Workflow):
        return compiled_graph(workflow)
    found: CompiledGraph = workflow
    return found


def source_document(workflow: Workflow | CompiledGraph) -> SourceDocument | None:
    """The document ``workflow`` (or its compiled graph) was loaded from, or ``None``
    for a workflow not loaded from a document."""
    return _graph(workflow).cached(SOURCE_KEY, _no_source)


def attach_source(workflow: Workflow, source: SourceDocument | None) -> Workflow:
    """Say that ``workflow`` was loaded from ``source`` and return it: what :func:`load`
    does for the workflow it returns, and what a caller does for a copy it made of one
    that runs the same document (``plait run --placement``'s
    :func:`plait.spi.with_placement`). ``None`` attaches nothing.

    :raises ValueError: ``workflow`` already carries another document.
    """
    if source is None:
        return workflow
    found = _graph(workflow).cached(SOURCE_KEY, lambda graph: source)
    if found is not source and found != source:
        what = "no document" if found is None else f"{found.name} (sha256 {found.short})"
        raise ValueError(
            f"workflow {workflow.name or '(unnamed)'} carries {what} already; it cannot "
            f"carry {source.name} (sha256 {source.short}) too"
        )
    return workflow
