"""``foreach``: one message per item through the same body nodes, a fan-in that keeps item
order, loops per item, concurrency, checkpoint and resume mid-block, and load errors."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import plait
import pytest
from hypothesis import given, settings, strategies as st
from plait import LoadError, RunStatus, SuperstepFinished, WorkflowRunError
from plait_documents import load_spec
from plait_steps import ForeachItemsError, LoopLimitError, step_context

pytestmark = pytest.mark.anyio

# each item counts up to its own value: item n runs `step_up` n times (a loop per item)
COUNT_UP = """
workflow:
  - {id: nums, type: agent, name: numbers}
  - id: each
    type: foreach
    items: "$steps.nums.output"
    steps:
      - id: step_up
        type: agent
        name: bump
        input: "{{ {'item': $item, 'index': $index, 'so_far': default($steps.step_up.output, 0)} }}"
      - id: more
        type: condition
        condition: "{{ $steps.step_up.output < $item }}"
        true:
          - goto: step_up
  - id: sum_up
    type: agent
    name: total
    input: "{{ $steps.each.output }}"
"""


class Agents:
    """The agents of COUNT_UP, recording every call."""

    def __init__(self, numbers: list[Any]) -> None:
        self.numbers = numbers
        self.calls: list[tuple[int, int]] = []  # (index, so_far)

    async def numbers_agent(self, prompt: str) -> list[Any]:
        return self.numbers

    async def bump(self, data: dict[str, Any]) -> int:
        self.calls.append((data["index"], data["so_far"]))
        # later items finish first, so arrival order at the gather is not item order
        await anyio.sleep(0.001 * (len(self.numbers) - data["index"]))
        return int(data["so_far"]) + 1

    async def total(self, outputs: list[int]) -> dict[str, Any]:
        return {"outputs": outputs, "sum": sum(outputs)}

    def executors(self) -> dict[str, Any]:
        return {"numbers": self.numbers_agent, "bump": self.bump, "total": self.total}


def _load(text: str, executors: dict[str, Any], **options: Any) -> plait.Workflow:
    return plait.load(text, format="steps", executors=executors, **options)


async def test_the_body_runs_per_item_and_loops_per_item_and_the_output_keeps_item_order() -> None:
    agents = Agents([3, 1, 2])
    result = await _load(COUNT_UP, agents.executors()).run("go")
    assert result.error is None
    assert result.outputs == [{"outputs": [3, 1, 2], "sum": 6}]
    assert Counter(index for index, _ in agents.calls) == {0: 3, 1: 1, 2: 2}
    # each item's loop saw only its own previous output
    assert sorted(c for c in agents.calls if c[0] == 0) == [(0, 0), (0, 1), (0, 2)]
    context = step_context(result)
    assert context is not None
    assert context["steps"]["each"]["output"] == [3, 1, 2]
    assert "step_up" not in context["steps"]  # a body step's outputs are the block's list
    assert context["runs"]["step_up"] == 6 and context["runs"]["each"] == 1


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=5), max_size=12), st.integers(1, 4))
def test_any_list_gives_one_output_per_item_in_order(numbers: list[int], limit: int) -> None:
    agents = Agents(numbers)
    text = COUNT_UP.replace("    steps:\n", f"    max_concurrency: {limit}\n    steps:\n", 1)
    result = _load(text, agents.executors()).run_sync("go")
    expected = [max(n, 1) for n in numbers]  # one round at least, then up to the item
    assert result.outputs == [{"outputs": expected, "sum": sum(expected)}]
    assert Counter(i for i, _ in agents.calls) == {i: n for i, n in enumerate(expected)}


async def test_an_empty_list_gives_an_empty_output_and_runs_no_body() -> None:
    agents = Agents([])
    result = await _load(COUNT_UP, agents.executors()).run("go")
    assert result.outputs == [{"outputs": [], "sum": 0}]
    assert agents.calls == []


async def test_a_loop_inside_the_body_is_bounded_per_item() -> None:
    agents = Agents([2, 5])
    with pytest.raises(LoopLimitError, match=r"step: step_up, limit: 4"):
        await _load(COUNT_UP, agents.executors(), max_loop_iterations=4).run("go")
    agents = Agents([4, 4, 4])  # 12 runs of step_up in all, at most 4 per item
    result = await _load(COUNT_UP, agents.executors(), max_loop_iterations=4).run("go")
    assert result.outputs == [{"outputs": [4, 4, 4], "sum": 12}]


async def test_max_concurrency_bounds_how_many_items_run_a_step_at_once() -> None:
    running = {"now": 0, "most": 0}

    async def slow(prompt: str) -> str:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        await anyio.sleep(0.01)
        running["now"] -= 1
        return prompt.upper()

    async def letters(prompt: str) -> list[str]:
        return list(prompt)

    text = """
workflow:
  - {id: split, type: agent, name: letters}
  - id: each
    type: foreach
    items: "{{ $steps.split.output }}"
    max_concurrency: LIMIT
    steps:
      - {id: up, type: agent, name: slow}
"""
    for limit in (2, 5):
        running["most"] = 0
        workflow = _load(text.replace("LIMIT", str(limit)), {"slow": slow, "letters": letters})
        result = await workflow.run("abcdefg")
        assert result.outputs == [list("ABCDEFG")]
        assert running["most"] == limit
    nodes = {n.id: n for n in workflow.spec.nodes}
    assert nodes["up"].max_concurrency == 5
    assert nodes["each/gather"].max_concurrency is None


async def test_a_body_step_without_input_gets_the_item_as_its_prompt() -> None:
    seen: list[str] = []

    async def note(prompt: str) -> str:
        seen.append(prompt)
        return f"noted {len(seen)}"

    text = """
workflow:
  - id: each
    type: foreach
    items: ["a", {"k": 1}]
    max_concurrency: 1
    steps:
      - {id: first, type: agent, name: note}
      - {id: second, type: agent, name: note}
"""
    result = await _load(text, {"note": note}).run("the prompt")
    assert result.outputs == [["noted 3", "noted 4"]]
    assert seen[:2] == ["a", '{"k": 1}']
    assert seen[2] == (
        "--- Prior Step Outputs ---\n\n[each/first (agent: note)]:\nnoted 1\n\n"
        "--- End Prior Step Outputs ---\n\na"
    )


async def test_a_foreach_inside_a_loop_and_a_foreach_inside_a_foreach() -> None:
    rounds: list[int] = []

    async def batch(prompt: str) -> list[list[int]]:
        rounds.append(len(rounds) + 1)
        n = len(rounds)
        return [[n, n + 1], [], [n * 10]]

    async def double(value: int) -> int:
        return value * 2

    text = """
workflow:
  - {id: make, type: agent, name: batch}
  - id: outer
    type: foreach
    items: "$steps.make.output"
    steps:
      - id: inner
        type: foreach
        items: "$item"
        steps:
          - {id: twice, type: agent, name: double, input: "{{ $item }}"}
  - id: again
    type: condition
    condition: "{{ $steps.make.output[0][0] < 2 }}"
    true:
      - goto: make
"""
    result = await _load(text, {"batch": batch, "double": double}).run("x")
    assert result.error is None
    assert rounds == [1, 2]
    context = step_context(result)
    assert context is not None
    assert context["steps"]["outer"]["output"] == [[4, 6], [], [40]]  # the second round's
    assert context["runs"]["outer"] == 2 and context["runs"]["twice"] == 6


async def test_an_inner_body_reads_the_steps_of_every_enclosing_context() -> None:
    async def base(prompt: str) -> dict[str, str]:
        return {"unit": "cm"}

    async def label(size: int) -> str:
        return f"n={size}"

    async def fmt(parts: list[Any]) -> str:
        value, count, unit = parts
        return f"{value} {unit} ({count})"

    text = """
workflow:
  - {id: units, type: agent, name: base}
  - id: outer
    type: foreach
    items: [[1, 2], [3]]
    steps:
      - {id: counted, type: agent, name: label, input: "{{ size($item) }}"}
      - id: inner
        type: foreach
        items: "$item"
        steps:
          - id: shown
            type: agent
            name: fmt
            input: "{{ [$item, $steps.counted.output, $steps.units.output.unit] }}"
"""
    result = await _load(text, {"base": base, "label": label, "fmt": fmt}).run("x")
    assert result.outputs == [[["1 cm (n=2)", "2 cm (n=2)"], ["3 cm (n=1)"]]]


async def test_retry_and_timeout_work_inside_the_body() -> None:
    attempts: Counter[str] = Counter()

    async def flaky(item: str) -> str:
        attempts[item] += 1
        if attempts[item] == 1:
            raise RuntimeError(f"first try of {item} fails")
        return item * 2

    text = """
workflow:
  - id: each
    type: foreach
    items: ["a", "b", "c"]
    retry: {max_attempts: 1, delay: 1ms}
    steps:
      - {id: work, type: agent, name: flaky, input: "{{ $item }}", timeout: 5s}
"""
    workflow = _load(text, {"flaky": flaky})
    result = await workflow.run("x")
    assert result.outputs == [["aa", "bb", "cc"]]
    assert attempts == {"a": 2, "b": 2, "c": 2}
    work = {n.id: n for n in workflow.spec.nodes}["work"]
    assert work.retry is not None and work.timeout == 5.0


async def test_items_that_are_not_a_list_fail_the_run_naming_the_step() -> None:
    text = """
workflow:
  - id: each
    type: foreach
    items: "prompt"
    steps:
      - {id: work, type: agent, name: echo}
"""

    async def echo(prompt: str) -> str:
        return prompt

    with pytest.raises(ForeachItemsError, match=r"items of foreach step 'each' must give a list"):
        await _load(text, {"echo": echo}).run("not a list")


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_run_stopped_mid_foreach_resumes_from_its_checkpoint(
    store: str, tmp_path: Path
) -> None:
    """Stopped after superstep 5 — the gather holds item 1 (done), items 0 and 2 are
    still looping — and resumed by a workflow built afresh: the gather's buffer comes back
    from the checkpoint, and no finished item runs again."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    if store == "memory":
        url = f"memory://foreach-{tmp_path.name}"
    stop = threading.Event()

    def on_event(event: object) -> None:
        if isinstance(event, SuperstepFinished) and event.superstep == 5:
            stop.set()

    first = Agents([3, 1, 2])
    stopped = await _load(COUNT_UP, first.executors()).run(
        "go", checkpoint=url, stop=stop, events="all", on_event=on_event
    )
    assert stopped.status is RunStatus.RUNNING and stopped.outputs == []
    assert Counter(i for i, _ in first.calls) == {0: 2, 1: 1, 2: 2}
    second = Agents([3, 1, 2])
    resumed = await _load(COUNT_UP, second.executors()).resume(stopped.run_id, url)
    assert resumed.status is RunStatus.IDLE
    assert resumed.outputs == [{"outputs": [3, 1, 2], "sum": 6}]
    assert Counter(i for i, _ in second.calls) == {0: 1}  # only item 0 had a round left


async def test_the_spec_is_data_and_a_final_foreach_yields_its_list() -> None:
    async def echo(prompt: str) -> str:
        return prompt + "."

    text = """
workflow:
  - id: each
    type: foreach
    items: "{{ ['a', 'b'] }}"
    steps:
      - {id: say, type: agent, name: echo}
"""
    workflow = _load(text, {"echo": echo})
    again = plait.Workflow.from_spec(
        plait.WorkflowSpec.from_json(workflow.spec.to_json()), {"echo": echo}
    )
    assert again.signature() == workflow.signature()
    assert (await again.run("x")).outputs == [["a.", "b."]]
    kinds = {n.id: n.kind for n in workflow.spec.nodes}
    assert kinds == {"each": "steps.foreach", "say": "steps.agent", "each/gather": "steps.gather"}


async def test_a_foreach_inside_a_parallel_block() -> None:
    async def echo(prompt: str) -> str:
        return prompt + "!"

    text = """
workflow:
  - id: both
    type: parallel
    steps:
      - id: each
        type: foreach
        items: [1, 2]
        steps:
          - {id: say, type: agent, name: echo}
      - {id: solo, type: agent, name: echo}
"""
    result = await _load(text, {"echo": echo}).run("hi")
    assert result.error is None
    (keyed,) = result.outputs
    assert keyed["steps"]["each"]["output"] == ["1!", "2!"]
    assert keyed["steps"]["solo"]["output"] == "hi!"


# -- load errors, each with its line:column ----------------------------------------------


async def _echo(prompt: str) -> str:
    return prompt


def _problems(text: str) -> list[str]:
    with pytest.raises(LoadError) as caught:
        load_spec(text, format="steps", executors={"echo": _echo})
    return [f"{p.line}:{p.column} {p.reason}" for p in caught.value.problems]


def test_load_errors_point_at_the_text() -> None:
    text = """
workflow:
  - {id: first, type: agent, name: echo}
  - id: each
    type: foreach
    items: "$steps.first.output +"
    max_concurrency: 0
    color: red
    steps:
      - {id: inside, type: agent, name: echo, input: "{{ $item }}"}
      - id: back
        type: condition
        condition: "{{ $steps.inside.output == '' }}"
        true:
          - goto: first
  - {id: after, type: agent, name: echo, input: "{{ $steps.inside.output }} {{ $item }}"}
"""
    problems = _problems(text)
    joined = "\n".join(problems)
    assert problems[0].startswith("6:34 ") and "unexpected end of the expression" in joined
    assert any(
        p.startswith("7:22 max_concurrency must be an integer >= 1, got 0") for p in problems
    )
    assert any(p.startswith("8:5 unknown key 'color' in a foreach step") for p in problems)
    assert any(p.startswith("15:13 goto 'first'") and "foreach" in p for p in problems)
    assert any(
        p.startswith(
            "16:53 step 'after' reads $steps.inside, which runs once per item "
            "inside foreach step 'each'; read $steps.each.output"
        )
        for p in problems
    ), joined
    assert any(
        p.startswith("16:80 step 'after' reads $item, but it is not inside a foreach")
        for p in problems
    ), joined
    assert [int(p.split(":")[0]) for p in problems] == sorted(
        int(p.split(":")[0]) for p in problems
    )


def test_a_foreach_needs_items_and_steps() -> None:
    problems = _problems("workflow:\n  - {id: each, type: foreach}\n")
    assert problems == [
        "2:5 foreach step 'each' needs 'items' (an expression giving a list)",
        "2:5 foreach step 'each' needs 'steps' (the steps run per item)",
    ]
    problems = _problems("workflow:\n  - {id: each, type: foreach, items: [], steps: []}\n")
    assert problems == ["2:49 foreach step 'each' has no steps"]


def test_a_goto_at_the_end_of_a_body_must_sit_in_a_branch() -> None:
    text = """
workflow:
  - id: each
    type: foreach
    items: [1]
    steps:
      - {id: inside, type: agent, name: echo}
      - goto: inside
"""
    assert _problems(text) == ["8:9 a goto belongs in a condition's true/false branch"]


def test_items_that_fail_at_run_time_are_wrapped() -> None:
    assert issubclass(ForeachItemsError, WorkflowRunError)
