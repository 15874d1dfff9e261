"""Budgets on runs, fragments and nodes, reserved before plait-llm's model calls: each
unit, each action, nesting, prices, and a 1,000-way fan-out with no overshoot; on asyncio
and trio."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import plait
import pytest
from budget_models import Calls
from plait import InvocationFailure, Never, RunOptionError, Workflow, WorkflowContext, executor
from plait.spi import BuildContext
from plait_budgets import (
    Budget,
    BudgetExceededError,
    Price,
    UnpricedModelError,
    parse_budget,
)
from plait_builders import WorkflowBuilder
from plait_llm import AgentKind

pytestmark = pytest.mark.anyio


def agent(node_id: str, model: str = "budget-test", max_tokens: int | None = 10) -> Any:
    config: dict[str, Any] = {"model": model}
    if max_tokens is not None:
        config["options"] = {"max_tokens": max_tokens}
    return AgentKind().create(config, BuildContext(node_id=node_id))


def chain(*ids: str, model: str = "budget-test") -> Workflow:
    """Agents one after the other, then a collector of the last answer."""

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    nodes = [agent(i, model) for i in ids]
    builder = WorkflowBuilder("chain").set_start(nodes[0])
    for a, b in zip(nodes, [*nodes[1:], collect]):
        builder.add_edge(a, b)
    return builder.build()


def cause(error: BaseException | None) -> BaseException | None:
    while error is not None and not isinstance(error, (BudgetExceededError, UnpricedModelError)):
        error = error.__cause__
    return error


# -- what a budget is ----------------------------------------------------------------------


def test_budget_text_gives_every_unit() -> None:
    budget = parse_budget("usd=2.5,tokens=200k,input=1M,output=5k,calls=50,tools=3,time=10m")
    assert budget.usd == Decimal("2.5") and budget.pico == 2_500_000_000_000
    assert budget.tokens == 200_000 and budget.input_tokens == 1_000_000
    assert budget.output_tokens == 5_000 and budget.model_calls == 50
    assert budget.tool_calls == 3 and budget.seconds == 600.0
    assert parse_budget("supersteps=4,on=route").on_exhausted == "route"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("usd", "'usd' is not unit=value"),
        ("dollars=2", "'dollars=2' is not unit=value"),
        ("tokens=1.5", "tokens='1.5' is not a whole number"),
        ("tokens=lots", "tokens='lots' is not a number"),
        ("usd=2,usd=3", "usd is given twice"),
        ("calls=2,on=explode", "on_exhausted must be one of fail, route, degrade, ask"),
    ],
)
def test_bad_budget_text_names_the_item(text: str, said: str) -> None:
    with pytest.raises(RunOptionError, match="--budget") as info:
        parse_budget(text)
    assert said in str(info.value)


def test_a_budget_mapping_with_a_misspelt_field_says_what_it_meant() -> None:
    with pytest.raises(RunOptionError, match=r"tokenz \(did you mean tokens\?\)"):
        plait.get_plugin_manager()  # the run option converts through the same function
        from plait_budgets import as_budget

        as_budget({"tokenz": 5})


def test_degrade_needs_its_models_and_a_scope_nests_inside_its_fragment() -> None:
    with pytest.raises(RunOptionError, match="needs degrade="):
        Budget(usd=1, on_exhausted="degrade")
    with pytest.raises(RunOptionError, match="'writer', which is not inside it"):
        Budget(scopes={"research/": {"scopes": {"writer": {"model_calls": 1}}}})


async def test_an_unknown_scope_is_refused_naming_the_executors() -> None:
    with pytest.raises(RunOptionError, match=r"'writr'.*did you mean 'writer'"):
        await chain("writer").run("go", budget=Budget(scopes={"writr": Budget(model_calls=1)}))


# -- each unit -----------------------------------------------------------------------------


async def test_model_calls_stop_the_third_call_before_it_starts(calls: Calls) -> None:
    result = await chain("a", "b", "c").run(
        "go", budget=Budget(model_calls=2), raise_on_failure=False
    )
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError)
    assert (error.budget, error.unit, error.executor_id) == ("run", "model_calls", "c")
    assert error.limit == 2 and error.spent == 2
    assert "budget 'run' is spent in model_calls" in str(error)
    assert "agent 'c'" in str(error) and "--budget model_calls=" in str(error)
    assert [model for model, _ in calls.seen] == ["budget-test", "budget-test"]


@pytest.mark.parametrize(
    ("budget", "unit", "made"),
    [
        # each call reserves its prompt ("go": 2 bytes + 16) and max_tokens 10 = 28 tokens;
        # it uses 1 in (one word) and 5 out; the next call's reservation must fit
        (Budget(tokens=28), "tokens", 1),
        (Budget(tokens=6 + 28), "tokens", 2),
        (Budget(input_tokens=18), "input_tokens", 1),
        (Budget(output_tokens=5 + 5 + 9), "output_tokens", 2),
    ],
)
async def test_each_token_unit_is_reserved_at_its_worst_case(
    calls: Calls, budget: Budget, unit: str, made: int
) -> None:
    result = await chain("a", "b", "c").run("go", budget=budget, raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.unit == unit
    assert len(calls.seen) == made


async def test_money_is_priced_exactly(calls: Calls, priced: None) -> None:
    # a call's worst case: 18 tokens in at $0.001 + 10 out at $0.002 = $0.038; its use:
    # 1 in + 5 out = $0.011. Two calls fit in $0.06 ($0.011 spent + $0.038), three do not
    # ($0.022 + $0.038 = $0.060 fits exactly: a limit is inclusive)
    result = await chain("a", "b", "c", "d").run(
        "go", budget=Budget(usd=Decimal("0.06")), raise_on_failure=False
    )
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.unit == "usd"
    assert error.executor_id == "d" and len(calls.seen) == 3
    assert error.spent == 33 * 10**9  # three calls at $0.011
    assert "$0.033000 of $0.060000" in str(error)


async def test_an_unpriced_model_under_a_money_budget_names_the_model_and_the_hook(
    calls: Calls, priced: None
) -> None:
    result = await chain("a", model="budget-test-unpriced").run(
        "go", budget="usd=1", raise_on_failure=False
    )
    error = cause(result.error)
    assert isinstance(error, UnpricedModelError) and error.model_id == "budget-test-unpriced"
    assert "plait_register_prices" in str(error) and "agent 'a'" in str(error)
    assert calls.seen == []
    # without a money budget the same model runs
    assert (await chain("a", model="budget-test-unpriced").run("go", budget="calls=1")).outputs


async def test_no_max_tokens_and_no_max_output_is_an_error_naming_the_fix(
    calls: Calls, priced: None
) -> None:
    node = agent("a", max_tokens=None)

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    workflow = WorkflowBuilder("w").set_start(node).add_edge(node, collect).build()
    result = await workflow.run("go", budget="tokens=1000", raise_on_failure=False)
    assert "options.max_tokens" in str(result.error) and calls.seen == []


def test_the_default_table_is_dated_and_a_registered_price_overrides_it(
    plait_register_plugin: Any,
) -> None:
    from plait_budgets import default_prices
    from plait_budgets._prices import price_of

    date, prices = default_prices()
    assert len(date) == 10 and date[4] == "-"
    manager = plait.get_plugin_manager()
    found = price_of("gpt-4o-mini", manager)
    assert found == prices["gpt-4o-mini"] and isinstance(found, Price)
    assert found.pico_per_token()[0] * 1_000_000 == 150_000_000_000  # $0.15 per million in
    assert price_of("no-such-model", manager) is None

    class Negotiated:
        @plait.hookimpl
        def plait_register_prices(self, register: Any) -> None:
            register("gpt-4o-mini", Price(input=0.1, output=0.5))

    plait_register_plugin(Negotiated(), "negotiated-prices")
    assert price_of("gpt-4o-mini", plait.get_plugin_manager()) == Price(input=0.1, output=0.5)


async def test_supersteps_stop_the_run(calls: Calls) -> None:
    result = await chain("a", "b", "c").run(
        "go", budget=Budget(supersteps=2), raise_on_failure=False
    )
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.unit == "supersteps"
    assert error.executor_id is None and len(calls.seen) == 2


async def test_wall_time_stops_the_run(calls: Calls) -> None:
    result = await chain("a", "b").run("go", budget=Budget(seconds=0), raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.unit == "seconds"


async def test_unreported_usage_is_counted_at_its_reservation(calls: Calls) -> None:
    result = await chain("a", "b", model="budget-test-silent").run(
        "go", budget=Budget(tokens=28 + 27), raise_on_failure=False
    )
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.spent == 28
    assert len(calls.seen) == 1


# -- nesting -------------------------------------------------------------------------------


def research() -> Workflow:
    """``research/a`` and ``research/b`` fan out from ``start``; ``writer`` follows a."""

    @executor(id="start")
    async def start(value: str, ctx: WorkflowContext[str, Never]) -> None:
        await ctx.send_message(value)

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    a, b, writer = agent("research/a"), agent("research/b"), agent("writer")
    return (
        WorkflowBuilder("research")
        .set_start(start)
        .add_fan_out(start, [a, b])
        .add_edge(a, writer)
        .add_edge(b, collect)
        .add_edge(writer, collect)
        .build()
    )


async def test_a_node_budget_inside_a_fragment_budget_inside_the_run(calls: Calls) -> None:
    budget = Budget(
        model_calls=10,
        scopes={"research/": Budget(model_calls=5, scopes={"research/b": Budget(tokens=5)})},
    )
    result = await research().run("go", budget=budget, raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError)
    assert (error.budget, error.unit, error.executor_id) == ("research/b", "tokens", "research/b")


async def test_a_fragment_budget_counts_every_node_in_it(calls: Calls) -> None:
    budget = Budget(scopes={"research/": Budget(model_calls=1)})
    result = await research().run("go", budget=budget, raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.budget == "research/"
    # the other fragment call was admitted (and cancelled when its sibling failed, or it
    # finished first); the writer, after the fragment, never ran
    assert len(calls.seen) <= 1


async def test_a_nested_workflow_spends_from_the_budget_around_it(calls: Calls) -> None:
    inner = chain("x", "y")

    @executor(id="outer")
    async def outer(value: str, ctx: WorkflowContext[Never, Any]) -> None:
        result = await inner.run(value, budget=Budget(model_calls=5))
        await ctx.yield_output(result.outputs)

    workflow = WorkflowBuilder("outer").set_start(outer).build()
    result = await workflow.run("go", budget=Budget(model_calls=1), raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError)
    assert (error.budget, error.executor_id) == ("run", "y")  # the outer run's budget
    assert len(calls.seen) == 1


# -- actions -------------------------------------------------------------------------------


async def test_route_sends_the_refused_call_to_the_error_edge(calls: Calls) -> None:
    refused: list[InvocationFailure] = []

    @executor(id="fallback")
    async def fallback(failure: InvocationFailure, ctx: WorkflowContext[Never, str]) -> None:
        refused.append(failure)
        await ctx.yield_output("fallback")

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    a, b = agent("a"), agent("b")
    workflow = (
        WorkflowBuilder("routed")
        .set_start(a)
        .add_edge(a, b)
        .add_edge(b, collect)
        .add_error_edge(b, fallback)
        .build()
    )
    result = await workflow.run("go", budget="calls=1,on=route")
    assert result.outputs == ["fallback"]
    assert refused[0].executor_id == "b" and refused[0].error_type == "BudgetExceededError"


async def test_degrade_switches_the_agent_to_its_cheaper_model(calls: Calls, priced: None) -> None:
    # worst cases: budget-test $0.038, budget-test-mini $0.0038; after one full-price call
    # ($0.011 spent) $0.04 leaves no room for another, but room for the mini
    budget = Budget(usd=Decimal("0.04"), on_exhausted="degrade", degrade={"b": "budget-test-mini"})
    result = await chain("a", "b").run("go", budget=budget)
    assert result.outputs == ["ok"]
    assert [model for model, _ in calls.seen] == ["budget-test", "budget-test-mini"]


async def test_degrade_without_room_even_for_the_cheaper_model_fails(
    calls: Calls, priced: None
) -> None:
    # the mini's worst case is $0.0038 and its use $0.0011: "a" fits only degraded, then
    # "b" does not fit even so ($0.0011 + $0.0038 > $0.004)
    mini = "budget-test-mini"
    budget = Budget(usd=Decimal("0.004"), on_exhausted="degrade", degrade={"a": mini, "b": mini})
    result = await chain("a", "b").run("go", budget=budget, raise_on_failure=False)
    error = cause(result.error)
    assert isinstance(error, BudgetExceededError) and error.action == "degrade"
    assert (error.executor_id, error.model_id) == ("b", "budget-test")
    assert calls.seen == [(mini, "go")]


# -- a 1,000-way fan-out -------------------------------------------------------------------


def fan_out(width: int) -> Workflow:
    @executor(id="start")
    async def start(value: str, ctx: WorkflowContext[str, Never]) -> None:
        for i in range(width):
            await ctx.send_message(f"question {i}")

    @executor(id="refused")
    async def refused(failure: InvocationFailure, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("refused")

    @executor(id="collect")
    async def collect(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
        await ctx.yield_output(value)

    worker = agent("worker")
    return (
        WorkflowBuilder("fan-out")
        .set_start(start)
        .add_edge(start, worker)
        .add_edge(worker, collect)
        .add_error_edge(worker, refused)
        .build()
    )


async def test_a_thousand_way_fan_out_never_overshoots(calls: Calls, priced: None) -> None:
    # each call reserves "question N" (<= 12 bytes + 16 = 28 in) + 10 out and uses 2 in,
    # 5 out; the calls finish in a random order, and none may start past the budget
    limit = Decimal("5")
    result = await fan_out(1000).run("go", budget=Budget(usd=limit, on_exhausted="route"))
    made = len(calls.seen)
    answered = result.outputs.count("ok")
    assert answered == made and result.outputs.count("refused") == 1000 - made
    spent = made * (2 * 1_000 + 5 * 2_000) * 10**6  # picodollars per call: 2 in, 5 out
    assert spent <= int(limit * 10**12)
    # admission depends on the reservations alone (slack is released at the barrier):
    # worst cases are 27 in ("question 0".."question 9") or 28 in, + 10 out
    worst = [((len(f"question {i}") + 16) * 1_000 + 10 * 2_000) * 10**6 for i in range(1000)]
    assert 0 < made < 1000
    assert sum(sorted(worst)[:made]) <= int(limit * 10**12)
    assert sum(sorted(worst, reverse=True)[: made + 1]) > int(limit * 10**12)


# -- the ledger alone ----------------------------------------------------------------------


def test_tool_calls_are_counted_as_reported_and_stop_the_next_call() -> None:
    from plait_budgets import Ledger

    ledger = Ledger(lambda model: None)
    run = ledger.account("run", Budget(tool_calls=2))
    first = ledger.reserve((run,), "agent", "m", 10, 5)
    first.settle(4, 3, tool_calls=2)  # the model called two tools in its chain
    assert run.spent.tool_calls == 2
    with pytest.raises(BudgetExceededError) as info:
        ledger.reserve((run,), "agent", "m", 10, 5)
    assert (info.value.unit, info.value.limit, info.value.spent) == ("tool_calls", 2, 2)
    assert ledger.usage()["by_executor"]["agent"]["tool_calls"] == 2


def test_a_call_that_used_more_than_it_reserved_is_spent_in_full_and_reported() -> None:
    from plait_budgets import Ledger

    ledger = Ledger(lambda model: None)
    run = ledger.account("run", Budget(tokens=100))
    ledger.reserve((run,), "agent", "m", 10, 5).settle(12, 9)  # 6 tokens beyond 15
    assert run.spent.tokens == 21
    [overshoot] = ledger.usage()["overshoots"]
    assert overshoot["executor"] == "agent" and overshoot["beyond"]["tokens"] == 6


def test_slack_is_released_at_the_barrier_not_when_a_call_ends() -> None:
    from plait_budgets import Ledger

    ledger = Ledger(lambda model: None)
    run = ledger.account("run", Budget(tokens=30))
    ledger.reserve((run,), "a", "m", 10, 10).settle(1, 1)  # reserved 20, used 2
    with pytest.raises(BudgetExceededError):  # 20 held until the barrier: no room for 20
        ledger.reserve((run,), "b", "m", 10, 10)
    ledger.barrier()
    ledger.reserve((run,), "b", "m", 10, 10)  # 2 + 20 <= 30
    assert run.spent.tokens == 2 and run.room_tokens == 30 - 22


def test_the_live_spend_shows_the_reservations_of_calls_in_flight() -> None:
    from plait_budgets import BudgetObserver, Ledger, Price

    ledger = Ledger(lambda model: Price(input=1_000.0, output=2_000.0))
    observer = BudgetObserver(ledger, Budget(usd=1, tokens=1_000), (), "run")
    assert observer.status() == {"spend": "$0.00/$1.00 · 0/1k tok"}
    run = observer.accounts_of("a")
    first = ledger.reserve(run, "a", "m", 20, 10)  # $0.02 + $0.02 reserved
    ledger.reserve(run, "b", "m", 100, 10)  # $0.10 + $0.02
    assert observer.status() == {
        "spend": "$0.00/$1.00 · 0/1k tok · 2 calls in flight: $0.16, 140 tok reserved"
    }
    first.settle(5, 5)  # spent $0.015, 10 tokens; one call still in flight
    assert observer.status() == {
        "spend": "$0.01/$1.00 · 10/1k tok · 1 call in flight: $0.12, 110 tok reserved"
    }
