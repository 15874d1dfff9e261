"""A span per model call, after OpenTelemetry's GenAI semantic conventions: the meter
(:data:`plait.spi.METER`) each traced invocation gets, wrapping the meter it found (a
budget's), so the call is reserved first and traced as it runs.

Attributes (the conventions' names): ``gen_ai.operation.name`` (``chat``),
``gen_ai.request.model``, ``gen_ai.request.max_tokens``, ``gen_ai.response.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.response.finish_reasons``; the tool calls the model made are counted in
``plait.tool_calls`` (the conventions trace a tool's execution as a span of its own, which
``llm`` runs inside the call). The invocation's span gets the totals of its calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer
from plait.spi import Meter, MeteredCall

__all__ = ["SpanMeter"]


class SpanMeter:
    """The meter of one traced invocation.

    :param tracer: where the call's spans come from (children of the current span, the
        invocation's).
    :param invocation: the invocation's span (it gets the totals of its calls).
    :param inner: the meter this one wraps (a budget's), if any: asked first.
    """

    __slots__ = ("inner", "invocation", "totals", "tracer")

    def __init__(self, tracer: Tracer, invocation: Span, inner: Meter | None) -> None:
        self.tracer = tracer
        self.invocation = invocation
        self.inner = inner
        self.totals = [0, 0, 0]  # model calls, input tokens, output tokens

    async def model_call(
        self, *, model_id: str, prompt: str, max_tokens: int | None
    ) -> MeteredCall:
        """Reserve through the inner meter (which may refuse the call: then no span), then
        start the call's span."""
        inner = None
        if self.inner is not None:
            inner = await self.inner.model_call(
                model_id=model_id, prompt=prompt, max_tokens=max_tokens
            )
            model_id = inner.model_id
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model_id,
        }
        if max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = max_tokens
        span = self.tracer.start_span(
            f"chat {model_id}", kind=SpanKind.CLIENT, attributes=attributes
        )
        return _TracedCall(self, span, inner, model_id)


class _TracedCall:
    """One model call's span, ended when the call is settled or abandoned."""

    __slots__ = ("_model_id", "inner", "meter", "span")

    def __init__(
        self, meter: SpanMeter, span: Span, inner: MeteredCall | None, model_id: str
    ) -> None:
        self.meter = meter
        self.span = span
        self.inner = inner
        self._model_id = model_id

    @property
    def model_id(self) -> str:
        """The model called (a degrade budget's cheaper one, if it chose one)."""
        return self._model_id

    def settle(
        self,
        input_tokens: int | None,
        output_tokens: int | None,
        *,
        tool_calls: int = 0,
        response_model: str | None = None,
        finish_reasons: Sequence[str] = (),
    ) -> None:
        """End the span with the usage (and tell the inner call)."""
        if self.inner is not None:
            self.inner.settle(
                input_tokens,
                output_tokens,
                tool_calls=tool_calls,
                response_model=response_model,
                finish_reasons=finish_reasons,
            )
        span = self.span
        span.set_attribute("gen_ai.response.model", response_model or self._model_id)
        if input_tokens is not None:
            span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
        if output_tokens is not None:
            span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
        if finish_reasons:
            span.set_attribute("gen_ai.response.finish_reasons", list(finish_reasons))
        span.set_attribute("plait.tool_calls", tool_calls)
        span.end()
        totals = self.meter.totals
        totals[0] += 1
        totals[1] += input_tokens or 0
        totals[2] += output_tokens or 0
        invocation = self.meter.invocation
        invocation.set_attribute("plait.model_calls", totals[0])
        invocation.set_attribute("gen_ai.usage.input_tokens", totals[1])
        invocation.set_attribute("gen_ai.usage.output_tokens", totals[2])

    def abandon(self, error: BaseException | None) -> None:
        """End the span failed (and tell the inner call)."""
        if self.inner is not None:
            self.inner.abandon(error)
        if error is not None:
            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
        self.span.end()
