"""``plait.load``: text in any installed format, as a runnable workflow.

Loaders are plugins (``plait_register_loaders``). A loader turns text into a
:class:`~plait.WorkflowSpec`, reporting every problem at once with its position
(line:column or JSON path) and the names that exist; :func:`load` then rebuilds the
workflow with :meth:`plait.Workflow.from_spec`.

A loader is an object with ``suffixes`` (``(".flow",)``), ``load(text, ctx) ->
WorkflowSpec`` and, optionally, ``detect(text) -> bool`` for text given without a format
or a file name, and ``options``: the loader options it accepts (``plait.load`` refuses
any other, naming the accepted ones).

.. versionadded:: 0.1
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._building import BuildContext
from ._errors import (
    ConfigError,
    DocumentError,
    LoadError,
    PlaitError,
    SourcePosition,
    UnknownNameError,
)

if TYPE_CHECKING:
    from ._grants import AllowSpec
    from ._spec import WorkflowSpec
    from ._workflow import Workflow

__all__ = ["Loader", "load", "load_spec"]

_MAX_BYTES = 16 * 1024 * 1024  # a workflow document larger than this is refused


@runtime_checkable
class Loader(Protocol):
    """A front-end: text in one format to a :class:`~plait.WorkflowSpec`."""

    suffixes: tuple[str, ...]

    def load(self, text: str, ctx: BuildContext) -> WorkflowSpec:
        """The spec for ``text``; raise :class:`~plait.LoadError` with every problem."""
        ...


def _read(source: str | os.PathLike[str], suffixes: set[str]) -> tuple[str, str, str | None]:
    """``(text, source name, suffix)``: a path is read; a string is text unless it names
    an existing file with a known suffix."""
    from pathlib import Path  # here: `import plait` does not pay for pathlib

    if isinstance(source, os.PathLike) or (
        isinstance(source, str)
        and "\n" not in source
        and len(source) < 4096
        and source.lower().endswith(tuple(suffixes))
        and Path(source).is_file()
    ):
        path = Path(source)
        try:
            size = path.stat().st_size
            if size > _MAX_BYTES:
                raise LoadError(
                    [PlaitError(f"the file is {size} bytes; the limit is {_MAX_BYTES}")],
                    source=str(path),
                )
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise LoadError([PlaitError(f"cannot read it: {exc}")], source=str(path)) from exc
        # the longest suffix a loader claims wins: ".spec.json" over ".json"
        claimed = [s for s in suffixes if path.name.lower().endswith(s)]
        suffix = max(claimed, key=len) if claimed else path.suffix.lower()
        return text, str(path), suffix
    if not isinstance(source, str):
        raise TypeError(f"plait.load needs text or a path, got {type(source).__name__}")
    if len(source) > _MAX_BYTES:
        raise LoadError([PlaitError(f"the text is longer than {_MAX_BYTES} characters")])
    return source, "<string>", None


def _choose(
    loaders: Any, format: str | None, suffix: str | None, text: str, source: str
) -> tuple[str, Loader]:
    names = loaders.names()
    if format is not None:
        if format not in loaders:
            raise UnknownNameError(
                f"unknown workflow format {format!r}; installed: {', '.join(names) or 'none'}"
            )
        return format, loaders.get(format)
    if suffix is not None:
        for name in names:
            if suffix in getattr(loaders.get(name), "suffixes", ()):
                return name, loaders.get(name)
    for name in names:
        detect = getattr(loaders.get(name), "detect", None)
        if detect is not None and detect(text):
            return name, loaders.get(name)
    raise LoadError(
        [
            PlaitError(
                "cannot tell the format of this document; pass format= "
                f"(installed formats: {', '.join(names) or 'none'})"
            )
        ],
        source=source,
    )


def load_spec(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    executors: Mapping[str, Any] | None = None,
    plugin_manager: Any = None,
    **options: Any,
) -> WorkflowSpec:
    """The spec a document describes, without building it (what ``plait validate`` and
    ``plait graph`` use). Arguments as for :func:`load`."""
    return _load_spec(source, format, executors, plugin_manager, options)[0]


def _load_spec(
    source: str | os.PathLike[str],
    format: str | None,
    executors: Mapping[str, Any] | None,
    plugin_manager: Any,
    options: Mapping[str, Any],
) -> tuple[WorkflowSpec, str]:
    if plugin_manager is None:
        from ._plugins import get_plugin_manager

        plugin_manager = get_plugin_manager()
    loaders = plugin_manager.registry("loader")
    suffixes = {s for n in loaders.names() for s in getattr(loaders.get(n), "suffixes", ())}
    text, name, suffix = _read(source, suffixes)
    if "\x00" in text:
        offset = text.index("\x00")
        line = text.count("\n", 0, offset) + 1
        start = text.rfind("\n", 0, offset) + 1
        end = text.find("\n", offset)
        row = text[start : end if end != -1 else len(text)].replace("\x00", " ")
        where = SourcePosition(source=name, line=line, column=offset - start + 1, text=row)
        raise LoadError([DocumentError("the text holds a NUL byte", where)], source=name)
    format_name, loader = _choose(loaders, format, suffix, text, name)
    accepted = getattr(loader, "options", None)
    if accepted is not None and (unknown := sorted(set(options) - set(accepted))):
        raise LoadError(
            [
                ConfigError(
                    f"unknown option(s) for the {format_name} loader: {', '.join(unknown)}; "
                    f"accepted: {', '.join(accepted) or 'none'}",
                    SourcePosition(source=name),
                )
            ],
            source=name,
        )
    executors = dict(executors or {})
    names = set(executors)
    names |= set(plugin_manager.registry("executor_kind").names())
    names |= set(plugin_manager.registry("fragment").names())
    ctx = BuildContext(
        source=name,
        allow_imports=False,  # what the document may import is its grants' business
        executors=executors,
        names=frozenset(names),
        options=options,
        manager=plugin_manager,
    )
    return loader.load(text, ctx), name


def load(
    source: str | os.PathLike[str],
    *,
    format: str | None = None,
    executors: Mapping[str, Any] | None = None,
    allow_imports: bool = False,
    allow: AllowSpec = None,
    plugin_manager: Any = None,
    **options: Any,
) -> Workflow:
    """A runnable workflow from a document in any installed format.

    :param source: the document's text, or a path to it (a ``str`` is a path only when it
        names an existing file with a known suffix).
    :param format: the loader's name (``flow``, ``dag``, ``steps`` …); default: from the
        file's suffix, else the loaders' own detection.
    :param executors: Python executors or ``async def`` functions, by the names the text
        uses — for people who load a file but write their agents in Python.
    :param allow_imports: whether the document may name Python code to import (``python``
        executor kind, ``{"ref": ...}`` conditions): the ``imports`` capability. Off by
        default: a workflow file is untrusted input.
    :param allow: the capabilities the document may use (:mod:`plait.capabilities`,
        :mod:`plait.grants`): ``"subprocess,network=api.example.com"``, a list of them, or
        ``"all"``. Nothing by default, so a document may use only the ``executors`` passed
        and the pure kinds.
    :param options: options for the loader (``merge="concat_newline"`` for a flow …).
    :raises CapabilityError: the document needs a capability not granted (checked before
        any node is built or any code imported), each with its node and position.
    :raises LoadError: every problem in the document, each with its position.

    .. versionadded:: 0.1
    .. versionchanged:: 0.1 ``allow`` (capabilities).
    """
    from ._capabilities import IMPORTS
    from ._grants import Grants, check_granted
    from ._workflow import Workflow

    if plugin_manager is None:
        from ._plugins import get_plugin_manager

        plugin_manager = get_plugin_manager()
    from ._rebuild import load_scope

    grants = Grants.of(allow, allow_imports=allow_imports)
    # one load: what the loader's checks build, the build reuses (see LoadScope)
    with load_scope():
        spec, name = _load_spec(source, format, executors, plugin_manager, options)
        check_granted(spec, grants, executors=executors, manager=plugin_manager, source=name)
        return Workflow.from_spec(
            spec,
            executors,
            allow_imports=grants.covers(IMPORTS),
            plugin_manager=plugin_manager,
            source=name,
        )
