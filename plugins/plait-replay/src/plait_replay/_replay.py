"""A replay: the workflow run again with today's code against a recorded run, its
outside calls answered from the record with the network shut, then compared with the
record superstep by superstep up to the first difference (:func:`replay`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ._errors import ReplayError, ReplayMissError, ReplayNetworkError
from ._record import Recording, read_recording, recording_of
from ._recorder import Replaying

__all__ = ["Divergence", "ReplayReport", "replay"]

#: the parts of a superstep compared, in the order a difference is looked for
FIELDS = (
    "ran",
    "calls",
    "pending",
    "ids",
    "requests",
    "outputs",
    "shared",
    "executor_state",
    "router_state",
)


@attrs.frozen
class Divergence:
    """Where a replay first differs from its record.

    :param superstep: the superstep.
    :param executor: the executor it is about (``None``: the run as a whole).
    :param what: which part differs: one of :data:`FIELDS` (``ran``: which executors
        ran; ``calls``: the outside calls; ``pending``: the messages sent, by target;
        ``ids``: their delivery ids; ``requests``: requests for input; ``outputs``,
        ``shared``, ``executor_state``, ``router_state``), ``call`` (a call the record
        has no answer for), ``network`` (an attempt to reach it), ``failure`` (the
        replay failed where the record did not), ``status`` or ``supersteps``.
    :param path: the message path: ``from`` (the executors that sent it), ``edge`` (the
        edge groups it crossed), ``to``; empty when the difference is not a message's.
    :param recorded: the recorded value (JSON).
    :param replayed: the value now (JSON).
    :param diff: a JSON Patch (RFC 6902) from ``recorded`` to ``replayed``, or, for a
        call without a recorded answer, the unified diff of its request against the
        nearest recorded one.
    :param message: one line saying what differs.
    """

    superstep: int
    executor: str | None
    what: str
    message: str
    path: Mapping[str, Any] = attrs.field(factory=dict)
    recorded: Any = None
    replayed: Any = None
    diff: Any = None

    def headline(self) -> str:
        """``diverged at superstep 3, executor 'writer'``."""
        return f"diverged at superstep {self.superstep}" + (
            f", executor {self.executor!r}" if self.executor else ""
        )

    def details(self, indent: str) -> list[str]:
        """What differs, for a person: the message, the message's path, the diff (a JSON
        Patch from the recorded value to the one now, or a request's unified diff), each
        line starting with ``indent``."""
        lines = [f"{indent}{self.message}"]
        if self.path:
            lines.append(
                f"{indent}path: from {', '.join(self.path.get('from', [])) or '-'} "
                f"via {', '.join(self.path.get('edge', [])) or '-'} to "
                f"{self.path.get('to', '-')}"
            )
        if isinstance(self.diff, str):
            lines.extend(f"{indent}{line}" for line in self.diff.splitlines())
        elif self.diff is not None:
            lines.append(f"{indent}diff (JSON Patch, recorded -> now):")
            lines.extend(f"{indent}  {json.dumps(op, ensure_ascii=False)}" for op in self.diff)
        return lines


@attrs.frozen
class ReplayReport:
    """What a replay found.

    :param run_id: the recorded run.
    :param equal: the replay did what the record says, superstep by superstep.
    :param supersteps: how many supersteps were compared.
    :param divergence: the first difference (``None`` when equal).
    :param calls: how many outside calls the record answered.
    :param live: the executors whose calls went out for real.
    :param rerecorded: with ``live`` and a ``save_to`` store, the run id the replay was
        kept under there (a new record).
    """

    run_id: str
    equal: bool
    supersteps: int
    divergence: Divergence | None = None
    calls: int = 0
    live: tuple[str, ...] = ()
    rerecorded: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (``plait replay --format json``)."""
        return attrs.asdict(self)

    def text(self) -> str:
        """The report for a person to read."""
        if self.divergence is None:
            head = (
                f"replay of run {self.run_id}: equal to the record "
                f"({self.supersteps} supersteps, {self.calls} outside calls answered)"
            )
            return head + (f"; re-recorded as run {self.rerecorded}" if self.rerecorded else "")
        d = self.divergence
        lines = [f"replay of run {self.run_id}: {d.headline()}", *d.details("  ")]
        if self.rerecorded:
            lines.append(f"re-recorded as run {self.rerecorded}")
        return "\n".join(lines)


async def replay(
    workflow: Any,
    run_id: str,
    checkpoint: Any,
    *,
    live: Iterable[str] = (),
    stub: Iterable[str] = (),
    save_to: Any = None,
    schedule: str | None = None,
    checkpoint_metadata: Mapping[str, Any] | None = None,
) -> ReplayReport:
    """Replay run ``run_id`` of ``checkpoint`` (a store URL or object) with ``workflow``
    — today's code — and compare it with the record.

    The run starts from the recorded input with the recorded run id, in a store of its
    own (the recorded run is never changed); every outside call is answered from the
    record and the network is shut (:mod:`plait_replay._guard`), but for the executors in
    ``live``, whose calls go out for real. What the record says never chooses what runs:
    the workflow is the one passed, and recorded values only answer calls.

    :param live: executor ids whose calls go out for real (re-recording them).
    :param stub: executor ids whose code does not run: each sends the messages and yields
        the outputs the record holds for it (:mod:`plait_replay._stub`), to replay a
        slice of the workflow.
    :param save_to: with ``live``, a store (URL or object) to keep the replay in as a new
        recorded run (the report's ``rerecorded``); ``None`` keeps nothing.
    :param schedule: the schedule to run on (default: the workflow's).
    :param checkpoint_metadata: kept with the re-recorded run's checkpoints.
    :raises ReplayError: the run is not in the store, or was not recorded, or its record
        does not hold its input.
    :raises UnknownNameError: ``live`` names an executor the workflow does not have.
    """
    live_ids, stub_ids = frozenset(live), tuple(dict.fromkeys(stub))
    for flag, names in (("--live", live_ids), ("--stub", stub_ids)):
        unknown = sorted(set(names) - set(workflow.executors))
        if unknown:
            from plait import UnknownNameError

            raise UnknownNameError(
                f"{flag} names executor(s) {', '.join(map(repr, unknown))} that the workflow "
                f"does not have; it has {', '.join(map(repr, workflow.executors))}"
            )
    recording = await read_recording(checkpoint, run_id)
    if stub_ids:
        from ._stub import stubbed

        workflow = stubbed(workflow, stub_ids, recording)
    if recording.input is None:
        raise ReplayError(
            f"the record of run {run_id!r} does not hold the run's input (it was recorded "
            "from a resume, or its input is not JSON): it cannot be replayed from its start"
        )
    from ._guard import network_guard
    from ._scratch import ScratchStore

    replaying = Replaying(recording, live_ids)
    scratch = ScratchStore(f"memory://plait-replay-{uuid.uuid4().hex}")
    options: dict[str, Any] = {
        "run_id": recording.metadata.get("replay_of", run_id)
        if isinstance(recording.metadata.get("replay_of"), str)
        else run_id,
        "checkpoint": scratch,
        "record": True,
        "replay_with": replaying,
        "raise_on_failure": False,
        "max_supersteps": max([*recording.states, 0]) + 1,
    }
    if schedule is not None:
        options["schedule"] = schedule
    with network_guard(replaying):
        result = await workflow.run(recording.input[0], **options)
        result = await _answered(workflow, recording, scratch, options, result)
    replayed = recording_of(options["run_id"], scratch.read_back(), strict=False)
    report = compare(recording, replayed, replaying, result, workflow, frozenset(stub_ids))
    rerecorded = None
    if live_ids and save_to is not None:
        from ._copy import copy_run

        rerecorded = uuid.uuid4().hex
        metadata = {**(checkpoint_metadata or {}), "replay_of": options["run_id"]}
        await copy_run(scratch, options["run_id"], save_to, rerecorded, metadata)
    await scratch.delete_run(options["run_id"])
    await scratch.aclose()
    return attrs.evolve(
        report,
        calls=sum(1 for c in replayed.calls.values() if c["executor"] not in live_ids),
        live=tuple(sorted(live_ids)),
        rerecorded=rerecorded,
    )


async def _answered(
    workflow: Any,
    recording: Recording,
    scratch: Any,
    options: Mapping[str, Any],
    result: Any,
) -> Any:
    """Go on as the record did after each stop for input: while the replay waits for
    requests and the record holds the answers a resume gave in the next superstep, resume
    the replay with them (the request of the same executor, in order, or of the same id)
    — the result of the last resume, or ``result`` when there was none."""
    from plait import RunStatus

    while result.status is RunStatus.IDLE_WITH_PENDING_REQUESTS:
        run_id = options["run_id"]
        latest = await scratch.latest(run_id)
        step = (latest.superstep if latest else 0) + 1
        responses = await recorded_responses(workflow, recording, scratch, run_id, step)
        if not responses:
            break
        again = {k: v for k, v in options.items() if k not in ("run_id", "checkpoint")}
        result = await workflow.resume(run_id, scratch, responses=responses, **again)
    return result


async def recorded_responses(
    workflow: Any,
    recording: Recording,
    store: Any,
    run_id: str,
    superstep: int,
    *,
    accept_changes: bool = False,
) -> dict[str, Any]:
    """The answers the record says a resume gave in ``superstep`` to the requests run
    ``run_id`` of ``store`` waits for, by request id: to the request of the same executor,
    in order, or of the same id; empty when the record holds none there."""
    given = recording.answers.get(superstep)
    if not given:
        return {}
    pending = list(await workflow.pending_requests(run_id, store, accept_changes=accept_changes))
    responses: dict[str, Any] = {}
    for answer in given:
        same = [
            p
            for p in pending
            if p.executor_id == answer["executor"]
            and answer.get("request_id", p.request_id) == p.request_id
        ]
        if same:
            responses[same[0].request_id] = answer["value"]
            pending.remove(same[0])
    return responses


def compare(
    recording: Recording,
    replayed: Recording,
    replaying: Replaying,
    result: Any,
    workflow: Any,
    stubs: frozenset[str] = frozenset(),
) -> ReplayReport:
    """Compare the replay (``replayed``, the ``result`` of its run) with the record,
    superstep by superstep; the first difference is the report's divergence. The calls
    of ``stubs`` (executors whose code did not run) are not compared."""
    senders = _senders(workflow)
    calls = (_calls_by_step(recording, stubs), _calls_by_step(replayed, stubs))
    steps = sorted(set(recording.states) | set(replayed.states) | set(recording.ran))
    compared = 0
    # a pipelined run is checkpointed at cuts, which timing places: a superstep one of the
    # two runs has no checkpoint of is passed over, up to where the shorter run stops
    last_common = min(max(recording.states, default=0), max(replayed.states, default=0))
    for step in steps:
        for miss in [*replaying.network, *replaying.misses]:
            if _step_of(miss) == step:
                return _report(recording, compared, _failed_call(miss))
        before, now = recording.states.get(step), replayed.states.get(step)
        if before is None or now is None:
            if step > last_common:
                break  # the one that stops short is told below
            continue
        compared = step
        found = _first_difference(step, recording, replayed, before, now, senders, calls)
        if found is not None:
            return _report(recording, compared, found)
    for failed in [*replaying.network, *replaying.misses]:
        return _report(recording, compared, _failed_call(failed))
    error = getattr(result, "error", None)
    if error is not None and recording.status != "failed":
        step = getattr(error, "superstep", None) or compared + 1
        return _report(
            recording,
            compared,
            Divergence(
                superstep=step,
                executor=getattr(error, "executor_id", None),
                what="failure",
                message=f"the replay failed where the record did not: {error}",
                recorded=recording.status,
                replayed="failed",
            ),
        )
    last_before = max(recording.states, default=0)
    last_now = max(replayed.states, default=0)
    if last_before != last_now:
        return _report(
            recording,
            compared,
            Divergence(
                superstep=min(last_before, last_now) + 1,
                executor=None,
                what="supersteps",
                message=f"the record ran {last_before} supersteps, the replay {last_now}",
                recorded=last_before,
                replayed=last_now,
            ),
        )
    if recording.status != replayed.status:
        return _report(
            recording,
            compared,
            Divergence(
                superstep=last_now,
                executor=None,
                what="status",
                message=f"the record ended {recording.status}, the replay {replayed.status}",
                recorded=recording.status,
                replayed=replayed.status,
            ),
        )
    return ReplayReport(run_id=recording.run_id, equal=True, supersteps=compared)


def _report(recording: Recording, compared: int, divergence: Divergence) -> ReplayReport:
    return ReplayReport(
        run_id=recording.run_id, equal=False, supersteps=compared, divergence=divergence
    )


def _step_of(error: BaseException) -> int | None:
    return getattr(error, "superstep", None)


def _failed_call(error: BaseException) -> Divergence:
    if isinstance(error, ReplayMissError):
        return Divergence(
            superstep=error.superstep,
            executor=error.executor_id,
            what="call",
            message=f"a {error.kind} call the record has no answer for (its request "
            "against the nearest recorded one below)",
            diff=error.diff,
        )
    assert isinstance(error, ReplayNetworkError)
    return Divergence(
        superstep=0,
        executor=error.executor_id,
        what="network",
        message=str(error),
        replayed=error.address,
    )


def _senders(workflow: Any) -> dict[str, list[tuple[str, str]]]:
    """target -> the (source, edge group) pairs that may deliver to it."""
    out: dict[str, list[tuple[str, str]]] = {}
    for group in workflow.spec.edge_groups:
        for target in group.targets:
            out.setdefault(target, []).extend((source, group.id) for source in group.sources)
    return out


def _calls_by_step(
    recording: Recording, leave_out: frozenset[str]
) -> dict[int, dict[str, list[Any]]]:
    """superstep -> executor -> its calls (kind, count, request key, answer), in order;
    the executors in ``leave_out`` left out."""
    out: dict[int, dict[str, list[Any]]] = {}
    for (superstep, executor, index, kind, seq), call in sorted(recording.calls.items()):
        if executor in leave_out:
            continue
        out.setdefault(superstep, {}).setdefault(executor, []).append(
            {"index": index, "kind": kind, "seq": seq, "key": call["key"],
             "response": call["response"]}
        )  # fmt: skip
    return out


def _requests(state: Mapping[str, Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for request in state.get("requests") or []:
        out.setdefault(request["executor_id"], []).append(request)
    return out


def _first_difference(
    step: int,
    recording: Recording,
    replayed: Recording,
    before: Mapping[str, Any],
    now: Mapping[str, Any],
    senders: Mapping[str, list[tuple[str, str]]],
    calls: tuple[Mapping[int, Any], Mapping[int, Any]],
) -> Divergence | None:
    ran_before = recording.ran.get(step, [])
    ran_now = replayed.ran.get(step, [])
    parts: dict[str, tuple[Any, Any]] = {
        "ran": ({"executors": ran_before}, {"executors": ran_now}),
        "calls": (calls[0].get(step, {}), calls[1].get(step, {})),
        "pending": (before.get("pending") or {}, now.get("pending") or {}),
        "ids": (before.get("ids") or {}, now.get("ids") or {}),
        "requests": (_requests(before), _requests(now)),
        "outputs": ({"outputs": before.get("outputs")}, {"outputs": now.get("outputs")}),
        "shared": ({"shared": before.get("shared")}, {"shared": now.get("shared")}),
        "executor_state": (before.get("executor_state") or {}, now.get("executor_state") or {}),
        "router_state": (before.get("router_state") or {}, now.get("router_state") or {}),
    }
    for what in FIELDS:
        old, new = parts[what]
        if old == new:
            continue
        for key in _keys(old, new):
            if old.get(key) == new.get(key):
                continue
            import jsonpatch

            patch = jsonpatch.make_patch({"value": old.get(key)}, {"value": new.get(key)}).patch
            executor, path = _who(what, key, ran_now or ran_before, senders, patch)
            return Divergence(
                superstep=step,
                executor=executor,
                what=what,
                message=_describe(what, key),
                path=path,
                recorded=old.get(key),
                replayed=new.get(key),
                diff=patch,
            )
    return None


def _keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys of both, in the record's order, then the new ones'."""
    return [*old, *(k for k in new if k not in old)]


def _who(
    what: str,
    key: str,
    ran: Sequence[str],
    senders: Mapping[str, list[tuple[str, str]]],
    patch: Sequence[Mapping[str, Any]],
) -> tuple[str | None, dict[str, Any]]:
    """The executor a difference in ``what`` at ``key`` is about, and the message path:
    for a message several executors may have sent (a fan-in's merged list, one item per
    source in the order the edge group names them), the source whose item differs."""
    if what in ("pending", "ids"):
        pairs = [(s, g) for s, g in senders.get(key, []) if s in ran]
        if len(pairs) > 1 and what == "pending" and patch:
            # "/value/<message>/<item>": a merged message's item is its source's
            parts = str(patch[0].get("path", "")).split("/")
            if len(parts) > 3 and parts[3].isdigit():
                group = pairs[0][1]
                sources = [s for s, g in senders.get(key, []) if g == group]
                item = int(parts[3])
                if all(g == group for _, g in pairs) and item < len(sources):
                    pairs = [(sources[item], group)]
        sources = sorted({s for s, _ in pairs})
        path = {"from": sources, "edge": sorted({g for _, g in pairs}), "to": key}
        return (sources[0] if len(sources) == 1 else None), path
    if what in ("calls", "requests", "executor_state"):
        return key, {}
    if len(ran) == 1:
        return ran[0], {}
    return None, {}


def _describe(what: str, key: str) -> str:
    return {
        "ran": "other executors ran",
        "calls": f"executor {key!r} made other outside calls",
        "pending": f"the messages sent to {key!r} differ",
        "ids": f"the delivery ids of the messages to {key!r} differ",
        "requests": f"executor {key!r} asked for other input",
        "outputs": "the workflow's outputs differ",
        "shared": "the shared state differs",
        "executor_state": f"the state of executor {key!r} differs",
        "router_state": f"the state of edge group {key!r} differs",
    }[what]
