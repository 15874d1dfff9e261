"""What a run produced: :class:`WorkflowRunResult`.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .events import RunStatus, WorkflowEvent

__all__ = ["WorkflowRunResult"]


@attrs.define
class WorkflowRunResult:
    """What a run produced.

    :param run_id: the run's id.
    :param status: ``idle``, ``idle_with_pending_requests`` or ``failed``.
    :param outputs: workflow outputs in the order they were yielded.
    :param events: the events collected (lifecycle events unless ``events="all"``).
    :param error: the error that failed the run, else ``None``.
    :param supersteps: how many supersteps ran.
    :param pending_requests: requests for outside input the run is waiting on.
    :param shared: the run's shared state when it ended (``ctx.set_shared_state``).
    """

    run_id: str
    status: RunStatus
    outputs: list[Any]
    events: list[WorkflowEvent]
    error: BaseException | None = None
    supersteps: int = 0
    pending_requests: list[Any] = attrs.field(factory=list)
    shared: dict[str, Any] = attrs.field(factory=dict)

    @property
    def ok(self) -> bool:
        """True unless the run failed."""
        from .events import RunStatus

        return self.status is not RunStatus.FAILED
