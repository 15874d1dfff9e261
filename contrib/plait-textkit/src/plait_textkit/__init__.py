"""plait-textkit: text fragments for Plait, published through entry points.

Installing the distribution makes two fragments and one converter available to every
Plait builder, with no import in user code::

    builder.add_workflow("textkit.normalize")   # str -> str
    builder.add_workflow("textkit.summarize")   # str -> Summary

``textkit.summary_to_text`` (``Summary -> str``) is lossy: builders insert it between a
``Summary`` and a ``str`` edge only where lossy conversion is allowed
(``connect(..., allow_lossy=True)``), or it can be passed as an explicit adapter.

.. versionadded:: 0.1
"""

from __future__ import annotations

import dataclasses
import re

import plait
from plait import executor
from plait.spi import Converter, Register
from plait_builders import Fragment, WorkflowBuilder

__all__ = [
    "NORMALIZE",
    "SUMMARIZE",
    "SUMMARY_TO_TEXT",
    "Summary",
    "normalize_fragment",
    "summarize_fragment",
    "summary_to_text",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclasses.dataclass(frozen=True)
class Summary:
    """The digest of a text: its first sentence and how long the text was."""

    text: str
    sentences: int
    words: int


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
    """``sentences -> digest``: a fresh builder each call."""
    return WorkflowBuilder("textkit.summarize").add_edge(sentences, digest).set_start(sentences)


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
)
SUMMARY_TO_TEXT = Converter(
    source=Summary,
    target=str,
    fn=summary_to_text,
    lossless=False,
    name="textkit.summary_to_text",
)


@plait.hookimpl
def plait_register_fragments(register: Register) -> None:
    """Publish ``textkit.normalize`` and ``textkit.summarize``."""
    register(NORMALIZE.name, NORMALIZE)
    register(SUMMARIZE.name, SUMMARIZE)


@plait.hookimpl
def plait_register_converters(register: Register) -> None:
    """Publish ``textkit.summary_to_text``."""
    register(SUMMARY_TO_TEXT.name, SUMMARY_TO_TEXT)
