"""Fake ``llm`` models for the workflow files' tests, registered through llm's own plugin
mechanism (as plait-llm's tests do): no network, no key, deterministic answers.

- ``plait-fake`` answers ``fake(<the prompt, its line breaks as " | ">)``; with a schema
  (it has llm's schema API) it answers an object whose string properties say which
  property and prompt they came from, booleans ``true``, numbers ``1``.
- ``plait-fake-qa`` has no schema support (so plait asks for JSON in the prompt) and answers
  ``{"is_approved": false}`` the first time, ``true`` after.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import llm


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


class FakeModel(llm.Model):
    model_id = "plait-fake"
    supports_schema = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        if prompt.schema:
            answer: dict[str, Any] = {}
            for name, schema in prompt.schema.get("properties", {}).items():
                kind = schema.get("type")
                answer[name] = (
                    True
                    if kind == "boolean"
                    else 1
                    if kind in ("integer", "number")
                    else f"{name} for {_first_line(prompt.prompt)[:40]}"
                )
            yield json.dumps(answer)
            return
        yield "fake(" + prompt.prompt.strip().replace("\n", " | ") + ")"


class FakeQaModel(llm.Model):
    model_id = "plait-fake-qa"

    def __init__(self) -> None:
        self.asked = 0

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        self.asked += 1
        yield json.dumps({"is_approved": self.asked > 1})


class FakeModels:
    """The llm plugin: one instance per test, so the QA model's count starts again."""

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(FakeModel())
        register(FakeQaModel())
