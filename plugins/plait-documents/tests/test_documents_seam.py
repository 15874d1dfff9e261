"""plait-documents behind the kernel's seam: ``plait.load`` calls the documents machinery it
gives (``plait_documents``), and without it every door into documents names
the distribution to install."""

from __future__ import annotations

from typing import Any

import plait
import plait_documents
import pytest
from plait.spi import BuildContext, Documents, PluginManager, set_plugin_manager
from plait_documents import AgentNames

ONELINE = "shout"


class Shout:
    """A one-line loader: the text names one agent, resolved through ``ctx.agents``."""

    suffixes = (".shout",)

    def load(self, text: str, ctx: BuildContext) -> plait.WorkflowSpec:
        name = text.strip()
        found = ctx.agents.find(name)
        if found is None:
            raise plait.LoadError(
                [plait.DocumentError(ctx.agents.unknown(name), plait.SourcePosition())]
            )
        node = plait.NodeSpec(name, kind="test.none", uses=name)
        return plait.WorkflowSpec(name="one", start=name, nodes=(node,), edge_groups=())


class LoaderPlugin:
    @plait.hookimpl
    def plait_register_loaders(self, register: Any) -> None:
        register("test.shout", Shout())


@plait.executor
async def shout(text: str, ctx: plait.WorkflowContext[str]) -> None:
    await ctx.yield_output(text.upper())


def test_plait_documents_gives_the_documents_machinery() -> None:
    documents = plait.get_plugin_manager().documents("a test")
    assert documents.origin[2].distribution == "plait-documents"
    assert isinstance(documents.resolve(), Documents)
    assert isinstance(documents.resolve(), plait_documents.Documents)


def test_plait_load_goes_through_the_seam(plait_register_plugin: Any) -> None:
    plait_register_plugin(LoaderPlugin(), "test-shout")
    workflow = plait.load(ONELINE, format="test.shout", executors={"shout": shout})
    assert workflow.run_sync("hi").outputs == ["HI"]
    with pytest.raises(plait.LoadError, match="unknown agent 'shuot'; did you mean 'shout'"):
        plait.load("shuot", format="test.shout", executors={"shout": shout})


def test_a_build_context_made_without_agents_gets_them_from_the_plugin() -> None:
    ctx = BuildContext(executors={"shout": shout})
    assert isinstance(ctx.agents, AgentNames)
    assert ctx.agents is ctx.agents  # made once
    found = ctx.agents.find("shout")
    assert found is not None and (found.tier, found.obj) == ("executors", shout)
    given = AgentNames()
    assert BuildContext(agents=given).agents is given


@pytest.fixture
def without_documents() -> Any:
    """A process-wide plugin manager that has every installed plugin but this one."""
    manager = PluginManager(disabled=["documents"])
    previous = set_plugin_manager(manager)
    yield manager
    set_plugin_manager(previous)


def test_without_plait_documents_plait_load_names_the_distribution(without_documents: Any) -> None:
    with pytest.raises(plait.UnknownNameError) as caught:
        plait.load("a -> b", format="flow")
    message = str(caught.value)
    assert "(for plait.load)" in message
    assert "it comes with plait-documents (" in message


def test_without_plait_documents_a_loader_asking_for_agents_names_it(
    without_documents: Any,
) -> None:
    with pytest.raises(plait.UnknownNameError, match="it comes with plait-documents"):
        BuildContext(manager=without_documents).agents.find("writer")


class BadAgents:
    @plait.hookimpl
    def plait_register_agents(self, register: Any) -> None:
        register("typo", {"modle": "x"})


def test_a_published_agent_mapping_that_is_no_agent_names_its_distribution(
    plait_register_plugin: Any,
) -> None:
    plait_register_plugin(BadAgents(), "bad-agents", distribution="bad-agents-dist")
    names = AgentNames(published=plait.get_plugin_manager().registry("agent"))
    with pytest.raises(plait.RegistrationError) as caught:
        names.find("typo")
    assert "agent 'typo' that bad-agents-dist publishes is not an agent" in str(caught.value)
    assert "did you mean 'model'?" in str(caught.value)
