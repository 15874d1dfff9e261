"""``plait ui --workflow TARGET`` with plait-versions: the runs page has a ``compat`` column
with ``plait compat TARGET``'s verdict on each run, and a run's page shows the verdict with
its reason, its migrations and what changed; plait-ui gets them through the
``plait_change_policies`` hook, never importing plait-versions (without it, the pages have
no verdict). Real runs of two versions of one workflow in a real store."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from plait import Executor, Never, Workflow, WorkflowContext, get_plugin_manager, handler
from plait.spi import PluginManager, set_plugin_manager
from plait_builders import WorkflowBuilder
from plait_ui import UiSettings, make_app
from plait_versions import RunSnapshot, register_migration
from starlette.testclient import TestClient

TOKEN = "compat-ui-token"


class AskV1(Executor):
    """Keeps the text (``text``) and asks whether to publish it."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["text"] = text
        await ctx.request_info("publish?", bool)

    @handler
    async def answer(self, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['text']}: {ok}")


class AskV2(Executor):
    """Version 2: the state field is ``body``."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.state["body"] = text
        await ctx.request_info("publish?", bool)

    @handler
    async def answer(self, ok: bool, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"{ctx.state['body']}: {ok}")


def desk(name: str, version: int | None, executor: Executor) -> Workflow:
    builder = WorkflowBuilder(name, version=version)
    return builder.add_executor(executor).set_start("ask").build()


def text_to_body(snapshot: RunSnapshot) -> RunSnapshot:
    state = snapshot.executor_state.get("ask")
    if state is not None and "text" in state:
        state["body"] = state.pop("text")
    return snapshot


@pytest.fixture
def name() -> Iterator[str]:
    """A workflow name of the test's own, with its migration from version 1."""
    found = f"pages-{uuid.uuid4().hex[:8]}"
    register_migration(found, 1, text_to_body)
    yield found
    get_plugin_manager().unregister(f"migration:{found}@1")


def _runs(url: str, name: str) -> dict[str, str]:
    """kind -> run id: waiting on version 1 and on version 2, waiting on an unversioned
    version, finished on version 2."""

    async def start() -> dict[str, str]:
        v1, v2 = desk(name, 1, AskV1("ask")), desk(name, 2, AskV2("ask"))
        old = await v1.run("tea", checkpoint=url)
        new = await v2.run("cups", checkpoint=url)
        bare = await desk(name, None, AskV1("ask")).run("jam", checkpoint=url)
        done = await v2.run("bread", checkpoint=url)
        (request,) = done.pending_requests
        await v2.resume(done.run_id, url, responses={request.request_id: True})
        return {"migrate": old.run_id, "as_is": new.run_id, "rejected": bare.run_id,
                "finished": done.run_id}  # fmt: skip

    return anyio.run(start)


@contextmanager
def signed_in(url: str, **options: Any) -> Iterator[TestClient]:
    settings = UiSettings(
        store=url, token=TOKEN, allowed_hosts=frozenset({"testserver"}), **options
    )
    with TestClient(make_app(settings), base_url="http://testserver") as client:
        assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        yield client


def _compat_cells(page: str) -> dict[str, str]:
    """Run id -> the text of its row's compat cell on the runs page."""
    rows = re.findall(r'<tr class="run [^"]*" data-run-id="([^"]+)">(.*?)</tr>', page, re.S)
    cells = {}
    for run_id, row in rows:
        found = re.search(r'<td class="column-compat[^"]*">([^<]*)</td>', row)
        if found is not None:
            cells[html.unescape(run_id)] = html.unescape(found.group(1))
    return cells


def test_the_runs_page_shows_each_runs_verdict(tmp_path: Path, name: str) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runs = _runs(url, name)
    workflow = desk(name, 2, AskV2("ask"))
    with signed_in(url, workflow=workflow) as client:
        page = client.get("/").text
    assert '<th class="column-compat"' in page and "under policy migrate" in page
    assert _compat_cells(page) == {
        runs["migrate"]: f"migrate {name}@1",
        runs["as_is"]: "as_is",
        runs["rejected"]: "rejected",
        runs["finished"]: "-",  # finished: nothing to resume
    }
    assert 'class="column-compat compat-rejected"' in page
    with signed_in(url) as client:  # no --workflow: no verdict to give
        plain = client.get("/").text
    assert "column-compat" not in plain and _compat_cells(plain) == {}


def test_a_runs_page_shows_its_verdict_reason_and_changes(tmp_path: Path, name: str) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runs = _runs(url, name)
    with signed_in(url, workflow=desk(name, 2, AskV2("ask"))) as client:
        migrating = client.get(f"/runs/{runs['migrate']}").text
        rejected = client.get(f"/runs/{runs['rejected']}").text
        finished = client.get(f"/runs/{runs['finished']}").text
    verdict = re.search(r'<p id="compat-verdict">(.*?)</p>', migrating, re.S)
    assert verdict is not None
    shown = html.unescape(re.sub(r"<[^>]+>", "", verdict.group(1)))
    assert shown == f"migrate through {name}@1: migrates from version 1 to 2"
    changes = re.search(r'<ul id="compat-changes">(.*?)</ul>', migrating, re.S)
    assert changes is not None and "AskV1" in html.unescape(changes.group(1))
    assert "policy migrate: the run&#39;s checkpoint records no version" in rejected
    assert 'id="compat-verdict" class="muted">not judged' in finished
    with signed_in(url) as client:
        assert 'id="compat"' not in client.get(f"/runs/{runs['migrate']}").text


def test_without_plait_versions_the_pages_have_no_verdict(tmp_path: Path, name: str) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    runs = _runs(url, name)
    previous = set_plugin_manager(PluginManager(disabled=["plait-versions"]))
    try:
        with signed_in(url, workflow=desk(name, 2, AskV2("ask"))) as client:
            listing = client.get("/")
            page = client.get(f"/runs/{runs['migrate']}")
    finally:
        set_plugin_manager(previous)
    assert listing.status_code == 200 and page.status_code == 200
    assert "column-compat" not in listing.text and 'id="compat' not in page.text
