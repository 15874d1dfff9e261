"""A checkpoint records the workflow's fingerprint; resuming a changed workflow is refused,
naming what changed, unless the change is accepted (``accept_changes=True``)."""

from __future__ import annotations

import importlib
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import plait
import pytest
from plait import Never, RunOptionError, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import TopologyMismatchError, WorkflowChangedError, open_store
from plait_durable._fingerprint import FINGERPRINT_FORMAT, fingerprint_changes

pytestmark = pytest.mark.anyio

FLOW = """\
workflow:
  - id: first
    type: executor
    kind: shell
    config:
      argv: ["{python}", "-c", "import sys; print(sys.stdin.read().upper())"]
      input: message
  - id: ask
    type: executor
    kind: python
    config: {{ref: "{module}:mark"}}
"""

MODULE = """\
from typing import Any

from plait import Never, WorkflowContext, executor


@executor(id="mark")
async def mark(text: Any, ctx: WorkflowContext[Never, str]) -> None:
    await ctx.yield_output("{word}")
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh importable module holding the ``mark`` executor, its source rewritable."""
    name = f"fp_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(MODULE.format(word="done"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def flow(module: str, **replace: str) -> plait.Workflow:
    text = FLOW.format(python=sys.executable, module=module)
    for old, new in replace.items():
        text = text.replace(old, new)
    return plait.load(text, format="steps", allow_imports=True, allow="subprocess")


async def waiting_run(workflow: plait.Workflow) -> tuple[str, str]:
    """A run of ``workflow`` stopped after its first superstep: ``ask`` still to run."""
    url = f"memory://{uuid.uuid4().hex}"
    stop = threading.Event()
    stop.set()
    result = await workflow.run("hi", checkpoint=url, stop=stop)
    assert result.status.value == "running"
    return url, result.run_id


async def test_a_changed_config_is_refused_naming_the_node_and_field(module: str) -> None:
    url, run_id = await waiting_run(flow(module))
    evil = flow(module, **{'"import sys; print(sys.stdin.read().upper())"': '"print(1)"'})
    assert evil.signature() == flow(module).signature()  # the same shape: topology passes
    with pytest.raises(WorkflowChangedError) as info:
        await evil.resume(run_id, url)
    message = str(info.value)
    assert f"run {run_id} (checkpoint " in message and "different workflow" in message
    assert "node 'first' config.config.argv: [" in message and '"print(1)"]' in message
    assert info.value.changes == [message.split("different workflow: ")[1].split(". Resume")[0]]
    assert isinstance(info.value, TopologyMismatchError)
    with pytest.raises(WorkflowChangedError):  # nor are its requests listed
        await evil.pending_requests(run_id, url)


async def test_a_changed_inner_kind_is_refused(module: str) -> None:
    url, run_id = await waiting_run(flow(module))
    text = FLOW.format(python=sys.executable, module=module)
    http = text.replace("kind: shell", "kind: http").replace(
        f'argv: ["{sys.executable}", "-c", "import sys; print(sys.stdin.read().upper())"]\n'
        "      input: message",
        'url: "http://127.0.0.1:9/admin"',
    )
    other = plait.load(http, format="steps", allow_imports=True, allow="network")
    with pytest.raises(WorkflowChangedError, match='node \'first\' config.kind: "shell" → "http"'):
        await other.resume(run_id, url)


async def test_accept_changes_resumes_and_the_next_checkpoint_records_the_new_fingerprint(
    module: str,
) -> None:
    url, run_id = await waiting_run(flow(module))
    changed = flow(module, **{"upper()": "lower()"})
    store = open_store(url)
    before = await store.latest(run_id)
    assert before is not None
    assert before.metadata["fingerprint"]["digest"] == flow(module).fingerprint["digest"]
    assert changed.fingerprint["digest"] != flow(module).fingerprint["digest"]
    assert (await changed.pending_requests(run_id, url, accept_changes=True)) == []
    done = await changed.resume(run_id, url, accept_changes=True)
    assert done.outputs == ["done"]
    after = await store.latest(run_id)
    assert after is not None and after.checkpoint_id != before.checkpoint_id
    assert after.metadata["fingerprint"]["digest"] == changed.fingerprint["digest"]
    # and from then on the changed workflow is the one that resumes without a flag
    assert (await changed.pending_requests(run_id, url)) == []


async def test_a_changed_source_is_refused_naming_the_code(module: str, tmp_path: Path) -> None:
    url, run_id = await waiting_run(flow(module))
    (tmp_path / f"{module}.py").write_text(MODULE.format(word="pwned"))
    importlib.invalidate_caches()
    importlib.reload(sys.modules[module])
    reloaded = flow(module)
    assert reloaded.signature() == flow(module).signature()
    with pytest.raises(WorkflowChangedError, match=f"node 'ask': source of {module}:mark changed"):
        await reloaded.resume(run_id, url)


async def test_the_fingerprint_names_code_and_its_source_hash_and_excludes_placement(
    module: str,
) -> None:
    workflow = flow(module)
    node = workflow.fingerprint["nodes"]["ask"]
    assert node["code"][f"{module}:mark"].startswith("sha256:")
    assert workflow.fingerprint["format"] == FINGERPRINT_FORMAT
    from plait.spi import with_placement

    assert with_placement(workflow, "local").fingerprint == workflow.fingerprint
    workflow.fingerprint["digest"] = "changed"  # a copy: the workflow's own stays
    assert workflow.fingerprint["digest"] != "changed"


async def test_a_checkpoint_without_a_fingerprint_is_refused_unless_accepted(module: str) -> None:
    url, run_id = await waiting_run(flow(module))
    store = open_store(url)
    latest = await store.latest(run_id)
    assert latest is not None
    metadata = {k: v for k, v in latest.metadata.items() if k != "fingerprint"}
    await store.save(
        attrs.evolve(
            latest,
            checkpoint_id=uuid.uuid4().hex,
            metadata=metadata,
            parent_id=latest.checkpoint_id,
            created_at=latest.created_at + 1,
        )
    )
    with pytest.raises(WorkflowChangedError, match="records no workflow fingerprint"):
        await flow(module).resume(run_id, url)
    done = await flow(module).resume(run_id, url, accept_changes=True)
    assert done.outputs == ["done"]


def test_a_forged_fingerprint_is_quoted_safely_and_never_breaks_the_diff() -> None:
    new: dict[str, Any] = {
        "format": 1,
        "digest": "b" * 64,
        "workflow": {"start": "a", "retry": None, "timeout": None},
        "nodes": {"a": {"digest": "c" * 64, "kind": "python", "config": {}, "code": {}}},
        "edges": {},
        "types": {"names": [], "digest": "d" * 64},
    }
    forged = {
        "format": 1,
        "digest": "a" * 64,
        "workflow": "not a dict",
        "nodes": {"a": 5, "\x1b[31mred": {"digest": 1}},
        "edges": [],
        "types": {"names": "x"},
    }
    changes = fingerprint_changes(forged, new)
    text = "; ".join(changes)
    assert "\x1b" not in text and "\\x1b[31mred" in text
    assert "node 'a' kind: null → \"python\"" in text and "removed" in text
    assert fingerprint_changes({"format": 99}, new) == ["fingerprint format 99 → 1"]
    assert fingerprint_changes(None, new) == ["the checkpoint records no workflow fingerprint"]


def test_run_options_may_not_set_the_fingerprint() -> None:
    from plait import get_plugin_manager
    from plait.spi import RunOptions

    with pytest.raises(RunOptionError, match="may not set fingerprint"):
        RunOptions.from_kwargs(
            {}, {"checkpoint_metadata": {"fingerprint": {"digest": "x"}}}, get_plugin_manager()
        )


def test_code_whose_source_cannot_be_read_has_no_source_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from plait_durable._fingerprint import source_digest

    page = tmp_path / "page.md"
    page.write_text("# a page, not Python: it's `code`\n\nclass Thing:\n    '\n")
    name = f"page_{uuid.uuid4().hex[:8]}"
    module = types.ModuleType(name)
    module.__file__ = str(page)
    module.Thing = type("Thing", (), {"__module__": name})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    assert source_digest(f"{name}:Thing") is None
    assert source_digest(f"{name}:missing") is None
    assert source_digest("not_imported_anywhere_xyz:thing") is None
    assert "not_imported_anywhere_xyz" not in sys.modules  # nothing imported to read it


def test_config_values_under_secret_looking_keys_are_recorded_as_digests_only() -> None:
    import json

    document = """\
workflow:
  - id: score
    type: executor
    kind: http
    config:
      url: "https://api.example.org/v1/score"
      headers: {authorization: "Bearer sk-live-0123456789"}
"""
    workflow = plait.load(document, format="steps", allow="network")
    recorded = workflow.fingerprint
    assert "sk-live-0123456789" not in json.dumps(recorded)
    config = recorded["nodes"]["score"]["config"]
    assert config["config.url"] == "https://api.example.org/v1/score"
    assert set(config["config.headers.authorization"]) == {"sha256"}
    rotated = plait.load(
        document.replace("0123456789", "9876543210"), format="steps", allow="network"
    )
    (change,) = fingerprint_changes(recorded, rotated.fingerprint)
    assert change.startswith("node 'score' config.config.headers.authorization: (sha256 ")


SCRIPT = """\
import json
import sys

import attrs
from plait import Executor, Never, WorkflowContext, executor, handler
from plait_builders import WorkflowBuilder


@attrs.define
class Question:
    text: str


@executor(id="ask")
async def ask(text: str, ctx: WorkflowContext[str]) -> None:
    await ctx.send_message(text)


class Review(Executor):
    request_types = (Question,)

    @handler
    async def review(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(Question(text), bool)


workflow = WorkflowBuilder("review").add_edge(ask, Review("review")).set_start(ask).build()

if __name__ == "__main__":
    json.dump(workflow.fingerprint, sys.stdout)
"""


def test_a_script_and_the_same_module_imported_have_one_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python app.py`` starts the run, ``plait resume app.py:workflow`` imports ``app``:
    code, source hashes and types are named by the module either way."""
    import json
    import subprocess

    name = f"app_{uuid.uuid4().hex[:8]}"
    script = tmp_path / f"{name}.py"
    script.write_text(SCRIPT)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    as_script = json.loads(ran.stdout)
    monkeypatch.syspath_prepend(str(tmp_path))
    imported = importlib.import_module(name).workflow.fingerprint
    sys.modules.pop(name, None)
    assert as_script == imported
    assert imported["nodes"]["ask"]["code"][f"{name}:ask"].startswith("sha256:")
    assert imported["nodes"]["review"]["types"]["declared"] == [f"{name}.Question"]


def test_a_wrapped_workflow_is_part_of_its_nodes_fingerprint() -> None:
    @executor(id="inner")
    async def polite(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"please, {text}")

    @executor(id="inner")
    async def curt(text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)

    def outer(inside: Any) -> plait.Workflow:
        inner = WorkflowBuilder("inner").add_executor(inside).set_start(inside).build()
        wrapped = inner.as_executor("wrapped", allow_direct_output=True)
        return WorkflowBuilder("outer").add_executor(wrapped).set_start(wrapped).build()

    before, after = outer(polite).fingerprint, outer(curt).fingerprint
    assert (
        before["nodes"]["wrapped"]["nested"]
        == WorkflowBuilder("inner")
        .add_executor(polite)
        .set_start(polite)
        .build()
        .fingerprint["digest"]
    )
    assert before["digest"] != after["digest"]
    changes = fingerprint_changes(before, after)
    assert any(change.startswith("node 'wrapped' nested: ") for change in changes), changes
