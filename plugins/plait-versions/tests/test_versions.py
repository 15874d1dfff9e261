"""A workflow's version: declared on the spec, the workflow or the builder, kept in the
spec's JSON only when set; a policy set per workflow."""

from __future__ import annotations

import pytest
import versions_shop as shop
from plait import Workflow, WorkflowSpec
from plait_durable import TopologyMismatchError
from plait_versions import NoMigrationError, policy_for, resume, set_policy


def test_the_version_is_the_spec_s_and_json_keeps_it_only_when_set() -> None:
    v1 = shop.v1()
    assert v1.version == 1 and v1.spec.workflow_version == 1
    again = WorkflowSpec.from_json(v1.spec.to_json())
    assert again.workflow_version == 1
    unversioned = WorkflowSpec(name="x", start="a", nodes=(), edge_groups=())
    assert "workflow_version" not in unversioned.to_json()
    raised = Workflow(v1.spec, dict(v1.executors), version=7)
    assert raised.version == 7 and raised.spec.signature() == v1.spec.signature()


@pytest.mark.parametrize("bad", [0, -1, True, "2", 1.5])
def test_a_bad_version_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(ValueError, match="WorkflowSpec.workflow_version must be a positive"):
        WorkflowSpec(name="x", start="a", nodes=(), edge_groups=(), workflow_version=bad)  # type: ignore[arg-type]


def test_a_policy_per_workflow_and_per_run() -> None:
    v2 = shop.v2()
    assert policy_for(v2) == "reject"
    set_policy("shop", "migrate")
    try:
        assert policy_for(v2) == "migrate" and policy_for(v2, "pin") == "pin"
        with pytest.raises(ValueError, match="on_change must be one of reject, pin, migrate"):
            set_policy("shop", "sometimes")
    finally:
        set_policy("shop", None)
    assert policy_for(v2) == "reject"


@pytest.mark.anyio
async def test_the_workflow_s_policy_applies_unless_the_run_names_one(plait_store_url: str) -> None:
    started = await shop.v1().run("order-a", checkpoint=plait_store_url)
    (request,) = started.pending_requests
    answer = {request.request_id: True}
    set_policy("shop", "migrate")
    try:  # no migration registered: migrate is refused, as NoMigrationError
        with pytest.raises(NoMigrationError, match="no migration registered"):
            await resume(shop.v2(), started.run_id, plait_store_url, responses=answer)
        with pytest.raises(TopologyMismatchError):  # the run's own policy wins
            await resume(shop.v2(), started.run_id, plait_store_url, on_change="reject",
                         responses=answer)  # fmt: skip
    finally:
        set_policy("shop", None)
