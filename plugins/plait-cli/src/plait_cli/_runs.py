"""``plait runs``: the runs a checkpoint store holds, newest first, as a table or as JSON.

The store's run listing (:meth:`plait_durable.CheckpointStore.runs`) describes each run
by its latest checkpoint: workflow, status, superstep, pending requests and, for a failed
run, the error that checkpoint records. Plugins add columns through the
``plait_run_columns`` hook (:func:`run_cells`; ``plait ui``'s run list shows the same),
each a function of a listed run, computed from what the listing read. Runs that have no
checkpoint yet (a run on a task queue no worker has taken) come from the
``plait_pending_runs`` hook (:func:`pending_runs`, :func:`merge_pending`). With
``--against TARGET``, a ``COMPAT`` column shows ``plait compat``'s verdict on each run
against that workflow, from the ``plait_change_policies`` hook
(:func:`~plait_cli._on_change.compat_verdicts`).
"""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
import click
from plait_durable import CORRUPT, CheckpointStore, RunInfo, open_store

from ._on_change import (
    COMPAT_POLICY,
    PolicyType,
    change_policies,
    compat_cell,
    compat_verdicts,
)
from ._output import DISABLE_ENV, format_table, to_json
from ._prune import prune_command

__all__ = [
    "CELL_WIDTH",
    "DEFAULT_STORE",
    "merge_pending",
    "pending_runs",
    "PENDING",
    "STATUSES",
    "printable",
    "run_cells",
    "run_columns",
    "run_record",
    "runs_command",
]

#: Where ``plait runs`` looks unless ``--checkpoint`` says otherwise: the SQLite store
#: under ``.plait/`` in the working directory, where CLI runs are kept.
DEFAULT_STORE = "sqlite:///.plait/runs.db"
#: The statuses a checkpoint records, for ``--status`` (``corrupt``: the run's latest
#: checkpoint does not decode; the listing shows it and goes on).
STATUSES = ("running", "idle", "idle_with_pending_requests", "failed", "corrupt")
#: The widest error shown in the table (``--json`` has it whole).
_ERROR_WIDTH = 72
#: The status of a run on a queue that no worker has taken (``plait_pending_runs``); such
#: a run may also show its queue's other states (``running`` before its first
#: checkpoint, ``refused``, ``cancelled`` …).
PENDING = "queued"
#: The widest cell of a column a plugin adds (``plait_run_columns``).
CELL_WIDTH = 40

#: A plugin's column: a function of one listed run.
Column = Callable[[RunInfo], str]


def run_columns() -> Mapping[str, Column]:
    """The columns the plugins add to run listings (``plait_run_columns``), by name, in
    the order to show them (pluggy's call order).

    :raises RegistrationError: an answer is not a mapping of names to callables,
        naming the plugin.
    :raises PluginConflictError: two plugins give one column name, naming both.
    """
    from plait import PluginConflictError, RegistrationError, get_plugin_manager

    columns: dict[str, Column] = {}
    owners: dict[str, str] = {}
    for plugin, call in get_plugin_manager().implementations("plait_run_columns"):
        answer = call() or {}
        if not isinstance(answer, Mapping) or not all(
            isinstance(name, str) and name and callable(value) for name, value in answer.items()
        ):
            raise RegistrationError(
                f"plait_run_columns of plugin {plugin!r} must return a mapping "
                f"of column names to functions, got {answer!r}"
            )
        for name, value in answer.items():
            if name in owners:
                raise PluginConflictError(
                    f"run listing column {name!r} is given by both plugin "
                    f"{owners[name]!r} and plugin {plugin!r}; disable one "
                    f"({DISABLE_ENV}=name)"
                )
            owners[name] = plugin
            columns[name] = value
    return columns


def run_cells(columns: Mapping[str, Column], info: RunInfo) -> dict[str, str]:
    """Run ``info``'s cell in each of ``columns``: printable (stored text is untrusted),
    at most :data:`CELL_WIDTH` characters, ``?`` where the column's function raises or
    gives something other than a string (one plugin's bug never hides the listing)."""
    cells: dict[str, str] = {}
    for name, value in columns.items():
        try:
            text = value(info)
        except Exception:
            text = "?"
        if not isinstance(text, str):
            text = "?"
        text = printable(text)
        cells[name] = text if len(text) <= CELL_WIDTH else text[: CELL_WIDTH - 1] + "…"
    return cells


def run_record(info: RunInfo, columns: Mapping[str, Column] | None = None) -> dict[str, Any]:
    """One run as ``plait runs --json`` prints it: the fields of :class:`RunInfo` (its
    ``metadata`` aside) and, when plugins add any, ``columns``: name -> cell."""
    record = attrs.asdict(info, filter=lambda field, _: field.name != "metadata")
    if columns:
        record["columns"] = run_cells(columns, info)
    return record


def _pending_key(info: RunInfo) -> tuple[float, str]:
    """Where a run with no checkpoint yet stands among others: newest first, then by id
    (the order :func:`pending_runs` gives and :func:`merge_pending` keeps)."""
    return (-info.updated_at, info.run_id)


async def pending_runs(
    store: CheckpointStore,
    url: str,
    queues: Sequence[str] = (),
    *,
    limit: int | None = None,
    after: tuple[float, str] | None = None,
) -> tuple[list[RunInfo], list[str]]:
    """The runs with no checkpoint in ``store`` (at ``url``) that plugins list
    (``plait_pending_runs``: a queue's runs no worker has checkpointed), newest first, and
    a warning line for each plugin that could not say.

    A run that has a checkpoint is left out (its checkpoint describes it); with ``limit``,
    at most that many, and only they are looked up in the store; with ``after``, the
    ``(updated_at, run_id)`` of the last one a listing's page showed, only those after it
    (the next page's).
    """
    found, problems = await gather_pending(url, queues)
    candidates = sorted(
        (
            info
            for info in found
            if isinstance(info, RunInfo)
            and (after is None or _pending_key(info) > (-after[0], after[1]))
        ),
        key=_pending_key,
    )
    kept: list[RunInfo] = []
    seen: set[str] = set()
    for info in candidates:
        if limit is not None and len(kept) >= limit:
            break
        if info.run_id in seen:
            continue
        seen.add(info.run_id)
        if not await store.list(info.run_id):
            kept.append(info)
    return kept, problems


async def gather_pending(url: str, queues: Sequence[str] = ()) -> tuple[list[Any], list[str]]:
    """What each plugin answering ``plait_pending_runs`` lists for the store at ``url``,
    in pluggy's call order, and a warning line for each plugin that failed to say (a
    listing goes on without them)."""
    from plait import get_plugin_manager

    found: list[Any] = []
    problems: list[str] = []
    for plugin, call in get_plugin_manager().implementations("plait_pending_runs"):
        try:
            answer = call(store=url, queues=tuple(queues))
            if answer is not None:
                found.extend(await answer())
        except Exception as exc:
            problems.append(f"plugin {plugin!r} could not list its runs: {exc}")
    return found, problems


def merge_pending(infos: Sequence[RunInfo], pending: Sequence[RunInfo]) -> list[RunInfo]:
    """``infos`` (newest first, in the store's order) with the ``pending`` runs among them:
    each before the first listed run updated before it was queued, a run already in
    ``infos`` not twice."""
    listed = {info.run_id for info in infos}
    extra = sorted(
        (info for info in pending if info.run_id not in listed),
        key=_pending_key,
    )
    merged: list[RunInfo] = []
    at = 0
    for info in infos:
        while at < len(extra) and extra[at].updated_at > info.updated_at:
            merged.append(extra[at])
            at += 1
        merged.append(info)
    merged.extend(extra[at:])
    return merged


def _age(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``: how long ago, roughly."""
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _short(text: str) -> str:
    return text if len(text) <= _ERROR_WIDTH else text[: _ERROR_WIDTH - 1] + "…"


# Control and format characters (escape sequences, bidi overrides, line separators):
# stored text is untrusted, and printed raw they would drive the terminal.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_C1 = re.compile("[\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control or format character written as an escape (``\\x1b``,
    ``\\u202e``), so what a store holds cannot drive the terminal it is printed on."""
    if text.isprintable():
        return text
    return "".join(repr(c)[1:-1] if unicodedata.category(c) in _UNPRINTABLE else c for c in text)


def _escape_c1(text: str) -> str:
    """JSON text with DEL and the C1 controls (which JSON leaves as they are) escaped."""
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _missing_sqlite_file(url: str) -> Path | None:
    """The database file of a ``sqlite:///PATH`` URL when it does not exist (listing it
    must not create it), else ``None``."""
    if not url.lower().startswith("sqlite:///"):
        return None
    path = Path(url[len("sqlite:///") :].split("?", 1)[0])
    return None if str(path) == ":memory:" or path.exists() else path


async def _list(
    url: str, limit: int | None, queues: Sequence[str] | None
) -> tuple[Sequence[RunInfo], list[str]]:
    """The store's runs and, unless ``queues`` is ``None``, the runs plugins add
    (:func:`pending_runs`), merged newest first; and the warnings of plugins that failed."""
    store = open_store(url)
    try:
        pending: list[RunInfo] = []
        problems: list[str] = []
        if queues is not None:  # the queue first: a run taken meanwhile has a checkpoint
            pending, problems = await pending_runs(store, url, queues, limit=limit)
        infos = await store.runs(limit=limit)
    finally:
        await store.aclose()
    merged = merge_pending(infos, pending)
    return (merged if limit is None else merged[:limit]), problems


@click.group(
    "runs",
    invoke_without_command=True,
    short_help="List the runs a checkpoint store holds, newest first.",
)
@click.option(
    "--checkpoint",
    "--store",
    "url",
    metavar="URL",
    default=DEFAULT_STORE,
    show_default=True,
    help="The checkpoint store to list (sqlite:///runs.db, file://DIR, redis://…).",
)
@click.option(
    "--status",
    type=click.Choice((*STATUSES, PENDING), case_sensitive=False),
    help="Only runs whose latest checkpoint has this status (queued: runs on a queue that "
    "no worker has taken).",
)
@click.option(
    "--queue",
    "queues",
    metavar="NAME",
    multiple=True,
    help="Also list the runs of this task queue (besides the default one) that have no "
    "checkpoint yet (plait-workers; repeatable).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    metavar="N",
    help="At most N runs (the newest).",
)
@click.option(
    "--against",
    metavar="TARGET",
    help="Judge each run against workflow TARGET (module:attr, file.py:attr or a workflow "
    "file) before you deploy it: a COMPAT column with plait compat's verdict (as_is, "
    "accept, migrate and its migrations, pinned, rejected; - for a run that finished or "
    "is another workflow's). Needs plait-versions.",
)
@click.option(
    "--on-change",
    type=PolicyType(),
    default=None,
    help=f"With --against: the policy the runs are judged under (default {COMPAT_POLICY}, "
    "as plait compat).",
)
@click.option(
    "--allow-imports",
    is_flag=True,
    help="Let a workflow file (--against) import the Python code it names (building it "
    "runs nothing else).",
)
@click.pass_context
def runs_command(
    ctx: click.Context,
    url: str,
    status: str | None,
    queues: tuple[str, ...],
    as_json: bool,
    limit: int | None,
    against: str | None,
    on_change: str | None,
    allow_imports: bool,
) -> None:
    """List the runs in a checkpoint store, newest first (by their latest checkpoint): id,
    workflow, status, supersteps, pending requests, how long ago the latest checkpoint was
    written, the columns plugins add (plait-versions: VERSION) and, for a failed run, its
    error.

    Each run is described by its latest checkpoint, so a failed run shows its error after
    the process that ran it is gone. A run submitted to a task queue (plait submit) that
    no worker has checkpointed yet is listed from the queue, as queued (the default queue,
    and each --queue NAME). Resume one with `plait resume TARGET RUN_ID --checkpoint URL`;
    remove old ones with `plait runs prune`. With --against TARGET, each run gets the
    verdict plait compat TARGET gives it (nothing runs, nothing is written).
    """
    ctx.ensure_object(dict)["store_url"] = url
    if ctx.invoked_subcommand is not None:
        return
    if against is None and on_change is not None:
        raise click.UsageError("--on-change judges runs against a workflow: give --against TARGET")
    workflow = _against(against, allow_imports) if against is not None else None
    missing = _missing_sqlite_file(url)
    if missing is not None:
        infos: Sequence[RunInfo] = []
        click.echo(f"no runs in {url}: {missing} does not exist", err=True)
    else:
        wanted = status.lower() if status is not None else None
        # a queue is read unless the listing asks for a status only checkpoints have
        with_pending = wanted is None or wanted not in STATUSES
        infos, problems = anyio.run(
            _list, url, None if wanted is not None else limit, queues if with_pending else None
        )
        for problem in problems:
            click.echo(f"warning: {printable(problem)}", err=True)
        if wanted is not None:
            infos = [info for info in infos if info.status == wanted][:limit]
    columns = run_columns()
    verdicts: Mapping[str, Any] = {}
    if workflow is not None and infos:
        verdicts = _judged(workflow, url, infos, on_change or COMPAT_POLICY)
    if as_json:
        records = [run_record(info, columns) for info in infos]
        if workflow is not None:
            for record in records:
                verdict = verdicts.get(record["run_id"])
                record["compat"] = None if verdict is None else verdict.to_json()
        click.echo(_escape_c1(to_json(records, indent=2)))
        return
    if not infos:
        if missing is None:
            click.echo(f"no runs in {url}" + (f" with status {status}" if status else ""), err=True)
        return
    now = time.time()
    # the runs come newest first by their latest checkpoint: UPDATED counts from it too
    headers = ["ID", "WORKFLOW", "STATUS", "SUPERSTEPS", "PENDING", "UPDATED"]
    headers += [name.upper() for name in columns]
    headers += (["COMPAT"] if workflow is not None else []) + ["ERROR"]
    rows: list[tuple[list[str], list[str]]] = [
        (
            [
                printable(info.run_id),
                printable(info.workflow or "-"),
                info.status,
                str(info.superstep) if info.status != CORRUPT else "?",
                str(info.pending_requests) if info.status != CORRUPT else "?",
                f"{_age(now - info.updated_at)} ago" if info.updated_at else "?",
                *run_cells(columns, info).values(),
                *([compat_cell(verdicts.get(info.run_id))] if workflow is not None else []),
                _short(printable(info.error)) if info.error else "-",
            ],
            [],
        )
        for info in infos
    ]
    click.echo(format_table(headers, rows))
    size = _disk_usage(url)
    if size is not None:
        click.echo(f"{len(infos)} run(s); {_human_bytes(size)} on disk in {url}", err=True)


def _against(target: str, allow_imports: bool) -> Any:
    """The workflow of ``--against TARGET``, built as ``plait compat`` builds it: a
    workflow file gets every capability but imports (unless ``allow_imports``), since
    building it runs nothing."""
    from plait_documents import Grants

    from ._target import TargetError, load_target, parse_target

    try:
        grants = Grants.to_build(allow_imports=allow_imports)
        return load_target(parse_target(target), allow_imports=allow_imports, allow=grants)
    except TargetError as exc:
        raise click.ClickException(str(exc)) from exc


def _judged(workflow: Any, url: str, infos: Sequence[RunInfo], policy: str) -> Mapping[str, Any]:
    """``plait compat``'s verdict on each listed run that has a readable checkpoint, by
    run id (:func:`compat_verdicts`)."""
    from plait import PlaitError

    change_policies(policy, against=True)  # none: a usage error naming what to install
    listed = [info.run_id for info in infos if info.status not in (CORRUPT, PENDING)]
    try:
        return anyio.run(compat_verdicts, workflow, url, listed, policy)
    except PlaitError as exc:
        raise click.ClickException(f"--against: {type(exc).__name__}: {exc}") from exc


def _disk_usage(url: str) -> int | None:
    """Bytes a local store takes on disk (a SQLite file with its WAL, or a file store's
    folder), like ``du``; ``None`` for a store behind a server."""
    lowered = url.lower()
    if lowered.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :].split("?", 1)[0])
        files = [path, path.with_name(path.name + "-wal")]
    elif lowered.startswith("file://"):
        root = Path(url[len("file://") :].split("?", 1)[0])
        files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    else:
        return None
    return sum(p.stat().st_size for p in files if p.is_file())


def _human_bytes(size: int) -> str:
    amount = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if amount < 1024 or unit == "GB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{amount:.1f} GB"


runs_command.add_command(prune_command)
