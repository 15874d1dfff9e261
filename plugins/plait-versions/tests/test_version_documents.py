"""Versions in workflow documents: ``version:`` in the three formats (YAML steps, the JSON
DAG, the flow DSL), recorded by their runs' checkpoints; reject and migrate on a document
workflow, on SQLite, Redis and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import plait
import pytest
import versions_shop as shop
from plait import LoadError, Workflow, get_plugin_manager
from plait_durable import TopologyMismatchError, opened_store
from plait_versions import register_migration, resume
from test_migrations import one_to_two

pytestmark = pytest.mark.anyio


async def _context(context: dict[str, Any]) -> dict[str, Any]:
    return {}


def test_steps_read_version() -> None:
    text = (
        "name: s\nversion: 3\nworkflow:\n"
        "  - {id: a, type: executor, kind: shell, config: {argv: [cat]}}\n"
    )
    assert plait.load(text, format="steps", allow=["subprocess"]).version == 3
    with pytest.raises(LoadError, match=r"2:10: 'version' of the document must be a positive "
                       "integer, got str 'two'"):  # fmt: skip
        plait.load(text.replace("3", "two"), format="steps", allow=["subprocess"])


def test_dag_reads_version() -> None:
    doc: dict[str, Any] = {
        "version": 2,
        "nodes": [{"id": "a", "agent_name": "a", "is_entry": True, "is_exit": True}],
        "connections": [],
    }
    assert plait.load(json.dumps(doc), format="dag", executors={"a": _context}).version == 2
    doc["version"] = 0
    with pytest.raises(LoadError, match="at /version: '/version': 0 is less than the minimum"):
        plait.load(json.dumps(doc), format="dag", executors={"a": _context})


def _flow(version: int, flow: str) -> Workflow:
    executors: dict[str, Any] = (
        {"intake": shop.IntakeV1("intake"), "review": shop.ReviewV1("review")}
        if version == 1
        else {
            "intake": shop.IntakeV2("intake"),
            "review": shop.ReviewV2("review"),
            "audit": shop.Audit("audit"),
        }
    )
    text = f"name: shop\nversion: {version}\nflow: {flow}\n"
    return plait.load(text, format="flow", executors=executors)


def test_flow_reads_version() -> None:
    assert _flow(1, "intake -> review").version == 1
    with pytest.raises(LoadError, match="1:10: 'version' must be a positive integer, got True"):
        plait.load("version: true\nflow: a -> b\n", format="flow", executors={
            "a": shop.Audit("a"), "b": shop.Audit("b")})  # fmt: skip


@pytest.fixture
def _migration() -> Iterator[None]:
    register_migration("shop", 1, one_to_two)
    yield
    get_plugin_manager().unregister("migration:shop@1")


@pytest.mark.usefixtures("_migration")
async def test_reject_and_migrate_a_document_workflow(plait_store_url: str) -> None:
    v1 = _flow(1, "intake -> review")
    started = await v1.run("order-a", checkpoint=plait_store_url)
    (request,) = started.pending_requests
    async with opened_store(plait_store_url) as store:
        first = await store.latest(started.run_id)
        assert first is not None and first.metadata["version"] == 1
    v2 = _flow(2, "intake -> review -> audit")
    with pytest.raises(TopologyMismatchError, match="audit"):
        await resume(v2, started.run_id, plait_store_url, responses={request.request_id: True})
    done = await resume(v2, started.run_id, plait_store_url, on_change="migrate",
                        responses={request.request_id: True})  # fmt: skip
    assert done.outputs == ["v2 audited order-a True"]
