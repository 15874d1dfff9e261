"""The same workflows give the same outputs with local placement, a loopback placement
(the kernel's round trip through the checkpoint codec, in this process) and Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plait_ray_flows as flows
import pytest
from plait import CustomEvent, RunStatus, Workflow
from plait_ray_testing import Loopback

pytestmark = pytest.mark.anyio


async def _outputs(wf: Workflow, message: Any, **options: Any) -> tuple[Any, ...]:
    result = await wf.run(message, events="all", **options)
    assert result.status is RunStatus.IDLE, result.error
    events = [e.data for e in result.events if isinstance(e, CustomEvent)]
    return result.outputs, events, result.shared


@pytest.mark.parametrize(
    ("name", "message"),
    [("chain", "hi"), ("fan", flows.Job(3)), ("loop", 1), ("nested", 5)],
)
async def test_same_outputs_as_local(name: str, message: Any, placement: str) -> None:
    build = getattr(flows, name)
    expected = await _outputs(build(None), message)
    assert await _outputs(build(placement), message) == expected
    assert expected[0]  # every workflow yields something


@pytest.mark.parametrize(
    ("name", "message"),
    [("chain", "hi"), ("fan", flows.Job(3)), ("loop", 1), ("nested", 5), ("stages", 6)],
)
async def test_the_pipelined_schedule_gives_the_same_outputs_placed(
    name: str, message: Any, placement: str
) -> None:
    # the runner stays on the driver and commits each placed invocation as it comes back
    build = getattr(flows, name)
    expected = await _outputs(build(None), message, run_id="same")
    got = await _outputs(build(placement), message, run_id="same", schedule="pipelined")
    assert got == expected and expected[0]


async def test_state_survives_between_supersteps(placement: str) -> None:
    result = await flows.loop(placement).run(2)
    assert result.outputs == [[2, 3, 4, 5]]


async def test_human_in_the_loop(placement: str, tmp_path: Path) -> None:
    async def converse(wf: Workflow, store: str) -> list[Any]:
        first = await wf.run("name", checkpoint=store)
        assert first.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        (request,) = first.pending_requests
        assert request.request == flows.Question("name?")
        done = await wf.resume(
            first.run_id, store, responses={request.request_id: flows.Answer("plait")}
        )
        assert done.status is RunStatus.IDLE
        return [o.replace(request.request_id, "<id>") for o in done.outputs]

    expected = await converse(flows.human(None), f"sqlite:///{tmp_path}/local.db")
    assert expected == ["name -> plait (<id>)"]
    assert await converse(flows.human(placement), f"sqlite:///{tmp_path}/placed.db") == expected


async def test_invocations_went_through_the_placement(loopback: Loopback) -> None:
    await flows.chain("loopback").run("x")
    assert loopback.calls == 3
