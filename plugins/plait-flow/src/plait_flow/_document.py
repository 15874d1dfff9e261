"""A flow as a YAML document: ``flow:`` (the flow text) and ``agents:`` (its agents).

.. code-block:: yaml

    agents:
      researcher: {model: gpt-4o-mini, instruction: "Research: {{ input }}"}
      writer: {ref: my_agents:writer}
    flow: researcher -> [analyzer, summarizer] -> writer

The flow text is compiled where it stands: every line of the document outside it is
blanked, so each problem of the flow is at the document's own line and column (a flow
under ``flow: |`` included). The ``agents:`` section has the schema every format shares
(:func:`plait_documents.read_agents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from plait import LoadError, PlaitError, SourcePosition
from plait_documents import AgentDefinition, check_agents, did_you_mean, read_agents

from ._parser import FlowError

__all__ = ["FlowDocument", "is_document", "read_document"]

#: the keys of a flow document
KEYS = ("flow", "agents", "name", "version", "merge", "budget")


class FlowDocument:
    """What a flow document holds: the flow text (padded to the document's positions), its
    agents, and the options it sets (``name``, ``merge``)."""

    def __init__(
        self,
        text: str,
        agents: dict[str, AgentDefinition],
        declared: list[str],
        options: dict[str, Any],
        problems: list[PlaitError],
    ) -> None:
        self.text = text
        self.agents = agents
        self.declared = declared
        self.options = options
        #: the problems of the document's own parts (its agents, its keys)
        self.problems = problems
        #: the run options it sets (``budget``), for the spec's ``options``
        self.run_defaults: dict[str, Any] = {}


def is_document(text: str) -> bool:
    """Whether ``text`` is a YAML mapping with a top-level ``flow:`` key."""
    return any(line.startswith("flow:") for line in text.split("\n", 400)[:400])


def _position(source: str, lines: list[str], line: int, column: int) -> SourcePosition:
    text = lines[line - 1] if 0 < line <= len(lines) else None
    return SourcePosition(source=source, line=line, column=column, text=text)


def read_document(
    text: str, source: str, manager: Any, *, allow_imports: bool = False
) -> FlowDocument:
    """The document's parts.

    :raises LoadError: it is not YAML, or not a mapping with ``flow:``. The problems of
        its keys and agents are in :attr:`FlowDocument.problems`, each at its line and
        column, to be reported with the flow's own.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    lines = text.split("\n")
    yaml = YAML(typ="rt", pure=True)
    try:
        root = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else 1
        column = mark.column + 1 if mark is not None else 1
        problem = FlowError(f"not YAML: {exc.problem}", _position(source, lines, line, column))
        raise LoadError([problem], source=source) from None
    except YAMLError as exc:
        raise LoadError(
            [FlowError(f"not YAML: {exc}", _position(source, lines, 1, 1))], source=source
        ) from None
    problems: list[PlaitError] = []
    if not isinstance(root, Mapping) or "flow" not in root:
        raise LoadError(
            [
                FlowError(
                    "a flow document is a mapping with 'flow:'", _position(source, lines, 1, 1)
                )
            ],
            source=source,
        )

    def at(mapping: Any, key: Any, value: bool = False) -> SourcePosition:
        try:
            line, column = mapping.lc.value(key) if value else mapping.lc.key(key)
        except (AttributeError, KeyError, TypeError):
            line, column = 0, 0
        return _position(source, lines, line + 1, column + 1)

    for key in root:
        if key not in KEYS:
            did = did_you_mean(key, KEYS)
            problems.append(
                FlowError(
                    f"unknown key {key!r} in a flow document{did} (keys: {', '.join(KEYS)})",
                    at(root, key),
                )
            )
    flow = root["flow"]
    padded = ""
    if not isinstance(flow, str) or not flow.strip():
        problems.append(FlowError("'flow' is the flow text, like 'a -> b'", at(root, "flow")))
    else:
        line, column = cast(Any, root).lc.value("flow")
        padded = _padded(lines, line, column, flow)
    raw_agents = root.get("agents")
    agents, agent_problems = read_agents(_plain(raw_agents))
    for path, message in [
        *agent_problems,
        *check_agents(agents, manager, source, allow_imports=allow_imports),
    ]:
        problems.append(
            FlowError(
                f"agents{path.replace('/', '.')}: {message}", _at_path(raw_agents, path, at, root)
            )
        )
    options: dict[str, Any] = {}
    for key in ("name", "merge"):
        if key in root:
            if isinstance(root[key], str) and root[key]:
                options[key] = root[key]
            else:
                problems.append(
                    FlowError(f"{key!r} must be a non-empty string", at(root, key, True))
                )
    if "version" in root:  # the workflow's version: what its runs' checkpoints record
        version = root["version"]
        if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
            options["version"] = version
        else:
            problems.append(
                FlowError(
                    f"'version' must be a positive integer, got {version!r:.40}",
                    at(root, "version", True),
                )
            )
    declared = [str(k) for k in raw_agents] if isinstance(raw_agents, Mapping) else []
    document = FlowDocument(padded, agents, declared, options, problems)
    from plait_documents import DOCUMENT_RUN_OPTIONS, check_run_option

    for key in DOCUMENT_RUN_OPTIONS:  # the run's budget: checked, then kept in the spec
        if root.get(key) is None:
            continue
        value = _plain(root[key])
        said = check_run_option(key, value, manager)
        if said is None:
            document.run_defaults[key] = value
            continue
        named = said.split("; known:")[0]  # at the field the message names, else the section
        field = [k for k in value if f" {k}" in named] if isinstance(value, Mapping) else []
        where = at(root[key], field[0]) if field else at(root, key, True)
        problems.append(FlowError(said, where))
    return document


def _at_path(section: Any, path: str, at: Any, root: Any) -> SourcePosition:
    """The position of JSON ``path`` under the ``agents:`` section (a key's own)."""
    mapping, key = root, "agents"
    node = section
    for part in [p for p in path.split("/") if p]:
        if not isinstance(node, Mapping):
            break
        match = next((k for k in node if str(k) == part), None)
        if match is None:
            break
        mapping, key, node = node, match, node[match]
    position: SourcePosition = at(mapping, key)
    return position


def _plain(value: Any) -> Any:
    """ruamel's round-trip containers as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _padded(lines: list[str], line: int, column: int, value: str) -> str:
    """The document with every character outside the flow text blanked, so the flow
    parser's lines and columns are the document's. ``line``/``column`` (0-based) are
    where the value starts: a block scalar's ``|`` or ``>``, or the scalar itself."""
    out = [""] * len(lines)
    head = lines[line][column:] if line < len(lines) else ""
    if head[:1] in ("|", ">"):
        # the block's lines follow, as written: their indentation is spaces already
        count = len(value.rstrip("\n").split("\n"))
        taken = 0
        index = line + 1
        while index < len(lines) and taken < count:
            out[index] = lines[index]
            if lines[index].strip() or taken:
                taken += 1
            index += 1
        return "\n".join(out)
    quoted = head[:1] in ("'", '"')
    start = column + (1 if quoted else 0)
    row = lines[line]
    end = start + len(value) if quoted else len(row)
    out[line] = " " * start + row[start:end]
    return "\n".join(out)
