"""The step context is stored once: a step's result goes to shared state once, messages
carry references, and a result that passes its input on stores only what it added (the
field it passed on is the same blob); entries an earlier plait-steps packed still read."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import anyio
import attrs
import plait
import pytest
from packed_workflow import BIG as OLD_BIG
from plait_durable import decode_checkpoint, encode_checkpoint, load_blob, open_store, resolve_state
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

BIG = "".join(f"word{i} " for i in range(1500))  # 11 kB, no two pieces alike


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
    workflow = plait.load(CHAIN, format="steps", executors=EXECUTORS)
    url = f"memory://{uuid.uuid4().hex}"
    result = await workflow.run("p", checkpoint=url)
    store = open_store(url)
    # `read`, `tag` and `rate` each store the text in their output, and the last step's
    # published context holds it too: the run's blobs hold each word of it once, but for
    # the text's last piece, below the size a blob pays for, which each output holds inline
    blobs = await store.get_blobs(result.run_id, list(await store.blob_hashes(result.run_id)))
    stored = [json.dumps(load_blob(data)) for data in blobs.values()]
    held = [sum(f"word{i} " in text for text in stored) for i in range(1500)]
    assert held.count(1) > 1400  # (a word cut between two pieces is in none)
    assert all(f"word{i} " in BIG[-256:] for i, count in enumerate(held) if count > 1)
    # the entries written in shared state hold every field, as the step returned it
    checkpoints = [await store.load(i.checkpoint_id) for i in await store.list(result.run_id)]
    shared = await resolve_state(
        dict(checkpoints[-2].state), store=store, run_id=result.run_id, where="c"
    )
    (rate,) = [v for k, v in shared["shared"].items() if k.startswith("plait_steps.out/rate@")]
    assert rate["output"] == {"text": BIG, "name": "p", "tags": ["a", "b"], "score": len(BIG)}
    # what the run publishes has every output whole, fields in their order
    context = step_context(result)
    assert context is not None
    assert list(context["steps"]["rate"]["output"]) == ["text", "name", "tags", "score"]
    assert context["steps"]["rate"]["output"]["text"] == BIG
    assert not [k for k in result.shared if k.startswith("plait_steps.out/")]
    assert max(len(encode_checkpoint(cp)) for cp in checkpoints) < len(BIG)


# -- entries an earlier plait-steps packed ---------------------------------------------

HERE = Path(__file__).resolve().parent


async def test_a_run_whose_entries_an_earlier_plait_steps_packed_resumes(tmp_path: Path) -> None:
    """``legacy/packed.json``: a run of ``packed_workflow.py`` written by main at 63c9029,
    its ``tag`` and ``rate`` entries packed (``same``/``fields``), in deltas. Resumed from
    the checkpoint before the last step, in a process of its own, the last step reads
    ``rate``'s output whole, and the published context has every output whole."""
    written = json.loads((HERE / "legacy" / "packed.json").read_text(encoding="utf-8"))
    checkpoints = [decode_checkpoint(text.encode("utf-8")) for text in written["checkpoints"]]
    blobs = {digest: bytes.fromhex(data) for digest, data in written["blobs"].items()}
    packed = [cp for cp in checkpoints if '"same"' in json.dumps(cp.state)]
    assert packed and {cp.state["kind"] for cp in packed} == {"delta"}
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store = open_store(url)
    try:
        for checkpoint in checkpoints:
            await store.save(checkpoint, blobs=blobs)
    finally:
        await store.aclose()
    before_last = packed[-1]
    assert before_last.superstep == 3
    done = await anyio.run_process(
        [sys.executable, str(HERE / "packed_workflow.py"), "resume", url, before_last.checkpoint_id]
    )
    resumed = json.loads(done.stdout)
    assert resumed["outputs"] == [f"p:a+b:{len(OLD_BIG)}:{len(OLD_BIG)}"]
    steps = resumed["step_context"]["steps"]
    assert steps["rate"]["output"] == {
        "text": OLD_BIG,
        "name": "p",
        "tags": ["a", "b"],
        "score": len(OLD_BIG),
    }
    assert steps["tag"]["output"] == {"text": OLD_BIG, "name": "p", "tags": ["a", "b"]}
