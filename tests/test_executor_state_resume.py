"""An executor that overrides ``snapshot_state``/``restore_state`` keeps a state no
checkpoint could hold as it is (an object of its own class): its snapshot goes into the
checkpoint, and a run resumed in a new process gets the state back through
``restore_state``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

APP = textwrap.dedent(
    """
    from __future__ import annotations

    import json
    import sys
    from typing import Any

    import anyio
    from plait import Executor, Never, WorkflowContext, handler
    from plait_builders import WorkflowBuilder


    class Bag:
        '''A plain class: no checkpoint codec knows it.'''

        def __init__(self, words: Any = ()) -> None:
            self.words = set(words)


    class Tally(Executor):
        '''Collects the words it is given in a Bag, asks whether to go on, then yields them.'''

        @handler
        async def words(self, text: str, ctx: WorkflowContext[Never, list[str]]) -> None:
            ctx.state.setdefault("bag", Bag()).words.update(text.split())
            await ctx.request_info("done?", int)

        @handler
        async def answered(self, extra: int, ctx: WorkflowContext[Never, list[str]]) -> None:
            bag = ctx.state["bag"]
            restores = str(ctx.state["restores"])
            await ctx.yield_output([type(bag).__name__, *sorted(bag.words), str(extra), restores])

        def snapshot_state(self, state: dict[str, Any]) -> Any:
            return {"bag": sorted(state["bag"].words), "restores": state.get("restores", 0)}

        def restore_state(self, snapshot: Any) -> dict[str, Any]:
            return {"bag": Bag(snapshot["bag"]), "restores": snapshot["restores"] + 1}


    workflow = WorkflowBuilder("tally").add_executor(Tally("tally")).set_start("tally").build()


    async def main(step: str, store: str, *rest: str) -> None:
        if step == "run":
            result = await workflow.run("b a b c", checkpoint=store)
            (request,) = result.pending_requests
            print(json.dumps([result.run_id, request.request_id, result.status.value]))
        else:
            run_id, request_id = rest
            result = await workflow.resume(run_id, store, responses={request_id: 7})
            print(json.dumps([result.status.value, result.outputs]))


    anyio.run(main, *sys.argv[1:])
    """
)


def _python(tmp_path: Path, *args: str) -> list[object]:
    done = subprocess.run(
        [sys.executable, str(tmp_path / "tally_app.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("scheme", ["sqlite", "file"])
def test_an_executors_own_snapshot_resumes_in_a_new_process(tmp_path: Path, scheme: str) -> None:
    (tmp_path / "tally_app.py").write_text(APP)
    store = (
        f"sqlite:///{tmp_path / 'runs.db'}" if scheme == "sqlite" else f"file://{tmp_path / 'runs'}"
    )
    run_id, request_id, status = _python(tmp_path, "run", store)
    assert status == "idle_with_pending_requests"
    # the checkpoint holds the snapshot (a sorted list); restore_state ran once, here
    resumed_status, outputs = _python(tmp_path, "resume", store, str(run_id), str(request_id))
    assert resumed_status == "idle"
    assert outputs == [["Bag", "a", "b", "c", "7", "1"]]


def test_without_the_override_the_state_cannot_be_checkpointed(tmp_path: Path) -> None:
    """The reason to override: the default snapshot is the state itself, which a
    checkpoint cannot hold; the run fails naming the executor, before anything is lost."""
    app = APP.replace("    def snapshot_state", "    def _unused_snapshot_state")
    app = app.replace("    def restore_state", "    def _unused_restore_state")
    (tmp_path / "tally_app.py").write_text(app)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "tally_app.py"), "run", f"sqlite:///{tmp_path / 'r.db'}"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode != 0
    assert "CheckpointEncodeError" in done.stderr and "'tally'" in done.stderr
