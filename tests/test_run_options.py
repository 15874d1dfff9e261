"""Plugins declare their own run options (``plait_register_run_options``): the kernel merges
them with its own, builds each plugin's group from what a run sets, refuses a name two
declare, and rejects an unknown name listing every option by its distribution."""

from __future__ import annotations

import types
from typing import Any

import attrs
import plait
import pytest
from plait import (
    Never,
    PluginConflictError,
    PluginLoadErrors,
    RunOptionError,
    WorkflowContext,
    executor,
)
from plait.spi import PluginManager, Register, RunOptions
from plait_builders import WorkflowBuilder
from plait_durable import DurableOptions

pytestmark = pytest.mark.anyio


def _at_most_ten(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, int) or value > 10:
        raise RunOptionError(f"run option {attribute.name} must be an int <= 10, got {value!r}")


@attrs.frozen(kw_only=True)
class Budget:
    """A plugin's own run options."""

    budget_calls: int = attrs.field(default=3, validator=_at_most_ten)
    budget_label: str = "none"


def declaring(name: str, group: type) -> types.SimpleNamespace:
    """An in-process plugin declaring ``group`` as ``name``."""

    @plait.hookimpl
    def plait_register_run_options(register: Register) -> None:
        register(name, group)

    return types.SimpleNamespace(plait_register_run_options=plait_register_run_options)


@executor(id="echo")
async def echo(value: Any, ctx: WorkflowContext[Never, Any]) -> None:
    await ctx.yield_output(value)


def workflow(manager: PluginManager | None = None) -> plait.Workflow:
    return WorkflowBuilder(plugin_manager=manager).add_executor(echo).set_start(echo).build()


async def test_a_plugin_declares_options_that_runs_accept_and_it_reads() -> None:
    manager = PluginManager()
    manager.register(declaring("budget", Budget), "budget-plugin")
    options = RunOptions.from_kwargs({"budget_label": "spec"}, {"budget_calls": 7}, manager)
    assert options.of(Budget) == Budget(budget_calls=7, budget_label="spec")
    assert options.value("budget_calls") == 7
    assert RunOptions.from_kwargs({}, {}, manager).of(Budget) == Budget()  # its defaults
    with pytest.raises(RunOptionError, match="budget_calls must be an int <= 10, got 11"):
        RunOptions.from_kwargs({}, {"budget_calls": 11}, manager)
    result = await workflow(manager).run("x", budget_calls=2)
    assert result.outputs == ["x"]
    with pytest.raises(RunOptionError, match="budget_calls"):
        await workflow(manager).run("x", budget_calls="many")


async def test_an_unknown_option_lists_every_plugins_options_by_distribution() -> None:
    with pytest.raises(RunOptionError) as caught:
        await workflow().run("x", chekpoint="memory://")
    text = str(caught.value)
    assert "unknown run option(s): chekpoint (did you mean checkpoint" in text
    assert "plait-core: events, " in text and "max_supersteps" in text
    assert "plait-durable: checkpoint, checkpoint_metadata, durability, journal, lease_ttl" in text
    assert "plait-pipeline: max_lead" in text  # the pipelined schedule's, not the kernel's


async def test_the_durable_options_are_plait_durables() -> None:
    options = RunOptions.from_kwargs({}, {"checkpoint": "memory://", "lease_ttl": 5}, _manager())
    assert options.of(DurableOptions).lease_ttl == 5
    assert options.value("checkpoint") == "memory://"
    assert options.of(DurableOptions).durability == "sync"
    assert "checkpoint" not in {a.name for a in attrs.fields(RunOptions)}


def _manager() -> PluginManager:
    return plait.get_plugin_manager()


async def test_without_plait_durable_checkpoint_says_what_to_install() -> None:
    manager = PluginManager(disabled=["durable"])
    with pytest.raises(RunOptionError, match="checkpoint .it comes with plait-durable"):
        await workflow(manager).run("x", checkpoint="memory://")


async def test_max_lead_is_plait_pipelines_and_says_what_to_install_without_it() -> None:
    assert "max_lead" not in {a.name for a in attrs.fields(RunOptions)}
    options = RunOptions.from_kwargs({}, {"max_lead": 0}, _manager())
    assert options.value("max_lead") == 0
    manager = PluginManager(disabled=["pipeline"])
    with pytest.raises(RunOptionError, match="max_lead .it comes with plait-pipeline"):
        await workflow(manager).run("x", max_lead=1)


def test_two_plugins_declaring_one_option_are_refused_naming_both() -> None:
    @attrs.frozen(kw_only=True)
    class Other:
        budget_calls: int = 1

    manager = PluginManager()
    manager.register(declaring("budget", Budget), "budget-plugin", distribution="dist-a")
    manager.register(declaring("other", Other), "other-plugin", distribution="dist-b")
    with pytest.raises(PluginConflictError, match="budget_calls.*both dist-a and dist-b"):
        RunOptions.from_kwargs({}, {"budget_calls": 1}, manager)


def test_a_plugin_may_not_declare_a_kernel_option() -> None:
    @attrs.frozen(kw_only=True)
    class Shadow:
        max_supersteps: int = 1

    manager = PluginManager()
    manager.register(declaring("shadow", Shadow), "shadow-plugin", distribution="dist-s")
    with pytest.raises(PluginConflictError, match="max_supersteps' of dist-s .*kernel's own"):
        RunOptions.from_kwargs({}, {"anything": 1}, manager)


@pytest.mark.parametrize(
    ("group", "problem"),
    [(dict, "is not an attrs class"), (attrs.make_class("Bare", ["x"]), "without a default: x")],
)
def test_a_group_must_be_an_attrs_class_with_defaults(group: Any, problem: str) -> None:
    manager = PluginManager()
    with pytest.raises((PluginLoadErrors, plait.PlaitError), match=problem):
        manager.register(declaring("bad", group), "bad-plugin")
