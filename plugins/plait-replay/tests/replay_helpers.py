"""What the replay tests share: a fake ``llm`` model registered through llm's own plugin
mechanism (no network, no key) that counts its calls, and the workflows they record.

A module of its own, with a name no other test folder uses (a ``conftest`` import would
get whichever ``conftest`` pytest imported first).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import llm
from plait import Workflow, WorkflowContext, executor
from plait_builders import WorkflowBuilder
from plait_llm import AgentExecutor

__all__ = ["Counting", "Models", "research_workflow"]


class Counting(llm.Model):
    """Answers ``"<answer>: <prompt>"`` (``answer`` settable), and counts its calls."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.answer = "noted"
        self.prompts: list[str] = []

    def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Iterator[str]:
        self.prompts.append(prompt.prompt)
        yield f"{self.answer}: {prompt.prompt}"


class Models:
    """The fake models, registered with llm by the tests' ``models`` fixture."""

    def __init__(self) -> None:
        self.writer = Counting("replay-test-writer")
        self.critic = Counting("replay-test-critic")

    @llm.hookimpl
    def register_models(self, register: Any) -> None:
        register(self.writer)
        register(self.critic)


def research_workflow(
    *, draft_suffix: str = "", instruction: str = "Write about {{ input }}"
) -> Workflow:
    """``plan -> [writer (a model), dice] -> collect -> critic (a model) -> done``: a
    fan-out and a fan-in, ``ctx.random()`` and ``ctx.now()``, two model calls.

    :param draft_suffix: what ``dice`` appends to its message (a code change).
    :param instruction: the writer's prompt template (a prompt change).
    """
    from plait.spi import compile_template

    @executor(id="plan")
    async def plan(topic: str, ctx: WorkflowContext[str]) -> None:
        ctx.now()
        await ctx.send_message(topic)

    @executor(id="dice")
    async def dice(topic: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(f"luck {ctx.random():.9f}{draft_suffix}")

    @executor(id="collect")
    async def collect(parts: list[str], ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(" / ".join(parts))

    @executor(id="done")
    async def done(text: str, ctx: WorkflowContext[Any, str]) -> None:
        await ctx.yield_output(text)

    writer = AgentExecutor(
        "writer",
        llm.get_model("replay-test-writer"),
        system="You write.",
        instruction=compile_template(instruction),
    )
    critic = AgentExecutor("critic", llm.get_model("replay-test-critic"))
    return (
        WorkflowBuilder(name="research")
        .set_start(plan)
        .add_fan_out(plan, [writer, dice])
        .add_fan_in([writer, dice], collect)
        .add_edge(collect, critic)
        .add_edge(critic, done)
        .build()
    )
