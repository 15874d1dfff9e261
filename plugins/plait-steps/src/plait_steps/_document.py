"""A steps document, read into :class:`Step` records with every problem found at once.

Reading checks the shape (allowed keys per place, types, ids), then the names: agent
names, step ids referenced by ``goto`` and by ``$steps.<id>`` in templates, each with
"did you mean …?".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs
from plait import ConfigError, PlaitError
from plait.spi import record_repr
from plait_documents import did_you_mean

from ._yaml import Y, position

if TYPE_CHECKING:
    from plait_documents import AgentDefinition

__all__ = ["Document", "Step", "read"]

DEFAULT_LOOP_LIMIT = 100

TOP_KEYS = ("workflow", "name", "version", "agents", "budget")
WORKFLOW_KEYS = ("steps", "max_loop_iterations", "overrides")
OVERRIDE_KEYS = ("max_loop_iterations",)
STEP_KEYS: dict[str, tuple[Any, ...]] = {
    "agent": ("id", "type", "name", "instruction", "input", "config", "retry", "timeout"),
    "executor": ("id", "type", "kind", "input", "config", "retry", "timeout"),
    "condition": ("id", "type", "name", "condition", True, False),
    "parallel": ("id", "type", "steps", "retry"),
    "foreach": ("id", "type", "items", "max_concurrency", "steps", "retry"),
    "team": ("id", "type", "mode", "participants", "options", "input", "retry", "timeout"),
}
#: how many items of a foreach run each body step at once, unless it says
DEFAULT_CONCURRENCY = 16
GOTO_KEYS = ("goto",)
RETRY_KEYS = ("max_attempts", "backoff", "delay", "max_delay", "on")

_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,99}$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
#: ``$steps.<id>`` or ``$steps["<id>"]`` inside a template or a condition; the quoted id is
#: bounded (ids are at most 100 characters), so an unclosed ``$steps["`` never makes the
#: search scan the rest of the text again (which made it quadratic)
STEP_REF = re.compile(
    r"\$steps\s*(?:\.\s*([A-Za-z_][A-Za-z0-9_]*)"
    r"|\[\s*(?:\"([^\"\n]{0,200})\"|'([^'\n]{0,200})')\s*\])"
)


def step_ref(match: re.Match[str]) -> str:
    """The step id a :data:`STEP_REF` match names."""
    return match.group(1) or match.group(2) or match.group(3) or ""


#: ``$item`` or ``$index``: the current item of the innermost foreach, and its position
ITEM_REF = re.compile(r"\$(item|index)\b")


@attrs.define(eq=False, repr=False)
class Step:
    """One step of the document, as written (ids filled in)."""

    __repr__ = record_repr

    id: str
    type: str
    y: Y
    explicit_id: bool = False
    name: str | None = None
    instruction: Y | None = None
    input: Y | None = None
    items: Y | None = None
    max_concurrency: int | None = None
    kind: str | None = None
    config: dict[str, Any] | None = None
    condition: Y | None = None
    true: list[Step] = attrs.field(factory=list)
    false: list[Step] = attrs.field(factory=list)
    steps: list[Step] = attrs.field(factory=list)
    goto: Any = None
    retry: dict[str, Any] | None = None
    timeout: float | None = None
    #: a team step's ``mode``, its participants' names (each with its YAML value, for
    #: positions) and its ``options`` (see :meth:`_Reader.step_team`)
    mode: Y | None = None
    participants: list[Y] = attrs.field(factory=list)
    options: Y | None = None

    def walk(self) -> Iterator[Step]:
        """This step and every step inside it, in document order."""
        yield self
        for child in (*self.true, *self.false, *self.steps):
            yield from child.walk()


@attrs.define(repr=False)
class Document:
    """The whole document: its steps and its own ``agents:`` section (each agent's
    definition, and the YAML value it was read from, for positions)."""

    __repr__ = record_repr

    name: str | None
    steps: list[Step]
    loop_limit: int
    lines: list[str]
    agents: dict[str, AgentDefinition] = attrs.field(factory=dict)
    agent_values: dict[str, Y] = attrs.field(factory=dict)
    #: steps of an unknown type (already reported): their ids and references still count
    dropped: list[Step] = attrs.field(factory=list)
    #: the document's ``version:``, the workflow's version (``None``: unversioned)
    version: int | None = None


def _key(key: Any) -> str:
    if key is True or key is False:
        return str(key).lower()
    return str(key)


class _Reader:
    def __init__(self, source: str, lines: list[str], executors: Any, kinds: list[str]) -> None:
        self.source = source
        self.lines = lines
        self.problems: list[ConfigError] = []
        self.counter = 0
        self.executors = executors
        self.kinds = kinds
        #: steps of an unknown type: reported, and kept for the names they hold
        self.dropped: list[Step] = []
        self.version: int | None = None

    def problem(self, message: str, line: int, column: int) -> None:
        self.problems.append(ConfigError(message, position(self.source, self.lines, line, column)))

    def at(self, y: Y, message: str) -> None:
        self.problem(message, y.line, y.column)

    def keys(self, y: Y, allowed: tuple[Any, ...], where: str) -> bool:
        """Report unknown keys of mapping ``y``; False when ``y`` is not a mapping."""
        if not isinstance(y.value, dict):
            self.at(y, f"{where} must be a mapping, got {_shape(y.value)}")
            return False
        shown = ", ".join(_key(k) for k in allowed)
        names = {_key(k) for k in allowed}
        for key in y.value:
            if type(key) not in (str, bool) or _key(key) not in names:
                line, column = y.keys[key]
                did = did_you_mean(_key(key), [_key(k) for k in allowed])
                self.problem(
                    f"unknown key {_key(key)!r} in {where}; allowed here: {shown}{did}",
                    line,
                    column,
                )
        return True

    def string(self, parent: Y, key: Any, where: str, required: bool = False) -> str | None:
        y = parent.value.get(key)
        if y is None:
            if required:
                self.at(parent, f"{where} needs {_key(key)!r}")
            return None
        if not isinstance(y.value, str) or not y.value:
            self.at(
                y, f"{_key(key)!r} of {where} must be a non-empty string, got {_shape(y.value)}"
            )
            return None
        return y.value

    # -- the document -------------------------------------------------------------------

    def document(self, root: Y | None) -> tuple[str | None, list[Step], int]:
        if root is None:
            self.problem("the document is empty; it needs a top-level 'workflow:'", 1, 1)
            return None, [], DEFAULT_LOOP_LIMIT
        if isinstance(root.value, dict) and "flow" in root.value and "workflow" not in root.value:
            from plait_documents import spell

            line, column = root.keys.get("flow", (root.line, root.column))
            flag = spell("format='flow'", "--format flow")
            self.problem(
                "a top-level 'flow:' makes this a flow document, not YAML steps: name the "
                f"file *.flow.yaml, or pass {flag}",
                line,
                column,
            )
            return None, [], DEFAULT_LOOP_LIMIT
        if not self.keys(root, TOP_KEYS, "the document"):
            return None, [], DEFAULT_LOOP_LIMIT
        name = self.string(root, "name", "the document")
        self.version = self.workflow_version(root)
        self.agents(root.value.get("agents"))
        workflow = root.value.get("workflow")
        if workflow is None:
            self.at(root, "the document needs a top-level 'workflow:' (a list of steps)")
            return name, [], DEFAULT_LOOP_LIMIT
        limit = DEFAULT_LOOP_LIMIT
        steps_y: Y | None = workflow
        if isinstance(workflow.value, dict):
            self.keys(workflow, WORKFLOW_KEYS, "'workflow'")
            limit = self.limit(workflow, limit)
            overrides = workflow.value.get("overrides")
            if overrides is not None and self.keys(overrides, OVERRIDE_KEYS, "'overrides'"):
                limit = self.limit(overrides, limit)
            steps_y = workflow.value.get("steps")
            if steps_y is None:
                self.at(workflow, "'workflow' needs 'steps' (a list of steps)")
                return name, [], limit
        assert steps_y is not None
        steps = self.sequence(steps_y, "'workflow'")
        if not steps and isinstance(steps_y.value, list):
            self.at(steps_y, "the workflow has no steps")
        return name, steps, limit

    def workflow_version(self, root: Y) -> int | None:
        """The document's ``version:`` (the workflow's version, what its runs' checkpoints
        record and migrations go from and to), a positive integer, or ``None``."""
        y = root.value.get("version")
        if y is None:
            return None
        if isinstance(y.value, bool) or not isinstance(y.value, int) or y.value < 1:
            self.at(
                y, f"'version' of the document must be a positive integer, got {_shape(y.value)}"
            )
            return None
        return y.value

    def agents(self, y: Y | None) -> None:
        """The document's ``agents:`` section, each problem at its own line and column."""
        self.agent_definitions: dict[str, AgentDefinition] = {}
        self.agent_values: dict[str, Y] = {}
        if y is None:
            return
        from plait_documents import read_agents  # only a document with an agents: section

        found, problems = read_agents(plain(y))
        for path, message in problems:
            at = _at_path(y, path)
            self.at(at, f"agents{path.replace('/', '.') if path else ''}: {message}")
        self.agent_definitions = found
        if isinstance(y.value, dict):
            self.agent_values = {_key(k): v for k, v in y.value.items()}

    def limit(self, parent: Y, default: int) -> int:
        y = parent.value.get("max_loop_iterations")
        if y is None:
            return default
        value = y.value
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.at(y, f"max_loop_iterations must be an integer >= 1, got {value!r}")
            return default
        return value

    def sequence(self, y: Y, where: str) -> list[Step]:
        if not isinstance(y.value, list):
            self.at(y, f"{where} must be a list of steps, got {_shape(y.value)}")
            return []
        steps = []
        for item in y.value:
            step = self.step(item)
            if step is not None:
                steps.append(step)
        return steps

    def step(self, y: Y) -> Step | None:
        self.counter += 1
        auto = f"step-{self.counter}"
        if not isinstance(y.value, dict):
            self.at(y, f"a step must be a mapping, got {_shape(y.value)}")
            return None
        if "goto" in y.value and "type" not in y.value:
            self.keys(y, GOTO_KEYS, "a goto step")
            target = y.value["goto"].value
            if isinstance(target, bool) or not isinstance(target, (str, int)):
                self.at(y.value["goto"], f"goto needs a step id or index, got {target!r}")
                target = None
            return Step(id=auto, type="goto", y=y, goto=target)
        type_y = y.value.get("type")
        kind = type_y.value if type_y is not None else None
        if not isinstance(kind, str) or kind not in STEP_KEYS:
            where = type_y if type_y is not None else y
            allowed = ", ".join(STEP_KEYS)
            did = did_you_mean(kind, list(STEP_KEYS))
            got = "no 'type'" if type_y is None else f"type {kind!r}"
            self.at(where, f"a step with {got}; types: {allowed} (or {{goto: <step id>}}){did}")
            # still known by its id, and its templates' references still checked
            given = y.value.get("id")
            dropped = Step(
                id=given.value if given is not None and isinstance(given.value, str) else auto,
                type="unknown",
                y=y,
            )
            for key in ("instruction", "input", "condition"):
                found = y.value.get(key)
                if found is not None and isinstance(found.value, str):
                    setattr(dropped, key, found)
            self.dropped.append(dropped)
            return None
        self.keys(y, STEP_KEYS[kind], f"a {kind} step")
        step = Step(id=auto, type=kind, y=y)
        given = self.string(y, "id", f"a {kind} step")
        if given is not None:
            if _ID.match(given):
                step.id, step.explicit_id = given, True
            else:
                self.at(
                    y.value["id"],
                    f"step id {given!r} must start with a letter or '_' and hold only letters, "
                    "digits, '_' and '-'",
                )
        getattr(self, f"step_{kind}")(step, y)
        return step

    def step_agent(self, step: Step, y: Y) -> None:
        step.name = self.string(y, "name", f"agent step {step.id!r}", required=True)
        step.instruction = self.template(y, "instruction", step)
        step.input = self.template(y, "input", step)
        step.config = self.json_map(y, "config")
        self.policies(step, y)

    def step_executor(self, step: Step, y: Y) -> None:
        step.kind = self.string(y, "kind", f"executor step {step.id!r}", required=True)
        step.input = self.template(y, "input", step)
        step.config = self.json_map(y, "config") or {}
        if step.kind is not None and step.kind not in self.kinds:
            did = did_you_mean(step.kind, self.kinds)
            self.at(
                y.value["kind"],
                f"no executor kind {step.kind!r}; installed: {', '.join(self.kinds)}{did}",
            )
        self.policies(step, y)

    def step_team(self, step: Step, y: Y) -> None:
        """A team (plait-teams): ``mode``, ``participants`` (agent names, checked where
        names are resolved) and ``options`` (the mode's, checked by plait-teams when the
        document has a team)."""
        where = f"team step {step.id!r}"
        if self.string(y, "mode", where, required=True) is not None:
            step.mode = y.value["mode"]
        participants = y.value.get("participants")
        if participants is None:
            self.at(y, f"{where} needs 'participants' (a list of agent names)")
        elif not isinstance(participants.value, list) or not participants.value:
            self.at(participants, f"'participants' of {where} is a non-empty list of agent names")
        else:
            for item in participants.value:
                if isinstance(item.value, str) and item.value:
                    step.participants.append(item)
                else:
                    self.at(
                        item,
                        f"a participant of {where} is an agent's name, got {_shape(item.value)}",
                    )
        options = y.value.get("options")
        if options is not None and not isinstance(options.value, dict):
            self.at(options, f"'options' of {where} must be a mapping, got {_shape(options.value)}")
        else:
            step.options = options
        step.input = self.template(y, "input", step)
        self.policies(step, y)

    def step_condition(self, step: Step, y: Y) -> None:
        step.name = self.string(y, "name", f"condition step {step.id!r}")
        step.condition = self.template(y, "condition", step)
        if step.condition is None and "condition" not in y.value:
            self.at(y, f"condition step {step.id!r} needs 'condition'")
        for branch in (True, False):
            found = [k for k in y.value if type(k) in (str, bool) and _key(k) == _key(branch)]
            if len(found) > 1:
                self.at(y, f"condition step {step.id!r} gives {_key(branch)!r} twice")
            if found:
                steps = self.sequence(y.value[found[0]], f"the {_key(branch)!r} branch")
                setattr(step, _key(branch), steps)
        if not step.true and not step.false:
            self.at(y, f"condition step {step.id!r} needs a 'true' or a 'false' branch")

    def step_parallel(self, step: Step, y: Y) -> None:
        if "steps" not in y.value:
            self.at(y, f"parallel step {step.id!r} needs 'steps'")
        else:
            step.steps = self.sequence(y.value["steps"], f"parallel step {step.id!r}")
            if not step.steps and isinstance(y.value["steps"].value, list):
                self.at(y.value["steps"], f"parallel step {step.id!r} has no steps")
        self.policies(step, y)

    def step_foreach(self, step: Step, y: Y) -> None:
        if "items" not in y.value:
            self.at(y, f"foreach step {step.id!r} needs 'items' (an expression giving a list)")
        else:
            items = y.value["items"]
            if isinstance(items.value, list):
                step.items = items  # a literal list
            else:
                step.items = self.template(y, "items", step)
        limit = y.value.get("max_concurrency")
        step.max_concurrency = DEFAULT_CONCURRENCY
        if limit is not None:
            n = limit.value
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                self.at(limit, f"max_concurrency must be an integer >= 1, got {n!r}")
            else:
                step.max_concurrency = n
        if "steps" not in y.value:
            self.at(y, f"foreach step {step.id!r} needs 'steps' (the steps run per item)")
        else:
            step.steps = self.sequence(y.value["steps"], f"foreach step {step.id!r}")
            if not step.steps and isinstance(y.value["steps"].value, list):
                self.at(y.value["steps"], f"foreach step {step.id!r} has no steps")
        self.policies(step, y)

    def template(self, y: Y, key: str, step: Step) -> Y | None:
        found: Y | None = y.value.get(key)
        if found is None:
            return None
        if not isinstance(found.value, str):
            if isinstance(found.value, bool) and key == "condition":
                return found
            self.at(
                found, f"{key!r} of step {step.id!r} must be a string, got {_shape(found.value)}"
            )
            return None
        return found

    def json_map(self, y: Y, key: str) -> dict[str, Any] | None:
        found = y.value.get(key)
        if found is None:
            return None
        if not isinstance(found.value, dict):
            self.at(found, f"{key!r} must be a mapping, got {_shape(found.value)}")
            return None
        return plain(found)  # type: ignore[no-any-return]

    def policies(self, step: Step, y: Y) -> None:
        retry = y.value.get("retry")
        if retry is not None and self.keys(retry, RETRY_KEYS, f"'retry' of step {step.id!r}"):
            step.retry = self.retry(retry)
        timeout = y.value.get("timeout")
        if timeout is not None:
            step.timeout = self.duration(timeout, "timeout")

    def retry(self, y: Y) -> dict[str, Any] | None:
        values = y.value
        policy: dict[str, Any] = {"max_attempts": 0, "backoff": "fixed", "delay": 1.0}
        attempts = values.get("max_attempts")
        if attempts is not None:
            n = attempts.value
            if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > 100:
                self.at(attempts, f"retry.max_attempts must be an integer 0..100, got {n!r}")
            else:
                policy["max_attempts"] = n
        backoff = values.get("backoff")
        if backoff is not None:
            if backoff.value not in ("fixed", "exponential"):
                self.at(
                    backoff,
                    f"retry.backoff must be 'fixed' or 'exponential', got {backoff.value!r}",
                )
            else:
                policy["backoff"] = backoff.value
        for key in ("delay", "max_delay"):
            if key in values:
                seconds = self.duration(values[key], f"retry.{key}")
                if seconds is not None:
                    policy[key] = seconds
        on = values.get("on")
        patterns: list[str] = []
        if on is not None:
            items = on.value if isinstance(on.value, list) else [on]
            for item in items:
                if not isinstance(item.value, str) or not item.value:
                    self.at(item, f"retry.on holds error patterns (strings), got {item.value!r}")
                    continue
                try:
                    re.compile(item.value)
                except re.error as exc:
                    self.at(
                        item, f"retry.on pattern {item.value!r} is not a regular expression: {exc}"
                    )
                    continue
                patterns.append(item.value)
        policy["on"] = patterns
        return policy

    def duration(self, y: Y, what: str) -> float | None:
        value = y.value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
        match = _DURATION.match(value) if isinstance(value, str) else None
        if match is None:
            self.at(
                y,
                f"{what} must be a duration such as 10ms, 1s, 2m or a number of seconds, "
                f"got {value!r}",
            )
            return None
        return float(match.group(1)) * _UNITS[match.group(2)]


def _at_path(y: Y, path: str) -> Y:
    """The value at JSON ``path`` under ``y`` (as deep as it goes); a key's own position
    for a key that is there."""
    for part in [p for p in path.split("/") if p]:
        if not isinstance(y.value, dict):
            break
        match = next((k for k in y.value if _key(k) == part), None)
        if match is None:
            break
        if part == path.rsplit("/", 1)[-1] and match in y.keys:
            line, column = y.keys[match]
            return Y(None, line, column)
        y = y.value[match]
    return y


def plain(y: Y) -> Any:
    """The JSON value of ``y`` (keys as strings)."""
    if isinstance(y.value, dict):
        return {_key(k): plain(v) for k, v in y.value.items()}
    if isinstance(y.value, list):
        return [plain(v) for v in y.value]
    return y.value


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"[:80]


def check_agent_configs(
    doc: Document, manager: Any, source: str, *, allow_imports: bool = False
) -> list[PlaitError]:
    """The document's agents, checked by the kinds that build them, each problem at the
    line and column of the key it is about."""
    from plait_documents import check_agents

    agents = doc.agents
    problems: list[PlaitError] = []
    for path, message in check_agents(agents, manager, source, allow_imports=allow_imports):
        name, _, rest = path.lstrip("/").partition("/")
        value = doc.agent_values.get(name)
        if value is None:
            continue
        at = _at_path(value, "/" + rest) if rest else value
        problems.append(ConfigError(message, position(source, doc.lines, at.line, at.column)))
    return problems


def read(
    root: Y | None, lines: list[str], source: str, executors: Any, kinds: list[str]
) -> tuple[Document, list[PlaitError]]:
    """The document and every shape problem in it."""
    reader = _Reader(source, lines, executors, kinds)
    name, steps, limit = reader.document(root)
    doc = Document(name, steps, limit, lines)
    doc.agents = getattr(reader, "agent_definitions", {})
    doc.agent_values = getattr(reader, "agent_values", {})
    doc.dropped = reader.dropped
    doc.version = getattr(reader, "version", None)
    return doc, list(reader.problems)
