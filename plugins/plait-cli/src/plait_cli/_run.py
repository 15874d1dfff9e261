"""``plait run`` and ``plait resume``: run a workflow from the shell, durably if asked.

stdout carries the workflow's outputs only (one per line; JSON unless a string), so it can be
piped; the run id, streamed events, pending requests and errors go to stderr. The exit status
says how the run ended: 0 idle, 3 waiting for input, 1 failed (2 is click's usage error).
"""

from __future__ import annotations

import functools
import json
import shlex
import sys
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import attrs
import click
from plait import Workflow, WorkflowRunResult
from plait.errors import PlaitError, WorkflowRunError
from plait.events import OutputEvent, RequestInfoEvent, RunFinished, RunStarted, RunStatus
from plait.types import type_name

from ._output import describe_error, event_record, format_output, to_json
from ._target import TargetError, load_target

__all__ = ["EXIT_STATUS", "resume_command", "run_command"]

#: Exit status of ``plait run`` / ``plait resume`` per final run status.
EXIT_STATUS: Mapping[RunStatus, int] = {
    RunStatus.IDLE: 0,
    RunStatus.IDLE_WITH_PENDING_REQUESTS: 3,
    RunStatus.FAILED: 1,
}


@attrs.define
class _Pending:
    request_id: str
    executor_id: str
    request: Any
    response_type: str


@attrs.define
class _Outcome:
    """How a run ended, whether it was collected by ``run()`` or followed by ``stream()``."""

    run_id: str
    status: RunStatus = RunStatus.FAILED
    outputs: list[Any] = attrs.field(factory=list)
    error: BaseException | None = None
    supersteps: int = 0
    pending: list[_Pending] = attrs.field(factory=list)
    step_context: Any = None

    @classmethod
    def of(cls, result: WorkflowRunResult) -> _Outcome:
        pending = [
            _Pending(r.request_id, r.executor_id, r.request, type_name(r.response_type))
            for r in result.pending_requests
        ]
        return cls(
            result.run_id,
            result.status,
            result.outputs,
            result.error,
            result.supersteps,
            pending,
            result.step_context,
        )


def _workflow(target: str, allow_imports: bool = False) -> Workflow:
    try:
        return load_target(target, allow_imports=allow_imports)
    except TargetError as exc:
        context = click.get_current_context(silent=True)
        if context is not None and context.meta.get("plait.debug"):
            raise
        raise click.ClickException(str(exc)) from exc


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


def _execute(run: Callable[[], Any]) -> Any:
    """``anyio.run`` on asyncio; errors raised before the run ends become CLI errors."""
    try:
        return anyio.run(run, backend="asyncio")
    except PlaitError as exc:
        raise click.ClickException(describe_error(exc)) from exc


async def _stream(workflow: Workflow, message: Any, options: dict[str, Any]) -> _Outcome:
    """Follow the run event by event: events to stderr, outputs to stdout as they come."""
    outcome = _Outcome(run_id=str(options.get("run_id", "")))
    async for event in workflow.stream(message, raise_on_failure=False, **options):
        click.echo(to_json(event_record(event)), err=True)
        if isinstance(event, RunStarted):
            outcome.run_id = event.run_id
        elif isinstance(event, OutputEvent):
            outcome.outputs.append(event.data)
            click.echo(format_output(event.data))
        elif isinstance(event, RequestInfoEvent):
            outcome.pending.append(
                _Pending(event.request_id, event.executor_id, event.request, event.response_type)
            )
        elif isinstance(event, RunFinished):
            outcome.status, outcome.error = event.status, event.error
            outcome.supersteps = event.supersteps
    return outcome


def _report(
    ctx: click.Context, outcome: _Outcome, target: str, checkpoint: str | None, printed: bool
) -> None:
    """Print what the run left (outputs unless ``printed``, requests, error); exit."""
    if not printed:
        for output in outcome.outputs:
            click.echo(format_output(output))
    if outcome.status is RunStatus.IDLE_WITH_PENDING_REQUESTS:
        click.echo(
            f"run {outcome.run_id} is waiting for {len(outcome.pending)} request(s):", err=True
        )
        for request in outcome.pending:
            click.echo(
                f"  request {request.request_id} from executor {request.executor_id!r} "
                f"(answer with {request.response_type}): {to_json(request.request)}",
                err=True,
            )
        answers = " ".join(f"--respond {r.request_id}=JSON" for r in outcome.pending)
        click.echo(_resume_hint(outcome, target, checkpoint, answers), err=True)
    elif outcome.status is RunStatus.FAILED:
        click.echo(_failure(outcome), err=True)
        if checkpoint is not None:
            click.echo(_resume_hint(outcome, target, checkpoint, ""), err=True)
    ctx.exit(EXIT_STATUS[outcome.status])


def _failure(outcome: _Outcome) -> str:
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


def _resume_hint(outcome: _Outcome, target: str, checkpoint: str | None, extra: str) -> str:
    if checkpoint is None:
        return "the run was not checkpointed, so it cannot be resumed; run it with --checkpoint URL"
    words = ["plait", "resume", target, outcome.run_id, "--checkpoint", checkpoint]
    command = " ".join(shlex.quote(w) for w in words)
    return f"resume with: {command} {extra}".rstrip()


@click.command("run", short_help="Run a workflow on a message; print its outputs.")
@click.argument("target")
@click.argument("message", required=False)
@click.option("--json-input", is_flag=True, help="Parse MESSAGE as JSON.")
@click.option(
    "--checkpoint",
    metavar="URL",
    help="Write checkpoints to this store (sqlite:///runs.db, file://DIR, redis://…).",
)
@click.option(
    "--durability",
    type=click.Choice(["sync", "async", "exit"]),
    help="When checkpoints are written (default sync: every superstep).",
)
@click.option("--events", is_flag=True, help="Stream every event to stderr as JSON lines.")
@click.option(
    "--max-supersteps", type=click.IntRange(min=1), metavar="N", help="Fail past N supersteps."
)
@click.option(
    "--step-context",
    is_flag=True,
    help="Print the run's step context (YAML steps) to stderr as JSON.",
)
@click.option(
    "--allow-imports",
    is_flag=True,
    help="Let a workflow file import the Python code it names (untrusted by default).",
)
@click.pass_context
def run_command(
    ctx: click.Context,
    target: str,
    message: str | None,
    json_input: bool,
    checkpoint: str | None,
    durability: str | None,
    events: bool,
    max_supersteps: int | None,
    step_context: bool,
    allow_imports: bool,
) -> None:
    """Run the workflow TARGET on MESSAGE and print its outputs, one per line.

    TARGET is a workflow file in any installed format (workflow.yaml, pipeline.flow,
    dag.json), or module:attr or path/to/file.py:attr naming a plait.Workflow or a function
    that takes no arguments and returns one. MESSAGE is a string (JSON with --json-input;
    - reads stdin; without MESSAGE the workflow gets "" or, with --json-input, null).

    Exit status: 0 the run finished, 1 it failed, 2 a usage error, 3 it waits for answers
    to requests (they are printed; answer them with plait resume).
    """
    if durability is not None and checkpoint is None:
        raise click.UsageError("--durability needs --checkpoint URL")
    value = _message(message, json_input)
    workflow = _workflow(target, allow_imports)
    options: dict[str, Any] = {}
    if max_supersteps is not None:
        options["max_supersteps"] = max_supersteps
    if checkpoint is not None:
        options.update(checkpoint=checkpoint, run_id=uuid.uuid4().hex)
        if durability is not None:
            options["durability"] = durability
        click.echo(f"run id: {options['run_id']}", err=True)
    if events:
        outcome = _execute(functools.partial(_stream, workflow, value, options))
    else:
        run = functools.partial(workflow.run, value, raise_on_failure=False, **options)
        outcome = _Outcome.of(_execute(run))
    if step_context:
        click.echo(to_json(outcome.step_context), err=True)
    _report(ctx, outcome, target, checkpoint, printed=events)


@click.command("resume", short_help="Continue a checkpointed run, answering its requests.")
@click.argument("target")
@click.argument("run_id")
@click.option("--checkpoint", metavar="URL", required=True, help="The store the run wrote to.")
@click.option(
    "--respond",
    "responses",
    metavar="REQUEST_ID=JSON",
    multiple=True,
    callback=_responses,
    help="Answer a pending request (repeat for several).",
)
@click.option(
    "--durability",
    type=click.Choice(["sync", "async", "exit"]),
    help="When the resumed run writes checkpoints (default sync).",
)
@click.option(
    "--max-supersteps", type=click.IntRange(min=1), metavar="N", help="Fail past N supersteps."
)
@click.pass_context
def resume_command(
    ctx: click.Context,
    target: str,
    run_id: str,
    checkpoint: str,
    responses: dict[str, Any],
    durability: str | None,
    max_supersteps: int | None,
) -> None:
    """Continue run RUN_ID of workflow TARGET from its latest checkpoint.

    RUN_ID may also be a checkpoint id. Answer pending requests with --respond
    REQUEST_ID=JSON (true, 42, '"text"', '{"a": 1}'). Output and exit status as plait run.
    """
    workflow = _workflow(target)
    options: dict[str, Any] = {"raise_on_failure": False}
    if durability is not None:
        options["durability"] = durability
    if max_supersteps is not None:
        options["max_supersteps"] = max_supersteps
    resume = functools.partial(workflow.resume, run_id, checkpoint, responses=responses, **options)
    outcome = _Outcome.of(_execute(resume))
    _report(ctx, outcome, target, checkpoint, printed=False)
