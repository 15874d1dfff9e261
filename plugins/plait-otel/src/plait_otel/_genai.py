"""A span per model call, after OpenTelemetry's GenAI semantic conventions: each traced
invocation gets an answerer of its outside calls (:func:`plait.spi.add_answerer`, place
``watch``: inside a budget's, which reserves the call first and may change its model, and
outside a recorder's, so a replayed call is traced too) that spans every ``llm.prompt``
call from its request and its answer.

Attributes (the conventions' names): ``gen_ai.operation.name`` (``chat``),
``gen_ai.request.model``, ``gen_ai.request.max_tokens``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.response.finish_reasons``; the tool calls the model made are counted in
``plait.tool_calls`` (the conventions trace a tool's execution as a span of its own, which
``llm`` runs inside the call). The invocation's span gets the totals of its calls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

__all__ = ["SpanCalls"]

#: the option names llm model plugins use for the output limit
_MAX_TOKENS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


class SpanCalls:
    """What spans the model calls of one traced invocation (a
    :class:`plait.spi.OutsideCalls`).

    :param tracer: where the call's spans come from (children of the current span, the
        invocation's).
    :param invocation: the invocation's span (it gets the totals of its calls).
    """

    __slots__ = ("invocation", "totals", "tracer")

    #: inside a budget (a refused call has no span), outside a recorder or a replay
    place = "watch"

    def __init__(self, tracer: Tracer, invocation: Span) -> None:
        self.tracer = tracer
        self.invocation = invocation
        self.totals = [0, 0, 0]  # model calls, input tokens, output tokens

    async def call(
        self,
        kind: str,
        request: Mapping[str, Any],
        invoke: Callable[[Mapping[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Span a model call (with the model the request asks for: a degrade budget's
        cheaper one, if it chose one); other calls pass through."""
        if kind != "llm.prompt":
            return await invoke(request)
        model_id = str(request.get("model"))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model_id,
        }
        options = request.get("options") or {}
        limit = next((options[n] for n in _MAX_TOKENS if options.get(n) is not None), None)
        if limit is not None:
            attributes["gen_ai.request.max_tokens"] = int(limit)
        span = self.tracer.start_span(
            f"chat {model_id}", kind=SpanKind.CLIENT, attributes=attributes
        )
        try:
            answer = await invoke(request)
        except BaseException as error:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            span.end()
            raise
        self._settle(span, model_id, answer)
        return answer

    def value(self, kind: str, produce: Callable[[], Any]) -> Any:
        """The time and random numbers are not spanned: passed through."""
        return produce()

    def _settle(self, span: Span, model_id: str, answer: Any) -> None:
        """End the call's span with what its answer says it used."""
        answer = answer if isinstance(answer, Mapping) else {}
        usage = answer.get("usage")
        usage = usage if isinstance(usage, Mapping) else {}
        input_tokens, output_tokens = usage.get("input"), usage.get("output")
        calls = answer.get("tool_calls")
        reasons = answer.get("finish_reasons")
        span.set_attribute("gen_ai.response.model", str(answer.get("model") or model_id))
        if isinstance(input_tokens, int):
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if isinstance(output_tokens, int):
            span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        if isinstance(reasons, list) and reasons:
            span.set_attribute("gen_ai.response.finish_reasons", [str(r) for r in reasons])
        span.set_attribute("plait.tool_calls", len(calls) if isinstance(calls, list) else 0)
        span.end()
        totals = self.totals
        totals[0] += 1
        totals[1] += input_tokens if isinstance(input_tokens, int) else 0
        totals[2] += output_tokens if isinstance(output_tokens, int) else 0
        invocation = self.invocation
        invocation.set_attribute("plait.model_calls", totals[0])
        invocation.set_attribute("gen_ai.usage.input_tokens", totals[1])
        invocation.set_attribute("gen_ai.usage.output_tokens", totals[2])
