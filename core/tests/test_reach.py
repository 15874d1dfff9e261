"""What a fan-in's flush asks of the graph — which executors the active ones can still
reach — is derived in one pass over the graph (:func:`plait._graph.reach_masks`), not one
search per executor: a 3,000-executor chain looks at each executor's successors twice,
where a search from every executor looks at them about 4.5 million times."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator, Mapping

import pytest
from plait._graph import reach_masks


class Counting(Mapping[str, list[str]]):
    """Successors that count how often they are asked for."""

    def __init__(self, successors: dict[str, list[str]]) -> None:
        self.successors = successors
        self.asked = 0

    def __getitem__(self, node: str) -> list[str]:
        self.asked += 1
        return self.successors[node]

    def __iter__(self) -> Iterator[str]:
        return iter(self.successors)

    def __len__(self) -> int:
        return len(self.successors)


def searched(successors: Mapping[str, list[str]], start: str) -> set[str]:
    """Every node reachable from ``start``: a plain breadth-first search."""
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in successors.get(queue.popleft(), ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def members(nodes: list[str], mask: int) -> set[str]:
    return {node for i, node in enumerate(nodes) if mask >> i & 1}


@pytest.mark.parametrize("cycle", [False, True])
def test_a_long_chain_is_derived_in_one_pass(cycle: bool) -> None:
    n = 3000
    nodes = [f"n{i}" for i in range(n)]
    successors = {node: [nxt] for node, nxt in zip(nodes, nodes[1:])}
    successors[nodes[-1]] = [nodes[0]] if cycle else []
    counting = Counting(successors)
    masks = reach_masks(nodes, counting)
    # each node's successors are asked for when the search enters it and when its
    # component completes: 2n, where a search from every node asks n (n + 1) / 2 times
    assert counting.asked == 2 * n
    everything = (1 << n) - 1
    if cycle:  # one component: every node reaches every node
        assert set(masks.values()) == {everything}
    else:  # node i reaches itself and every node after it
        assert [masks[node] for node in nodes[::500]] == [
            everything ^ ((1 << i) - 1) for i in range(0, n, 500)
        ]


def test_masks_equal_a_search_from_every_node_on_random_graphs() -> None:
    rng = random.Random(35)
    for _ in range(200):
        n = rng.randint(1, 30)
        nodes = [f"e{i}" for i in range(n)]
        successors = {
            node: rng.sample(nodes, rng.randint(0, min(3, n)))
            for node in nodes
            if rng.random() < 0.9
        }
        masks = reach_masks(nodes, successors)
        assert {node: members(nodes, masks[node]) for node in nodes} == {
            node: searched(successors, node) for node in nodes
        }


def test_a_deep_graph_needs_no_recursion() -> None:
    n = 20_000  # deeper than Python's recursion limit
    nodes = [str(i) for i in range(n)]
    successors = {node: [nxt] for node, nxt in zip(nodes, nodes[1:])}
    masks = reach_masks(nodes, successors)
    assert masks[nodes[-1]] == 1 << (n - 1)
    assert masks[nodes[0]] == (1 << n) - 1
