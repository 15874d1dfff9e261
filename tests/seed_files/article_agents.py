"""Seed 000's four agents in Python, for ``plait run article.flow --agents article_agents.py``."""


async def researcher(topic: str) -> str:
    return f"notes on {topic}"


async def analyzer(notes: str) -> str:
    return f"analysis of {notes}"


async def summarizer(notes: str) -> str:
    return f"summary of {notes}"


async def writer(merged: str) -> str:
    return "article:\n" + merged
