"""One superstep of a recorded run, replayed from a checkpoint the caller gives: the
checkpoint goes into a scratch store of this process, the workflow runs the superstep
after it with every outside call answered from the record (the network shut, as in a
:func:`~plait_replay.replay`), and what that superstep left is compared with what the
caller expects, part by part as a replay compares a superstep (:func:`replay_superstep`).

``plait compat --dry-run`` (plait-versions) gives it a stored run's checkpoint migrated
to the new version, and expects the record's next state migrated the same way: a
migration and today's code that keep the run's behaviour match.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from ._record import Recording, recording_of
from ._recorder import Replaying
from ._replay import (
    Divergence,
    ReplayReport,
    _calls_by_step,
    _failed_call,
    _first_difference,
    _senders,
    recorded_responses,
)

__all__ = ["replay_superstep"]


async def replay_superstep(
    workflow: Any,
    recording: Recording,
    start: Any,
    expected: Mapping[str, Any],
    *,
    accept_changes: bool = False,
) -> ReplayReport:
    """Run the superstep after checkpoint ``start`` of recorded run ``recording`` with
    ``workflow`` and compare what it leaves with ``expected``.

    Nothing is written where the run is stored: ``start`` is saved in a store of this
    process's memory, resumed there for one superstep (with the answers the record says
    a resume gave then, when the run waited for some) and dropped. Every outside call is
    answered from ``recording`` and the network is shut; a call the record has no answer
    for, a network attempt or a failure of the superstep is the report's divergence.

    :param start: a :class:`plait_durable.Checkpoint` of the run whose state is whole and
        holds its values inline (:func:`plait_durable.checkpoint_view`'s state); its
        superstep is the one before the superstep replayed.
    :param expected: the run's full state after that superstep (the record's checkpoint
        there, or what the caller makes of it): its messages, requests, outputs, shared,
        executor and edge group state are compared, with the record's outside calls and
        the executors it ran in that superstep.
    :param accept_changes: resume ``start`` though ``workflow`` is not the one it records
        (``plait resume --accept-changes``).
    :return: ``equal`` when nothing differs (``supersteps`` 1), else the first
        difference.
    """
    from ._guard import network_guard
    from ._scratch import ScratchStore

    run_id = recording.run_id
    step = start.superstep + 1
    replaying = Replaying(recording)
    scratch = ScratchStore(f"memory://plait-replay-{uuid.uuid4().hex}")
    ended = threading.Event()
    ended.set()  # asked after each superstep: the run stops after its first
    try:
        # the record of earlier supersteps is the recording's, not the replay's
        state = {k: v for k, v in start.state.items() if k != "observed"}
        await scratch.save(attrs.evolve(start, state=state, base_id=None))
        with network_guard(replaying):
            responses = await recorded_responses(
                workflow, recording, scratch, run_id, step, accept_changes=accept_changes
            )
            result = await workflow.resume(
                run_id,
                scratch,
                responses=responses,
                accept_changes=accept_changes,
                record=True,
                replay_with=replaying,
                raise_on_failure=False,
                stop=ended,
                max_supersteps=step,
            )
        replayed = recording_of(run_id, scratch.read_back(), strict=False)
    finally:
        await scratch.delete_run(run_id)
        await scratch.aclose()
    divergence = _difference(step, recording, replayed, expected, replaying, result, workflow)
    calls = sum(1 for site in replayed.calls if site[0] == step)
    return ReplayReport(
        run_id=run_id, equal=divergence is None, supersteps=1, divergence=divergence, calls=calls
    )


def _difference(
    step: int,
    recording: Recording,
    replayed: Recording,
    expected: Mapping[str, Any],
    replaying: Replaying,
    result: Any,
    workflow: Any,
) -> Divergence | None:
    """The first difference of superstep ``step`` replayed from what was expected."""
    for failed in [*replaying.network, *replaying.misses]:
        return _failed_call(failed)
    error = getattr(result, "error", None)
    if error is not None:
        return Divergence(
            superstep=getattr(error, "superstep", None) or step,
            executor=getattr(error, "executor_id", None),
            what="failure",
            message=f"the superstep failed where the record did not: {error}",
            recorded=recording.status,
            replayed="failed",
        )
    now = replayed.states.get(step)
    if now is None:
        return Divergence(
            superstep=step,
            executor=None,
            what="supersteps",
            message=f"superstep {step} did not run: nothing was pending after the checkpoint "
            "it starts from, and the record's answers fit none of the requests it waits for",
            recorded=step,
            replayed=step - 1,
        )
    calls = (_calls_by_step(recording, frozenset()), _calls_by_step(replayed, frozenset()))
    return _first_difference(step, recording, replayed, expected, now, _senders(workflow), calls)
