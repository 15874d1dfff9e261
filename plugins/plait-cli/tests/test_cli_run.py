"""``plait run`` and ``plait resume`` in-process, through click's CliRunner.

The workflows live in ``cli_workflows.py`` beside this file and are named by path
(``…/cli_workflows.py:echo``), as a user names theirs.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import uuid
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner, Result
from plait_cli import make_cli

WORKFLOWS = Path(__file__).with_name("cli_workflows.py")


def target(attr: str) -> str:
    """``path/to/cli_workflows.py:attr``."""
    return f"{WORKFLOWS}:{attr}"


def plait(*args: str, input: str | None = None) -> Result:
    """Run ``plait ARGS`` in-process; an exception other than an exit is a test failure."""
    result = CliRunner().invoke(make_cli(), list(args), input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def printed(stderr: str) -> list[str]:
    """The ``plait resume`` command a run or a refusal printed, as the words a shell gives
    (``resume with: plait resume …`` or an indented ``plait resume …`` line), without
    ``plait``."""
    lines = [
        line.removeprefix("resume with: ").strip()
        for line in stderr.splitlines()
        if line.startswith(("resume with: plait ", "  plait resume "))
    ]
    assert len(lines) == 1, stderr
    words = shlex.split(lines[0])
    assert words[:2] == ["plait", "resume"], words
    return words[1:]


def store(tmp_path: Path) -> str:
    """A sqlite checkpoint store URL in the test's folder."""
    return f"sqlite:///{tmp_path / 'runs.db'}"


# -- running -----------------------------------------------------------------------------------


def test_run_prints_the_outputs_and_exits_0() -> None:
    result = plait("run", target("echo"), "hello", "--quiet", "--no-checkpoint")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "OLLEH\n", "")


def test_off_a_terminal_a_quick_run_prints_its_summary_line() -> None:
    result = plait("run", target("echo"), "hello")
    assert (result.exit_code, result.stdout) == (0, "OLLEH\n")
    lines = result.stderr.splitlines()
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", lines[0])
    assert re.fullmatch(
        rf"run {run_id}: idle, 2 superstep\(s\), 1 output\(s\) in \d+ ms", lines[-1]
    )


def test_off_a_terminal_progress_is_a_line_whenever_the_superstep_moved_on() -> None:
    slow = f"{Path(__file__).with_name('terminal_workflows.py')}:slow"
    result = plait("run", slow, "1", "--json-input", "--no-checkpoint")
    assert (result.exit_code, result.stdout) == (0, "6\n")
    lines = result.stderr.splitlines()
    moved = [re.fullmatch(r"\[[\d.]+ m?s\] superstep (\d): (s\d)", line) for line in lines[:-1]]
    assert all(moved), lines
    seen = [(int(m.group(1)), m.group(2)) for m in moved if m]
    # each step takes 0.4 s and the run is looked at every 0.25 s: every superstep is seen
    assert seen == [(n, f"s{n - 1}") for n in range(1, 6)]
    assert re.fullmatch(
        r"run [0-9a-f]{32}: idle, 5 superstep\(s\), 1 output\(s\) in [\d.]+ s", lines[-1]
    )


def test_every_run_is_checkpointed_under_dot_plait_by_default(tmp_path: Path) -> None:
    result = plait("run", target("echo"), "hello", "-q")
    assert result.exit_code == 0
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", result.stderr, re.M)
    assert (tmp_path / ".plait" / "runs.db").is_file()
    assert (tmp_path / ".plait" / ".gitignore").read_text().splitlines()[-1] == "*"
    # checkpoints hold a run's messages and state: private to their user (issue 24, F11)
    assert (tmp_path / ".plait").stat().st_mode & 0o777 == 0o700
    private = [p for p in (tmp_path / ".plait").iterdir() if p.name.startswith("runs.db")]
    assert private and all(p.stat().st_mode & 0o777 == 0o600 for p in private), private
    listed = plait("runs", "--json")
    (run,) = json.loads(listed.stdout)
    assert (run["run_id"], run["status"], run["superstep"]) == (run_id, "idle", 2)


def test_no_checkpoint_writes_nothing_and_prints_no_run_id(tmp_path: Path) -> None:
    result = plait("run", target("echo"), "hello", "--no-checkpoint", "-q")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "OLLEH\n", "")
    assert not (tmp_path / ".plait").exists()
    both = plait("run", target("echo"), "x", "--no-checkpoint", "--checkpoint", "memory://a")
    assert both.exit_code == 2 and "exclude each other" in both.stderr


def test_a_target_may_be_a_function_returning_the_workflow() -> None:
    result = plait("run", target("make_echo"), "abc")
    assert (result.exit_code, result.stdout) == (0, "CBA\n")


def test_json_input_and_outputs_one_per_line_json_unless_a_string() -> None:
    result = plait("run", target("records"), '{"items": ["b", "a", "b"]}', "--json-input")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        '["b", "a", "b"]',
        '{"word": "a", "count": 1}',
        '{"word": "b", "count": 2}',
        "3 items",
    ]


def test_a_dash_reads_the_message_from_stdin() -> None:
    assert plait("run", target("echo"), "-", input="from stdin\n").stdout == "NIDTS MORF\n"
    result = plait("run", target("records"), "-", "--json-input", input='{"items": ["x"]}')
    assert result.stdout.splitlines()[0] == '["x"]'


def test_bad_json_input_is_a_usage_error_naming_message() -> None:
    result = plait("run", target("records"), "{not json", "--json-input")
    assert result.exit_code == 2
    assert "MESSAGE" in result.stderr and "not valid JSON" in result.stderr


def test_events_stream_to_stderr_as_json_lines_and_outputs_to_stdout() -> None:
    result = plait("run", target("echo"), "hi", "--events")
    assert (result.exit_code, result.stdout) == (0, "IH\n")
    events = [json.loads(line) for line in result.stderr.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert {"SuperstepStarted", "ExecutorInvoked", "OutputEvent"} <= set(kinds)
    output = next(e for e in events if e["event"] == "OutputEvent")
    assert output == {
        "event": "OutputEvent",
        "executor_id": "reverse",
        "data": "IH",
        "superstep": 2,
    }
    assert events[-1]["status"] == "idle" and events[-1]["error"] is None


def test_a_failed_run_exits_1_naming_the_executor_the_superstep_and_the_cause() -> None:
    result = plait("run", target("failing"), "boom")
    assert result.exit_code == 1 and result.stdout == ""
    assert re.search(
        r"^Error: run [0-9a-f]{32} failed in executor 'explode' at superstep 2$",
        result.stderr,
        re.M,
    )
    assert "ConnectionError: the model endpoint hung up on 'BOOM'" in result.stderr
    assert f"raised at {WORKFLOWS}:" in result.stderr and "in explode" in result.stderr
    assert "not checkpointed" not in result.stderr and "resume with:" in result.stderr


def test_max_supersteps_bounds_a_loop_and_streams_its_custom_events() -> None:
    result = plait(
        "run", target("looping"), "1", "--json-input", "--max-supersteps", "3", "--events"
    )
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    custom = [json.loads(x)["data"] for x in lines if x.startswith('{"event": "CustomEvent"')]
    assert custom == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert "SuperstepLimitError: run exceeded max_supersteps=3" in result.stderr
    assert "in executor 'again' at superstep 4" in result.stderr


def test_a_pipelined_run_fails_at_the_same_executor_and_superstep_as_a_superstep_run() -> None:
    for flags in ([], ["--schedule", "pipelined"], ["--schedule", "pipelined", "--max-lead", "1"]):
        result = plait(
            "run", target("looping"), "1", "--json-input", "--max-supersteps", "3", *flags
        )
        assert result.exit_code == 1
        assert "SuperstepLimitError: run exceeded max_supersteps=3" in result.stderr
        assert "in executor 'again' at superstep 4" in result.stderr


def test_max_lead_is_for_the_pipelined_schedule() -> None:
    result = plait("run", target("echo"), "x", "--schedule", "superstep", "--max-lead", "2")
    assert result.exit_code == 2 and "--max-lead is for --schedule pipelined" in result.stderr


def test_a_message_the_start_executor_cannot_handle_fails_the_run() -> None:
    result = plait("run", target("echo"), "42", "--json-input")
    assert result.exit_code == 1
    assert "executor 'upper' has no handler for a message of type int" in result.stderr


def test_journal_keeps_the_run_s_event_journal(tmp_path: Path) -> None:
    import anyio
    from plait_durable import open_store, read_journal

    url = store(tmp_path)
    result = plait("run", target("echo"), "x", "--checkpoint", url, "--journal", "-q")
    assert result.exit_code == 0, result.stderr
    run_id = re.search(r"run id: ([0-9a-f]+)", result.stderr).group(1)  # type: ignore[union-attr]

    async def events() -> list[str]:
        opened = open_store(url)
        try:
            found = await read_journal(opened, run_id)
            return [e.kind for e in found or []]
        finally:
            await opened.aclose()

    kinds = anyio.run(events)
    assert "invocation_finished" in kinds and kinds[-1] == "run_finished"
    refused = plait("run", target("echo"), "x", "--journal", "--no-checkpoint")
    assert refused.exit_code == 2 and "--journal needs a checkpoint" in refused.stderr


def test_durability_needs_a_checkpoint() -> None:
    result = plait("run", target("echo"), "x", "--durability", "exit", "--no-checkpoint")
    assert result.exit_code == 2 and "--durability needs a checkpoint" in result.stderr


def test_an_unknown_store_scheme_is_an_error_listing_the_installed_ones() -> None:
    result = plait("run", target("echo"), "x", "--checkpoint", "nosuchstore://here")
    assert result.exit_code == 1
    assert "unknown checkpoint store 'nosuchstore'" in result.stderr
    assert "sqlite" in result.stderr


def test_a_bad_target_exits_1_naming_what_was_found() -> None:
    result = plait("run", target("nope"), "x")
    assert result.exit_code == 1
    assert "module 'cli_workflows'" in result.stderr and "no attribute 'nope'" in result.stderr
    assert "workflows: echo, failing, gate, looping, records" in result.stderr


# -- durable runs: checkpoint, human in the loop, resume -----------------------------------------


def _pending(result: Result) -> tuple[str, str]:
    """The run id and the one pending request id a waiting run printed."""
    (run_id,) = re.findall(r"^run ([0-9a-f]{32}) is waiting for", result.stderr, re.M)
    (request_id,) = re.findall(
        r"^  request ([0-9a-f]+) from executor 'approval'", result.stderr, re.M
    )
    return run_id, request_id


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_a_request_exits_3_and_resume_with_respond_gives_the_output(
    tmp_path: Path, durability: str
) -> None:
    url = store(tmp_path)
    waiting = plait(
        "run", target("gate"), "the essay", "--checkpoint", url, "--durability", durability
    )
    assert waiting.exit_code == 3 and waiting.stdout == ""
    run_id, request_id = _pending(waiting)
    assert (
        f"run {run_id} is waiting for 1 request(s):\n"
        f"  request {request_id} from executor 'approval' (answer with bool): "
        '{"question": "publish?", "text": "the essay"}\n'
    ) in waiting.stderr
    assert (
        f"resume with: plait resume {target('gate')} {run_id} --checkpoint {url} "
        f"--respond {request_id}=JSON"
    ) in waiting.stderr

    done = plait(
        "resume",
        target("gate"),
        run_id,
        "--checkpoint",
        url,
        "--respond",
        f"{request_id}=true",
        "-q",
    )
    assert (done.exit_code, done.stdout, done.stderr) == (0, "published: the essay\n", "")


def test_events_with_a_checkpoint_report_the_request_too(tmp_path: Path) -> None:
    url = store(tmp_path)
    waiting = plait("run", target("gate"), "draft", "--checkpoint", url, "--events")
    assert waiting.exit_code == 3
    run_id, request_id = _pending(waiting)
    info = [json.loads(x) for x in waiting.stderr.splitlines() if '"RequestInfoEvent"' in x]
    assert [(e["request_id"], e["response_type"]) for e in info] == [(request_id, "bool")]
    refused = plait(
        "resume", target("gate"), run_id, "--checkpoint", url, "--respond", f"{request_id}=false"
    )
    assert (refused.exit_code, refused.stdout) == (0, "withheld\n")


def test_a_wrong_response_is_an_error_and_the_request_stays_pending(tmp_path: Path) -> None:
    url = store(tmp_path)
    run_id, request_id = _pending(plait("run", target("gate"), "t", "--checkpoint", url))

    wrong = plait(
        "resume", target("gate"), run_id, "--checkpoint", url, "--respond", f'{request_id}="yes"'
    )
    assert wrong.exit_code == 1
    assert "must be bool, got str; the request stays pending" in wrong.stderr

    unknown = plait("resume", target("gate"), run_id, "--checkpoint", url, "--respond", "nope=true")
    assert unknown.exit_code == 1
    assert f"no pending request 'nope' in run {run_id}; pending: {request_id}" in unknown.stderr

    still = plait("resume", target("gate"), run_id, "--checkpoint", url)
    assert still.exit_code == 3 and f"request {request_id}" in still.stderr

    done = plait(
        "resume", target("gate"), run_id, "--checkpoint", url, "--respond", f"{request_id}=true"
    )
    assert (done.exit_code, done.stdout) == (0, "published: t\n")


@pytest.mark.parametrize(
    ("respond", "message"),
    [
        ("no-equals-sign", "'no-equals-sign' is not REQUEST_ID=JSON"),
        ("=true", "'=true' is not REQUEST_ID=JSON"),
        ("r1=yes", "the answer to request 'r1' is not valid JSON"),
    ],
)
def test_respond_must_be_request_id_equals_json(tmp_path: Path, respond: str, message: str) -> None:
    result = plait(
        "resume", target("gate"), "run", "--checkpoint", store(tmp_path), "--respond", respond
    )
    assert result.exit_code == 2 and message in result.stderr


def test_answering_one_request_twice_is_a_usage_error(tmp_path: Path) -> None:
    args = ["--respond", "r1=true", "--respond", "r1=false"]
    result = plait("resume", target("gate"), "run", "--checkpoint", store(tmp_path), *args)
    assert result.exit_code == 2 and "request 'r1' is answered twice" in result.stderr


def test_resume_uses_the_default_store_and_a_run_id_alone_prints_the_command_naming_it() -> None:
    waiting = plait("run", target("gate"), "t", "-q")
    run_id, request_id = _pending(waiting)
    assert f"resume with: plait resume {target('gate')} {run_id} --respond" in waiting.stderr
    unnamed = plait("resume", run_id, "--respond", f"{request_id}=true", "-q")
    assert (unnamed.exit_code, unnamed.stdout) == (2, "")
    assert f"run {run_id} was started from {target('gate')}; a checkpoint never chooses" in (
        unnamed.stderr
    )
    # Python code is shown, never printed as a command: a checkpoint names no import
    command = printed(unnamed.stderr)
    assert command == ["resume", "TARGET", run_id, f"--respond={request_id}=true", "-q"]
    assert "type the TARGET yourself" in unnamed.stderr
    done = plait(*[target("gate") if word == "TARGET" else word for word in command])
    assert (done.exit_code, done.stdout) == (0, "published: t\n")


def test_a_run_id_alone_never_prints_a_recorded_target_holding_control_characters(
    tmp_path: Path,
) -> None:
    import anyio
    from plait_durable import open_store

    url = store(tmp_path)
    run_id, _ = _pending(plait("run", target("gate"), "t", "--checkpoint", url))

    async def forge() -> None:
        checkpoints = open_store(url)
        try:
            latest = await checkpoints.latest(run_id)
            assert latest is not None
            record = {"target": "flow.yaml\x1b]0;owned\x07", "allow_imports": True}
            await checkpoints.save(
                attrs.evolve(
                    latest,
                    checkpoint_id="f" * 32,
                    parent_id=latest.checkpoint_id,
                    created_at=latest.created_at + 1,
                    metadata={**latest.metadata, "cli": record},
                )
            )
        finally:
            await checkpoints.aclose()

    anyio.run(forge)
    result = plait("resume", run_id, "--checkpoint", url)
    assert result.exit_code == 2 and "\x1b" not in result.stderr and "owned" not in result.stderr
    assert printed(result.stderr) == ["resume", "TARGET", run_id]


def test_resume_takes_one_or_two_arguments() -> None:
    result = plait("resume", "a", "b", "c")
    assert result.exit_code == 2 and "expected [TARGET] RUN_ID" in result.stderr
    unknown = plait("resume", "nope")
    assert unknown.exit_code == 1 and "no run and no checkpoint with id 'nope'" in unknown.stderr


def test_resume_of_an_unknown_run_is_an_error(tmp_path: Path) -> None:
    plait("run", target("echo"), "x", "--checkpoint", store(tmp_path))
    result = plait("resume", target("echo"), "no-such-run", "--checkpoint", store(tmp_path))
    assert result.exit_code == 1
    assert "CheckpointNotFoundError" in result.stderr and "'no-such-run'" in result.stderr


def test_resume_with_another_workflow_is_refused(tmp_path: Path) -> None:
    url = store(tmp_path)
    run_id, _ = _pending(plait("run", target("gate"), "t", "--checkpoint", url))
    result = plait("resume", target("echo"), run_id, "--checkpoint", url)
    assert result.exit_code == 1
    assert "TopologyMismatchError" in result.stderr and "different graph" in result.stderr


def test_a_failed_checkpointed_run_can_be_resumed_and_says_how(tmp_path: Path) -> None:
    url = store(tmp_path)
    result = plait("run", target("failing"), "x", "--checkpoint", url)
    assert result.exit_code == 1
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", result.stderr, re.M)
    assert f"resume with: plait resume {target('failing')} {run_id} --checkpoint {url}\n" in (
        result.stderr
    )
    again = plait("resume", target("failing"), run_id, "--checkpoint", url)
    assert again.exit_code == 1 and "in executor 'explode'" in again.stderr


def test_a_request_without_a_checkpoint_says_it_cannot_be_resumed() -> None:
    result = plait("run", target("gate"), "t", "--no-checkpoint")
    assert result.exit_code == 3
    assert "the run was not checkpointed, so it cannot be resumed" in result.stderr
    assert "run id:" not in result.stderr


def test_off_a_terminal_each_retry_is_a_line_and_counted_in_the_summary() -> None:
    flaky = f"{Path(__file__).with_name('terminal_workflows.py')}:retrying"
    result = plait("run", flaky, "7", "--json-input")
    assert (result.exit_code, result.stdout) == (0, "7\n")
    lines = result.stderr.splitlines()
    retries = [line for line in lines if line.startswith("retry:")]
    assert retries == ["retry: executor 'flaky', attempt 2", "retry: executor 'flaky', attempt 3"]
    assert ", 1 output(s), 2 retries in " in lines[-1]


def test_placement_is_checked_before_the_run_and_recorded_with_its_checkpoints(
    tmp_path: Path,
) -> None:
    unknown = plait("run", target("echo"), "x", "--placement", "nowhere")
    assert unknown.exit_code == 1
    assert "unknown placement 'nowhere'" in unknown.stderr
    assert "run id:" not in unknown.stderr  # nothing started, nothing written
    url = store(tmp_path)
    local = plait("run", target("echo"), "x", "--placement", "local", "--checkpoint", url, "-q")
    assert (local.exit_code, local.stdout) == (0, "X\n")
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", local.stderr, re.M)

    import anyio
    from plait_durable import open_store

    async def latest_metadata() -> dict[str, object]:
        checkpoints = open_store(url)
        try:
            latest = await checkpoints.latest(run_id)
            assert latest is not None
            return dict(latest.metadata["cli"])
        finally:
            await checkpoints.aclose()

    recorded = anyio.run(latest_metadata)
    assert recorded == {"target": target("echo"), "allow_imports": False, "placement": "local"}


SHOUT = f"""\
workflow:
  - id: shout
    type: executor
    kind: shell
    config:
      argv: ["{sys.executable}", "-c", "import sys; print(sys.stdin.read().upper())"]
      input: message
"""


def test_resume_of_a_workflow_file_by_run_id_alone_prints_the_command_to_type(
    tmp_path: Path,
) -> None:
    flow = tmp_path / "flows" / "shout.yaml"
    flow.parent.mkdir()
    flow.write_text(SHOUT)
    first = plait("run", str(flow), "hi", "-q", "--max-supersteps", "5", "--allow", "subprocess")
    assert first.exit_code == 0 and "HI" in first.stdout
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", first.stderr, re.M)
    unnamed = plait("resume", run_id, "-q")
    assert unnamed.exit_code == 2
    # a checkpoint grants nothing: the grants are what the file on disk needs now, so the
    # command works as typed
    command = printed(unnamed.stderr)
    assert command == ["resume", str(flow), run_id, "--allow", "subprocess", "-q"]
    again = plait(*command)
    assert again.exit_code == 0, again.stderr


def test_a_folder_that_cannot_hold_dot_plait_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".plait").write_text("a file where the folder should be")
    result = plait("run", target("echo"), "x")
    assert result.exit_code == 1
    assert f"cannot keep checkpoints in {tmp_path / '.plait'}" in result.stderr
    assert "--no-checkpoint" in result.stderr and "Traceback" not in result.output


def test_off_a_terminal_a_fan_out_line_says_how_many_messages_each_executor_handles() -> None:
    spread = f"{Path(__file__).with_name('terminal_workflows.py')}:spread"
    result = plait("run", spread, "3", "--json-input", "--no-checkpoint")
    assert result.exit_code == 0, result.stderr
    assert sorted(result.stdout.split()) == ["0", "1", "2"]
    assert re.search(r"^\[[\d.]+ m?s\] superstep 2: each \(3 messages\)$", result.stderr, re.M)


TWO_STEPS = """\
workflow:
  - id: first
    type: executor
    kind: python
    config: {{ref: "{module}:shout"}}
  - id: second
    type: executor
    kind: python
    config: {{ref: "{module}:{second}"}}
"""

STEP_CODE = """\
async def shout(text: str) -> str:
    return text.upper()


async def whisper(text: str) -> str:
    return text.lower()
"""


def test_a_changed_workflow_is_refused_naming_the_change_unless_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    from plait import load
    from plait_durable import open_store

    module = f"steps_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text(STEP_CODE)
    monkeypatch.syspath_prepend(str(tmp_path))
    flow = tmp_path / "flow.yaml"
    flow.write_text(TWO_STEPS.format(module=module, second="shout"))
    url = store(tmp_path)
    failed = plait(
        "run", str(flow), "Hi", "--allow-imports", "--checkpoint", url, "--max-supersteps", "1"
    )
    assert failed.exit_code == 1
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", failed.stderr, re.M)
    flow.write_text(TWO_STEPS.format(module=module, second="whisper"))

    refused = plait(*printed(failed.stderr))
    assert refused.exit_code == 1 and "WorkflowChangedError" in refused.stderr
    assert (
        f'node \'second\' config.config.ref: "{module}:shout" → "{module}:whisper"'
        in refused.stderr
    )
    assert f"'second' no longer refers to {module}:shout" in refused.stderr
    assert "--accept-changes" in refused.stderr

    # accepted, and stopped again: the printed command does not accept changes for you
    accepted = plait(*printed(failed.stderr), "--accept-changes", "--max-supersteps", "1")
    assert accepted.exit_code == 1
    again = printed(accepted.stderr)
    assert "--accept-changes" not in again and "--allow-imports" in again

    async def recorded() -> str:
        checkpoints = open_store(url)
        try:
            latest = await checkpoints.latest(run_id)
            assert latest is not None
            return str(latest.metadata["fingerprint"]["digest"])
        finally:
            await checkpoints.aclose()

    changed = load(flow, allow_imports=True)
    assert anyio.run(recorded) == changed.fingerprint["digest"]
    done = plait(*again, "-q")  # the changed workflow is now the run's own
    assert done.exit_code == 0, done.stderr
    assert done.stdout.endswith("\n\nhi\n")  # whispered: the second step is the new one


# -- issue 34 -------------------------------------------------------------------------------

SHELL_FILE = """\
workflow:
  - id: shout
    type: executor
    kind: shell
    config:
      argv: ["tr", "a-z", "A-Z"]
      input: message
"""


def _forge_record(url: str, run_id: str, record: dict[str, object]) -> None:
    """Append a checkpoint to ``run_id`` whose ``cli`` record says ``record`` (what anyone
    who can write to the store can do: nothing in it is signed)."""
    import anyio
    from plait_durable import open_store

    async def forge() -> None:
        checkpoints = open_store(url)
        try:
            latest = await checkpoints.latest(run_id)
            assert latest is not None
            await checkpoints.save(
                attrs.evolve(
                    latest,
                    checkpoint_id=uuid.uuid4().hex,
                    parent_id=latest.checkpoint_id,
                    created_at=latest.created_at + 1,
                    metadata={**latest.metadata, "cli": record},
                )
            )
        finally:
            await checkpoints.aclose()

    anyio.run(forge)


def test_a_printed_resume_command_carries_no_grant_or_import_from_the_checkpoint(
    tmp_path: Path,
) -> None:
    # N1: `plait resume RUN_ID` copied --allow-imports and --agents FILE.py from the
    # unsigned checkpoint (typing it imported the planted file) and dropped the grants the
    # run needed, so as typed it failed
    url = store(tmp_path)
    flow = tmp_path / "flow.yaml"
    flow.write_text(SHELL_FILE)
    marker = tmp_path / "IMPORTED"
    planted = tmp_path / "planted.py"
    planted.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
    failed = plait(
        "run", str(flow), "hi", "--allow", "subprocess", "--checkpoint", url,
        "--max-supersteps", "1", "--durability", "sync", "-q",
    )  # fmt: skip
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", failed.stderr, re.M)
    _forge_record(
        url,
        run_id,
        {"target": str(flow), "allow_imports": True, "agents": str(planted)},
    )
    shown = plait("resume", run_id, "--checkpoint", url)
    assert shown.exit_code == 2
    command = printed(shown.stderr)
    assert command == ["resume", str(flow), run_id, "--checkpoint", url, "--allow", "subprocess"]
    assert str(planted) not in shown.stderr
    assert "add --agents MODULE_OR_FILE.py yourself" in shown.stderr
    assert not marker.exists()
    done = plait(*command, "-q")
    assert (done.exit_code, done.stdout) == (0, "HI\n"), done.stderr
    assert not marker.exists()


def test_the_printed_grants_are_what_the_file_needs_now(tmp_path: Path) -> None:
    url = store(tmp_path)
    flow = tmp_path / "flow.yaml"
    flow.write_text(SHELL_FILE)
    done = plait("run", str(flow), "hi", "--allow", "subprocess", "--checkpoint", url, "-q")
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", done.stderr, re.M)
    flow.write_text(SHELL_FILE.replace("kind: shell", "kind: http").replace(
        'argv: ["tr", "a-z", "A-Z"]\n      input: message', 'url: "https://example.org/x"'
    ))  # fmt: skip
    shown = plait("resume", run_id, "--checkpoint", url)
    assert printed(shown.stderr)[-2:] == ["--allow", "network=example.org"]
    typed = plait("resume", run_id, "--checkpoint", url, "--trust")
    assert printed(typed.stderr)[-1:] == ["--trust"]  # what is typed here is kept as it is
    flow.write_text("workflow: [")
    broken = plait("resume", run_id, "--checkpoint", url)
    assert printed(broken.stderr) == ["resume", str(flow), run_id, "--checkpoint", url]
    assert f"plait validate {flow}` lists it" in broken.stderr


def test_a_long_chain_runs_by_default_and_the_limit_names_flag_and_option() -> None:
    # a 1,000-step chain failed at the default max_supersteps=100; an acyclic graph now
    # defaults to 100 plus its longest path, a cycle keeps 100
    chain = plait("run", target("chain1000"), "0", "--json-input", "--no-checkpoint", "-q")
    assert (chain.exit_code, chain.stdout) == (0, "1000\n"), chain.stderr
    loop = plait("run", target("looping"), "0", "--json-input", "--no-checkpoint", "-q")
    assert loop.exit_code == 1
    assert "run exceeded max_supersteps=100" in loop.stderr
    assert "--max-supersteps N on the command line, max_supersteps=N in Python" in loop.stderr


def test_json_without_json_input_says_to_add_it() -> None:
    result = plait("run", target("looping"), "0", "--no-checkpoint", "-q")
    assert result.exit_code == 1
    assert "has no handler for a message of type str" in result.stderr
    assert (
        "hint: MESSAGE is passed as the string '0'; to pass it as JSON (int), add --json-input"
    ) in result.stderr
    text = plait("run", target("looping"), "zero", "--no-checkpoint", "-q")
    assert text.exit_code == 1 and "hint:" not in text.stderr  # not JSON: nothing to add


def test_resuming_a_finished_run_says_so_and_shows_its_outputs(tmp_path: Path) -> None:
    url = store(tmp_path)
    done = plait("run", target("echo"), "hello", "--checkpoint", url, "-q")
    assert (done.exit_code, done.stdout) == (0, "OLLEH\n")
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", done.stderr, re.M)
    again = plait("resume", target("echo"), run_id, "--checkpoint", url)
    assert (again.exit_code, again.stdout) == (0, "OLLEH\n")
    assert f"run {run_id} had finished (idle after superstep 2): nothing to resume" in (
        again.stderr
    )
    assert "0 output(s)" not in again.stderr
