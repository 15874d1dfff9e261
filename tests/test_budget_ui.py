"""``plait ui``'s run page with plait-budgets: a budgeted run's page shows a bar per unit
its budget limits and the spend of each node, from the ledger of the checkpoint the page
shows (through the ``plait_run_panels`` hook, which plait-budgets answers); a run without
a budget shows no panel; what a panel says is escaped, and a plugin whose panel raises
gets a panel saying so, not a broken page."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import llm
import plait
import pytest
from plait import Never, Workflow, WorkflowContext, executor
from plait.spi import BuildContext
from plait_budgets import Budget, Price
from plait_builders import WorkflowBuilder
from plait_llm import AgentKind
from plait_testing import RegisterPlugin
from plait_ui import UiSettings, make_app
from starlette.testclient import TestClient

TOKEN = "budget-ui-token"
MODEL = "budget-ui-model"


class Metered(llm.Model):
    """Answers ``"ok"``, reporting the prompt's words in and 5 tokens out."""

    model_id = MODEL
    can_stream = False

    class Options(llm.Options):
        max_tokens: int | None = None

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
        response.set_usage(input=len(prompt.prompt.split()), output=5)
        yield "ok"


class Models:
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(Metered())


class Prices:
    @plait.hookimpl
    def plait_register_prices(self, register: Any) -> None:
        register(MODEL, Price(input=1_000.0, output=2_000.0))  # $0.001 a token in, $0.002 out


@pytest.fixture(autouse=True)
def models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plait_register_plugin: RegisterPlugin
) -> Iterator[None]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plait_register_plugin(Prices(), "budget-ui-prices")
    plugin = Models()
    llm.plugins.pm.register(plugin, name="budget-ui-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)


def review() -> Workflow:
    """``writer`` and ``critic`` (agents on the metered model), then ``done``."""
    kind = AgentKind()
    writer, critic = (
        kind.create({"model": MODEL, "options": {"max_tokens": 10}}, BuildContext(node_id=i))
        for i in ("writer", "critic")
    )

    @executor(id="done")
    async def done(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    builder = WorkflowBuilder("review").set_start(writer)
    builder.add_edge(writer, critic).add_edge(critic, done)
    return builder.build()


def _run(url: str, **options: Any) -> str:
    async def go() -> str:
        result = await review().run(
            "draft", checkpoint=url, run_id=f"r-{uuid.uuid4().hex}", **options
        )
        assert result.ok, result.error
        return str(result.run_id)

    return anyio.run(go)


@contextmanager
def signed_in(url: str) -> Iterator[TestClient]:
    settings = UiSettings(store=url, token=TOKEN, allowed_hosts=frozenset({"testserver"}))
    with TestClient(make_app(settings), base_url="http://testserver") as client:
        assert client.get(f"/?token={TOKEN}", follow_redirects=False).status_code == 303
        yield client


def _panel(html: str) -> str:
    found = re.search(r'<section class="run-panel" id="panel-budget">(.*?)</section>', html, re.S)
    assert found is not None, html
    return found.group(1)


def test_a_budgeted_run_s_page_shows_a_bar_per_limited_unit_and_the_spend_per_node(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    budgeted = _run(url, budget=Budget(usd=1, tokens=100, model_calls=4))
    free = _run(url)
    with signed_in(url) as client:
        page = client.get(f"/runs/{budgeted}")
        assert page.status_code == 200
        panel = _panel(page.text)
        # each agent: "draft" (1 word) in, 5 out, $0.001 + $0.010; the run: twice that
        bars = dict(
            re.findall(r'data-unit="(\w+)">.*?<span class="bar-text">([^<]*)</span>', panel, re.S)
        )
        assert bars == {
            "tokens": "12 of 100 tokens",
            "usd": "$0.02 of $1.00",
            "model_calls": "2 of 4 model calls",
        }
        assert re.search(r'data-unit="model_calls">.*?<meter [^>]*value="50.0"', panel, re.S)
        rows = re.findall(r"<tr><td>(\w+)</td><td>(\d+)</td><td>(\d+)</td><td>(\d+)</td>", panel)
        assert sorted(rows) == [("critic", "1", "1", "5"), ("writer", "1", "1", "5")]
        assert panel.count("<td>$0.0110</td>") == 2
        # an earlier checkpoint of the run: the spend as of then (the writer's call alone)
        ids = re.findall(r'"([0-9a-f]{32})"', page.text.split('id="checkpoint-ids">', 1)[1])
        early = _panel(client.get(f"/runs/{budgeted}?checkpoint={ids[1]}").text)
        assert "1 of 4 model calls" in early and "critic" not in early
        plain = client.get(f"/runs/{free}")
        assert plain.status_code == 200 and 'class="run-panel"' not in plain.text


class Hostile:
    """A plugin whose panel says markup, and one whose panel raises."""

    @plait.hookimpl
    def plait_run_panels(self, metadata: Any) -> Any:
        return {
            "loud": {
                "title": "<script>alert(1)</script>",
                "bars": [{"label": "x", "fraction": 7.5, "text": "<b>over</b>"}],
                "columns": ["node"],
                "rows": [["<img src=x onerror=alert(1)>"]],
            }
        }


class Broken:
    @plait.hookimpl
    def plait_run_panels(self, metadata: Any) -> Any:
        raise RuntimeError("no panel today")


def test_a_panel_is_escaped_and_one_that_raises_says_so(
    tmp_path: Path, plait_register_plugin: RegisterPlugin
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _run(url)
    plait_register_plugin(Hostile(), "budget-ui-hostile")
    plait_register_plugin(Broken(), "budget-ui-broken")
    with signed_in(url) as client:
        page = client.get(f"/runs/{run_id}")
        assert page.status_code == 200
        assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
        assert "<img src=x" not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
        assert '<meter min="0" max="100" low="75" high="95" optimum="0" value="100.0"' in page.text
        broken = re.search(r'id="panel-budget-ui-broken">(.*?)</section>', page.text, re.S)
        assert broken is not None and "no panel today" in broken.group(1)
