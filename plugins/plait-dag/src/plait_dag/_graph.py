"""Seed 001's validation rules, and those of its extensions, over a document's graph.

Each rule reports every offending node or connection at its JSON path, with the names
that exist; the checks run on whatever part of the document is well-formed, so a schema
problem elsewhere does not hide them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from plait import PlaitError, SourcePosition
from plait.spi import BuildContext
from plait_documents import did_you_mean

from .errors import DagDocumentError

__all__ = ["Connection", "Node", "check_graph"]


@attrs.frozen
class Node:
    """A node as the document gives it (``index``: its place in ``nodes``)."""

    index: int
    id: str
    agent_name: str | None = None
    is_entry: bool = False
    is_exit: bool = False
    skip_condition: str | None = None
    join: str | None = None
    workflow: str | None = None
    #: a team node's ``team`` (plait-teams): its mode, participants and options, as given
    team: Mapping[str, Any] | None = None

    @property
    def where(self) -> str:
        return f"/nodes/{self.index}"


@attrs.frozen
class Connection:
    """A connection as the document gives it (``index``: its place in ``connections``)."""

    index: int
    source_id: str
    target_id: str
    context_passed: tuple[str, ...] | None = None
    condition: str | None = None
    parallel: bool = False
    max_iterations: int | None = None

    @property
    def where(self) -> str:
        return f"/connections/{self.index}"

    @property
    def is_loop(self) -> bool:
        return self.max_iterations is not None


class _Problems:
    def __init__(self, source: str) -> None:
        self.source = source
        self.found: list[DagDocumentError] = []

    def add(self, path: str, message: str) -> None:
        self.found.append(DagDocumentError(message, SourcePosition(source=self.source, path=path)))


def check_graph(
    nodes: Sequence[Node], connections: Sequence[Connection], ctx: BuildContext
) -> list[DagDocumentError]:
    """Every rule-breaking node and connection, at its JSON path."""
    problems = _Problems(ctx.source)
    by_id: dict[str, Node] = {}
    for node in nodes:
        if node.id in by_id:
            problems.add(
                f"{node.where}/id",
                f"duplicate node id {node.id!r} (first at {by_id[node.id].where})",
            )
        else:
            by_id[node.id] = node
    _entries_and_exits(nodes, problems)
    _agents(nodes, ctx, problems)
    valid = _known_ends(connections, by_id, problems)
    _connection_rules(valid, by_id, problems)
    forward = [c for c in valid if not c.is_loop]
    _cycles(by_id, forward, problems)
    _loops(valid, forward, problems)
    _reachable(nodes, valid, problems)
    _forks_meet_joins(valid, forward, by_id, problems)
    return problems.found


def _entries_and_exits(nodes: Sequence[Node], problems: _Problems) -> None:
    entries = [n for n in nodes if n.is_entry]
    if not entries and nodes:
        problems.add(
            "/nodes",
            'no entry node: mark exactly one node with "is_entry": true '
            f"(nodes: {_names(n.id for n in nodes)})",
        )
    for extra in entries[1:]:
        problems.add(
            f"{extra.where}/is_entry",
            f'a second entry node {extra.id!r}: exactly one node may have "is_entry": true '
            f"(the first is {entries[0].id!r} at {entries[0].where})",
        )
    if not any(n.is_exit for n in nodes) and nodes:
        problems.add("/nodes", 'no exit node: mark at least one node with "is_exit": true')
    if not nodes:
        problems.add("/nodes", "the workflow has no nodes")
    for node in nodes:
        if node.join is not None and node.is_entry:
            problems.add(
                f"{node.where}/join",
                f"entry node {node.id!r} cannot be a join: the run's input is not a set of "
                "parallel branches",
            )


def _resolves(name: str, ctx: BuildContext) -> bool:
    """Whether an agent name resolves: through the agent names (``executors=``, the
    document's ``agents:``, plugins' agents, ``--agents``), else as a published fragment
    or an executor kind used with an empty config."""
    if ctx.agents.find(name) is not None or ctx.agents.is_declared(name):
        return True
    return name in ctx.names and name != "dag.node"


def _answers_text(name: str, ctx: BuildContext) -> bool:
    """Whether ``name`` is an LLM agent declared without ``structured_output``."""
    found = ctx.agents.find(name)
    definition = found.definition if found is not None else None
    return (
        definition is not None
        and definition.kind == "agent"
        and (definition.structured_output is None)
    )


def _misfit(name: str, ctx: BuildContext) -> str | None:
    """Why the Python agent ``name`` cannot be a DAG agent by its annotations, or None.

    A DAG agent takes the run context (``dict[str, Any]``) and returns a dict of updates
    (or None). The edge check of every front-end (``plait_converters.is_assignable``)
    compares that contract with the agent's message parameter and return annotation, so a
    plain function whose types cannot fit is refused here, at the node, not when it runs.
    Unannotated parameters and returns (``Any``) fit.
    """
    found = ctx.agents.find(name)
    if found is None or found.obj is None:
        return None  # data (an agents: entry, a kind): its kind checks it when built
    from plait.spi import as_executor, type_name
    from plait_converters import is_assignable

    try:
        agent = as_executor(found.obj, name, what=f"agent {name!r}")
    except PlaitError:
        return None  # reported when the node is built, with the reason
    if agent.input_types and not any(
        is_assignable(_CONTEXT, t) or is_assignable(t, Mapping[str, Any]) for t in agent.input_types
    ):
        takes = " | ".join(type_name(t) for t in agent.input_types)
        return (
            f"agent {name!r} takes {takes}, but a DAG node gives its agent the run context "
            f"as a {type_name(_CONTEXT)}"
        )
    returns = [
        t for t in agent.output_types if t is not Any and not is_assignable(t, Mapping[str, Any])
    ]
    if returns:
        sent = " | ".join(type_name(t) for t in returns)
        return (
            f"agent {name!r} returns {sent}, but a DAG node merges what its agent returns "
            f"into the run context: a {type_name(_CONTEXT)} of updates (or None)"
        )
    return None


#: what a DAG agent receives, and what it returns
_CONTEXT = dict[str, Any]


def _agents(nodes: Sequence[Node], ctx: BuildContext, problems: _Problems) -> None:
    names = sorted(ctx.names - {"dag.node"})
    strategies: list[str] = []
    if ctx.manager is not None:
        strategies = list(ctx.manager.registry("merge_strategy").names())
    for node in nodes:
        # node ids and agent names are separate namespaces: id greeter, agent greeter
        if node.team is not None:
            _team(node, ctx, problems)
        elif node.agent_name is not None and node.workflow is not None:
            problems.add(
                f"{node.where}/workflow",
                f"node {node.id!r} has both agent_name and workflow; give one of them",
            )
        elif node.agent_name is not None and not _resolves(node.agent_name, ctx):
            problems.add(
                f"{node.where}/agent_name",
                ctx.agents.unknown(node.agent_name, extra=names),
            )
        elif node.agent_name is not None and _answers_text(node.agent_name, ctx):
            problems.add(
                f"{node.where}/agent_name",
                f"agent {node.agent_name!r} is an LLM agent that answers text, but a DAG agent "
                "returns a dict of updates to the context: give it a structured_output (the "
                "JSON Schema of the updates)",
            )
        elif node.agent_name is not None and (why := _misfit(node.agent_name, ctx)):
            problems.add(f"{node.where}/agent_name", f"node {node.id!r}: {why}")
        elif node.agent_name is None and node.workflow is None and node.join is None:
            problems.add(
                node.where,
                f"node {node.id!r} has no agent_name (or workflow): say which agent runs it",
            )
        if node.join is not None and strategies and node.join not in strategies:
            hint = did_you_mean(node.join, strategies)
            problems.add(
                f"{node.where}/join",
                f"unknown merge strategy {node.join!r}{hint} (installed: {_names(strategies)})",
            )


def team_config(node: Node, ctx: BuildContext) -> dict[str, Any]:
    """The ``team`` executor kind's config of a team node (plait-teams): its options, its
    mode and its participants, each resolved as an agent name is (an agent as data, or a
    Python object the caller passed: ``uses``)."""
    team = node.team or {}
    members: list[dict[str, Any]] = []
    for name in team.get("participants") or []:
        member: dict[str, Any] = {"name": name}
        found = ctx.agents.find(name)
        if found is not None and found.definition is not None:
            member["agent"] = found.definition.to_dict()
        else:
            member["uses"] = name
        members.append(member)
    options = team.get("options") or {}
    return {**options, "output": "updates", "mode": team.get("mode"), "participants": members}


def _team(node: Node, ctx: BuildContext, problems: _Problems) -> None:
    """A team node: no agent_name or workflow besides; its participants resolve; then
    plait-teams checks the team (imported here, for a document with a team), each problem
    at its JSON path."""
    where = f"{node.where}/team"
    if node.agent_name is not None or node.workflow is not None:
        problems.add(where, f"node {node.id!r} has a team: give no agent_name or workflow besides")
    participants = (node.team or {}).get("participants") or []
    for index, name in enumerate(participants):
        if not isinstance(name, str):
            return  # the schema reports it
        if ctx.agents.find(name) is None and not ctx.agents.is_declared(name):
            problems.add(f"{where}/participants/{index}", ctx.agents.unknown(name))
    try:
        from plait_teams import team_problems
    except ImportError:
        problems.add(
            where,
            f"node {node.id!r} is a team, which needs the plait-teams plugin: "
            "pip install plait-teams",
        )
        return
    if "output" in ((node.team or {}).get("options") or {}):
        problems.add(
            f"{where}/options/output",
            "a DAG team node returns {<node id>: answer}: it takes no 'output'",
        )
    for path, message in team_problems(team_config(node, ctx)):
        head, _, rest = path.lstrip("/").partition("/")
        if head in ("mode", "participants"):
            at = f"{where}/{head}" + (
                f"/{rest.partition('/')[0]}" if head == "participants" and rest else ""
            )
        else:
            at = f"{where}/options{path}"
        problems.add(at, f"node {node.id!r}: {message}")


def _known_ends(
    connections: Sequence[Connection], by_id: dict[str, Node], problems: _Problems
) -> list[Connection]:
    valid = []
    ids = list(by_id)
    for conn in connections:
        ok = True
        for end, name in (("source_id", conn.source_id), ("target_id", conn.target_id)):
            if name not in by_id:
                hint = did_you_mean(name, ids)
                problems.add(
                    f"{conn.where}/{end}",
                    f"no node {name!r}{hint} (nodes: {_names(ids)})",
                )
                ok = False
        if ok:
            valid.append(conn)
    return valid


def _connection_rules(
    connections: Sequence[Connection], by_id: dict[str, Node], problems: _Problems
) -> None:
    first_kind: dict[str, Connection] = {}
    for conn in connections:
        first = first_kind.setdefault(conn.source_id, conn)
        if conn.parallel != first.parallel:
            problems.add(
                f"{conn.where}/parallel",
                f"node {conn.source_id!r} mixes parallel and sequential connections "
                f"({first.where} is {'' if first.parallel else 'not '}parallel): a node "
                "either forks into parallel branches or takes one route",
            )
        target = by_id[conn.target_id]
        if target.join is not None and conn.context_passed is not None:
            problems.add(
                f"{conn.where}/context_passed",
                f"connection into join {target.id!r} has context_passed: a join's agent "
                "receives the whole context with the merged branches",
            )
        if conn.parallel and conn.is_loop:
            problems.add(
                f"{conn.where}/max_iterations",
                "a parallel connection cannot be a loop",
            )


def _successors(connections: Iterable[Connection]) -> dict[str, list[Connection]]:
    out: dict[str, list[Connection]] = {}
    for conn in connections:
        out.setdefault(conn.source_id, []).append(conn)
    return out


def _cycles(by_id: dict[str, Node], forward: Sequence[Connection], problems: _Problems) -> None:
    """Each connection closing a cycle that is not a declared loop (iterative DFS)."""
    succ = _successors(forward)
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for start in by_id:
        if start in state:
            continue
        state[start] = 1
        path = [start]
        stack = [iter(succ.get(start, ()))]
        while stack:
            conn = next(stack[-1], None)
            if conn is None:
                state[path.pop()] = 2
                stack.pop()
                continue
            seen = state.get(conn.target_id)
            if seen == 1:
                cycle = [*path[path.index(conn.target_id) :], conn.target_id]
                problems.add(
                    conn.where,
                    f"connections form a cycle {' -> '.join(cycle)}; a cycle is allowed only "
                    'as a declared loop: give the connection back "max_iterations"',
                )
            elif seen is None:
                state[conn.target_id] = 1
                path.append(conn.target_id)
                stack.append(iter(succ.get(conn.target_id, ())))


def _reach(start: Iterable[str], succ: dict[str, list[Connection]]) -> set[str]:
    seen = set(start)
    queue = deque(seen)
    while queue:
        for conn in succ.get(queue.popleft(), ()):
            if conn.target_id not in seen:
                seen.add(conn.target_id)
                queue.append(conn.target_id)
    return seen


def _loops(
    connections: Sequence[Connection], forward: Sequence[Connection], problems: _Problems
) -> None:
    succ = _successors(forward)
    for conn in connections:
        if conn.is_loop and conn.source_id not in _reach([conn.target_id], succ):
            problems.add(
                f"{conn.where}/max_iterations",
                f"{conn.source_id!r} -> {conn.target_id!r} is not a loop: {conn.target_id!r} "
                f'does not lead to {conn.source_id!r}; "max_iterations" is only for a '
                "connection back to an earlier node",
            )


def _reachable(
    nodes: Sequence[Node], connections: Sequence[Connection], problems: _Problems
) -> None:
    entries = [n.id for n in nodes if n.is_entry]
    if not entries:
        return
    reached = _reach(entries, _successors(connections))
    for node in nodes:
        if node.id not in reached:
            problems.add(
                node.where,
                f"node {node.id!r} cannot be reached from the entry node "
                f"{entries[0]!r}; connect it or remove it",
            )


def _forks_meet_joins(
    connections: Sequence[Connection],
    forward: Sequence[Connection],
    by_id: dict[str, Node],
    problems: _Problems,
) -> None:
    succ = _successors(forward)
    reported: set[str] = set()
    for conn in connections:
        if not conn.parallel or conn.source_id in reported:
            continue
        reached = _reach([conn.target_id], succ)
        if not any(by_id[n].join is not None for n in reached):
            reported.add(conn.source_id)
            problems.add(
                f"{conn.where}/parallel",
                f"the parallel branch {conn.source_id!r} -> {conn.target_id!r} never reaches "
                'a join node; add a node with "join": "keyed" (or another merge strategy) '
                "where the branches meet",
            )


def _names(names: Iterable[str], limit: int = 20) -> str:
    shown = list(names)
    if not shown:
        return "none"
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more
