"""The elements of a flow, as the grammar's inline transformer reduces them.

Each rule of ``flow.lark`` becomes one small record holding its tokens (so every problem
found later points at the text). :mod:`plait_flow._compile` turns the records into the
``WorkflowSpec``. Nesting depth is counted here, bottom-up, so that the compiler never
recurses into a document nested deeper than :data:`MAX_DEPTH`.
"""

from __future__ import annotations

from typing import Any, Union

__all__ = [
    "MAX_DEPTH",
    "Agent",
    "Chain",
    "Conditional",
    "Definition",
    "Document",
    "Elements",
    "Guarded",
    "Parallel",
    "SubFlow",
]

#: how deeply parallel blocks and conditions may nest
MAX_DEPTH = 40


class Agent:
    """A step naming an agent (an executor, an executor kind or a published fragment)."""

    __slots__ = ("token",)
    depth = 1
    too_deep = None

    def __init__(self, token: Any) -> None:
        self.token = token


class SubFlow:
    """``@name``, or ``workflow(name)``: a named flow of this text, or a published
    fragment. ``at`` is the ``@`` token or the ``workflow`` name before the ``(``."""

    __slots__ = ("at", "token")
    depth = 1
    too_deep = None

    def __init__(self, at: Any, token: Any) -> None:
        self.at = at
        self.token = token

    @property
    def spelled(self) -> str:
        """The step as the text writes it: ``@name`` or ``workflow(name)``."""
        if self.at.type == "AT":
            return f"@{self.token.value}"
        return f"{self.at.value}({self.token.value})"


class Parallel:
    """``[a, b -> c] by merge(option="value")``."""

    __slots__ = ("branches", "depth", "merge", "options", "token", "too_deep")
    depth: int

    def __init__(
        self,
        token: Any,
        branches: list[Chain],
        merge: Any,
        options: list[tuple[Any, Any]],
    ) -> None:
        self.token = token
        self.branches = branches
        self.merge = merge
        self.options = options
        self.depth = 1 + max((b.depth for b in branches), default=0)
        self.too_deep = _too_deep(self, branches)


class Conditional:
    """``(condition ? yes : no)``."""

    __slots__ = ("depth", "expr", "no", "token", "too_deep", "yes")
    depth: int

    def __init__(self, token: Any, expr: Any, yes: Chain, no: Chain) -> None:
        self.token = token
        self.expr = expr
        self.yes = yes
        self.no = no
        self.depth = 1 + max(yes.depth, no.depth)
        self.too_deep = _too_deep(self, [yes, no])


Step = Union[Agent, SubFlow, Parallel, Conditional]  # noqa: UP007 - a runtime alias on 3.10


class Guarded:
    """``step -error-> fallback -error-> …``: each step takes the failures of the one
    before it."""

    __slots__ = ("depth", "steps", "too_deep")
    depth: int

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.depth = max(s.depth for s in steps)
        self.too_deep = next((s.too_deep for s in steps if s.too_deep is not None), None)


class Chain:
    """``a -> b -> c``."""

    __slots__ = ("depth", "items", "too_deep")
    depth: int

    def __init__(self, items: list[Guarded]) -> None:
        self.items = items
        self.depth = max(i.depth for i in items)
        self.too_deep = next((i.too_deep for i in items if i.too_deep is not None), None)


class Definition:
    """``@name = chain``."""

    __slots__ = ("chain", "token")

    def __init__(self, token: Any, chain: Chain) -> None:
        self.token = token
        self.chain = chain


class Document:
    """Named flows, then the flow itself."""

    __slots__ = ("chain", "definitions")

    def __init__(self, definitions: list[Definition], chain: Chain) -> None:
        self.definitions = definitions
        self.chain = chain


def _too_deep(element: Any, children: list[Any]) -> Any:
    """The token of the first element nested past :data:`MAX_DEPTH`, or None."""
    inner = next((c.too_deep for c in children if c.too_deep is not None), None)
    if inner is not None:
        return inner
    return element.token if element.depth > MAX_DEPTH else None


def _tokens(children: list[Any], kind: str) -> list[Any]:
    return [c for c in children if getattr(c, "type", None) == kind]


class Elements:
    """The grammar's inline transformer: one method per rule, each given the rule's
    children (tokens and reduced elements) and returning an element.

    lark calls these methods through the callbacks it builds from this object; they keep no
    state, so one instance serves every parse.
    """

    def start(self, children: list[Any]) -> Document:
        return Document(children[:-1], children[-1])

    def definition(self, children: list[Any]) -> Definition:
        return Definition(children[1], children[3])

    def chain(self, children: list[Any]) -> Chain:
        return Chain(children[::2])

    def guarded(self, children: list[Any]) -> Guarded:
        return Guarded(children[::2])

    def agent(self, children: list[Any]) -> Agent:
        return Agent(children[0])

    def subflow(self, children: list[Any]) -> SubFlow:
        # "@", name; or "workflow", "(", name, ")" (the compiler checks the first word)
        return SubFlow(children[0], children[1] if len(children) == 2 else children[2])

    def parallel(self, children: list[Any]) -> Parallel:
        branches = [c for c in children if isinstance(c, Chain)]
        names = _tokens(children, "NAME")
        options = [c for c in children if isinstance(c, tuple)]
        return Parallel(children[0], branches, names[0] if names else None, options)

    def merge_arg(self, children: list[Any]) -> tuple[Any, Any]:
        return (children[0], children[2])

    def conditional(self, children: list[Any]) -> Conditional:
        return Conditional(children[0], children[1], children[3], children[5])
