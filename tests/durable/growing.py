"""An agent-style loop whose transcript grows every superstep, run in a subprocess by the
blob kill tests (issue 25).

    python growing.py run    STORE_URL RUN_ID
    python growing.py resume STORE_URL RUN_ID

The transcript (600-character messages: each one a blob) travels in the message and is
kept in shared state, so every checkpoint writes new blobs. With
``PLAIT_KILL_AT_BLOB_SAVE=N`` the process kills itself with SIGKILL in its N-th save that
carries blobs, after the store wrote the blobs and before the checkpoint is committed: in
the file store between the blobs' pack and the checkpoint's rename, in SQLite and
PostgreSQL inside the open transaction (blobs inserted, checkpoint not), in Redis with
the blobs queued in the ``MULTI`` that is never executed.

``PLAIT_GROWING_BUNDLES=1`` runs 36 steps of 2 KB messages instead: the N-th save with
blobs holds N messages, so the 32nd writes the transcript's first bundle (its first 32
messages as one blob).

With ``PLAIT_GROWING_HOLD=N:MARKER`` the agent's invocation of superstep ``N`` writes
MARKER and waits to be killed (:func:`plait_testing.kills.hold`): the run's latest
checkpoint is then superstep ``N - 1``'s.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_testing.kills import hold

BUNDLES = os.environ.get("PLAIT_GROWING_BUNDLES") == "1"
STEPS = 36 if BUNDLES else 24
SLEEP = float(os.environ.get("PLAIT_GROWING_SLEEP", "0.01"))
KILL_AT = int(os.environ.get("PLAIT_KILL_AT_BLOB_SAVE", "0"))
HOLD_AT, _, MARKER = os.environ.get("PLAIT_GROWING_HOLD", "").partition(":")
_saves_with_blobs = 0


def message(i: int) -> str:
    return f"turn {i}: " + "words " * (340 if BUNDLES else 100)


def build() -> Workflow:
    @executor(id="agent")
    async def agent(transcript: list, ctx: WorkflowContext[list, list]) -> None:
        grown = [*transcript, message(len(transcript))]
        await ctx.set_shared_state("transcript", grown)
        if HOLD_AT and ctx.superstep == int(HOLD_AT):
            await hold(Path(MARKER))
        await anyio.sleep(SLEEP)
        if len(grown) >= STEPS:
            await ctx.yield_output([len(grown), grown[-1][:12]])
        else:
            await ctx.send_message(grown)

    builder = WorkflowBuilder("growing", max_supersteps=STEPS + 2)
    builder.add_executor(agent).add_edge(agent, agent)
    return builder.set_start(agent).build()


def _die_now() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _counted(blobs: Any) -> bool:
    """Count a save with blobs; True when it is the one to die in."""
    global _saves_with_blobs
    if not blobs:
        return False
    _saves_with_blobs += 1
    return _saves_with_blobs == KILL_AT


def arm(url: str) -> None:
    """Kill this process inside the ``KILL_AT``-th save with blobs (see the docstring)."""
    scheme = url.split(":", 1)[0]
    if scheme == "file":
        from plait_stores._file import FileCheckpointStore

        write_blobs = FileCheckpointStore._write_blobs

        def dying_write_blobs(self: Any, dir_fd: int, run_name: str, blobs: Any) -> None:
            write_blobs(self, dir_fd, run_name, blobs)
            if _counted(blobs):
                _die_now()  # the blobs' pack is on disk, the checkpoint file is not renamed yet

        FileCheckpointStore._write_blobs = dying_write_blobs  # type: ignore[method-assign]
    elif scheme == "sqlite":
        from plait_stores._sqlite import SqliteCheckpointStore

        save_many = SqliteCheckpointStore._save_many_sync

        def dying_save_many(self: Any, conn: Any, encoded: Any, lease: Any, blobs: Any) -> None:
            if _counted(blobs):
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "INSERT INTO plait_blobs (run_id, hash, data) VALUES (?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    [(encoded[0][0].run_id, h, b) for h, b in blobs.items()],
                )
                _die_now()  # blobs inserted in the open transaction, checkpoint not
            save_many(self, conn, encoded, lease, blobs)

        SqliteCheckpointStore._save_many_sync = dying_save_many  # type: ignore[method-assign]
    elif scheme.startswith("postgres"):
        import psycopg

        executemany = psycopg.AsyncCursor.executemany

        async def dying_executemany(self: Any, query: Any, params_seq: Any, **kw: Any) -> None:
            await executemany(self, query, params_seq, **kw)
            if "plait_blobs" in str(query) and _counted(params_seq):
                _die_now()  # blobs inserted in the open transaction, checkpoint not

        psycopg.AsyncCursor.executemany = dying_executemany  # type: ignore[method-assign]
    elif scheme == "redis":
        import redis.asyncio.client

        execute = redis.asyncio.client.Pipeline.execute

        async def dying_execute(self: Any, raise_on_error: bool = True) -> Any:
            queued = [c for c in getattr(self, "command_stack", []) if c[0][0] == "HSETNX"]
            if self.explicit_transaction and _counted(queued):
                _die_now()  # blobs queued in the MULTI, never executed
            return await execute(self, raise_on_error)

        redis.asyncio.client.Pipeline.execute = dying_execute  # type: ignore[method-assign]


async def main(mode: str, url: str, run_id: str) -> None:
    if KILL_AT:
        arm(url)
    wf = build()
    if mode == "run":
        result = await wf.run([], checkpoint=url, run_id=run_id)
    else:
        result = await wf.resume(run_id, url)
    print(json.dumps({"outputs": result.outputs, "supersteps": result.supersteps}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3])
