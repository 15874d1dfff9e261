"""Teams declared in workflow files: a YAML ``team`` step and a JSON DAG ``team`` node,
their examples run, and ``plait validate``'s checks at the positions in the document."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plait
import pytest
from plait import LoadError
from plait_documents import load_spec

EXAMPLES = Path(__file__).parents[3] / "docs" / "examples" / "teams"
#: a run with no store and no progress display: only its output is printed
QUIET = ("--no-checkpoint", "-q")
#: the command line, installed beside this Python
PLAIT = str(Path(sys.executable).with_name("plait"))


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The examples' folder, importable (their agents are ``ref: module:attr``)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield EXAMPLES


def test_a_group_chat_team_step_runs(examples: Path) -> None:
    workflow = plait.load(examples / "slogan.yaml", allow_imports=True)
    (conversation,) = workflow.run_sync("A slogan for a ferry company").outputs
    assert [m.author for m in conversation] == ["user", "writer", "critic", "writer", "critic"]
    assert conversation.last is not None and conversation.last.text == "APPROVED"


def test_a_handoff_team_step_runs(examples: Path) -> None:
    workflow = plait.load(examples / "support.yaml", allow_imports=True)
    result = workflow.run_sync("I want my money back")
    assert result.outputs == ["Your refund is on its way."]


def test_a_magentic_team_step_runs(examples: Path) -> None:
    workflow = plait.load(examples / "research.yaml", allow_imports=True)
    result = workflow.run_sync("otters")
    assert result.outputs == ["Report: Otters hold hands; they use tools; they eat sea urchins."]


def test_a_dag_team_node_runs(examples: Path) -> None:
    workflow = plait.load(examples / "support.json", allow_imports=True)
    result = workflow.run_sync({"task": "where is my order 42"})
    (context,) = result.outputs
    assert context["desk"] == "Order 42 ships tomorrow."


# -- asking for outside input, from a file ------------------------------------------------------

#: a YAML team with a human participant; its answer is the whole conversation
HUMAN_STEPS = """\
workflow:
  - id: review
    type: team
    mode: group_chat
    participants: [writer, alice]
    options: {max_rounds: 3, output: conversation}
"""
#: the same team as a JSON DAG node, then a node that reads its answer
HUMAN_DAG = """\
{"nodes": [
  {"id": "review", "is_entry": true,
   "team": {"mode": "group_chat", "participants": ["writer", "alice"],
            "options": {"max_rounds": 3}}},
  {"id": "publish", "agent_name": "publish", "is_exit": true}],
 "connections": [{"source_id": "review", "target_id": "publish"}]}
"""


async def _writer(conversation: Any) -> str:
    """Drafts, then revises after what the last person said."""
    said = [m.text for m in conversation.messages if m.author == "alice"]
    if said:
        return f"revised after {said[-1]!r}"
    return f"draft about {conversation[0].text}"


async def _publish(context: dict[str, Any]) -> dict[str, Any]:
    return {"published": context["review"].upper()}


def _people() -> dict[str, Any]:
    from plait_teams import human

    return {"writer": _writer, "alice": human("alice", "reviews drafts"), "publish": _publish}


@pytest.mark.anyio
@pytest.mark.parametrize("fmt", ["steps", "dag"])
async def test_a_file_team_with_a_human_waits_and_resumes_from_sqlite(
    fmt: str, tmp_path: Path
) -> None:
    from plait_teams import Conversation, HumanTurnRequest

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    text, task = (HUMAN_STEPS, "otters") if fmt == "steps" else (HUMAN_DAG, {"task": "otters"})
    first = await plait.load(text, format=fmt, executors=_people()).run(
        task, checkpoint=store, raise_on_failure=False
    )
    assert first.status is plait.RunStatus.IDLE_WITH_PENDING_REQUESTS, first.error
    (pending,) = first.pending_requests
    assert pending.executor_id == "review"
    assert isinstance(pending.request, HumanTurnRequest)
    assert pending.request.participant == "alice"
    assert pending.request.transcript == "user: otters\nwriter: draft about otters"
    # a fresh load (as a new process would), resumed from the store with the answer
    again = plait.load(text, format=fmt, executors=_people())
    done = await again.resume(first.run_id, store, responses={pending.request_id: "shorter"})
    assert done.status is plait.RunStatus.IDLE, done.error
    if fmt == "steps":
        (conversation,) = done.outputs
        assert isinstance(conversation, Conversation)
        assert [(m.role, m.author, m.text) for m in conversation.messages] == [
            ("user", "user", "otters"),
            ("assistant", "writer", "draft about otters"),
            ("user", "alice", "shorter"),
            ("assistant", "writer", "revised after 'shorter'"),
        ]
    else:
        (context,) = done.outputs
        assert context["review"] == "revised after 'shorter'"
        assert context["published"] == "REVISED AFTER 'SHORTER'"


#: research.yaml's Magentic team as a JSON DAG node, its plan reviewed before work starts
PLAN_DAG = """\
{"agents": {"researcher": {"ref": "research_agents:researcher"},
            "writer": {"ref": "research_agents:writer"}},
 "nodes": [{"id": "study", "is_entry": true, "is_exit": true,
   "team": {"mode": "magentic", "participants": ["researcher", "writer"],
            "options": {"manager": {"ref": "research_agents:manager"},
                        "max_round_count": 5, "plan_review": true}}}],
 "connections": []}
"""


@pytest.mark.anyio
async def test_a_dag_team_node_s_plan_review_is_answered_after_a_resume(
    examples: Path, tmp_path: Path
) -> None:
    from plait_teams import PlanReviewRequest, PlanReviewResponse

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    first = await plait.load(PLAN_DAG, format="dag", allow_imports=True).run(
        {"task": "otters"}, checkpoint=store, raise_on_failure=False
    )
    assert first.status is plait.RunStatus.IDLE_WITH_PENDING_REQUESTS, first.error
    (pending,) = first.pending_requests
    assert isinstance(pending.request, PlanReviewRequest)
    again = plait.load(PLAN_DAG, format="dag", allow_imports=True)
    answer = {pending.request_id: PlanReviewResponse(approved=True)}
    done = await again.resume(first.run_id, store, responses=answer)
    (context,) = done.outputs
    assert context["study"] == "Report: Otters hold hands; they use tools; they eat sea urchins."


def test_a_file_team_asks_the_user_and_plait_resume_answers(examples: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    ran = subprocess.run(
        [
            PLAIT,
            "run",
            "support.yaml",
            "where is my order?",
            "--allow-imports",
            "--checkpoint",
            store,
            "-q",
        ],
        capture_output=True,
        text=True,
        cwd=examples,
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode == 3, ran.stdout + ran.stderr
    assert '"question": "Which order number?"' in ran.stderr
    (resume,) = [line for line in ran.stderr.splitlines() if line.startswith("resume with: ")]
    words = resume.removeprefix("resume with: ").split()
    assert words[-1].endswith("=JSON"), resume
    words[-1] = words[-1].removesuffix("JSON") + json.dumps("order 42")
    done = subprocess.run(
        [PLAIT, *words[1:], "-q"],
        capture_output=True,
        text=True,
        cwd=examples,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "Order 42 ships tomorrow.\n"


def test_python_objects_take_part_by_name() -> None:
    async def echo(conversation: Any) -> str:
        return f"echo of {conversation[0].text}"

    text = (
        "workflow:\n"
        "  - {id: desk, type: team, mode: handoff, participants: [echo],"
        " options: {max_rounds: 1}}\n"
    )
    workflow = plait.load(text, format="steps", executors={"echo": echo})
    assert workflow.run_sync("hi").outputs == ["echo of hi"]


# -- validation, at positions ----------------------------------------------------------------

STEPS = """\
agents:
  triage: {ref: "support_agents:triage"}
  refund: {ref: "support_agents:refund"}
workflow:
  - id: desk
    type: team
    mode: handoff
    participants: [triage, refnud]
    options:
      start: triage
      handoffs: {triage: [refund, ordres]}
      max_stall_count: 2
"""


def _problems(text: str, fmt: str) -> list[Any]:
    with pytest.raises(LoadError) as caught:
        load_spec(text, format=fmt)
    return list(caught.value.problems)


def test_steps_team_problems_are_at_their_line_and_column() -> None:
    found = {(p.line, p.column): str(p) for p in _problems(STEPS, "steps")}
    lines = STEPS.splitlines()
    # the unknown participant, with a did-you-mean
    at = (8, lines[7].index("refnud") + 1)
    assert "unknown agent 'refnud'" in found[at]
    assert "did you mean 'refund'?" in found[at]
    # the handoff target that is no participant, with the names there are
    target = next(m for (line, _), m in found.items() if line == 11)
    assert "the handoff target 'ordres' is not a participant" in target
    assert "(participants: triage, refnud)" in target
    # an option the mode does not take, with the mode's options
    option = found[(12, lines[11].index("max_stall_count") + 1)]
    assert "a handoff team has no option 'max_stall_count'" in option
    assert "its options: start, handoffs, max_rounds" in option


def test_steps_team_mode_and_shape_problems() -> None:
    text = "workflow:\n  - {id: t, type: team, mode: swarm, participants: []}\n"
    messages = [str(p) for p in _problems(text, "steps")]
    assert any("'participants' of team step 't' is a non-empty list" in m for m in messages)
    text = (
        "agents:\n  a: {ref: 'm:a'}\n"
        "workflow:\n  - {id: t, type: team, mode: swarm, participants: [a]}\n"
    )
    (problem,) = _problems(text, "steps")
    assert "'swarm' is not one of ['group_chat', 'magentic', 'handoff']" in str(problem)
    assert problem.line == 4
    assert problem.column == text.splitlines()[3].index("swarm") + 1


def test_dag_team_problems_are_at_their_json_paths() -> None:
    document = {
        "agents": {"triage": {"ref": "m:triage"}, "refund": {"ref": "m:refund"}},
        "nodes": [
            {
                "id": "desk",
                "is_entry": True,
                "is_exit": True,
                "team": {
                    "mode": "handoff",
                    "participants": ["triage", "refnud"],
                    "options": {"handoffs": {"triage": ["ordres"]}, "manager": {}},
                },
            }
        ],
        "connections": [],
    }
    problems = _problems(json.dumps(document, indent=1), "dag")
    paths = {p.path: str(p) for p in problems}
    assert "unknown agent 'refnud'" in paths["/nodes/0/team/participants/1"]
    assert "the handoff target 'ordres'" in paths["/nodes/0/team/options/handoffs/triage/0"]
    assert "a handoff team has no option 'manager'" in paths["/nodes/0/team/options/manager"]
    assert all(p.line is not None for p in problems)


def test_plait_validate_checks_a_team_file(examples: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(STEPS)
    run = subprocess.run(
        [PLAIT, "validate", str(bad), "--allow-imports"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert run.returncode != 0
    column = STEPS.splitlines()[7].index("refnud") + 1
    assert f"bad.yaml:8:{column}" in run.stdout + run.stderr
    good = subprocess.run(
        [PLAIT, "validate", str(examples / "support.yaml"), "--allow-imports"],
        capture_output=True,
        text=True,
        cwd=examples,
    )
    assert good.returncode == 0, good.stdout + good.stderr
    # what docs/teams.md shows
    ran = subprocess.run(
        [PLAIT, "run", "support.yaml", "I want my money back", "--allow-imports", *QUIET],
        capture_output=True,
        text=True,
        cwd=examples,
    )
    assert ran.stdout == "Your refund is on its way.\n", ran.stderr


def test_a_document_without_a_team_does_not_import_plait_teams() -> None:
    code = (
        "import sys, plait\n"
        "from plait_documents import load_spec\n"
        "async def a(p: str) -> str: return p\n"
        "async def d(c: dict) -> dict: return c\n"
        "load_spec('workflow:\\n  - {id: s, type: agent, name: a}\\n', format='steps',"
        " executors={'a': a})\n"
        'load_spec(\'{"nodes": [{"id": "n", "agent_name": "a", "is_entry": true, "is_exit": true}],'
        " \"connections\": []}', format='dag', executors={'a': d})\n"
        "print(sorted(m for m in sys.modules if m.startswith('plait_teams.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- a group chat's manager, from a file --------------------------------------------------------

#: a group chat whose manager is named in the document
MANAGED = """\
workflow:
  - id: chat
    type: team
    mode: group_chat
    participants: [writer, critic]
    options: {max_rounds: 4, output: conversation, manager: MANAGER}
"""


async def _critic(conversation: Any) -> str:
    return f"critic on {conversation.last.text}"


def test_a_file_group_chat_s_manager_is_a_python_function() -> None:
    def pick(state: Any) -> str | None:
        # the critic first, then the writer, then done
        return {0: "critic", 1: "writer"}.get(state.round)

    text = MANAGED.replace("MANAGER", "{uses: pick}")
    workflow = plait.load(
        text, format="steps", executors={"writer": _writer, "critic": _critic, "pick": pick}
    )
    (conversation,) = workflow.run_sync("otters").outputs
    assert [m.author for m in conversation] == ["user", "critic", "writer"]


def test_a_file_group_chat_s_manager_is_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    import llm

    class Manager(llm.Model):
        model_id = "teams-test-file-manager"

        def __init__(self) -> None:
            self.answers = [
                {"next": "writer", "done": False},
                {"next": "critic", "done": False},
                {"next": None, "done": True},
            ]
            self.prompts: list[str] = []

        def execute(self, prompt: Any, stream: bool, response: Any, conversation: Any) -> Any:
            self.prompts.append(prompt.prompt)
            yield json.dumps(self.answers.pop(0))

    class Models:
        def __init__(self) -> None:
            self.manager = Manager()

        @llm.hookimpl
        def register_models(self, register: Any) -> None:
            register(self.manager)

    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path / "llm"))
    plugin = Models()
    llm.plugins.pm.register(plugin, name="plait-teams-test-file-manager")
    try:
        text = MANAGED.replace(
            "MANAGER", "{model: teams-test-file-manager, system: 'You run a writing desk.'}"
        )
        # a model manager reaches a model: the document needs the network granted
        with pytest.raises(plait.PlaitError, match="needs network, which is not granted"):
            plait.load(text, format="steps", executors={"writer": _writer, "critic": _critic})
        workflow = plait.load(
            text,
            format="steps",
            executors={"writer": _writer, "critic": _critic},
            allow=["network"],
        )
        (conversation,) = workflow.run_sync("otters").outputs
    finally:
        llm.plugins.pm.unregister(plugin)
    assert [m.author for m in conversation] == ["user", "writer", "critic"]
    assert conversation.last.text == "critic on draft about otters"
    assert plugin.manager.answers == []  # the model chose each turn, and said done
    # the document's ``system`` is the manager's instruction, before the participants
    assert all(p.startswith("You run a writing desk.") for p in plugin.manager.prompts)


def test_a_file_group_chat_manager_that_was_not_passed_is_an_error_at_its_path() -> None:
    text = MANAGED.replace("MANAGER", "{uses: pick}")
    with pytest.raises(plait.PlaitError) as caught:
        plait.load(text, format="steps", executors={"writer": _writer, "critic": _critic})
    assert "the manager uses 'pick', which the caller did not pass" in str(caught.value)
