"""The pipelined schedule for Plait: branches that do not wait for the barrier, with the
results of the superstep schedule.

Installing ``plait-pipeline`` registers the schedule ``"pipelined"``
(``plait_register_schedules``): ``workflow.run(message, schedule="pipelined",
max_lead=None)``, a workflow's default (``options``), or ``plait run --schedule
pipelined``. It declares its run option ``max_lead`` (``plait_register_run_options``,
:class:`PipelineOptions`). The kernel's superstep loop hands it the supersteps where work after them
could start before they end, and takes the run back once it is in lockstep again (see
:class:`plait.spi.Schedule`); a checkpointed run's consistent cuts go to the checkpointer
through the runner's commit seam, and a run resumed from one starts in this schedule.
The rules are in :mod:`plait_pipeline._pipeline`'s docstring and the Schedules guide.

Names are imported on first use: loading plugins imports only this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._options import PipelineOptions as PipelineOptions
    from ._pipeline import (
        NAME as NAME,
        Pipeline as Pipeline,
        Pipelined as Pipelined,
        TimedEffects as TimedEffects,
        decode_cut as decode_cut,
        pays as pays,
    )


#: What :class:`plait.spi.Schedule` asks of the registered object (checked without
#: importing it: the schedule's module loads on the first run that asks for it).
_PROVIDES = ("pays", "start", "decode_cut")


@plait.hookimpl
def plait_register_schedules(register: Register) -> None:
    """Register the schedule ``"pipelined"`` (:class:`Pipelined`)."""
    register("pipelined", lazy("plait_pipeline._pipeline:Pipelined", provides=_PROVIDES))


@plait.hookimpl
def plait_register_run_options(register: Register) -> None:
    """Declare the pipelined schedule's run option (:class:`PipelineOptions`):
    ``max_lead``."""
    from ._options import PipelineOptions

    register("pipeline", PipelineOptions)


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
