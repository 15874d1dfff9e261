#!/usr/bin/env python3
"""Smoke test of the peer workloads (not collected by pytest; this project does not skip).

Runs ``compare.py --quick`` for LangGraph and MAF, their alternative API choices included:
every workload once at n=10, each result checked. Exits non-zero if either peer cannot be
imported or any result is wrong::

    python tests/benchmarks/peers/smoke_peers.py
"""

from __future__ import annotations

import sys
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[3]
if str(_REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(_REPO_ROOT))

from tests.benchmarks.peers.compare import main  # noqa: E402


def smoke() -> int:
    """Run the quick comparison of both peers; returns the exit status."""
    return main(["--quick", "--alternatives", "--frameworks", "langgraph,maf"])


if __name__ == "__main__":
    sys.exit(smoke())
