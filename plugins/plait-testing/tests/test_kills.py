"""plait_testing.kills: the kill -9 harness, on a run of a real workflow in a subprocess."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest
from plait_testing.kills import finish, kill, latest_superstep, spawn, wait_until

#: a chain of six steps; with HOLD set, step HOLD holds (plait_testing.kills.hold)
SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    import anyio
    from plait import WorkflowContext, executor
    from plait_builders import WorkflowBuilder
    from plait_testing.kills import hold


    def step(i):
        @executor(id=f"s{i}")
        async def run(n: int, ctx: WorkflowContext[int, int]) -> None:
            if os.environ.get("HOLD") == str(i):
                await hold(Path(os.environ["MARKER"]))
            if i == 5:
                await ctx.yield_output(n + i)
            else:
                await ctx.send_message(n + i)
        return run


    async def main(mode, url, run_id):
        steps = [step(i) for i in range(6)]
        builder = WorkflowBuilder("chain").set_start(steps[0])
        for a, b in zip(steps, steps[1:]):
            builder.add_edge(a, b)
        workflow = builder.build()
        if mode == "run":
            result = await workflow.run(0, checkpoint=url, run_id=run_id)
        else:
            result = await workflow.resume(run_id, url)
        print(json.dumps(result.outputs))


    anyio.run(main, *sys.argv[1:4])
    """
)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "chain.py"
    path.write_text(SCRIPT)
    return path


def test_a_held_victim_is_killed_there_and_a_new_process_resumes_it(
    script: Path, tmp_path: Path
) -> None:
    url, run_id = f"sqlite:///{tmp_path / 'runs.db'}", f"chain-{uuid.uuid4().hex}"
    assert latest_superstep(url, run_id) == -1
    marker = tmp_path / "held"
    victim = spawn(script, "run", url, run_id, env={"HOLD": "3", "MARKER": str(marker)})
    wait_until(marker.exists, "the hold", process=victim)
    # step i runs in superstep i + 1: held in step 3, the last checkpoint is superstep 3's
    wait_until(lambda: latest_superstep(url, run_id) >= 3, "superstep 3", process=victim)
    kill(victim)
    assert latest_superstep(url, run_id) == 3  # step 3 (superstep 4) never finished
    assert json.loads(finish(spawn(script, "resume", url, run_id))) == [15]


def test_the_harness_fails_naming_what_went_wrong(script: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    done = spawn(script, "run", url, f"quick-{uuid.uuid4().hex}")
    with pytest.raises(AssertionError, match="before the marker"):
        wait_until((tmp_path / "marker").exists, "the marker", process=done)
    with pytest.raises(AssertionError, match="ended with 0 before the kill"):
        kill(done)  # it had finished: the kill proves nothing
    failing = spawn(script, "resume", url, "no-such-run")
    with pytest.raises(AssertionError, match="exited with 1"):
        finish(failing)
    with pytest.raises(AssertionError, match="not in 0.05 s: never"):
        wait_until(lambda: False, "never", timeout=0.05)
