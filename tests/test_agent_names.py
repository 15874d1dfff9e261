"""One name registry for every format, in Python and the CLI, in the documented order:
``executors=``, the document's ``agents:``, the agents installed plugins publish
(``plait_register_agents``), then ``agents=`` / ``--agents``. An unknown name is an error at
its line and column listing where Plait looked; published fragments run inside flows and
DAGs, from files and from Python."""

from __future__ import annotations

import json
import types
from pathlib import Path
from typing import Any

import plait
import pytest
from click.testing import CliRunner, Result
from plait import LoadError
from plait_cli import make_cli

FLOW_DOC = """\
agents:
  shout: {kind: python, config: {ref: "plait_testing_agents_doc:shout"}}
flow: greet -> shout
"""
STEPS_DOC = """\
agents:
  shout: {ref: "plait_testing_agents_doc:shout"}
workflow:
  - {id: greet, type: agent, name: greet}
  - {id: shout, type: agent, name: shout}
"""


@pytest.fixture(autouse=True)
def _in_a_scratch_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def plait_cli(*args: str) -> Result:
    return CliRunner().invoke(make_cli(), list(args))


async def python_greet(text: str) -> str:
    return f"hello {text} (from executors=)"


def module(name: str, **agents: Any) -> types.ModuleType:
    made = types.ModuleType(name)
    for key, value in agents.items():
        value.__module__ = name
        setattr(made, key, value)
    return made


async def module_greet(text: str) -> str:
    return f"hello {text} (from agents=)"


async def plugin_greet(text: str) -> str:
    return f"hello {text} (from a plugin)"


class PublishesGreet:
    @plait.hookimpl
    def plait_register_agents(self, register: Any) -> None:
        register("greet", plugin_greet)
        register("echo", {"kind": "shell", "config": {"argv": ["cat"], "input": "message"}})


def test_each_tier_is_found_in_the_documented_order(register_plugin: Any) -> None:
    flow = "greet"
    mod = module("order_agents", greet=module_greet)
    assert plait.load(flow, format="flow", agents=mod).run_sync("x").outputs == [
        "hello x (from agents=)"
    ]
    register_plugin(PublishesGreet(), "greeter", distribution="greeter-agents")
    # a plugin's agent comes before agents=
    assert plait.load(flow, format="flow", agents=mod).run_sync("x").outputs == [
        "hello x (from a plugin)"
    ]
    # the document's own agents come before a plugin's
    document = 'agents:\n  greet: {kind: shell, config: {argv: ["echo", "doc"]}}\nflow: greet\n'
    outputs = plait.load(document, format="flow", allow="subprocess").run_sync("x").outputs
    assert [o.strip() for o in outputs] == ["doc"]
    # executors= comes first
    made = plait.load(document, format="flow", executors={"greet": python_greet})
    assert made.run_sync("x").outputs == ["hello x (from executors=)"]


def test_a_published_agent_can_be_data_and_is_stamped_with_its_distribution(
    register_plugin: Any,
) -> None:
    register_plugin(PublishesGreet(), "greeter", distribution="greeter-agents")
    registry = plait.get_plugin_manager().registry("agent")
    assert registry.entry("echo").distribution == "greeter-agents"
    workflow = plait.load("greet -> echo", format="flow", allow="subprocess")
    assert workflow.run_sync("x").outputs == ["hello x (from a plugin)"]


def test_an_unknown_name_says_where_plait_looked_in_the_callers_words() -> None:
    with pytest.raises(LoadError) as info:
        plait.load("greet -> shuot", format="flow", executors={"greet": python_greet})
    (problem,) = info.value.problems
    assert (problem.line, problem.column) == (1, 10)  # type: ignore[attr-defined]
    text = str(problem)
    assert "unknown agent 'shuot'" in text
    assert "Plait looked in executors= (greet); the document's agents: section (none)" in text
    assert "agents= (not given)" in text and "pass executors={...}, or agents=" in text
    Path("shout.flow").write_text("greet -> shuot\n")
    done = plait_cli("validate", "shout.flow")
    assert done.exit_code == 1
    assert "executors=" not in done.stdout and "agents=" not in done.stdout
    assert "--agents (not given)" in done.stdout and "--agents MODULE_OR_FILE.py" in done.stdout
    assert "shout.flow:1:10: unknown agent 'shuot'" in done.stdout


@pytest.mark.parametrize(
    ("name", "text"),
    [("doc.flow.yaml", FLOW_DOC), ("doc.yaml", STEPS_DOC)],
)
def test_the_cli_names_flags_for_python_code_a_file_names(name: str, text: str) -> None:
    Path(name).write_text(text)
    Path("plait_testing_agents_doc.py").write_text(
        "async def shout(text):\n    return text.upper()\n"
    )
    agents = f"agents_for_{name.replace('.', '_')}.py"
    Path(agents).write_text(
        "async def greet(text):\n    return {'said': 'hi ' + str(text)} if isinstance(text, dict)"
        " else 'hi ' + text\n"
    )
    refused = plait_cli("run", name, "x", "--no-checkpoint", "--agents", agents)
    assert refused.exit_code == 1
    assert "--allow-imports" in refused.stderr and "allow_imports=" not in refused.stderr


def test_published_fragments_run_inside_a_flow_from_a_file_and_from_python() -> None:
    # the repro: "executor 'casefold' sent a message ... but has no outgoing edges"
    Path("tiny.flow").write_text("textkit.normalize -> textkit.summarize\n")
    done = plait_cli("run", "tiny.flow", "Hello   WORLD.  Second one.", "--no-checkpoint")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"text": "hello world.", "sentences": 2, "words": 4}
    from plait_textkit import Summary

    workflow = plait.load("textkit.normalize -> textkit.summarize", format="flow")
    assert workflow.run_sync("A  B.  C.").outputs == [Summary("a b.", 2, 3)]


@plait.executor(id="count")
async def count_words(context: dict[str, Any]) -> dict[str, Any]:
    return {"words": len(str(context.get("text", "")).split())}


@plait.executor(id="label")
async def label(updates: dict[str, Any]) -> dict[str, Any]:
    return {**updates, "label": "long" if updates["words"] > 2 else "short"}


class PublishesWordCount:
    @plait.hookimpl
    def plait_register_fragments(self, register: Any) -> None:
        from plait_builders import Fragment, WorkflowBuilder

        def build() -> WorkflowBuilder:
            return WorkflowBuilder("words").add_edge(count_words, label).set_start(count_words)

        register("words.count", Fragment("words.count", build, version="1.0.0"))


@pytest.mark.parametrize("field", ["workflow", "agent_name"])
def test_published_fragments_run_inside_a_dag(register_plugin: Any, field: str) -> None:
    # its last executor sends its result: the node's dict of updates
    register_plugin(PublishesWordCount(), "words")
    document = {
        "nodes": [
            {"id": "count", field: "words.count", "is_entry": True},
            {"id": "done", "agent_name": "finish", "is_exit": True},
        ],
        "connections": [{"source_id": "count", "target_id": "done"}],
    }

    async def finish(context: dict[str, Any]) -> dict[str, Any]:
        return {"finished": True}

    Path("words.json").write_text(json.dumps(document))
    workflow = plait.load("words.json", executors={"finish": finish})
    (output,) = workflow.run_sync({"text": "one two three"}).outputs
    assert output == {"text": "one two three", "words": 3, "label": "long", "finished": True}


def test_every_problem_at_once_refs_included_each_with_a_did_you_mean() -> None:
    # the repro: a step-type typo was reported, and only once it was fixed, the bad
    # ref behind it (with no did-you-mean)
    Path("doc_refs_agents.py").write_text("async def translator(text):\n    return text\n")
    Path("refs.yaml").write_text(
        "agents:\n"
        '  translator: {ref: "doc_refs_agents:translatr"}\n'
        "workflow:\n"
        "  - {id: a, type: agnt, name: translator}\n"
        "  - {id: b, type: agent, name: translator}\n"
    )
    done = plait_cli("validate", "refs.yaml", "--allow-imports")
    assert done.exit_code == 1
    lines = [line for line in done.stdout.splitlines() if line.startswith("  - ")]
    assert len(lines) == 2
    assert lines[0].startswith("  - refs.yaml:2:")
    assert "did you mean doc_refs_agents:translator?" in lines[0]
    assert lines[1].startswith("  - refs.yaml:4:19: a step with type 'agnt'")
    assert "did you mean 'agent'?" in lines[1]


def test_a_dag_llm_agent_must_declare_the_updates_it_answers() -> None:
    document = {
        "agents": {"greeter": {"model": "any-model"}},
        "nodes": [{"id": "greeter", "agent_name": "greeter", "is_entry": True, "is_exit": True}],
        "connections": [],
    }
    with pytest.raises(LoadError) as info:
        plait.load(json.dumps(document), format="dag")
    messages = [str(p) for p in info.value.problems]
    assert any(
        "at /nodes/0/agent_name: agent 'greeter' is an LLM agent that answers text" in m
        for m in messages
    ), messages


def test_a_flow_document_named_yaml_says_how_to_read_it() -> None:
    Path("a.yaml").write_text("flow: a -> b\n")
    done = plait_cli("validate", "a.yaml")
    assert done.exit_code == 1
    assert "a.yaml:1:1: a top-level 'flow:' makes this a flow document" in done.stdout
    assert "pass --format flow" in done.stdout
    with pytest.raises(LoadError, match="pass format='flow'"):
        plait.load(Path("a.yaml"))


def test_the_cli_says_format_as_a_flag_and_a_missing_file_in_one_line() -> None:
    Path("notes.txt").write_text("just some words\n")
    unknown = plait_cli("validate", "notes.txt")
    assert unknown.exit_code == 1
    assert "pass --format (installed formats:" in unknown.stdout
    assert "format=" not in unknown.stdout
    missing = plait_cli("run", "nosuch.yaml")
    assert missing.exit_code == 1
    assert (
        missing.stderr == "Error: TARGET 'nosuch.yaml': no such file (nosuch.yaml does not exist)\n"
    )
    assert plait_cli("validate", "notes.txt", "--format", "flow").exit_code == 1


def test_a_resume_command_repeats_format_and_never_agents() -> None:
    Path("resume_agents.py").write_text("async def greet(text):\n    return 'hi ' + text\n")
    Path("greet.txt").write_text("greet\n")
    done = plait_cli("run", "greet.txt", "x", "--format", "flow", "--agents", "resume_agents.py")
    assert done.exit_code == 0, done.output
    assert done.stdout == "hi x\n"
    run_id = next(
        line.split()[-1] for line in done.stderr.splitlines() if line.startswith("run id:")
    )
    shown = plait_cli("resume", run_id)
    assert shown.exit_code == 2
    # the format is repeated; the agents module is code, which a checkpoint never names
    assert "greet.txt " + run_id + " --format flow\n" in shown.stderr
    assert "add --agents MODULE_OR_FILE.py yourself" in shown.stderr
    assert "resume_agents.py" not in shown.stderr


def test_validate_refuses_an_edge_between_plain_functions_whose_types_differ() -> None:
    # issue 34: `count -> shout` with count(text: str) -> int validated as ok, then
    # failed when it ran with an UnhandledMessageError
    Path("typed_agents.py").write_text(
        "async def count(text: str) -> int:\n    return len(text)\n\n\n"
        "async def shout(text: str) -> str:\n    return text.upper()\n\n\n"
        "async def halve(value: float) -> float:\n    return value / 2\n"
    )
    Path("typed.flow").write_text("count -> shout\n")
    done = plait_cli("validate", "typed.flow", "--agents", "typed_agents.py")
    assert done.exit_code == 1, done.stdout
    assert (
        "typed.flow:1:10: edge group 'direct:count->shout': 'shout' cannot handle int from "
        "'count' (it accepts: str)"
    ) in done.stdout
    Path("bridged.flow").write_text("count -> halve\n")  # int_to_float is lossless
    done = plait_cli("validate", "bridged.flow", "--agents", "typed_agents.py")
    assert done.exit_code == 0, done.stdout
    assert done.stdout.startswith("bridged.flow: ok")
