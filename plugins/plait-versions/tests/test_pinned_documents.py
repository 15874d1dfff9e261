"""Pinned documents: a run started from a workflow document keeps it with its checkpoints
(one content-addressed blob of the run, named from the checkpoints' metadata, kept by a
prune), and ``plait resume FILE RUN_ID --on-change pin`` with a changed ``FILE`` runs the
stored version: on a sealed store as it is; on an unsigned one only when the user names
a byte-identical copy (``--pinned-document``) or passes ``--run-stored-document`` after
seeing the diff; always with the grants typed on the command line and never more."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import attrs
import plait
import pytest
from click.testing import CliRunner, Result
from plait import get_plugin_manager
from plait.spi import compiled_graph
from plait_cli import make_cli
from plait_documents import SourceDocument
from plait_durable import (
    DOCUMENT_KEY,
    blob_hash,
    document_metadata,
    open_store,
    opened_store,
    stored_document,
)

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
V2 = V1.replace("'v1'", "'v2'")


def plait_cli(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _stopped(flow: Path, url: str) -> str:
    """Run ``flow`` (V1) until its first step is checkpointed and the second is left: the
    run fails past one superstep, and resumes from there."""
    flow.write_text(V1)
    started = plait_cli("run", str(flow), "hi", "--allow", "subprocess", "--checkpoint", url,
                        "--max-supersteps", "1", "-q")  # fmt: skip
    assert started.exit_code == 1, started.stderr
    (run_id,) = re.findall(r"run id: ([0-9a-f]{32})", started.stderr)
    flow.write_text(V2)  # the deploy
    return run_id


def _latest_document(url: str, run_id: str) -> Any:
    async def read() -> Any:
        async with opened_store(url) as store:
            latest = await store.latest(run_id)
            assert latest is not None
            return latest.metadata.get(DOCUMENT_KEY), await stored_document(store, latest)

    return anyio.run(read)


# -- the document kept with the run ---------------------------------------------------------


@pytest.fixture(params=["sqlite", "file", "sealed", "redis", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An unsigned SQLite store, a file store, a sealed SQLite store (its checkpoints
    list the blobs their metadata names with those their state does), Redis and
    PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    if request.param in ("redis", "postgres"):
        found: str = request.getfixturevalue(f"plait_{request.param}_url")
        return found
    if request.param == "sealed":
        from plait_sealing import generate_key

        monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("pin"))
        return f"sealed:sqlite:///{tmp_path / 'runs.db'}"
    return f"file://{tmp_path / 'runs'}"


def test_a_run_keeps_its_document_as_one_blob_a_prune_keeps(url: str, tmp_path: Path) -> None:
    flow = tmp_path / "orders.yaml"
    run_id = _stopped(flow, url)
    record, stored = _latest_document(url, run_id)
    # the metadata names a blob, not the text, and the name and hash of the document
    assert set(record["text"]) == {"__plait__", "h"}
    assert record["name"] == "orders.yaml"
    assert record["sha256"] == hashlib.sha256(V1.encode()).hexdigest()
    assert stored.text == V1
    other = _stopped(tmp_path / "other.yaml", url)  # another run of the same store

    async def prune() -> tuple[int, Any]:
        async with opened_store(url) as store:
            assert len(await store.list(run_id)) >= 2
            removed = await store.prune(run_id, keep_last=1)
            await store.delete_run(other)
            latest = await store.latest(run_id)
            assert latest is not None
            blobs = await store.blob_hashes(run_id)
            assert record["text"]["h"] in blobs  # swept against states alone, it went
            return removed, await stored_document(store, latest)

    removed, kept = anyio.run(prune)
    assert removed >= 1
    assert kept.text == V1


def test_the_document_is_stored_once_per_version(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)

    async def count() -> int:
        async with opened_store(url) as store:
            checkpoints = await store.list(run_id)
            refs = set()
            for info in checkpoints:
                found = await store.load(info.checkpoint_id)
                refs.add(found.metadata[DOCUMENT_KEY]["text"]["h"])
            return len(refs)

    assert anyio.run(count) == 1


# -- pin on a sealed store ------------------------------------------------------------------


def test_pin_on_a_sealed_store_runs_the_stored_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_sealing import generate_key

    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("pin"))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    common = ["resume", str(flow), run_id, "--checkpoint", url, "--allow", "subprocess", "-q"]
    refused = plait_cli(*common)  # reject, the default
    assert refused.exit_code == 1 and "WorkflowChangedError" in refused.stderr
    pinned = plait_cli(*common, "--on-change", "pin")
    assert pinned.exit_code == 0, pinned.stderr
    assert pinned.stdout.strip().endswith("v1 hi")
    assert "runs its stored document flow.yaml" in pinned.stderr
    # the run's new checkpoints record the version that ran
    _, stored = _latest_document(f"sealed:{url}", run_id)
    assert stored.text == V1


def test_pin_on_a_sealed_store_gets_only_the_typed_grants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plait_sealing import generate_key

    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("pin"))
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    # the file on disk now needs the network only; the stored version needs subprocess
    flow.write_text("name: pinned\nworkflow:\n  - id: first\n    type: executor\n"
                    '    kind: http\n    config: {url: "https://example.org/x"}\n')  # fmt: skip
    refused = plait_cli("resume", str(flow), run_id, "--checkpoint", url, "--on-change", "pin",
                        "--allow", "network=example.org")  # fmt: skip
    assert refused.exit_code == 1
    assert "PinnedRunError" in refused.stderr and "subprocess" in refused.stderr
    assert "never what its checkpoint records" in refused.stderr


# -- pin on an unsigned store ---------------------------------------------------------------


def test_pin_on_an_unsigned_store_needs_the_user_to_vouch(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    common = ["resume", str(flow), run_id, "--checkpoint", url, "--allow", "subprocess", "-q",
              "--on-change", "pin"]  # fmt: skip
    refused = plait_cli(*common)
    assert refused.exit_code == 1 and "PinnedRunError" in refused.stderr
    assert "-    argv: " not in refused.stderr  # (a diff of the changed line, below)
    assert re.search(r"^-.*'v2'", refused.stderr, re.M)
    assert re.search(r"^\+.*'v1'", refused.stderr, re.M)
    assert "--pinned-document PATH" in refused.stderr
    assert "--run-stored-document" in refused.stderr
    assert "v1 hi" not in refused.stdout  # nothing ran
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(V1 + "\n")  # one byte more: not the version the run started on
    mismatch = plait_cli(*common, "--pinned-document", str(wrong))
    assert mismatch.exit_code == 1 and "is not the version the run started on" in mismatch.stderr
    copy = tmp_path / "v1.yaml"
    copy.write_text(V1)
    named = plait_cli(*common, "--pinned-document", str(copy))
    assert named.exit_code == 0, named.stderr
    assert named.stdout.strip().endswith("v1 hi")
    assert f"byte-identical to {copy}" in named.stderr


def test_run_stored_document_shows_the_diff_and_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    ran = plait_cli("resume", str(flow), run_id, "--checkpoint", url, "--allow", "subprocess",
                    "-q", "--on-change", "pin", "--run-stored-document")  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    assert ran.stdout.strip().endswith("v1 hi")
    assert "What runs:" in ran.stderr and re.search(r"^\+.*'v1'", ran.stderr, re.M)


def test_the_flags_go_with_pin(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    wrong = plait_cli("resume", str(flow), run_id, "--checkpoint", url, "--run-stored-document")
    assert wrong.exit_code == 2 and "go with --on-change pin" in wrong.stderr


def _forge_document(url: str, run_id: str, text: str) -> None:
    """What anyone who can write to an unsigned store can do: write a document's bytes as
    a blob of the run and a checkpoint naming it, its hash and the fingerprint of the
    workflow it builds (so it would resume without complaint)."""
    forged = plait.load(text, format="steps", allow=["subprocess", "network"])
    fingerprint = get_plugin_manager().durability("forge").fingerprint(compiled_graph(forged))

    async def forge() -> None:
        store = open_store(url)
        try:
            latest = await store.latest(run_id)
            assert latest is not None
            data = json.dumps(text, separators=(",", ":"), ensure_ascii=False).encode()
            digest = blob_hash(data)
            record = document_metadata(SourceDocument("flow.yaml", None, text))
            record["text"] = {"__plait__": "blob", "h": digest}
            metadata = {**latest.metadata, DOCUMENT_KEY: record, "fingerprint": dict(fingerprint)}
            forged_checkpoint = attrs.evolve(
                latest,
                checkpoint_id=uuid.uuid4().hex,
                parent_id=latest.checkpoint_id,
                created_at=latest.created_at + 1,
                signature=compiled_graph(forged).signature,
                metadata=metadata,
            )
            # the blob stored as it is (uncompressed), as any writer may
            await store.save(forged_checkpoint, blobs={digest: data})  # type: ignore[call-arg]
        finally:
            await store.aclose()

    anyio.run(forge)


def test_a_forged_document_on_an_unsigned_store_does_not_run_unseen(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    marker = tmp_path / "owned"
    evil = V1.replace("print('v1', sys.stdin.read().split()[-1])",
                      f"open({str(marker)!r}, 'w').write('x'); print('forged')")  # fmt: skip
    _forge_document(url, run_id, evil)
    common = ["resume", str(flow), run_id, "--checkpoint", url, "--allow", "subprocess", "-q",
              "--on-change", "pin"]  # fmt: skip
    refused = plait_cli(*common)
    assert refused.exit_code == 1 and "PinnedRunError" in refused.stderr
    assert re.search(r"^\+.*forged", refused.stderr, re.M)  # the diff shows what it holds
    assert not marker.exists()
    # the copy of v1 the user keeps is not what the store holds now
    copy = tmp_path / "v1.yaml"
    copy.write_text(V1)
    vouched = plait_cli(*common, "--pinned-document", str(copy))
    assert vouched.exit_code == 1 and "is not the version the run started on" in vouched.stderr
    assert not marker.exists()
    # with the flag, the user has seen the diff of what runs, and it runs
    ran = plait_cli(*common, "--run-stored-document")
    assert re.search(r"What runs:\n(.*\n)*\+.*forged", ran.stderr)
    assert ran.exit_code == 0, ran.stderr
    assert marker.exists() and ran.stdout.strip().endswith("forged")


def test_a_pinned_document_needing_a_grant_not_typed_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    needs_network = V1 + (
        "  - id: third\n    type: executor\n    kind: http\n"
        '    config: {url: "https://evil.example/x"}\n'
    )
    _forge_document(url, run_id, needs_network)
    refused = plait_cli("resume", str(flow), run_id, "--checkpoint", url, "--allow",
                        "subprocess", "--on-change", "pin", "--run-stored-document")  # fmt: skip
    assert refused.exit_code == 1 and "PinnedRunError" in refused.stderr
    assert "network=evil.example" in refused.stderr


def test_plait_runs_shows_the_pinned_document(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id = _stopped(tmp_path / "orders.yaml", url)
    listed = plait_cli("runs", "--checkpoint", url, "--json")
    assert listed.exit_code == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    sha = hashlib.sha256(V1.encode()).hexdigest()
    assert row["run_id"] == run_id
    assert row["columns"]["version"].endswith(f" orders.yaml@{sha[:8]}")


def test_compat_says_a_run_resumes_on_its_pinned_document(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    flow = tmp_path / "flow.yaml"
    run_id = _stopped(flow, url)
    judged = plait_cli("compat", str(flow), "--checkpoint", url, "--on-change", "pin",
                       "--format", "json")  # fmt: skip
    assert judged.exit_code == 0, judged.stderr
    (verdict,) = json.loads(judged.stdout)["runs"]
    assert verdict["run_id"] == run_id and verdict["verdict"] == "pinned"
    assert "flow.yaml (sha256 " in verdict["reason"]
    rejected = plait_cli("compat", str(flow), "--checkpoint", url, "--on-change", "reject")
    assert rejected.exit_code == 1  # under reject, the same run is stranded


def test_a_fork_carries_the_pinned_document(url: str, tmp_path: Path) -> None:
    from plait_durable import fork_run

    run_id = _stopped(tmp_path / "flow.yaml", url)

    async def fork() -> Any:
        async with opened_store(url) as store:
            latest = await store.latest(run_id)
            assert latest is not None
            new = await fork_run(store, run_id, latest.checkpoint_id)
            await store.delete_run(run_id)  # the origin's blobs go with it
            forked = await store.latest(new)
            assert forked is not None
            return await stored_document(store, forked)

    assert anyio.run(fork).text == V1
