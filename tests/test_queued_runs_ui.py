"""``plait ui``'s run list shows the runs on a task queue (plait-workers) that no worker has
taken: they have no checkpoint, so the queue says they are there; on real Redis and
PostgreSQL."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import anyio
import pytest
from plait_testing import servers
from plait_ui import UiSettings, make_app
from plait_workers import submit
from starlette.testclient import TestClient

TOKEN = "test-token"


@pytest.fixture(scope="module", params=["redis", "postgresql"])
def store(request: pytest.FixtureRequest) -> Iterator[str]:
    server = servers.redis_url() if request.param == "redis" else servers.postgres_url()
    with server as url:
        yield url


def test_the_run_list_shows_queued_runs_without_a_run_page(store: str) -> None:
    queue = f"t{uuid.uuid4().hex[:10]}"

    async def put(value: int) -> str:
        return await submit("tests_app_not_imported:flow", value, store=store, queue=queue)

    first, second = anyio.run(put, 1), anyio.run(put, 2)
    settings = UiSettings(store=store, token=TOKEN, allowed_hosts=frozenset({"testserver"}))
    with TestClient(make_app(settings), base_url="http://testserver") as client:
        assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        page = client.get("/", params={"queue": queue, "limit": "500"}).text
        without = client.get("/", params={"limit": "500"}).text
        missing = client.get(f"/runs/{first}")
    listed = re.findall(r'data-run-id="([^"]+)"', page)
    assert [run_id for run_id in listed if run_id in (first, second)] == [second, first]
    for run_id in (first, second):
        at = page.rindex("<tr", 0, page.index(f'data-run-id="{run_id}"'))
        row = page[at:].split("</tr>", 1)[0]
        assert "pending status-queued" in row and "not started" in row
        assert "/runs/" not in row and "tests_app_not_imported:flow" in row
    assert first not in without  # the default queue alone unless ?queue= names another
    assert missing.status_code == 404  # no run page: nothing is checkpointed yet
