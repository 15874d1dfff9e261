"""The vendored JavaScript: each file is the pinned npm package's, as recorded (sha256),
with its licence; the pages load nothing from anywhere else."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import plait_ui

PACKAGE = Path(plait_ui.__file__).parent
VENDOR = PACKAGE / "static" / "vendor"


def test_every_vendored_file_matches_its_recorded_sha256() -> None:
    manifest = json.loads((VENDOR / "vendor.json").read_text())
    on_disk = {p.name for p in VENDOR.glob("*.js")}
    assert set(manifest) == on_disk, "a vendored file is not recorded, or is missing"
    for name, entry in manifest.items():
        digest = hashlib.sha256((VENDOR / name).read_bytes()).hexdigest()
        assert digest == entry["sha256"], f"{name} is not {entry['package']}@{entry['version']}"
        assert re.fullmatch(r"\d+\.\d+\.\d+", entry["version"]), "pin an exact version"
        assert (VENDOR / entry["license"]).is_file(), f"{name}: licence missing"
    assert {e["package"] for e in manifest.values()} == {
        "cytoscape",
        "cytoscape-dagre",
        "dagre",
        "htmx.org",
    }


def test_pages_load_scripts_and_styles_only_from_this_server() -> None:
    for template in (PACKAGE / "templates").glob("*.html"):
        text = template.read_text()
        for url in re.findall(r'(?:src|href)="([^"{]+)"', text):
            assert url.startswith(("/", "?")), f"{template.name} loads {url}"
        assert "<style" not in text and " style=" not in text, template.name
        inline = re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", text)
        assert not inline, f"{template.name} has inline script"
