"""``plait run`` and ``plait resume``: run a workflow from the shell, durably by default.

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

import functools
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
from plait.spi import type_name

from ._follow import Display, Outcome, execute, follow
from ._grants import grant_options, grants_from, resume_flags
from ._on_change import PolicyType, apply_policy
from ._output import describe_error, how_to_install, to_json
from ._target import Target, TargetError, document_options, load_target, parse_target

__all__ = ["DEFAULT_STORE", "EXIT_STATUS", "resume_command", "run_command"]

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


def _responses(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, Any]:
    """``--respond REQUEST_ID=JSON`` options as ``{request_id: value}``."""
    responses: dict[str, Any] = {}
    for text in values:
        request_id, sep, raw = text.partition("=")
        if not sep or not request_id:
            raise click.BadParameter(f"{text!r} is not REQUEST_ID=JSON", ctx, param)
        if request_id in responses:
            raise click.BadParameter(f"request {request_id!r} is answered twice", ctx, param)
        try:
            responses[request_id] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(
                f"the answer to request {request_id!r} is not valid JSON ({exc}); "
                f"quote a string as JSON: {request_id}='\"text\"'",
                ctx,
                param,
            ) from exc
    return responses


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


@attrs.frozen
class Loaded:
    """How this command loaded the workflow: what a printed resume command repeats.

    :param text: the ``TARGET`` as typed.
    :param target: its form, decided once.
    """

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


def _latest(run_id: str, checkpoint: str) -> Any:
    """The latest checkpoint of run ``run_id`` (or the checkpoint with that id) in the
    store ``checkpoint``, as stored (nothing in it decoded), or ``None``."""
    from plait_durable import opened_store

    async def read() -> Any:
        async with opened_store(_keyed(checkpoint)) as store:
            latest = await store.latest(run_id)
            if latest is None:
                from plait_durable import CheckpointNotFoundError

                try:
                    latest = await store.load(run_id)
                except CheckpointNotFoundError:
                    return None
            return latest

    return execute(read)


def _needed_grants(target: Target) -> tuple[list[str] | None, str]:
    """The grant flags the workflow file ``target`` needs to run, read from the file as it
    is on disk now (parsed into its spec, never built: nothing it names is imported), or
    ``None`` and why they could not be read."""
    import shlex

    from plait_documents import cli_wording, grant_text, load_spec, needs

    try:
        with cli_wording():
            spec = load_spec(target.where, format=target.format)
        found = needs(spec, source=target.where)
    except Exception as exc:  # what the file needs is a hint: its absence is said, not raised
        return None, describe_error(exc).splitlines()[0]
    capabilities = sorted({need.capability for need in found})
    return (shlex.split(grant_text(capabilities, "cli")) if capabilities else []), ""


def _name_the_target(ctx: click.Context, run_id: str, checkpoint: str, typed: list[str]) -> None:
    """``plait resume RUN_ID``: show the target ``plait run`` recorded for the run and the
    command that names it (with the options ``typed`` on this one), and exit 2.

    Checkpoint metadata never chooses what runs, and never what the printed command grants
    or imports: anyone who can write to the store could have changed it. A workflow file
    is named with the grants it needs as it is on disk now (unless grants were typed
    here); Python code (``file.py:attr``, ``module:attr``, ``--agents``) is only shown,
    for whoever resumes to name it themselves."""
    import shlex

    latest = _latest(run_id, checkpoint)
    if latest is None:
        raise click.ClickException(f"no run and no checkpoint with id {run_id!r} in {checkpoint}")
    found = latest.metadata.get(METADATA_KEY)
    record: dict[str, Any] = found if isinstance(found, dict) else {}
    target = record.get("target")
    why = "a checkpoint never chooses the workflow that resumes it; name it"
    program = " ".join(shlex.quote(w) for w in _program())
    if not isinstance(target, str) or not target.isprintable() or not target.strip():
        click.echo(
            f"Error: run {run_id} does not record a workflow this command can show; {why}:\n"
            f"  {program} resume TARGET {' '.join(shlex.quote(w) for w in [run_id, *typed])}",
            err=True,
        )
        ctx.exit(2)
    format = record.get("format")
    if not isinstance(format, str) or not _PLAIN_NAME.fullmatch(format) or "--format" in typed:
        format = None
    placement = record.get("placement")
    if not isinstance(placement, str) or "--placement" in typed:
        placement = None
    try:
        parsed: Target | None = parse_target(target, format=format)
    except TargetError:
        parsed = None  # gone, or not a form this command can name
    notes: list[str] = []
    if parsed is not None and parsed.form == "document":
        grants: list[str] | None = []
        if not {"--trust", "--allow-imports", "--allow"} & set(typed):
            grants, problem = _needed_grants(parsed)
            if grants is None:
                notes.append(
                    f"what {target} needs could not be read now ({problem}); "
                    f"`plait validate {shlex.quote(target)}` lists it"
                )
        words = resume_words(
            target,
            run_id,
            checkpoint,
            allow_imports=False,
            placement=placement,
            grant_flags=grants or [],
        )
        words += ["--format", format] if format is not None else []
        head = (
            f"run {run_id} was started from {shlex.quote(target)}; {why} (check it is the file "
            "you mean; the grants are what it needs as it is now, never what the checkpoint "
            "says)"
        )
    else:
        what = "" if parsed is not None else ", which is no workflow file here now"
        words = resume_words("TARGET", run_id, checkpoint, allow_imports=False, placement=None)
        head = (
            f"run {run_id} was started from {shlex.quote(target)}{what}; {why}: a checkpoint "
            "never names code to import, so type the TARGET yourself if it is yours"
        )
    if isinstance(record.get("agents"), str) and "--agents" not in typed:
        notes.append(
            "it was started with --agents too: a checkpoint never names code to import; "
            "add --agents MODULE_OR_FILE.py yourself"
        )
    words += typed
    click.echo(f"Error: {head}:\n  {' '.join(shlex.quote(w) for w in words)}", err=True)
    for note in notes:
        click.echo(f"({note})", err=True)
    ctx.exit(2)


@click.command("resume", short_help="Continue a checkpointed run, answering its requests.")
@click.argument("args", nargs=-1, required=True, metavar="[TARGET] RUN_ID")
@click.option(
    "--checkpoint",
    metavar="URL",
    default=DEFAULT_STORE,
    show_default=True,
    help="The store the run wrote to.",
)
@click.option(
    "--respond",
    "responses",
    metavar="REQUEST_ID=JSON",
    multiple=True,
    callback=_responses,
    help="Answer a pending request (repeat for several).",
)
@_display_options
@grant_options("Let the workflow file import the Python code it names (as plait run did).")
@document_options
@click.option(
    "--accept-changes",
    is_flag=True,
    help="Resume even though the workflow changed since the checkpoint (its kinds, "
    "config, code or policies); its checkpoints then record the new workflow. The same "
    "as --on-change accept.",
)
@click.option(
    "--on-change",
    type=PolicyType(),
    default=None,
    help="What a workflow that changed since the checkpoint does to the run: a policy of "
    "plait-versions (docs/versioning.md). Without one, a change is refused, naming each "
    "change.",
)
@click.option(
    "--pinned-document",
    metavar="PATH",
    default=None,
    help="With --on-change pin on an unsigned store: your copy of the version the run "
    "started on; the stored document runs only if PATH's bytes hash to its SHA-256.",
)
@click.option(
    "--run-stored-document",
    is_flag=True,
    help="With --on-change pin on an unsigned store: run the document stored with the "
    "run (shown as a diff against TARGET) although nothing vouches for it.",
)
@click.pass_context
def resume_command(
    ctx: click.Context,
    args: tuple[str, ...],
    checkpoint: str,
    responses: dict[str, Any],
    json_events: bool,
    quiet: bool,
    no_input: bool,
    max_supersteps: int | None,
    durability: str | None,
    schedule: str | None,
    max_lead: int | None,
    placement: str | None,
    budget: str | None,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
    document_format: str | None,
    agents: str | None,
    accept_changes: bool,
    on_change: str | None,
    pinned_document: str | None,
    run_stored_document: bool,
) -> None:
    """Continue run RUN_ID of the workflow TARGET from its latest checkpoint, with the same
    progress as plait run.

    TARGET is the workflow the run was started with (as for plait run); given RUN_ID
    alone, the command shows the workflow the run's checkpoints name and the command
    that resumes it, and exits 2: what a checkpoint says never chooses what runs. A
    workflow that changed since the checkpoint (a node's kind, config, code or policies)
    is refused, naming each change, unless --accept-changes or --on-change says
    otherwise (pin, migrate: plait-versions). RUN_ID may also be a
    checkpoint id. Answer pending requests with --respond REQUEST_ID=JSON (true, 42,
    '"text"', '{"a": 1}'); on a terminal, without --respond, each request is asked for
    instead. The workflow file gets only the capabilities granted here (--allow, --trust),
    never any a checkpoint records. Output and exit status as plait run.
    """
    if len(args) == 1:
        typed = [f"--respond={rid}={json.dumps(value)}" for rid, value in responses.items()]
        typed += resume_flags(allow, trust, allow_imports or trust or "imports" in allow)
        typed += ["--format", document_format] if document_format is not None else []
        typed += ["--agents", agents] if agents is not None else []
        typed += ["--placement", placement] if placement is not None else []
        typed += ["--max-supersteps", str(max_supersteps)] if max_supersteps else []
        typed += ["--durability", durability] if durability is not None else []
        typed += ["--schedule", schedule] if schedule is not None else []
        typed += ["--max-lead", str(max_lead)] if max_lead is not None else []
        typed += ["--budget", budget] if budget is not None else []
        flags = {"--json": json_events, "-q": quiet, "--no-input": no_input}
        typed += [flag for flag, given in flags.items() if given]
        _name_the_target(ctx, args[0], checkpoint, typed)
        return
    if len(args) != 2:
        raise click.UsageError("expected [TARGET] RUN_ID")
    text, run_id = args
    if (pinned_document is not None or run_stored_document) and on_change != "pin":
        raise click.UsageError(
            "--pinned-document and --run-stored-document go with --on-change pin"
        )
    if accept_changes and on_change is not None:
        raise click.UsageError(
            f"--accept-changes is --on-change accept; give one of the two, not --on-change "
            f"{on_change} too"
        )
    allow_imports = allow_imports or trust or "imports" in allow  # as --allow-imports
    grants = grants_from(allow, trust, allow_imports)
    parsed = _target(text, document_format, agents)
    granted = (*resume_flags(allow, trust, allow_imports), *parsed.flags())
    loaded = Loaded(text, parsed, allow_imports, placement, granted)
    workflow = _placed(_workflow(loaded.target, allow_imports, grants), placement)
    display = Display(json_events=json_events, quiet=quiet)
    options: dict[str, Any] = _schedule_options(schedule, max_lead)
    if durability is not None:
        options["durability"] = durability
    if max_supersteps is not None:
        options["max_supersteps"] = max_supersteps
    if budget is not None:  # a raised budget (without one, the run's own holds)
        options["budget"] = budget
    record = _record(loaded.target, allow_imports, placement)
    options["checkpoint_metadata"] = {METADATA_KEY: record}
    from ._prompt import ask_for_answers, can_prompt

    prompt = not no_input and not json_events
    if on_change is not None:  # what the policy makes of the stored run, before it resumes
        prepared = apply_policy(
            workflow,
            run_id,
            _keyed(checkpoint),
            on_change,
            grants,
            json_events,
            document=parsed.where if parsed.form == "document" else None,
            pinned_document=pinned_document,
            run_stored_document=run_stored_document,
        )
        if prepared.workflow is not workflow:  # (a stored document's: placed as asked)
            workflow = _placed(prepared.workflow, placement)
        run_id = prepared.run_id
        accept_changes = accept_changes or prepared.accept_changes
    if accept_changes:
        options["accept_changes"] = True
    if not responses:
        latest = _latest(run_id, checkpoint)
        if latest is not None and latest.status == RunStatus.IDLE.value:
            _show_finished(ctx, workflow, latest, loaded, checkpoint, options, json_events)
    if not responses and prompt and can_prompt():
        requests = _pending(workflow, run_id, checkpoint, accept_changes)
        if requests:
            responses = ask_for_answers(requests)
    outcome = _resume(workflow, run_id, checkpoint, responses, display, options)
    outcome = _answer_on_terminal(workflow, outcome, checkpoint, display, prompt, options)
    _report(ctx, outcome, loaded, checkpoint)


def _show_finished(
    ctx: click.Context,
    workflow: Workflow,
    latest: Any,
    loaded: Loaded,
    checkpoint: str,
    options: dict[str, Any],
    json_events: bool,
) -> None:
    """Run ``latest.run_id`` had finished: say so, print its outputs and exit 0. They are
    decoded into the workflow's types as resuming does (a finished run resumes to nothing
    and writes no checkpoint), then printed as ``plait run`` printed them."""
    if not json_events:  # stderr stays JSON lines only
        click.echo(
            f"run {latest.run_id} had finished (idle after superstep {latest.superstep}): "
            "nothing to resume; its outputs:",
            err=True,
        )
    outcome = _resume(workflow, latest.run_id, checkpoint, {}, Display(quiet=True), options)
    _report(ctx, outcome, loaded, checkpoint)


def _pending(workflow: Workflow, run_id: str, checkpoint: str, accept_changes: bool) -> list[Any]:
    pending = functools.partial(workflow.pending_requests, accept_changes=accept_changes)
    requests: list[Any] = execute(pending, run_id, _keyed(checkpoint))
    return requests
