"""Every CLI test runs in a folder of its own: ``plait run`` checkpoints under ``.plait/``
in the working directory by default."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _in_tmp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
