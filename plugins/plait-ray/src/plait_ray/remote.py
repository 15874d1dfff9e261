"""The round trip of a placed invocation: the driver encodes it (:func:`encode_invocation`),
a worker rebuilds the executor from its node spec and runs it against a recording context
(:class:`RemoteExecutor`), and the driver replays what it did into the real context
(:func:`apply_result`). Everything travels through the checkpoint codec
(:mod:`plait_durable.codec`), as JSON-ready data: the workflow's type allowlist applies on
both sides.

The ``ray`` placement is built on it; a placement of another cluster can be too (the
tests' loopback placement runs it in one process).
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from plait import PlaitError, WorkflowContext
from plait.spi import DELETED, ContextSnapshot
from plait_durable import declared_types, decode_value, encode_value, type_ref

from .errors import RemoteInvocationError

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = [
    "RemoteExecutor",
    "RemoteInvocationError",
    "apply_result",
    "encode_invocation",
    "node_payload",
]


def node_payload(graph: CompiledGraph, executor_id: str) -> dict[str, Any]:
    """The JSON-ready node spec a worker rebuilds ``executor_id`` from."""
    from plait.spi import spec_converter

    data: dict[str, Any] = spec_converter.unstructure(graph.spec.node(executor_id))
    return data


def encode_invocation(
    executor_id: str, message: Any, ctx: WorkflowContext[Any, Any]
) -> dict[str, Any]:
    """The JSON-ready invocation of ``executor_id`` on ``message`` in ``ctx``: the message,
    the executor's state, the shared state and what ``ctx`` tells a handler.

    :raises EncodeError: something the checkpoint codec cannot encode (with its path).
    """
    return {
        "executor": executor_id,
        "message": encode_value(message, "message"),
        "state": encode_value(ctx.state, "state"),
        "shared": encode_value(dict(ctx.shared), "shared"),
        # run, superstep, attempt, the message's index or delivery id: the worker's context
        # is built from it, so its idempotency key and request ids are the driver's
        "context": attrs.asdict(ctx.snapshot()),
    }


async def apply_result(
    graph: CompiledGraph,
    executor_id: str,
    result: Mapping[str, Any],
    ctx: WorkflowContext[Any, Any],
) -> None:
    """Replay what a remote invocation did into ``ctx``, in the order it did it: sent
    messages, outputs, custom events and requests; then its state and shared-state
    changes. Everything is decoded (against the workflow's declared types) before anything
    is applied, so a result that does not decode changes nothing.

    :raises: the handler's exception (a built-in class as itself, any other as
        :class:`RemoteInvocationError`) when the invocation failed.
    """
    error = result.get("error")
    if error is not None:
        raise _remote_error(error)
    types = declared_types(graph)
    effects = [
        (kind, [decode_value(v, types) for v in values]) for kind, *values in result["effects"]
    ]
    state = decode_value(result["state"], types)
    shared = {key: decode_value(value, types) for key, value in result["shared_set"].items()}
    for kind, values in effects:
        if kind == "send":
            await ctx.send_message(values[0], values[1])
        elif kind == "output":
            await ctx.yield_output(values[0])
        elif kind == "event":
            await ctx.add_event(values[0])
        elif kind == "request":
            request_id, request, response = values
            response_type = types.get(response, response)
            # the driver's context derives the worker's request id: both are built from
            # one snapshot, and make their requests in one order
            made = await ctx.request_info(request, response_type)
            if made != request_id:
                raise RemoteInvocationError(
                    f"{executor_id}.request_info",
                    f"the driver made request id {made!r} where the worker made "
                    f"{request_id!r}: the worker's context was not built from this "
                    "invocation's snapshot",
                    "",
                )
    for key in result["shared_deleted"]:
        await ctx.delete_shared_state(key)
    for key, value in shared.items():
        await ctx.set_shared_state(key, value)
    ctx.state.clear()
    ctx.state.update(state)


def _remote_error(error: Mapping[str, Any]) -> Exception:
    name, module, text = error["type"], error["module"], error["message"]
    remote_tb = error.get("traceback", "")
    cls = getattr(builtins, name, None) if module == "builtins" else None
    exc: Exception
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            exc = cls(text)
        except Exception:  # a built-in with a constructor of its own (UnicodeError …)
            exc = RemoteInvocationError(name, text, remote_tb)
    else:
        exc = RemoteInvocationError(f"{module}.{name}", text, remote_tb)
    add_note = getattr(exc, "add_note", None)
    if add_note is not None and remote_tb:
        add_note(f"remote traceback:\n{remote_tb}")
    return exc


class _Outbox:
    __slots__ = ("effects",)

    def __init__(self, effects: list[list[Any]]) -> None:
        self.effects = effects

    def append(self, item: tuple[str, Any, str | None]) -> None:
        self.effects.append(["send", item[1], item[2]])


class _Recorder:
    """The run a worker-side context writes to: it records, in order, what the handler
    did."""

    def __init__(self, snapshot: ContextSnapshot, shared: dict[str, Any]) -> None:
        self.run_id = snapshot.run_id
        self.superstep = snapshot.superstep
        self.delivery = snapshot.delivery
        self.shared = shared
        self.effects: list[list[Any]] = []
        self.outbox = _Outbox(self.effects)

    def note_read(self, executor_id: str, key: str) -> None:
        """Reads are not kept on a worker (the driver checks races among what it stages)."""

    async def shared_ready(self) -> None:
        """The worker's copy of the shared state is the one the invocation reads."""

    def emit_output(self, executor_id: str, data: Any) -> None:
        self.effects.append(["output", data])

    def emit_custom(self, executor_id: str, data: Any) -> None:
        self.effects.append(["event", data])

    def write_shared(self, executor_id: str, key: str, value: Any) -> None:
        # the worker's copy of the shared state: the driver stages what changed in it
        if value is DELETED:
            self.shared.pop(key, None)
        else:
            self.shared[key] = value

    def request_info(
        self, executor_id: str, request: Any, response_type: Any, *, request_id: str | None = None
    ) -> str:
        request_id = request_id or uuid.uuid4().hex
        self.effects.append(["request", request_id, request, _type_tag(response_type)])
        return request_id


def _type_tag(tp: Any) -> Any:
    return type_ref(tp) or repr(tp)


class RemoteExecutor:
    """The worker's side: one executor rebuilt from its node spec, running invocations
    encoded by :func:`encode_invocation` and returning what :func:`apply_result` replays.

    :param node: the node spec (:func:`node_payload`).
    :param manager: the plugin manager whose executor kinds build it (default: this
        process's).
    """

    def __init__(self, node: Mapping[str, Any], manager: Any = None) -> None:
        from plait import NodeSpec, WorkflowSpec, get_plugin_manager
        from plait.spi import CompiledGraph, build_executors, spec_converter

        spec_node: NodeSpec = spec_converter.structure(dict(node), NodeSpec)
        manager = manager or get_plugin_manager()
        one = WorkflowSpec(name=None, start=spec_node.id, nodes=(spec_node,), edge_groups=())
        self.executor = build_executors(one, {}, manager=manager, allow_imports=True)[spec_node.id]
        # the executor's one-node graph: what its invocations may decode is what it declares
        graph = CompiledGraph(one, {spec_node.id: self.executor}, {}, manager)
        self.types = declared_types(graph)

    async def invoke(self, invocation: Mapping[str, Any]) -> dict[str, Any]:
        """Run one invocation; the result is JSON-ready (an ``error`` record when the
        handler raised)."""
        types, eid = self.types, self.executor.id
        try:
            message = decode_value(invocation["message"], types)
            state = decode_value(invocation["state"], types)
            shared = decode_value(invocation["shared"], types)
        except PlaitError as exc:
            return _error_record(exc)
        found = self.executor.find_handler(message)
        if found is None:
            return _error_record(TypeError(f"executor {eid!r} has no handler for {message!r}"))
        snapshot = ContextSnapshot(**invocation["context"])
        recorder = _Recorder(snapshot, shared)
        before = {key: encode_value(value) for key, value in shared.items()}
        ctx = WorkflowContext.from_snapshot(snapshot, recorder, state)  # type: ignore[arg-type]
        try:
            await found.call(message, ctx)
            after = {key: encode_value(value, f"shared.{key}") for key, value in shared.items()}
            return {
                "effects": [
                    [kind, *(encode_value(v, kind) for v in values)]
                    for kind, *values in recorder.effects
                ],
                "state": encode_value(ctx.state, "state"),
                "shared_set": {k: v for k, v in after.items() if before.get(k) != v},
                "shared_deleted": [k for k in before if k not in after],
            }
        except Exception as exc:  # the handler's failure (or an unencodable effect)
            return _error_record(exc)


def _error_record(exc: BaseException) -> dict[str, Any]:
    import traceback

    cls = type(exc)
    return {
        "error": {
            "type": cls.__qualname__,
            "module": cls.__module__,
            "message": str(exc),
            "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        }
    }
