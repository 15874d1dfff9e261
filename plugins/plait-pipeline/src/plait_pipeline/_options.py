"""The run option of the pipelined schedule, which ``plait-pipeline`` declares
(``plait_register_run_options``): ``Workflow.run(message, schedule="pipelined",
max_lead=...)``. The kernel merges it with its own options and rejects unknown names; the
schedule reads it as ``runner.options.of(PipelineOptions)``.
"""

from __future__ import annotations

from typing import Any

import attrs
from plait import RunOptionError

__all__ = ["PipelineOptions"]


def _lead(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise RunOptionError(
            f"run option max_lead must be a non-negative int or None (unbounded), got {value!r}"
        )


@attrs.frozen(kw_only=True)
class PipelineOptions:
    """The run options of the pipelined schedule.

    :param max_lead: how many supersteps work may run ahead of the lowest superstep with
        work (``0`` is the superstep schedule: the kernel's superstep loop runs the run;
        ``None``, the default, is unbounded).
    """

    max_lead: int | None = attrs.field(default=None, validator=_lead)
