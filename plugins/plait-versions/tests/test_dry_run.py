"""``plait compat TARGET --dry-run``: each recorded run TARGET resumes gets the last
superstep its record holds run again under TARGET, from a migrated copy of the checkpoint
before it, its outside calls answered from the record (plait-replay), and compared with
the record migrated the same way; nothing is written to the store."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import versions_desk as desk
from click.testing import CliRunner, Result
from plait import get_plugin_manager
from plait_cli import make_cli
from plait_durable import has_blobs, opened_store
from plait_versions import register_migration

TARGET = "versions_cli_targets:desk_v2"


def plait(*args: str) -> Result:
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def migration() -> Iterator[Any]:
    """Register a desk migration from version 1 (the test names which)."""

    def register(migrate: Any) -> None:
        register_migration("desk", 1, migrate)

    yield register
    get_plugin_manager().unregister("migration:desk@1")


def _start(url: str) -> dict[str, str]:
    """Runs of the desk workflow: kind -> run id. Two recorded on version 1 (one waiting
    for its approval, one stopped before the writer ran), one on version 1 not recorded,
    one recorded on version 2."""

    async def start() -> dict[str, str]:
        async with opened_store(url) as store:
            waiting = await desk.v1().run("tea", checkpoint=store, record=True)
            stopped = await desk.v1().run("cups", checkpoint=store, record=True,
                                          max_supersteps=1, raise_on_failure=False)  # fmt: skip
            plain = await desk.v1().run("jam", checkpoint=store)
            current = await desk.v2().run("bread", checkpoint=store, record=True)
        return {"waiting": waiting.run_id, "stopped": stopped.run_id,
                "plain": plain.run_id, "current": current.run_id}  # fmt: skip

    return anyio.run(start)


def _stored(url: str, runs: dict[str, str]) -> list[Any]:
    """The runs of the store (of a SQLite file of the test's own: all of them; the
    servers are shared: those of ``runs``), and every checkpoint and blob of ``runs``."""

    async def read() -> list[Any]:
        async with opened_store(url) as store:
            listed = {info.run_id for info in await store.runs()}
            if not url.startswith("sqlite"):
                listed &= set(runs.values())
            found: list[Any] = [sorted(listed)]
            for run_id in sorted(runs.values()):
                found.append(sorted(i.checkpoint_id for i in await store.list(run_id)))
                if has_blobs(store):
                    blobs: Any = store
                    found.append(sorted(await blobs.blob_hashes(run_id)))
        return found

    return anyio.run(read)


def _dry_run(url: str) -> tuple[Result, dict[str, Any]]:
    found = plait("compat", TARGET, "--checkpoint", url, "--dry-run", "--format", "json")
    return found, {run["run_id"]: run for run in json.loads(found.stdout)["runs"]}


def test_a_migration_that_keeps_the_behaviour_would_match(
    plait_store_url: str, migration: Any
) -> None:
    migration(desk.one_to_two)
    runs = _start(plait_store_url)
    before = _stored(plait_store_url, runs)
    found, judged = _dry_run(plait_store_url)
    assert found.exit_code == 0, found.output
    waiting = judged[runs["waiting"]]
    assert waiting["verdict"] == "migrate" and waiting["dry_run"]["outcome"] == "match"
    # the writer's superstep: its ctx.now() answered from the record (else the draft differs)
    assert waiting["dry_run"]["superstep"] == 2
    assert judged[runs["stopped"]]["dry_run"]["outcome"] == "match"  # the intake's superstep
    assert judged[runs["stopped"]]["dry_run"]["superstep"] == 1
    assert judged[runs["current"]]["verdict"] == "as_is"
    assert judged[runs["current"]]["dry_run"]["outcome"] == "match"
    plain = judged[runs["plain"]]["dry_run"]
    assert plain["outcome"] == "not_recorded" and "record=True" in plain["reason"]
    if plait_store_url.startswith("sqlite"):  # (the servers hold other tests' runs too)
        assert json.loads(found.stdout)["dry_run"] == {"match": 3, "not_recorded": 1}
    assert _stored(plait_store_url, runs) == before  # nothing written: no checkpoint, no blob


def test_a_migration_that_changes_an_output_diverges_naming_the_executor(
    tmp_path: Any, migration: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    migration(desk.upper_bodies)
    runs = _start(url)
    before = _stored(url, runs)
    found, judged = _dry_run(url)
    assert found.exit_code == 1, found.output  # a divergence fails the gate
    diverged = judged[runs["waiting"]]["dry_run"]
    assert diverged["outcome"] == "diverged"
    divergence = diverged["divergence"]
    assert divergence["superstep"] == 2 and divergence["executor"] == "writer"
    assert divergence["what"] == "requests"  # the question carries the draft
    (change,) = [op for op in divergence["diff"] if op["op"] == "replace"]
    assert change["value"].startswith("TEA at ")
    assert judged[runs["current"]]["dry_run"]["outcome"] == "match"  # v2: no migration
    text = plait("compat", TARGET, "--checkpoint", url, "--dry-run")
    assert text.exit_code == 1
    assert "    dry-run: diverged at superstep 2, executor 'writer'" in text.stdout
    assert "      executor 'writer' asked for other input" in text.stdout
    assert "      diff (JSON Patch, recorded -> now):" in text.stdout
    # the stopped run diverges too: the intake sends a note the migration capitalises
    assert judged[runs["stopped"]]["dry_run"]["divergence"]["what"] == "pending"
    assert "dry-run: 2 diverged, 1 match, 1 not recorded" in text.stderr
    assert _stored(url, runs) == before


def test_a_run_that_was_not_recorded_says_so(tmp_path: Any, migration: Any) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    migration(desk.one_to_two)
    runs = _start(url)
    found = plait("compat", TARGET, "--checkpoint", url, "--dry-run")
    assert found.exit_code == 0, found.output
    lines = found.stdout.splitlines()
    at = lines.index(next(line for line in lines if line.startswith(runs["plain"])))
    shown = next(line for line in lines[at + 1 :] if "dry-run:" in line)
    assert shown.startswith("    dry-run: not recorded: the run was not recorded")
    # without --dry-run nothing is replayed
    assert "dry-run" not in plait("compat", TARGET, "--checkpoint", url).stdout


def test_without_plait_replay_it_names_the_distribution(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "plait_replay", None)  # `import plait_replay` fails
    found = plait("compat", TARGET, "--checkpoint", f"sqlite:///{tmp_path / 'runs.db'}",
                  "--dry-run")  # fmt: skip
    assert found.exit_code == 2
    assert "--dry-run answers each run's outside calls from its record" in found.stderr
    assert "plait-replay" in found.stderr
