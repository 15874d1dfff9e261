"""``PLAIT_CHECKPOINT_KEY``: ``plait run`` and ``plait resume`` sign their checkpoints
through plait-sealing's ``sealed:`` store, and say how to install it when it is missing."""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from plait_cli import _run
from plait_sealing import generate_key
from test_cli_run import plait, store, target


def _states(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT data FROM plait_checkpoints ORDER BY seq").fetchall()
    conn.close()
    return [json.loads(bytes(data).split(b"\n", 2)[2])["state"] for (data,) in rows]


def _waiting(result: Any) -> tuple[str, str]:
    assert result.exit_code == 3, result.stderr
    (run_id,) = re.findall(r"^run id: ([0-9a-f]{32})$", result.stderr, re.M)
    (request_id,) = re.findall(r"--respond ([0-9a-f]+)=", result.stderr)
    return run_id, request_id


def test_with_a_key_in_the_environment_runs_are_signed_and_resume_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store(tmp_path)
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("cli"))
    run_id, request_id = _waiting(plait("run", target("gate"), "t", "--checkpoint", url))
    states = _states(tmp_path / "runs.db")
    assert states and all(s["kind"] == "sealed" and s["key"] == "cli" for s in states)
    monkeypatch.delenv("PLAIT_CHECKPOINT_KEY")
    refused = plait("resume", target("gate"), run_id, "--checkpoint", url, "--respond",
                    f"{request_id}=true")  # fmt: skip
    assert refused.exit_code == 1 and "has kind 'sealed'" in refused.stderr
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("other"))
    wrong = plait("resume", target("gate"), run_id, "--checkpoint", url, "--respond",
                  f"{request_id}=true")  # fmt: skip
    assert wrong.exit_code == 1 and "CheckpointAuthError" in wrong.stderr
    assert "'cli', which is not among the configured keys" in wrong.stderr


def test_the_signed_run_resumes_with_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = store(tmp_path)
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("cli"))
    run_id, request_id = _waiting(plait("run", target("gate"), "t", "--checkpoint", url))
    listed = plait("runs", "--checkpoint", url)  # listing needs no key
    assert listed.exit_code == 0 and run_id[:8] in listed.stdout
    done = plait("resume", target("gate"), run_id, "--checkpoint", url, "--respond",
                 f"{request_id}=true", "-q")  # fmt: skip
    assert (done.exit_code, done.stdout) == (0, "published: t\n")


def test_a_key_without_plait_sealing_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "plait_sealing" else real(name, *args)

    monkeypatch.setattr(_run.importlib.util, "find_spec", find_spec)
    monkeypatch.setenv("PLAIT_CHECKPOINT_KEY", generate_key("cli"))
    result = plait("run", target("echo"), "x", "--checkpoint", store(tmp_path))
    assert result.exit_code == 1
    assert "needs the plait-sealing plugin (" in result.stderr
    assert not (tmp_path / "runs.db").exists()  # refused before anything was written
    assert plait("run", target("echo"), "x", "--no-checkpoint", "-q").exit_code == 0
