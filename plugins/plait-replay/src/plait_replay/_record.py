"""A recorded run read back from its store: its checkpoints' states by superstep and
what its recorder kept (:class:`Recording`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ._errors import ReplayError

__all__ = ["SECTION", "Recording", "read_recording", "recording_of"]

#: the name of the recorder's part of a checkpoint's ``observed`` section
SECTION = "replay"

#: (superstep, executor, message index, kind, count): where a call was made
Site = tuple[int, str, int, str, int]


@attrs.frozen
class Recording:
    """A recorded run, as its checkpoints hold it.

    :param run_id: the run.
    :param states: superstep -> the run's state after it (the checkpoint's state, its
        blobs read back; the last checkpoint of that superstep that did not fail).
    :param status: the status of the run's last checkpoint.
    :param calls: every outside call the record answers, by where it was made.
    :param by_key: the same calls by ``(kind, request key)``.
    :param ran: superstep -> the executors that ran in it, in the runner's order.
    :param input: ``[message]``, the run's input, or ``None`` when the record does not
        hold it (a run recorded from a resume).
    :param metadata: the first checkpoint's metadata (what ``plait run`` recorded of how
        the workflow was loaded: shown, never loaded from).
    :param error: the error of a run that failed, as its checkpoint holds it.
    :param answers: superstep -> what a resume delivered there from no sender (the
        answers to the run's requests: executor, index, value, and ``request_id`` for an
        executor that takes ``RequestResponse``), in order.
    """

    run_id: str
    states: Mapping[int, Mapping[str, Any]]
    status: str
    calls: Mapping[Site, Mapping[str, Any]]
    by_key: Mapping[tuple[str, str], list[Mapping[str, Any]]]
    ran: Mapping[int, list[str]]
    input: list[Any] | None
    metadata: Mapping[str, Any]
    error: Any = None
    answers: Mapping[int, list[Mapping[str, Any]]] = attrs.field(factory=dict)


def _check_call(entry: Any, where: str) -> Mapping[str, Any]:
    """One recorded call, checked: a record is read from a store, so untrusted."""
    fields = {
        "superstep": int,
        "executor": str,
        "index": int,
        "kind": str,
        "seq": int,
        "key": str,
    }
    if not isinstance(entry, dict):
        raise ReplayError(f"{where}: a recorded call is {type(entry).__name__}, expected object")
    for name, kind in fields.items():
        if not isinstance(entry.get(name), kind) or isinstance(entry.get(name), bool):
            raise ReplayError(
                f"{where}: recorded call field {name!r} is {entry.get(name)!r}, "
                f"expected {kind.__name__}"
            )
    if "request" not in entry or "response" not in entry:
        raise ReplayError(f"{where}: a recorded call has no request or response")
    return entry


def _check_answer(entry: Any, where: str) -> Mapping[str, Any]:
    """One recorded answer, checked (untrusted, as a recorded call is)."""
    if not isinstance(entry, dict) or "value" not in entry:
        raise ReplayError(f"{where}: a recorded answer is not an object with a value")
    for name, kind in (("superstep", int), ("executor", str), ("index", int)):
        if not isinstance(entry.get(name), kind) or isinstance(entry.get(name), bool):
            raise ReplayError(
                f"{where}: recorded answer field {name!r} is {entry.get(name)!r}, "
                f"expected {kind.__name__}"
            )
    if not isinstance(entry.get("request_id", ""), str):
        raise ReplayError(f"{where}: a recorded answer's request_id is not a string")
    return entry


async def read_recording(store: Any, run_id: str, *, strict: bool = True) -> Recording:
    """Read run ``run_id`` from ``store`` (a URL or a store object) with its record.

    :param strict: refuse a run that is missing or was not recorded (else: what there
        is, perhaps nothing: a replay that failed before its first checkpoint).
    :raises ReplayError: the store holds no run ``run_id``, or the run was not recorded
        (``record=True``), or its record is malformed (naming the checkpoint).
    """
    from plait_durable import has_blobs, opened_store, resolve_state

    async with opened_store(store) as opened:
        infos = await opened.list(run_id)
        if not infos and strict:
            raise ReplayError(
                f"the store {store if isinstance(store, str) else type(store).__name__} "
                f"holds no run {run_id!r} (plait runs lists the runs it holds)"
            )
        # every blob of the run in one read: each checkpoint's state is then rebuilt from
        # them (verified against its hash) with no further round trip
        read: Mapping[str, bytes] = {}
        if infos and has_blobs(opened):
            keeping: Any = opened  # a BlobStore too
            read = await keeping.get_blobs(run_id, list(await keeping.blob_hashes(run_id)))
        read_back = []
        for info in infos:
            checkpoint = await opened.load(info.checkpoint_id)
            where = f"run {run_id!r}, checkpoint {info.checkpoint_id!r}"
            state = await resolve_state(
                dict(checkpoint.state), store=opened, run_id=run_id, where=where, read=read
            )
            read_back.append((checkpoint, state))
    return recording_of(run_id, read_back, strict=strict)


def recording_of(
    run_id: str, checkpoints: Sequence[tuple[Any, Mapping[str, Any]]], *, strict: bool = True
) -> Recording:
    """The :class:`Recording` of run ``run_id`` from its checkpoints, oldest first, each
    with its state (its blobs read back).

    :raises ReplayError: as :func:`read_recording`.
    """
    states: dict[int, Mapping[str, Any]] = {}
    calls: dict[Site, Mapping[str, Any]] = {}
    by_key: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    ran: dict[int, list[str]] = {}
    answers: dict[int, list[Mapping[str, Any]]] = {}
    recorded_input: list[Any] | None = None
    recorded = False
    metadata: Mapping[str, Any] = {}
    status, error = "running", None
    failed: dict[int, Mapping[str, Any]] = {}
    for checkpoint, state in checkpoints:
        where = f"run {run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
        if not metadata:
            metadata = dict(checkpoint.metadata)
        status = checkpoint.status
        if checkpoint.status == "failed":
            failed[checkpoint.superstep] = state
            error = checkpoint.metadata.get("error")
        else:
            states[checkpoint.superstep] = state
        observed = state.get("observed")
        section = observed.get(SECTION) if isinstance(observed, dict) else None
        if section is None:
            continue
        recorded = True
        if not isinstance(section, dict):
            raise ReplayError(f"{where}: its record is {type(section).__name__}")
        if isinstance(section.get("input"), list) and len(section["input"]) == 1:
            recorded_input = section["input"]
        for step, executors in (section.get("ran") or {}).items():
            ran[int(step)] = [str(e) for e in executors]
        for entry in section.get("answers") or []:
            answer = _check_answer(entry, where)
            answers.setdefault(answer["superstep"], []).append(answer)
        for entry in section.get("calls") or []:
            call = _check_call(entry, where)
            site = (call["superstep"], call["executor"], call["index"], call["kind"], call["seq"])
            calls[site] = call
            if call["key"]:
                by_key.setdefault((call["kind"], call["key"]), []).append(call)
    for step, state in failed.items():
        states.setdefault(step, state)
    if not recorded and strict:
        raise ReplayError(
            f"run {run_id!r} was not recorded: run it with record=True "
            "(plait run --record) to replay it"
        )
    return Recording(
        run_id=run_id,
        states=states,
        status=status,
        calls=calls,
        by_key=by_key,
        ran=ran,
        input=recorded_input,
        metadata=metadata,
        error=error,
        answers=answers,
    )
