"""A flow's edges are type-checked when it is loaded, as WorkflowBuilder.build() checks
them: a plain function's return annotation against the next agent's parameter, with the
edge's position, both agents and both types; behind a merge, the agent that sends the
type is the one named. A lossless converter chain bridges an edge; an unannotated agent
takes anything."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from plait import LoadError, UnhandledMessageError


async def count(text: str) -> int:
    return len(text)


async def shout(text: str) -> str:
    return text.upper()


async def start(text: str) -> str:
    return text


async def analyzer(text: str) -> int:
    return len(text)


async def summarizer(text: str) -> str:
    return text[:3]


async def writer(text: str) -> str:
    return f"article[{text}]"


async def halve(value: float) -> float:
    return value / 2


async def loose(value):  # type: ignore[no-untyped-def]
    return f"{value}"


AGENTS: dict[str, Any] = {
    "count": count,
    "shout": shout,
    "start": start,
    "analyzer": analyzer,
    "summarizer": summarizer,
    "writer": writer,
    "halve": halve,
    "loose": loose,
}


def problems(flow: str) -> list[Any]:
    with pytest.raises(LoadError) as info:
        plait.load(flow, format="flow", agents=AGENTS)
    return info.value.problems


def test_a_return_type_the_next_agent_cannot_take_is_a_load_error() -> None:
    (problem,) = problems("count -> shout")
    assert (problem.line, problem.column) == (1, 10)  # at the step the edge leads to
    assert "^" in str(problem)
    message = problem.reason
    assert message.startswith(
        "edge group 'direct:count->shout': 'shout' cannot handle int from 'count' "
        "(it accepts: str); no converter chain from int to str"
    )


def test_behind_a_merge_the_agent_that_sends_the_type_is_blamed() -> None:
    text = "start -> [analyzer, summarizer] -> writer"
    (problem,) = problems(text)
    assert (problem.line, problem.column) == (1, text.index("writer") + 1)
    message = problem.reason
    assert "'writer' cannot handle int | str from 'analyzer' (which sends int)" in message
    assert "through the 'concat_newline' merge (it accepts: str)" in message
    assert "'summarizer'" not in message.partition(";")[0]


def test_a_lossless_converter_chain_bridges_the_edge() -> None:
    workflow = plait.load("count -> halve", format="flow", agents=AGENTS)
    assert "convert:int->float:int_to_float" in workflow.executors
    assert workflow.run_sync("hello").outputs == [2.5]


def test_an_unannotated_agent_takes_anything() -> None:
    workflow = plait.load("count -> loose -> shout", format="flow", agents=AGENTS)
    assert workflow.run_sync("hello").outputs == ["5"]


def test_an_edge_the_types_cannot_decide_is_checked_when_it_runs() -> None:
    async def anything(text: str) -> Any:
        return 5

    workflow = plait.load(
        "anything -> shout", format="flow", executors={**AGENTS, "anything": anything}
    )
    result = workflow.run_sync("x", raise_on_failure=False)
    assert isinstance(result.error, UnhandledMessageError)
