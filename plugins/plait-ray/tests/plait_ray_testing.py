"""A loopback placement for the tests: :mod:`plait_ray.remote`'s round trip (encode,
rebuild, run, replay) through JSON text, in this process — what the ``ray`` placement
does, minus Ray."""

from __future__ import annotations

import json
from typing import Any

from plait import hookimpl
from plait_ray.remote import RemoteExecutor, apply_result, encode_invocation, node_payload


class Loopback:
    """A placement that sends every invocation through JSON text to a
    :class:`~plait_ray.remote.RemoteExecutor` in this process."""

    def __init__(self) -> None:
        self.hosts: dict[tuple[int, str], RemoteExecutor] = {}
        self.calls = 0

    async def invoke(
        self, graph: Any, executor_id: str, handler: Any, message: Any, ctx: Any
    ) -> None:
        key = (id(graph), executor_id)
        host = self.hosts.get(key)
        if host is None:
            host = self.hosts[key] = RemoteExecutor(_wire(node_payload(graph, executor_id)))
        self.calls += 1
        result = await host.invoke(_wire(encode_invocation(executor_id, message, ctx)))
        await apply_result(graph, executor_id, _wire(result), ctx)


def _wire(data: Any) -> Any:
    return json.loads(json.dumps(data))


class LoopbackPlugin:
    def __init__(self) -> None:
        self.placement = Loopback()

    @hookimpl
    def plait_register_placements(self, register: Any) -> None:
        register("loopback", self.placement)
