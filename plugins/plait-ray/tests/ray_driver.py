"""A driver process for the cross-process test: ``python ray_driver.py run|resume RUN_ID
STORE_URL MARKER_DIR``. Joins the Ray cluster named by ``RAY_ADDRESS`` (the test
session's), runs or resumes ``plait_ray_flows.ticking`` with Ray placement and the
checkpoint store, and prints the outputs as JSON. Resuming waits (up to a minute) for a
dead driver's lease to lapse."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import plait_ray
import plait_ray_flows as flows
from plait_durable import RunLeaseError

HERE = str(Path(__file__).parent)
LEASE_TTL = 30.0


async def main(mode: str, run_id: str, store: str, marker_dir: str) -> None:
    # the workers import plait_ray_flows from this directory
    plait_ray.configure(runtime_env={"env_vars": {"PYTHONPATH": HERE}})
    wf = flows.ticking("ray")
    if mode == "run":
        step = {"n": 0, "until": 8, "dir": marker_dir, "pause": 0.4}
        result = await wf.run(step, checkpoint=store, run_id=run_id, lease_ttl=LEASE_TTL)
    else:
        # a crashed driver's lease lapses after its ttl: until then the run is refused
        with anyio.fail_after(60):
            while True:
                try:
                    result = await wf.resume(run_id, store, lease_ttl=LEASE_TTL)
                    break
                except RunLeaseError:
                    await anyio.sleep(0.25)
    print(json.dumps({"status": str(result.status), "outputs": result.outputs}))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
