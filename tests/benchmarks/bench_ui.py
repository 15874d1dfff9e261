"""``plait ui`` as a user waits for it (issue 23), in Debian's chromium through Playwright.

    python tests/benchmarks/bench_ui.py [--repeat 5] [--runs 10000] [--stores sqlite,file]
        [--nodes 1000] [--checkpoints 10000] [--quick]

One JSON line per measure:

- ``graph_first_paint``: from navigation to the run page of a run of a 1,000-node
  workflow until its graph is drawn (the page sets ``data-rendered``), median of
  ``--repeat`` fresh pages; target <= 2 s.
- ``checkpoints_first_paint``: the same for a run of 10,000 checkpoints (a full
  snapshot every 32, deltas between); target <= 2 s.
- ``graph_legibility``: what the first paint of a ``--nodes`` graph shows, per shape
  (``chain``: a chain that failed at its 60 % node; ``fanout``: one node fanned out to the
  others and fanned in, no groups; ``wide``: a fan-out into ten prefix groups):
  cytoscape's zoom, the smallest on-screen label size of the labelled nodes in view
  (zoom times font size, CSS pixels) and how many there are; target: labels of 8 px or more,
  at least 3 of them (issue 34: fitting a 1,000-node chain gave 0.05 px).
- ``runs_page``: server time of the runs page (the whole request in process, through
  Starlette's test client: the store's run index, the template) over a store of
  ``--runs`` runs, per store: the first page, a page deep in the list (by its cursor) and
  a filtered page (``status=failed``, one run in a hundred), and ``cold``: the very first
  page, when this process reads the store's index for the first time; target <= 300 ms.

``--quick`` runs each measure once at a tiny size, as a smoke test. The targets are
reported (``met``), never asserted: numbers depend on the machine. The
browser is ``/usr/bin/chromium`` (``apt-get install chromium``); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "plugins" / "plait-ui" / "tests"))

import uvicorn  # noqa: E402
from plait_testing.servers import free_port  # noqa: E402
from plait_ui import UiSettings, make_app  # noqa: E402
from plait_ui._security import allowed_hosts_for  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402
from ui_helpers import (  # noqa: E402
    TOKEN,
    chain,
    fan_out,
    in_thread,
    long_run,
    run,
    run_failing,
    wide,
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
PAINT_TARGET_S = 2.0
RUNS_TARGET_MS = 300.0
LEGIBLE_PX = 8.0
#: the first view, as tests/…/test_ui_browser.py measures it
FIRST_VIEW = """() => {
  const cy = window.plaitGraph, zoom = cy.zoom(), ext = cy.extent();
  const shown = cy.nodes().filter((n) => {
    const b = n.boundingBox({ includeLabels: false });
    return n.visible() && String(n.data("label") || "") !== "" &&
      b.x2 >= ext.x1 && b.x1 <= ext.x2 && b.y2 >= ext.y1 && b.y1 <= ext.y2;
  });
  const sizes = shown.map((n) => zoom * parseFloat(n.style("font-size")));
  return { zoom: zoom, fontPx: sizes.length ? Math.min.apply(null, sizes) : 0,
           labels: sizes.length };
}"""


def emit(record: dict[str, Any]) -> None:
    print(json.dumps(record), flush=True)


@contextmanager
def served(url: str) -> Iterator[str]:
    """`plait ui` on a free port in a thread; yields its URL with the token."""
    port = free_port()
    settings = UiSettings(
        store=url, token=TOKEN, allowed_hosts=allowed_hosts_for("127.0.0.1"), poll=1.0
    )
    server = uvicorn.Server(
        uvicorn.Config(make_app(settings), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


_SIGNED_IN: dict[str, Any] = {}


def signed_in_state(browser: Any, base: str) -> Any:
    """The cookies of a browser that opened the printed URL of the server at ``base``
    (kept: its token signs in once)."""
    if base not in _SIGNED_IN:
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{base}/?token={TOKEN}")
        _SIGNED_IN[base] = context.storage_state()
        context.close()
    return _SIGNED_IN[base]


def first_paints(base: str, run_id: str, repeat: int) -> list[float]:
    """Seconds from navigation to the graph drawn, on ``repeat`` fresh pages."""
    out = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            state = signed_in_state(browser, base)
            for _ in range(repeat + 1):  # the first one warms the server up
                context = browser.new_context(
                    viewport={"width": 1280, "height": 900}, storage_state=state
                )
                page = context.new_page()
                started = time.perf_counter()
                page.goto(f"{base}/runs/{run_id}")
                page.wait_for_selector("#graph[data-rendered=true]", timeout=120_000)
                out.append(time.perf_counter() - started)
                context.close()
        finally:
            browser.close()
    return out[1:]


def first_views(base: str, runs: dict[str, str]) -> dict[str, dict[str, Any]]:
    """What the first paint of each run's graph shows (:data:`FIRST_VIEW`), by shape."""
    out = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            state = signed_in_state(browser, base)
            for shape, run_id in runs.items():
                context = browser.new_context(
                    viewport={"width": 1280, "height": 900}, storage_state=state
                )
                page = context.new_page()
                page.goto(f"{base}/runs/{run_id}")
                page.wait_for_selector("#graph[data-rendered=true]", timeout=120_000)
                out[shape] = page.evaluate(FIRST_VIEW)
                context.close()
        finally:
            browser.close()
    return out


def paint_record(name: str, size: int, times: list[float]) -> dict[str, Any]:
    median = statistics.median(times)
    return {
        "bench": name,
        "size": size,
        "median_s": round(median, 3),
        "best_s": round(min(times), 3),
        "repeats": len(times),
        "target_s": PAINT_TARGET_S,
        "met": median <= PAINT_TARGET_S,
    }


def fill_runs(url: str, count: int) -> None:
    """``count`` runs of one checkpoint each (one in a hundred failed), written through
    the store's own save (``save_many`` where it has one)."""

    async def write() -> None:
        from plait_durable import Checkpoint, open_store

        store = open_store(url)
        try:
            batch = []
            for i in range(count):
                status = "failed" if i % 100 == 0 else "idle"
                batch.append(
                    Checkpoint(
                        checkpoint_id=uuid.uuid4().hex,
                        run_id=f"run-{i:06d}-{uuid.uuid4().hex[:8]}",
                        superstep=1,
                        parent_id=None,
                        signature="0" * 64,
                        status=status,
                        created_at=1_700_000_000.0 + i,
                        state={"kind": "full", "pending": {}, "requests": []},
                        metadata={"workflow": f"wf{i % 7}"},
                    )
                )
                if len(batch) == 500:
                    await _save(store, batch)
                    batch = []
            if batch:
                await _save(store, batch)
        finally:
            await store.aclose()

    in_thread(write)


async def _save(store: Any, batch: list[Any]) -> None:
    save_many = getattr(store, "save_many", None)
    if save_many is not None:
        await save_many(batch)
        return
    for checkpoint in batch:
        await store.save(checkpoint)


def runs_page_times(url: str, repeat: int) -> dict[str, float]:
    """Median milliseconds of the runs page: first page, a deep page, a filtered page."""
    settings = UiSettings(store=url, token=TOKEN, allowed_hosts=frozenset({"testserver"}))
    with TestClient(make_app(settings), base_url="http://testserver") as client:
        client.get(f"/?token={TOKEN}", follow_redirects=False)
        cursor = None
        started = time.perf_counter()
        page = client.get("/")  # cold: the store's index read for the first time
        cold = time.perf_counter() - started
        for _ in range(40):  # 40 pages of 50 in: run 2,000
            found = re.search(r'id="next-page" href="/[?]([^"]*)"', page.text)
            if found is None:
                break
            query = dict(parse_qsl(html.unescape(found.group(1))))
            cursor = query["cursor"]
            page = client.get("/", params={"cursor": cursor})
        queries: dict[str, dict[str, str]] = {
            "first": {},
            "deep": {"cursor": cursor or ""},
            "failed": {"status": "failed"},
        }
        out = {"cold": cold * 1000}
        for name, params in queries.items():
            times = []
            for _ in range(repeat + 1):
                started = time.perf_counter()
                response = client.get("/", params=params)
                times.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text[:300]
            out[name] = statistics.median(times[1:]) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--stores", default="sqlite,file")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--checkpoints", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.runs, args.nodes, args.checkpoints = 1, 30, 20, 50
        args.stores = "sqlite,file,memory"
    with tempfile.TemporaryDirectory(prefix="plait-bench-ui-") as scratch:
        url = f"sqlite:///{scratch}/graph.db"
        graph_run = run(wide(args.nodes), 0, url).run_id
        long = long_run(url, args.checkpoints)
        shapes = {
            "chain": run_failing(chain(args.nodes, fail_at=args.nodes * 6 // 10), 0, url),
            "fanout": run(fan_out(args.nodes), 0, url).run_id,
            "wide": graph_run,
        }
        with served(url) as base:
            for shape, view in first_views(base, shapes).items():
                emit(
                    {
                        "bench": "graph_legibility",
                        "shape": shape,
                        "nodes": args.nodes,
                        "zoom": round(view["zoom"], 4),
                        "label_px": round(view["fontPx"], 2),
                        "labels_in_view": view["labels"],
                        "target_px": LEGIBLE_PX,
                        "met": view["fontPx"] >= LEGIBLE_PX and view["labels"] >= 3,
                    }
                )
            graph_paints = first_paints(base, graph_run, args.repeat)
            emit(paint_record("graph_first_paint", args.nodes, graph_paints))
            long_paints = first_paints(base, long, args.repeat)
            emit(paint_record("checkpoints_first_paint", args.checkpoints, long_paints))
        for kind in args.stores.split(","):
            store_url = {
                "sqlite": f"sqlite:///{scratch}/runs.db",
                "file": f"file://{scratch}/runs",
                "memory": f"memory://bench-ui-{uuid.uuid4().hex}",
            }[kind]
            started = time.perf_counter()
            fill_runs(store_url, args.runs)
            filled = time.perf_counter() - started
            times = runs_page_times(store_url, args.repeat)
            worst = max(times.values())
            emit(
                {
                    "bench": "runs_page",
                    "store": kind,
                    "runs": args.runs,
                    **{f"{name}_ms": round(ms, 1) for name, ms in times.items()},
                    "fill_s": round(filled, 1),
                    "target_ms": RUNS_TARGET_MS,
                    "met": worst <= RUNS_TARGET_MS,
                }
            )


if __name__ == "__main__":
    main()
