"""A store of mixed shop runs for ``plait compat``'s tests and benchmark.

:func:`fill` writes one run of each kind and copies it (``plait_durable.fork_run``) until
the store holds the counts asked for; it returns each run's expected verdict under
version 2 with the migration ``shop@1`` registered.
"""

from __future__ import annotations

from collections.abc import Mapping

import versions_shop as shop
from plait import Workflow
from plait_builders import WorkflowBuilder
from plait_durable import CheckpointStore, fork_run

#: kind -> (verdict under version 2, or None when compat does not list it)
KINDS: Mapping[str, str | None] = {
    "v1_waiting": "migrate",  # paused on version 1: migrates through shop@1
    "v1_failed": "migrate",  # failed on version 1 with a message pending for review
    "v2_waiting": "as_is",  # paused on version 2
    "unversioned": "rejected",  # paused on a version 1 that declared no version
    "v2_finished": None,  # finished: nothing to resume
    "other_workflow": None,  # another workflow's run
}


def _unversioned() -> Workflow:
    return (
        WorkflowBuilder("shop")
        .add_edge(shop.IntakeV1("intake"), shop.ReviewV1("review"))
        .set_start("intake")
        .build()
    )


def _other() -> Workflow:
    return (
        WorkflowBuilder("other", version=1)
        .add_edge(shop.IntakeV1("intake"), shop.ReviewV1("review"))
        .set_start("intake")
        .build()
    )


async def _first(kind: str, store: CheckpointStore) -> str:
    if kind == "v1_waiting":
        return (await shop.v1().run("a", checkpoint=store)).run_id
    if kind == "v1_failed":  # stopped by the superstep limit with the draft pending
        result = await shop.v1().run("a", checkpoint=store, max_supersteps=1,
                                     raise_on_failure=False)  # fmt: skip
        return result.run_id
    if kind == "v2_waiting":
        return (await shop.v2().run("a", checkpoint=store)).run_id
    if kind == "unversioned":
        return (await _unversioned().run("a", checkpoint=store)).run_id
    if kind == "v2_finished":
        flow = WorkflowBuilder("shop", version=2).add_executor(shop.Audit("audit"))
        return (await flow.set_start("audit").build().run("a", checkpoint=store)).run_id
    return (await _other().run("a", checkpoint=store)).run_id


async def fill(store: CheckpointStore, counts: Mapping[str, int]) -> dict[str, str | None]:
    """Write ``counts[kind]`` runs of each kind; run id -> expected verdict."""
    expected: dict[str, str | None] = {}
    for kind, count in counts.items():
        if not count:
            continue
        first = await _first(kind, store)
        expected[first] = KINDS[kind]
        latest = await store.latest(first)
        assert latest is not None
        for _ in range(count - 1):
            expected[await fork_run(store, first, latest.checkpoint_id)] = KINDS[kind]
    return expected
