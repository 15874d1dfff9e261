"""An LLM agent's ``tools``: Python functions, by ``module:attr``, that the model may call
(llm's tool calling). Naming them imports code, so a document may only when it is trusted
to (``allow_imports=True`` / ``--allow-imports``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import llm
import plait
import pytest
from plait import LoadError
from plait_documents import CapabilityError

DOCUMENT = """
agents:
  helper:
    model: plait-test-tools
    tools: ["tools_for_tests:shout"]
workflow:
  - {id: ask, type: agent, name: helper}
"""


class ToolModel(llm.Model):
    """Calls the first tool it is given with the prompt, then answers with its result."""

    model_id = "plait-test-tools"
    supports_tools = True

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        if prompt.tool_results:
            yield f"the tool said: {prompt.tool_results[0].output}"
            return
        tool = prompt.tools[0]
        response.add_tool_call(llm.ToolCall(name=tool.name, arguments={"text": "hello"}))
        yield ""


class ToolModels:
    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(ToolModel())


@pytest.fixture(autouse=True)
def tool_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(__import__("pathlib").Path(__file__).parent))
    plugin = ToolModels()
    llm.plugins.pm.register(plugin, name="plait-test-tool-models")
    try:
        yield
    finally:
        llm.plugins.pm.unregister(plugin)


def test_the_model_calls_the_tool_and_answers_with_its_result() -> None:
    workflow = plait.load(DOCUMENT, format="steps", allow_imports=True, allow="network")
    assert workflow.run_sync("go").outputs == ["the tool said: HELLO"]


def test_tools_need_the_imports_capability() -> None:
    with pytest.raises(CapabilityError, match="needs imports"):
        plait.load(DOCUMENT, format="steps", allow="network")


def test_a_tool_that_is_not_a_function_is_an_error_at_its_path() -> None:
    text = DOCUMENT.replace("tools_for_tests:shout", "tools_for_tests:NOT_A_FUNCTION")
    with pytest.raises(LoadError) as info:
        plait.load(text, format="steps", allow_imports=True, allow="network")
    assert "tool 'tools_for_tests:NOT_A_FUNCTION' is not a function" in str(info.value)
