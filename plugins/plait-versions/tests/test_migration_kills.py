"""kill -9 during a migrated resume leaves the run's old checkpoint or its new one, never
a mix: killed inside the migration, the run is still version 1's (and resumes on it);
killed after the migrated checkpoint is written, it is version 2's (and resumes on it,
as it is)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import anyio
import pytest
import versions_shop as shop
from plait.spi import compiled_graph
from plait_durable import opened_store
from plait_testing.kills import finish, kill, spawn, wait_until

CRASHY = Path(__file__).with_name("versions_crashy.py")


def _checkpoints(url: str, run_id: str) -> list[tuple[int | None, str]]:
    async def read() -> list[tuple[int | None, str]]:
        async with opened_store(url) as store:
            return [
                ((c := await store.load(i.checkpoint_id)).metadata.get("version"), c.signature)
                for i in await store.list(run_id)
            ]

    return anyio.run(read)


def _started(url: str) -> tuple[str, str]:
    run_id = f"kill-{uuid.uuid4().hex}"
    return run_id, json.loads(finish(spawn(CRASHY, "run", url, run_id)))


@pytest.mark.parametrize("kill_in", ["migrating", "auditing"])
def test_kill_9_during_a_migrated_resume(
    plait_store_url: str, tmp_path: Path, kill_in: str
) -> None:
    v1_signature = compiled_graph(shop.v1()).signature
    v2_signature = compiled_graph(shop.v2()).signature
    run_id, request_id = _started(plait_store_url)
    before = _checkpoints(plait_store_url, run_id)
    mark = tmp_path / "mark"
    # migrating: killed inside the migration; auditing: after it, in the new node
    mark.write_text("hang" if kill_in == "migrating" else "hang-later")
    victim = spawn(CRASHY, "migrate", plait_store_url, run_id, request_id, str(mark))
    wait_until(lambda: mark.read_text() == kill_in, f"the process got to {kill_in}", process=victim)
    kill(victim)
    after = _checkpoints(plait_store_url, run_id)
    # every checkpoint is wholly one version's: its version and its graph agree
    for version, signature in after:
        assert (version, signature) in ((1, v1_signature), (2, v2_signature)), after
    if kill_in == "migrating":
        assert after == before  # nothing written
    else:
        assert any(v == 2 for v, _ in after)

    async def latest() -> tuple[int | None, str]:
        async with opened_store(plait_store_url) as store:
            found = await store.latest(run_id)
            assert found is not None
            return found.metadata.get("version"), found.signature

    # killed migrating: the run is still version 1's; after: wholly version 2's
    expected = (1, v1_signature) if kill_in == "migrating" else (2, v2_signature)
    assert anyio.run(latest) == expected
    mark.write_text("")
    if kill_in == "migrating":  # migrated again, from the untouched version 1 checkpoint
        out = finish(spawn(CRASHY, "migrate", plait_store_url, run_id, request_id, str(mark)))
        assert json.loads(out) == ["v2 audited order-a True"]
    else:  # the answer was taken before the kill: version 2 goes on from its checkpoint
        out = finish(spawn(CRASHY, "finish", plait_store_url, run_id, request_id, str(mark)))
        assert json.loads(out) == ["v2 audited order-a True"]
