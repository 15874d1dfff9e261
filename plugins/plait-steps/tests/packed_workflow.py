"""The steps workflow whose checkpoints ``legacy/packed.json`` holds: a run written by
Plait when plait-steps packed its entries itself (main at 63c9029: a step's output field
equal to an earlier step's was stored as a reference to that entry, ``same``/``fields``).
Every later Plait must resume it and read those entries whole.

    python plugins/plait-steps/tests/packed_workflow.py   # on that Plait: legacy/packed.json
    python plugins/plait-steps/tests/packed_workflow.py resume URL ID

``resume`` resumes checkpoint ``ID`` in the store at ``URL`` and prints the run's outputs
and published step context as JSON: the tests run it in a process of its own, as an
upgraded worker would.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path
from typing import Any

import plait
from plait_durable import encode_checkpoint, open_store
from plait_steps import step_context

HERE = Path(__file__).resolve().parent / "legacy"

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
    input: "{{ $steps.rate.output }}"
"""

#: the text ``read`` returns and every later step passes on (packed: stored once)
BIG = "word " * 400


async def reader(prompt: str) -> dict[str, Any]:
    return {"text": BIG, "name": prompt}


async def tagger(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "tags": ["a", "b"]}


async def rater(page: dict[str, Any]) -> dict[str, Any]:
    return {**page, "score": len(page["text"])}


async def closer(page: dict[str, Any]) -> str:
    return f"{page['name']}:{'+'.join(page['tags'])}:{page['score']}:{len(page['text'])}"


EXECUTORS = {"reader": reader, "tagger": tagger, "rater": rater, "closer": closer}


def chain() -> plait.Workflow:
    """The four-step chain."""
    return plait.load(CHAIN, format="steps", executors=EXECUTORS)


async def write() -> None:
    url = f"memory://{uuid.uuid4().hex}"
    result = await chain().run("p", checkpoint=url)
    store = open_store(url)
    infos = sorted(await store.list(result.run_id), key=lambda info: info.superstep)
    encoded = [
        encode_checkpoint(await store.load(info.checkpoint_id)).decode("utf-8") for info in infos
    ]
    blobs = await store.get_blobs(result.run_id, sorted(await store.blob_hashes(result.run_id)))
    written = {
        "run_id": result.run_id,
        "checkpoints": encoded,
        "blobs": {digest: data.hex() for digest, data in sorted(blobs.items())},
    }
    (HERE / "packed.json").write_text(json.dumps(written, indent=1) + "\n", encoding="utf-8")


async def resume(url: str, id: str) -> dict[str, Any]:
    """Resume ``id`` and what the run then holds."""
    result = await chain().resume(id, url)
    return {"outputs": result.outputs, "step_context": step_context(result)}


def main(argv: list[str]) -> None:
    if argv[:1] == ["resume"]:
        print(json.dumps(asyncio.run(resume(argv[1], argv[2]))))
        return
    HERE.mkdir(exist_ok=True)
    asyncio.run(write())


if __name__ == "__main__":
    main(sys.argv[1:])
