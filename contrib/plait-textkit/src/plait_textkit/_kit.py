"""plait-textkit's fragments and converter, imported when one is first used: loading
plugins (every ``plait`` command) imports the package's registration module only, and this
module imports plait-builders.
"""

from __future__ import annotations

import re

from plait import executor
from plait.spi import Converter
from plait_builders import Fragment, WorkflowBuilder

from . import Summary

__all__ = [
    "NORMALIZE",
    "SUMMARIZE",
    "SUMMARY_TO_TEXT",
    "normalize_fragment",
    "summarize_fragment",
    "summary_to_text",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# -- normalize: trim -> casefold ----------------------------------------------------------


@executor(id="trim")
async def trim(text: str) -> str:
    """Collapse runs of whitespace and strip the ends."""
    return " ".join(text.split())


@executor(id="casefold")
async def casefold(text: str) -> str:
    """Fold case, for caseless comparison."""
    return text.casefold()


def normalize_fragment() -> WorkflowBuilder:
    """``trim -> casefold``: a fresh builder each call."""
    return WorkflowBuilder("textkit.normalize").add_edge(trim, casefold).set_start(trim)


# -- summarize: sentences -> digest -------------------------------------------------------


@executor(id="sentences")
async def sentences(text: str) -> list[str]:
    """Split a text into sentences."""
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text.strip())) if s]


@executor(id="digest")
async def digest(parts: list[str]) -> Summary:
    """The first sentence, with counts of sentences and words."""
    words = sum(len(p.split()) for p in parts)
    return Summary(text=parts[0] if parts else "", sentences=len(parts), words=words)


def summarize_fragment() -> WorkflowBuilder:
    """``sentences -> digest``: a fresh builder each call; its ports name the split
    sentences (``sentences_out``) and the summary (``summary_out``)."""
    return (
        WorkflowBuilder("textkit.summarize")
        .add_edge(sentences, digest)
        .set_start(sentences)
        .add_port("sentences_out", sentences, "out")
        .add_port("summary_out", digest, "out", semantics="summary")
    )


def summary_to_text(summary: Summary) -> str:
    """The summary's sentence (its counts are dropped: lossy)."""
    return summary.text


NORMALIZE = Fragment(
    "textkit.normalize",
    normalize_fragment,
    version="1.0.0",
    input_types=(str,),
    output_types=(str,),
    description="collapse whitespace and fold case",
)
SUMMARIZE = Fragment(
    "textkit.summarize",
    summarize_fragment,
    version="1.0.0",
    input_types=(str,),
    output_types=(Summary,),
    description="first sentence of a text, with sentence and word counts",
    output_semantics=("summary",),
)
SUMMARY_TO_TEXT = Converter(
    source=Summary,
    target=str,
    fn=summary_to_text,
    lossless=False,
    name="textkit.summary_to_text",
)
