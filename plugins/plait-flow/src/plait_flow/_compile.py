"""From a flow's elements to the ``WorkflowSpec``, exactly as ``WorkflowBuilder`` records
the same graph (node ids, edge-group ids and options), with every problem at once.

How the elements become a graph:

- an agent is a node; a repeated agent gets ``name#2``, ``name#3`` …, all with
  ``uses=name``;
- ``a -> b`` is a ``direct`` group; ``a -> [b, c]`` a ``fan_out``; ``[b, c] -> d`` a
  ``fan_in`` with the block's merge strategy (in branch order);
- ``(cond ? b : c)`` is a ``switch`` with one case and a default;
- ``a -error-> f`` is an ``error`` group from each node of ``a`` to ``f``;
- ``@review`` inlines the named flow under the prefix ``review/`` (``review#2/`` on its
  second use), or is a ``workflow`` node running a published fragment;
- the flow's last step sends to a ``flow.output`` node, which yields the workflow outputs
  (a final parallel block is merged into it); ``flow.join`` nodes stand where the graph
  needs a single node and the text has none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from plait import (
    ConfigError,
    LoadError,
    NodeSpec,
    PlaitError,
    SourcePosition,
    WorkflowSpec,
)
from plait.spi import MAX_LOAD_NODES, BuildContext
from plait_documents import Problems, SpecBuilder, did_you_mean, record_edge_positions
from plait_routing import switch_options, switch_targets

from ._elements import (
    Agent,
    Chain,
    Conditional,
    Definition,
    Guarded,
    Parallel,
    Step,
    SubFlow,
)
from ._parser import FlowError, parse, position
from .errors import UnknownAgent, flow_load_error

__all__ = ["DEFAULT_MERGE", "compile_flow"]

#: the merge strategy of a parallel block that names none, unless ``merge=`` says otherwise
DEFAULT_MERGE = "concat_newline"
#: the longest flow text, in characters: some 11,000 agent uses (1,000 take 5.6 KB), which
#: lark's pure-Python LALR parser reads in well under a second; a flow is written by hand,
#: and a longer text is refused before parsing, so a 1 MB document costs nothing
MAX_TEXT = 64 * 1024
#: how deeply named flows may use one another
MAX_INLINE_DEPTH = 16

#: the seed's spelling of a named flow or fragment step: ``workflow(review)`` is ``@review``
WORKFLOW_CALL = "workflow"

OUTPUT = "flow:output"
JOIN = "flow:join"
START = "flow:start"

# an entry: ("node", id) | ("all", [entries]) | ("switch", expr, yes_id, no_id)
# an exit:  ("node", id) | ("any", [exits]) | ("merge", [exits], strategy, options)
Entry = tuple[Any, ...]
Exit = tuple[Any, ...]


class _TooBig(Exception):
    pass


def compile_flow(text: str, ctx: BuildContext) -> WorkflowSpec:
    """The spec of flow ``text``.

    :raises InvalidFlowError: every problem, each a :class:`FlowError` with its position
        (:class:`AgentNotFoundInFlowError` when a name resolves to nothing).
    """
    source = ctx.source
    if len(text) > MAX_TEXT:
        raise flow_load_error(
            [
                FlowError(
                    f"the flow is {len(text):,} characters long; the limit is {MAX_TEXT:,}",
                    position(text, source, 1, 1),
                )
            ],
            source,
        )
    if all(not line.strip() or line.lstrip().startswith("#") for line in text.split("\n")):
        raise flow_load_error(
            [
                FlowError(
                    "the flow is empty; write steps like 'a -> b'", position(text, source, 1, 1)
                )
            ],
            source,
        )
    try:
        document = parse(text, source)
    except FlowError as exc:
        raise flow_load_error([exc], source) from None
    compiler = _Compiler(text, ctx)
    spec = compiler.run(document.definitions, document.chain)
    problems = Problems(source)
    problems.extend(compiler.problems)
    if problems:
        raise flow_load_error(problems.sorted(), source)
    record_edge_positions(ctx, _EdgePositions(compiler))
    return spec


class _EdgePositions(Mapping[str, SourcePosition]):
    """Where the flow writes each edge group: the step the edge leads to (made when asked:
    only an edge the type check refuses needs its position)."""

    def __init__(self, compiler: _Compiler) -> None:
        self.compiler = compiler

    def __getitem__(self, group_id: str) -> SourcePosition:
        return self.compiler.at(self.compiler.edge_tokens[group_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self.compiler.edge_tokens)

    def __len__(self) -> int:
        return len(self.compiler.edge_tokens)


class _Compiler:
    def __init__(self, text: str, ctx: BuildContext) -> None:
        import plait

        self.text = text
        self.ctx = ctx
        self.source = ctx.source
        self.manager = ctx.manager if ctx.manager is not None else plait.get_plugin_manager()
        self.problems: list[PlaitError] = []
        self.spec = SpecBuilder()
        self.nodes: dict[str, NodeSpec] = self.spec.nodes
        self.counts: dict[str, int] = {}
        self.prefix = ""
        self.inlining: list[str] = []
        self.definitions: dict[str, Definition] = {}
        self.templates: dict[str, dict[str, Any] | None] = {}
        self.merges: dict[tuple[str, str], bool] = {}
        self.kinds = self.manager.registry("executor_kind")
        self.fragments = self.manager.registry("fragment")
        self.strategies = self.manager.registry("merge_strategy")
        options = ctx.options
        self.default_merge = options.get("merge") or DEFAULT_MERGE
        self.default_options = options.get("merge_options") or None
        self.merge_checked = False
        self._available: list[str] | None = None
        self._every_name: list[str] | None = None
        self._hints: dict[str, str] = {}
        self._unknown: dict[str, str] = {}
        # the step each edge group leads to, by group id (the token of ``here`` when the
        # group was added): where the type check reports an edge it refuses
        self.edge_tokens: dict[str, Any] = {}
        self.here: Any = None

    # -- problems ------------------------------------------------------------------------

    def at(self, token: Any) -> SourcePosition:
        return position(self.text, self.source, token.line, token.column)

    def problem(self, message: str, token: Any) -> None:
        self.problems.append(FlowError(message, self.at(token)))

    def did_you_mean(self, name: str, names: list[str]) -> str:
        """A did-you-mean for the first :attr:`~plait.LoadError.SHOWN` distinct
        unknown names (as many as an error shows), so thousands of unknown names cost
        linear time; ``""`` for the rest."""
        if name not in self._hints:
            self._hints[name] = (
                did_you_mean(name, names) if len(self._hints) < LoadError.SHOWN else ""
            )
        return self._hints[name]

    # -- the whole flow ------------------------------------------------------------------

    def run(self, definitions: list[Definition], chain: Chain) -> WorkflowSpec:
        for definition in definitions:
            name = definition.token.value
            if name in self.definitions:
                first = self.definitions[name].token
                self.problem(
                    f"the named flow '@{name}' is defined twice (first at "
                    f"{first.line}:{first.column})",
                    definition.token,
                )
                continue
            self.definitions[name] = definition
            if definition.chain.too_deep is not None:
                self._too_deep(definition.chain.too_deep)
        if chain.too_deep is not None:
            self._too_deep(chain.too_deep)
            return self._spec("")
        self._check_default_merge(chain)
        try:
            entry, exit_ = self.chain(chain)
            start = entry[1] if entry[0] == "node" else self.join(START)
            if entry[0] != "node":
                self.send(start, entry)
            output = self.new_id(OUTPUT)
            self.add(NodeSpec(output, kind="flow.output"))
            self.connect(exit_, ("node", output))
        except _TooBig:
            self.problems.append(
                FlowError(
                    f"the flow expands to more than {MAX_LOAD_NODES} steps (named flows used "
                    "inside named flows multiply)",
                    position(self.text, self.source, 1, 1),
                )
            )
            return self._spec("")
        return self._spec(start)

    def _spec(self, start: str) -> WorkflowSpec:
        name = self.ctx.options.get("name")
        version = self.ctx.options.get("version")  # a document's own (checked as read)
        return self.spec.build(
            name=name if isinstance(name, str) else None,
            start=start,
            workflow_version=version if isinstance(version, int) else None,
        )

    def _too_deep(self, token: Any) -> None:
        from ._elements import MAX_DEPTH

        self.problem(f"parallel blocks and conditions nest more than {MAX_DEPTH} deep here", token)

    # -- nodes and groups ------------------------------------------------------------------

    def new_id(self, base: str) -> str:
        n = self.counts.get(base, 0) + 1
        self.counts[base] = n
        return base if n == 1 else f"{base}#{n}"

    def add(self, node: NodeSpec) -> None:
        if len(self.nodes) >= MAX_LOAD_NODES:  # the kernel's bound on what one load builds
            raise _TooBig
        self.nodes[node.id] = node

    def join(self, base: str = JOIN) -> str:
        node_id = self.new_id(base)
        self.add(NodeSpec(node_id, kind="flow.join"))
        return node_id

    def group(
        self,
        router: str,
        sources: list[str],
        targets: list[str],
        options: dict[str, Any] | None = None,
    ) -> None:
        group = self.spec.add_edge_group(router, sources, targets, options)
        if self.here is not None:
            self.edge_tokens[group.id] = self.here

    # -- wiring ------------------------------------------------------------------------------

    def connect(self, exit_: Exit, entry: Entry) -> None:
        """Every message leaving ``exit_`` goes to ``entry``."""
        kind = exit_[0]
        if kind == "node":
            self.send(exit_[1], entry)
        elif kind == "any":
            for one in exit_[1]:
                self.connect(one, entry)
        else:
            target = entry[1] if entry[0] == "node" else self.join()
            sources = [self.single(one) for one in exit_[1]]
            if sources:
                options: dict[str, Any] = {"merge": exit_[2], "when": "all"}
                if exit_[3]:
                    options["merge_options"] = dict(exit_[3])
                self.group("fan_in", sources, [target], options)
            if entry[0] != "node":
                self.send(target, entry)

    def single(self, exit_: Exit) -> str:
        """One node that sends what leaves ``exit_``."""
        if exit_[0] == "node":
            return str(exit_[1])
        node_id = self.join()
        self.connect(exit_, ("node", node_id))
        return node_id

    def anchor(self, entry: Entry) -> str:
        """One node that receives for ``entry``."""
        if entry[0] == "node":
            return str(entry[1])
        node_id = self.join()
        self.send(node_id, entry)
        return node_id

    def send(self, source: str, entry: Entry) -> None:
        kind = entry[0]
        if kind == "node":
            self.group("direct", [source], [entry[1]])
        elif kind == "all":
            targets: list[str] = []
            others: list[Entry] = []
            _flatten(entry, targets, others)
            if targets:
                self.group("fan_out", [source], targets)
            for other in others:
                self.send(source, other)
        else:
            _, expr, yes, no = entry
            options = switch_options([yes], [{"expr": expr}], no)
            self.group("switch", [source], switch_targets([yes], no), options)

    # -- elements ----------------------------------------------------------------------------

    def chain(self, chain: Chain) -> tuple[Entry, Exit]:
        entry, exit_ = self.guarded(chain.items[0])
        for item in chain.items[1:]:
            next_entry, next_exit = self.guarded(item)
            self.here = item.steps[0].token  # the edges written here lead to this step
            self.connect(exit_, next_entry)
            exit_ = next_exit
        return entry, exit_

    def guarded(self, guarded: Guarded) -> tuple[Entry, Exit]:
        before = len(self.nodes)
        entry, exit_ = self.step(guarded.steps[0])
        if len(guarded.steps) == 1:
            return entry, exit_
        exits = [exit_]
        failing = self._agents_since(before)
        for step in guarded.steps[1:]:
            before = len(self.nodes)
            fallback_entry, fallback_exit = self.step(step)
            fallback_agents = self._agents_since(before)
            self.here = step.token
            target = self.anchor(fallback_entry)
            for source in failing:
                self.group("error", [source], [target])
            exits.append(fallback_exit)
            failing = fallback_agents
        return entry, ("any", exits)

    def _agents_since(self, count: int) -> list[str]:
        ids = list(self.nodes)[count:]
        return [i for i in ids if self.nodes[i].kind != "flow.join"]

    def step(self, step: Step) -> tuple[Entry, Exit]:
        if isinstance(step, Agent):
            node_id = self.agent(step.token)
            return ("node", node_id), ("node", node_id)
        if isinstance(step, Parallel):
            return self.parallel(step)
        if isinstance(step, Conditional):
            return self.conditional(step)
        return self.subflow(step)

    def parallel(self, block: Parallel) -> tuple[Entry, Exit]:
        if not block.branches:
            self.problem("empty parallel block '[]': give at least one branch", block.token)
        merge, options = self.default_merge, self.default_options
        if block.merge is not None:
            merge = block.merge.value
            options = self._merge_options(block)
            self._check_merge(merge, options, block.merge)
        compiled = [self.chain(branch) for branch in block.branches]
        entries = [entry for entry, _ in compiled]
        exits = [exit_ for _, exit_ in compiled]
        return ("all", entries), ("merge", exits, merge, options)

    def conditional(self, cond: Conditional) -> tuple[Entry, Exit]:
        expr = cond.expr.value.rstrip()
        self._check_expression(expr, cond.expr)
        yes_entry, yes_exit = self.chain(cond.yes)
        no_entry, no_exit = self.chain(cond.no)
        yes, no = self.anchor(yes_entry), self.anchor(no_entry)
        return ("switch", expr, yes, no), ("any", [yes_exit, no_exit])

    def subflow(self, sub: SubFlow) -> tuple[Entry, Exit]:
        name = sub.token.value
        if sub.at.type == "NAME" and sub.at.value != WORKFLOW_CALL:
            self.problem(
                f"unknown call '{sub.at.value}(…)': a step in parentheses after a name is "
                f"'{WORKFLOW_CALL}(name)', a named flow or published fragment",
                sub.at,
            )
            return self._placeholder(sub.at)
        definition = self.definitions.get(name)
        if definition is None:
            if name in self.fragments:
                node_id = self.fragment(name, sub.token)
                return ("node", node_id), ("node", node_id)
            known = sorted(self.definitions)
            fragments = self.fragments.names()
            hint = self.did_you_mean(name, [*known, *fragments])
            self.problem(
                f"no named flow or published fragment '{sub.spelled}'{hint}"
                f" (named flows: {_listing(known)}; fragments: {_listing(fragments)})",
                sub.token,
            )
            return self._placeholder(sub.token)
        if definition.chain.too_deep is not None:
            return self._placeholder(sub.token)  # reported with the definition
        if name in self.inlining:
            self.problem(f"the named flow '{sub.spelled}' uses itself", sub.token)
            return self._placeholder(sub.token)
        if len(self.inlining) >= MAX_INLINE_DEPTH:
            self.problem(f"named flows nest more than {MAX_INLINE_DEPTH} deep here", sub.token)
            return self._placeholder(sub.token)
        outer = self.prefix
        self.prefix = self.new_id(f"{outer}{name}") + "/"
        self.inlining.append(name)
        try:
            return self.chain(definition.chain)
        finally:
            self.inlining.pop()
            self.prefix = outer

    def _placeholder(self, token: Any) -> tuple[Entry, Exit]:
        node_id = self.join()
        return ("node", node_id), ("node", node_id)

    # -- names ---------------------------------------------------------------------------------

    def agent(self, token: Any) -> str:
        """The node of a name, in the one order names resolve in (``executors=``, the
        document's ``agents:``, plugins' agents, ``--agents``), then a published fragment
        or an executor kind used with an empty config."""
        name = token.value
        found = self.ctx.agents.find(name)
        if found is not None and found.definition is not None:
            node_id = self.new_id(self.prefix + name)
            definition = found.definition
            self.add(NodeSpec(node_id, kind=definition.kind, config=dict(definition.config)))
            return node_id
        if found is not None:
            template = self._template(name, token, found.obj)
            node_id = self.new_id(self.prefix + name)
            self.add(NodeSpec(node_id, **(template or {})))
            return node_id
        if self.ctx.agents.is_declared(name):  # its definition's problem is reported there
            node_id = self.new_id(self.prefix + name)
            self.add(NodeSpec(node_id))
            return node_id
        if name in self.kinds:
            node_id = self.new_id(self.prefix + name)
            self._check_kind(name, node_id, token)
            self.add(NodeSpec(node_id, kind=name))
            return node_id
        if name in self.fragments:
            return self.fragment(name, token)
        hint = ""
        if name in self.definitions:
            hint = f"; '{name}' is a named flow: write '@{name}'"
        if self._available is None:
            kinds = [k for k in self.kinds.names() if "." not in k]  # not a front-end's own
            self._available = sorted({*kinds, *self.fragments.names()})
        message = self._unknown.get(name)
        if message is None:
            if len(self._unknown) < LoadError.SHOWN:
                message = self.ctx.agents.unknown(name, extra=self._available)
            else:  # past what an error shows, no did-you-mean: thousands stay linear
                message = f"unknown agent {name!r}"
            self._unknown[name] = message
        self.problems.append(
            UnknownAgent(
                f"{message}{hint} (fragments and executor kinds: {_listing(self._available)})",
                self.at(token),
                name,
                self._agents_available(),
            )
        )
        node_id = self.new_id(self.prefix + name)
        self.add(NodeSpec(node_id))
        return node_id

    def _agents_available(self) -> list[str]:
        """Every name the flow could have used (agents, fragments, executor kinds), sorted;
        computed once, however many names are unknown."""
        if self._every_name is None:
            self._every_name = sorted({*self.ctx.agents.names(), *(self._available or ())})
        return self._every_name

    def fragment(self, name: str, token: Any) -> str:
        node_id = self.new_id(self.prefix + name)
        config = {"fragment": name}
        if "workflow" not in self.kinds:
            self.problem(
                f"'{name}' is a published fragment, which runs with the 'workflow' executor "
                "kind; install plait-executors",
                token,
            )
        else:
            self._check_kind("workflow", node_id, token, config)
        self.add(NodeSpec(node_id, kind="workflow", config=config))
        return node_id

    def _template(self, name: str, token: Any, obj: Any) -> dict[str, Any] | None:
        """The node fields of executor ``name`` (the way WorkflowBuilder records them)."""
        if name in self.templates:
            return self.templates[name]
        from plait import FunctionExecutor
        from plait.spi import as_executor, code_ref, nonportable_reason, type_name

        template: dict[str, Any] | None
        try:
            ex = as_executor(obj, name, what=f"executor {name!r}")
        except PlaitError as exc:
            self.problem(getattr(exc, "reason", str(exc)), token)
            template = None
        else:
            kind = getattr(ex, "plait_kind", None)
            fields: dict[str, Any] = {"uses": name}
            if isinstance(kind, str):
                fields.update(kind=kind, config=dict(getattr(ex, "config", None) or {}))
            else:
                target: Any = ex.fn if isinstance(ex, FunctionExecutor) else type(ex)
                ref = code_ref(target)
                fields.update(
                    kind="python",
                    ref=ref,
                    config={"ref": ref},
                    nonportable=nonportable_reason(target),
                )
            fields.update(
                input_types=tuple(type_name(t) for t in ex.input_types),
                output_types=tuple(type_name(t) for t in ex.output_types),
                workflow_output_types=tuple(type_name(t) for t in ex.workflow_output_types),
                retry=ex.retry.to_dict() if ex.retry is not None else None,
                timeout=ex.timeout,
                max_visits=ex.max_visits,
                max_concurrency=ex.max_concurrency,
            )
            template = fields
        self.templates[name] = template
        return template

    def _check_kind(
        self, kind: str, node_id: str, token: Any, config: Mapping[str, Any] | None = None
    ) -> None:
        from plait.spi import BuildContext

        kind_ctx = BuildContext(
            node_id=node_id,
            allow_imports=False,
            executors=self.ctx.executors,
            manager=self.manager,
            source=self.source,
        )
        try:
            problems = self.kinds.get(kind).check(dict(config or {}), kind_ctx)
        except Exception as exc:  # a kind's own bug must not escape as a non-Plait error
            problems = [ConfigError(f"{type(exc).__name__}: {exc}")]
        for problem in problems:
            reason = getattr(problem, "reason", str(problem))
            self.problem(
                f"{token.value!r} is the executor kind {kind!r}, which a flow can only use "
                f"with an empty config: {reason}",
                token,
            )

    # -- merges and conditions -----------------------------------------------------------------

    def _merge_options(self, block: Parallel) -> dict[str, Any] | None:
        options: dict[str, Any] = {}
        for name, value in block.options:
            if name.value in options:
                self.problem(f"merge option {name.value!r} is given twice", name)
            decoded = _unquote(value.value)
            if decoded is None:
                self.problem(
                    f"merge option {name.value!r}: unknown escape in {value.value}; use "
                    "\\n, \\t, \\\\, \\' or \\\"",
                    value,
                )
                continue
            options[name.value] = decoded
        return options or None

    def _check_default_merge(self, chain: Chain) -> None:
        merge = self.default_merge
        if isinstance(merge, str) and merge in self.strategies and not self.default_options:
            return
        if not isinstance(merge, str):
            self.problems.append(
                FlowError(
                    f"option merge= must be a merge strategy's name, got {merge!r}",
                    position(self.text, self.source, 1, 1),
                )
            )
            self.default_merge = DEFAULT_MERGE
            return
        options = self.default_options
        if options is not None and not isinstance(options, Mapping):
            self.problems.append(
                FlowError(
                    f"option merge_options= must be a mapping, got {options!r}",
                    position(self.text, self.source, 1, 1),
                )
            )
            self.default_options = options = None
        first = _first_block(chain)
        token = first.token if first is not None else None
        self._check_merge(merge, options, token, given="merge=")

    def _check_merge(
        self, merge: str, options: Mapping[str, Any] | None, token: Any, given: str = ""
    ) -> None:
        key = (merge, repr(sorted(options.items())) if options else "")
        if key in self.merges:
            return
        self.merges[key] = True
        pos = self.at(token) if token is not None else position(self.text, self.source, 1, 1)
        where = f" (given as {given})" if given else ""
        if merge not in self.strategies:
            installed = self.strategies.names()
            self.problems.append(
                FlowError(
                    f"unknown merge strategy {merge!r}{where}{did_you_mean(merge, installed)} "
                    f"(installed: {', '.join(installed) or 'none'})",
                    pos,
                )
            )
            return
        if not options:
            return
        strategy = self.strategies.get(merge)
        with_options = getattr(strategy, "with_options", None)
        if with_options is None:
            self.problems.append(
                FlowError(
                    f"merge strategy {merge!r} takes no options{where}, got "
                    f"{', '.join(map(repr, options))}",
                    pos,
                )
            )
            return
        try:
            with_options(dict(options))
        except (ValueError, TypeError) as exc:
            self.problems.append(FlowError(f"merge strategy {merge!r}{where}: {exc}", pos))

    def _check_expression(self, expr: str, token: Any) -> None:
        from plait.spi import compile_expression

        try:
            compile_expression(
                expr,
                source=self.source,
                line=token.line,
                column=token.column,
                manager=self.manager,
            )
        except PlaitError as exc:
            line = getattr(exc, "line", None) or token.line
            column = getattr(exc, "column", None) or token.column
            reason = getattr(exc, "reason", None) or str(exc)
            self.problems.append(
                FlowError(
                    f"in condition {expr!r}: {reason}",
                    position(self.text, self.source, line, column),
                )
            )


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unquote(literal: str) -> str | None:
    """The value of a quoted string of the grammar, or None for an unknown escape."""
    out: list[str] = []
    chars = iter(literal[1:-1])
    for char in chars:
        if char == "\\":
            escaped = _ESCAPES.get(next(chars, ""))
            if escaped is None:
                return None
            out.append(escaped)
        else:
            out.append(char)
    return "".join(out)


def _flatten(entry: Entry, targets: list[str], others: list[Entry]) -> None:
    for one in entry[1]:
        if one[0] == "node":
            targets.append(one[1])
        elif one[0] == "all":
            _flatten(one, targets, others)
        else:
            others.append(one)


def _first_block(chain: Chain) -> Parallel | None:
    """The first parallel block without its own merge strategy, in text order."""
    stack: list[Any] = [chain]
    while stack:
        element = stack.pop()
        if isinstance(element, Chain):
            stack.extend(reversed(element.items))
        elif isinstance(element, Guarded):
            stack.extend(reversed(element.steps))
        elif isinstance(element, Parallel):
            if element.merge is None:
                return element
            stack.extend(reversed(element.branches))
        elif isinstance(element, Conditional):
            stack.extend([element.no, element.yes])
    return None


#: how many names a problem lists ("available: …")
SHOWN_NAMES = 30


def _listing(names: list[str]) -> str:
    """At most :data:`SHOWN_NAMES` of ``names``, and how many more there are."""
    shown = ", ".join(names[:SHOWN_NAMES]) or "none"
    return shown + (f" … and {len(names) - SHOWN_NAMES:,} more" if len(names) > SHOWN_NAMES else "")
