"""``plait runs``: the runs a checkpoint store holds, newest first, as a table or as JSON.

The store's run listing (:meth:`plait_durable.CheckpointStore.runs`) describes each run
by its latest checkpoint: workflow, status, superstep, pending requests and, for a failed
run, the error that checkpoint records. Plugins add columns through the
``plait_run_columns`` hook (:func:`run_cells`; ``plait ui``'s run list shows the same),
each a function of a listed run, computed from what the listing read.
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
from plait_durable import CORRUPT, RunInfo, open_store

from ._output import format_table, to_json
from ._prune import prune_command

__all__ = [
    "CELL_WIDTH",
    "DEFAULT_STORE",
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
#: The widest cell of a column a plugin adds (``plait_run_columns``).
CELL_WIDTH = 40

#: A plugin's column: a function of one listed run.
Column = Callable[[RunInfo], str]


def run_columns() -> Mapping[str, Column]:
    """The columns the plugins add to run listings (``plait_run_columns``), by name, in
    the order to show them."""
    from plait import get_plugin_manager

    return get_plugin_manager().run_columns()


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


async def _list(url: str, limit: int | None) -> Sequence[RunInfo]:
    store = open_store(url)
    try:
        return await store.runs(limit=limit)
    finally:
        await store.aclose()


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
    type=click.Choice(STATUSES, case_sensitive=False),
    help="Only runs whose latest checkpoint has this status.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    metavar="N",
    help="At most N runs (the newest).",
)
@click.pass_context
def runs_command(
    ctx: click.Context, url: str, status: str | None, as_json: bool, limit: int | None
) -> None:
    """List the runs in a checkpoint store, newest first (by their latest checkpoint): id,
    workflow, status, supersteps, pending requests, how long ago the latest checkpoint was
    written, the columns plugins add (plait-versions: VERSION) and, for a failed run, its
    error.

    Each run is described by its latest checkpoint, so a failed run shows its error after
    the process that ran it is gone. Resume one with `plait resume TARGET RUN_ID
    --checkpoint URL`; remove old ones with `plait runs prune`.
    """
    ctx.ensure_object(dict)["store_url"] = url
    if ctx.invoked_subcommand is not None:
        return
    missing = _missing_sqlite_file(url)
    if missing is not None:
        infos: Sequence[RunInfo] = []
        click.echo(f"no runs in {url}: {missing} does not exist", err=True)
    else:
        wanted = status.lower() if status is not None else None
        infos = anyio.run(_list, url, None if wanted is not None else limit)
        if wanted is not None:
            infos = [info for info in infos if info.status == wanted][:limit]
    columns = run_columns()
    if as_json:
        records = [run_record(info, columns) for info in infos]
        click.echo(_escape_c1(to_json(records, indent=2)))
        return
    if not infos:
        if missing is None:
            click.echo(f"no runs in {url}" + (f" with status {status}" if status else ""), err=True)
        return
    now = time.time()
    # the runs come newest first by their latest checkpoint: UPDATED counts from it too
    headers = ["ID", "WORKFLOW", "STATUS", "SUPERSTEPS", "PENDING", "UPDATED"]
    headers += [name.upper() for name in columns] + ["ERROR"]
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
