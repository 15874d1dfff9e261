"""What a durable run records of the workflow document it was loaded from, whoever
starts it: the text its loader parsed (``plait_documents.source_document``), one blob
per version of the document per run, however many checkpoints and resumes the run has.
(A worker's run: plugins/plait-workers/tests/test_workers.py.)"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import plait
import pytest
from click.testing import CliRunner, Result
from plait import Executor, Never, WorkflowContext, handler
from plait_cli import make_cli
from plait_documents import SourceDocument, source_document
from plait_durable import DOCUMENT_KEY, blob_hash, opened_store, stored_document

pytestmark = pytest.mark.anyio


async def _echo(prompt: str) -> str:
    return prompt


async def _step(prompt: str) -> str:
    return "done"  # (a step's prompt holds the steps before it: echoed, it would double)


async def _context(context: dict[str, Any]) -> dict[str, Any]:
    return {}


class Echo(Executor):
    @handler
    async def echo(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(text)


def plait_cli(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


async def _latest_document(url: str, run_id: str) -> SourceDocument | None:
    async with opened_store(url) as store:
        latest = await store.latest(run_id)
        assert latest is not None
        return await stored_document(store, latest)


# -- a run started from Python records the document it was loaded from -------------------

STEPS = "name: one\nworkflow:\n  - {id: first, type: agent, name: echo}\n"
NODE = {"id": "a", "agent_name": "a", "is_entry": True, "is_exit": True}
DAG = json.dumps({"nodes": [NODE], "connections": []})
FLOW = "name: two\nflow: first -> second\n"
DOCUMENTS = {
    "steps": ("orders.yaml", STEPS, {"echo": _echo}),
    "dag": ("orders.json", DAG, {"a": _context}),
    "flow": ("orders.flow", FLOW, {"first": _echo, "second": _echo}),
}


@pytest.mark.parametrize("format", sorted(DOCUMENTS))
@pytest.mark.parametrize("given", ["path", "text"])
async def test_a_run_started_from_python_records_the_document_it_was_loaded_from(
    format: str, given: str, tmp_path: Path
) -> None:
    name, text, executors = DOCUMENTS[format]
    path = tmp_path / name
    path.write_text(text)
    if given == "path":
        workflow = plait.load(path, executors=executors)
    else:
        workflow = plait.load(text, format=format, executors=executors)
    source = source_document(workflow)
    assert source == SourceDocument(name if given == "path" else "<string>", format, text)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = await workflow.run("hi" if format != "dag" else {}, checkpoint=url)
    assert await _latest_document(url, result.run_id) == source


async def test_a_workflow_built_in_python_records_no_document(tmp_path: Path) -> None:
    from plait_builders import WorkflowBuilder

    workflow = WorkflowBuilder("py").add_executor(Echo("echo")).set_start("echo").build()
    assert source_document(workflow) is None
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = await workflow.run("hi", checkpoint=url)
    async with opened_store(url) as store:
        latest = await store.latest(result.run_id)
        assert latest is not None and DOCUMENT_KEY not in latest.metadata


async def test_checkpoint_metadata_cannot_set_the_document(tmp_path: Path) -> None:
    from plait import RunOptionError

    workflow = plait.load(STEPS, format="steps", executors={"echo": _echo})
    with pytest.raises(RunOptionError, match="may not set document"):
        await workflow.run("hi", checkpoint=f"sqlite:///{tmp_path / 'runs.db'}",
                           checkpoint_metadata={"document": {"name": "forged"}})  # fmt: skip


# -- one read: the bytes the loader parsed are the bytes recorded --------------------------


async def test_a_file_changed_after_loading_records_what_was_parsed(tmp_path: Path) -> None:
    path = tmp_path / "orders.yaml"
    path.write_text(STEPS)
    workflow = plait.load(path, executors={"echo": _echo})
    path.write_text(STEPS.replace("name: one", "name: changed on disk"))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    result = await workflow.run("hi", checkpoint=url)
    stored = await _latest_document(url, result.run_id)
    assert stored is not None and stored.text == STEPS


REWRITING = """\
from pathlib import Path

# importing this module (while the document is built) changes the document on disk
Path({path!r}).write_text(Path({path!r}).read_text().replace("shout", "whisper"))


async def shout(text: str) -> str:
    return text.upper()


async def whisper(text: str) -> str:
    return text.lower()
"""


def test_plait_run_records_the_bytes_it_parsed_not_a_second_reading(tmp_path: Path) -> None:
    """The file changes between ``plait run``'s reading of it and the run's first
    checkpoint (here: code the document names rewrites it as it is imported): the run
    records the version that ran."""
    module = f"rewrite_{uuid.uuid4().hex[:8]}"
    path = tmp_path / "flow.yaml"
    (tmp_path / f"{module}.py").write_text(REWRITING.format(path=str(path)))
    text = (
        "workflow:\n  - id: first\n    type: executor\n    kind: python\n"
        f'    config: {{ref: "{module}:shout"}}\n'
    )
    path.write_text(text)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        ran = plait_cli("run", str(path), "Hi", "--allow-imports", "--checkpoint", url)
    finally:
        sys.modules.pop(module, None)
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout.strip() == "HI"  # the version read ran
    assert "whisper" in path.read_text()  # and the file on disk is another one now
    (run_id,) = re.findall(r"run id: ([0-9a-f]{32})", ran.stderr)
    stored = anyio.run(_latest_document, url, run_id)
    assert stored is not None and stored.text == text


# -- pin, for a run started from Python -----------------------------------------------------

V1 = f"""\
name: pinned
workflow:
  - id: first
    type: executor
    kind: shell
    config:
      argv: ["{sys.executable}", "-c", "import sys; print(sys.stdin.read().strip().upper())"]
      input: message
  - id: second
    type: executor
    kind: shell
    config:
      argv: ["{sys.executable}", "-c", "import sys; print('v1', sys.stdin.read().split()[-1])"]
      input: message
"""


def test_pin_resumes_a_run_started_from_python_on_its_document(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(V1)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    workflow = plait.load(flow, allow="subprocess")
    stopped = workflow.run_sync("hi", checkpoint=url, max_supersteps=1, raise_on_failure=False)
    flow.write_text(V1.replace("'v1'", "'v2'"))  # the deploy
    common = ["resume", str(flow), stopped.run_id, "--checkpoint", url, "--allow", "subprocess",
              "-q", "--on-change", "pin"]  # fmt: skip
    refused = plait_cli(*common)  # an unsigned store: the user vouches for it, or nothing runs
    assert refused.exit_code == 1 and "PinnedRunError" in refused.stderr
    assert re.search(r"^\+.*'v1'", refused.stderr, re.M)
    ran = plait_cli(*common, "--run-stored-document")
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout.strip().endswith("v1 hi")


# -- once per version -----------------------------------------------------------------------


class CountingStore:
    """A real store (the one ``plait_store_url`` names), and the blobs every save hands
    it: what was written, not only what the store keeps (a store keeps a blob written
    twice once)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.written: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()

    def _count(self, blobs: Mapping[str, bytes] | None) -> None:
        for digest, data in (blobs or {}).items():
            self.written[digest] += 1
            self.bytes[digest] += len(data)

    async def save(self, checkpoint: Any, **options: Any) -> None:
        self._count(options.get("blobs"))
        await self.store.save(checkpoint, **options)

    async def save_many(self, checkpoints: Any, **options: Any) -> None:
        self._count(options.get("blobs"))
        await self.store.save_many(checkpoints, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


FIFTY = "name: fifty\nworkflow:\n" + "".join(
    f"  - {{id: s{i}, type: agent, name: step}}\n" for i in range(50)
)


def _document_blob(text: str) -> str:
    return blob_hash(json.dumps(text, separators=(",", ":"), ensure_ascii=False).encode())


async def test_a_run_stores_each_version_of_its_document_once(
    plait_store_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "fifty.yaml"
    path.write_text(FIFTY)
    v1 = plait.load(path, executors={"step": _step})
    v2_text = FIFTY + "# version 2: the same steps, another document\n"
    one, two = _document_blob(FIFTY), _document_blob(v2_text)
    async with opened_store(plait_store_url) as real:
        store = CountingStore(real)
        # started, then resumed four times (each part stopped by its superstep limit)
        started = await v1.run("hi", checkpoint=store, max_supersteps=10, raise_on_failure=False)
        run_id = started.run_id
        for limit in (20, 30, 40):
            await v1.resume(run_id, store, max_supersteps=limit, raise_on_failure=False)
        # the document changes: the last resume runs (and records) version 2
        path.write_text(v2_text)
        v2 = plait.load(path, executors={"step": _step})
        done = await v2.resume(run_id, store, accept_changes=True, max_supersteps=100)
        assert done.status.value == "idle" and done.outputs == ["done"]
        infos = await real.list(run_id)
        assert len(infos) >= 50
        named = Counter()
        for info in infos:
            checkpoint = await real.load(info.checkpoint_id)
            named[checkpoint.metadata[DOCUMENT_KEY]["text"]["h"]] += 1
        assert set(named) == {one, two} and sum(named.values()) == len(infos)
        # each version handed to the store once, with the checkpoint that first named it
        assert store.written[one] == 1 and store.written[two] == 1
        assert sum(store.bytes[h] for h in (one, two)) < 2 * len(FIFTY) + 100
        assert {one, two} <= set(await real.blob_hashes(run_id))
        latest = await real.latest(run_id)
        assert latest is not None
        stored = await stored_document(real, latest)
        assert stored is not None and stored.text == v2_text
        # a prune keeps the blob of each version a kept checkpoint names: here the run's
        # first checkpoint (a prune keeps it) names version 1, the others version 2
        await real.prune(run_id, keep_last=named[two])
        kept = [await real.load(info.checkpoint_id) for info in await real.list(run_id)]
        assert len(kept) == named[two] + 1
        assert [c.metadata[DOCUMENT_KEY]["text"]["h"] for c in kept] == [one] + [two] * named[two]
        assert {one, two} <= set(await real.blob_hashes(run_id))
        first = await stored_document(real, kept[0])
        assert first is not None and first.text == FIFTY


def test_plait_run_with_a_placement_records_the_document(tmp_path: Path) -> None:
    """``--placement`` runs a copy of the loaded workflow (``with_placement``): the copy
    carries the document too."""
    path = tmp_path / "cat.yaml"
    text = "name: cat\nworkflow:\n  - {id: a, type: executor, kind: shell, config: {argv: [cat]}}\n"
    path.write_text(text)
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    ran = plait_cli("run", str(path), "hi", "--allow", "subprocess", "--placement", "local",
                    "--checkpoint", url)  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    (run_id,) = re.findall(r"run id: ([0-9a-f]{32})", ran.stderr)
    assert anyio.run(_latest_document, url, run_id) == SourceDocument("cat.yaml", "steps", text)


async def test_a_migrated_run_adds_the_new_version_of_its_document_once(
    plait_store_url: str,
) -> None:
    """A run of a flow document migrated from version 1 to 2: the migration's checkpoint
    names version 1's document (the run it copies ran it), the resumed run's version 2's;
    each blob is handed to the store once."""
    from plait import get_plugin_manager
    from plait_versions import register_migration, resume
    from test_migrations import one_to_two
    from test_version_documents import _flow

    register_migration("shop", 1, one_to_two)
    try:
        v1 = _flow(1, "intake -> review")
        v2 = _flow(2, "intake -> review -> audit")
        one, two = (_document_blob(source_document(w).text) for w in (v1, v2))  # type: ignore[union-attr]
        async with opened_store(plait_store_url) as real:
            store = CountingStore(real)
            started = await v1.run("order-a", checkpoint=store)
            (request,) = started.pending_requests
            done = await resume(v2, started.run_id, store, on_change="migrate",
                                responses={request.request_id: True})  # fmt: skip
            assert done.outputs == ["v2 audited order-a True"]
            names = []
            for info in await real.list(started.run_id):
                checkpoint = await real.load(info.checkpoint_id)
                names.append(checkpoint.metadata[DOCUMENT_KEY]["text"]["h"])
            assert names[0] == one and names[-1] == two and set(names) == {one, two}
            assert store.written[one] == 1 and store.written[two] == 1
            assert {one, two} <= set(await real.blob_hashes(started.run_id))
    finally:
        get_plugin_manager().unregister("migration:shop@1")
