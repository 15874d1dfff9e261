"""The script the scripted fake models answer from (``conftest.py`` registers them).

A module of its own, with a name no other test folder uses: a test module that imported
these from ``conftest`` got whichever ``conftest`` pytest had imported first when it
collected this folder together with another (``pytest tests plugins/plait-llm/tests``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Script", "Seen"]


@dataclass
class Seen:
    """One prompt a scripted model got: its text, the schema llm passed, and how many
    earlier exchanges its conversation held."""

    prompt: str
    schema: Any
    history: int


@dataclass
class Script:
    """The answers the scripted models give, in order, and the prompts they got."""

    answers: list[str] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
