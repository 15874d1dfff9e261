"""plait-textkit: text fragments for Plait, published through entry points.

Installing the distribution makes two fragments and one converter available to every
Plait builder, with no import in user code::

    builder.add_workflow("textkit.normalize")   # str -> str
    builder.add_workflow("textkit.summarize")   # str -> Summary

``textkit.summary_to_text`` (``Summary -> str``) is lossy: builders insert it between a
``Summary`` and a ``str`` edge only where lossy conversion is allowed
(``connect(..., allow_lossy=True)``), or it can be passed as an explicit adapter.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._kit import (
        NORMALIZE as NORMALIZE,
        SUMMARIZE as SUMMARIZE,
        SUMMARY_TO_TEXT as SUMMARY_TO_TEXT,
        normalize_fragment as normalize_fragment,
        summarize_fragment as summarize_fragment,
        summary_to_text as summary_to_text,
    )


@dataclasses.dataclass(frozen=True)
class Summary:
    """The digest of a text: its first sentence and how long the text was."""

    text: str
    sentences: int
    words: int


@plait.hookimpl
def plait_register_fragments(register: Register) -> None:
    """Publish ``textkit.normalize`` and ``textkit.summarize`` (imported, with plait-builders,
    when a builder first adds one)."""
    register("textkit.normalize", lazy("plait_textkit._kit:NORMALIZE", provides=("build",)))
    register("textkit.summarize", lazy("plait_textkit._kit:SUMMARIZE", provides=("build",)))


@plait.hookimpl
def plait_register_converters(register: Register) -> None:
    """Publish ``textkit.summary_to_text`` (imported when a build first looks for a
    conversion)."""
    summary_to_text = lazy(
        "plait_textkit._kit:SUMMARY_TO_TEXT", provides=("source", "target", "fn", "lossless")
    )
    register("textkit.summary_to_text", summary_to_text)


# a process that loads plugins imports none of these names (nor plait-builders) until one
# is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
