"""The ``team`` executor kind: a whole team, declared as data.

What a workflow document's ``team`` step (YAML steps) or ``team`` node (JSON DAG) becomes:
a node of kind ``team`` whose config names the mode, the participants (each an agent as
data: an executor kind and its config, or the name of a Python object the caller passed)
and the mode's options::

    {"mode": "handoff",
     "participants": [{"name": "triage", "description": "...",
                       "agent": {"kind": "agent", "config": {"model": "..."}}},
                      {"name": "refund", "uses": "refund"}],
     "start": "triage", "handoffs": {"triage": ["refund"]}, "max_rounds": 20}

The node runs the team as a nested workflow (each turn a superstep of the inner run) and
sends its answer: the final message's text (``output: text``, the default: what a step's
output and templates read), the whole :class:`~plait_teams.Conversation`
(``output: conversation``), or ``{<node id>: text}`` (``output: updates``: what a DAG
node's agent returns). A task that is not text is given as its JSON; a mapping with a
``task`` text (a DAG node's context) as that text. A request the team makes (a human's
turn, a handoff that needs the user, a plan review) goes out as a nested workflow's does,
and its answer resumes the team: a steps executor step and a DAG node wait for it.

A group chat's ``manager`` picks the next speaker: ``{model: <llm model>, system: ...,
options: ...}`` asks a model (:class:`~plait_teams.LLMSelector`), ``{uses: <name>}`` or
``{ref: module:attr}`` is a function ``(state) -> name | None``; without one the
participants speak in turn. A Magentic team's ``manager`` keeps its ledgers.

:func:`team_problems` checks a config as data (the modes, each mode's options, handoff
targets and the start agent among the participants), every problem with its JSON path
under the config, so a loader reports each at its position in the document; the kind's
:meth:`TeamKind.check` adds what building the participants reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from plait import ConfigError, Executor, PlaitError
from plait.spi import BuildContext

__all__ = ["MODES", "MODE_OPTIONS", "TeamKind", "team_config_schema", "team_problems"]

#: the team modes a document may declare
MODES = ("group_chat", "magentic", "handoff")
#: the options each mode takes, besides ``mode``, ``participants`` and ``output``
MODE_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "group_chat": ("max_rounds", "termination", "manager"),
    "magentic": ("manager", "max_round_count", "max_stall_count", "max_reset_count", "plan_review"),
    "handoff": ("start", "handoffs", "max_rounds"),
}
#: the keys every team has
COMMON = ("mode", "participants", "output")

_NAME = {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "^[^/]+$"}
_COUNT = {"type": "integer", "minimum": 0, "maximum": 100000}


def team_config_schema() -> dict[str, Any]:
    """The JSON Schema of a ``team`` config (every mode's keys; :func:`team_problems`
    says which a mode takes)."""
    agent = {
        "type": "object",
        "properties": {"kind": {"type": "string", "minLength": 1}, "config": {"type": "object"}},
        "required": ["kind"],
        "additionalProperties": False,
    }
    member = {
        "type": "object",
        "properties": {
            "name": _NAME,
            "description": {"type": "string"},
            "agent": agent,
            "uses": _NAME,
        },
        "required": ["name"],
        "oneOf": [{"required": ["agent"]}, {"required": ["uses"]}],
        "additionalProperties": False,
    }
    manager = {
        "type": "object",
        "properties": {
            "model": {"type": "string", "minLength": 1},
            "system": {"type": "string"},
            "options": {"type": "object"},
            "uses": _NAME,
            "ref": {"type": "string", "pattern": "^[A-Za-z_][\\w.]*:[A-Za-z_][\\w.]*$"},
        },
        "additionalProperties": False,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "team executor (plait-teams)",
        "type": "object",
        "properties": {
            "mode": {"enum": list(MODES)},
            "participants": {"type": "array", "items": member, "minItems": 1},
            "output": {"enum": ["text", "conversation", "updates"]},
            "max_rounds": {**_COUNT, "minimum": 1},
            "termination": {"type": "string", "minLength": 1, "maxLength": 10000},
            "start": _NAME,
            "handoffs": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": _NAME},
            },
            "manager": manager,
            "max_round_count": {**_COUNT, "minimum": 1},
            "max_stall_count": _COUNT,
            "max_reset_count": _COUNT,
            "plan_review": {"type": "boolean"},
        },
        "required": ["mode", "participants"],
        "additionalProperties": False,
    }


def team_problems(config: Any) -> list[tuple[str, str]]:
    """Every problem of a ``team`` config as data, as ``(JSON path under the config,
    message)``: the schema's, then a mode's options it does not take, a participant named
    twice, a start agent or a handoff source or target that is no participant (with the
    names there are), a Magentic team without a manager."""
    from plait_documents import did_you_mean, json_pointer

    from ._ledger import _best_error

    error = _best_error(config, team_config_schema())
    if error is not None:
        return [(json_pointer(error.absolute_path, root=""), error.message)]
    problems: list[tuple[str, str]] = []
    mode = config["mode"]
    allowed = (*COMMON, *MODE_OPTIONS[mode])
    for key in config:
        if key not in allowed:
            takes = ", ".join(MODE_OPTIONS[mode])
            problems.append(
                (f"/{key}", f"a {mode} team has no option {key!r} (its options: {takes})")
            )
    names: list[str] = []
    for index, member in enumerate(config["participants"]):
        if member["name"] in names:
            problems.append(
                (f"/participants/{index}/name", f"two participants are named {member['name']!r}")
            )
        names.append(member["name"])
    listing = ", ".join(names)

    def unknown(path: str, what: str, name: str) -> None:
        did = did_you_mean(name, names)
        problems.append(
            (path, f"{what} {name!r} is not a participant{did} (participants: {listing})")
        )

    if mode == "handoff":
        start = config.get("start")
        if start is not None and start not in names:
            unknown("/start", "the start agent", start)
        for source, targets in (config.get("handoffs") or {}).items():
            if source not in names:
                unknown(f"/handoffs/{source}", "the handoff source", source)
            for index, target in enumerate(targets):
                if target not in names:
                    unknown(f"/handoffs/{source}/{index}", "the handoff target", target)
                elif target == source:
                    problems.append(
                        (f"/handoffs/{source}/{index}", f"{source!r} cannot hand off to itself")
                    )
    if mode == "magentic" and "manager" not in config:
        problems.append(
            (
                "/manager",
                "a magentic team needs a manager: {model: <llm model>}, {ref: module:attr} "
                "or {uses: <name>}",
            )
        )
    return problems


class TeamKind:
    """``team``: a team declared as data (see the module docstring)."""

    @property
    def config_schema(self) -> Mapping[str, Any]:
        """The JSON Schema of the config (:func:`team_config_schema`)."""
        return team_config_schema()

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every problem of ``config``, each at ``/config/<path>``; then what building the
        team reports."""
        from plait_documents import config_error

        problems = team_problems(config)
        if problems:
            return [
                config_error(ctx.node_id, message, f"/config{path}", source=ctx.source)
                for path, message in problems
            ]
        try:
            self.create(config, ctx)
        except ConfigError as exc:
            return [exc]
        except PlaitError as exc:
            return [config_error(ctx.node_id, str(exc), "/config", source=ctx.source)]
        return []

    def capabilities(self, config: Mapping[str, Any], ctx: BuildContext) -> set[Any]:
        """What the participants' kinds need (a model's network, a ref's imports)."""
        from plait_documents import IMPORTS, kind_capabilities, network

        found: set[Any] = set()
        for member in config.get("participants") or []:
            agent = member.get("agent") if isinstance(member, Mapping) else None
            if isinstance(agent, Mapping) and isinstance(agent.get("kind"), str):
                inner = agent.get("config")
                found |= set(
                    kind_capabilities(
                        agent["kind"], inner if isinstance(inner, Mapping) else {}, ctx
                    )
                )
        manager = config.get("manager")
        if isinstance(manager, Mapping) and "model" in manager:
            found.add(network())
        if isinstance(manager, Mapping) and "ref" in manager:
            found.add(IMPORTS)
        return found

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> Executor:
        """The team, as one node that runs it as a nested workflow.

        :raises ConfigError: a participant or the manager does not build (at its path).
        """
        from plait_documents import config_error

        problems = team_problems(config)
        if problems:
            path, message = problems[0]
            raise config_error(ctx.node_id, message, f"/config{path}", source=ctx.source)
        members = {
            member["name"]: self._participant(member, index, ctx)
            for index, member in enumerate(config["participants"])
        }
        builder = self._builder(config, members, ctx)
        return _TeamNode.around(ctx.node_id, builder, config.get("output", "text"))

    def _participant(self, member: Mapping[str, Any], index: int, ctx: BuildContext) -> Any:
        from plait_documents import config_error

        from ._participants import participant

        name = member["name"]
        description = member.get("description", "")
        where = f"/config/participants/{index}"
        if "uses" in member:
            obj = ctx.executors.get(member["uses"])
            if obj is None:
                from plait_documents import did_you_mean

                did = did_you_mean(member["uses"], list(ctx.executors))
                message = (
                    f"participant {name!r} uses {member['uses']!r}, which the caller did not "
                    f"pass (executors=){did}"
                )
                raise config_error(ctx.node_id, message, f"{where}/uses", source=ctx.source)
            return participant(obj, name=name, description=description)
        agent = member["agent"]
        inner = ctx.for_node(name)
        kind = ctx.lookup("executor_kind", agent["kind"], what="executor kind")
        errors = kind.check(dict(agent.get("config") or {}), inner)
        if errors:
            first = errors[0]
            reason = getattr(first, "reason", str(first))
            path = str(getattr(getattr(first, "position", None), "path", "") or "")
            message = f"participant {name!r}: {reason}"
            raise config_error(ctx.node_id, message, f"{where}/agent{path}", source=ctx.source)
        executor = kind.create(dict(agent.get("config") or {}), inner)
        return participant(_callable_of(executor), name=name, description=description)

    def _builder(
        self, config: Mapping[str, Any], members: Mapping[str, Any], ctx: BuildContext
    ) -> Any:
        from plait_documents import config_error

        mode = config["mode"]
        name = ctx.node_id or "team"
        if mode == "handoff":
            from ._handoff import HandoffBuilder

            handoff = HandoffBuilder(name).participants(list(members.values()))
            if "start" in config:
                handoff.with_start_agent(config["start"])
            for source, targets in (config.get("handoffs") or {}).items():
                handoff.add_handoff(source, targets)
            if "max_rounds" in config:
                handoff.with_max_rounds(config["max_rounds"])
            return handoff
        if mode == "magentic":
            from ._magentic import MagenticBuilder

            limits = {
                k: config[k]
                for k in ("max_round_count", "max_stall_count", "max_reset_count")
                if k in config
            }
            magentic = MagenticBuilder(name).participants(list(members.values()))
            magentic.with_manager(self._manager(config["manager"], ctx), **limits)
            if config.get("plan_review"):
                magentic.with_plan_review()
            return magentic
        from ._group_chat import GroupChatBuilder

        chat = GroupChatBuilder(name).participants(list(members.values()))
        manager = config.get("manager")
        if manager is not None and "model" in manager:
            # an LLM picks the next speaker (its ``system`` is the manager's instruction)
            from ._group_chat import LLMSelector, _agent_for

            agent = _agent_for(manager["model"], manager.get("options"))
            chat.with_llm_manager(LLMSelector(agent, instruction=manager.get("system")))
        elif manager is not None:
            # ``uses``/``ref``: a function ``(state) -> name | None`` picks
            chat.with_selector(self._manager(manager, ctx))
        if "max_rounds" in config:
            chat.with_max_rounds(config["max_rounds"])
        if "termination" in config:
            try:
                chat.with_termination(config["termination"])
            except PlaitError as exc:
                message = f"termination: {exc}"
                raise config_error(
                    ctx.node_id, message, "/config/termination", source=ctx.source
                ) from exc
        return chat

    def _manager(self, manager: Mapping[str, Any], ctx: BuildContext) -> Any:
        from plait_documents import config_error

        if "uses" in manager:
            obj = ctx.executors.get(manager["uses"])
            if obj is None:
                message = f"the manager uses {manager['uses']!r}, which the caller did not pass"
                raise config_error(ctx.node_id, message, "/config/manager/uses", source=ctx.source)
            return obj
        if "ref" in manager:
            if not ctx.allow_imports:
                message = (
                    f"the manager {manager['ref']!r} is Python code to import, and this "
                    "document is not trusted to import code"
                )
                raise config_error(ctx.node_id, message, "/config/manager/ref", source=ctx.source)
            from plait.spi import import_ref

            try:
                return import_ref(manager["ref"])
            except Exception as exc:  # what importing it raised, named with its ref
                message = (
                    f"the manager {manager['ref']!r} does not import: {type(exc).__name__}: {exc}"
                )
                raise config_error(
                    ctx.node_id, message, "/config/manager/ref", source=ctx.source
                ) from exc
        from ._magentic_manager import LLMMagenticManager

        model = manager.get("model")
        if not model:
            message = "the manager needs a model (an llm model id) or uses: <name>"
            raise config_error(ctx.node_id, message, "/config/manager", source=ctx.source)
        return LLMMagenticManager(
            model, system=manager.get("system"), options=manager.get("options")
        )


def _callable_of(executor: Executor) -> Any:
    """What :func:`~plait_teams.participant` takes for an executor a kind built: the
    executor itself when it answers prompts (a plait-llm agent), else the function a
    ``python`` kind wrapped."""
    if callable(getattr(executor, "ask", None)):
        return executor
    fn = getattr(executor, "fn", None) or getattr(executor, "function", None)
    if callable(fn):
        return fn
    return executor


class _TeamNode:
    """Makes the node that runs a team as a nested workflow: the task in (a ``str``, a
    conversation, or any JSON value, given as its JSON text: a DAG node's context), the
    answer out."""

    @staticmethod
    def around(node_id: str, builder: Any, output: str) -> Executor:
        import json

        from plait_builders import FunctionNode

        from ._conversation import Conversation
        from ._team import MANAGER, RESULT

        def task(given: Any) -> Any:
            if isinstance(given, (str, Conversation)):
                return given
            if isinstance(given, dict) and isinstance(given.get("task"), str):
                return given["task"]
            return json.dumps(given, ensure_ascii=False, default=str)

        def answer(conversation: Conversation) -> Any:
            if output == "conversation":
                return conversation
            last = conversation.last
            text = last.text if last is not None else ""
            return {node_id: text} if output == "updates" else text

        sent = {"conversation": Conversation, "updates": dict}.get(output, str)
        inner = builder.to_builder()
        start = FunctionNode("task", task, input_type=Any, output_type=Any, emit="send")
        inner.add_edge(start, MANAGER).set_start(start)
        end = FunctionNode(
            "answer", answer, input_type=Conversation, output_type=sent, emit="yield"
        )
        inner.add_edge(RESULT, end)
        node: Executor = inner.build().as_executor(node_id)
        return node
