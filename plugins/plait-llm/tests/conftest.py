"""A fake ``llm`` model, registered through llm's own plugin mechanism: no network, no key.

``plait-test-echo`` streams its answer word by word: ``system: <system> | <prompt>`` (or
the prompt alone). With a schema it answers ``{"prompt": ..., "system": ...}`` as JSON.
Its one option, ``suffix``, is appended to the answer. ``plait-test-plain`` neither streams
nor supports schemas; ``plait-test-list`` answers a JSON list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest


class EchoModel(llm.Model):
    model_id = "plait-test-echo"
    can_stream = True
    supports_schema = True

    class Options(llm.Options):
        suffix: str | None = None

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        if prompt.schema:
            yield json.dumps({"prompt": prompt.prompt, "system": prompt.system})
            return
        text = f"system: {prompt.system} | {prompt.prompt}" if prompt.system else prompt.prompt
        text += prompt.options.suffix or ""
        words = text.split(" ")
        for i, word in enumerate(words):
            yield word if i == len(words) - 1 else word + " "


class PlainModel(llm.Model):
    model_id = "plait-test-plain"

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        yield f"plain: {prompt.prompt}"


class ListModel(llm.Model):
    model_id = "plait-test-list"
    supports_schema = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        yield "[1, 2]"


class FakeModels:
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(EchoModel(), aliases=("echo",))
        register(PlainModel())
        register(ListModel())


@pytest.fixture(autouse=True)
def fake_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fake models registered with llm, llm's user directory in a temporary one, and no
    default model from the environment."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_LLM_MODEL", raising=False)
    plugin = FakeModels()
    llm.plugins.pm.register(plugin, name="plait-test-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)
