"""Which first-party Plait distribution provides which name, and how to install it.

An unknown name (a router, a checkpoint store's URL scheme, an executor kind, a ``plait``
sub-command …) is an error listing what is installed; with this catalog installed it also
says which distribution provides the name and how to get it, in a checkout and from an
index. The kernel asks ``plait_provided_names`` and ``plait_install_hint`` only when a
lookup fails, so the table costs a cold start nothing but this module's import.

The table is written down here and nowhere else (the kernel names the distributions
behind its own two seams, durable runs and documents, itself); tests check it against
what the installed first-party plugins register and against the root ``pyproject.toml``'s
extras.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from plait.spi import hookimpl

__all__ = ["EXTRAS", "FIRST_PARTY", "install_hint", "plait_install_hint", "plait_provided_names"]

#: distribution -> kind -> the names it registers of that kind (``command``: the ``plait``
#: sub-commands it adds; ``hook``: the hooks of which only one plugin's answer counts, such
#: as ``plait_durability``, that it implements).
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
    "plait-builders": {"hook": ("plait_workflow_as_connection",)},
    "plait-teams": {"hook": ("plait_workflow_as_agent",)},
    "plait-documents": {"hook": ("plait_documents",)},
    "plait-durable": {"hook": ("plait_durability",)},
    "plait-pipeline": {"schedule": ("pipelined",)},
    "plait-ui": {"command": ("ui",)},
    "plait-replay": {"command": ("export", "import", "replay")},
    "plait-versions": {"command": ("compat",), "hook": ("plait_change_policies",)},
    "plait-budgets": {"command": ("spend",)},
    "plait-workers": {"command": ("answer", "cancel", "queue", "submit", "worker")},
}

#: distribution -> the extra of the ``plait`` meta-distribution that brings it (the root
#: ``pyproject.toml``'s optional dependencies). Every other first-party distribution comes
#: with ``plait`` itself.
EXTRAS: Mapping[str, str] = {
    "plait-redis": "redis",
    "plait-postgres": "postgres",
    "plait-llm": "llm",
    "plait-ray": "ray",
    "plait-otel": "otel",
    "plait-ui": "ui",
    "plait-workers": "workers",
}

#: The distributions this catalog says how to install: those above, and the two the
#: kernel itself names (durable runs, documents).
_DISTRIBUTIONS = frozenset(FIRST_PARTY) | frozenset(EXTRAS) | {"plait-durable", "plait-documents"}


def install_hint(distribution: str) -> str | None:
    """How to install the first-party ``distribution``: in a checkout of Plait (through
    uv, the README's way), from that checkout with pip, and from a package index that
    serves Plait — each a command that works there; ``None`` for a distribution that is
    not first-party.

    Plait's distributions are not on PyPI: a bare ``pip install plait-ui`` finds nothing,
    so the index form is said as what it is.
    """
    if distribution not in _DISTRIBUTIONS:
        return None
    extra = EXTRAS.get(distribution)
    if extra is not None:
        what, sync, indexed = (
            f"the plait[{extra}] extra",
            f"bash .ci/uv sync --locked --extra {extra}",
            f"pip install 'plait[{extra}]'",
        )
    else:
        what, sync, indexed = "part of plait", "bash .ci/uv sync --locked", "pip install plait"
    return (
        f"{what}: in a checkout of plait, {sync}; with pip, from that checkout's folder, "
        f"pip install ./plugins/{distribution}; from a package index that has plait, "
        f"{indexed}"
    )


@hookimpl
def plait_provided_names() -> Mapping[str, Mapping[str, Sequence[str]]]:
    """The first-party table (:data:`FIRST_PARTY`)."""
    return FIRST_PARTY


@hookimpl
def plait_install_hint(distribution: str) -> str | None:
    """How to install a first-party distribution (:func:`install_hint`)."""
    return install_hint(distribution)
