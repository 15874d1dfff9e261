"""Migrations and the policy for a changed workflow, on SQLite, Redis and PostgreSQL.

A run of the shop workflow (``versions_shop``) starts on version 1 and waits for a person;
the workflow is then deployed as version 2 (a renamed state field, a changed message
type, a new node) or 3, and the stored run is resumed under each policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import versions_shop as shop
from plait import get_plugin_manager
from plait_builders import WorkflowBuilder
from plait_durable import TopologyMismatchError, checkpoint_view, opened_store
from plait_versions import (
    MigrationError,
    NoMigrationError,
    PinnedRunError,
    Record,
    RunSnapshot,
    decide,
    register_migration,
    resume,
)

pytestmark = pytest.mark.anyio

OLD, NEW, V3 = "versions_shop:DraftV1", "versions_shop:Draft", "versions_shop:DraftV3"


def one_to_two(snapshot: RunSnapshot) -> RunSnapshot:
    """count -> orders; DraftV1(text) -> Draft(body), wherever a run holds one."""
    intake = snapshot.executor_state.get("intake")
    if intake is not None:
        intake["orders"] = intake.pop("count")
    for name, section in (("state", snapshot.executor_state), ("pending", snapshot.pending)):
        fixed = shop.retag(section, OLD, NEW)
        if name == "state":
            snapshot.executor_state = fixed
        else:
            snapshot.pending = fixed
    for value in [*snapshot.executor_state.values(), *snapshot.pending.values()]:
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, Record) and item.type == NEW and "text" in item.fields:
                item.fields = {"body": item.fields["text"]}
    return snapshot


def two_to_three(snapshot: RunSnapshot) -> RunSnapshot:
    """Draft(body) -> DraftV3(body, priority=1)."""
    review = snapshot.executor_state.get("review", {})
    if isinstance(review.get("draft"), Record):
        review["draft"] = Record(V3, {**review["draft"].fields, "priority": 1})
    return snapshot


@pytest.fixture(autouse=True)
def _migrations() -> Iterator[None]:
    register_migration("shop", 1, one_to_two)
    register_migration("shop", 2, two_to_three)
    yield
    manager = get_plugin_manager()
    manager.unregister("migration:shop@1")
    manager.unregister("migration:shop@2")


async def _paused(plait_store_url: str) -> tuple[str, str]:
    """A version 1 run waiting for its approval: (run id, request id)."""
    result = await shop.v1().run("order-a", checkpoint=plait_store_url)
    (request,) = result.pending_requests
    return result.run_id, request.request_id


async def _history(plait_store_url: str, run_id: str) -> list[Any]:
    async with opened_store(plait_store_url) as store:
        return [(i.checkpoint_id, i.superstep) for i in await store.list(run_id)]


async def test_migrate_resumes_a_v1_run_on_v2(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    result = await resume(
        shop.v2(), run_id, plait_store_url, on_change="migrate", responses={request_id: True}
    )
    assert result.outputs == ["v2 audited order-a True"]
    async with opened_store(plait_store_url) as store:
        infos = await store.list(run_id)
        migrated = [
            c
            for c in [await store.load(i.checkpoint_id) for i in infos]
            if "migrations" in c.metadata
        ]
        assert len(migrated) == 1
        assert migrated[0].metadata["version"] == 2
        assert migrated[0].metadata["migrations"]["applied"] == ["shop@1"]
        assert migrated[0].metadata["migrations"]["from_version"] == 1
        view = await checkpoint_view(store, migrated[0].checkpoint_id)
        assert view.state["executor_state"]["intake"] == {"orders": 1}
        latest = await store.latest(run_id)
        assert latest is not None and latest.metadata["version"] == 2


async def test_a_chain_of_two_migrations(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    async with opened_store(plait_store_url) as store:
        found = await store.latest(run_id)
        assert found is not None
        verdict = await decide(shop.v3(), store, found, "migrate")
    assert verdict.outcome == "migrate" and verdict.chain == ("shop@1", "shop@2")
    assert any("audit" in change for change in verdict.changes)
    result = await resume(
        shop.v3(), run_id, plait_store_url, on_change="migrate", responses={request_id: False}
    )
    assert result.outputs == ["v2 audited order-a p1 False"]
    async with opened_store(plait_store_url) as store:
        latest = await store.latest(run_id)
        assert latest is not None and latest.metadata["version"] == 3


async def test_reject_is_the_default_and_names_the_changes(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    before = await _history(plait_store_url, run_id)
    with pytest.raises(TopologyMismatchError, match="audit"):
        await resume(shop.v2(), run_id, plait_store_url, responses={request_id: True})
    assert await _history(plait_store_url, run_id) == before


async def test_pin_refuses_a_python_workflow_of_another_version(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    with pytest.raises(PinnedRunError, match="pinned to version 1") as caught:
        await resume(
            shop.v2(), run_id, plait_store_url, on_change="pin", responses={request_id: True}
        )
    assert any("audit" in change for change in caught.value.changes)
    # pinned: the code of its version resumes it
    result = await resume(shop.v1(), run_id, plait_store_url, on_change="pin",
                          responses={request_id: True})  # fmt: skip
    assert result.outputs == ["v1 order-a True"]


async def test_accept_runs_the_new_code_on_the_old_state_when_the_graph_is_the_same(
    plait_store_url: str,
) -> None:
    run_id, request_id = await _paused(plait_store_url)
    renamed = WorkflowBuilder("shop", version=1, timeout=30.0)  # a changed policy
    renamed.add_edge(shop.IntakeV1("intake"), shop.ReviewV1("review")).set_start("intake")
    changed = renamed.build()
    with pytest.raises(TopologyMismatchError):  # reject: the workflow changed
        await resume(changed, run_id, plait_store_url, responses={request_id: True})
    result = await resume(changed, run_id, plait_store_url, on_change="accept",
                          responses={request_id: True})  # fmt: skip
    assert result.outputs == ["v1 order-a True"]


async def test_migrate_without_a_chain_is_refused(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    get_plugin_manager().unregister("migration:shop@2")
    with pytest.raises(NoMigrationError, match="no migration registered for workflow 'shop' "
                       "from version 2"):  # fmt: skip
        await resume(shop.v3(), run_id, plait_store_url, on_change="migrate",
                     responses={request_id: True})  # fmt: skip


async def test_a_failing_migration_leaves_the_run_intact(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)
    before = await _history(plait_store_url, run_id)

    def broken(snapshot: RunSnapshot) -> RunSnapshot:
        raise KeyError("count")

    register_migration("shop", 2, broken)
    with pytest.raises(MigrationError, match=f"migration shop@2 failed on run '{run_id}'") as e:
        await resume(shop.v3(), run_id, plait_store_url, on_change="migrate",
                     responses={request_id: True})  # fmt: skip
    assert e.value.migration == "shop@2" and e.value.run_id == run_id
    assert await _history(plait_store_url, run_id) == before
    # the run is as it was: its own version still resumes it
    result = await resume(shop.v1(), run_id, plait_store_url, responses={request_id: True})
    assert result.outputs == ["v1 order-a True"]


async def test_a_migration_leaving_a_wrong_type_is_refused_with_its_path(
    plait_store_url: str,
) -> None:
    run_id, request_id = await _paused(plait_store_url)
    before = await _history(plait_store_url, run_id)

    def forgets_the_draft(snapshot: RunSnapshot) -> RunSnapshot:
        snapshot.executor_state["intake"] = {"orders": 1}
        return snapshot  # the review's DraftV1 is left as it was

    register_migration("shop", 1, forgets_the_draft)
    with pytest.raises(MigrationError) as caught:
        await resume(shop.v2(), run_id, plait_store_url, on_change="migrate",
                     responses={request_id: True})  # fmt: skip
    error = caught.value
    assert error.path == "executor_state['review'].draft"
    assert error.migration == "shop@1" and error.run_id == run_id
    assert "versions_shop:DraftV1" in str(error) and run_id in str(error)
    assert await _history(plait_store_url, run_id) == before


async def test_a_wrong_field_is_named_by_its_path(plait_store_url: str) -> None:
    run_id, request_id = await _paused(plait_store_url)

    def half_done(snapshot: RunSnapshot) -> RunSnapshot:
        snapshot = one_to_two(snapshot)
        snapshot.executor_state["review"]["draft"] = Record(NEW, {"text": "order-a"})
        return snapshot

    register_migration("shop", 1, half_done)
    with pytest.raises(MigrationError, match=r"executor_state\['review'\]\.draft") as caught:
        await resume(shop.v2(), run_id, plait_store_url, on_change="migrate",
                     responses={request_id: True})  # fmt: skip
    assert "body" in str(caught.value)


async def test_a_sealed_store_re_signs_the_migrated_checkpoint(plait_store_url: str) -> None:
    from plait_sealing import SealedStore, generate_key

    sealed = SealedStore(plait_store_url, keys=generate_key())
    try:
        result = await shop.v1().run("order-a", checkpoint=sealed)
        (request,) = result.pending_requests
        done = await resume(shop.v2(), result.run_id, sealed, on_change="migrate",
                            responses={request.request_id: True})  # fmt: skip
        assert done.outputs == ["v2 audited order-a True"]
        infos = await sealed.list(result.run_id)
        loaded = [await sealed.load(i.checkpoint_id) for i in infos]  # each verifies its MAC
        (migrated,) = [c for c in loaded if "migrations" in c.metadata]
        assert migrated.metadata["version"] == 2
        raw = await sealed.store.load(migrated.checkpoint_id)  # as the store holds it
        assert raw.state.get("kind") == "sealed" and "migrations" not in raw.metadata
    finally:
        await sealed.aclose()
