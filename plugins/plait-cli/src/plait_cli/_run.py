"""``plait run``: run a workflow from the shell, durably by default (``plait resume``, in
:mod:`plait_cli._resume`, continues it with what this module prints and reports).

stdout carries the workflow's outputs only (one per line; JSON unless a string), so it can be
piped; the run id, progress, events, pending requests and errors go to stderr.

Every run is checkpointed, by default to a SQLite store under ``.plait/`` in the working
directory, so it can be resumed (``--no-checkpoint`` opts out). The first Ctrl-C stops the
run at the next superstep boundary, once that superstep is checkpointed, and prints the
resume command; a second aborts at once (the last checkpoint still resumes).

The exit status says how the run ended: 0 done, 1 failed, 2 usage error, 3 waiting for
input, 130 stopped by Ctrl-C.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import click
from plait import RunStatus, Workflow
from plait.spi import record_repr, type_name

from ._follow import Display, Outcome, follow
from ._grants import grant_options, grants_from, resume_flags
from ._output import describe_error, how_to_install, to_json
from ._target import Target, TargetError, document_options, load_target, parse_target

__all__ = ["DEFAULT_STORE", "EXIT_STATUS", "resume_words", "run_command"]

#: Where ``plait run`` keeps checkpoints unless told otherwise (relative to the working
#: directory); ``plait runs`` and ``plait resume`` look there too.
DEFAULT_STORE = "sqlite:///.plait/runs.db"
#: Exit status of ``plait run`` / ``plait resume`` per final run status (``running``: the
#: run was stopped by Ctrl-C and can be resumed).
EXIT_STATUS: Mapping[RunStatus, int] = {
    RunStatus.IDLE: 0,
    RunStatus.FAILED: 1,
    RunStatus.IDLE_WITH_PENDING_REQUESTS: 3,
    RunStatus.RUNNING: 130,
}
#: The checkpoint metadata key under which ``plait run`` records how to load the workflow.
METADATA_KEY = "cli"
#: Set, they make ``plait run`` and ``plait resume`` sign (and encrypt) their checkpoints
#: through plait-sealing's ``sealed:`` store.
KEY_VARIABLES = ("PLAIT_CHECKPOINT_KEY", "PLAIT_CHECKPOINT_ENCRYPT")


def _target_error(exc: TargetError) -> click.ClickException:
    context = click.get_current_context(silent=True)
    if context is not None and context.meta.get("plait.debug"):
        raise exc
    return click.ClickException(str(exc))


def _target(text: str, format: str | None = None, agents: str | None = None) -> Target:
    """``TARGET`` with its form decided, once."""
    try:
        return parse_target(text, format=format, agents=agents)
    except TargetError as exc:
        raise _target_error(exc) from exc


def _workflow(target: Target, allow_imports: bool = False, grants: Any = None) -> Workflow:
    try:
        return load_target(target, allow_imports=allow_imports, allow=grants)
    except TargetError as exc:
        raise _target_error(exc) from exc


def _message(text: str | None, json_input: bool) -> Any:
    if text == "-":
        text = sys.stdin.read()
        if not json_input and text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
    if text is None:
        return None if json_input else ""
    if not json_input:
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not valid JSON ({exc})", param_hint="MESSAGE") from exc


def _placed(workflow: Workflow, placement: str | None) -> Workflow:
    """``workflow`` with ``placement`` as its default placement (``--placement``): the
    same document, if it was loaded from one (its runs record it)."""
    if placement is None:
        return workflow
    from plait import PlaitError
    from plait.spi import with_placement
    from plait_documents import attach_source, source_document

    try:  # a name nothing provides fails here, before any checkpoint
        placed = with_placement(workflow, placement)
    except PlaitError as exc:
        raise click.ClickException(describe_error(exc)) from exc
    return attach_source(placed, source_document(workflow))


def _step_context_reader() -> Callable[[Any], Any]:
    """What ``--step-context`` prints a run's step context with: plait-steps' reader (the
    step context is that plugin's, kept in the run's shared state)."""
    try:
        from plait_steps import step_context
    except ImportError as exc:
        raise click.UsageError(
            "--step-context shows the step context of a YAML steps workflow, which needs "
            f"plait-steps ({how_to_install('plait-steps')})"
        ) from exc
    reader: Callable[[Any], Any] = step_context
    return reader


def _record(target: Target, allow_imports: bool, placement: str | None) -> dict[str, Any]:
    """What the checkpoints record of how the workflow was loaded: shown to whoever resumes
    the run without naming it, never loaded from there."""
    absolute = target.absolute()
    record: dict[str, Any] = {"target": str(absolute), "allow_imports": allow_imports}
    if absolute.format is not None:
        record["format"] = absolute.format
    if absolute.agents is not None:
        record["agents"] = absolute.agents
    if placement is not None:
        record["placement"] = placement
    return record


def _default_store() -> str:
    """The default store URL, its folder created (with a ``.gitignore`` keeping it out of
    version control)."""
    folder = Path(".plait")
    if not folder.is_dir():
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # checkpoints are private
        except OSError as exc:
            raise click.ClickException(
                f"cannot keep checkpoints in {folder.resolve()}: {exc.strerror or exc}; "
                "run from a folder you can write to, or pass --checkpoint URL or "
                "--no-checkpoint"
            ) from exc
        try:
            (folder / ".gitignore").write_text("# plait run's checkpoints\n*\n")
        except OSError:
            pass  # a read-only or odd folder: the store will say what is wrong
    return DEFAULT_STORE


def _keyed(url: str) -> str:
    """``url`` sealed (``sealed:URL``) when a checkpoint key is set in the environment."""
    if not any(os.environ.get(name) for name in KEY_VARIABLES) or url.startswith("sealed:"):
        return url
    if importlib.util.find_spec("plait_sealing") is None:
        raise click.ClickException(
            f"{' or '.join(KEY_VARIABLES)} is set, but signing checkpoints needs the "
            f"plait-sealing plugin ({how_to_install('plait-sealing')}; or unset the variable)"
        )
    return f"sealed:{url}"


@attrs.frozen(repr=False)
class Loaded:
    """How this command loaded the workflow: what a printed resume command repeats.

    :param text: the ``TARGET`` as typed.
    :param target: its form, decided once.
    """

    __repr__ = record_repr

    text: str
    target: Target
    allow_imports: bool
    placement: str | None
    #: the options that grant the same again (``--allow``, ``--trust``, ``--allow-imports``)
    grant_flags: tuple[str, ...] = ()


def _program() -> list[str]:
    """How to type ``plait`` so that a printed command works in the shell that started this
    one: through ``uv run`` (``bash .ci/uv run --locked plait`` in a checkout), where
    ``plait`` is on the path only inside it; by its full path when the shell's ``plait`` is
    not this one; else ``plait``."""
    import shutil

    script = Path(sys.argv[0])
    if script.name == "__main__.py" and script.parent.name == "plait_cli":  # python -m
        return ["plait"] if shutil.which("plait") else [sys.executable, "-m", "plait_cli"]
    if script.name != "plait":  # called in-process (a test's CliRunner, a plugin)
        return ["plait"]
    if os.environ.get("UV_RUN_RECURSION_DEPTH"):
        if Path(".ci", "uv").is_file():
            return ["bash", ".ci/uv", "run", "--locked", "plait"]
        return ["uv", "run", "plait"]
    found = shutil.which("plait")
    if found is not None and Path(found).resolve() == script.resolve():
        return ["plait"]
    return [str(script.absolute())]


#: What a name recorded in a checkpoint may look like to be printed in a command.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def resume_words(
    target: str,
    run_id: str,
    checkpoint: str,
    *,
    allow_imports: bool,
    placement: str | None,
    grant_flags: Sequence[str] = (),
) -> list[str]:
    """The ``plait resume`` command line that continues ``run_id`` as it was run: the
    target, the store, the grants (``--allow-imports``, ``grant_flags``: ``--allow``,
    ``--trust``) and the placement. Never
    ``--accept-changes``: accepting a changed workflow is a decision to type."""
    words = [*_program(), "resume", target, run_id]
    if checkpoint != DEFAULT_STORE:
        words += ["--checkpoint", checkpoint]
    if allow_imports and not {"--allow-imports", "--trust"} & set(grant_flags):
        words.append("--allow-imports")
    words += grant_flags
    if placement is not None and _PLAIN_NAME.fullmatch(placement):
        words += ["--placement", placement]
    return words


def _resume_hint(outcome: Outcome, loaded: Loaded, checkpoint: str | None, extra: str) -> str:
    """The command that resumes the run (``loaded``: how the workflow was loaded)."""
    if checkpoint is None:
        return (
            "the run was not checkpointed, so it cannot be resumed; run it without --no-checkpoint"
        )
    words = resume_words(
        loaded.text,
        outcome.run_id,
        checkpoint,
        allow_imports=loaded.allow_imports,
        placement=loaded.placement,
        grant_flags=loaded.grant_flags,
    )
    import shlex  # (only a run that stops, fails or waits prints a command)

    command = " ".join(shlex.quote(w) for w in words)
    return f"resume with: {command} {extra}".rstrip()


def _failure(outcome: Outcome) -> str:
    from plait import WorkflowRunError

    error = outcome.error
    where = ""
    if isinstance(error, WorkflowRunError):
        if error.executor_id is not None:
            where += f" in executor {error.executor_id!r}"
        if error.superstep is not None:
            where += f" at superstep {error.superstep}"
    if not where:
        where = f" after superstep {outcome.supersteps}"
    detail = describe_error(error) if error is not None else "no error recorded"
    return f"Error: run {outcome.run_id} failed{where}\n  {detail}"


def _json_hint(outcome: Outcome, workflow: Workflow, text: str | None) -> str:
    """When the first executor refused MESSAGE, a string because ``--json-input`` was not
    given, while the text is JSON of another type: the flag to add (else ``""``)."""
    from plait import UnhandledMessageError

    error = outcome.error
    if (
        text is None
        or not isinstance(error, UnhandledMessageError)
        or error.superstep != 1
        or error.executor_id != workflow.spec.start
    ):
        return ""
    try:
        value = json.loads(text)
    except ValueError:
        return ""
    if isinstance(value, str):
        return ""
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (
        f"hint: MESSAGE is passed as the string {shown!r}; to pass it as JSON "
        f"({type(value).__name__}), add --json-input"
    )


def _report(
    ctx: click.Context,
    outcome: Outcome,
    loaded: Loaded,
    checkpoint: str | None,
    hint: str = "",
) -> None:
    """Print what the run left (requests, error, ``hint``, how to resume); exit with its
    status."""
    if outcome.interrupted and outcome.status is RunStatus.RUNNING:
        if outcome.aborted:
            what = "aborted; its last checkpoint resumes it"
        else:
            what = f"stopped after superstep {outcome.supersteps}, checkpointed"
        click.echo(f"run {outcome.run_id} {what}", err=True)
        click.echo(_resume_hint(outcome, loaded, checkpoint, ""), err=True)
    elif outcome.status is RunStatus.IDLE_WITH_PENDING_REQUESTS:
        from ._prompt import asker

        click.echo(
            f"run {outcome.run_id} is waiting for {len(outcome.requests)} request(s):", err=True
        )
        for request in outcome.requests:
            click.echo(
                f"  request {request.request_id} from {asker(request)} "
                f"(answer with {type_name(request.response_type)}): {to_json(request.request)}",
                err=True,
            )
        answers = " ".join(f"--respond {r.request_id}=JSON" for r in outcome.requests)
        click.echo(_resume_hint(outcome, loaded, checkpoint, answers), err=True)
    elif outcome.status is RunStatus.FAILED:
        click.echo(_failure(outcome), err=True)
        if hint:
            click.echo(hint, err=True)
        if checkpoint is not None:
            click.echo(_resume_hint(outcome, loaded, checkpoint, ""), err=True)
    ctx.exit(EXIT_STATUS[outcome.status])


def _answer_on_terminal(
    workflow: Workflow,
    outcome: Outcome,
    checkpoint: str | None,
    display: Display,
    prompt: bool,
    options: dict[str, Any],
) -> Outcome:
    """While the run waits for answers and a person is at the terminal, ask and resume."""
    while (
        prompt
        and checkpoint is not None
        and outcome.status is RunStatus.IDLE_WITH_PENDING_REQUESTS
        and not display.json_events
    ):
        # the prompts are imported only when a run waits for answers
        from ._prompt import ask_for_answers, can_prompt

        if not can_prompt():
            break
        answers = ask_for_answers(outcome.requests)
        outcome = _resume(workflow, outcome.run_id, checkpoint, answers, display, options)
    return outcome


def _resume(
    workflow: Workflow,
    run_id: str,
    checkpoint: str,
    responses: dict[str, Any],
    display: Display,
    options: dict[str, Any],
) -> Outcome:
    async def start(extra: dict[str, Any]) -> Any:
        store = _keyed(checkpoint)
        return await workflow.resume(run_id, store, responses=responses, **options, **extra)

    return follow(start, run_id, display)


_DISPLAY_OPTIONS = [
    click.option(
        "--json",
        "--events",
        "json_events",
        is_flag=True,
        help="Print every event to stderr as a JSON line (no progress display).",
    ),
    click.option("-q", "--quiet", is_flag=True, help="No progress display."),
    click.option(
        "--no-input",
        is_flag=True,
        help="Never prompt for answers to requests, even on a terminal.",
    ),
    click.option(
        "--max-supersteps", type=click.IntRange(min=1), metavar="N", help="Fail past N supersteps."
    ),
    click.option(
        "--durability",
        type=click.Choice(["sync", "async", "exit"]),
        help="When checkpoints are written (default sync: every superstep).",
    ),
    click.option(
        "--schedule",
        metavar="NAME",
        help="superstep (the default: a barrier per superstep) or a schedule a plugin "
        "registers: pipelined (plait-pipeline: each branch at its own pace, the same "
        "results).",
    ),
    click.option(
        "--max-lead",
        type=click.IntRange(min=0),
        metavar="N",
        help="Pipelined: run at most N supersteps ahead of the slowest branch.",
    ),
    click.option(
        "--placement",
        metavar="NAME",
        help="Where every invocation runs (ray with plait-ray); local executors stay here.",
    ),
    click.option(
        "--budget",
        metavar="LIMITS",
        help="Stop the run before it spends more (plait-budgets): usd=2,tokens=200k,calls=50,"
        "time=10m; on resume, the raised budget.",
    ),
]


def _schedule_options(schedule: str | None, max_lead: int | None) -> dict[str, Any]:
    """The run options ``--schedule`` and ``--max-lead`` give (none: the workflow's)."""
    if max_lead is not None and schedule == "superstep":
        raise click.UsageError("--max-lead is for --schedule pipelined")
    options: dict[str, Any] = {}
    if schedule is not None:
        options["schedule"] = schedule
    if max_lead is not None:
        options["max_lead"] = max_lead
    return options


def _display_options(command: Any) -> Any:
    for option in reversed(_DISPLAY_OPTIONS):
        command = option(command)
    return command


@click.command("run", short_help="Run a workflow on a message; print its outputs.")
@click.argument("target")
@click.argument("message", required=False)
@click.option("--json-input", is_flag=True, help="Parse MESSAGE as JSON.")
@click.option(
    "--checkpoint",
    metavar="URL",
    help=f"Write checkpoints to this store (default {DEFAULT_STORE}; file://DIR, redis://…).",
)
@click.option("--no-checkpoint", is_flag=True, help="Do not checkpoint: the run cannot resume.")
@click.option(
    "--journal",
    is_flag=True,
    help="Keep the run's event journal (invocations, attempts, retries, timeouts, errors) "
    "with its checkpoints: plait ui draws it as a Gantt.",
)
@click.option(
    "--record",
    "record_calls",
    is_flag=True,
    help="Keep every call the run makes outside (model calls, http, shell, now, random) "
    "with its checkpoints, for plait replay (plait-replay).",
)
@_display_options
@click.option(
    "--step-context",
    is_flag=True,
    help=(
        "Print the run's step context (YAML steps) to stderr: formatted JSON under a "
        "'--- Step Context ---' header."
    ),
)
@grant_options("Let a workflow file import the Python code it names (untrusted by default).")
@document_options
@click.pass_context
def run_command(
    ctx: click.Context,
    target: str,
    message: str | None,
    json_input: bool,
    checkpoint: str | None,
    no_checkpoint: bool,
    journal: bool,
    record_calls: bool,
    json_events: bool,
    quiet: bool,
    no_input: bool,
    max_supersteps: int | None,
    durability: str | None,
    schedule: str | None,
    max_lead: int | None,
    placement: str | None,
    budget: str | None,
    step_context: bool,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    document_format: str | None,
    agents: str | None,
) -> None:
    """Run the workflow TARGET on MESSAGE and print its outputs, one per line.

    TARGET is a workflow file in any installed format (workflow.yaml, pipeline.flow,
    dag.json), or module:attr or path/to/file.py:attr naming a plait.Workflow or a function
    that takes no arguments and returns one. MESSAGE is a string (JSON with --json-input;
    - reads stdin; without MESSAGE the workflow gets "" or, with --json-input, null).

    The run is checkpointed (to .plait/runs.db unless --checkpoint URL says otherwise), so
    `plait resume` can continue it. Progress shows on stderr: live on a terminal, plain
    lines elsewhere. Ctrl-C stops at the next superstep boundary, after its checkpoint;
    Ctrl-C again aborts. On a terminal, requests for input are asked for and answered.

    Exit status: 0 the run finished, 1 it failed, 2 a usage error, 3 it waits for answers
    to requests (they are printed; answer them with plait resume), 130 stopped by Ctrl-C.
    """
    if no_checkpoint and checkpoint is not None:
        raise click.UsageError("--checkpoint and --no-checkpoint exclude each other")
    if durability is not None and no_checkpoint:
        raise click.UsageError("--durability needs a checkpoint (drop --no-checkpoint)")
    if journal and no_checkpoint:
        raise click.UsageError("--journal needs a checkpoint (drop --no-checkpoint)")
    if record_calls and no_checkpoint:
        raise click.UsageError("--record needs a checkpoint (drop --no-checkpoint)")
    value = _message(message, json_input)
    allow_imports = allow_imports or trust or "imports" in allow  # as --allow-imports
    grants = grants_from(allow, trust, allow_imports)
    read_step_context = _step_context_reader() if step_context else None
    parsed = _target(target, document_format, agents)
    flags = (*resume_flags(allow, trust, allow_imports), *parsed.flags())
    loaded = Loaded(target, parsed, allow_imports, placement, flags)
    workflow = _placed(_workflow(loaded.target, allow_imports, grants), placement)
    run_id = uuid.uuid4().hex
    options: dict[str, Any] = _schedule_options(schedule, max_lead)
    if max_supersteps is not None:
        options["max_supersteps"] = max_supersteps
    if budget is not None:  # the text is plait-budgets' to read (an unknown option without)
        options["budget"] = budget
    store: str | None = None
    if not no_checkpoint:
        store = checkpoint if checkpoint is not None else _default_store()
        options["checkpoint"] = _keyed(store)
        if durability is not None:
            options["durability"] = durability
        if journal:
            options["journal"] = True
        if record_calls:
            options["record"] = True
        record = _record(loaded.target, allow_imports, placement)
        options["checkpoint_metadata"] = {METADATA_KEY: record}
        if not json_events:  # stderr stays JSON lines only; RunStarted has the id
            click.echo(f"run id: {run_id}", err=True)
    display = Display(json_events=json_events, quiet=quiet)

    async def start(extra: dict[str, Any]) -> Any:
        return await workflow.run(value, run_id=run_id, **options, **extra)

    outcome = follow(start, run_id, display)
    resume_options = {k: v for k, v in options.items() if k != "checkpoint"}
    outcome = _answer_on_terminal(workflow, outcome, store, display, not no_input, resume_options)
    if read_step_context is not None:
        # as seed 002 prints it: formatted JSON under a header, on stderr
        click.echo("--- Step Context ---", err=True)
        click.echo(to_json(read_step_context(outcome), indent=2), err=True)
    hint = "" if json_input or message == "-" else _json_hint(outcome, workflow, message)
    _report(ctx, outcome, loaded, store, hint)
