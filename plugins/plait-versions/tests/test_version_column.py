"""The ``version`` column plait-versions adds to run listings (``plait_run_columns``):
``plait runs`` shows each run's version and short fingerprint, read from what the listing
read."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import anyio
import versions_shop as shop
from click.testing import CliRunner
from plait import Workflow
from plait_cli import make_cli
from plait_durable import opened_store
from plait_versions._columns import version_cell


async def _started(workflow: Workflow, url: str) -> tuple[str, str]:
    """A run of ``workflow`` waiting for its approval: (run id, its fingerprint digest)."""
    result = await workflow.run("order-a", checkpoint=url)
    async with opened_store(url) as store:
        latest = await store.latest(result.run_id)
    assert latest is not None
    return result.run_id, latest.metadata["fingerprint"]["digest"]


def test_plait_runs_shows_each_runs_version_and_fingerprint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    old, old_digest = anyio.run(_started, shop.v1(), url)
    new, new_digest = anyio.run(_started, shop.v2(), url)
    assert old_digest != new_digest
    listed = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", url, "--json"])
    assert listed.exit_code == 0, listed.output
    shown = {r["run_id"]: r["columns"]["version"] for r in json.loads(listed.stdout)}
    assert shown == {old: f"v1 {old_digest[:8]}", new: f"v2 {new_digest[:8]}"}
    table = CliRunner().invoke(make_cli(), ["runs", "--checkpoint", url])
    assert "VERSION" in table.stdout.splitlines()[0]
    assert f"v1 {old_digest[:8]}" in next(r for r in table.stdout.splitlines() if old in r)


def test_the_cell_shows_only_what_fits_from_untrusted_metadata() -> None:
    def cell(metadata: object) -> str:
        return version_cell(SimpleNamespace(metadata=metadata))

    assert cell({}) == "-"  # the listing read no metadata (a run index, a sealed store)
    assert cell({"fingerprint": {"digest": "0123456789abcdef"}}) == "v? 01234567"
    assert cell({"version": True, "fingerprint": {"digest": "<b>x</b>"}}) == "v?"
    assert cell({"version": "3; rm -rf", "fingerprint": "nope"}) == "v?"
    assert cell({"version": 4}) == "v4"


def test_the_cell_names_a_pinned_document() -> None:
    def cell(metadata: object) -> str:
        return version_cell(SimpleNamespace(metadata=metadata))

    sha = "9870bba3c9afa346d4f3f5f897c472aa0a7d9fcaa9c88f88c1bd721eb7d54700"
    fingerprint = {"digest": "0123456789abcdef"}
    document = {"name": "orders.yaml", "sha256": sha, "text": {"__plait__": "blob", "h": sha}}
    assert cell({"version": 2, "fingerprint": fingerprint, "document": document}) == (
        "v2 01234567 orders.yaml@9870bba3"
    )
    odd = {**document, "name": "\x1b[31mred.yaml"}  # untrusted: not shown as it is
    assert cell({"fingerprint": fingerprint, "document": odd}) == "v? 01234567 document@9870bba3"
    assert cell({"fingerprint": fingerprint, "document": {**document, "sha256": "x"}}) == (
        "v? 01234567"
    )
