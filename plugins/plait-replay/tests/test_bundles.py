"""Run bundles: a recorded run exported to one file and imported into another store
replays there; a signed bundle is refused under another key, altered, or without its key;
a redacted bundle holds no trace of what was redacted and replays with the placeholders."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from click.testing import CliRunner
from plait import WorkflowContext, executor
from plait.spi import compile_template
from plait_builders import WorkflowBuilder
from plait_cli import make_cli
from plait_llm import AgentExecutor
from plait_replay import BundleError, export_bundle, import_bundle, read_recording, replay
from replay_helpers import Models, research_workflow

pytestmark = pytest.mark.anyio


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Models]:
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="plait-replay-bundle-models")
    try:
        yield plugin
    finally:
        llm.plugins.pm.unregister(plugin)


async def _recorded(store: str) -> str:
    result = await research_workflow().run("tides", checkpoint=store, record=True)
    assert result.ok, result.error
    return str(result.run_id)


async def test_a_bundle_replays_in_another_store(models: Models, tmp_path: Path) -> None:
    here, there = f"sqlite:///{tmp_path / 'here.db'}", f"file://{tmp_path / 'there'}"
    run_id = await _recorded(here)
    bundle = tmp_path / "run.plait"
    info = await export_bundle(here, run_id, bundle)
    assert (info.run_id, info.signed, info.checkpoints) == (run_id, False, 6)
    with zipfile.ZipFile(bundle) as opened:
        assert sorted(opened.namelist()) == ["checkpoints.json", "manifest.json"]
    imported = await import_bundle(bundle, there)
    assert imported.run_id == run_id
    report = await replay(research_workflow(), run_id, there)
    assert report.equal, report.text()
    assert len(models.writer.prompts) == 1  # recorded once, never asked again
    with pytest.raises(BundleError, match=f"holds a run '{run_id}' already"):
        await import_bundle(bundle, there)
    again = await import_bundle(bundle, there, run_id="copy")
    assert (await replay(research_workflow(), again.run_id, there)).equal


async def test_a_bundle_signed_with_one_key_is_refused_under_another(
    models: Models, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = await _recorded(store)
    bundle = tmp_path / "signed.plait"
    await export_bundle(store, run_id, bundle, key=b"key one")
    target = f"memory://bundles-{tmp_path.name}"
    with pytest.raises(BundleError, match="does not verify under this key"):
        await import_bundle(bundle, target, key=b"key two")
    with pytest.raises(BundleError, match="is signed: give its key"):
        await import_bundle(bundle, target)
    assert (await import_bundle(bundle, target, key=b"key one")).signed
    # altered after signing: refused under the right key too
    altered = tmp_path / "altered.plait"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(altered, "w") as copy:
        for name in source.namelist():
            data = source.read(name)
            if name == "checkpoints.json":
                data = data.replace(b"noted: ", b"NOTED: ")
            copy.writestr(name, data)
    with pytest.raises(BundleError, match="signed with another key, or altered since"):
        await import_bundle(altered, f"{target}-2", key=b"key one")
    unsigned = tmp_path / "unsigned.plait"
    await export_bundle(store, run_id, unsigned)
    with pytest.raises(BundleError, match="is not signed, and a key was given"):
        await import_bundle(unsigned, f"{target}-3", key=b"key one")


async def test_a_bundle_carries_the_run_s_event_journal(models: Models, tmp_path: Path) -> None:
    from plait_durable import read_journal

    here, there = f"sqlite:///{tmp_path / 'here.db'}", f"file://{tmp_path / 'there'}"
    result = await research_workflow().run("tides", checkpoint=here, record=True, journal=True)
    assert result.ok, result.error
    run_id = str(result.run_id)

    def said(events: Any) -> list[tuple[Any, ...]]:
        return [(e.kind, e.superstep, e.executor, e.index, e.status) for e in events]

    recorded = said(await read_journal_of(here, run_id, read_journal))
    assert ("invocation_finished", 2, "writer", 0, "ok") in recorded
    assert recorded[-1] == ("run_finished", 5, None, None, "idle")
    bundle = tmp_path / "journaled.plait"
    info = await export_bundle(here, run_id, bundle, key=b"key one")
    assert info.journal == len(recorded)
    with zipfile.ZipFile(bundle) as opened:
        assert "journal.json" in opened.namelist()
    imported = await import_bundle(bundle, there, key=b"key one")
    assert imported.journal == len(recorded)
    assert said(await read_journal_of(there, run_id, read_journal)) == recorded
    assert (await replay(research_workflow(), run_id, there)).equal
    # the journal is signed with the rest: altered, or taken out, the bundle is refused
    for change in ("alter", "drop"):
        copied = tmp_path / f"{change}.plait"
        with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(copied, "w") as copy:
            for name in source.namelist():
                data = source.read(name)
                if name == "journal.json":
                    if change == "drop":
                        continue
                    data = data.replace(b'"ok"', b'"failed"', 1)
                copy.writestr(name, data)
        with pytest.raises(BundleError, match="signed with another key, or altered since"):
            await import_bundle(
                copied, f"memory://journal-{change}-{tmp_path.name}", key=b"key one"
            )
    # unsigned and damaged: a journal that is not one is refused, naming the event
    damaged = tmp_path / "damaged.plait"
    await export_bundle(here, run_id, tmp_path / "plain.plait")
    with zipfile.ZipFile(tmp_path / "plain.plait") as source, zipfile.ZipFile(damaged, "w") as copy:
        for name in source.namelist():
            data = source.read(name)
            if name == "journal.json":
                data = data.replace(b'"kind":"run_finished"', b'"kind":"run_exploded"')
            copy.writestr(name, data)
    with pytest.raises(BundleError, match="kind is not one of"):
        await import_bundle(damaged, f"memory://journal-damaged-{tmp_path.name}")


async def read_journal_of(store: str, run_id: str, read_journal: Any) -> Any:
    from plait_durable import opened_store

    async with opened_store(store) as opened:
        return await read_journal(opened, run_id)


def _asking() -> Any:
    """``intake`` (a dict with the user's e-mail) -> ``writer`` (a model) -> ``done``."""

    @executor(id="intake")
    async def intake(ticket: dict[str, Any], ctx: WorkflowContext[dict[str, Any]]) -> None:
        await ctx.set_shared_state("contact", ticket["email"])
        await ctx.send_message(ticket)

    writer = AgentExecutor(
        "writer",
        llm.get_model("replay-test-writer"),
        instruction=compile_template("Reply to {{ input.email }}: {{ input.question }}"),
    )

    @executor(id="done")
    async def done(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(text)

    return (
        WorkflowBuilder().set_start(intake).add_edge(intake, writer).add_edge(writer, done).build()
    )


async def test_a_redacted_bundle_replays_with_the_placeholders(
    models: Models, tmp_path: Path
) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    ticket = {"email": "ada@example.org", "question": "where is my order?"}
    result = await _asking().run(ticket, checkpoint=store, record=True)
    assert result.outputs == ["noted: Reply to ada@example.org: where is my order?"]
    bundle = tmp_path / "redacted.plait"
    info = await export_bundle(store, result.run_id, bundle, redact=["$..email"])
    assert info.redacted == (
        {"path": "$..email", "matched": 1, "placeholders": ["[redacted:str:1]"]},
    )
    with zipfile.ZipFile(bundle) as opened:
        everything = b"".join(opened.read(name) for name in opened.namelist())
    assert b"ada@example.org" not in everything
    manifest = json.loads(zipfile.ZipFile(bundle).read("manifest.json"))
    assert manifest["redacted"][0]["path"] == "$..email"
    target = f"file://{tmp_path / 'elsewhere'}"
    await import_bundle(bundle, target)
    recording = await read_recording(target, result.run_id)
    assert recording.input == [{"email": "[redacted:str:1]", "question": "where is my order?"}]
    report = await replay(_asking(), result.run_id, target)
    assert report.equal, report.text()
    final = recording.states[max(recording.states)]
    assert "[redacted:str:1]" in json.dumps(final)


async def test_a_redaction_names_what_it_cannot_replace(models: Models, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = await _recorded(store)
    with pytest.raises(BundleError, match=r"--redact '\$\.\.observed' matches .* a dict"):
        await export_bundle(store, run_id, tmp_path / "x.plait", redact=["$..observed"])
    with pytest.raises(BundleError, match=r"--redact '\$\.\[' is not a JSONPath"):
        await export_bundle(store, run_id, tmp_path / "x.plait", redact=["$.["])


async def test_what_is_not_a_bundle_is_refused(tmp_path: Path) -> None:
    not_zip = tmp_path / "notes.plait"
    not_zip.write_text("hello")
    with pytest.raises(BundleError, match="cannot be read"):
        await import_bundle(not_zip, "memory://nothing")
    other = tmp_path / "other.plait"
    with zipfile.ZipFile(other, "w") as opened:
        opened.writestr("manifest.json", json.dumps({"format": "something else"}))
        opened.writestr("checkpoints.json", "[]")
    with pytest.raises(BundleError, match="is not a Plait run bundle"):
        await import_bundle(other, "memory://nothing")


def test_plait_export_and_import(
    models: Models, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = anyio.run(_recorded, store)
    bundle = tmp_path / "run.plait"
    monkeypatch.setenv("TEAM_KEY", "s3cret")
    exported = CliRunner().invoke(
        make_cli(),
        ["export", run_id, "-o", str(bundle), "--checkpoint", store, "--key-env", "TEAM_KEY"],
    )
    assert exported.exit_code == 0, exported.output
    assert f"run {run_id}, 6 checkpoints, signed" in exported.stdout
    target = f"sqlite:///{tmp_path / 'other.db'}"
    monkeypatch.setenv("OTHER_KEY", "guess")
    refused = CliRunner().invoke(
        make_cli(), ["import", str(bundle), "--checkpoint", target, "--key-env", "OTHER_KEY"]
    )
    assert refused.exit_code == 1
    assert "does not verify under this key" in refused.output
    imported = CliRunner().invoke(
        make_cli(), ["import", str(bundle), "--checkpoint", target, "--key-env", "TEAM_KEY"]
    )
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.strip() == run_id
