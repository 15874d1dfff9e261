"""Documents and agents the DAG tests share."""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

Agent = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

#: seed 001's document, as the seed gives it
SEED: dict[str, Any] = {
    "nodes": [
        {"id": "node-greeter", "agent_name": "greeter-agent", "is_entry": True},
        {"id": "node-meal", "agent_name": "meal-agent", "skip_condition": "flags.skip_meal"},
        {
            "id": "node-glucose",
            "agent_name": "glucose-agent",
            "skip_condition": "flags.skip_glucose",
        },
        {"id": "node-feedback", "agent_name": "feedback-agent", "is_exit": True},
    ],
    "connections": [
        {
            "source_id": "node-greeter",
            "target_id": "node-meal",
            "context_passed": ["user_name", "user_state"],
        },
        {"source_id": "node-meal", "target_id": "node-glucose"},
        {"source_id": "node-glucose", "target_id": "node-feedback"},
    ],
}


def seed(**changes: Any) -> dict[str, Any]:
    """A deep copy of :data:`SEED`."""
    document = copy.deepcopy(SEED)
    document.update(changes)
    return document


def text(document: Any) -> str:
    return json.dumps(document)


class Recorder:
    """Agents that record what they received and return fixed updates."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def agent(self, name: str, updates: dict[str, Any] | None = None) -> Agent:
        async def run(ctx: dict[str, Any]) -> dict[str, Any]:
            self.calls.append((name, ctx))
            return dict(updates or {})

        run.__name__ = name.replace("-", "_")
        return run

    def agents(self, *names: str) -> dict[str, Agent]:
        return {name: self.agent(name) for name in names}

    @property
    def visited(self) -> list[str]:
        return [name for name, _ in self.calls]


def chain(n: int) -> dict[str, Any]:
    """A sequential DAG of ``n`` nodes, every one running agent ``step``."""
    nodes = [{"id": f"n{i}", "agent_name": "step"} for i in range(n)]
    nodes[0]["is_entry"] = True
    nodes[-1]["is_exit"] = True
    connections = [{"source_id": f"n{i}", "target_id": f"n{i + 1}"} for i in range(n - 1)]
    return {"nodes": nodes, "connections": connections}
