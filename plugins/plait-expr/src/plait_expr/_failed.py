"""The run error for an expression that failed while a node ran, written once for every
front-end that evaluates expressions in its executors (YAML steps, JSON DAG)."""

from __future__ import annotations

from typing import TypeVar

from plait import PlaitError, WorkflowRunError

__all__ = ["expression_failed"]

E = TypeVar("E", bound=WorkflowRunError)


def expression_failed(
    error: type[E], what: str, exc: PlaitError, *, executor_id: str, superstep: int | None
) -> E:
    """``error("<what> failed: <exc>")``: the run error for an expression (a condition, a
    template, a list of items) that failed to evaluate while node ``executor_id`` ran in
    ``superstep``, naming both, with ``exc`` (its position in the document and the caret
    line, when it has them) as its cause. Raise it ``from exc``::

        try:
            value = condition.evaluate(data)
        except PlaitError as exc:
            raise expression_failed(
                StepConditionError, f"condition of step {step!r}", exc,
                executor_id=step, superstep=ctx.superstep,
            ) from exc

    :param error: the front-end's run error class (a :class:`~plait.WorkflowRunError`).
    :param what: the expression's role and owner, as the message starts.
    :param exc: what evaluating it raised.
    :param executor_id: the node that was running.
    :param superstep: the superstep it ran in.
    """
    found = error(f"{what} failed: {exc}", executor_id=executor_id, superstep=superstep)
    found.__cause__ = exc
    return found
