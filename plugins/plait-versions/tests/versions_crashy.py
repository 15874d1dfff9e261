"""A process that migrates a shop run and can be killed: ``run URL RUN_ID``, ``migrate URL
RUN_ID REQUEST_ID MARK``: version 2 resumes the run under ``migrate``; when MARK says
``hang`` the migration writes ``migrating`` to it and waits to be killed, when it says
``hang-later`` the new audit node does (``auditing``), after the migrated checkpoint is
written. Prints the outputs as JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import versions_shop as shop
from plait import Never, Workflow, WorkflowContext, handler
from plait_builders import WorkflowBuilder
from plait_versions import RunSnapshot, register_migration, resume
from test_migrations import one_to_two


class SlowAudit(shop.Audit):
    @handler
    async def audit(self, line: str, ctx: WorkflowContext[Never, str]) -> None:
        mark = anyio.Path(sys.argv[5])
        if await mark.read_text() == "hang-later":
            await mark.write_text("auditing")
            await anyio.sleep(60)
        await ctx.yield_output(f"v2 audited {line}")


def v2() -> Workflow:
    return (
        WorkflowBuilder("shop", version=2)
        .add_edge(shop.IntakeV2("intake"), shop.ReviewV2("review"))
        .add_edge("review", SlowAudit("audit"))
        .set_start("intake")
        .build()
    )


def hanging(snapshot: RunSnapshot) -> RunSnapshot:
    mark = Path(sys.argv[5])
    if mark.read_text() == "hang":
        mark.write_text("migrating")
        time.sleep(60)
    return one_to_two(snapshot)


async def main(*args: str) -> None:
    step, url, run_id, *rest = args
    if step == "run":
        result = await shop.v1().run("order-a", checkpoint=url, run_id=run_id)
        (request,) = result.pending_requests
        print(json.dumps(request.request_id))
        return
    if step == "finish":  # as it is: the latest checkpoint is version 2's
        done = await v2().resume(run_id, url)
        print(json.dumps(done.outputs))
        return
    register_migration("shop", 1, hanging)
    request_id = rest[0]
    done = await resume(v2(), run_id, url, on_change="migrate", responses={request_id: True})
    print(json.dumps(done.outputs))


anyio.run(main, *sys.argv[1:])
