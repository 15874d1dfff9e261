"""The app, driven through Starlette's TestClient, on real runs in every kind of store:
the runs page's filters and paging, the run page (checkpoint tree, diff, failures, graph),
answers (valid, wrong type, unknown id), forks, and read-only mode."""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from plait import hookimpl
from plait_durable import open_store
from plait_testing import RegisterPlugin, servers
from ui_helpers import (
    FOREACH_TOPOLOGY,
    chain,
    choice_gate,
    gate,
    post,
    retrying,
    review_gate,
    run,
    run_failing,
    signed_in,
    sqlite,
    stored_run,
    unique,
    wide,
)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    with servers.redis_url() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    with servers.postgres_url() as url:
        yield url


@pytest.fixture(params=["memory", "file", "sqlite", "redis", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    kind = request.param
    if kind == "memory":
        return f"memory://ui-{uuid.uuid4().hex}"
    if kind == "file":
        return f"file://{tmp_path / 'store'}"
    if kind == "sqlite":
        return sqlite(tmp_path)
    if kind == "redis":
        return str(request.getfixturevalue("redis_server"))
    return str(request.getfixturevalue("postgres_server"))


def run_ids(html: str) -> list[str]:
    return re.findall(r'data-run-id="([^"]+)"', html)


def checkpoint_ids(html: str) -> list[str]:
    found = re.search(r'<script type="application/json" id="checkpoint-ids">(.*?)</script>', html)
    assert found is not None
    return re.findall(r'"([0-9a-f]{32})"', found.group(1))


# -- the runs page ------------------------------------------------------------------------------


def test_runs_are_filtered_by_status_workflow_and_id(store_url: str) -> None:
    name = unique("wf")
    done = run(chain(2, name=name), 0, store_url).run_id
    failed = run_failing(chain(3, name=name, fail_at=1), 0, store_url)
    waiting = run(gate(name), "draft", store_url).run_id
    with signed_in(store_url) as client:
        page = client.get("/", params={"workflow": name})
        assert page.status_code == 200
        assert run_ids(page.text) == [waiting, failed, done]
        assert run_ids(client.get("/", params={"workflow": name, "status": "failed"}).text) == [
            failed
        ]
        idle = client.get("/", params={"workflow": name, "status": "idle"})
        assert run_ids(idle.text) == [done]
        by_id = client.get("/", params={"workflow": name, "q": waiting[:10]})
        assert run_ids(by_id.text) == [waiting]
        assert "ValueError in &#39;n1&#39; (superstep 2)" in page.text
        assert client.get("/", params={"workflow": unique("none")}).text.count("No runs match") == 1
        assert client.get("/", params={"status": "bogus"}).status_code == 400
        assert client.get("/", params={"since": "yesterday"}).status_code == 400


class RunColumns:
    """A plugin adding a column to run listings, from the latest checkpoint's metadata."""

    @hookimpl
    def plait_run_columns(self) -> dict[str, Any]:
        return {"workflow_again": lambda info: f"<{info.metadata.get('workflow', '-')}>"}


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_the_run_list_shows_the_columns_plugins_add(
    kind: str, tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    # SQLite lists runs from its index (no metadata: the page reads each run's latest
    # checkpoint); the memory store's summaries carry the metadata they were made from
    url = sqlite(tmp_path) if kind == "sqlite" else f"memory://ui-{uuid.uuid4().hex}"
    name = unique("wf")
    done = run(chain(1, name=name), 0, url).run_id
    with signed_in(url) as client:
        plain = client.get("/", params={"workflow": name}).text
        plait_register_plugin(RunColumns(), "run-columns")
        page = client.get("/", params={"workflow": name}).text
    assert "column-workflow_again" not in plain
    assert '<th class="column-workflow_again">Workflow_again</th>' in page
    row = page[page.index(f'data-run-id="{done}"') :]
    assert f'<td class="column-workflow_again">&lt;{name}&gt;</td>' in row  # escaped


def test_runs_are_paged_through_the_index(store_url: str) -> None:
    name = unique("wf")
    ids = [run(chain(1, name=name), i, store_url).run_id for i in range(5)]
    seen: list[str] = []
    with signed_in(store_url) as client:
        url: str | None = f"/?workflow={name}&limit=2"
        pages = 0
        while url is not None:
            page = client.get(url.replace("&amp;", "&"))
            seen += run_ids(page.text)
            found = re.search(r'id="next-page" href="([^"]+)"', page.text)
            url = found.group(1) if found else None
            pages += 1
            assert pages < 10
        assert pages == 3, "5 runs, 2 a page"
        assert seen == ids[::-1]
        assert client.get("/", params={"cursor": "nonsense"}).status_code == 400


def test_runs_filtered_by_time(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    name = unique("wf")
    run_id = run(chain(1, name=name), 0, url).run_id
    with signed_in(url) as client:
        assert run_ids(client.get("/", params={"since": "2000-01-01T00:00"}).text) == [run_id]
        assert run_ids(client.get("/", params={"until": "2000-01-01T00:00"}).text) == []


# -- the run page -------------------------------------------------------------------------------


def test_the_checkpoint_tree_and_the_diff_of_each_superstep(store_url: str) -> None:
    result = run(chain(3), 0, store_url)
    with signed_in(store_url) as client:
        latest = client.get(f"/runs/{result.run_id}")
        assert latest.status_code == 200
        ids = checkpoint_ids(latest.text)
        assert len(ids) == 4  # the start, then one per superstep
        assert "Superstep 3" in latest.text
        second = client.get(f"/runs/{result.run_id}", params={"checkpoint": ids[1]})
        assert "Superstep 1" in second.text
        # n0 ran in superstep 1: its state and visits changed, and n1 has its next input
        assert "<code>executor_state.n0</code>" in second.text
        assert "<code>pending.n1</code>" in second.text
        graph = client.get(f"/runs/{result.run_id}/graph.json", params={"checkpoint": ids[1]})
        classes = {
            e["data"]["id"]: e["classes"] for e in graph.json()["elements"] if "classes" in e
        }
        assert "ran" in classes["n0"] and "pending" in classes["n1"]
        assert "ran" not in classes["n2"]
        edges = [e["data"] for e in graph.json()["elements"] if "source" in e["data"]]
        assert {(e["source"], e["target"]) for e in edges} == {("n0", "n1"), ("n1", "n2")}
        unknown = client.get(f"/runs/{result.run_id}", params={"checkpoint": "0" * 32})
        assert unknown.status_code == 404
        assert client.get("/runs/no-such-run").status_code == 404


def test_a_failed_run_shows_type_message_and_traceback_escaped(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    run_id = run_failing(chain(3, fail_at=1), 0, url)
    with signed_in(url) as client:
        page = client.get(f"/runs/{run_id}")
        assert 'id="failure-type">ValueError<' in page.text
        assert "Traceback (most recent call last)" in page.text
        # the stored message holds a <script> tag: it is shown as text, never as markup
        assert "<script>alert(1)</script>" not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        graph = client.get(f"/runs/{run_id}/graph.json").json()
        assert any(e["data"]["id"] == "n1" and "failed" in e["classes"] for e in graph["elements"])


def test_large_values_are_cut_and_expand_on_demand(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    result = run(gate(), "x" * 5000, url)  # the start checkpoint's next input: 5000 x
    with signed_in(url) as client:
        ids = checkpoint_ids(client.get(f"/runs/{result.run_id}").text)
        page = client.get(f"/runs/{result.run_id}", params={"checkpoint": ids[0]})
        assert "x" * 5000 not in page.text and "more characters" in page.text
        expand = re.search(r'hx-get="([^"]+)"', page.text)
        assert expand is not None
        full = client.get(expand.group(1).replace("&amp;", "&"))
        assert full.status_code == 200 and "x" * 5000 in full.text


# -- forks ---------------------------------------------------------------------------------------


def test_a_fork_is_linked_both_ways(store_url: str) -> None:
    result = run(chain(3), 0, store_url)
    with signed_in(store_url) as client:
        ids = checkpoint_ids(client.get(f"/runs/{result.run_id}").text)
        response = post(client, f"/runs/{result.run_id}/fork", {"checkpoint": ids[1]})
        assert response.status_code == 303
        new_page = client.get(response.headers["location"])
        new_run = response.headers["location"].rsplit("/", 1)[1]
        assert 'id="forked-from"' in new_page.text and result.run_id in new_page.text
        origin = client.get(f"/runs/{result.run_id}")
        assert f'class="fork-link" href="/runs/{new_run}"' in origin.text
        bad = post(client, f"/runs/{result.run_id}/fork", {"checkpoint": "0" * 32})
        assert bad.status_code == 404
    # the fork resumes where its checkpoint left off: two more supersteps, output 3
    resumed = anyio.run(chain_resume, result, new_run, store_url)
    assert resumed == [3]


async def chain_resume(result: Any, new_run: str, url: str) -> Any:
    workflow = chain(3)
    store = open_store(url)
    try:
        done = await workflow.resume(new_run, store)
    finally:
        await store.aclose()
    return done.outputs


# -- answers -------------------------------------------------------------------------------------


def test_answers_valid_wrong_type_and_unknown(store_url: str) -> None:
    workflow = gate()
    waiting = run(workflow, "draft", store_url)
    with signed_in(store_url, workflow=workflow) as client:
        page = client.get(f"/runs/{waiting.run_id}/requests")
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', page.text)
        assert "publish?" in page.text and "(bool)" in page.text
        before = anyio.run(count_checkpoints, store_url, waiting.run_id)
        wrong = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "42"})
        assert wrong.status_code == 422
        assert 'class="error answer-error"' in wrong.text and "bool" in wrong.text
        assert anyio.run(count_checkpoints, store_url, waiting.run_id) == before, "wrote"
        unknown = post(client, f"/runs/{waiting.run_id}/requests/nope", {"answer": "true"})
        assert unknown.status_code == 404
        done = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "true"})
        assert done.status_code == 303
        after = client.get(f"/runs/{waiting.run_id}")
        assert 'id="run-status">idle<' in after.text
        assert "published: draft" in after.text
        assert "No pending requests" in client.get(f"/runs/{waiting.run_id}/requests").text


def test_answers_need_the_workflow(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    waiting = run(gate(), "draft", url)
    with signed_in(url) as client:
        page = client.get(f"/runs/{waiting.run_id}/requests")
        assert "--workflow TARGET" in page.text
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', page.text)
        refused = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "true"})
        assert refused.status_code == 422 and "--workflow" in refused.text


async def count_checkpoints(url: str, run_id: str) -> int:
    store = open_store(url)
    try:
        return len(await store.list(run_id))
    finally:
        await store.aclose()


# -- read-only mode ------------------------------------------------------------------------------


def test_read_only_mode_has_no_change_routes(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    workflow = gate()
    waiting = run(workflow, "draft", url)
    with signed_in(url, read_only=True, workflow=workflow) as client:
        page = client.get(f"/runs/{waiting.run_id}")
        assert 'id="read-only"' in page.text and "fork-form" not in page.text
        ids = checkpoint_ids(page.text)
        fork = post(client, f"/runs/{waiting.run_id}/fork", {"checkpoint": ids[-1]})
        assert fork.status_code == 405
        requests = client.get(f"/runs/{waiting.run_id}/requests")
        assert "answer-form" not in requests.text
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', requests.text)
        answer = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "true"})
        assert answer.status_code == 405
        assert anyio.run(count_checkpoints, url, waiting.run_id) == len(ids)


# -- live updates --------------------------------------------------------------------------------


def test_the_event_stream_announces_the_latest_checkpoint(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    result = run(chain(2), 0, url)
    with signed_in(url) as client:
        ids = checkpoint_ids(client.get(f"/runs/{result.run_id}").text)
        with client.stream("GET", f"/runs/{result.run_id}/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.iter_lines()
            seen = ""
            for line in lines:
                seen += line + "\n"
                if line.startswith("data:"):
                    break
        assert "event: checkpoint" in seen and ids[-1] in seen


# -- scale ---------------------------------------------------------------------------------------


def test_the_runs_page_over_10000_runs(tmp_path: Path) -> None:
    url = sqlite(tmp_path)

    async def fill() -> None:
        from plait_testing.stores import make_checkpoint

        store = open_store(url)
        try:
            for start in range(0, 10_000, 1000):
                await store.save_many(  # type: ignore[attr-defined]
                    [make_checkpoint(f"run-{i:05d}", 1) for i in range(start, start + 1000)]
                )
        finally:
            await store.aclose()

    anyio.run(fill)
    with signed_in(url) as client:
        # the page's speed is measured by tests/benchmarks/bench_ui.py (runs_page), never
        # asserted here: a loaded CI machine is no measure of it
        for params in ({}, {"status": "running", "cursor": "5000"}, {"q": "run-0420"}):
            page = client.get("/", params=params)
            assert page.status_code == 200
            assert re.search(r"[\d.]+ ms in the store", page.text), params
        assert len(run_ids(client.get("/").text)) == 50
        assert run_ids(client.get("/", params={"q": "run-0420"}).text)[0] == "run-04209"


def test_a_structured_answer_is_built_as_the_declared_type(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    workflow = review_gate()
    waiting = run(workflow, "draft", url)
    with signed_in(url, workflow=workflow) as client:
        page = client.get(f"/runs/{waiting.run_id}/requests")
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', page.text)
        # the form shows the declared type's JSON Schema: an object with its fields
        assert "&#34;approved&#34;" in page.text and "&#34;required&#34;" in page.text
        path = f"/runs/{waiting.run_id}/requests/{request_id}"
        missing = post(client, path, {"answer": '{"note": "fine"}'})
        assert missing.status_code == 422
        assert "answer: &#39;approved&#39; is a required property" in missing.text
        wrong = post(client, path, {"answer": '{"approved": "perhaps"}'})
        assert wrong.status_code == 422, "a converter's bool('perhaps') must not decide"
        assert "answer.approved: &#39;perhaps&#39; is not of type &#39;boolean&#39;" in wrong.text
        assert anyio.run(count_checkpoints, url, waiting.run_id) == 2  # nothing written
        done = post(client, path, {"answer": '{"approved": true, "note": "fine"}'})
        assert done.status_code == 303
        assert "approved: fine" in client.get(f"/runs/{waiting.run_id}").text


def test_a_literal_answer_is_a_choice_of_its_values(tmp_path: Path) -> None:
    """Issue 34 (N9): a ``Literal`` response type came back from the store as ``Any``: the
    form was a free JSON box and any answer was taken; and a choice list's options had
    empty values (the JSON of each option broke out of its attribute)."""
    url = sqlite(tmp_path)
    workflow = choice_gate()
    waiting = run(workflow, 7, url)
    with signed_in(url, workflow=workflow) as client:
        page = client.get(f"/runs/{waiting.run_id}/requests")
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', page.text)
        options = re.findall(r'<option value="([^"]*)">([^<]*)</option>', page.text)
        assert options == [("&#34;yes&#34;", "yes"), ("&#34;no&#34;", "no")], options
        path = f"/runs/{waiting.run_id}/requests/{request_id}"
        wrong = post(client, path, {"answer": '"maybe"'})
        assert wrong.status_code == 422 and "is not one of" in wrong.text
        assert anyio.run(count_checkpoints, url, waiting.run_id) == 2  # nothing written
        done = post(client, path, {"answer": '"yes"'})
        assert done.status_code == 303
        assert "chose yes" in client.get(f"/runs/{waiting.run_id}").text


def test_a_fork_with_edits_needs_allow_edits(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    result = run(chain(3), 0, url)
    edit = {"edit_pending": '{"n1": [100]}'}
    with signed_in(url) as client:
        ids = checkpoint_ids(client.get(f"/runs/{result.run_id}").text)
        refused = post(client, f"/runs/{result.run_id}/fork", {"checkpoint": ids[1], **edit})
        assert refused.status_code == 403 and "--allow-edits" in refused.text
        assert "edit_pending" not in client.get(f"/runs/{result.run_id}").text
    with signed_in(url, allow_edits=True) as client:
        assert 'name="edit_pending"' in client.get(f"/runs/{result.run_id}").text
        bad = post(
            client, f"/runs/{result.run_id}/fork", {"checkpoint": ids[1], "edit_shared": "{"}
        )
        assert bad.status_code == 400 and "not JSON" in bad.text
        done = post(client, f"/runs/{result.run_id}/fork", {"checkpoint": ids[1], **edit})
        assert done.status_code == 303
        new_run = done.headers["location"].rsplit("/", 1)[1]
    # the fork goes on from the edited next input: n1 gets 100, n2 101, the output is 102
    assert anyio.run(chain_resume, result, new_run, url) == [102]


# -- the Gantt of invocations (the run's event journal) -------------------------------------


def test_the_run_page_draws_the_journal_as_a_gantt(store_url: str) -> None:
    workflow = retrying(fail=False)
    journaled = run(workflow, 0, store_url, journal=True).run_id
    plain = run(retrying(fail=False), 0, store_url).run_id
    with signed_in(store_url) as client:
        page = client.get(f"/runs/{journaled}").text
        assert page.count('class="gantt-bar ') == 5  # fetch and slow twice, store once
        assert page.count('class="gantt-bar timeout"') == 1
        assert page.count('class="gantt-backoff"') == 1
        assert "the &lt;upstream&gt; hung up" in page and "<upstream>" not in page
        assert 'id="gantt-none"' not in page
        bare = client.get(f"/runs/{plain}").text
        assert 'id="gantt-none"' in bare and "gantt-bar" not in bare


def test_a_superstep_with_many_changes_lists_the_first_ones(tmp_path: Path) -> None:
    url = sqlite(tmp_path)
    run_id = run(wide(400), 0, url).run_id  # its last superstep changes ~400 visit counts
    with signed_in(url) as client:
        page = client.get(f"/runs/{run_id}").text
        table = page.split('id="diff"', 1)[1].split("</table>", 1)[0]
        assert table.count("<tr class=") == 200
        more = re.search(r"… and (\d+) more changes", page)
        assert more is not None and int(more.group(1)) > 100


# -- the graph's boxes ---------------------------------------------------------------------------


def test_a_foreach_body_is_inside_its_box(tmp_path: Path) -> None:
    """Issue 34: the body of a foreach block was drawn outside its box (only the gather,
    whose id has the block's prefix, was in it)."""
    url = sqlite(tmp_path)
    run_id, _ = stored_run(url, FOREACH_TOPOLOGY, state={"pending": {"grow": [1]}})
    with signed_in(url) as client:
        graph = client.get(f"/runs/{run_id}/graph.json").json()
    parent = {e["data"]["id"]: e["data"].get("parent") for e in graph["elements"]}
    classes = {e["data"]["id"]: e.get("classes", "") for e in graph["elements"]}
    for node in ("each", "grow", "short", "each/gather"):
        assert parent[node] == "each/", node
    assert parent["words"] is None and parent["joined"] is None
    assert classes["each/"] == "group foreach"
    assert "pending" in classes["grow"]


# -- bad input on the value page -----------------------------------------------------------------


def test_a_deeply_nested_path_is_a_clear_400(tmp_path: Path) -> None:
    """Issue 34: a deeply nested ``path`` on the value page was a 500 (a RecursionError
    while reading it)."""
    url = sqlite(tmp_path)
    run_id, checkpoint = stored_run(url, FOREACH_TOPOLOGY, state={"shared": {"a": [1, 2]}})
    with signed_in(url) as client:
        page = f"/runs/{run_id}/value"
        good = client.get(page, params={"checkpoint": checkpoint, "path": '["shared", "a", 1]'})
        assert good.status_code == 200 and "2" in good.text
        for path in ("[" * 5_000 + "]" * 5_000, '[["shared"]]', '["shared", 1.5]'):
            response = client.get(page, params={"checkpoint": checkpoint, "path": path})
            assert response.status_code == 400, (path[:20], response.status_code)
            assert "path must be a JSON list of keys and indexes" in response.text
        long = json.dumps([0] * 1_000)
        response = client.get(page, params={"checkpoint": checkpoint, "path": long})
        assert response.status_code == 400 and "at most" in response.text


# -- a checkpoint that does not decode -----------------------------------------------------------

#: a reference to a blob the store does not hold: the checkpoint does not decode
MISSING_BLOB = {"__plait__": "blob", "h": "ab" * 32}


@pytest.mark.parametrize("where", ["latest", "chosen"])
def test_a_checkpoint_that_does_not_decode_is_a_clear_error_page(
    tmp_path: Path, where: str
) -> None:
    """Issue 34 (N2's UI symptom): a checkpoint that does not decode made the run page a
    500. Every page that reads it says which run and checkpoint cannot be read, with a
    4xx and no traceback."""
    url = sqlite(tmp_path)
    run_id, checkpoint = stored_run(url, FOREACH_TOPOLOGY, state={"shared": MISSING_BLOB})
    query = {"checkpoint": checkpoint} if where == "chosen" else {}
    with signed_in(url) as client:
        pages = {
            "run": client.get(f"/runs/{run_id}", params=query),
            "value": client.get(
                f"/runs/{run_id}/value", params={"checkpoint": checkpoint, "path": '["shared"]'}
            ),
            "requests": client.get(f"/runs/{run_id}/requests"),
            "fork": post(client, f"/runs/{run_id}/fork", {"checkpoint": checkpoint}),
        }
        for name, response in pages.items():
            assert response.status_code == 422, (name, response.status_code)
            assert 'id="error-detail"' in response.text, name
            assert run_id in response.text and checkpoint in response.text, name
            assert "cannot be read" in response.text and "Traceback" not in response.text, name
        graph = client.get(f"/runs/{run_id}/graph.json", params=query)
        assert graph.status_code == 422
        assert run_id in graph.json()["error"] and checkpoint in graph.json()["error"]
        assert client.get("/").status_code == 200  # the runs page still lists it


# -- a fork's next step --------------------------------------------------------------------------


def test_a_fork_says_it_waits_to_be_resumed_and_resumes(tmp_path: Path) -> None:
    """Issue 34: a fork made in the page stayed ``running``, with no next step shown."""
    url = sqlite(tmp_path)
    workflow = chain(3)
    result = run(workflow, 0, url)
    with signed_in(url) as client:  # no --workflow: the page says how to resume it
        ids = checkpoint_ids(client.get(f"/runs/{result.run_id}").text)
        forked = post(client, f"/runs/{result.run_id}/fork", {"checkpoint": ids[1]})
        new_run = forked.headers["location"].rsplit("/", 1)[1]
        page = client.get(f"/runs/{new_run}").text
        assert 'id="run-status">not resumed<' in page
        assert 'id="fork-next"' in page and f"plait resume TARGET {new_run}" in page
        assert 'id="resume-button"' not in page
    with signed_in(url, workflow=workflow, answer_wait=5.0) as client:
        page = client.get(f"/runs/{new_run}").text
        assert 'id="resume-button"' in page
        resumed = post(client, f"/runs/{new_run}/resume", {})
        assert resumed.status_code == 303
        assert resumed.headers["location"] == f"/runs/{new_run}?follow=1"
        after = client.get(f"/runs/{new_run}").text
        assert 'id="run-status">idle<' in after and 'id="fork-next"' not in after
        assert re.search(r'id="section-outputs">\s*<pre class="value">\[\s*3\s*\]', after)
    with signed_in(url, workflow=workflow, read_only=True) as client:
        assert client.post(f"/runs/{new_run}/resume").status_code in (403, 404, 405)


def test_layers_stack_numbers_by_value_and_leave_boxes_to_their_nodes() -> None:
    from plait_ui._views import graph_elements, layered_positions

    topology = {
        "start": "each",
        "nodes": [["each", "steps.foreach"], ["each/gather", "steps.gather"]]
        + [[f"w{i}", "python"] for i in (10, 2, 1)],
        "edge_groups": [["g", "fan_out", ["each"], ["w10", "w2", "w1"], "{}"]]
        + [[f"h{i}", "direct", [f"w{i}"], ["each/gather"], "{}"] for i in (10, 2, 1)],
    }
    elements = graph_elements(topology, {})
    layered_positions(elements, "each")
    at = {e["data"]["id"]: e.get("position") for e in elements if "source" not in e["data"]}
    assert at["each/"] is None, "a box's place is its nodes'"
    assert [at[f"w{i}"]["y"] for i in (1, 2, 10)] == [0, 40, 80]
    assert at["each"]["x"] < at["w1"]["x"] < at["each/gather"]["x"]


def test_a_team_run_shows_its_conversation_as_a_transcript(tmp_path: Path) -> None:
    from plait_teams import Conversation, GroupChatBuilder

    async def writer(conversation: Conversation) -> str:
        return f"draft {len(conversation)} <b>bold</b>"

    async def critic(conversation: Conversation) -> str:
        return "looks fine"

    url = sqlite(tmp_path)
    team = GroupChatBuilder(unique("chat")).participants([writer, critic]).with_max_rounds(3)
    result = run(team.build(), "write a slogan", url)
    with signed_in(url) as client:
        page = client.get(f"/runs/{result.run_id}")
        assert page.status_code == 200
        transcript = page.text.split('id="transcript-1"', 1)[1].split("</section>", 1)[0]
        assert 'data-executor="manager"' in page.text
        authors = re.findall(r'<b class="author">([^<]*)</b>', transcript)
        assert authors == ["user", "writer", "critic", "writer"]
        assert "write a slogan" in transcript and "looks fine" in transcript
        # a message is text, never markup
        assert "<b>bold</b>" not in transcript and "&lt;b&gt;bold&lt;/b&gt;" in transcript
        # an earlier checkpoint shows the conversation as it was then
        first_turn = client.get(
            f"/runs/{result.run_id}", params={"checkpoint": checkpoint_ids(page.text)[2]}
        )
        early = first_turn.text.split('id="transcript-1"', 1)[1].split("</section>", 1)[0]
        assert re.findall(r'<b class="author">([^<]*)</b>', early) == ["user"]
    chain_run = run(chain(2), 0, url)
    with signed_in(url) as client:
        assert 'class="transcript"' not in client.get(f"/runs/{chain_run.run_id}").text


def test_a_team_s_human_turn_is_answered_here_and_joins_the_transcript(tmp_path: Path) -> None:
    from plait_teams import Conversation, GroupChatBuilder, human

    async def writer(conversation: Conversation) -> str:
        said = [m.text for m in conversation if m.author == "alice"]
        return f"revised after {said[-1]}" if said else "first draft"

    url = sqlite(tmp_path)
    team = (
        GroupChatBuilder(unique("review"))
        .participants([writer, human("alice", "reviews drafts")])
        .with_max_rounds(3)
        .build()
    )
    waiting = run(team, "a slogan", url)
    with signed_in(url, workflow=team) as client:
        page = client.get(f"/runs/{waiting.run_id}/requests")
        (request_id,) = re.findall(r'data-request-id="([^"]+)"', page.text)
        assert "alice" in page.text
        done = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "shorter"})
        assert done.status_code == 303
        after = client.get(f"/runs/{waiting.run_id}")
        assert 'id="run-status">idle<' in after.text
        transcript = after.text.split('id="transcript-1"', 1)[1].split("</section>", 1)[0]
        authors = re.findall(r'<b class="author">([^<]*)</b>', transcript)
        assert authors == ["user", "writer", "alice", "writer"]
        assert "revised after shorter" in transcript


def test_a_team_step_of_a_workflow_file_shows_its_inner_conversation(tmp_path: Path) -> None:
    import plait
    from plait_teams import Conversation, human

    async def writer(conversation: Conversation) -> str:
        return f"draft {len(conversation)}"

    step = {"id": "review", "type": "team", "mode": "group_chat"}
    step |= {"participants": ["writer", "alice"]}
    step["options"] = {"max_rounds": 3, "output": "conversation"}
    review = json.dumps({"workflow": [step]})  # a steps document (JSON is YAML)
    people = {"writer": writer, "alice": human("alice", "reviews drafts")}
    url = sqlite(tmp_path)
    workflow = plait.load(review, format="steps", executors=people)
    waiting = run(workflow, "otters", url)
    with signed_in(url, workflow=workflow) as client:
        # waiting on alice: the step's state holds the inner run, and its conversation
        page = client.get(f"/runs/{waiting.run_id}")
        transcript = page.text.split('id="transcript-1"', 1)[1].split("</section>", 1)[0]
        assert 'data-executor="review"' in page.text
        assert "executor_state/manager/conversation</code>)" in page.text  # where it is
        assert re.findall(r'<b class="author">([^<]*)</b>', transcript) == ["user", "writer"]
        (request_id,) = re.findall(
            r'data-request-id="([^"]+)"', client.get(f"/runs/{waiting.run_id}/requests").text
        )
        done = post(client, f"/runs/{waiting.run_id}/requests/{request_id}", {"answer": "ok"})
        assert done.status_code == 303
        # finished, the step keeps no state: the transcript is the answer's
        after = client.get(f"/runs/{waiting.run_id}")
        assert 'id="run-status">idle<' in after.text
        final = after.text.split('id="transcript-1"', 1)[1].split("</section>", 1)[0]
        assert 'data-executor="outputs"' in after.text
        authors = re.findall(r'<b class="author">([^<]*)</b>', final)
        assert authors == ["user", "writer", "alice", "writer"]


class PendingRuns:
    """A plugin listing runs that have no checkpoint yet (``plait_pending_runs``), as a
    task queue does: ``runs`` for any store, or an error."""

    def __init__(self, runs: list[Any], error: str | None = None) -> None:
        self.runs, self.error = runs, error
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    @hookimpl
    def plait_pending_runs(self, store: str, queues: Any) -> Any:
        self.asked.append((store, tuple(queues)))

        async def listed() -> list[Any]:
            if self.error is not None:
                raise RuntimeError(self.error)
            return self.runs

        return listed


def test_the_run_list_shows_runs_with_no_checkpoint_yet(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    from plait_durable import RunInfo

    url = sqlite(tmp_path)
    name = unique("wf")
    older = run(chain(1, name=name), 0, url).run_id
    queued_at = time.time() + 5  # queued after every stored run: listed first
    waiting = RunInfo(unique("q"), "app:flow", "queued", 0, 0, None, queued_at, queued_at)
    # a run the queue still lists but whose checkpoint exists: listed once, from it
    taken = RunInfo(older, "app:flow", "running", 0, 0, None, queued_at, queued_at)
    plugin = PendingRuns([waiting, taken])
    plait_register_plugin(plugin, "pending-runs")
    with signed_in(url) as client:
        page = client.get("/", params={"queue": "other"}).text
        only = client.get("/", params={"status": "queued"}).text
        filtered = client.get("/", params={"workflow": name}).text
    assert run_ids(page)[:2] == [waiting.run_id, older]
    assert run_ids(page).count(older) == 1
    row = page[page.index(f'data-run-id="{waiting.run_id}"') :].split("</tr>", 1)[0]
    assert 'class="run pending status-queued"' in page
    assert "not started" in row and "/runs/" not in row  # no page for a run with no checkpoint
    assert '<span class="status queued">queued</span>' in row and "app:flow" in row
    older_row = page[page.index(f'data-run-id="{older}"') :].split("</tr>", 1)[0]
    assert f'href="/runs/{older}"' in older_row and "idle" in older_row
    assert '<input type="hidden" name="queue" value="other">' in page
    assert plugin.asked[0] == (url, ("other",))
    assert run_ids(only) == [waiting.run_id]
    assert run_ids(filtered) == [older]  # the queued run's target is not this workflow


def test_a_pending_source_that_fails_is_a_warning_on_the_run_list(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    url = sqlite(tmp_path)
    done = run(chain(1, name=unique("wf")), 0, url).run_id
    plait_register_plugin(PendingRuns([], error="queue <server> unreachable"), "pending-runs")
    with signed_in(url) as client:
        response = client.get("/")
    assert response.status_code == 200
    assert run_ids(response.text) == [done]
    assert (
        "plugin &#39;pending-runs&#39; could not list its runs: queue &lt;server&gt; unreachable"
        in response.text
    )


def test_runs_with_no_checkpoint_yet_page_with_the_others_in_plait_runs_order(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    from plait_cli import merge_pending
    from plait_durable import RunInfo

    url = sqlite(tmp_path)
    name = unique("wf")
    for i in range(4):
        run(chain(1, name=name), i, url)

    async def stored() -> list[Any]:
        store = open_store(url)
        try:
            return list(await store.runs())
        finally:
            await store.aclose()

    infos = anyio.run(stored)  # newest first
    times = [info.updated_at for info in infos]
    # queued: after every stored run, between each two of them (two between the middle
    # ones, queued at the same moment), and before all of them
    moments = [
        times[0] + 5,
        (times[0] + times[1]) / 2,
        (times[1] + times[2]) / 2,
        (times[1] + times[2]) / 2,
        (times[2] + times[3]) / 2,
        times[3] - 5,
    ]
    queued = [RunInfo(unique("q"), "app:flow", "queued", 0, 0, None, at, at) for at in moments]
    plait_register_plugin(PendingRuns(queued), "pending-runs")
    expected = [info.run_id for info in merge_pending(infos, queued)]  # plait runs' order
    seen: list[str] = []
    with signed_in(url) as client:
        link: str | None = "/?limit=3"
        pages = 0
        while link is not None:
            page = client.get(html.unescape(link))
            assert page.status_code == 200, page.text
            assert 1 <= len(run_ids(page.text)) <= 3
            seen += run_ids(page.text)
            found = re.search(r'id="next-page" href="([^"]+)"', page.text)
            link = found.group(1) if found else None
            pages += 1
            assert pages < 10
    assert seen == expected  # each run once, queued ones on their own page, not the first
    assert pages == 4  # 10 runs, 3 a page


def test_a_run_with_no_checkpoint_yet_shows_the_columns_plugins_add(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    from plait_durable import RunInfo

    url = sqlite(tmp_path)
    at = time.time()
    waiting = RunInfo(
        unique("q"), "app:flow", "queued", 0, 0, None, at, at, metadata={"workflow": "queued"}
    )
    plait_register_plugin(PendingRuns([waiting]), "pending-runs")
    plait_register_plugin(RunColumns(), "run-columns")
    with signed_in(url) as client:
        page = client.get("/").text
    row = page[page.index(f'data-run-id="{waiting.run_id}"') :].split("</tr>", 1)[0]
    # what the plugin that listed it knows (a queue's run: its queue), as plait runs shows
    assert '<td class="column-workflow_again">&lt;queued&gt;</td>' in row
