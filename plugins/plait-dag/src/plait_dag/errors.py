"""The errors of the JSON DAG front-end, all :class:`plait.PlaitError` subclasses."""

from __future__ import annotations

from plait import ConfigError, WorkflowRunError

__all__ = ["DagDocumentError", "DagLoopError", "DagRunError"]


class DagDocumentError(ConfigError):
    """One problem of a JSON DAG document, at its JSON path (``/nodes/0/is_entyr``), or at
    a line and column when the text is not JSON. :class:`plait.LoadError` carries
    every one of a document at once, in ``problems``.
    """


class DagRunError(WorkflowRunError):
    """A node of a DAG went wrong while running: an agent returned something other than a
    dict of updates, or a condition could not be evaluated. Names the node.
    """


class DagLoopError(DagRunError):
    """A declared loop was about to be taken more often than its ``max_iterations``; names
    the loop (its two nodes and its connection's JSON path).
    """
