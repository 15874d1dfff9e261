"""``--stub NODE``: an executor whose code a replay does not run: each superstep the
record has it running in, it sends the messages and yields the outputs the record holds
(read from the checkpoints), to replay a slice of a workflow around it.

What an executor sent is read from the checkpoint of the superstep it ran in, so a stub
needs to be the only sender of its messages there: a target that another executor of
the same superstep also sends to, or that collects its messages in a fan-in, is refused
with an error naming both."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from plait import Executor, Workflow, WorkflowContext
from plait.spi import Handler

from ._errors import ReplayError
from ._record import Recording

__all__ = ["stubbed"]


class _Stub(Executor):
    """Stands in for ``original``: the same handlers (so the edges check as before), each
    sending what the record says ``original`` sent in the superstep it runs in."""

    def __init__(self, original: Executor, effects: Mapping[int, tuple[Any, Any]]) -> None:
        self.original = original
        self.effects = effects
        self.done: set[int] = set()
        super().__init__(original.id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        return tuple(
            Handler(
                f"stub:{h.name}",
                h.input_type,
                h.output_types,
                h.workflow_output_types,
                self._replay,
                h.decidable,
            )
            for h in self.original.declare_handlers()
        )

    async def _replay(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        from plait_durable import decode_value

        step = ctx.superstep
        if step in self.done:
            return  # its superstep's messages went with its first delivery
        if step not in self.effects:
            raise ReplayError(
                f"stubbed executor {self.id!r} runs in superstep {step}, where the record "
                "has it not running: its messages there are not in the record"
            )
        self.done.add(step)
        sends, outputs = self.effects[step]
        for target, messages in sends:
            for data in messages:
                await ctx.send_message(decode_value(data), target=target)
        for data in outputs:
            await ctx.yield_output(decode_value(data))


def _effects(
    eid: str, recording: Recording, workflow: Workflow
) -> dict[int, tuple[list[tuple[str, list[Any]]], list[Any]]]:
    """superstep -> (the messages ``eid`` sent, by target; the outputs it yielded)."""
    groups = [g for g in workflow.spec.edge_groups if eid in g.sources]
    effects: dict[int, tuple[list[tuple[str, list[Any]]], list[Any]]] = {}
    for step, ran in sorted(recording.ran.items()):
        if eid not in ran or step not in recording.states:
            continue
        state = recording.states[step]
        pending = state.get("pending") or {}
        sends: list[tuple[str, list[Any]]] = []
        for group in groups:
            for target in group.targets:
                others = sorted(
                    src
                    for g in workflow.spec.edge_groups
                    if target in g.targets
                    for src in g.sources
                    if src != eid and src in ran
                )
                if others or group.router == "fan_in":
                    why = (
                        f"{', '.join(map(repr, others))} also sent to it there"
                        if others
                        else f"edge group {group.id!r} collects its messages (a fan-in)"
                    )
                    raise ReplayError(
                        f"--stub {eid}: its messages to {target!r} in superstep {step} cannot "
                        f"be told apart in the record: {why}"
                    )
                if pending.get(target):
                    sends.append((target, list(pending[target])))
        before = recording.states.get(step - 1, {}).get("outputs") or []
        outputs = list((state.get("outputs") or [])[len(before) :])
        if outputs and len(ran) > 1:
            raise ReplayError(
                f"--stub {eid}: the outputs of superstep {step} cannot be told apart in the "
                f"record: {', '.join(map(repr, sorted(set(ran) - {eid})))} ran there too"
            )
        effects[step] = (sends, outputs)
    return effects


def stubbed(workflow: Workflow, stubs: Sequence[str], recording: Recording) -> Workflow:
    """``workflow`` with the executors ``stubs`` replaced by what ``recording`` says they
    did (see the module).

    :raises ReplayError: a stub's messages or outputs cannot be told apart in the record.
    """
    executors = dict(workflow.executors)
    for eid in stubs:
        executors[eid] = _Stub(executors[eid], _effects(eid, recording, workflow))
    return Workflow(workflow.spec, executors, edge_params=workflow.edge_params)
