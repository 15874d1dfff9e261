"""``plait submit``, ``plait worker``, ``plait cancel``, ``plait answer`` and ``plait queue``.

Each takes the store as ``plait run`` and ``plait resume`` do (``--checkpoint URL``), on
PostgreSQL or Redis: the queue lives beside the checkpoints. Errors name the run, the queue
and the store, and exit 1 (2 for a usage error).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import click
from plait import PlaitError
from plait_cli import grant_options, grants_from

from ._queue import DEFAULT_QUEUE

__all__ = ["COMMANDS"]

_checkpoint = click.option(
    "--checkpoint",
    "store",
    metavar="URL",
    required=True,
    help="The checkpoint store (postgresql://… or redis://…); the queue lives there too.",
)
_queue = click.option(
    "--queue",
    "queue",
    metavar="NAME",
    default=DEFAULT_QUEUE,
    show_default=True,
    help="The queue's name.",
)


def _fail(exc: PlaitError) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command("submit", short_help="Put a run on the queue; print its id at once.")
@click.argument("target")
@click.argument("message", required=False)
@click.option("--json-input", is_flag=True, help="Parse MESSAGE as JSON.")
@_checkpoint
@_queue
@click.option("--run-id", metavar="ID", help="The run's id (default: a new one).")
@click.option("--format", "document_format", metavar="NAME", help="The document's format.")
def submit_command(
    target: str,
    message: str | None,
    json_input: bool,
    store: str,
    queue: str,
    run_id: str | None,
    document_format: str | None,
) -> None:
    """Put a run of the workflow TARGET on MESSAGE on the queue and print its id.

    TARGET is a workflow file or module:attr, as for plait run; a worker (plait worker)
    runs it, loading it only as the worker's own --allow/--trust/--allow-imports grant.
    """
    from ._client import submit

    value: Any = message if message is not None else ("" if not json_input else None)
    if json_input and message is not None:
        try:
            value = json.loads(message)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not valid JSON ({exc})", param_hint="MESSAGE") from exc
    try:
        found = anyio.run(
            lambda: submit(
                target, value, store=store, queue=queue, run_id=run_id, format=document_format
            )
        )
    except PlaitError as exc:
        raise _fail(exc) from exc
    click.echo(found)


@click.command("worker", short_help="Take runs from the queue and run them.")
@_checkpoint
@_queue
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    metavar="N",
    help="Runs at once in this worker (a run waiting for answers holds none).",
)
@click.option(
    "--lease-ttl",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a run's lease lives without renewal: another worker takes a dead "
    "worker's run over after this long at most.",
)
@grant_options("Let the workers import Python code runs name (module:attr targets, refs).")
def worker_command(
    store: str,
    queue: str,
    concurrency: int,
    lease_ttl: float,
    allow_imports: bool,
    allow: tuple[str, ...],
    trust: bool,
) -> None:
    """Take runs from the queue and run them, with checkpoints and leases, until SIGTERM
    (or Ctrl-C): then every run stops at its next superstep boundary, checkpointed, its
    lease given back and its job back on the queue, and the worker exits 0.

    A run's workflow file gets only the capabilities granted here (--allow, --trust); a
    module:attr target needs --allow-imports. A run that needs more is refused (plait
    queue shows why).
    """
    from ._queue import queue_url
    from ._worker import Worker, WorkerSettings

    allow_imports = allow_imports or trust or "imports" in allow
    try:
        queue_url(store)
    except PlaitError as exc:
        raise _fail(exc) from exc
    settings = WorkerSettings(
        store=store,
        queue=queue,
        concurrency=concurrency,
        allow_imports=allow_imports,
        grants=grants_from(allow, trust, allow_imports),
        lease_ttl=lease_ttl,
    )
    worker = Worker(settings)
    click.echo(f"worker {worker.name} on queue {queue!r} at {store}", err=True)
    try:
        anyio.run(worker.serve)
    except PlaitError as exc:
        raise _fail(exc) from exc
    click.echo(f"worker {worker.name} drained", err=True)


@click.command("cancel", short_help="Stop a queued or running run.")
@click.argument("run_id")
@_checkpoint
@_queue
def cancel_command(run_id: str, store: str, queue: str) -> None:
    """Stop RUN_ID: a queued run never starts; a running one stops at its next superstep
    boundary, checkpointed, and its worker records it cancelled (plait runs shows it
    failed, RunCancelled; plait resume can still continue it)."""
    from ._client import cancel

    try:
        was = anyio.run(lambda: cancel(run_id, store=store, queue=queue))
    except PlaitError as exc:
        raise _fail(exc) from exc
    click.echo(f"run {run_id} cancelled (it was {was})", err=True)


@click.command("answer", short_help="Answer a request of a waiting run; requeue it.")
@click.argument("run_id")
@click.argument("request_id")
@click.argument("value")
@_checkpoint
@_queue
def answer_command(run_id: str, request_id: str, value: str, store: str, queue: str) -> None:
    """Answer request REQUEST_ID of RUN_ID, a run waiting for answers, with VALUE (JSON:
    true, 42, '"text"', '{"a": 1}'), and put the run back on the queue."""
    from ._client import answer

    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"not valid JSON ({exc}); quote a string as JSON: '\"text\"'", param_hint="VALUE"
        ) from exc
    try:
        anyio.run(lambda: answer(run_id, {request_id: parsed}, store=store, queue=queue))
    except PlaitError as exc:
        raise _fail(exc) from exc
    click.echo(f"run {run_id} answered and queued", err=True)


@click.command("queue", short_help="List the runs on a queue.")
@_checkpoint
@_queue
@click.option(
    "--state",
    "states",
    multiple=True,
    type=click.Choice(["queued", "running", "stopping", "done", "cancelled", "refused"]),
    help="Only runs in this state (repeat for several).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def queue_command(store: str, queue: str, states: tuple[str, ...], as_json: bool) -> None:
    """List the runs on the queue (queued, running, and finished ones the queue still
    keeps), oldest first: run id, state, deliveries, worker, target."""
    import attrs

    from ._client import queued_runs

    try:
        runs = anyio.run(lambda: queued_runs(store=store, queue=queue, states=states))
    except PlaitError as exc:
        raise _fail(exc) from exc
    for run in runs:
        if as_json:
            click.echo(json.dumps(attrs.asdict(run)))
            continue
        line = f"{run.run_id}  {run.state:<9}  {run.deliveries:>3}  {run.worker or '-'}  "
        line += run.target
        if run.error:
            line += f"  ({run.error})"
        click.echo(line)


#: the commands this distribution adds to ``plait``
COMMANDS = (submit_command, worker_command, cancel_command, answer_command, queue_command)
