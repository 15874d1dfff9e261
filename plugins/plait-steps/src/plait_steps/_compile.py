"""Steps to a :class:`~plait.WorkflowSpec`.

Each agent/executor step is one node (its id is the step id); a condition is a node and a
``switch`` edge group on its result; a parallel block is a fork node, a ``fan_out`` to its
children, a ``fan_in`` (merge ``list``, when ``all``) and a join node ``<id>/join``; a
parallel block inside another has no fork of its own: the outer fork's ``fan_out`` reaches
its branches too, so every branch starts in the same superstep. A
``goto`` is an edge back to the step it names. Edge group ids are the builder's
(``direct:a->b``, ``fan_out:p->a,b``, ``fan_in:a,b->p/join``, ``switch:c->x,y``).

A foreach block is a ``steps.foreach`` node that sends one message per item, a ``switch``
on ``branch`` into its body (an empty list goes straight on), the body's nodes (each with
the block's ``max_concurrency``), and a ``steps.gather`` node ``<id>/gather`` that every
way out of the body reaches: it keeps the items' outputs in its state until all are in.

Two rules come from seed 002's own example, whose YAML has no ``goto``:

- a condition that reads ``$steps.<id>`` of a step written *after* it in the same list is
  evaluated after that step ("conditions are evaluated after the step(s) that produce the
  referenced output");
- the last step of a branch that runs the same agent as an earlier step, with nothing of
  its own (no instruction, config, retry or timeout), routes back to that earlier step:
  ``{id: back_to_trans, type: agent, name: translator}`` means ``{goto: trans}``.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, cast

import attrs
import plait
from plait import ConfigError, EdgeGroupSpec, LoadError, NodeSpec, PlaitError, WorkflowSpec
from plait_documents import SpecBuilder, did_you_mean
from plait_routing import switch_options, switch_targets

from ._base import Templates
from ._document import ITEM_REF, STEP_REF, Document, Step, _at_path, plain, step_ref
from ._yaml import Y, position

if TYPE_CHECKING:
    from ._loops import Loop
    from ._paths import Shapes

__all__ = ["compile_document"]

#: where a step goes on: ("node", id, via) | ("end", "", "") | ("open", "", ""); ``via`` is
#: the key of the loop whose back-edge that is ("" for a forward edge)
Cont = tuple[str, str, str]
END: Cont = ("end", "", "")
OPEN: Cont = ("open", "", "")


def _retry(policy: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A step's ``retry`` as the kernel's policy. ``on`` patterns are case-insensitive
    regular expressions searched in ``"<ErrorClass>: <message>"``; a loop-limit failure is
    never retried."""
    if not policy or not policy.get("max_attempts"):
        return None
    guard = "(?s)^(?!LoopLimitError: )"
    patterns = policy.get("on") or []
    on = [f"re:{guard}.*?(?i:{p})" for p in patterns] if patterns else [f"re:{guard}"]
    return plait.RetryPolicy(
        max_attempts=policy["max_attempts"],
        backoff=policy.get("backoff", "fixed"),
        delay=policy.get("delay", 1.0),
        max_delay=policy.get("max_delay", 30.0),
        on=on,
    ).to_dict()


#: the largest superstep limit a document gets (JSON's largest exact integer)
MAX_SUPERSTEPS = 2**53
#: how many step ids an unknown-reference problem lists
SHOWN_IDS = 20
#: how many id comparisons the did-you-means of unknown references may make in all
HINT_WORK = 100_000
#: ``$steps.<id>.output.<field>``: a field of a step's structured answer
OUTPUT_FIELD = re.compile(
    r"\$steps\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*output\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)"
)


def _probed(text: str, start: int) -> bool:
    """:func:`._paths.probed` (its module is imported with the first ``$steps`` path)."""
    from ._paths import probed

    return probed(text, start)


class _Scope:
    __slots__ = ("in_branch", "prefix", "retry", "visible")

    def __init__(
        self, visible: Mapping[str, Step], prefix: str, retry: Any, in_branch: bool
    ) -> None:
        self.visible = visible
        self.prefix = prefix
        self.retry = retry
        self.in_branch = in_branch


class _Compiler:
    def __init__(self, doc: Document, source: str, ctx: Any, kinds: list[str]) -> None:
        self.doc = doc
        self.source = source
        self.ctx = ctx
        self.kinds = kinds
        self.problems: list[PlaitError] = []
        self.nodes: list[NodeSpec] = []
        self.spec = SpecBuilder()  # the edge groups (nodes are ranked before they go in)
        self.groups: list[EdgeGroupSpec] = self.spec.groups
        self.all_steps = [s for top in doc.steps for s in top.walk() if s.type != "goto"]
        self.ids = {s.id for s in self.all_steps} | {s.id for s in doc.dropped}
        #: the steps by id (the first, when an id is used twice: reported)
        self.by_id: dict[str, Step] = {}
        for s in self.all_steps:
            self.by_id.setdefault(s.id, s)
        #: the shapes of the steps' results (:mod:`._paths`, imported with the first
        #: ``$steps`` path a document reads)
        self._shapes: Shapes | None = None
        self.templates = Templates(ctx.manager)
        self._ids_listing: str | None = None
        self._sorted_ids: list[str] = []
        self._hints: dict[str, str] = {}
        self._bad_gotos = 0
        #: where each agent step's agent name resolved (:class:`plait_documents.Found`)
        self.agent_of: dict[str, Any] = {}
        #: each team step's team config (the ``team`` executor kind's, of plait-teams)
        self.team_of: dict[str, dict[str, Any]] = {}
        #: the foreach blocks each step is inside, outermost first
        self.inside: dict[str, list[str]] = {}
        #: the lists being compiled, outermost first, each with the index of its step
        #: being compiled (where a goto's loop starts and ends)
        self.frames: list[tuple[list[Step], int]] = []
        #: every back-edge, by its key (the id of the step that wrote it)
        self.loops: dict[str, Loop] = {}
        for top in doc.steps:
            self._enclose(top, [])

    def _enclose(self, step: Step, blocks: list[str]) -> None:
        self.inside.setdefault(step.id, blocks)
        body = [*blocks, step.id] if step.type == "foreach" else blocks
        for child in step.true + step.false:
            self._enclose(child, blocks)
        for child in step.steps:
            self._enclose(child, body)

    def at(self, y: Y, message: str, column_offset: int = 0) -> None:
        self.problems.append(
            ConfigError(
                message, position(self.source, self.doc.lines, y.line, y.column + column_offset)
            )
        )

    # -- names -----------------------------------------------------------------------------

    def check_names(self) -> None:
        seen: dict[str, Step] = {}
        for step in self.all_steps:
            first = seen.get(step.id)
            if first is not None:
                self.at(
                    step.y,
                    f"step id {step.id!r} is used twice (first at line {first.y.line}); ids "
                    "must be unique in the document",
                )
            seen.setdefault(step.id, step)
            # step ids and agent names are separate namespaces: {id: qa, name: qa} is fine
            if step.type == "agent" and step.name is not None:
                found = self.ctx.agents.find(step.name)
                if found is None and not self.ctx.agents.is_declared(step.name):
                    where = step.y.value.get("name", step.y)
                    self.at(where, f"step {step.id!r}: " + self.ctx.agents.unknown(step.name))
                elif found is not None:
                    self.agent_of[step.id] = found
            for y in (step.instruction, step.condition, step.input, step.items):
                if y is not None and isinstance(y.value, str):
                    self.check_template(step, y)
            if step.type == "team":
                self.check_team(step)

    def check_team(self, step: Step) -> None:
        """A team step's participants resolve as agent names do; then plait-teams checks
        the team as data (the mode, its options, handoff targets), each problem at its
        position. plait-teams is imported here, for a document that has a team."""
        members: list[dict[str, Any]] = []
        for y in step.participants:
            name = y.value
            found = self.ctx.agents.find(name)
            member: dict[str, Any] = {"name": name}
            held = self.doc.agent_values.get(name)
            described = held.value.get("description") if held is not None else None
            if described is not None and isinstance(described.value, str):
                member["description"] = described.value
            if found is None and not self.ctx.agents.is_declared(name):
                self.at(y, f"team step {step.id!r}: " + self.ctx.agents.unknown(name))
            if found is not None and found.definition is not None:
                member["agent"] = found.definition.to_dict()
            else:  # a Python object the caller passed (or a name already reported)
                member["uses"] = name
            members.append(member)
        if step.mode is None or not members:
            return
        options = plain(step.options) if step.options is not None else {}
        config = {**options, "mode": step.mode.value, "participants": members}
        try:
            from plait_teams import team_problems
        except ImportError:
            self.at(
                step.mode,
                f"team step {step.id!r} needs the plait-teams plugin: pip install plait-teams",
            )
            return
        for path, message in team_problems(config):
            self.at(self.team_at(step, path), f"team step {step.id!r}: {message}")
        self.team_of[step.id] = config

    def team_at(self, step: Step, path: str) -> Y:
        """Where a team step writes what ``path`` (a JSON path of its team config) names."""
        head, _, rest = path.lstrip("/").partition("/")
        if head == "mode" and step.mode is not None:
            return step.mode
        if head == "participants":
            index, _, _ = rest.partition("/")
            if index.isdigit() and int(index) < len(step.participants):
                return step.participants[int(index)]
            held: Y = step.y.value.get("participants", step.y)
            return held
        if head and step.options is not None:
            return _at_path(step.options, path)
        return step.y

    def check_agents(self) -> None:
        """What the document's agents promise: an LLM agent's instruction reads steps that
        exist, and a template reading ``$steps.<id>.output.<field>`` of an LLM agent's step
        reads a field its ``structured_output`` declares (seed 002's ``is_approved``)."""
        for name, value in self.doc.agent_values.items():
            held = value.value.get("instruction") if isinstance(value.value, dict) else None
            if held is None or not isinstance(held.value, str):
                continue
            for match in STEP_REF.finditer(held.value):
                ref = step_ref(match)
                if ref not in self.ids:
                    self.at(
                        held,
                        f"agent {name!r}: its instruction reads $steps.{ref}, but no step has "
                        f"id {ref!r}; step ids: {self.unknown_ref_hint(ref)}",
                    )
                elif ref in self.by_id and not _probed(held.value, match.start()):
                    self.check_path(f"agent {name!r}: its instruction", held, held.value, match, 0)
        for step in self.all_steps:
            for y in (step.condition, step.instruction, step.input):
                if y is None or not isinstance(y.value, str):
                    continue
                for match in OUTPUT_FIELD.finditer(y.value):
                    self.check_field(step, y, match)
        for step in self.doc.dropped:  # its type is reported; the steps it reads still count
            for y in (step.condition, step.instruction, step.input):
                if y is None or not isinstance(y.value, str):
                    continue
                for match in STEP_REF.finditer(y.value):
                    ref = step_ref(match)
                    if ref not in self.ids:
                        offset = 1 if y.quoted else 0
                        col = offset + match.start() if "\n" not in y.value else 0
                        self.at(
                            y,
                            f"step {step.id!r} reads $steps.{ref}, but no step has id "
                            f"{ref!r}; step ids: {self.unknown_ref_hint(ref)}",
                            col,
                        )

    def check_types(self) -> None:
        """What a step gives its Python agent fits the agent's message parameter: a step
        without ``input`` gives the prior steps' outputs and the prompt as one text
        (``str``), so an agent annotated to take something else is refused here, where
        the step names it (the edge check of every front-end,
        ``plait_converters.is_assignable``, decides; an unannotated agent takes
        anything). A step with ``input`` or inside a ``foreach`` gives what its template
        or the item is, known only when it runs."""
        from plait.spi import as_executor, type_name

        for step in self.all_steps:
            found = self.agent_of.get(step.id)
            if found is None or found.obj is None or step.input is not None:
                continue
            if self.inside.get(step.id):
                continue
            try:
                agent = as_executor(found.obj, step.name or step.id)
            except Exception:  # not an executor's shape: the step reports it when built
                continue
            # imported for a step with a Python agent only: most files have none
            from plait_converters import is_assignable

            accepted = agent.input_types
            if not accepted or any(is_assignable(str, t) for t in accepted):
                continue
            takes = " | ".join(type_name(t) for t in accepted)
            where = step.y.value.get("name", step.y)
            self.at(
                where,
                f"step {step.id!r}: agent {step.name!r} takes {takes}, but the step gives "
                f"it str: the prior steps' outputs and the prompt as one text; "
                "give the step an 'input' template that makes what the agent takes",
            )

    def check_path(self, who: str, y: Y, text: str, match: re.Match[str], col: int) -> None:
        """A ``$steps`` path that leaves the shape of the step it reads (it would read
        ``null``) is a problem at its position that lists the paths there are."""
        from ._paths import Shapes, accessors

        ref = step_ref(match)
        path = list(accessors(text, match.end()))
        if self._shapes is None:
            self._shapes = Shapes()
        problem = self._shapes.check(self.by_id[ref], match.group(0), path)
        if problem is None:
            return
        shown = match.group(0) + "".join(a.text for a in path)
        key = f".{problem.key}" if isinstance(problem.key, str) else f"[{problem.key}]"
        if problem.existing:
            keys = [p[len(problem.prefix) :].lstrip(".") for p in problem.existing]
            keys = [k for k in keys if re.fullmatch(r"\w+", k)]
            did = did_you_mean(str(problem.key), keys) if isinstance(problem.key, str) else ""
            there = f"paths there: {', '.join(problem.existing)}{did}"
        else:
            there = f"{problem.prefix} is {problem.what or 'a single value'}, with no fields"
        self.at(
            y,
            f"{who} reads {shown}, which cannot resolve: {problem.prefix} has no {key}; {there}",
            col,
        )

    def check_field(self, step: Step, y: Y, match: Any) -> None:
        ref, field = match.group(1), match.group(2)
        found = self.agent_of.get(ref)
        definition = found.definition if found is not None else None
        if found is None or definition is None or definition.kind != "agent":
            return  # Python code, or not an agent step: what it answers is not declared
        offset = 1 if y.quoted else 0
        col = offset + match.start() if "\n" not in y.value and y.quoted in (False, True) else 0
        schema = definition.structured_output
        agent = found.name
        if schema is None:
            self.at(
                y,
                f"step {step.id!r} reads $steps.{ref}.output.{field}, but {agent!r} (the agent "
                f"of step {ref!r}) declares no structured_output (its answer is text); declare "
                f"{field!r} in its structured_output",
                col,
            )
            return
        properties = schema.get("properties")
        declared = sorted(properties) if isinstance(properties, dict) else []
        if field not in declared:
            did = did_you_mean(field, declared)
            self.at(
                y,
                f"step {step.id!r} reads $steps.{ref}.output.{field}, but the structured_output "
                f"of {agent!r} (the agent of step {ref!r}) declares no {field!r} (it declares: "
                f"{', '.join(declared) or 'nothing'}){did}",
                col,
            )

    def unknown_ref_hint(self, ref: str) -> str:
        """The step ids (the first :data:`SHOWN_IDS`) and a did-you-mean for ``ref``.

        Linear in the document, however many unknown references it makes: the listing
        is built once, and a did-you-mean (a comparison with every id) is offered for
        the first distinct unknown ids only: at most as many as a
        :class:`~plait.LoadError` shows, and at most :data:`HINT_WORK`
        comparisons in all.
        """
        if self._ids_listing is None:
            ids = sorted(self.ids)
            self._ids_listing = ", ".join(ids[:SHOWN_IDS])
            if len(ids) > SHOWN_IDS:
                self._ids_listing += f" … and {len(ids) - SHOWN_IDS:,} more"
            self._sorted_ids = ids
        if ref not in self._hints:
            did = ""
            hinted = len(self._hints) + 1
            if hinted <= LoadError.SHOWN and hinted * len(self._sorted_ids) <= HINT_WORK:
                did = did_you_mean(ref, self._sorted_ids)
            self._hints[ref] = did
        return self._ids_listing + self._hints[ref]

    def check_template(self, step: Step, y: Y) -> None:
        text: str = y.value
        offset = 1 if y.quoted else 0
        single_line = "\n" not in text and y.quoted in (False, True)
        blocks = self.inside.get(step.id, [])
        for match in ITEM_REF.finditer(text):
            if not blocks:
                col = offset + match.start() if single_line else 0
                self.at(
                    y,
                    f"step {step.id!r} reads ${match.group(1)}, but it is not inside a foreach "
                    "step's body",
                    col,
                )
        for match in STEP_REF.finditer(text):
            ref = step_ref(match)
            block = next((b for b in self.inside.get(ref, []) if b not in blocks), None)
            if ref in self.ids and block is not None:
                col = offset + match.start() if single_line else 0
                self.at(
                    y,
                    f"step {step.id!r} reads $steps.{ref}, which runs once per item inside "
                    f"foreach step {block!r}; read $steps.{block}.output (the list of the "
                    "items' outputs) instead",
                    col,
                )
            if ref not in self.ids:
                col = offset + match.start() if single_line else 0
                self.at(
                    y,
                    f"step {step.id!r} reads $steps.{ref}, but no step has id {ref!r}; "
                    f"step ids: {self.unknown_ref_hint(ref)}",
                    col,
                )
            elif ref in self.by_id and not _probed(text, match.start()):
                col = offset + match.start() if single_line else 0
                self.check_path(f"step {step.id!r}", y, text, match, col)
        is_condition = y is step.condition
        template = not ((is_condition or y is step.items) and "{{" not in text)
        if (
            is_condition
            and template
            and not (
                text.strip().startswith("{{")
                and text.strip().endswith("}}")
                and text.count("{{") == 1
            )
        ):
            self.at(
                y,
                f"the condition of step {step.id!r} must be one {{{{ expression }}}} (or an "
                "expression without braces) that gives a boolean",
            )
            return
        try:
            self.templates.compiled(
                text,  # as written: "$steps" is the language's "steps"
                template=template,
                source=self.source,
                line=y.line,
                column=y.column + offset,
            )
        except PlaitError as exc:
            self.problems.append(exc)

    # -- graph ------------------------------------------------------------------------------

    def group(
        self, router: str, sources: list[str], targets: list[str], options: Any = None
    ) -> None:
        self.spec.add_edge_group(router, sources, targets, options)

    def connect(self, source: str, cont: Cont) -> None:
        if cont[0] == "node":
            self.group("direct", [source], [cont[1]])

    def sequence(self, steps: list[Step], cont: Cont, scope: _Scope) -> Cont:
        steps = _defer_conditions(steps)
        # What each step sees is the enclosing scope plus the steps before it. Built
        # backwards by taking steps away, over a view of the enclosing scope: copying it
        # per step was quadratic in the document.
        local: dict[str, Step] = {}
        same_id: dict[str, list[Step]] = {}
        for step in steps:
            if step.type != "goto":
                same_id.setdefault(step.id, []).append(step)
                local[step.id] = step
        visible: ChainMap[str, Step] = ChainMap(local, _view(scope.visible))
        for index in range(len(steps) - 1, -1, -1):
            step = steps[index]
            if step.type != "goto":  # from here on: only the steps before this one
                stack = same_id[step.id]
                stack.pop()
                if stack:
                    local[step.id] = stack[-1]
                else:
                    del local[step.id]
            last = index == len(steps) - 1
            target = self.loop_back(step, visible, scope) if last else None
            if step.type == "goto" or target is not None:
                if not last:
                    self.at(step.y, "a goto ends its branch: the steps after it never run")
                if not scope.in_branch:
                    self.at(step.y, "a goto belongs in a condition's true/false branch")
                goes_to = target or self.goto_target(step, visible)
                self.frames.append((steps, index))
                self.add_loop(step.id, goes_to)
                self.frames.pop()
                cont = ("node", goes_to, step.id)
                continue
            inner = _Scope(visible, scope.prefix, scope.retry, scope.in_branch)
            self.frames.append((steps, index))
            cont = ("node", self.step(step, cont, inner), "")
            self.frames.pop()
        return cont

    def add_loop(self, key: str, target: str) -> None:
        """Record the back-edge ``key`` to ``target``: the innermost list being compiled
        that holds ``target`` at or before its step being compiled is the loop's."""
        if not target:
            return  # reported
        from ._loops import Loop

        for steps, index in reversed(self.frames):
            first = next((i for i in range(index, -1, -1) if steps[i].id == target), None)
            if first is not None:
                self.loops[key] = Loop(target, steps, first, index)
                return

    def with_loops(self, node: NodeSpec) -> NodeSpec:
        """``node`` with ``loops`` in its config when loops go back to it: each loop's key
        and the keys of the loops inside it (the same target, a span within its span),
        whose edge does not restart its count."""
        targeting = [(k, loop) for k, loop in self.loops.items() if loop.target == node.id]
        if not targeting or "/" in node.id:
            return node
        loops = {
            key: sorted(
                other
                for other, inner in targeting
                if inner.steps is loop.steps and inner.last <= loop.last
            )
            for key, loop in targeting
        }
        return attrs.evolve(node, config={**node.config, "loops": loops})

    def superstep_bound(self) -> int:
        """The run's superstep limit: enough for every node to run as often as the loops
        around it allow (``max_loop_iterations`` to the power of how many loops it is
        in), so a loop's own limit is what stops a runaway loop."""
        limit = self.doc.loop_limit
        depth: dict[str, int] = {}
        for loop in self.loops.values():
            for member in loop.members():
                depth[member] = depth.get(member, 0) + 1
        total = 10
        for node in self.nodes:
            total += (limit + 1) ** depth.get(node.id.partition("/")[0], 0)
            if total >= MAX_SUPERSTEPS:
                return MAX_SUPERSTEPS
        return total

    def loop_back(self, step: Step, visible: Mapping[str, Step], scope: _Scope) -> str | None:
        """Seed 002's loop form: a branch's last agent step that only names an earlier
        step's agent goes back to that step."""
        if not scope.in_branch or step.type != "agent" or step.name is None:
            return None
        if any(k in step.y.value for k in ("instruction", "config", "retry", "timeout")):
            return None
        found = [s.id for s in visible.values() if s.type == "agent" and s.name == step.name]
        return found[-1] if found else None

    def goto_target(self, step: Step, visible: Mapping[str, Step]) -> str:
        target = step.goto
        if isinstance(target, int):
            tops = [s for s in self.doc.steps if s.type != "goto"]
            if 0 <= target < len(tops) and tops[target].id in visible:
                return tops[target].id
            self.at(
                step.y, f"goto {target}: no earlier top-level step has index {target} (0-based)"
            )
            return ""
        if target in visible:
            return str(target)
        earlier = list(visible)
        listing = ", ".join(earlier[:SHOWN_IDS]) or "none"
        if len(earlier) > SHOWN_IDS:
            listing += f" … and {len(earlier) - SHOWN_IDS:,} more"
        did = ""
        self._bad_gotos += 1
        if self._bad_gotos <= LoadError.SHOWN:  # a did-you-mean compares with every id
            did = did_you_mean(target, earlier)
        self.at(
            step.y,
            f"goto {target!r}: a goto goes back to an earlier step of an enclosing list (not "
            f"into or out of a parallel or foreach block); earlier steps here: {listing}{did}",
        )
        return ""

    def step(self, step: Step, cont: Cont, scope: _Scope) -> str:
        limit = self.doc.loop_limit
        final = cont[0] == "end"
        base: dict[str, Any] = {"step": step.id, "limit": limit}
        if step.type in ("agent", "executor"):
            config = {**base, "label": scope.prefix + step.id, "final": final}
            if step.type == "agent":
                config["agent"] = step.name or ""
                found = self.agent_of.get(step.id)
                definition = found.definition if found is not None else None
                if definition is not None:
                    config.update(self.use(step, definition))
                if step.instruction is not None:
                    config["instruction"] = step.instruction.value
                    config["at"] = _at(step.instruction)
                if step.config:
                    config["config"] = step.config
                # where the step is, for what its agent's kind needs or raises, unless
                # its instruction's template gave a closer position
                config.setdefault("at", _at(step.y))
            else:
                # where the step is, for problems its kind's config raises when it builds
                config.update(kind=step.kind or "", config=step.config or {}, at=_at(step.y))
            if step.input is not None:
                config["input"] = step.input.value
                config["input_at"] = _at(step.input)
            if cont[2]:
                config["via"] = cont[2]
            self.nodes.append(
                NodeSpec(
                    step.id,
                    kind=f"steps.{step.type}",
                    config=config,
                    retry=_retry(step.retry or scope.retry),
                    timeout=step.timeout,
                )
            )
            self.connect(step.id, cont)
            return step.id
        if step.type == "team":
            # a node of plait-teams' ``team`` kind, run as any executor step is
            config = {**base, "label": scope.prefix + step.id, "final": final}
            config.update(kind="team", config=self.team_of.get(step.id, {}), at=_at(step.y))
            if step.input is not None:
                config["input"] = step.input.value
                config["input_at"] = _at(step.input)
            if cont[2]:
                config["via"] = cont[2]
            self.nodes.append(
                NodeSpec(
                    step.id,
                    kind="steps.executor",
                    config=config,
                    retry=_retry(step.retry or scope.retry),
                    timeout=step.timeout,
                )
            )
            self.connect(step.id, cont)
            return step.id
        if step.type == "condition":
            return self.condition(step, cont, scope)
        if step.type == "foreach":
            return self.foreach(step, cont, scope)
        return self.parallel(step, cont, scope)

    def use(self, step: Step, definition: Any) -> dict[str, Any]:
        """The node config of an agent given as data (the document's ``agents:`` or a
        plugin's): ``use`` (its kind and config); an LLM agent's ``instruction`` is the
        step's template (rendered over the step context, so it can read
        ``{{ $steps.<id>.output }}``) unless the step gives its own."""
        use = definition.to_dict()
        if step.config:  # the step's own config refines its agent's
            use["config"] = {**use["config"], **step.config}
        out: dict[str, Any] = {"use": use}
        instruction = use["config"].get("instruction") if use["kind"] == "agent" else None
        if isinstance(instruction, str):
            use["config"] = {k: v for k, v in use["config"].items() if k != "instruction"}
            if step.instruction is None:
                out["instruction"] = instruction
                value = self.doc.agent_values.get(step.name or "")
                held = value.value.get("instruction") if value is not None else None
                out["at"] = _at(held) if held is not None else _at(step.y)
        return out

    def foreach(self, step: Step, cont: Cont, scope: _Scope) -> str:
        gather = f"{step.id}/gather"
        first = len(self.nodes)
        body = _Scope({}, f"{scope.prefix}{step.id}/", step.retry or scope.retry, False)
        entry = self.sequence(step.steps, ("node", gather, ""), body)
        # every body node runs up to max_concurrency items at once (an inner foreach has
        # set its own); a gather stays one at a time, as its buffer is read and written
        for index in range(first, len(self.nodes)):
            node = self.nodes[index]
            if node.max_concurrency is None and node.kind != "steps.gather":
                self.nodes[index] = attrs.evolve(node, max_concurrency=step.max_concurrency)
        config: dict[str, Any] = {"step": step.id, "limit": self.doc.loop_limit}
        items = step.items
        if items is not None and isinstance(items.value, list):
            config["items_value"] = plain(items)
        elif items is not None:
            config.update(items=items.value, template="{{" in items.value, at=_at(items))
        self.nodes.append(
            NodeSpec(step.id, kind="steps.foreach", config=config, max_concurrency=None)
        )
        if entry[0] == "node":
            options = switch_options([entry[1]], [{"expr": "branch"}], gather)
            self.group("switch", [step.id], switch_targets([entry[1]], gather), options)
        gather_config: dict[str, Any] = {
            "step": step.id,
            "label": scope.prefix + step.id,
            "final": cont[0] == "end",
        }
        if cont[2]:
            gather_config["via"] = cont[2]
        self.nodes.append(NodeSpec(gather, kind="steps.gather", config=gather_config))
        self.connect(gather, cont)
        return step.id

    def condition(self, step: Step, cont: Cont, scope: _Scope) -> str:
        inner = _Scope(
            ChainMap({step.id: step}, _view(scope.visible)), scope.prefix, scope.retry, True
        )
        entries: dict[bool, str | None] = {}
        via: dict[str, str] = {}
        for branch in (True, False):
            steps = step.true if branch else step.false
            found = self.sequence(steps, cont, inner) if steps else cont
            entries[branch] = found[1] if found[0] == "node" else None
            if found[2]:  # the branch goes straight back along a loop's back-edge
                via[str(branch).lower()] = found[2]
        y = step.condition
        text = (
            "true"
            if y is None
            else (str(y.value).lower() if isinstance(y.value, bool) else y.value)
        )
        config: dict[str, Any] = {
            "step": step.id,
            "limit": self.doc.loop_limit,
            "condition": text,
            "template": "{{" in text,
            "ends": {"true": entries[True] is None, "false": entries[False] is None},
        }
        if y is not None:
            config["at"] = [y.line, y.column + (1 if y.quoted else 0)]
        if via:
            config["via"] = via
        self.nodes.append(NodeSpec(step.id, kind="steps.condition", config=config))
        yes, no = entries[True], entries[False]
        if yes is not None and yes == no:
            self.group("direct", [step.id], [yes])
        elif yes is not None:
            options = switch_options([yes], [{"expr": "branch"}], no)
            self.group("switch", [step.id], switch_targets([yes], no), options)
        elif no is not None:
            options = switch_options([no], [{"expr": "branch == false"}])
            self.group("switch", [step.id], [no], options)
        return step.id

    def parallel(self, step: Step, cont: Cont, scope: _Scope) -> str:
        """A parallel block: one fork node whose fan-out reaches the first step of every
        branch, nested parallel blocks included, so every branch at any depth starts in
        the superstep after the fork (seed 002: "generator runs in parallel with the inner
        block"); each block still ends in its own join."""
        nested = [s.id for s in _nested_parallels(step)]
        config: dict[str, Any] = {"step": step.id, "limit": self.doc.loop_limit}
        if nested:
            config["nested"] = nested
        self.nodes.append(NodeSpec(step.id, kind="steps.fork", config=config))
        entries = self._block(step, cont, scope)
        if len(entries) == 1:
            self.group("direct", [step.id], entries)
        elif entries:
            self.group("fan_out", [step.id], entries)
        return step.id

    def _block(self, step: Step, cont: Cont, scope: _Scope) -> list[str]:
        """The branches and the join of parallel block ``step``; the first steps of its
        branches (of a nested block's branches, for a branch that is a parallel block)."""
        join = f"{step.id}/join"
        child_scope = _Scope({}, f"{scope.prefix}{step.id}/", step.retry or scope.retry, False)
        entries: list[str] = []
        sources: list[str] = []
        members: dict[str, list[str]] = {}
        for child in step.steps:
            if child.type == "goto":
                self.at(child.y, "a goto cannot be a parallel block's step")
                continue
            members[child.id] = [s.id for s in child.walk() if s.type != "goto"]
            if child.type == "condition":
                end = f"{child.id}/end"
                entries.append(self.step(child, ("node", end, ""), child_scope))
                self.nodes.append(NodeSpec(end, kind="steps.pass"))
                sources.append(end)
            elif child.type == "parallel":
                inner = self._block(child, OPEN, child_scope)
                if inner:
                    entries.extend(inner)
                    sources.append(f"{child.id}/join")
            else:
                entries.append(self.step(child, OPEN, child_scope))
                sources.append(f"{child.id}/gather" if child.type == "foreach" else child.id)
        if not entries:
            return []
        self.group("fan_in", sources, [join], {"merge": "list", "when": "all"})
        config: dict[str, Any] = {
            "step": step.id,
            "children": [c.id for c in step.steps if c.type != "goto"],
            "members": members,
            "final": cont[0] == "end",
        }
        from ._paths import aliases

        names = aliases(step)
        if names:
            config["aliases"] = names
        if cont[2]:
            config["via"] = cont[2]
        self.nodes.append(NodeSpec(join, kind="steps.join", config=config))
        self.connect(join, cont)
        return entries


def _nested_parallels(step: Step) -> list[Step]:
    """The parallel blocks that are branches of ``step`` (a parallel block), at any depth
    of parallel-in-parallel: their forks are ``step``'s own."""
    found: list[Step] = []
    for child in step.steps:
        if child.type == "parallel":
            found.append(child)
            found.extend(_nested_parallels(child))
    return found


def _at(y: Y) -> list[int]:
    """Where a string value's text starts: past its opening quote when quoted."""
    return [y.line, y.column + (1 if y.quoted else 0)]


def _view(visible: Mapping[str, Step]) -> MutableMapping[str, Step]:
    """``visible`` as the read-only base of a ChainMap (which only writes its first map)."""
    return cast("MutableMapping[str, Step]", visible)


def _defer_conditions(steps: list[Step]) -> list[Step]:
    """Move each condition after the last later step of the same list whose output it
    reads (seed 002: conditions are evaluated after the steps that produce their input)."""
    anchors: dict[int, list[int]] = {}
    deferred: set[int] = set()
    # the last step of the list (by index) that holds each id: one walk of the list, not
    # one per condition (which was quadratic)
    last_holder = {inner.id: j for j, top in enumerate(steps) for inner in top.walk()}
    for index, step in enumerate(steps):
        if step.type != "condition" or step.condition is None:
            continue
        refs = {step_ref(m) for m in STEP_REF.finditer(str(step.condition.value))}
        later = [last_holder[r] for r in refs if last_holder.get(r, -1) > index]
        if later:
            deferred.add(index)
            anchors.setdefault(max(later), []).append(index)
    if not deferred:
        return steps
    ordered: list[Step] = []

    def place(index: int) -> None:
        ordered.append(steps[index])
        for moved in anchors.get(index, ()):
            place(moved)

    for index in range(len(steps)):
        if index not in deferred:
            place(index)
    return ordered


def compile_document(
    doc: Document, source: str, ctx: Any, kinds: list[str]
) -> tuple[WorkflowSpec | None, list[PlaitError]]:
    """The spec of ``doc`` and every name or graph problem found."""
    compiler = _Compiler(doc, source, ctx, kinds)
    compiler.check_names()
    compiler.check_agents()
    compiler.check_types()
    cont = compiler.sequence(doc.steps, END, _Scope({}, "", None, False))
    if compiler.problems or cont[0] != "node":
        return None, compiler.problems
    compiler.nodes = [compiler.with_loops(node) for node in compiler.nodes]
    order = {s.id: i for i, s in enumerate(compiler.all_steps)}

    def rank(node_id: str) -> tuple[int, int]:
        step, _, part = node_id.partition("/")
        return (order.get(step, len(order)), {"": 0, "end": 1, "join": 2, "gather": 2}.get(part, 3))

    nodes = sorted(compiler.nodes, key=lambda n: rank(n.id))
    groups = sorted(compiler.groups, key=lambda g: rank(g.sources[0]))
    spec = WorkflowSpec(
        name=doc.name,
        start=cont[1],
        nodes=tuple(nodes),
        edge_groups=tuple(groups),
        options={"max_supersteps": compiler.superstep_bound()},
        workflow_version=doc.version,
    )
    return spec, []
