"""Seed 001's four agents in Python, named as the seed names them (an executor's id may hold
a hyphen), for ``plait run meal_plain.json --agents meal_agents.py``. A DAG agent takes the
context (or the keys a connection passes) and returns a dict of updates."""

from typing import Any

from plait import executor


@executor(id="greeter-agent")
async def greeter(context: dict[str, Any]) -> dict[str, Any]:
    return {"user_name": "Ada", "user_state": "hungry"}


@executor(id="meal-agent")
async def meal(context: dict[str, Any]) -> dict[str, Any]:
    # context_passed: only user_name and user_state reach this agent
    return {"meal": f"soup for {context['user_name']}", "meal_saw": sorted(context)}


@executor(id="glucose-agent")
async def glucose(context: dict[str, Any]) -> dict[str, Any]:
    return {"glucose": "normal"}


@executor(id="feedback-agent")
async def feedback(context: dict[str, Any]) -> dict[str, Any]:
    return {"feedback": f"{context['user_name']}: {context.get('meal', 'no meal')}"}
