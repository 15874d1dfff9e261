"""The ``template.note_to_text`` converter, imported when a build first looks for a
conversion (the package registers it with :func:`plait.spi.lazy`).
"""

from __future__ import annotations

from plait.spi import Converter

from . import Note

__all__ = ["NOTE_TO_TEXT", "note_to_text"]


def note_to_text(note: Note) -> str:
    """The note's text, which is all a note holds (so the conversion is lossless)."""
    return note.text


#: ``Note -> str``; lossless: the text is the whole note.
NOTE_TO_TEXT = Converter(
    source=Note,
    target=str,
    fn=note_to_text,
    lossless=True,
    name="template.note_to_text",
)
