"""The ``ray`` placement: the driver's side.

Executors are assigned to a pool of Ray actors (by default one per CPU of the cluster),
each executor to one actor for good, so the actor rebuilds it once and keeps it across
supersteps and runs. The invocations of one superstep that go to one actor travel as one
batch: the first invocation to reach an actor opens the batch, yields once so that its
siblings of the superstep join, and sends it.

When an actor's worker dies mid-invocation, every invocation of its batch fails with a
:class:`~plait_ray.errors.WorkerLostError` naming the executor, the node and the pid; the
next invocation for that actor starts a fresh one. The runner retries under the
executor's retry policy, exactly as it does a local failure.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

# Ray's `uv run` integration (on by default) would start each worker of a cluster this
# process starts through `uv run` in a new environment of its own: it packages the working
# directory, builds every workspace member, and the worker then lacks Ray. Workers of a
# local cluster run on this interpreter instead; Ray reads the setting once, when first
# imported. RAY_ENABLE_UV_RUN_RUNTIME_ENV=1 in the environment keeps Ray's behaviour.
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

import ray
import ray.exceptions
from plait.spi import on_asyncio

from ._actor import ExecutorHost
from .errors import RayConnectError, WorkerLostError
from .remote import apply_result, encode_invocation, node_payload

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = ["RayPlacement", "configure", "placement"]

_ActorClass: Any = None

#: The thread that joins or starts Ray, the same for the life of the process. Ray starts a
#: local cluster's processes (GCS, raylet) with a parent-death signal, which Linux sends
#: when the *thread* that started them ends: started from a worker thread of the event
#: loop, the cluster died with that thread once the run was over, and the next call into
#: Ray hung for a minute on a GCS that was gone. The event loop does not block meanwhile:
#: a worker thread waits for this one.
_CONNECTOR = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="plait-ray")


def _actor_class() -> Any:
    global _ActorClass
    if _ActorClass is None:
        _ActorClass = ray.remote(ExecutorHost)
    return _ActorClass


class _Slot:
    """One actor of the pool and what it hosts."""

    __slots__ = ("actor", "executors", "index", "known", "where", "where_ref")

    def __init__(self, index: int) -> None:
        self.index = index
        self.actor: Any = None
        self.where_ref: Any = None
        self.where: dict[str, Any] | None = None
        self.known: set[str] = set()  # executor keys whose spec the actor has
        self.executors = 0  # how many executors are assigned to it


class _Batch:
    __slots__ = ("actor", "items", "nodes", "ref", "results", "slot", "submitted", "waiting")

    def __init__(self, slot: _Slot) -> None:
        self.slot = slot
        self.actor: Any = None
        self.items: list[tuple[str, str]] = []
        self.nodes: dict[str, str] = {}  # the spec of every executor in the batch
        self.ref: Any = None
        self.results: list[str] | None = None
        self.submitted = anyio.Event()
        self.waiting = 0


class RayPlacement:
    """Runs invocations in Ray actors. One instance (:data:`placement`) serves the
    process; :func:`configure` sets where it connects.

    :param address: a Ray cluster to join (``ray://host:10001``, ``host:6379``, ``auto``);
        default ``RAY_ADDRESS``, else a local cluster is started.
    :param actors: how many actors host executors (default ``PLAIT_RAY_ACTORS``, else the
        cluster's CPU count).
    :param init_options: more keyword arguments for ``ray.init``.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        actors: int | None = None,
        init_options: dict[str, Any] | None = None,
    ) -> None:
        self.address = address
        self.actors = actors
        self.init_options = dict(init_options or {})
        self._slots: list[_Slot] = []
        self._assigned: dict[str, _Slot] = {}
        self._open: dict[int, _Batch] = {}
        self._session: str | None = None
        self._connecting = threading.Lock()

    # -- connecting ----------------------------------------------------------------

    def connect(self) -> None:
        """Join (or start) Ray and make the actor pool, once per Ray session (blocking:
        :meth:`invoke` calls it in a worker thread, so the event loop — lease renewals,
        other runs — goes on meanwhile)."""
        with self._connecting:
            self._connect()

    def _connect(self) -> None:
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            options: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": logging.WARNING,
                **self.init_options,
            }
            if address:
                options["address"] = address
            try:
                ray.init(**options)
            except Exception as exc:
                where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
                raise RayConnectError(
                    f"cannot start or join {where}: {type(exc).__name__}: {exc} (set "
                    "RAY_ADDRESS or plait_ray.configure(address=...) to join an existing one)"
                ) from exc
        session = ray.get_runtime_context().get_job_id()
        if session == self._session and self._slots:
            return
        count = self.actors or int(os.environ.get("PLAIT_RAY_ACTORS", "0") or 0)
        if not count:
            resources = ray.cluster_resources()  # type: ignore[no-untyped-call]
            count = max(1, int(resources.get("CPU", 1)))
        self._slots = [_Slot(i) for i in range(count)]
        self._assigned = {}
        self._open = {}
        # the pool starts here, once, so that no invocation's timeout pays for it
        for slot in self._slots:
            self._start(slot)
        places = ray.get([slot.where_ref for slot in self._slots], timeout=300)
        for slot, where in zip(self._slots, places):
            slot.where = where
        self._session = session

    def _start(self, slot: _Slot) -> None:
        slot.actor = (
            _actor_class()
            .options(num_cpus=0, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD")
            .remote()
        )
        slot.where_ref = slot.actor.where.remote()
        slot.where = None
        slot.known = set()

    def workers(self) -> dict[str, dict[str, Any]]:
        """Executor key -> the node, address and pid of the actor hosting it (blocking;
        for tests and diagnostics)."""
        out = {}
        for key, slot in self._assigned.items():
            if slot.where_ref is not None:
                out[key] = ray.get(slot.where_ref, timeout=30)
        return out

    # -- invoking ------------------------------------------------------------------

    async def invoke(
        self, graph: Any, executor_id: str, handler: Any, message: Any, ctx: Any
    ) -> None:
        """Run one invocation in its executor's actor and apply what it did to ``ctx``."""
        if (
            self._session is None
            or not ray.is_initialized()
            or ray.get_runtime_context().get_job_id() != self._session
        ):
            # once per Ray session, on the connecting thread (see _CONNECTOR)
            await anyio.to_thread.run_sync(lambda: _CONNECTOR.submit(self.connect).result())
        key, node = _node(graph, executor_id)
        invocation = json.dumps(encode_invocation(executor_id, message, ctx))
        slot = self._assigned.get(key)
        if slot is None:
            slot = self._assigned[key] = min(self._slots, key=lambda s: (s.executors, s.index))
            slot.executors += 1
        batch = self._open.get(slot.index)
        opened = batch is None
        if batch is None:
            batch = self._open[slot.index] = _Batch(slot)
        index = len(batch.items)
        batch.items.append((key, invocation))
        batch.nodes[key] = node
        if opened:
            try:
                await anyio.lowlevel.checkpoint()  # the superstep's siblings join the batch
            finally:
                self._submit(batch)
        else:
            await batch.submitted.wait()
        results = await self._results(batch, executor_id)
        await apply_result(graph, executor_id, json.loads(results[index]), ctx)

    def _submit(self, batch: _Batch) -> None:
        slot = batch.slot
        if self._open.get(slot.index) is batch:
            del self._open[slot.index]
        if slot.actor is None:
            self._start(slot)
        # only the specs this actor has not rebuilt yet travel (all of them to a fresh one)
        nodes = {key: node for key, node in batch.nodes.items() if key not in slot.known}
        slot.known.update(nodes)
        batch.actor = slot.actor
        batch.ref = slot.actor.invoke_batch.remote(nodes, batch.items)
        batch.submitted.set()

    async def _results(self, batch: _Batch, executor_id: str) -> list[str]:
        if batch.results is not None:
            return batch.results
        batch.waiting += 1
        try:
            if on_asyncio():
                results: list[str] = await batch.ref
            else:
                results = await anyio.to_thread.run_sync(ray.get, batch.ref, abandon_on_cancel=True)
        except ray.exceptions.RayActorError as exc:
            raise self._lost(batch, executor_id, exc) from exc
        except BaseException:
            if batch.waiting == 1 and batch.results is None:
                ray.cancel(batch.ref)  # the last one waiting gave up (a timeout …)
            raise
        finally:
            batch.waiting -= 1
        batch.results = results
        return results

    def _lost(self, batch: _Batch, executor_id: str, exc: BaseException) -> WorkerLostError:
        slot = batch.slot
        where = slot.where
        if where is None and slot.where_ref is not None:
            try:
                where = slot.where = ray.get(slot.where_ref, timeout=1)
            except Exception:
                where = None
        if slot.actor is batch.actor:
            slot.actor = None  # the next invocation starts a fresh actor
        node = where["node"] if where else None
        pid = where["pid"] if where else None
        place = f"node {node} at {where['ip']}, worker pid {pid}" if where else "an unknown node"
        cause = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return WorkerLostError(
            f"the Ray worker running executor {executor_id!r} died mid-invocation ({place}): "
            f"{cause}",
            executor_id=executor_id,
            node=node,
            pid=pid,
        )


def _node(graph: CompiledGraph, executor_id: str) -> tuple[str, str]:
    """(executor key, its node spec as JSON), computed once per graph (in the graph's
    cache, :meth:`~plait.spi.CompiledGraph.cached`)."""
    nodes = graph.cached(_NODES_KEY, _no_nodes)
    found = nodes.get(executor_id)
    if found is None:
        text = json.dumps(node_payload(graph, executor_id), sort_keys=True)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        found = nodes[executor_id] = (f"{executor_id}@{digest}", text)
    return found


#: the key of a graph's shipped node specs in the graph's cache
_NODES_KEY = ("plait_ray", "nodes")


def _no_nodes(graph: CompiledGraph) -> dict[str, tuple[str, str]]:
    """The node specs shipped so far, executor id -> (executor key, node spec as JSON),
    filled as the graph's executors are first invoked."""
    return {}


#: The process's ``ray`` placement (what the plugin registers).
placement = RayPlacement()


def configure(
    *, address: str | None = None, actors: int | None = None, **init_options: Any
) -> RayPlacement:
    """Say where the ``ray`` placement connects, before its first use: ``address`` of a
    cluster (default ``RAY_ADDRESS``, else a local one), how many ``actors`` host
    executors (default: the cluster's CPUs), and other ``ray.init`` keyword arguments.
    """
    placement.address = address
    placement.actors = actors
    placement.init_options = dict(init_options)
    placement._session = None
    return placement
