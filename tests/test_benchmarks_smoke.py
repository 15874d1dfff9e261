"""The benchmarks still work: every Plait workload once, at a tiny size (no timing asserted)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).parent / "benchmarks"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_every_plait_workload_runs_and_is_correct() -> None:
    workloads = (
        "chain1000,fanout1000,loop10000,wide_loop,build1000,fanout_async,"
        "chain100_ckpt_memory,chain100_ckpt_sqlite"
    )
    done = _run(str(BENCH / "run.py"), "--quick", "--workloads", workloads)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["workload"] for r in records] == workloads.split(",")
    assert all(r["result"] == r["n"] == 10 for r in records)


def test_the_peer_harness_runs_plait_alone() -> None:
    done = _run(str(BENCH / "peers" / "compare.py"), "--quick", "--frameworks", "plait", "--no-mem")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert {r["framework"] for r in records} == {"plait"}
    assert len(records) >= 7


def test_the_type_check_and_composition_benchmarks_run() -> None:
    # their exit codes compare timings, which a test must not; the output must be there
    for script, args in (
        ("bench_typecheck.py", ["--quick"]),
        ("bench_compose.py", ["--fragments", "3", "--size", "3", "--repeat", "1"]),
        ("bench_checkpoints.py", ["--sizes", "5", "--repeat", "1", "--fanout", "20"]),
        ("bench_expressions.py", ["--quick", "--frameworks", "plait"]),
        ("bench_dag.py", ["--quick"]),
        ("bench_flow.py", ["--quick"]),
        ("bench_cold_start.py", ["--repeat", "1", "--no-peers", "--n", "10"]),
        ("bench_steps.py", ["--quick"]),
        ("bench_from_spec.py", ["--quick"]),
        ("bench_nested.py", ["--quick"]),
        ("bench_otel.py", ["--quick"]),
        ("bench_ray.py", ["--quick"]),
        ("bench_hostile.py", ["--quick"]),
        (
            "bench_checkpoint_growth.py",
            ["--stores", "sqlite,file,memory", "--steps", "12", "--repeat", "1"],
        ),
        ("bench_schedules.py", ["--quick", "--no-peers"]),
        ("bench_resume_versions.py", ["--store", "file", "--steps", "6", "--repeat", "2"]),
        ("bench_ui.py", ["--quick"]),
        ("bench_teams.py", ["--turns", "20", "--repeat", "1"]),
        ("bench_replay.py", ["--quick"]),
        ("bench_runs_listing.py", ["--quick"]),
    ):
        done = _run(str(BENCH / script), *args)
        assert "Traceback" not in done.stderr, (script, done.stderr)
        records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert records, (script, done.stdout)


def test_the_cold_build_target_needs_twice_the_speed_of_every_peer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = importlib.util.spec_from_file_location("bench_cold_start", BENCH / "bench_cold_start.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_cold_start", bench)  # its dataclasses look it up
    spec.loader.exec_module(bench)

    def records(maf_s: float) -> list[dict[str, Any]]:
        found = [
            {"framework": "plait", "measure": "build1000", "median_s": 0.1, "met": True},
            {"framework": "langgraph", "measure": "build1000", "median_s": 0.8},
            {"framework": "maf", "measure": "build1000", "median_s": maf_s},
        ]
        bench.compare_with_peers(found)
        return found

    fast = records(0.3)[0]
    assert fast["met"] is True
    assert (fast["x_faster_than_langgraph"], fast["x_faster_than_maf"]) == (8.0, 3.0)
    assert records(0.15)[0]["met"] is False  # 1.5 times faster than MAF is not enough
    floored = [
        {"framework": "plait", "measure": "build1000", "median_s": 0.25, "met": False},
        {"framework": "libraries", "measure": "build1000", "median_s": 0.15},
        {"framework": "maf", "measure": "build1000", "median_s": 0.6},
    ]
    bench.compare_with_peers(floored)
    # the libraries' floor is not a peer: it says what Plait adds, not how much faster it is
    assert floored[0]["above_libraries_s"] == 0.1
    assert "x_faster_than_libraries" not in floored[0]


def test_the_cli_benchmarks_floor_imports_the_runs_libraries_and_no_plait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("bench_cli", BENCH / "bench_cli.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_cli", bench)
    spec.loader.exec_module(bench)
    workflow = tmp_path / "steps.yaml"
    workflow.write_text(bench.STEPS2)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    modules = bench._imported_modules(bench._plait_command(), workflow, str(tmp_path), env)
    # what a checkpointed run of shell steps needs from outside Plait, and nothing of Plait
    assert {"click", "attrs", "pluggy", "ruamel.yaml", "sqlite3", "asyncio"} <= set(modules)
    assert not [name for name in modules if name.startswith("plait")]

    floor = bench._floor_command(modules)
    report = "import sys, json\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [*floor[:-1], floor[-1] + report], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert {"click", "ruamel.yaml", "sqlite3", "anyio._backends._asyncio"} <= loaded
    assert not [name for name in loaded if name.startswith("plait")]
