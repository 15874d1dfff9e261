"""The actor that hosts executors on a Ray worker (made a Ray actor class by
:mod:`plait_ray._placement`; this module imports Ray only inside its methods).

An actor hosts the executors assigned to it, each rebuilt once from its node spec and kept
for every later superstep and run. One call runs a batch — the invocations of a superstep
that the runner had in flight at once for this actor — concurrently, as the runner's own
tasks would have run them.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from .remote import RemoteExecutor

__all__ = ["ExecutorHost"]


class ExecutorHost:
    """Executors rebuilt from their specs, by key (executor id + spec digest)."""

    def __init__(self) -> None:
        self.hosts: dict[str, RemoteExecutor] = {}
        self.broken: dict[str, str] = {}

    def where(self) -> dict[str, Any]:
        """The Ray node id, its address and this worker's pid (named in errors)."""
        import ray
        import ray.util

        return {
            "node": ray.get_runtime_context().get_node_id(),
            "ip": ray.util.get_node_ip_address(),  # type: ignore[no-untyped-call]
            "pid": os.getpid(),
        }

    async def invoke_batch(self, nodes: dict[str, str], items: list[tuple[str, str]]) -> list[str]:
        """Run ``items`` (executor key, encoded invocation); ``nodes`` holds the specs of
        executors this actor has not hosted yet. One JSON result per item, in order."""
        for key, node in nodes.items():
            if key not in self.hosts:
                try:
                    self.hosts[key] = RemoteExecutor(json.loads(node))
                    self.broken.pop(key, None)
                except Exception as exc:  # an import on the worker runs module code
                    self.broken[key] = f"{type(exc).__name__}: {exc}"
        if len(items) == 1:
            ((key, invocation),) = items
            return [json.dumps(await self._one(key, invocation))]
        done = await asyncio.gather(*(self._one(key, invocation) for key, invocation in items))
        return [json.dumps(result) for result in done]

    async def _one(self, key: str, invocation: str) -> dict[str, Any]:
        host = self.hosts.get(key)
        if host is None:
            why = self.broken.get(key, "its spec never reached this actor")
            return {
                "error": {
                    "type": "RuntimeError",
                    "module": "builtins",
                    "message": f"the Ray worker cannot rebuild executor {key!r}: {why}",
                }
            }
        return await host.invoke(json.loads(invocation))
