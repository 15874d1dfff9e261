"""The ``steps`` loader: a YAML steps document to a :class:`~plait.WorkflowSpec`."""

from __future__ import annotations

from plait import ConfigError, LoadError, PlaitError, SourcePosition, WorkflowSpec
from plait.spi import BuildContext

__all__ = ["StepsLoader"]

#: loader options ``plait.load(..., **options)`` accepts for this format
OPTIONS = ("max_loop_iterations",)


def _sort_key(problem: PlaitError) -> tuple[int, int]:
    pos = getattr(problem, "position", None)
    return (getattr(pos, "line", None) or 0, getattr(pos, "column", None) or 0)


class StepsLoader:
    """Format ``steps``: ``.yaml``/``.yml`` files with a top-level ``workflow:``.

    Every problem of a document is reported at once (a :class:`~plait.LoadError`
    whose problems carry line:column), sorted by position.

    .. versionadded:: 0.1
    """

    suffixes = (".yaml", ".yml")
    #: the loader options ``plait.load`` accepts for this format (it refuses others)
    options = OPTIONS

    def detect(self, text: str) -> bool:
        """A YAML document with a top-level ``workflow:`` key."""
        return any(line.startswith("workflow:") for line in text.splitlines()[:200])

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        from ._compile import compile_document
        from ._document import read
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
            )
        kinds = [n for n in manager.registry("executor_kind").names() if not n.startswith("steps.")]
        doc, problems = read(root, lines, source, ctx.executors, kinds)
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
        seen = {str(p) for p in problems}
        problems += [p for p in more if str(p) not in seen]
        if problems or spec is None:
            problems = problems or [
                ConfigError(
                    "the workflow has no steps", SourcePosition(source=source, line=1, column=1)
                )
            ]
            raise LoadError(sorted(problems, key=_sort_key), source=source)
        return spec
