"""Loop counters as seed 002 keeps them: per logical loop (per back-edge), restarting when
the loop is entered again (issue 36, item 12), on asyncio and trio."""

from __future__ import annotations

from collections import Counter
from typing import Any

import plait
import pytest
from plait_steps import LoopLimitError, step_context

pytestmark = pytest.mark.anyio


def _agents(calls: Counter[str], every: dict[str, int]) -> dict[str, Any]:
    """Agents that answer ``{"ok": true}`` on every ``every[name]``-th call."""

    def agent(name: str) -> Any:
        async def run(prompt: str) -> dict[str, Any]:
            calls[name] += 1
            return {"ok": calls[name] % every.get(name, 1) == 0}

        return run

    return {n: agent(n) for n in ("draft", "polish", "review", "publish")}


# an inner loop (polish until polished) inside an outer one (draft until reviewed)
NESTED = """
workflow:
  max_loop_iterations: 3
  steps:
    - {id: draft, type: agent, name: draft}
    - {id: polish, type: agent, name: polish}
    - id: polished
      type: condition
      condition: "{{ $steps.polish.output.ok }}"
      false:
        - goto: polish
    - {id: review, type: agent, name: review}
    - id: reviewed
      type: condition
      condition: "{{ $steps.review.output.ok }}"
      true:
        - {id: publish, type: agent, name: publish}
      false:
        - goto: draft
"""


async def test_an_inner_loop_restarts_its_count_each_time_it_is_entered() -> None:
    calls: Counter[str] = Counter()
    workflow = plait.load(
        NESTED, format="steps", executors=_agents(calls, {"polish": 3, "review": 3})
    )
    result = await workflow.run("x")
    # 3 rounds of the outer loop, each polishing 3 times: 9 runs of ``polish`` in all,
    # three times the limit, but never more than 3 in one entry of its loop
    assert calls == Counter(draft=3, polish=9, review=3, publish=1)
    context = step_context(result)
    assert context is not None and context["runs"]["polish"] == 9


async def test_a_loop_past_the_limit_in_one_entry_still_fails_naming_its_step() -> None:
    calls: Counter[str] = Counter()
    workflow = plait.load(NESTED, format="steps", executors=_agents(calls, {"polish": 4}))
    with pytest.raises(LoopLimitError) as caught:
        await workflow.run("x")
    assert str(caught.value) == "workflow: max loop iterations exceeded (step: polish, limit: 3)"
    assert calls["polish"] == 3 and calls["review"] == 0


async def test_the_outer_loop_counts_its_own_rounds() -> None:
    calls: Counter[str] = Counter()
    workflow = plait.load(NESTED, format="steps", executors=_agents(calls, {"review": 4}))
    with pytest.raises(LoopLimitError, match=r"\(step: draft, limit: 3\)$"):
        await workflow.run("x")
    assert calls == Counter(draft=3, polish=3, review=3)


# two back-edges to the same step: a short loop (check) inside a long one (again)
SAME_TARGET = """
workflow:
  max_loop_iterations: 3
  steps:
    - {id: draft, type: agent, name: draft}
    - id: check
      type: condition
      condition: "{{ $steps.draft.output.ok }}"
      false:
        - goto: draft
    - {id: review, type: agent, name: review}
    - id: again
      type: condition
      condition: "{{ $steps.review.output.ok }}"
      true:
        - {id: publish, type: agent, name: publish}
      false:
        - goto: draft
"""


async def test_two_back_edges_to_one_step_count_apart() -> None:
    calls: Counter[str] = Counter()
    agents = _agents(calls, {"draft": 3, "review": 3})
    result = await plait.load(SAME_TARGET, format="steps", executors=agents).run("x")
    # the long loop goes round 3 times and the short one, inside it, 3 times each: ``draft``
    # runs 9 times; taking the short loop does not count as a round of the long one, and
    # each round of the long one enters the short one afresh
    assert calls == Counter(draft=9, review=3, publish=1)
    assert result.outputs == [{"ok": True}]


async def test_the_short_loop_still_stops_at_the_limit() -> None:
    calls: Counter[str] = Counter()
    agents = _agents(calls, {"draft": 4})
    with pytest.raises(LoopLimitError, match=r"\(step: draft, limit: 3\)$"):
        await plait.load(SAME_TARGET, format="steps", executors=agents).run("x")
    assert calls["draft"] == 3 and calls["review"] == 0


def test_the_superstep_limit_leaves_room_for_nested_loops() -> None:
    workflow = plait.load(NESTED, format="steps", executors=_agents(Counter(), {}))
    # polish and its condition are in two loops (4 ** 2 runs each), draft, review, the
    # outer condition and its branch in one (4 each): the loops' own limits fire first
    assert workflow.spec.options["max_supersteps"] == 2 * 16 + 4 * 4 + 10
    targets = {n.id: n.config.get("loops") for n in workflow.spec.nodes}
    assert targets["draft"] == {"step-8": ["step-8"]}
    assert targets["polish"] == {"step-4": ["step-4"]}
    assert targets["review"] is None


@pytest.mark.parametrize(
    "block",
    [
        "{id: block, type: parallel, steps: [{id: a, type: agent, name: draft}]}",
        "{id: block, type: foreach, items: '[1, 2]', steps: [{id: a, type: agent, name: draft}]}",
    ],
)
async def test_a_loop_may_go_back_to_a_parallel_or_foreach_block(block: str) -> None:
    text = f"""
workflow:
  max_loop_iterations: 3
  steps:
    - {block}
    - {{id: review, type: agent, name: review}}
    - id: again
      type: condition
      condition: "{{{{ $steps.review.output.ok }}}}"
      false:
        - goto: block
"""
    calls: Counter[str] = Counter()
    result = await plait.load(text, format="steps", executors=_agents(calls, {"review": 3})).run(
        "x"
    )
    assert calls["review"] == 3 and result.error is None
    calls.clear()
    with pytest.raises(LoopLimitError, match=r"\(step: block, limit: 3\)$"):
        await plait.load(text, format="steps", executors=_agents(calls, {"review": 4})).run("x")
    assert calls["review"] == 3
