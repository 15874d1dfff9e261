"""The ``queue`` column of run listings (``plait runs``, ``plait ui``), through the
``plait_run_columns`` hook: the task queue a run went through, from what its latest
checkpoint's metadata records (``metadata["workers"]``, written by the worker that ran it;
a queued run's listing entry carries the same record). Nothing else is read, and nothing
of the queue library is imported: a listing calls it once per run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ._queue import METADATA_KEY

__all__ = ["queue_cell"]

#: A queue name the column shows (stored data: anything else is not shown).
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def queue_cell(info: Any) -> str:
    """``plait``: the queue the run went through, as its latest checkpoint records it;
    ``?queue`` when the record names none a listing may show (a record from before queue
    names were recorded, or stored text that is not a queue name); ``-`` for a run that no
    worker ran (``plait run``, a program's ``Workflow.run``), or when the listing read no
    metadata (a run index, a sealed store)."""
    metadata = info.metadata
    record = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
    if not isinstance(record, Mapping):
        return "-"
    name = record.get("queue")
    return name if isinstance(name, str) and _NAME.fullmatch(name) else "?queue"
