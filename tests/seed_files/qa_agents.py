"""Seed 002's agents in Python, for ``plait run qa_plain.yaml --agents qa_agents.py``. The QA
agent rejects the first translation and approves the second."""

from typing import Any

ROUNDS: list[str] = []


async def generator(prompt: str) -> str:
    return "a draft"


async def researcher(prompt: str) -> str:
    return "research"


async def summarizer(prompt: str) -> str:
    return "summary"


async def translator(prompt: str) -> str:
    ROUNDS.append(prompt)
    return f"translation {len(ROUNDS)}"


async def qa_agent(prompt: str) -> dict[str, Any]:
    return {"is_approved": len(ROUNDS) >= 2}


async def publisher(prompt: str) -> str:
    return f"published after {len(ROUNDS)} translation(s)"
