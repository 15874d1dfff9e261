"""The step context: what travels with the run from step to step.

Prior step outputs live in the *message*: every step receives the run's step context (a
JSON-ready dict), adds its own output and sends a new dict on. So the context is
checkpointed with the pending messages, is private to its run (concurrent runs share
nothing), and each branch of a parallel block carries its own copy until the block's join
merges them. Nothing is mutated in place: fan-out delivers one dict to several branches.

A foreach block is the exception that keeps N items from carrying N copies: the context
it started in is put once in the run's shared state (checkpointed too, under
:func:`foreach_key`), and each item's message carries only the item, a frame naming that
key, and the outputs of the body steps the item ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "MARK",
    "STEP_CONTEXT_EVENT",
    "STEP_CONTEXT_KEY",
    "StepsView",
    "foreach_key",
    "prior_block",
    "record",
    "start",
    "step_context",
    "template_data",
    "text",
]

#: the key that marks a step-context message (and its format version)
MARK = "plait_steps"
#: the key of the custom event the last step emits with the step context
STEP_CONTEXT_EVENT = "plait_steps.step_context"
#: the shared-state key the last step stores the step context under (``result.shared``)
STEP_CONTEXT_KEY = "step_context"


def start(message: Any) -> dict[str, Any]:
    """The step context of a run that starts on ``message`` (the user prompt), or
    ``message`` itself when it already is one."""
    if isinstance(message, dict) and message.get(MARK) == 1:
        return message
    prompt = message if isinstance(message, str) else _text(message)
    return {
        MARK: 1,
        "prompt": prompt,
        "steps": {},
        "prior": {},
        "runs": {},
        "attempts": {},
        "last": None,
    }


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def prior_block(state: Mapping[str, Any], prefix: str | None = None) -> str:
    """The user message of the next step: every prior step output in seed 002's block,
    then the original prompt (just the prompt for the first step). ``prefix`` (a rendered
    instruction) goes first, followed by a blank line. Linear in the prior steps."""
    prior: Mapping[str, Any] = state["prior"]
    prompt: str = state["prompt"]
    parts: list[str] = [prefix, ""] if prefix else []
    if prior:
        steps = state["steps"]
        parts += ["--- Prior Step Outputs ---", ""]
        for label, (who, step_id) in prior.items():
            entry = steps.get(step_id) or {}
            parts += [f"[{label} ({who})]:", _text(entry.get("output")), ""]
        parts += ["--- End Prior Step Outputs ---", ""]
    parts.append(prompt)
    return "\n".join(parts)


def record(
    state: Mapping[str, Any],
    step: str,
    entry: dict[str, Any],
    *,
    label: str | None,
    who: str | None,
    attempt: int | None,
    last: bool = True,
) -> dict[str, Any]:
    """A new step context: ``state`` plus ``entry`` as step ``step``'s result. A step that
    runs again (a loop) keeps its place in the prior-outputs block, with its new output."""
    new = dict(state)
    new["steps"] = {**state["steps"], step: entry}
    if label is not None and label not in state["prior"]:
        new["prior"] = {**state["prior"], label: [who, step]}
    if attempt is not None:
        new["attempts"] = {**state["attempts"], step: attempt}
    if last:
        new["last"] = step
    new.pop("branch", None)
    return new


def step_context(result: Any) -> dict[str, Any] | None:
    """The step context of a finished run (``result`` from ``Workflow.run``, or anything
    with its ``shared`` state or its ``events``): every step's output (``steps``), how often
    each step ran (``runs``: the loop counters), the attempt that succeeded
    (``attempts``), the prompt and the workflow's ``output``. ``None`` when the run did
    not reach its last step.

    The last step stores it as the run's shared state :data:`STEP_CONTEXT_KEY` (so it is
    in ``result.shared`` and checkpointed with the run) and emits it as a custom event.

    .. versionadded:: 0.1
    """
    recorded = (getattr(result, "shared", None) or {}).get(STEP_CONTEXT_KEY)
    if isinstance(recorded, dict):
        return recorded
    for event in reversed(getattr(result, "events", ()) or ()):
        data = getattr(event, "data", None)
        if isinstance(data, dict) and STEP_CONTEXT_EVENT in data:
            found: dict[str, Any] = data[STEP_CONTEXT_EVENT]
            return found
    return None


def summary(state: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The JSON the last step publishes as the run's step context."""
    return {
        "prompt": state["prompt"],
        "steps": state["steps"],
        "order": list(state["steps"]),
        "runs": state["runs"],
        "attempts": state["attempts"],
        "output": output,
    }


# -- what templates see -------------------------------------------------------------------


def _entry(entry: Any) -> Any:
    if isinstance(entry, dict) and isinstance(entry.get("outputs"), dict):
        return {**entry, "outputs": Outputs(entry["outputs"], entry.get("order") or [])}
    return entry


class Outputs(dict):  # type: ignore[type-arg]
    """A parallel block's ``outputs``: a map by step id that an integer indexes too, in
    the block's ``order`` (``outputs[0]``)."""

    def __init__(self, entries: Mapping[str, Any], order: Sequence[str]) -> None:
        super().__init__(entries)
        self._order = list(order)

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int:
            key = self._order[key]  # IndexError: the expression gives null
        return _entry(dict.__getitem__(self, key))


Sequence.register(Outputs)  # so the expression language indexes it with an integer


class StepsView(Mapping[str, Any]):
    """``steps`` as templates see it: the step context's ``steps`` map, with every
    parallel block's ``outputs`` indexable by position."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Mapping[str, Any]) -> None:
        self._steps = steps

    def __getitem__(self, key: str) -> Any:
        return _entry(self._steps[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


def template_data(
    state: Mapping[str, Any], steps: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The data a condition or an instruction template is evaluated over: ``steps`` (what
    ``$steps`` names: ``state``'s, or ``steps`` when given) and ``prompt``; inside a
    foreach body also ``item`` and ``index`` (what ``$item`` and ``$index`` name: the
    innermost foreach's item and its position)."""
    seen = state["steps"] if steps is None else steps
    data = {"steps": StepsView(seen), "prompt": state["prompt"]}
    frame = state.get("foreach")
    if frame is not None and frame["count"]:
        data["item"] = frame["value"]
        data["index"] = frame["index"]
    return data


def foreach_key(key: str) -> str:
    """The shared-state key of the context a foreach block's run started in."""
    return f"plait_steps.foreach/{key}"


def text(value: Any) -> str:
    """``value`` as a step's prompt: a string as it is, anything else as JSON."""
    return _text(value)
