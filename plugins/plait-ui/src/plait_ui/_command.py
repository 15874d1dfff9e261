"""``plait ui``: serve the run inspector on this machine and print its URL."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["DEFAULT_STORE", "ui_command"]

#: The store ``plait ui`` opens unless told otherwise: the one ``plait run`` writes to.
DEFAULT_STORE = "sqlite:///.plait/runs.db"


def _missing_sqlite_file(url: str) -> Path | None:
    """The database file of a ``sqlite:///PATH`` URL when it does not exist, else ``None``."""
    if not url.lower().startswith("sqlite:///"):
        return None
    path = Path(url[len("sqlite:///") :].split("?", 1)[0])
    return None if str(path) == ":memory:" or path.exists() else path


@click.command("ui", short_help="Inspect runs in the browser: graph, checkpoints, forks, answers.")
@click.argument("store_url", metavar="[STORE_URL]", required=False, default=DEFAULT_STORE)
@click.option(
    "--workflow",
    "target",
    metavar="TARGET",
    help="The workflow of the runs (module:attr, file.py:attr or a workflow file): needed "
    "to answer requests, which resumes the run in this process, and to replay recorded "
    "runs; with plait-versions, each run shows plait compat's verdict against it.",
)
@click.option("--allow-imports", is_flag=True, help="Let a workflow file (--workflow) import code.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--host",
    metavar="H",
    help="Listen on H instead of 127.0.0.1 (other machines may then reach it: a warning is "
    "printed).",
)
@click.option("--read-only", is_flag=True, help="Serve no route that changes anything.")
@click.option(
    "--allow-edits",
    is_flag=True,
    help="Let a fork replace the next inputs, executor state or shared state with JSON.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the URL in a browser.")
def ui_command(
    store_url: str,
    target: str | None,
    allow_imports: bool,
    port: int,
    host: str | None,
    read_only: bool,
    allow_edits: bool,
    open_browser: bool,
) -> None:
    """Serve an offline run inspector for the checkpoint store STORE_URL (default: the
    CLI's .plait/runs.db) and print its URL, which holds a one-time token.

    Pages: the runs (filter, search, page), a run's graph coloured for a chosen superstep,
    a scrubber over its checkpoints, the state, outputs and what changed, failures with
    their traceback, forks, and answers to pending requests (with --workflow). With
    --workflow, the runs page and each run's page show the verdict plait compat TARGET
    gives the run (migrate, as_is, rejected …), under policy migrate.
    """
    import socket

    import uvicorn
    from plait_cli import load_target

    from ._app import UiSettings, make_app
    from ._security import allowed_hosts_for, check_bind, new_token

    if read_only and allow_edits:
        raise click.UsageError("--allow-edits makes no sense with --read-only")
    missing = _missing_sqlite_file(store_url)
    if missing is not None:  # opening it would create an empty database here
        raise click.ClickException(
            f"no runs in {store_url}: {missing} does not exist (run a workflow with "
            "`plait run` first, or name the store: plait ui STORE_URL)"
        )
    bind = host or "127.0.0.1"
    warning = check_bind(bind, explicit=host is not None)
    if warning:
        click.secho(warning, err=True, fg="yellow")
    workflow = load_target(target, allow_imports=allow_imports) if target else None
    # bind first, so the printed URL has the real port (--port 0 picks a free one)
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind, port))
        # listening now: a connection to the printed URL waits in the backlog until the
        # server accepts it, instead of being refused while the app starts
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {bind}:{port}: {exc}") from exc
    port = sock.getsockname()[1]
    token = new_token()
    settings = UiSettings(
        store=store_url,
        token=token,
        allowed_hosts=allowed_hosts_for(bind),
        read_only=read_only,
        workflow=workflow,
        allow_edits=allow_edits,
    )
    shown = "127.0.0.1" if bind in ("0.0.0.0", "::") else bind
    shown = f"[{shown}]" if ":" in shown else shown
    url = f"http://{shown}:{port}/?token={token}"
    click.echo(f"plait ui: {store_url}{' (read-only)' if read_only else ''}")
    click.echo(f"open {url}", nl=True)
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    config = uvicorn.Config(
        make_app(settings),
        log_level="warning",
        timeout_graceful_shutdown=2,
        server_header=False,
    )
    uvicorn.Server(config).run(sockets=[sock])
