"""Agents the flow tests use: plain ``async def`` functions whose returned value is sent on."""

from __future__ import annotations

from typing import Any

from plait import InvocationFailure


async def researcher(text: str) -> str:
    return f"research({text})"


async def analyzer(text: str) -> str:
    return f"analysis({text})"


async def summarizer(text: str) -> str:
    return f"summary({text})"


async def writer(text: str) -> str:
    return f"article[{text}]"


async def critic(text: str) -> str:
    return f"critique({text})"


async def editor(text: str) -> str:
    return f"edit({text})"


async def fallback(failed: InvocationFailure | str) -> str:
    """What an error edge leads to: it takes the failure (and a text, to start a flow)."""
    return f"fallback({failed if isinstance(failed, str) else failed.error})"


AGENTS: dict[str, Any] = {
    "researcher": researcher,
    "analyzer": analyzer,
    "summarizer": summarizer,
    "writer": writer,
    "critic": critic,
    "editor": editor,
    "fallback": fallback,
}
