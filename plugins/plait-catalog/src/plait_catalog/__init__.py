"""Which first-party Plait distribution provides which name.

An unknown name (a router, a checkpoint store's URL scheme, an executor kind …) is an
error listing what is installed; with this catalog installed it also says which
distribution to install. The kernel asks ``plait_provided_names`` only when a lookup
fails, so the table costs a cold start nothing but this module's import.

The table is written down here and nowhere else; a test checks it against what the
installed first-party plugins register.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plait.spi import hookimpl

__all__ = ["FIRST_PARTY", "plait_provided_names"]

#: distribution -> kind -> the names it registers of that kind (kind ``hook``: the hooks of
#: which only one plugin's answer counts, such as ``plait_durability``, that it implements).
FIRST_PARTY: Mapping[str, Mapping[str, Sequence[str]]] = {
    "plait-routing": {
        "router": ("conditional", "direct", "error", "fan_in", "fan_out", "switch"),
    },
    "plait-merge": {
        "merge_strategy": ("concat", "concat_newline", "first", "keyed", "last", "list"),
    },
    "plait-stores": {"checkpoint_store": ("file", "memory", "sqlite")},
    "plait-redis": {"checkpoint_store": ("redis", "rediss")},
    "plait-postgres": {"checkpoint_store": ("postgres", "postgresql")},
    "plait-sealing": {"checkpoint_store": ("sealed",)},
    "plait-executors": {"executor_kind": ("http", "python", "shell", "workflow")},
    "plait-export": {"exporter": ("dot", "mermaid")},
    "plait-expr": {"expression_language": ("plait",)},
    "plait-llm": {"executor_kind": ("agent",)},
    "plait-ray": {"placement": ("ray",)},
    "plait-documents": {"hook": ("plait_documents",)},
    "plait-durable": {"hook": ("plait_durability",)},
    "plait-pipeline": {"schedule": ("pipelined",)},
}


@hookimpl
def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
    """The first-party table (:data:`FIRST_PARTY`)."""
    return FIRST_PARTY
