"""``$steps`` paths: seed 002's nested-parallel paths resolve (its YAML verbatim, children
without ids), and a path that cannot resolve is a load error with its position and the
paths there are, never a silent ``null`` (issue 36, item 11)."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import LoadError
from plait_steps import step_context

# seed 002's nested-parallel YAML, verbatim
NESTED = """
workflow:
  - type: parallel
    id: outer
    steps:
      - type: agent
        name: generator
      - type: parallel
        id: inner
        steps:
          - type: agent
            name: researcher
          - type: agent
            name: summarizer
  - type: agent
    name: publisher
"""


def _agents() -> dict[str, Any]:
    def agent(name: str) -> Any:
        async def run(prompt: str) -> str:
            return f"{name} says"

        return run

    async def publisher(prompt: str, instruction: str | None = None) -> str:
        return f"published: {instruction}"

    names = ("generator", "researcher", "summarizer")
    return {**{n: agent(n) for n in names}, "publisher": publisher}


def _with(instruction: str) -> str:
    return NESTED + f"    instruction: '{instruction}'\n"


def _problem(text: str) -> Any:
    with pytest.raises(LoadError) as caught:
        plait.load(text, format="steps", executors=_agents())
    (problem,) = caught.value.problems
    return problem


@pytest.mark.anyio
@pytest.mark.parametrize(
    "path",
    [
        # the seed's own form: a child without an id is found by its agent's name
        "$steps.outer.outputs.inner.outputs.researcher.output",
        # the seed's "flatter key like inner.researcher"
        '$steps.outer.outputs["inner.researcher"].output',
        "$steps.inner.outputs.researcher.output",
        "$steps.outer.outputs[1].outputs[0].output",
        '$steps.outer.outputs.inner.outputs["step-4"].output',
    ],
)
async def test_the_seeds_nested_paths_resolve(path: str) -> None:
    workflow = plait.load(_with(f"{{{{ {path} }}}}"), format="steps", executors=_agents())
    result = await workflow.run("topic")
    assert result.outputs == ["published: researcher says"]


@pytest.mark.anyio
async def test_the_step_context_holds_nested_blocks_outputs_not_references() -> None:
    workflow = plait.load(NESTED, format="steps", executors=_agents())
    context = step_context(await workflow.run("topic"))
    assert context is not None
    inner = context["steps"]["outer"]["outputs"]["inner"]
    assert inner["outputs"]["step-4"] == {"output": "researcher says", "agent": "researcher"}


def test_the_flatter_dotted_form_is_a_load_error_naming_the_paths_that_exist() -> None:
    problem = _problem(_with("{{ $steps.outer.outputs.inner.researcher.output }}"))
    assert (problem.line, problem.column) == (17, 22)
    message = str(problem)
    assert "$steps.outer.outputs.inner has no .researcher" in message
    assert "$steps.outer.outputs.inner.outputs.researcher" in message
    assert "$steps.outer.outputs['inner.researcher']" in message


def test_an_unknown_child_is_a_load_error_listing_the_children() -> None:
    problem = _problem(_with("{{ $steps.outer.outputs.inner.outputs.writer.output }}"))
    assert (problem.line, problem.column) == (17, 22)
    message = str(problem)
    assert "$steps.outer.outputs.inner.outputs has no .writer" in message
    for child in (".researcher", "['step-5']", ".summarizer", "['step-4']"):
        assert f"$steps.outer.outputs.inner.outputs{child}" in message


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("$steps.outer.outputs[2].output", "$steps.outer.outputs has no [2]"),
        ("$steps.outer.output.nope", "$steps.outer.output has no .nope"),
        ("$steps.outer.outptus", "did you mean 'outputs'?"),
        ("$steps.inner.order[5]", "$steps.inner.order has no [5]"),
        ("$steps.step-2.outputs", "has no .outputs; paths there: "),
    ],
)
def test_paths_that_cannot_resolve_are_load_errors(path: str, said: str) -> None:
    path = path.replace("$steps.step-2", '$steps["step-2"]')
    problem = _problem(_with(f"{{{{ {path} }}}}"))
    assert said in str(problem)
    assert problem.line == 17


def test_a_condition_output_has_no_fields() -> None:
    text = """
workflow:
  - {id: a, type: agent, name: generator}
  - id: check
    type: condition
    condition: "{{ $steps.a.output == 'x' }}"
    true:
      - {id: b, type: agent, name: publisher, instruction: "{{ $steps.check.output.ok }}"}
"""
    problem = _problem(text)
    assert "$steps.check.output is a boolean, with no fields" in str(problem)
    assert (problem.line, problem.column) == (8, 64)


def test_a_probed_path_and_an_agents_answer_are_not_checked() -> None:
    # has() probes a path that may be absent; below an agent's output is its answer
    text = _with("{{ has($steps.outer.outputs.nobody) }} {{ $steps.step-2.output.any.thing }}")
    text = text.replace("$steps.step-2", '$steps["step-2"]')
    assert plait.load(text, format="steps", executors=_agents()).spec is not None
