"""The run options of durable runs, which ``plait-durable`` declares
(``plait_register_run_options``): ``Workflow.run(message, checkpoint=..., durability=...,
lease_ttl=..., checkpoint_metadata=..., journal=...)``. The kernel merges them with its own
and rejects unknown names; a run that sets ``checkpoint`` is a durable one, and its
options are ``opts.of(DurableOptions)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from plait import RunOptionError
from plait.spi import record_repr

__all__ = ["DurableOptions", "RESERVED_METADATA", "STORE_METHODS"]

#: What a run needs of a checkpoint store object (see :class:`CheckpointStore`).
STORE_METHODS = ("save", "load", "latest", "list", "acquire_lease", "renew_lease",
                 "release_lease")  # fmt: skip

#: Keys of a checkpoint's metadata that the durability writes itself.
RESERVED_METADATA = frozenset(
    {
        "workflow",
        "topology",
        "error",
        "observers",
        "fingerprint",
        "version",
        "migrations",
        "document",
    }
)
_JSON_SCALARS = (str, int, float, bool, type(None))


def _store(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None or isinstance(value, str):
        return
    missing = [m for m in STORE_METHODS if not callable(getattr(value, m, None))]
    if missing:
        raise RunOptionError(
            f"run option checkpoint must be a store URL ('sqlite:///runs.db') or a checkpoint "
            f"store, got {type(value).__name__} {value!r} (it has no {', '.join(missing)})"
        )


def _mode(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value not in ("sync", "async", "exit"):
        raise RunOptionError(
            f"run option durability must be one of sync, async, exit, got {value!r}"
        )


def _positive_seconds(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise RunOptionError(
            f"run option {attribute.name} must be a positive number of seconds, got {value!r}"
        )


def _flag(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise RunOptionError(
            f"run option {attribute.name} must be True or False, got {type(value).__name__} "
            f"{value!r}"
        )


def _metadata(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    def json_ready(item: Any, where: str) -> None:
        if isinstance(item, _JSON_SCALARS):
            return
        if isinstance(item, (list, tuple)):
            for index, element in enumerate(item):
                json_ready(element, f"{where}[{index}]")
            return
        if isinstance(item, Mapping):
            for key, element in item.items():
                if not isinstance(key, str):
                    raise RunOptionError(
                        f"run option checkpoint_metadata{where} has a non-string key {key!r}"
                    )
                json_ready(element, f"{where}[{key!r}]")
            return
        raise RunOptionError(
            f"run option checkpoint_metadata{where} must be JSON-ready (str, int, float, "
            f"bool, None, lists and string-keyed dicts), got {type(item).__name__}"
        )

    if not isinstance(value, Mapping):
        raise RunOptionError(
            f"run option checkpoint_metadata must be a dict, got {type(value).__name__}"
        )
    json_ready(value, "")
    taken = sorted(RESERVED_METADATA & set(value))
    if taken:
        raise RunOptionError(
            f"run option checkpoint_metadata may not set {', '.join(taken)}: the durability "
            "writes those keys itself"
        )


@attrs.frozen(kw_only=True, repr=False)
class DurableOptions:
    """The run options of durable runs.

    :param checkpoint: a checkpoint store or store URL; a checkpoint per superstep.
    :param durability: ``sync``, ``async`` or ``exit`` (see the durable-runs guide).
    :param lease_ttl: seconds the run's lease (one writer per run) lives without renewal;
        a worker that died on another host loses it after this long (default 30).
    :param checkpoint_metadata: JSON-ready annotations added to the metadata of every
        checkpoint the run writes (the CLI records how to load the workflow again).
    :param journal: write the run's event journal (:class:`EventJournal`): when each
        invocation started and ended, its attempts, retries, timeouts and errors, saved
        with each superstep's checkpoint; what ``plait ui`` draws as a Gantt. Needs
        ``checkpoint`` on a store that keeps a journal. Off by default, and then free.
    """

    __repr__ = record_repr

    checkpoint: Any = attrs.field(default=None, validator=_store)
    durability: str = attrs.field(default="sync", validator=_mode)
    lease_ttl: float = attrs.field(default=30.0, validator=_positive_seconds)
    checkpoint_metadata: Mapping[str, Any] = attrs.field(factory=dict, validator=_metadata)
    journal: bool = attrs.field(default=False, validator=_flag)

    def __attrs_post_init__(self) -> None:
        if self.journal and self.checkpoint is None:
            raise RunOptionError(
                "run option journal=True needs checkpoint= (a store that keeps an event "
                "journal: the journal is saved with each superstep's checkpoint)"
            )
