"""A model call under a budget: what the agent tells the run's meter
(:data:`plait.spi.METER`, set by ``plait-budgets`` for a budgeted run) before the call
starts, and after it ends, from llm's usage report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait.spi import Meter, MeteredCall

__all__ = ["reserve", "settle", "settle_recorded", "switch_model"]

#: the option names llm model plugins use for the output limit
_MAX_TOKENS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


async def reserve(
    meter: Meter, model_id: str, prompt: str, conversation: Any, kwargs: Mapping[str, Any]
) -> MeteredCall:
    """Reserve the call's worst case: every text it sends (the system prompt, the
    conversation so far, the prompt) and its ``max_tokens`` option.

    :raises PlaitError: a budget has no room (the call must not start).
    """
    sent = [str(kwargs.get("system") or ""), prompt]
    if conversation is not None:
        for earlier in conversation.responses:
            sent.append(str(earlier.prompt.prompt or ""))
            sent.append(str(earlier.text_or_raise()))
    limit = next((kwargs[name] for name in _MAX_TOKENS if kwargs.get(name) is not None), None)
    return await meter.model_call(
        model_id=model_id,
        prompt="\n".join(t for t in sent if t),
        max_tokens=None if limit is None else int(limit),
    )


def settle(metered: MeteredCall, response: Any) -> None:
    """Replace the reservation by the usage llm reports (a chain's: every response in it,
    with the tool calls the model made)."""
    responses = list(response.responses()) if hasattr(response, "responses") else [response]
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    tools = 0
    reasons: list[str] = []
    for one in responses:
        usage = one.usage()
        if usage.input is None or input_tokens is None:
            input_tokens = None
        else:
            input_tokens += usage.input
        if usage.output is None or output_tokens is None:
            output_tokens = None
        else:
            output_tokens += usage.output
        tools += len(one.tool_calls())
        reason = (one.response_json or {}).get("finish_reason")
        if isinstance(reason, str):
            reasons.append(reason)
    last = responses[-1] if responses else None
    metered.settle(
        input_tokens,
        output_tokens,
        tool_calls=tools,
        response_model=str(getattr(last, "resolved_model", None) or last.model.model_id)
        if last is not None
        else None,
        finish_reasons=reasons,
    )


def switch_model(target: Any, model_id: str) -> Any:
    """What to prompt once a ``degrade`` budget chose the cheaper ``model_id``: that model,
    or the conversation carried over to it."""
    import llm

    model = llm.get_model(model_id)
    if hasattr(target, "responses"):  # a conversation: go on with the cheaper model
        target.model = model
        return target
    return model


def settle_recorded(metered: MeteredCall, answer: Mapping[str, Any]) -> None:
    """Replace the reservation by what a recorded answer says the call used (a replay
    answers from the record: no response of llm's to read)."""
    usage = answer.get("usage") or {}
    calls = answer.get("tool_calls") or []
    metered.settle(
        usage.get("input") if isinstance(usage.get("input"), int) else None,
        usage.get("output") if isinstance(usage.get("output"), int) else None,
        tool_calls=len(calls) if isinstance(calls, list) else 0,
    )
