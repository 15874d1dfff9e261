"""The Redis and PostgreSQL server processes stopped, or restarted, in the middle of a run
(issue 14, fault injection): the run fails clearly (a ``CheckpointError`` such as
``StoreUnavailableError``) or goes on with its checkpoints intact, and never runs a
superstep past a checkpoint that was lost.

Each test starts a throwaway server of its own (``plait_testing.servers``); the shared
servers named by ``PLAIT_TEST_REDIS_URL`` / ``PLAIT_TEST_POSTGRES_URL`` are never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from plait import CheckpointError, Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_durable import CheckpointNotFoundError, StoreUnavailableError, open_store
from plait_testing import servers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """asyncio only: redis-py's and psycopg's async clients do not run on trio."""
    return "asyncio"


STEPS = 8
GATE_AT = 4  # the superstep that waits while the server goes away


class Gated:
    """A STEPS-executor chain whose superstep GATE_AT waits for ``gate``; ``ran`` lists
    the supersteps that ran."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.gate = anyio.Event()
        self.ran: list[int] = []

    def build(self) -> Workflow:
        def step(i: int) -> Any:
            @executor(id=f"s{i}")
            async def add(n: int, ctx: WorkflowContext[int, int]) -> None:
                self.ran.append(ctx.superstep)
                if ctx.superstep == GATE_AT and not self.gate.is_set():
                    self.reached.set()
                    await self.gate.wait()
                if i == STEPS - 1:
                    await ctx.yield_output(n + 1)
                else:
                    await ctx.send_message(n + 1)

            return add

        nodes = [step(i) for i in range(STEPS)]
        builder = WorkflowBuilder("gated").add_executor(nodes[0])
        for a, b in zip(nodes, nodes[1:]):
            builder.add_edge(a, b)
        return builder.set_start(nodes[0]).build()


async def _run_through_outage(
    url: str, outage: Any
) -> tuple[Gated, Workflow, str, BaseException | None]:
    """Run until superstep GATE_AT, call ``outage()`` in a thread, let the run go on."""
    gated = Gated()
    wf = gated.build()
    run_id = f"outage-{uuid.uuid4().hex}"
    failure: list[BaseException] = []

    async def run() -> None:
        try:
            await wf.run(0, checkpoint=url, run_id=run_id)
        except CheckpointError as exc:
            failure.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(60):
            await gated.reached.wait()
        await anyio.to_thread.run_sync(outage)
        gated.gate.set()
    return gated, wf, run_id, failure[0] if failure else None


# -- Redis ---------------------------------------------------------------------------------


@pytest.fixture
def redis_server() -> Iterator[servers.RedisServer]:
    with servers.RedisServer() as server:
        yield server


def _stop_redis(server: servers.RedisServer) -> None:
    pidfile = server.workdir / "redis.pid"
    os.kill(int(pidfile.read_text().strip()), signal.SIGKILL)
    pidfile.unlink()
    while servers._ping_redis(server.port):
        time.sleep(0.02)


def _start_redis(server: servers.RedisServer) -> None:
    """Start a redis-server again on the same port (empty: the throwaway one keeps no data)."""
    command = ["redis-server", "--port", str(server.port), "--bind", "127.0.0.1", "--save", "",
               "--appendonly", "no", "--dir", str(server.workdir), "--daemonize", "yes",
               "--pidfile", str(server.workdir / "redis.pid")]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=30)
    deadline = time.monotonic() + 15
    while not servers._ping_redis(server.port):
        assert time.monotonic() < deadline, "redis-server did not come back"
        time.sleep(0.02)


async def test_redis_stopped_mid_run_fails_clearly_and_never_starts_afresh(
    redis_server: servers.RedisServer,
) -> None:
    url = f"{redis_server.url}?timeout=2"
    gated, wf, run_id, failure = await _run_through_outage(url, lambda: _stop_redis(redis_server))
    assert isinstance(failure, StoreUnavailableError), failure
    assert max(gated.ran) == GATE_AT  # nothing ran past the checkpoint that was not written
    _start_redis(redis_server)  # back, but empty: every checkpoint is lost
    with pytest.raises(CheckpointNotFoundError, match=run_id):
        await wf.resume(run_id, url)


async def test_redis_restarted_mid_run_refuses_to_go_on_without_its_checkpoints(
    redis_server: servers.RedisServer,
) -> None:
    url = f"{redis_server.url}?timeout=2"

    def restart() -> None:
        _stop_redis(redis_server)
        _start_redis(redis_server)

    gated, _wf, run_id, failure = await _run_through_outage(url, restart)
    # the lease and every checkpoint went with the old process: the next save is refused
    assert isinstance(failure, CheckpointError), failure
    assert max(gated.ran) == GATE_AT
    store = open_store(url)
    try:
        assert await store.list(run_id) == []
    finally:
        await store.aclose()


# -- PostgreSQL ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[servers.PostgresServer]:
    with servers.PostgresServer() as server:
        yield server


def _pg_ctl(server: servers.PostgresServer, *args: str) -> None:
    server._run(server._pg_ctl, "-D", str(server._data), *args)


def _stop_postgres(server: servers.PostgresServer) -> None:
    _pg_ctl(server, "-m", "immediate", "-w", "stop")  # like a crash: no clean shutdown


def _start_postgres(server: servers.PostgresServer) -> None:
    options = f"-p {server.port} -c listen_addresses=127.0.0.1 -k {server.workdir}"
    _pg_ctl(server, "-o", options, "-l", str(server.workdir / "server.log"), "-w", "start")


async def _supersteps(url: str, run_id: str) -> list[int]:
    store = open_store(url)
    try:
        return [(await store.load(i.checkpoint_id)).superstep for i in await store.list(run_id)]
    finally:
        await store.aclose()


async def test_postgres_stopped_mid_run_fails_clearly_then_resumes(
    postgres_server: servers.PostgresServer,
) -> None:
    url = f"{postgres_server.url}?timeout=2"

    gated, wf, run_id, failure = await _run_through_outage(
        url, lambda: _stop_postgres(postgres_server)
    )
    try:
        assert isinstance(failure, StoreUnavailableError), failure
        assert max(gated.ran) == GATE_AT
    finally:
        _start_postgres(postgres_server)
    assert await _supersteps(url, run_id) == list(range(GATE_AT))  # 0 .. GATE_AT - 1
    gated.ran.clear()
    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == [STEPS]
    assert gated.ran == list(range(GATE_AT, STEPS + 1))  # the lost superstep runs again


async def test_postgres_restarted_mid_run_goes_on_or_fails_but_loses_nothing(
    postgres_server: servers.PostgresServer,
) -> None:
    url = f"{postgres_server.url}?timeout=2"

    def restart() -> None:
        _stop_postgres(postgres_server)
        _start_postgres(postgres_server)

    gated, wf, run_id, failure = await _run_through_outage(url, restart)
    written = await _supersteps(url, run_id)
    assert written == list(range(len(written)))  # no gap: nothing went on past a lost one
    if failure is None:  # it reconnected and finished
        assert written[-1] == STEPS
    else:
        assert isinstance(failure, CheckpointError)
        assert max(gated.ran) == GATE_AT
    resumed = await wf.resume(run_id, url)
    assert resumed.outputs == [STEPS]
