"""``plait resume``: continue a checkpointed run from the shell, answering its requests.

What it prints and how it ends are ``plait run``'s (:mod:`plait_cli._run`, whose display,
report and exit statuses it shares); it is its own module so that ``plait run`` builds
none of this command's options (nor imports the change policies, :mod:`plait_cli._on_change`).
"""

from __future__ import annotations

import functools
import json
from typing import Any

import click
from plait import RunStatus, Workflow

from ._follow import Display, execute
from ._grants import grant_options, grants_from, resume_flags
from ._on_change import PolicyType, apply_policy
from ._output import describe_error
from ._run import (
    _PLAIN_NAME,
    DEFAULT_STORE,
    METADATA_KEY,
    Loaded,
    _answer_on_terminal,
    _display_options,
    _keyed,
    _placed,
    _program,
    _record,
    _report,
    _resume,
    _schedule_options,
    _target,
    _workflow,
    resume_words,
)
from ._target import Target, TargetError, document_options, parse_target

__all__ = ["resume_command"]


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
