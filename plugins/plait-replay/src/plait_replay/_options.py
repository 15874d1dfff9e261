"""The run options plait-replay declares (``plait_register_run_options``)."""

from __future__ import annotations

from typing import Any

import attrs
from plait import RunOptionError

__all__ = ["ReplayOptions"]


def _flag(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise RunOptionError(
            f"run option {attribute.name} must be True or False, got "
            f"{type(value).__name__} {value!r}"
        )


def _replaying(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    from ._recorder import Replaying

    if not isinstance(value, Replaying):
        raise RunOptionError(
            f"run option replay_with is set by plait_replay.replay() (a Replaying), got "
            f"{type(value).__name__} {value!r}; to replay a run call plait_replay.replay() "
            "or type plait replay"
        )


@attrs.frozen(kw_only=True)
class ReplayOptions:
    """Recording and replaying a run.

    :param record: keep every call the run makes outside the process (model calls,
        ``http`` and ``shell`` steps, ``ctx.now()``, ``ctx.random()``) beside its
        checkpoints, so :func:`plait_replay.replay` can run it again offline. A durable
        run's option: without ``checkpoint`` nothing is kept.
    :param replay_with: what answers the run's outside calls from a record (set by
        :func:`plait_replay.replay`, never by hand).
    """

    record: bool = attrs.field(default=False, validator=_flag)
    replay_with: Any = attrs.field(default=None, validator=_replaying)
