"""Capabilities as values (parsed, printed, hashed, covered) and what a spec needs."""

from __future__ import annotations

from typing import Any

import plait
import pytest
from hypothesis import given, strategies as st
from plait_documents import (
    CAPABILITY_NAMES,
    IMPORTS,
    SUBPROCESS,
    Capability,
    Grants,
    documents,
    filesystem,
    kind_capabilities,
    needs,
    network,
)


def test_a_capability_reads_back_from_its_flag_form_and_is_hashable() -> None:
    for text in ("imports", "subprocess", "network", "network=api.example.com", "kind=x.y"):
        assert str(Capability.parse(text)) == text
    assert Capability.parse(" network = API.Example.com ") == network("api.example.com")
    assert len({network("a"), network("a"), SUBPROCESS, IMPORTS}) == 3
    assert sorted([network("b"), filesystem(), IMPORTS, network(), SUBPROCESS]) == [
        IMPORTS,
        SUBPROCESS,
        network(),
        network("b"),
        filesystem(),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("netwrk", "unknown capability 'netwrk'; capabilities are: imports, subprocess"),
        ("imports=os", "capability 'imports' takes no scope"),
        ("network=", "capability 'network' has an empty scope"),
        ("kind", "capability 'kind' needs a kind name"),
    ],
)
def test_a_wrong_capability_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Capability.parse(text)


def test_a_grant_covers_its_host_or_any_and_paths_below_its_own() -> None:
    assert network().covers(network("api.example.com"))
    assert network("127.0.0.1").covers(network("127.0.0.1"))
    assert not network("127.0.0.1").covers(network("127.0.0.2"))
    assert not network("127.0.0.1").covers(network())  # a templated host is any host
    assert filesystem("/data").covers(filesystem("/data/in/x.txt"))
    assert not filesystem("/data").covers(filesystem("/database"))
    assert not filesystem("/data").covers(filesystem("/data/../etc/passwd"))
    assert not SUBPROCESS.covers(IMPORTS)


def test_grants_from_what_allow_accepts() -> None:
    assert str(Grants.of(None)) == "none"
    assert str(Grants.of("subprocess, network=X.org,")) == "subprocess,network=x.org"
    assert Grants.of(["imports", network("a")]).covers(IMPORTS)
    assert Grants.of("all").covers(network("anywhere")) and Grants.of(True).covers(IMPORTS)
    assert Grants.of(None, allow_imports=True).covers(IMPORTS)
    built = Grants.to_build()
    assert built.covers(SUBPROCESS) and not built.covers(IMPORTS)
    assert Grants.to_build(allow_imports=True).covers(IMPORTS)
    with pytest.raises(TypeError, match="allow= takes capability names"):
        Grants.of([3])  # type: ignore[list-item]


def _spec(*nodes: plait.NodeSpec, edges: tuple[plait.EdgeGroupSpec, ...] = ()) -> Any:
    return plait.WorkflowSpec(name="t", start=nodes[0].id, nodes=nodes, edge_groups=edges)


def test_a_kind_declaring_something_else_than_capabilities_is_named(
    register_plugin: Any,
) -> None:
    class Sloppy:
        config_schema: dict[str, Any] = {"type": "object"}
        capabilities = ("subprocess",)

        def check(self, config: Any, ctx: Any) -> list[Any]:
            return []

        def create(self, config: Any, ctx: Any) -> Any:
            raise AssertionError("never built")

    class Plugin:
        @plait.hookimpl
        def plait_register_executor_kinds(self, register: Any) -> None:
            register("test.sloppy", Sloppy())

    register_plugin(Plugin(), "test-sloppy")
    with pytest.raises(plait.errors.LoadError, match="executor kind 'test.sloppy' declares"):
        needs(_spec(plait.NodeSpec("s", kind="test.sloppy")))


_SCOPES = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters=","
    ),
    min_size=1,
    max_size=20,
)


@st.composite
def _capabilities(draw: st.DrawFn) -> Capability:
    name = draw(st.sampled_from(CAPABILITY_NAMES))
    if name in ("imports", "subprocess"):
        return Capability(name)
    scope = draw(_SCOPES if name == "kind" else st.none() | _SCOPES)
    return Capability(name, scope.lower() if name == "network" and scope else scope)


@given(st.lists(_capabilities(), max_size=6))
def test_capabilities_and_grants_read_back_from_their_text(found: list[Capability]) -> None:
    for capability in found:
        assert Capability.parse(str(capability)) == capability
        assert capability.covers(capability)
    grants = Grants.of(found)
    assert Grants.of(str(grants)) == grants if found else str(grants) == "none"
    assert all(grants.covers(c) for c in found)


def test_a_lazily_registered_kind_declares_without_being_imported(register_plugin: Any) -> None:
    from plait.spi import BuildContext, lazy

    class Plugin:
        @plait.hookimpl
        def plait_register_executor_kinds(self, register: Any) -> None:
            provides = ("check", "create", "config_schema")
            kind = lazy(
                "no_such_module_anywhere:Kind", provides=provides, capabilities=(SUBPROCESS,)
            )
            register("test.lazy", kind)

    register_plugin(Plugin(), "test-lazy")
    found = kind_capabilities("test.lazy", {}, BuildContext(node_id="n"))
    assert found == {SUBPROCESS}  # importing the module would have failed


def test_a_link_inside_a_granted_folder_that_leads_out_of_it_is_outside(tmp_path: Any) -> None:
    granted, elsewhere = tmp_path / "granted", tmp_path / "elsewhere"
    granted.mkdir()
    elsewhere.mkdir()
    (granted / "link").symlink_to(elsewhere)
    assert filesystem(str(granted)).covers(filesystem(str(granted / "runs.db")))
    assert not filesystem(str(granted)).covers(filesystem(str(granted / "link" / "runs.db")))
    assert filesystem(str(elsewhere)).covers(filesystem(str(granted / "link" / "runs.db")))
    assert not documents(str(granted)).covers(documents(str(granted / "link" / "flow.yaml")))
