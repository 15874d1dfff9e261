"""A script run the README's way (``bash .ci/uv run --locked python app.py``) can use the
``ray`` placement.

Ray's own ``uv run`` integration would start every worker of the local cluster plait-ray
starts in a new environment built from the working directory, where the workspace's members
build and the worker then fails with ``No module named 'ray'``. plait-ray turns that
integration off for the process before Ray is imported, so the workers run on the driver's
interpreter. This test runs a script through uv exactly as a user would, with no cluster
to join, and checks the workflow's outputs and that the workers ran on this interpreter.

An executor defined in the script itself (its ``__main__``) is placed too: a spec names
it by the module the script would be imported as, which the workers import. It also checks
the local cluster outlives the run that started it (its processes died with
the worker thread that started them, so the next call into Ray hung for a minute on a GCS
that was gone), and that a failed run then ends the script with its traceback, promptly,
not after a minute in Ray's exception hook and a C++ stack dump.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from venvtools import ROOT, clean_env

FLOWS = ROOT / "plugins" / "plait-ray" / "tests"

SCRIPT = """\
import json, sys

import plait_ray_flows as flows
from plait import Never, WorkflowContext, executor
from plait_builders import WorkflowBuilder


@executor(id="shout")  # defined in the script itself: its __main__
async def shout(text: str, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output(text.upper() + "!")


if __name__ == "__main__":  # a worker imports this file as `app` to rebuild `shout`
    here = WorkflowBuilder("here", placement="ray").add_executor(shout).set_start(shout)
    placed_here = here.build().run_sync("from main").outputs
    result = flows.chain("ray").run_sync("tides")
    import ray  # what the placement started; imported after it, as a user's script need not

    where = ray.get(ray.remote(lambda: sys.executable).remote())
    report = {"outputs": result.outputs, "here": placed_here}
    print(json.dumps({**report, "worker": where, "driver": sys.executable}))
    sys.stdout.flush()
    flows.one(flows.Flaky("flaky"), "ray").run_sync(3)  # fails, uncaught: the traceback prints
"""


def test_a_script_under_uv_run_places_work_on_a_local_ray_cluster(tmp_path: Path) -> None:
    script = tmp_path / "app.py"
    script.write_text(SCRIPT)
    env = clean_env({"PYTHONPATH": str(FLOWS), "RAY_USAGE_STATS_ENABLED": "0"})
    for name in ("RAY_ADDRESS", "RAY_ENABLE_UV_RUN_RUNTIME_ENV"):
        env.pop(name, None)
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "uv"), "run", "--locked", "python", str(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert "Traceback (most recent call last)" in done.stderr
    assert "ValueError: flaky on 3" in done.stderr, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["outputs"] == ["TIDES! (from TIDES, superstep 3)"], report
    assert report["here"] == ["FROM MAIN!"], report  # an executor of the script's __main__
    assert report["worker"] == report["driver"] == str(ROOT / ".venv" / "bin" / "python")
