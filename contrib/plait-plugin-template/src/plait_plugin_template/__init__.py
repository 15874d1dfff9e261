"""plait-plugin-template: one merge strategy and one converter for Plait workflows.

Installing the distribution makes both available to every Plait workflow, with no import
in user code: Plait finds the module through its entry point ``template`` of group
``plait`` and calls its hook implementations.

``template.longest`` (merge strategy)
    The longest of the values a fan-in receives; on a tie, the earliest declared source.
    Use it as ``builder.add_fan_in([a, b], c, merge="template.longest")``.
``template.note_to_text`` (converter, lossless)
    A :class:`Note` to its text, so an executor that sends notes can feed one that
    takes ``str``; builders insert it where such an edge needs it.

Registry names start with the plugin's name so they never clash with another plugin's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._converter import NOTE_TO_TEXT as NOTE_TO_TEXT, note_to_text as note_to_text


# -- a merge strategy ---------------------------------------------------------------------


class LongestMerge:
    """``template.longest``: the longest value; the earliest declared source wins a tie.

    A merge strategy has two methods: ``merge`` gets one value per source in
    source-declaration order, and ``output_type`` tells the builder what the merged value's
    type is, given the type of each input.
    """

    def merge(self, values: Sequence[Sized], sources: Sequence[str]) -> Sized:
        """The longest of ``values`` (``max`` keeps the first of equals)."""
        if not values:
            raise ValueError("template.longest needs at least one value to merge")
        return max(values, key=len)

    def output_type(self, input_type: Any) -> Any:
        """One of the inputs, so the input type."""
        return input_type


# -- a converter (its function and registration live in ``_converter``) -------------------


@dataclasses.dataclass(frozen=True)
class Note:
    """A note an executor passes on: nothing but its text."""

    text: str


# -- hook implementations -------------------------------------------------------------------


@plait.hookimpl
def plait_register_merge_strategies(register: Register) -> None:
    """Register ``template.longest``."""
    register("template.longest", LongestMerge())


@plait.hookimpl
def plait_register_converters(register: Register) -> None:
    """Register ``template.note_to_text``, imported when a build first looks for a conversion:
    every ``plait`` command loads every plugin, so what a hook registers stays cheap
    (``lazy`` names the attributes the registry checks, without importing)."""
    note_to_text = lazy(
        "plait_plugin_template._converter:NOTE_TO_TEXT",
        provides=("source", "target", "fn", "lossless"),
    )
    register("template.note_to_text", note_to_text)


# the converter's names live in ``_converter``, imported on first use
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
