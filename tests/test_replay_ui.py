"""``plait ui``'s replay report (plait-ui with plait-replay): a recorded run's page links
its replay report; the report replays the run with ``--workflow``'s code and shows the
first divergence — superstep, executor, the message's path, the value diff (a prompt diff
for a changed prompt) — beside the graph of the recorded checkpoint there, with the
executor marked; an equal replay says so; a run that was not recorded, or a server
without ``--workflow``, gets a clear refusal, never a 500."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import llm
import pytest
from plait import Workflow, WorkflowContext, executor
from plait.spi import compile_template
from plait_builders import WorkflowBuilder
from plait_llm import AgentExecutor
from plait_ui import UiSettings, make_app
from starlette.testclient import TestClient

TOKEN = "replay-ui-token"


class Echo(llm.Model):
    """Answers ``"noted: <prompt>"``."""

    model_id = "replay-ui-echo"

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
        yield f"noted: {prompt.prompt}"


class Models:
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(Echo())


@pytest.fixture(autouse=True)
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="replay-ui-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)


def desk(*, instruction: str = "Write about {{ input }}", suffix: str = "") -> Workflow:
    """``intake -> writer (a model) -> done``."""

    @executor(id="intake")
    async def intake(topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(topic + suffix)

    writer = AgentExecutor(
        "writer", llm.get_model("replay-ui-echo"), instruction=compile_template(instruction)
    )

    @executor(id="done")
    async def done(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(text)

    return (
        WorkflowBuilder(name="desk")
        .set_start(intake)
        .add_edge(intake, writer)
        .add_edge(writer, done)
        .build()
    )


def _run(workflow: Workflow, url: str, **options: Any) -> str:
    async def go() -> str:
        result = await workflow.run(
            "tides", checkpoint=url, run_id=f"r-{uuid.uuid4().hex}", **options
        )
        assert result.ok, result.error
        return str(result.run_id)

    return anyio.run(go)


@contextmanager
def signed_in(url: str, **options: Any) -> Iterator[TestClient]:
    settings = UiSettings(
        store=url, token=TOKEN, allowed_hosts=frozenset({"testserver"}), **options
    )
    with TestClient(make_app(settings), base_url="http://testserver") as client:
        assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        yield client


def test_an_equal_replay_and_the_link_from_the_run_page(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _run(desk(), url, record=True)
    plain = _run(desk(), url)
    with signed_in(url, workflow=desk()) as client:
        page = client.get(f"/runs/{run_id}")
        assert f'href="/runs/{run_id}/replay" id="replay-link"' in page.text
        assert 'id="replay-link"' not in client.get(f"/runs/{plain}").text  # not recorded
        report = client.get(f"/runs/{run_id}/replay")
        assert report.status_code == 200
        assert "equal to the record: 3 supersteps compared, 1 outside calls answered" in report.text
        assert 'id="divergence"' not in report.text
        refused = client.get(f"/runs/{plain}/replay")
        assert refused.status_code == 422
        assert "was not recorded" in refused.text
        assert client.get("/runs/no-such-run/replay").status_code == 404
    with signed_in(url) as client:  # no --workflow: the run page says it is recorded
        assert (
            'id="replay-link" title="start plait ui --workflow TARGET'
            in client.get(f"/runs/{run_id}").text
        )
        refused = client.get(f"/runs/{run_id}/replay")
        assert refused.status_code == 422
        assert "start plait ui with --workflow TARGET to replay runs" in refused.text


def test_a_changed_output_is_shown_with_its_diff_and_marked_on_the_graph(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _run(desk(), url, record=True)
    with signed_in(url, workflow=desk(suffix="!"), read_only=True) as client:
        report = client.get(f"/runs/{run_id}/replay")
        assert report.status_code == 200
        text = report.text
        assert (
            'diverged at superstep 1, executor <code id="diverged-executor">intake</code>' in text
        )
        assert 'id="divergence-path"' in text and "<th>to</th><td><code>writer</code>" in text
        # the value diff beside the graph: a JSON Patch, and the two values
        assert 'id="divergence-diff"' in text and "&#34;op&#34;: &#34;replace&#34;" in text
        assert "tides!" in text.split('id="value-replayed"', 1)[1].split("</pre>", 1)[0]
        assert "tides!" not in text.split('id="value-recorded"', 1)[1].split("</pre>", 1)[0]
        # the graph of the record at that superstep, the executor marked
        graph_url = text.split('<div id="graph" data-url="', 1)[1].split('"', 1)[0]
        graph_url = graph_url.replace("&amp;", "&")
        assert graph_url.endswith("&diverged=intake")
        graph = client.get(graph_url).json()
        classes = {
            e["data"]["id"]: e["classes"].split()
            for e in graph["elements"]
            if "source" not in e["data"]
        }
        assert "diverged" in classes["intake"]
        assert not any("diverged" in c for node, c in classes.items() if node != "intake")


def test_a_changed_prompt_is_shown_as_a_prompt_diff(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _run(desk(), url, record=True)
    with signed_in(url, workflow=desk(instruction="Write briefly about {{ input }}")) as client:
        text = client.get(f"/runs/{run_id}/replay").text
    assert 'diverged at superstep 2, executor <code id="diverged-executor">writer</code>' in text
    assert "The request against the nearest recorded one" in text
    assert '<span class="removed">-  &#34;prompt&#34;: &#34;Write about tides&#34;,</span>' in text
    assert (
        '<span class="added">+  &#34;prompt&#34;: &#34;Write briefly about tides&#34;,</span>'
        in text
    )
