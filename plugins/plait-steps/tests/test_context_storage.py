"""The step context is stored once: a step's result goes to shared state once, messages
carry references, and a result that passes its input on stores only what it added."""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import plait
import pytest
from plait_durable import encode_checkpoint, open_store, resolve_state
from plait_steps import step_context

pytestmark = pytest.mark.anyio

CHAIN = """
workflow:
  - id: read
    type: agent
    name: reader
  - id: tag
    type: agent
    name: tagger
    input: "{{ $steps.read.output }}"
  - id: rate
    type: agent
    name: rater
    input: "{{ $steps.tag.output }}"
  - id: last
    type: agent
    name: closer
    input: "{{ $steps.rate.output.tags }}"
"""

BIG = "word " * 2000  # 10 kB


async def reader(prompt: str) -> dict[str, Any]:
    return {"text": BIG, "name": prompt}


async def tagger(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "tags": ["a", "b"]}


async def rater(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "score": len(page["text"])}


async def closer(tags: list[str]) -> str:
    return "+".join(tags)


EXECUTORS = {"reader": reader, "tagger": tagger, "rater": rater, "closer": closer}


async def _checkpoints() -> tuple[Any, list[Any]]:
    workflow = plait.load(CHAIN, format="steps", executors=EXECUTORS)
    url = f"memory://{uuid.uuid4().hex}"
    result = await workflow.run("p", checkpoint=url)
    store = open_store(url)
    checkpoints = [await store.load(i.checkpoint_id) for i in await store.list(result.run_id)]
    # values the store keeps as blobs (content-addressed, once per run) read back whole
    return result, [
        attrs.evolve(
            cp,
            state=await resolve_state(
                dict(cp.state), store=store, run_id=cp.run_id, where=cp.checkpoint_id
            ),
        )
        for cp in checkpoints
    ]


async def test_messages_carry_references_not_prior_outputs() -> None:
    result, checkpoints = await _checkpoints()
    assert result.outputs == ["a+b"]
    for checkpoint in checkpoints:
        for messages in checkpoint.state["pending"].values():
            for message in messages:
                assert "word" not in str(message)  # the 10 kB text is never in a message


async def test_the_large_field_is_stored_once_and_read_whole() -> None:
    result, checkpoints = await _checkpoints()
    # the text is in the entry `read` wrote only; `tag` and `rate` name it (a checkpoint
    # holds the shared state whole, or, a delta in a store without blobs, what changed)
    written = {
        key: value
        for cp in checkpoints
        for key, value in {
            **(cp.state.get("shared") or {}),
            **(cp.state.get("shared_changes") or {}).get("set", {}),
        }.items()
        if key.startswith("plait_steps.out/")
    }
    assert [k for k, v in written.items() if "word" in str(v)] == ["plait_steps.out/read@1"]
    rate = [v for k, v in written.items() if k.startswith("plait_steps.out/rate@")]
    assert rate and rate[0]["same"] == {"text": "plait_steps.out/read@1"}
    # before the last one (which holds the published step context, every output whole)
    assert max(len(encode_checkpoint(cp)) for cp in checkpoints[:-1]) < 2 * len(BIG)
    # what the run publishes has every output whole, fields in their order
    context = step_context(result)
    assert context is not None
    assert list(context["steps"]["rate"]["output"]) == ["text", "name", "tags", "score"]
    assert context["steps"]["rate"]["output"]["text"] == BIG
    assert not [k for k in result.shared if k.startswith("plait_steps.out/")]
