"""The ``steps`` loader: a YAML steps document to a :class:`~plait.WorkflowSpec`."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from plait import ConfigError, LoadError, SourcePosition, WorkflowSpec
from plait.spi import BuildContext
from plait_documents import Problems

__all__ = ["StepsLoader"]

#: loader options ``plait.load(..., **options)`` accepts for this format
OPTIONS = ("max_loop_iterations",)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a document is read (and back on after, if it was).

    Reading builds some 30 long-lived objects per step and makes no cycles that outlive
    it; each full collection the growing heap triggers walks every object of the process,
    which made up about 40% of the time a 1 MB document takes to load. Mercurial reads its
    revlog indexes the same way (``util.nogc``). What a document may build is bounded
    (:data:`~plait_steps._yaml.MAX_TEXT`, :data:`~plait_steps._yaml.MAX_NODES`)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class StepsLoader:
    """Format ``steps``: ``.yaml``/``.yml`` files with a top-level ``workflow:``.

    Every problem of a document is reported at once (a :class:`~plait.LoadError`
    whose problems carry line:column), sorted by position.
    """

    suffixes = (".yaml", ".yml")
    #: the loader options ``plait.load`` accepts for this format (it refuses others)
    options = OPTIONS

    def detect(self, text: str) -> bool:
        """A YAML document with a top-level ``workflow:`` key."""
        return any(line.startswith("workflow:") for line in text.splitlines()[:200])

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        with _collector_paused():
            return self._load(text, ctx)

    def _load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        from ._compile import compile_document
        from ._document import check_agent_configs, read
        from ._yaml import YamlProblem, parse

        source = ctx.source
        try:
            root, lines = parse(text, source)
        except YamlProblem as exc:
            raise LoadError([exc.error], source=source) from None
        manager = ctx.manager
        if manager is None:
            import plait

            manager = plait.get_plugin_manager()
            ctx = BuildContext(
                source=source,
                executors=ctx.executors,
                names=ctx.names,
                options=ctx.options,
                manager=manager,
                agents=ctx.agents,
                allow_imports=ctx.allow_imports,
            )
        kinds = [n for n in manager.registry("executor_kind").names() if not n.startswith("steps.")]
        doc, problems = read(root, lines, source, ctx.executors, kinds)
        ctx.agents.set_document(doc.agents, doc.agent_values)
        problems += check_agent_configs(doc, manager, source, allow_imports=ctx.allow_imports)
        override = ctx.options.get("max_loop_iterations")
        if override is not None:
            if isinstance(override, bool) or not isinstance(override, int) or override < 1:
                problems.append(
                    ConfigError(
                        f"max_loop_iterations must be an integer >= 1, got {override!r}",
                        SourcePosition(source=source),
                    )
                )
            else:
                doc.loop_limit = override
        spec, more = compile_document(doc, source, ctx, kinds)
        spec = _run_defaults(root, lines, source, spec, manager, problems)
        found = Problems(source)
        found.extend([*problems, *more])
        if not found and spec is None:
            found.add(
                ConfigError(
                    "the workflow has no steps", SourcePosition(source=source, line=1, column=1)
                )
            )
        found.raise_if_any()
        assert spec is not None  # no problems: compile_document built it
        return spec


def _plain(value: Any) -> Any:
    """A document value as plain JSON-like data."""
    inner = value.value
    if isinstance(inner, dict):
        return {str(key): _plain(item) for key, item in inner.items()}
    if isinstance(inner, list):
        return [_plain(item) for item in inner]
    return inner


def _run_defaults(
    root: Any,
    lines: list[str],
    source: str,
    spec: WorkflowSpec | None,
    manager: Any,
    problems: list[Any],
) -> WorkflowSpec | None:
    """The document's run options (``budget:``), checked at their position and kept in the
    spec's ``options``."""
    if root is None or not isinstance(root.value, dict):
        return spec
    from plait_documents import DOCUMENT_RUN_OPTIONS, check_run_option

    from ._yaml import position

    given: dict[str, Any] = {}
    for name in DOCUMENT_RUN_OPTIONS:
        value = root.value.get(name)
        if value is None:
            continue
        said = check_run_option(name, _plain(value), manager)
        if said is not None:
            # at the field the message names, else at the section
            named = said.split("; known:")[0]
            line, column = next(
                (at for key, at in value.keys.items() if f" {key}" in named),
                (value.line, value.column),
            )
            problems.append(ConfigError(said, position(source, lines, line, column)))
        else:
            given[name] = _plain(value)
    if spec is None or not given:
        return spec
    import attrs

    return attrs.evolve(spec, options={**spec.options, **given})
