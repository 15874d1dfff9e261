"""Executors: units of work with typed handlers.

Subclass :class:`Executor` and mark async methods with :func:`handler`, or turn a plain
async function into an executor with :func:`executor`. Input types come from the message
parameter's annotation; output types from ``WorkflowContext[Out, WorkflowOut]`` or, when
the function takes no context, from its return annotation (a returned value is sent on).

Handler dispatch by message type is resolved once per concrete type and cached.

Executors are shared by every run of a workflow, so keep run state out of ``self``: use
``ctx.state`` (per executor, per run) and ``ctx.shared`` (per run).
"""

from __future__ import annotations

import copy
import inspect
import types
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

import typing_extensions

from ._context import RequestResponse, WorkflowContext
from ._types import is_class_decidable, is_instance, main_module_name, type_name

if TYPE_CHECKING:
    from ._options import RetryPolicy

__all__ = ["Executor", "FunctionExecutor", "Handler", "handler", "executor"]

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
_MARK = "__plait_handler__"
_UNKNOWN: tuple[Any, ...] = (Any,)
_NOTHING = (typing.NoReturn, typing_extensions.Never, None, type(None))
#: an executor's handlers, and the input, output and workflow output types they declare
_Declared = tuple[tuple["Handler", ...], tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]


class Handler:
    """One resolved handler: what it accepts, what it may send and yield, how to call it."""

    __slots__ = ("call", "decidable", "input_type", "name", "output_types", "workflow_output_types")

    def __init__(
        self,
        name: str,
        input_type: Any,
        output_types: tuple[Any, ...],
        workflow_output_types: tuple[Any, ...],
        call: Callable[[Any, WorkflowContext[Any, Any]], Awaitable[Any]],
        decidable: bool | None = None,
    ) -> None:
        self.name = name
        self.input_type = input_type
        self.output_types = output_types
        self.workflow_output_types = workflow_output_types
        self.call = call
        self.decidable = is_class_decidable(input_type) if decidable is None else decidable

    def __repr__(self) -> str:
        return f"<Handler {self.name}({type_name(self.input_type)})>"


def handler(fn: F) -> F:
    """Mark an ``async def`` method of an :class:`Executor` subclass as a message handler.

    The method takes ``(self, message: T, ctx: WorkflowContext[Out, WorkflowOut])``; its
    message annotation decides which messages it receives.
    """
    target: Any = fn  # keep F: iscoroutinefunction's TypeGuard would narrow it
    if not inspect.iscoroutinefunction(target):
        raise TypeError(f"@handler needs an async def, got {_qualname(fn)}")
    setattr(fn, _MARK, True)
    return fn


class Executor:
    """Base class of every executor.

    :param id: unique id within a workflow.
    :param max_concurrency: how many of this executor's messages of one superstep may be
        handled at once (default 1: in order).
    :param max_visits: how many supersteps this executor may run in (``None``: no limit).
    :param retry: a :class:`~plait.RetryPolicy` for failed invocations.
    :param timeout: seconds per invocation (an ``ExecutorTimeoutError`` past it).
    :param order: ``"arrival"`` takes messages as they arrive: in the pipelined schedule
        an invocation starts without waiting for the rest of its superstep's messages
        (``ctx.idempotency_key`` then names the message by its delivery id); ``None`` (or
        ``"canonical"``) takes one superstep's messages together, in the canonical order.
        An executor with ``max_concurrency`` above 1 takes them on arrival either way.
    """

    def __init__(
        self,
        id: str,
        *,
        max_concurrency: int | None = None,
        max_visits: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        order: str | None = None,
    ) -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"executor id must be a non-empty string, got {id!r}")
        if order is not None and order not in ("canonical", "arrival"):
            raise ValueError(
                f"executor {id!r}: order must be 'canonical', 'arrival' or None, got {order!r}"
            )
        self.id = id
        self.order = order
        self.max_concurrency = max_concurrency
        self.max_visits = max_visits
        self.retry = retry
        self.timeout = timeout
        self.handlers: tuple[Handler, ...] = tuple(self.declare_handlers())
        self._dispatch: dict[type, Handler] = {}
        self._declared: _Declared | None = None  # (see _declared_types)

    def declare_handlers(self) -> Iterable[Handler]:
        """This executor's handlers, in the order dispatch tries them. By default its
        :func:`handler` methods (the most derived first); an executor whose handlers
        depend on its configuration (what it accepts or sends is known only once it is
        built) overrides this and returns :class:`~plait.spi.Handler` objects built from
        ``self``, so a copy (:meth:`with_id`) gets handlers bound to itself. Called once,
        when the executor is made.
        """
        return [_resolve_handler(getattr(self, name)) for name in _marked(type(self))]

    # -- declared types ----------------------------------------------------------------

    @property
    def input_types(self) -> tuple[Any, ...]:
        """Types this executor's handlers accept from edges, in handler order (a handler for
        :class:`~plait.RequestResponse` takes answers to requests, not messages)."""
        return self._declared_types()[1]

    @property
    def output_types(self) -> tuple[Any, ...]:
        """Message types it may send (``(Any,)`` when unknown)."""
        return self._declared_types()[2]

    @property
    def workflow_output_types(self) -> tuple[Any, ...]:
        """Types it may yield as workflow outputs."""
        return self._declared_types()[3]

    def _declared_types(self) -> _Declared:
        """``(handlers, input types, output types, workflow output types)``, collected once
        per ``handlers`` tuple: building a workflow asks each node for them several times
        (type wiring, the node's spec). A copy whose handlers are declared again
        (:meth:`with_id`) has another tuple, so its types are collected again.
        """
        handlers = self.handlers
        try:  # an attribute read: building asks each node several times
            found = self._declared
        except AttributeError:  # an executor that skipped Executor.__init__
            found = None
        if found is None or found[0] is not handlers:
            found = self._declared = _declared_by(handlers)
        return found

    # -- dispatch ----------------------------------------------------------------------

    def find_handler(self, message: Any) -> Handler | None:
        """The handler for ``message``: an exact type match first, then declaration order."""
        cls = type(message)
        found = self._dispatch.get(cls)
        if found is not None:
            return found
        cacheable = True
        match: Handler | None = None
        for h in self.handlers:
            if h.input_type is cls:
                match = h
                break
        if match is None:
            for h in self.handlers:
                if is_instance(message, h.input_type):
                    match = h
                    break
                cacheable = cacheable and h.decidable
        if match is not None and cacheable and match.decidable:
            self._dispatch[cls] = match
        return match

    def with_id(self, id: str) -> Executor:
        """A copy of this executor under another id (its handlers bound to the copy), so
        one object can serve several nodes: a fragment used twice, a flow naming the same
        agent at two places.
        """
        clone = copy.copy(self)  # shallow: a class's own ``__copy__`` decides
        clone.id = id
        # class executors' handlers are methods bound to ``self``: collect them again on
        # the copy, unless its class copies itself or its handlers are the function's
        own_copy = getattr(type(self), "__copy__", None) is not None
        reusable = type(self).declare_handlers is FunctionExecutor.declare_handlers
        if not own_copy and not reusable:
            clone.handlers = tuple(clone.declare_handlers())
        clone._dispatch = {}  # dispatch is cached per executor object
        return clone

    # -- checkpointing -----------------------------------------------------------------

    def snapshot_state(self, state: dict[str, Any]) -> Any:
        """Return a JSON-ready snapshot of this executor's per-run ``state`` (override)."""
        return state

    def restore_state(self, snapshot: Any) -> dict[str, Any]:
        """Inverse of :meth:`snapshot_state` (override together)."""
        return dict(snapshot or {})

    def __repr__(self) -> str:
        accepts = ", ".join(type_name(t) for t in self.input_types)
        return f"<{type(self).__name__} {self.id!r} accepts {accepts}>"


class FunctionExecutor(Executor):
    """An executor around one async function (what :func:`executor` builds)."""

    def __init__(
        self,
        fn: Callable[..., Awaitable[Any]],
        *,
        id: str | None = None,
        max_concurrency: int | None = None,
        max_visits: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        order: str | None = None,
    ) -> None:
        if not _is_async_def(fn):
            raise TypeError(f"@executor needs an async def, got {_qualname(fn)}")
        self.fn = fn
        super().__init__(
            id or fn.__name__,
            max_concurrency=max_concurrency,
            max_visits=max_visits,
            retry=retry,
            timeout=timeout,
            order=order,
        )

    def declare_handlers(self) -> Iterable[Handler]:
        """One handler: the function's."""
        return (_resolve_handler(self.fn),)

    @property
    def ref(self) -> str:
        """``module:qualname`` of the wrapped function; a script's ``__main__`` is named by
        the module it would be when imported (as :func:`plait.spi.code_ref` does), so the
        process that resumes the run names it the same."""
        module = self.fn.__module__
        if module == "__main__":
            module = main_module_name()
        return f"{module}:{self.fn.__qualname__}"


@overload
def executor(fn: Callable[..., Awaitable[Any]], /) -> FunctionExecutor: ...


@overload
def executor(
    *,
    id: str | None = None,
    max_concurrency: int | None = None,
    max_visits: int | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    order: str | None = None,
) -> Callable[[Callable[..., Awaitable[Any]]], FunctionExecutor]: ...


def executor(
    fn: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    id: str | None = None,
    max_concurrency: int | None = None,
    max_visits: int | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    order: str | None = None,
) -> FunctionExecutor | Callable[[Callable[..., Awaitable[Any]]], FunctionExecutor]:
    """Turn an ``async def f(message: T, ctx: WorkflowContext[Out, WOut])`` into an executor.

    The context parameter is optional; a function that returns a value (not ``None``)
    sends it on, as if it had called ``ctx.send_message``. The keyword arguments are
    :class:`Executor`'s (``order="arrival"``: take messages as they arrive).
    """

    def wrap(f: Callable[..., Awaitable[Any]]) -> FunctionExecutor:
        return FunctionExecutor(
            f,
            id=id,
            max_concurrency=max_concurrency,
            max_visits=max_visits,
            retry=retry,
            timeout=timeout,
            order=order,
        )

    return wrap(fn) if fn is not None else wrap


# -- introspection -------------------------------------------------------------------------


def _qualname(fn: Any) -> str:
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{getattr(fn, '__module__', '?')}.{qualname}"


def _is_async_def(fn: Any) -> bool:
    """``inspect.iscoroutinefunction(fn)``, answered at once for a plain ``async def``
    function (what ``@executor`` gets, once per node) without its unwrapping of methods
    and partials."""
    if type(fn) is types.FunctionType and fn.__code__.co_flags & inspect.CO_COROUTINE:
        return True
    return inspect.iscoroutinefunction(fn)


#: the names of each class's handler methods, most derived first (found once per class)
_MARKED: weakref.WeakKeyDictionary[type, tuple[str, ...]] = weakref.WeakKeyDictionary()


def _marked(cls: type) -> tuple[str, ...]:
    """The names of ``cls``'s :func:`handler` methods, the most derived first (a DAG of
    1,000 nodes of one class walks its MRO once)."""
    found = _MARKED.get(cls)
    if found is None:
        names: list[str] = []
        for klass in cls.__mro__:
            for name, fn in vars(klass).items():
                if name not in names and getattr(fn, _MARK, False):
                    names.append(name)
        found = _MARKED[cls] = tuple(names)
    return found


def _resolve_handler(fn: Callable[..., Awaitable[Any]]) -> Handler:
    name, input_type, outputs, workflow_outputs, with_ctx, forward, decidable = _shape(fn)
    call = _make_call(fn, with_ctx=with_ctx, forward=forward)
    return Handler(name, input_type, outputs, workflow_outputs, call, decidable)


#: What reading a handler's signature found, by the ``id`` of its code: reading type hints
#: costs far more than building an executor, and closures made by one ``def`` (1,000
#: ``@executor`` nodes from a loop) share their code and annotations, hence their shape.
#: An entry holds the code (its id stays its own), the id of the globals string
#: annotations resolve in and the annotations it was read with; a function whose differ is
#: read again. Nothing is hashed but the id: hashing code and generic aliases cost more.
_BY_CODE: dict[int, tuple[Any, int, dict[str, Any], tuple[Any, ...]]] = {}


def _shape(fn: Callable[..., Awaitable[Any]]) -> tuple[Any, ...]:
    """:func:`_read_shape` of ``fn``, read once per code, globals and annotations."""
    code: Any
    annotations: Any
    if type(fn) is types.FunctionType:  # (most handlers: read without getattr's defaults)
        code, annotations, scope = fn.__code__, fn.__annotations__, id(fn.__globals__)
    else:
        function = getattr(fn, "__func__", fn)  # a bound method's shape is its function's
        code = getattr(function, "__code__", None)
        annotations = getattr(function, "__annotations__", None)
        if code is None or not isinstance(annotations, dict):
            return _read_shape(fn)
        scope = id(getattr(function, "__globals__", None))
    known = _BY_CODE.get(id(code))
    if known is not None and known[0] is code and known[1] == scope and known[2] == annotations:
        return known[3]
    shape = _read_shape(fn)
    if known is not None or len(_BY_CODE) < 4096:
        _BY_CODE[id(code)] = (code, scope, dict(annotations), shape)
    return shape


def _read_shape(fn: Callable[..., Awaitable[Any]]) -> tuple[Any, ...]:
    name = _qualname(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # unresolvable forward reference
        raise TypeError(f"cannot read the annotations of {name}: {exc}") from exc
    params = list(inspect.signature(fn).parameters.values())  # a bound method has no self
    if not params:
        raise TypeError(f"handler {name} must take the message as its first parameter")
    message_param, rest = params[0], params[1:]
    input_type = hints.get(message_param.name, Any)
    ctx_param = next((p for p in rest if _is_context(hints.get(p.name))), None)
    if ctx_param is None and len(rest) == 1 and rest[0].name not in hints:
        ctx_param = rest[0]  # an unannotated second parameter is the context
    if len(rest) > (1 if ctx_param is not None else 0):
        raise TypeError(f"handler {name} takes too many parameters (message, ctx at most)")
    returns = hints.get("return", Any)
    returns_value = returns not in (None, type(None))
    if ctx_param is not None:
        outputs, workflow_outputs = _context_types(hints.get(ctx_param.name))
    else:
        outputs, workflow_outputs = (), ()
    if returns_value and returns is not typing.NoReturn:
        outputs = _union_of((outputs, _UNKNOWN if returns is Any else (returns,)))
    with_ctx = ctx_param is not None
    decidable = is_class_decidable(input_type)
    return (name, input_type, outputs, workflow_outputs, with_ctx, returns_value, decidable)


def _make_call(
    fn: Callable[..., Awaitable[Any]], *, with_ctx: bool, forward: bool
) -> Callable[[Any, WorkflowContext[Any, Any]], Awaitable[Any]]:
    if with_ctx and not forward:
        return fn

    async def call(message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        result = await (fn(message, ctx) if with_ctx else fn(message))
        if result is not None:
            await ctx.send_message(result)

    return call


def _is_context(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return isinstance(origin, type) and issubclass(origin, WorkflowContext)


def _context_types(annotation: Any) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    args = typing.get_args(annotation)
    if not args:
        return _UNKNOWN, _UNKNOWN
    out = args[0]
    workflow_out = args[1] if len(args) > 1 else typing.NoReturn
    return _split(out), _split(workflow_out)


def _split(tp: Any) -> tuple[Any, ...]:
    if tp in _NOTHING:
        return ()
    if typing.get_origin(tp) is typing.Union or type(tp).__name__ == "UnionType":
        return tuple(typing.get_args(tp))
    return (tp,)


def _declared_by(handlers: tuple[Handler, ...]) -> _Declared:
    """``(handlers, input types, output types, workflow output types)`` of ``handlers``."""
    if len(handlers) == 1:
        # one handler (every function executor): the types it declares, as they are
        # when it declares at most one of each kind (the union of one type is itself)
        (only,) = handlers
        inputs = () if only.input_type is RequestResponse else (only.input_type,)
        outputs = _one_group(only.output_types)
        return handlers, inputs, outputs, _one_group(only.workflow_output_types)
    return (
        handlers,
        tuple(h.input_type for h in handlers if h.input_type is not RequestResponse),
        _union_of(h.output_types for h in handlers),
        _union_of(h.workflow_output_types for h in handlers),
    )


def _one_group(group: tuple[Any, ...]) -> tuple[Any, ...]:
    """:func:`_union_of` one handler's ``group`` of types: the tuple itself when it holds
    one type other than ``Any``, or none."""
    if type(group) is tuple and (not group or (len(group) == 1 and group[0] is not Any)):
        return group
    return _union_of((group,))


def _union_of(groups: typing.Iterable[tuple[Any, ...]]) -> tuple[Any, ...]:
    out: list[Any] = []
    for group in groups:
        for tp in group:
            if tp is Any:
                return _UNKNOWN
            if tp not in out:
                out.append(tp)
    return tuple(out)
