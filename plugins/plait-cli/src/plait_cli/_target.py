"""Find the workflow a ``TARGET`` names: ``module:attr`` or ``path/to/file.py:attr``.

A file is imported under the module name Python would give it from the top of its package
(flask's ``--app`` does the same): ``flows/essay.py`` in a folder without ``__init__.py`` is
module ``essay``, with that folder put on ``sys.path``. So a class defined there has the
same ``module:qualname`` in every process, and a checkpoint naming it decodes when another
process resumes the run.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import attrs
from plait import PlaitError, Workflow
from plait.spi import record_repr

from ._output import describe_error

__all__ = [
    "Target",
    "TargetError",
    "document_options",
    "load_agents",
    "load_target",
    "parse_target",
]

_FORMS = (
    "a workflow file (workflow.yaml, pipeline.flow, dag.json …), module:attr or "
    "path/to/file.py:attr (e.g. my_flows:workflow)"
)


class TargetError(PlaitError):
    """A ``TARGET`` does not name a :class:`plait.Workflow` (or a function returning one).

    The message names the module or file, the attribute, and what was found instead.
    """


@attrs.frozen(repr=False)
class Target:
    """A ``TARGET``, its form decided once (:func:`parse_target`) and carried as is through
    loading, recording and deciding whether it names code: the string is never read again,
    so a file renamed between two readings cannot turn a document into a Python import.

    :param form: ``document`` (a workflow file, loaded as data), ``file``
        (``path/to/file.py:attr``) or ``module`` (``module:attr``).
    :param where: the document's or the ``.py`` file's path, or the module's name.
    :param attr: the attribute naming the workflow (``""`` for a document).
    """

    __repr__ = record_repr

    form: Literal["document", "file", "module"]
    where: str
    attr: str = ""
    #: ``--format``: the document's format (a loader's name), else from its suffix
    format: str | None = None
    #: ``--agents``: a module or ``.py`` file whose async functions and executors are agents
    agents: str | None = None

    @property
    def imports(self) -> bool:
        """Whether loading it imports Python code (a ``file`` or ``module`` target)."""
        return self.form != "document"

    def absolute(self) -> Target:
        """The same target as a later ``plait resume`` in another folder names it: a path
        made absolute; a module as given."""
        agents = self.agents
        if agents is not None and agents.endswith(".py"):
            agents = str(Path(agents).resolve())
        if self.form == "module":
            return self if agents == self.agents else attrs.evolve(self, agents=agents)
        return attrs.evolve(self, where=str(Path(self.where).resolve()), agents=agents)

    def flags(self) -> list[str]:
        """``--format`` and ``--agents`` as typed again (for a printed resume command)."""
        words = ["--format", self.format] if self.format is not None else []
        return words + (["--agents", self.agents] if self.agents is not None else [])

    def __str__(self) -> str:
        """The target as it is typed: ``path``, ``path.py:attr`` or ``module:attr``."""
        return self.where if self.form == "document" else f"{self.where}:{self.attr}"


def parse_target(text: str, *, format: str | None = None, agents: str | None = None) -> Target:
    """Decide once how ``text`` names a workflow, going by its form: an existing file that
    is not ``.py`` is a ``document``; ``path/to/file.py:attr`` a ``file``; ``module:attr``
    a ``module``. A ``.py`` file is never read as a workflow document.

    :param format: ``--format``, for a document.
    :param agents: ``--agents``, for a document.
    :raises TargetError: it is none of these (a missing file says so in one line).
    """
    document = Path(text)
    if document.suffix.lower() != ".py" and document.is_file():
        return Target("document", text, format=format, agents=agents)
    if document.suffix.lower() == ".py" and ":" not in document.name:
        what = "" if document.is_file() else " (and it does not exist)"
        raise TargetError(
            f"TARGET {text!r} is a Python file{what}, never read as a workflow document: "
            f"name the workflow in it, as {text}:workflow"
        )
    module_part, sep, attr = text.rpartition(":")
    if not sep and (document.suffix or os.sep in text or "/" in text):
        what = "is a directory" if document.is_dir() else "does not exist"
        raise TargetError(f"TARGET {text!r}: no such file ({text} {what})")
    if not sep or not module_part or not attr or "/" in attr or os.sep in attr:
        raise TargetError(f"TARGET {text!r} must be {_FORMS}")
    if format is not None or agents is not None:
        flag = "--format" if format is not None else "--agents"
        raise TargetError(
            f"{flag} applies to a workflow file; TARGET {text!r} names Python code, which "
            "holds its agents already"
        )
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        return Target("file", module_part, attr)
    return Target("module", module_part, attr)


def load_target(
    target: str | Target, *, allow_imports: bool = False, allow: Any = None
) -> Workflow:
    """Import what ``target`` names and return the workflow.

    A workflow *file* in any installed format (``workflow.yaml``, ``pipeline.flow``,
    ``dag.json`` …) is loaded with :func:`plait.load`; it may import code it names only with
    ``allow_imports``, and use other capabilities only as ``allow`` grants them (a workflow
    file is untrusted input; :mod:`plait_documents`).

    :param target: a :class:`Target`, or a string :func:`parse_target` reads once:
        ``module:attr`` (the module imported as ``python -m`` would, with the current
        directory on ``sys.path``) or ``path/to/file.py:attr``; ``attr`` may be dotted
        (``flows:registry.essay``) and names a :class:`plait.Workflow` or a callable taking
        no arguments that returns one.
    :raises TargetError: naming the module or file, the attribute and what was found.
    """
    parsed = parse_target(target) if isinstance(target, str) else target
    text = str(target)
    if parsed.form == "document":
        import plait

        document = Path(parsed.where)
        folder = str(document.resolve().parent)
        if allow_imports and folder not in sys.path:  # its code, beside it (as for file.py:attr)
            sys.path.insert(0, folder)
        from plait_documents import CapabilityError, cli_wording

        agents = load_agents(parsed.agents) if parsed.agents is not None else None
        try:
            with cli_wording():
                return plait.load(
                    document,
                    allow_imports=allow_imports,
                    allow=allow,
                    format=parsed.format,
                    agents=agents,
                )
        except CapabilityError as exc:  # named as the command line grants them
            raise TargetError(f"TARGET {text!r}: {exc.for_cli()}") from exc
        except PlaitError as exc:
            raise TargetError(f"TARGET {text!r}: {exc}") from exc
    if parsed.form == "file":
        module = _import_file(parsed.where, text)
    else:
        cwd = os.getcwd()
        if "" not in sys.path and cwd not in sys.path:
            sys.path.insert(0, cwd)
        module = _import_module(parsed.where, text)
    obj = _attribute(module, parsed.attr, text)
    return _as_workflow(obj, text)


def load_agents(text: str) -> ModuleType:
    """The module ``--agents`` names: ``MODULE`` (imported with the current directory on
    ``sys.path``) or ``path/to/file.py``. Importing it runs it: naming it trusts it, and
    only it.

    :raises TargetError: the module or file cannot be imported, said as ``--agents``.
    """
    if text.endswith(".py") or "/" in text or os.sep in text:
        return _import_file(text, text, what="--agents")
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    return _import_module(text, text, what="--agents")


def document_options(command: Any) -> Any:
    """The ``--format`` and ``--agents`` options of a command that loads workflow files."""
    import click

    command = click.option(
        "--agents",
        "agents",
        metavar="MODULE_OR_FILE.py",
        help="A Python module (or .py file) whose public async functions and executors "
        "are agents the workflow file may name (last in the name order: the file's own "
        "agents: and installed plugins' agents come first). Naming it trusts that module "
        "only.",
    )(command)
    return click.option(
        "--format",
        "document_format",
        metavar="FORMAT",
        help="The workflow file's format (flow, dag, steps …; default: from its suffix).",
    )(command)


def _import_file(text: str, target: str, what: str = "TARGET") -> ModuleType:
    path = Path(text).resolve()
    if not path.is_file():
        state = "is a directory" if path.is_dir() else "does not exist"
        raise TargetError(f"{what} {target!r}: the file {text} ({path}) {state}")
    if path.suffix != ".py":
        raise TargetError(f"{what} {target!r}: {text} is not a .py file; TARGET must be {_FORMS}")
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    if not parts:
        raise TargetError(f"{what} {target!r}: {text} is a package's __init__.py above no package")
    name = ".".join(parts)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    module = _import_module(name, target, what=what)
    found = getattr(module, "__file__", None)
    if found is None or Path(found).resolve() != path:
        raise TargetError(
            f"{what} {target!r}: {text} would be imported as module {name!r}, but that name "
            f"is module {found or '(built in)'}; rename the file"
        )
    return module


def _import_module(name: str, target: str, what: str = "TARGET") -> ModuleType:
    importlib.invalidate_caches()  # the file may be newer than the import system's listing
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise TargetError(
                f"{what} {target!r}: no module named {exc.name!r} (is it installed, or "
                f"in the current directory {os.getcwd()}?)"
            ) from exc
        raise TargetError(
            f"{what} {target!r}: importing module {name!r} failed: {describe_error(exc)}"
        ) from exc
    except Exception as exc:
        raise TargetError(
            f"{what} {target!r}: importing module {name!r} failed: {describe_error(exc)}"
        ) from exc


def _attribute(module: ModuleType, attr: str, target: str) -> Any:
    obj: Any = module
    parts = attr.split(".")
    for index, part in enumerate(parts):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            where = f"module {module.__name__!r} ({getattr(module, '__file__', 'built in')})"
            if index:
                where = f"{'.'.join(parts[:index])} of {where}"
            found = _candidates(module) if index == 0 else f"it is {_kind(obj)}"
            raise TargetError(
                f"TARGET {target!r}: {where} has no attribute {part!r}; {found}"
            ) from None
    return obj


def _candidates(module: ModuleType) -> str:
    """What the module offers that a TARGET could name."""
    workflows, functions = [], []
    for name, value in sorted(vars(module).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, Workflow):
            workflows.append(name)
        elif (
            inspect.isfunction(value)
            and value.__module__ == module.__name__
            and _takes_no_arguments(value)
        ):
            functions.append(name)
    found = []
    if workflows:
        found.append(f"workflows: {', '.join(workflows)}")
    if functions:
        found.append(f"functions taking no arguments: {', '.join(functions)}")
    return "found " + "; ".join(found) if found else "it defines no plait.Workflow"


def _takes_no_arguments(fn: Any) -> bool:
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins): let the call decide
        return True
    return True


def _kind(obj: Any) -> str:
    """``a module.Class`` and, when it says more than that, the object's repr."""
    cls = type(obj)
    name = (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )
    article = "an" if name[0].lower() in "aeiou" else "a"
    text = repr(obj)
    if " object at 0x" in text:
        return f"{article} {name}"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{article} {name} ({text})"


def _as_workflow(obj: Any, target: str) -> Workflow:
    if isinstance(obj, Workflow):
        return obj
    hint = ""
    if callable(getattr(obj, "build", None)):
        hint = "; it has a build() method: name the built workflow (workflow = builder.build())"
    if not callable(obj):
        raise TargetError(
            f"TARGET {target!r} is {_kind(obj)}, not a plait.Workflow or a function "
            f"returning one{hint}"
        )
    if not _takes_no_arguments(obj):
        raise TargetError(
            f"TARGET {target!r} is a callable taking arguments {inspect.signature(obj)}; "
            "it must be a plait.Workflow or a callable taking no arguments that returns one"
        )
    try:
        made = obj()
    except Exception as exc:
        raise TargetError(f"TARGET {target!r}: calling it failed: {describe_error(exc)}") from exc
    if isinstance(made, Workflow):
        return made
    if inspect.iscoroutine(made):
        made.close()
        raise TargetError(
            f"TARGET {target!r} is an async function; name a plain function (or the workflow)"
        )
    hint = ""
    if callable(getattr(made, "build", None)):
        hint = "; it has a build() method: return builder.build()"
    raise TargetError(f"TARGET {target!r} returned {_kind(made)}, not a plait.Workflow{hint}")
