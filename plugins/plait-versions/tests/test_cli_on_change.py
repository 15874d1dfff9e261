"""``plait resume --on-change reject|pin|migrate|accept`` (``--accept-changes`` is
``accept``), on a Python workflow target."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest
import versions_shop as shop
from versions_cli import plait

pytestmark = pytest.mark.usefixtures("shop_migration")


def _paused(url: str) -> tuple[str, str]:
    started = plait("run", "versions_cli_targets:shop_v1", "order-a", "--checkpoint", url,
                    "--no-input")  # fmt: skip
    (run_id,) = re.findall(r"run id: ([0-9a-f]{32})", started.stderr)
    (request,) = anyio.run(shop.v1().pending_requests, run_id, url)
    return run_id, request.request_id


def test_migrate_on_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, request_id = _paused(url)
    common = ["resume", "versions_cli_targets:shop_v2", run_id, "--checkpoint", url,
              "--respond", f"{request_id}=true", "--no-input"]  # fmt: skip
    refused = plait(*common)  # reject, the default: the diff, nothing changed
    assert refused.exit_code == 1 and "audit" in refused.stderr
    pinned = plait(*common, "--on-change", "pin")
    assert pinned.exit_code == 1 and "PinnedRunError" in pinned.stderr
    assert "pinned to version 1" in pinned.stderr
    migrated = plait(*common, "--on-change", "migrate")
    assert migrated.exit_code == 0, migrated.stderr
    assert f"run {run_id} migrated from version 1 to 2 (shop@1)" in migrated.stderr
    assert "v2 audited order-a True" in migrated.stdout


def test_accept_changes_is_on_change_accept(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, _ = _paused(url)
    both = plait("resume", "versions_cli_targets:shop_v2", run_id, "--checkpoint", url,
                 "--accept-changes", "--on-change", "migrate")  # fmt: skip
    assert both.exit_code == 2 and "--accept-changes is --on-change accept" in both.stderr
    assert "not --on-change migrate too" in both.stderr
