"""The Starlette app of ``plait ui``: routes as data, server-rendered pages, JSON for the
graph, server-sent events for live runs.

Every page opens the store for the request and closes it after (a client library bound
to one event loop never outlives it). Stored checkpoints are read as stored JSON
(:func:`plait_durable.checkpoint_view`); the workflow (``--workflow``) is used to answer
requests, which resumes the run in this process under its lease, to replay recorded runs,
and to judge the runs as ``plait compat`` would (the ``compat`` column and the run page's
verdict, through the ``plait_change_policies`` hook: :func:`plait_cli.compat_verdicts`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs
import jinja2
from plait import CheckpointError, PlaitError, UnknownNameError
from plait.spi import PendingRequest, is_instance
from plait_cli import (
    COMPAT_POLICY,
    PENDING,
    compat_cell,
    compat_verdicts,
    merge_pending,
    pending_runs,
    run_cells,
    run_columns,
)
from plait_durable import (
    CORRUPT,
    DEFAULT_PAGE,
    EDITABLE,
    CheckpointNotFoundError,
    CheckpointStore,
    CheckpointView,
    CorruptCheckpointError,
    EventJournal,
    RunInfo,
    RunLeaseError,
    RunSummary,
    checkpoint_view,
    diff_views,
    fork_run,
    list_runs,
    open_store,
    read_journal,
)
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ._gantt import build_gantt, gantt_context
from ._panels import run_panels
from ._security import Guard
from ._views import (
    DAGRE_LIMIT,
    VALUE_LIMIT,
    conversations,
    graph_elements,
    json_text,
    layered_positions,
    node_states,
    parse_answer,
    schema_for_name,
    schema_for_type,
    schema_problem,
    scrub_points,
    value_at,
)

if TYPE_CHECKING:
    from plait import Workflow

__all__ = ["STATUSES", "UiSettings", "make_app"]

_HERE = Path(__file__).parent
#: The statuses a run can have, for the runs page's filter.
STATUSES = ("running", "idle", "idle_with_pending_requests", "failed", PENDING)
#: How many checkpoints around the chosen one the scrubber lists.
_SCRUB_WINDOW = 12
#: How often the event stream looks for new checkpoints (seconds).
_POLL = 0.5


@attrs.frozen
class UiSettings:
    """What ``plait ui`` serves.

    :param store: the checkpoint store's URL.
    :param token: the token of the printed URL (exchanged once for a session cookie).
    :param allowed_hosts: the host names accepted (the ``Host`` header without its port).
    :param read_only: no route that changes anything (fork, answers) exists.
    :param workflow: the workflow whose runs are answered and resumed (``--workflow``).
    :param poll: seconds between the live stream's looks at the store.
    :param answer_wait: seconds an answer's response waits for the resumed run (a run
        that ends sooner is shown ended; a longer one is followed live on its page).
    :param allow_edits: a fork may replace the next inputs, executor state or shared
        state with JSON values the user typed (``--allow-edits``).
    """

    store: str
    token: str
    allowed_hosts: frozenset[str]
    read_only: bool = False
    workflow: Workflow | None = None
    poll: float = _POLL
    allow_edits: bool = False
    answer_wait: float = 1.0


def _template_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,  # every page: a store's contents are untrusted
        undefined=jinja2.StrictUndefined,
    )
    env.filters["when"] = _when
    env.filters["json"] = json_text
    env.filters["short"] = lambda text, width=80: (
        text if len(text) <= width else text[: width - 1] + "…"
    )
    return env


def _when(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return "-"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


async def _column_cells(
    store: CheckpointStore, columns: Mapping[str, Any], runs: Sequence[RunInfo]
) -> dict[str, dict[str, str]]:
    """Each listed run's cells in the columns plugins add (``plait_run_columns``, as
    ``plait runs`` shows them), by run id. A run index's rows carry no metadata: then the
    run's latest checkpoint is read for it (one read per run of the page, and none when no
    plugin adds a column). A run with no checkpoint yet has what its plugin listed."""
    if not columns:
        return {}
    cells: dict[str, dict[str, str]] = {}
    for info in runs:
        if not info.metadata and info.status != CORRUPT:
            try:
                latest = await store.latest(info.run_id)
            except CheckpointError:
                latest = None  # unreadable now: its cells say what the listing had
            if latest is not None:
                info = attrs.evolve(info, metadata=latest.metadata)
        cells[info.run_id] = run_cells(columns, info)
    return cells


async def _verdicts(
    workflow: Workflow | None, store: CheckpointStore, run_ids: Sequence[str]
) -> tuple[Mapping[str, Any] | None, str | None]:
    """``plait compat``'s verdict on each of ``run_ids`` against ``--workflow`` (the runs
    it does not judge left out), and ``None``; or ``None`` and why there is none: ``None``
    without ``--workflow`` or a plugin that judges (plait-versions: the verdict is an
    extra of ``--workflow``, whose help names it), else what went wrong."""
    if workflow is None:
        return None, None
    try:
        return await compat_verdicts(workflow, store, run_ids, COMPAT_POLICY), None
    except UnknownNameError:
        return None, None
    except PlaitError as exc:  # a store that cannot be read now: the page says so
        return None, f"the runs are not judged against --workflow: {exc}"


def _pending_shown(info: RunInfo, params: Mapping[str, str]) -> bool:
    """Whether a run with no checkpoint yet (``plait_pending_runs``) passes the runs
    page's filters: it has a status, a target for a workflow and a time it was queued."""
    status, workflow, search = params.get("status"), params.get("workflow"), params.get("q")
    since = _parse_time(params.get("since"), "since")
    until = _parse_time(params.get("until"), "until")
    return (
        (not status or info.status == status)
        and (not workflow or info.workflow == workflow)
        and (not search or info.run_id.startswith(search))
        and (since is None or info.updated_at >= since)
        and (until is None or info.updated_at <= until)
    )


def _parse_after(text: str | None) -> tuple[float, str] | None:
    """The ``queued_after`` of a runs page's query: ``UPDATED_AT:RUN_ID`` of the last run
    with no checkpoint the previous page showed."""
    if not text:
        return None
    stamp, _, run_id = text.partition(":")
    try:
        moment = float(stamp)
    except ValueError:
        raise HTTPException(400, "queued_after must be TIME:RUN_ID") from None
    if not run_id or not math.isfinite(moment):
        raise HTTPException(400, "queued_after must be TIME:RUN_ID")
    return moment, run_id


def _parse_time(text: str | None, name: str) -> float | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise HTTPException(400, f"{name} must be a date and time (ISO 8601)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


class _Ui:
    """The routes, over one :class:`UiSettings`."""

    def __init__(self, settings: UiSettings) -> None:
        self.settings = settings
        self.env = _template_env()
        self._guard: Guard | None = None
        #: the app's task group (from its lifespan): where answered runs resume
        self.tasks: anyio.abc.TaskGroup | None = None

    @property
    def guard(self) -> Guard:
        """The guard in front of the app (set once the app it wraps exists)."""
        assert self._guard is not None
        return self._guard

    # -- helpers ----------------------------------------------------------------------------

    @asynccontextmanager
    async def store(self) -> AsyncIterator[CheckpointStore]:
        store = open_store(self.settings.store)
        try:
            yield store
        finally:
            with anyio.CancelScope(shield=True):
                await store.aclose()

    def page(self, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        template = self.env.get_template(name)
        html = template.render(
            read_only=self.settings.read_only,
            csrf=self.guard.csrf_token(),
            store_url=self.settings.store,
            has_workflow=self.settings.workflow is not None,
            allow_edits=self.settings.allow_edits,
            editable=EDITABLE,
            **context,
        )
        return HTMLResponse(html, status_code=status_code, headers={"cache-control": "no-store"})

    async def form(self, request: Request) -> dict[str, str]:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not self.guard.csrf_ok(fields.get("csrf")):
            raise HTTPException(403, "missing or wrong CSRF token")
        return fields

    # -- pages ------------------------------------------------------------------------------

    async def runs(self, request: Request) -> Response:
        params = request.query_params
        status = params.get("status") or None
        if status is not None and status not in STATUSES:
            raise HTTPException(400, f"status must be one of {', '.join(STATUSES)}")
        limit = params.get("limit") or str(DEFAULT_PAGE)
        if not limit.isdigit():
            raise HTTPException(400, "limit must be a number")
        skip = params.get("skip") or "0"
        if not skip.isdigit():
            raise HTTPException(400, "skip must be a number")
        size, cursor = int(limit), params.get("cursor") or None
        after = _parse_after(params.get("queued_after"))
        started = time.perf_counter()
        try:
            async with self.store() as store:
                page = await list_runs(
                    store,
                    status=status,
                    workflow=params.get("workflow") or None,
                    since=_parse_time(params.get("since"), "since"),
                    until=_parse_time(params.get("until"), "until"),
                    search=params.get("q") or None,
                    limit=size + int(skip),
                    cursor=cursor,
                )
                columns = run_columns()
                listed: list[Any] = list(page.runs)[int(skip) :]
                pending: list[RunInfo] = []
                warnings: list[str] = []
                if not status or status == PENDING:
                    # runs with no checkpoint yet (a queue's: ?queue=NAME adds one to the
                    # default) page with the others, by when they were queued: each on the
                    # page of the stored runs around it (plait runs' order)
                    filtered = any(params.get(k) for k in ("workflow", "q", "since", "until"))
                    found, warnings = await pending_runs(
                        store,
                        self.settings.store,
                        params.getlist("queue"),
                        limit=None if filtered else size + 1,
                        after=after,
                    )
                    pending = [info for info in found if _pending_shown(info, params)]
                    if page.next_cursor is not None and listed:  # later ones: a later page
                        pending = [p for p in pending if p.updated_at > listed[-1].updated_at]
                summaries = [RunSummary(**attrs.asdict(info, recurse=False)) for info in pending]
                runs = merge_pending(listed, summaries)[:size]
                queued = {info.run_id for info in pending}
                shown = [r for r in runs if r.run_id in queued]
                taken = len(runs) - len(shown)  # stored runs shown
                cells = await _column_cells(store, columns, runs)
                verdicts, unjudged = await _verdicts(
                    self.settings.workflow,
                    store,
                    [r.run_id for r in runs if r.run_id not in queued and r.status != CORRUPT],
                )
        except ValueError as exc:
            raise HTTPException(400, str(exc)) from None
        elapsed = time.perf_counter() - started
        keep = {
            k: v for k, v in params.items() if k not in ("cursor", "skip", "queued_after") and v
        }
        if shown:
            keep["queued_after"] = f"{shown[-1].updated_at!r}:{shown[-1].run_id}"
        elif after is not None:
            keep["queued_after"] = f"{after[0]!r}:{after[1]}"
        next_query = None
        if taken < len(listed) or len(pending) > len(shown):
            # more of this page of stored runs, or runs queued after them, still to show
            next_query = {**keep, "skip": str(int(skip) + taken)}
            if cursor is not None:
                next_query["cursor"] = cursor
        elif page.next_cursor is not None:
            next_query = {**keep, "cursor": page.next_cursor}
        return self.page(
            "runs.html",
            runs=runs,
            pending=queued,
            queues=params.getlist("queue"),
            warnings=warnings,
            columns=list(columns),
            cells=cells,
            # the verdict of plait compat --workflow on each run (None: no column)
            compat=(
                None
                if verdicts is None
                else {info.run_id: compat_cell(verdicts.get(info.run_id)) for info in page.runs}
            ),
            compat_policy=COMPAT_POLICY,
            unjudged=unjudged,
            query=dict(params.items()),
            statuses=STATUSES,
            next_query=next_query,
            elapsed_ms=round(elapsed * 1000, 1),
        )

    async def run(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        chosen = request.query_params.get("checkpoint")
        async with self.store() as store:
            infos = list(await store.list(run_id))
            if not infos:
                raise HTTPException(404, f"no run {run_id!r} in {self.settings.store}")
            points = scrub_points(infos)
            index = len(points) - 1
            if chosen:
                found = [p.index for p in points if p.info.checkpoint_id == chosen]
                if not found:
                    raise HTTPException(404, f"no checkpoint {chosen!r} in run {run_id!r}")
                index = found[0]
            point = points[index]
            view = await checkpoint_view(store, point.info.checkpoint_id)
            parent = await _parent_view(store, view)
            first = await store.load(infos[0].checkpoint_id) if index else view.checkpoint
            forks = (await list_runs(store, forked_from=run_id, limit=100)).runs
            journal = await read_journal(store, run_id)
            verdicts, unjudged = await _verdicts(self.settings.workflow, store, [run_id])
        gantt = build_gantt(journal or [], around=point.info.superstep)
        origin = first.metadata.get("forked_from")
        changes = diff_views(parent.state if parent is not None else {}, view)
        low = max(0, index - _SCRUB_WINDOW)
        sections = [
            ("Next inputs", "pending"),
            ("Executor state", "executor_state"),
            ("Shared state", "shared"),
            ("Outputs", "outputs"),
            ("Pending requests", "requests"),
            ("Router state", "router_state"),
        ]
        observers = view.checkpoint.metadata.get("observers")
        replay = observers.get("replay") if isinstance(observers, dict) else None
        return self.page(
            "run.html",
            recorded=isinstance(replay, dict) and replay.get("record") is True,
            run_id=run_id,
            point=point,
            points=points[low : index + _SCRUB_WINDOW + 1],
            count=len(points),
            previous=points[index - 1] if index else None,
            following=points[index + 1] if index + 1 < len(points) else None,
            view=view,
            error=view.error,
            changes=changes[:MAX_CHANGES],
            changes_more=max(len(changes) - MAX_CHANGES, 0),
            sections=[(title, key, self.value(view, [key])) for title, key in sections],
            forks=forks,
            origin=origin if isinstance(origin, dict) else None,
            # a fork nothing has resumed yet: it says so, and what to do next
            not_resumed=(
                isinstance(origin, dict) and len(points) == 1 and point.info.status == "running"
            ),
            ids=[p.info.checkpoint_id for p in points],
            workflow=view.checkpoint.metadata.get("workflow"),
            change_value=lambda value: _cut(json_text(value)),
            journal_kept=journal is not None,
            follow=request.query_params.get("follow") == "1",
            gantt=gantt,
            gantt_size=gantt_context(gantt),
            conversations=conversations(view),
            panels=run_panels(view.checkpoint.metadata),
            # plait compat --workflow's verdict on the run (judged: False when none given)
            judged=verdicts is not None,
            verdict=None if verdicts is None else verdicts.get(run_id),
            unjudged=unjudged,
            compat_policy=COMPAT_POLICY,
        )

    def value(self, view: CheckpointView, path: list[Any]) -> dict[str, Any]:
        """A value of ``view`` at ``path``, cut to :data:`VALUE_LIMIT` characters."""
        try:
            text = json_text(value_at(view.state, path))
        except KeyError:
            text = "null"
        cut = _cut(text)
        cut["path"] = json.dumps(path)
        return cut

    async def value_page(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        checkpoint_id = request.query_params.get("checkpoint", "")
        path = _value_path(request.query_params.get("path", "[]"))
        async with self.store() as store:
            view = await _view_of_run(store, run_id, checkpoint_id)
        try:
            text = json_text(value_at(view.state, path))
        except KeyError:
            raise HTTPException(404, "no value at that path") from None
        return self.page("value.html", text=text)

    async def graph(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        checkpoint_id = request.query_params.get("checkpoint", "")
        async with self.store() as store:
            infos = await store.list(run_id)
            if not infos:
                raise HTTPException(404, f"no run {run_id!r}")
            view = await _view_of_run(store, run_id, checkpoint_id or infos[-1].checkpoint_id)
            parent = await _parent_view(store, view)
            first = await store.load(infos[0].checkpoint_id)
        topology = first.metadata.get("topology")
        if not isinstance(topology, dict):
            topology = view.checkpoint.metadata.get("topology")
        if not isinstance(topology, dict):
            return JSONResponse({"elements": [], "missing": True})
        states = node_states(view, parent)
        diverged = request.query_params.get("diverged")
        if diverged:  # the replay report's page: where the replay first differed
            states.setdefault(diverged, []).append("diverged")
        elements = graph_elements(topology, states)
        executors = sum(1 for e in elements if "source" not in e["data"])
        layout = "dagre"
        if executors > DAGRE_LIMIT:
            layered_positions(elements, topology.get("start"))
            layout = "preset"
        return JSONResponse(
            {"elements": elements, "layout": layout, "dagre_limit": DAGRE_LIMIT, "missing": False}
        )

    async def replay_page(self, request: Request) -> Response:
        """The run's replay report (plait-replay): the run replayed with ``--workflow``'s
        code, every outside call answered from its record; the first divergence, its value
        diff beside the graph of the recorded checkpoint there, the executor marked."""
        run_id = request.path_params["run_id"]
        workflow = self.settings.workflow
        if workflow is None:
            raise HTTPException(422, "start plait ui with --workflow TARGET to replay runs")
        try:
            from plait_replay import ReplayError, replay
        except ImportError:
            raise HTTPException(
                422, "replay reports need the plait-replay distribution: pip install plait-replay"
            ) from None
        async with self.store() as store:
            infos = list(await store.list(run_id))
            if not infos:
                raise HTTPException(404, f"no run {run_id!r} in {self.settings.store}")
            try:
                report = await replay(workflow, run_id, store)
            except (ReplayError, PlaitError) as exc:
                raise HTTPException(422, f"run {run_id!r} cannot be replayed: {exc}") from None
        found = report.divergence
        at = None
        if found is not None:  # the recorded checkpoint of the superstep it differs in
            ordered = sorted(infos, key=lambda i: i.superstep)
            before = [i for i in ordered if i.superstep <= found.superstep]
            at = (before or ordered)[-1]
        return self.page(
            "replay.html",
            run_id=run_id,
            report=report,
            found=found,
            checkpoint=at,
            recorded=json_text(found.recorded) if found is not None else "",
            replayed=json_text(found.replayed) if found is not None else "",
            # a prompt diff is unified diff text, a value's a JSON Patch (a list)
            diff=(
                []
                if found is None or not found.diff
                else found.diff.splitlines()
                if isinstance(found.diff, str)
                else json_text(found.diff).splitlines()
            ),
        )

    async def requests(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        async with self.store() as store:
            forms = await self._request_forms(store, run_id)
        return self.page("requests.html", run_id=run_id, forms=forms, errors={}, answers={})

    async def _request_forms(self, store: CheckpointStore, run_id: str) -> list[dict[str, Any]]:
        latest = await store.latest(run_id)
        if latest is None:
            raise HTTPException(404, f"no run {run_id!r}")
        view = await checkpoint_view(store, latest.checkpoint_id)
        declared: dict[str, PendingRequest] = {}
        workflow = self.settings.workflow
        if workflow is not None:
            try:
                pending = await workflow.pending_requests(run_id, store)
            except PlaitError as exc:
                raise HTTPException(409, f"--workflow does not fit this run: {exc}") from None
            declared = {p.request_id: p for p in pending}
        requests = view.state.get("requests")
        forms = []
        for stored in requests if isinstance(requests, list) else []:
            if not isinstance(stored, dict) or not isinstance(stored.get("request_id"), str):
                continue
            rid = stored["request_id"]
            if rid in declared:
                schema = schema_for_type(declared[rid].response_type)
            else:
                schema = schema_for_name(stored.get("response_type_name"))
            forms.append(
                {
                    "request_id": rid,
                    "executor_id": str(stored.get("executor_id")),
                    "request": _cut(json_text(stored.get("request"))),
                    "type_name": str(stored.get("response_type_name")),
                    "schema": schema,
                }
            )
        return forms

    async def answer(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        request_id = request.path_params["request_id"]
        fields = await self.form(request)
        workflow = self.settings.workflow
        async with self.store() as store:
            forms = await self._request_forms(store, run_id)
            form = next((f for f in forms if f["request_id"] == request_id), None)
            if form is None:
                raise HTTPException(404, f"no pending request {request_id!r} in run {run_id!r}")
            text = fields.get("answer", "")
            error = None
            value: Any = None
            if workflow is None:
                error = "start plait ui with --workflow TARGET to answer requests"
            else:
                try:
                    value = parse_answer(text, form["schema"])
                except ValueError as exc:
                    error = str(exc)
                else:
                    error = schema_problem(value, form["schema"])
                if error is None:
                    declared = {
                        p.request_id: p for p in await workflow.pending_requests(run_id, store)
                    }
                    wanted = declared[request_id].response_type
                    value, error = _as_declared(value, wanted, form["type_name"])
            if error is not None:
                return self.page(
                    "requests.html",
                    status_code=422,
                    run_id=run_id,
                    forms=forms,
                    errors={request_id: error},
                    answers={request_id: text},
                )
            assert workflow is not None
            journal = isinstance(store, EventJournal)
        refused = await self.resume_in_background(
            workflow, run_id, {request_id: value}, journal=journal
        )
        if refused is not None:  # another worker holds the run: nothing was written
            async with self.store() as store:
                forms = await self._request_forms(store, run_id)
            return self.page(
                "requests.html",
                status_code=409,
                run_id=run_id,
                forms=forms,
                errors={request_id: str(refused)},
                answers={request_id: text},
            )
        # the run page follows the run's supersteps (SSE) until it is done
        return RedirectResponse(f"/runs/{_quote(run_id)}?follow=1", status_code=303)

    async def resume_in_background(
        self, workflow: Any, run_id: str, responses: dict[str, Any], *, journal: bool
    ) -> RunLeaseError | None:
        """Resume ``run_id`` with ``responses`` in this server process, under the run's
        lease, as a task of the app's own task group (it goes on after the answer's
        response). Waits up to ``answer_wait`` seconds for it: a run another worker holds
        is refused at once, and that refusal is returned to show with the form."""
        outcome: list[BaseException | None] = []
        ended = anyio.Event()

        async def resume() -> None:
            try:
                async with self.store() as store:
                    await workflow.resume(run_id, store, responses=responses, journal=journal)
            except RunLeaseError as exc:
                outcome.append(exc)
            except PlaitError as exc:
                outcome.append(exc)  # the run went on and failed: its page shows the failure
            else:
                outcome.append(None)
            finally:
                ended.set()

        assert self.tasks is not None, "the app's lifespan has not started"
        self.tasks.start_soon(resume, name=f"plait ui: resume {run_id}")
        with anyio.move_on_after(self.settings.answer_wait):
            await ended.wait()
        refused = outcome[0] if outcome else None
        return refused if isinstance(refused, RunLeaseError) else None

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """The app's task group, where answered runs resume; shutting down cancels them
        (a cancelled run resumes later from its last checkpoint)."""
        async with anyio.create_task_group() as tasks:
            self.tasks = tasks
            try:
                yield
            finally:
                self.tasks = None
                tasks.cancel_scope.cancel()

    async def resume(self, request: Request) -> Response:
        """Resume a run (a fork nothing has resumed yet) in this server process, under its
        lease, as an answer does; the browser then follows it on its page."""
        run_id = request.path_params["run_id"]
        await self.form(request)
        workflow = self.settings.workflow
        if workflow is None:
            raise HTTPException(422, "start plait ui with --workflow TARGET to resume runs")
        async with self.store() as store:
            if await store.latest(run_id) is None:
                raise HTTPException(404, f"no run {run_id!r}")
            journal = isinstance(store, EventJournal)
        refused = await self.resume_in_background(workflow, run_id, {}, journal=journal)
        if refused is not None:  # another worker holds the run: nothing was written
            raise HTTPException(409, str(refused))
        return RedirectResponse(f"/runs/{_quote(run_id)}?follow=1", status_code=303)

    async def fork(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        fields = await self.form(request)
        checkpoint_id = fields.get("checkpoint", "")
        edits = self.edits(fields)
        async with self.store() as store:
            try:
                new_run = await fork_run(store, run_id, checkpoint_id, edits=edits)
            except CheckpointNotFoundError:
                raise HTTPException(404, f"no checkpoint {checkpoint_id!r}") from None
            except CorruptCheckpointError:
                raise  # the page that says the checkpoint cannot be read
            except CheckpointError as exc:
                raise HTTPException(400, str(exc)) from None
        return RedirectResponse(f"/runs/{_quote(new_run)}", status_code=303)

    def edits(self, fields: dict[str, str]) -> dict[str, Any]:
        """The sections a fork form replaces (``edit_<section>`` fields that are not
        empty), as JSON; refused unless ``--allow-edits``."""
        edits: dict[str, Any] = {}
        for section in EDITABLE:
            text = fields.get(f"edit_{section}", "").strip()
            if not text:
                continue
            if not self.settings.allow_edits:
                raise HTTPException(403, "editing values before a fork needs --allow-edits")
            try:
                edits[section] = json.loads(text)
            except json.JSONDecodeError as exc:
                raise HTTPException(400, f"the new {section} is not JSON: {exc}") from None
        return edits

    async def events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        poll = self.settings.poll

        async def stream() -> AsyncIterator[str]:
            last: str | None = None
            yield "retry: 2000\n\n"
            async with self.store() as store:
                while not await request.is_disconnected():
                    latest = await store.latest(run_id)
                    if latest is not None and latest.checkpoint_id != last:
                        last = latest.checkpoint_id
                        data = {
                            "checkpoint_id": latest.checkpoint_id,
                            "superstep": latest.superstep,
                            "status": latest.status,
                        }
                        yield f"event: checkpoint\ndata: {json.dumps(data)}\n\n"
                    await anyio.sleep(poll)

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"cache-control": "no-store"}
        )

    async def error_page(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if request.url.path.endswith("/graph.json"):  # fetched by the page's script
            return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
        return self.page(
            "error.html", status_code=exc.status_code, status=exc.status_code, detail=exc.detail
        )

    async def unreadable_page(self, request: Request, exc: Exception) -> Response:
        """A checkpoint that does not decode (corrupt, forged, over a decode budget, or
        nested too deep to show): 422, naming the run and the checkpoint, never a 500."""
        run_id = request.path_params.get("run_id")
        checkpoint = request.query_params.get("checkpoint")
        what = f"run {run_id!r}" if run_id else "this page's checkpoint"
        if checkpoint:
            what += f", checkpoint {checkpoint!r}"
        if isinstance(exc, RecursionError):
            reason = "a value in it is nested too deeply to show"
        else:
            reason = " ".join(str(exc).split())
        detail = f"{what} cannot be read: {reason}"
        return await self.error_page(request, HTTPException(422, detail))

    # -- routes -----------------------------------------------------------------------------

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [
            Route("/", self.runs, name="runs"),
            Route("/runs/{run_id:path}/graph.json", self.graph, name="graph"),
            Route("/runs/{run_id:path}/value", self.value_page, name="value"),
            Route("/runs/{run_id:path}/requests", self.requests, name="requests"),
            Route("/runs/{run_id:path}/events", self.events, name="events"),
            Route("/runs/{run_id:path}/replay", self.replay_page, name="replay"),
        ]
        if not self.settings.read_only:  # read-only: the change routes do not exist
            routes += [
                Route(
                    "/runs/{run_id:path}/requests/{request_id}",
                    self.answer,
                    methods=["POST"],
                    name="answer",
                ),
                Route("/runs/{run_id:path}/fork", self.fork, methods=["POST"], name="fork"),
                Route("/runs/{run_id:path}/resume", self.resume, methods=["POST"], name="resume"),
            ]
        routes += [
            Route("/runs/{run_id:path}", self.run, name="run"),
            Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
        ]
        return routes


def _as_declared(value: Any, wanted: Any, name: str) -> tuple[Any, str | None]:
    """``value`` (JSON from the form) as the declared response type, or why it is not one:
    a JSON object becomes the declared attrs class or dataclass (the workflow's own type,
    never one the data names)."""
    if is_instance(value, wanted):
        return value, None
    if isinstance(value, dict) and isinstance(wanted, type):
        from plait_converters import message_converter

        try:
            built: Any = message_converter().structure(value, wanted)
        except Exception as exc:  # cattrs says what is missing or of the wrong type
            return None, f"the answer must be {name}: {_one_line(exc)}"
        if is_instance(built, wanted):
            return built, None
    return None, f"the answer must be {name}, got {json_text(value)}"


def _one_line(exc: BaseException) -> str:
    notes = [
        f"{note} ({type(sub).__name__}: {sub})"
        for sub in getattr(exc, "exceptions", ())
        for note in getattr(sub, "__notes__", ())
    ]
    return "; ".join(notes) or " ".join(str(exc).split())


#: The most parts a value page's ``path`` may have.
MAX_PATH = 256


def _value_path(text: str) -> list[str | int]:
    """The ``path`` of a value page: a flat JSON list of keys (strings) and indexes
    (integers), at most :data:`MAX_PATH` of them.

    :raises HTTPException: 400, saying what a path is, for anything else (a deeply nested
        list included: the JSON reader gives up on it with a ``RecursionError``).
    """
    wrong = HTTPException(
        400, 'path must be a JSON list of keys and indexes, such as ["shared", 0]'
    )
    if len(text) > MAX_PATH * 1024:
        raise wrong
    try:
        path = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        raise wrong from None
    if not isinstance(path, list) or not all(
        isinstance(part, str) or (isinstance(part, int) and not isinstance(part, bool))
        for part in path
    ):
        raise wrong
    if len(path) > MAX_PATH:
        raise HTTPException(400, f"path has {len(path)} parts: at most {MAX_PATH}")
    return path


def _quote(run_id: str) -> str:
    from urllib.parse import quote

    return quote(run_id, safe="")


def _cut(text: str) -> dict[str, Any]:
    if len(text) <= VALUE_LIMIT:
        return {"text": text, "more": 0}
    return {"text": text[:VALUE_LIMIT], "more": len(text) - VALUE_LIMIT}


async def _view_of_run(store: CheckpointStore, run_id: str, checkpoint_id: str) -> CheckpointView:
    try:
        view = await checkpoint_view(store, checkpoint_id)
    except CheckpointNotFoundError:
        raise HTTPException(404, f"no checkpoint {checkpoint_id!r}") from None
    if view.checkpoint.run_id != run_id:
        raise HTTPException(404, f"no checkpoint {checkpoint_id!r} in run {run_id!r}")
    return view


async def _parent_view(store: CheckpointStore, view: CheckpointView) -> CheckpointView | None:
    parent_id = view.checkpoint.parent_id
    if parent_id is None:
        return None
    try:
        return await checkpoint_view(store, parent_id)
    except CheckpointNotFoundError:
        return None  # pruned


#: The most changes the "changed in this superstep" table lists (a superstep of a
#: 1,000-executor fan-out changes thousands of paths: the page stays light).
MAX_CHANGES = 200


def make_app(settings: UiSettings) -> Guard:
    """The ASGI app of ``plait ui`` for ``settings``: the Starlette app behind its
    :class:`~plait_ui._security.Guard`.
    """
    ui = _Ui(settings)
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        HTTPException: ui.error_page,
        CorruptCheckpointError: ui.unreadable_page,
        RecursionError: ui.unreadable_page,
    }
    app = Starlette(routes=ui.routes(), exception_handlers=handlers, lifespan=ui.lifespan)
    ui._guard = Guard(app, token=settings.token, allowed_hosts=settings.allowed_hosts)
    return ui.guard
