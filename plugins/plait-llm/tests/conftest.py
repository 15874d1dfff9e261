"""A fake ``llm`` model, registered through llm's own plugin mechanism: no network, no key.

``plait-test-echo`` streams its answer word by word: ``system: <system> | <prompt>`` (or
the prompt alone). With a schema it answers ``{"prompt": ..., "system": ...}`` as JSON.
Its one option, ``suffix``, is appended to the answer. ``plait-test-plain`` neither streams
nor supports schemas; ``plait-test-list`` answers a JSON list. ``plait-test-scripted`` (no
schema support) and ``plait-test-scripted-schema`` answer the next text of the ``script``
fixture's list and record every prompt they get.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import llm
import pytest
from llm_script import Script, Seen


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


class ScriptedModel(llm.Model):
    def __init__(self, model_id: str, script: Script, *, supports_schema: bool) -> None:
        self.model_id = model_id
        self.supports_schema = supports_schema
        self.script = script

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        history = len(conversation.responses) if conversation is not None else 0
        self.script.seen.append(Seen(prompt.prompt, prompt.schema, history))
        yield self.script.answers.pop(0)


class FakeModels:
    def __init__(self, script: Script) -> None:
        self.script = script

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(EchoModel(), aliases=("echo",))
        register(PlainModel())
        register(ListModel())
        register(ScriptedModel("plait-test-scripted", self.script, supports_schema=False))
        register(ScriptedModel("plait-test-scripted-schema", self.script, supports_schema=True))


@pytest.fixture
def script() -> Script:
    """What the scripted models answer (set ``answers``) and what they were asked."""
    return Script()


@pytest.fixture(autouse=True)
def fake_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Script) -> Iterator[None]:
    """The fake models registered with llm, llm's user directory in a temporary one, and no
    default model from the environment."""
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    monkeypatch.delenv("PLAIT_LLM_MODEL", raising=False)
    plugin = FakeModels(script)
    llm.plugins.pm.register(plugin, name="plait-test-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)
