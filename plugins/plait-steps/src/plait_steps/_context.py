"""The step context: what travels with the run from step to step, stored once.

A step's result (its *entry*: ``{"output", "agent", ...}``) is written once, to the run's
shared state under :func:`entry_key` (in a store that keeps blobs the shared state is a
tree of its keys, so a checkpoint stores the entries its superstep wrote, not every prior
output again). The message a step sends on is small:
the prompt, loop counters, and ``steps``, a map of step id to the shared-state key of that
step's entry — a reference, not a copy. Shared-state writes are staged, so an entry a step
writes in superstep ``t`` is readable from ``t + 1``, when its message is delivered.

Each branch of a parallel block carries its own ``steps`` map until the block's join merges
them, so a step sees exactly the steps its own path ran (the entries are shared, the map is
per message). Nothing is mutated in place: fan-out delivers one dict to several branches.

A foreach item runs in a scope of its own (``scope``: the block's run key and the item's
index), so items write different keys; the context the block started in is put once in
shared state (under :func:`foreach_key`), and each item's message carries only the item, a
frame naming that key, and the references of the body steps it ran. The gather drops an
item's entries once the block is done (its list is the block's output), and the last step
replaces the run's entries with the step context it publishes (:data:`STEP_CONTEXT_KEY`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "MARK",
    "STEP_CONTEXT_EVENT",
    "STEP_CONTEXT_KEY",
    "Entries",
    "StepsView",
    "entry_key",
    "foreach_key",
    "prior_block",
    "record",
    "start",
    "step_context",
    "template_data",
    "text",
]

#: the key that marks a step-context message (its value is the format version, :data:`FORMAT`)
MARK = "plait_steps"
#: the format of step-context messages: 2 carries references to entries in shared state
FORMAT = 2
#: the prefix of the shared-state keys step entries are stored under (:func:`entry_key`)
ENTRY_PREFIX = "plait_steps.out/"
#: the key of the custom event the last step emits with the step context
STEP_CONTEXT_EVENT = "plait_steps.step_context"
#: the shared-state key the last step stores the step context under (``result.shared``)
STEP_CONTEXT_KEY = "step_context"


def start(message: Any) -> dict[str, Any]:
    """The step context of a run that starts on ``message`` (the user prompt), or
    ``message`` itself when it already is one."""
    if isinstance(message, dict) and message.get(MARK) == FORMAT:
        return message
    prompt = message if isinstance(message, str) else _text(message)
    return fresh(prompt)


def fresh(prompt: str, scope: str = "") -> dict[str, Any]:
    """An empty step context on ``prompt`` whose steps write their entries in ``scope``."""
    return {
        MARK: FORMAT,
        "prompt": prompt,
        "scope": scope,
        "steps": {},
        "prior": {},
        "runs": {},
        "attempts": {},
        "last": None,
    }


def scope_prefix(scope: str) -> str:
    """The prefix of the shared-state keys of the entries written in ``scope`` (and in
    the scopes inside it)."""
    return f"{ENTRY_PREFIX}{scope}/" if scope else ENTRY_PREFIX


def entry_key(state: Mapping[str, Any], step: str, superstep: int) -> str:
    """The shared-state key of the entry step ``step`` writes in ``superstep`` in
    ``state``'s scope. Each run of a step writes a key of its own (a step runs once per
    superstep in a scope), so an entry never changes once written."""
    return f"{scope_prefix(state.get('scope') or '')}{step}@{superstep}"


class Entries(Mapping[str, Any]):
    """Step id -> its entry, read through a step context's references from the run's
    shared state (``fresh``: entries written in the running superstep, not yet visible
    there). A step whose entry is gone reads as ``{"output": None}``.

    An entry is stored as the step returned it: a large output field that an earlier
    step's output holds too costs a reference to the same blob, in a store that keeps
    blobs (:mod:`plait_durable`). Entries an earlier plait-steps stored *packed* (such a
    field left out and named, ``same``: field -> the key of the entry that holds it,
    ``fields``: the output's keys in order) are read whole, with those fields filled in.
    """

    __slots__ = ("_fresh", "_read", "_refs", "_shared")

    def __init__(
        self,
        refs: Mapping[str, str],
        shared: Mapping[str, Any],
        fresh: Mapping[str, Any] | None = None,
    ) -> None:
        self._refs = refs
        self._shared = shared
        self._fresh = fresh or {}
        self._read: dict[str, Any] = {}

    def refs(self) -> list[str]:
        """The keys of the entries of the steps seen, in the order they were first seen."""
        return list(dict.fromkeys(self._refs.values()))

    def ref(self, ref: str | None) -> Any:
        """The entry stored under ``ref`` (``{"output": None}`` when there is none)."""
        if ref is None:
            return {"output": None}
        read = self._read.get(ref)
        if read is not None:
            return read
        found = self._fresh.get(ref)
        if found is None:
            found = self._shared.get(ref)
        if found is None:
            return {"output": None}
        if isinstance(found, dict) and "same" in found:  # packed by an earlier plait-steps
            same, stored = found["same"], found["output"]
            output = {
                k: self.ref(same[k])["output"][k] if k in same else stored[k]
                for k in found["fields"]
            }
            found = {k: v for k, v in found.items() if k not in ("same", "fields")}
            found["output"] = output
        self._read[ref] = found
        return found

    def __getitem__(self, step: str) -> Any:
        return self.ref(self._refs[step])

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)

    def resolved(self, step: str) -> Any:
        """Step ``step``'s entry with a parallel block's ``outputs`` (references to its
        children's entries) replaced by those entries: the entry as JSON on its own."""
        return self._resolve(self[step])

    def _resolve(self, entry: Any) -> Any:
        """``entry`` with its ``outputs`` read, at every depth of nested blocks."""
        if isinstance(entry, dict) and isinstance(entry.get("outputs"), dict):
            outputs = {c: self._resolve(self.ref(r)) for c, r in entry["outputs"].items()}
            return {**entry, "outputs": outputs}
        return entry


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def prior_block(
    state: Mapping[str, Any], steps: Mapping[str, Any], prefix: str | None = None
) -> str:
    """The user message of the next step: every prior step output in seed 002's block,
    then the original prompt (just the prompt for the first step). ``steps`` maps step
    ids to entries (:class:`Entries`). ``prefix`` (a rendered instruction) goes first,
    followed by a blank line. Linear in the prior steps."""
    prior: Mapping[str, Any] = state["prior"]
    prompt: str = state["prompt"]
    parts: list[str] = [prefix, ""] if prefix else []
    if prior:
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
    ref: str,
    *,
    label: str | None,
    who: str | None,
    attempt: int | None,
    last: bool = True,
) -> dict[str, Any]:
    """A new step context: ``state`` plus ``ref`` (the shared-state key of its entry) as
    step ``step``'s result. A step that runs again (a loop) keeps its place in the
    prior-outputs block, with its new output."""
    new = dict(state)
    new["steps"] = {**state["steps"], step: ref}
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


def summary(state: Mapping[str, Any], entries: Entries, output: Any) -> dict[str, Any]:
    """The JSON the last step publishes as the run's step context: every entry read
    through ``entries``, so it stands on its own."""
    return {
        "prompt": state["prompt"],
        "steps": {step: entries.resolved(step) for step in state["steps"]},
        "order": list(state["steps"]),
        "runs": state["runs"],
        "attempts": state["attempts"],
        "output": output,
    }


# -- what templates see -------------------------------------------------------------------


def _entry(entry: Any, entries: Entries) -> Any:
    if isinstance(entry, dict) and isinstance(entry.get("outputs"), dict):
        outputs = {c: entries.ref(r) for c, r in entry["outputs"].items()}
        found = Outputs(outputs, entry.get("order") or [], entries, entry.get("aliases") or {})
        return {**entry, "outputs": found}
    return entry


class Outputs(dict):  # type: ignore[type-arg]
    """A parallel block's ``outputs``: a map by step id that an integer indexes too, in
    the block's ``order`` (``outputs[0]``). A child written without an id is found by its
    agent's name too (``aliases``: name -> step id), as seed 002's example reads it
    (``outputs.inner.outputs.researcher``), and a nested block's child by the flatter key
    ``"inner.researcher"``."""

    def __init__(
        self,
        found: Mapping[str, Any],
        order: Sequence[str],
        entries: Entries,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(found)
        self._order = list(order)
        self._entries = entries
        self._aliases = dict(aliases or {})

    def __getitem__(self, key: Any) -> Any:
        if type(key) is int:
            key = self._order[key]  # IndexError: the expression gives null
        elif not dict.__contains__(self, key):
            if key in self._aliases:
                key = self._aliases[key]
            elif isinstance(key, str) and "." in key:  # "inner.researcher"
                head, _, rest = key.partition(".")
                inner = self[head].get("outputs")
                if not isinstance(inner, Outputs):
                    raise KeyError(key)
                return inner[rest]
        return _entry(dict.__getitem__(self, key), self._entries)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]
        except (KeyError, IndexError, TypeError):
            return False
        return True


Sequence.register(Outputs)  # so the expression language indexes it with an integer


class StepsView(Mapping[str, Any]):
    """``steps`` as templates see it: the step entries (:class:`Entries`), with every
    parallel block's ``outputs`` indexable by position."""

    __slots__ = ("_steps",)

    def __init__(self, steps: Entries) -> None:
        self._steps = steps

    def __getitem__(self, key: str) -> Any:
        return _entry(self._steps[key], self._steps)

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


def template_data(state: Mapping[str, Any], steps: Entries) -> dict[str, Any]:
    """The data a condition or an instruction template is evaluated over: ``steps`` (what
    ``$steps`` names: the entries of the steps ``state`` has seen) and ``prompt``; inside
    a foreach body also ``item`` and ``index`` (what ``$item`` and ``$index`` name: the
    innermost foreach's item and its position)."""
    data = {"steps": StepsView(steps), "prompt": state["prompt"]}
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
