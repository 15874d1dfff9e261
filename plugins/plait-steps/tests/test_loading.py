"""Loading: positioned errors, hostile YAML, fuzzing, the spec as data, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import plait
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from plait import LoadError, PlaitError
from plait_documents import CapabilityError, load_spec

VALID = """
workflow:
  - id: gen
    type: agent
    name: generator
  - id: check
    type: condition
    condition: "{{ $steps.gen.output == 'ok' }}"
    true:
      - {id: pub, type: agent, name: publisher}
    false:
      - goto: gen
"""


async def _echo(prompt: str) -> str:
    return "ok"


AGENTS: dict[str, Any] = {"generator": _echo, "publisher": _echo}


def _problems(text: str, **kwargs: Any) -> list[Any]:
    with pytest.raises(LoadError) as caught:
        load_spec(text, format="steps", executors=kwargs.pop("executors", AGENTS), **kwargs)
    return caught.value.problems


def test_unknown_keys_name_the_position_and_the_keys_allowed_there() -> None:
    text = "workflow:\n  - id: a\n    type: agent\n    name: generator\n    retyr: 3\n"
    (problem,) = _problems(text)
    assert (problem.line, problem.column) == (5, 5)
    assert "unknown key 'retyr'" in str(problem)
    allowed = "allowed here: id, type, name, instruction, input, config, retry, timeout"
    assert allowed in str(problem)
    assert "did you mean 'retry'?" in str(problem)
    assert "    retyr: 3\n        ^" in str(problem)


def test_every_problem_is_reported_at_once_sorted_by_position() -> None:
    text = (
        "workflow:\n"
        "  - {type: agent, name: genertor}\n"
        "  - {type: agnt, name: x}\n"
        "  - {type: condition, condition: '{{ $steps.nope.output }}', true: [{goto: missing}]}\n"
    )
    problems = _problems(text)
    assert [p.line for p in problems] == sorted(p.line for p in problems)
    text_all = "\n".join(str(p) for p in problems)
    assert "unknown agent 'genertor'" in text_all and "did you mean 'generator'?" in text_all
    assert "Plait looked in executors= (" in text_all and "generator, " in text_all
    assert "publisher" in text_all
    assert "type 'agnt'" in text_all and "did you mean 'agent'?" in text_all
    assert "no step has id 'nope'" in text_all
    assert all(p.line is not None and p.column is not None for p in problems)


def test_generated_ids_are_deterministic_and_shown_in_errors() -> None:
    text = "workflow:\n  - {type: agent, name: generator}\n  - {type: agent, name: generator}\n"
    spec = load_spec(text, format="steps", executors=AGENTS)
    assert spec.node_ids == ("step-1", "step-2")
    assert load_spec(text, format="steps", executors=AGENTS) == spec
    bad = "workflow:\n  - {type: agent, name: generator}\n  - {type: agent}\n"
    (problem,) = _problems(bad)
    assert "agent step 'step-2' needs 'name'" in str(problem)


def test_yaml_1_2_booleans_are_branch_keys_and_on_stays_a_string() -> None:
    text = VALID.replace("name: publisher}", "name: publisher, config: {mode: on}}")
    spec = load_spec(text, format="steps", executors=AGENTS)
    assert spec.node("pub").config["config"] == {"mode": "on"}
    switch = next(g for g in spec.edge_groups if g.router == "switch")
    assert switch.options["case_targets"] == ["pub"] and switch.options["default"] == "gen"
    quoted = VALID.replace("    true:", '    "true":').replace("    false:", "    'false':")
    assert load_spec(quoted, format="steps", executors=AGENTS).signature() == spec.signature()


def test_a_goto_must_name_an_earlier_step() -> None:
    text = VALID.replace("goto: gen", "goto: pub")
    (problem,) = _problems(text)
    assert "goto 'pub'" in str(problem) and "earlier steps here: gen, check" in str(problem)


def test_an_agent_nobody_gave_is_a_load_error_naming_the_available_names() -> None:
    # without an `agent` kind installed (plait-llm), whatever else this environment has
    import plait_expr
    import plait_steps
    from plait_testing import fake_entry_point, make_plugin_manager

    manager = make_plugin_manager(
        fake_entry_point("steps", plait_steps, distribution="plait-steps"),
        fake_entry_point("expr", plait_expr, distribution="plait-expr"),
    )
    text = "workflow:\n  - {type: agent, name: writer}\n"
    (problem,) = _problems(text, executors={"researcher": _echo}, plugin_manager=manager)
    assert (problem.line, problem.column) == (2, 25)
    assert "unknown agent 'writer'" in str(problem)
    assert "Plait looked in executors= (researcher)" in str(problem)


def test_the_spec_is_data_and_rebuilds_in_a_fresh_workflow() -> None:
    spec = load_spec(VALID, format="steps", executors=AGENTS)
    again = plait.WorkflowSpec.from_json(spec.to_json())
    assert again == spec and again.signature() == spec.signature()
    workflow = plait.Workflow.from_spec(again, AGENTS, allow_imports=False)
    assert workflow.run_sync("x").outputs == ["ok"]
    assert "steps.condition" in {n.kind for n in spec.nodes}


def test_a_step_id_may_equal_its_agent_name() -> None:
    # step ids and agent names are separate namespaces (seed 002: {id: qa, name: qa})
    text = "workflow:\n  - {id: generator, type: agent, name: generator}\n"
    workflow = plait.load(text, format="steps", executors=AGENTS)
    assert workflow.spec.node_ids == ("generator",)
    assert workflow.run_sync("go").outputs != []


def test_bad_template_syntax_points_into_the_document() -> None:
    text = 'workflow:\n  - {id: a, type: agent, name: generator, instruction: "x {{ 1 + }}"}\n'
    (problem,) = _problems(text)
    assert problem.line == 2 and problem.column is not None and problem.column > 40


def test_executor_steps_run_any_executor_kind(register_plugin: Any) -> None:
    class Upper:
        config_schema: dict[str, Any] = {"type": "object"}

        def check(self, config: Any, ctx: Any) -> list[Any]:
            return []

        def create(self, config: Any, ctx: Any) -> Any:
            @plait.executor(id=ctx.node_id)
            async def upper(message: str, ctx: plait.WorkflowContext[str, Any]) -> None:
                await ctx.send_message(config["prefix"] + message.upper())

            return upper

    class Plugin:
        @plait.hookimpl
        def plait_register_executor_kinds(self, register: Any) -> None:
            register("test.upper", Upper())

    register_plugin(Plugin(), "test-upper")
    text = "workflow:\n  - {id: up, type: executor, kind: test.upper, config: {prefix: '> '}}\n"
    # a kind that declares no capabilities runs only where it is granted by name
    with pytest.raises(CapabilityError, match=r"node 'up' .*needs kind=test.upper"):
        plait.load(text, format="steps")
    workflow = plait.load(text, format="steps", allow="kind=test.upper")
    assert workflow.run_sync("hi").outputs == ["> HI"]
    (problem,) = _problems(text.replace("test.upper", "test.uper"))
    assert "did you mean 'test.upper'?" in str(problem)


def test_what_an_agent_step_needs_is_reported_at_the_step() -> None:
    text = (
        "agents:\n  researcher: {ref: 'some_module:research'}\n"
        "workflow:\n  steps:\n    - id: r\n      type: agent\n      name: researcher\n"
    )
    with pytest.raises(CapabilityError, match=r"node 'r' .*needs imports") as caught:
        plait.load(text, format="steps")
    (need,) = caught.value.missing
    assert (need.position.line, need.position.column) == (5, 7)  # `id: r`, the step
    assert need.position.path == "/nodes/0"


# -- hostile input ----------------------------------------------------------------------------

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


@pytest.mark.parametrize(
    "text, message",
    [
        (LAUGHS + "workflow: *i\n", "alias bomb"),
        ("workflow: " + "[" * 5000 + "]" * 5000 + "\n", "nesting deeper"),
        ("workflow:\n  - x: " + "a" * (10 * 1024 * 1024) + "\n", "characters long"),
        ("workflow:\n  - x: " + "a" * 300_000 + "\n", "a scalar of"),
        ("workflow: !!python/object:os.system {}\n", "tag"),
        ("workflow:\n  - !!python/object/apply:os.system ['echo hi']\n", "tag"),
        ("workflow: &r [*r]\n", "deeper"),
        ("workflow: []\nworkflow: []\n", "duplicate key"),
        ("a: 1\n---\nb: 2\n", "several YAML documents"),
        ("workflow:\n  - <<: {type: agent}\n", "merge keys"),
        ("workflow: [\n", "not valid YAML"),
    ],
)
def test_hostile_yaml_is_refused_cleanly(text: str, message: str) -> None:
    problems = _problems(text)
    assert message in str(problems[0])
    assert problems[0].line is not None and problems[0].column is not None


def test_a_large_document_without_aliases_says_which_limit_it_hit() -> None:
    # some 1.9 MB of plain values and no anchor: too many values, but no alias bomb
    text = "workflow:\n  - {id: a, type: agent, name: x}\nnotes: [" + "1234567, " * 210_000 + "1]\n"
    assert 1_800_000 < len(text) < 2 * 1024 * 1024
    (problem,) = _problems(text)
    assert problem.reason == (
        "the document holds more than 200,000 values (scalars, mappings and lists); the "
        "limit is 200,000"
    )
    assert "alias" not in str(problem)
    laughs = _problems(LAUGHS + "workflow: *i\n")[0].reason
    assert laughs.startswith("the document expands to more than 200,000 values, the limit, ")
    assert "repeated by aliases" in laughs and laughs.endswith("a possible alias bomb")


def _deep(levels: int, inner: str) -> str:
    return "[" * levels + inner + "]" * levels


@pytest.mark.parametrize(
    "text, message, where",
    [
        # each anchor 40 levels deep: legal alone, 80 through the alias (line 2's *a)
        (f"a: &a {_deep(40, 'x')}\nb: {_deep(40, '*a')}\nworkflow: []\n", "deeper", (2, 44)),
        ("workflow: *nowhere\n", "names no anchor", (1, 11)),
        ("workflow: &r 1\nagain: &r [*r]\n", "repeats a value it is inside of", (2, 12)),
        ("k: &k [a]\nworkflow: {*k : 1}\n", "a mapping key must be a plain scalar", (2, 12)),
        ("workflow: {? [a] : 1}\n", "a mapping key must be a plain scalar", (1, 14)),
        ("workflow: !!set {a: null}\n", "the tag 'tag:yaml.org,2002:set'", (1, 11)),
        ("workflow: []\n--- \nmore: []\n", "several YAML documents", (3, 1)),
    ],
)
def test_aliases_keys_tags_and_documents_are_refused_where_they_are_written(
    text: str, message: str, where: tuple[int, int]
) -> None:
    (problem,) = _problems(text)
    assert message in str(problem)
    assert (problem.line, problem.column) == where


def test_an_alias_repeats_its_anchor_and_counts_at_every_use() -> None:
    from plait_steps._yaml import MAX_NODES, parse

    root, _ = parse("r: &r {max_attempts: 3, on: [timeout]}\nx: *r\n", "<t>")
    assert root is not None
    first, second = root.value["r"], root.value["x"]
    assert _plain(second) == {"max_attempts": 3, "on": ["timeout"]}
    assert second is first and (first.line, first.column) == (1, 4)
    assert root.keys["x"] == (2, 1)
    # a flat list of 1,000 values read 200 times is past the bound, though its text is small
    text = "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 200) + "]\n"
    (problem,) = _problems(text)
    assert f"more than {MAX_NODES:,} values" in str(problem) and "alias bomb" in str(problem)
    assert problem.line == 2


def test_the_cycle_collector_is_back_as_it_was_after_a_load() -> None:
    import gc

    assert gc.isenabled()
    _problems("workflow: [\n")
    assert gc.isenabled()
    load_spec(VALID, format="steps", executors=AGENTS)
    assert gc.isenabled()
    gc.disable()
    try:
        load_spec(VALID, format="steps", executors=AGENTS)
        assert not gc.isenabled()
    finally:
        gc.enable()


def _plain(y: Any) -> Any:
    if isinstance(y.value, dict):
        return {k: _plain(v) for k, v in y.value.items()}
    if isinstance(y.value, list):
        return [_plain(v) for v in y.value]
    return y.value


_yaml_scalars = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["on", "yes", "no", "null", "~", "0x1f", "0o17", ".inf", "1e3", "-0"]),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
)
_yaml_values = st.recursive(
    _yaml_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_yaml_scalars, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_yaml_values, st.sampled_from([None, True, False]))
def test_values_are_what_ruamel_reads(value: Any, flow: bool | None) -> None:
    # the values built from the parser's events are ruamel's own safe load of the same
    # text (YAML 1.2), in block style, flow style and both, with every scalar style ruamel
    # writes (plain, quoted, literal)
    import io

    from plait_steps._yaml import YamlProblem, parse
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 2)
    yaml.default_flow_style = flow
    stream = io.StringIO()
    yaml.dump({"v": value}, stream)
    text = stream.getvalue()
    reader = YAML(typ="safe", pure=False)  # the parser parse() uses
    reader.version = (1, 2)
    try:
        expected = reader.load(text)
    except YAMLError:  # ruamel's writer and libyaml differ on a few plain scalars ("0?")
        with pytest.raises(YamlProblem, match="not valid YAML"):
            parse(text, "<t>")
        return
    root, _ = parse(text, "<t>")
    assert root is not None
    assert _plain(root) == expected, text


# -- fuzzing ------------------------------------------------------------------------------------

_scalars = st.one_of(
    st.sampled_from(["agent", "parallel", "condition", "executor", "goto", "gen", "true", "on"]),
    st.text(max_size=8),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
)
_keys = st.sampled_from(
    [
        "id",
        "type",
        "name",
        "steps",
        "true",
        "false",
        "condition",
        "goto",
        "retry",
        "workflow",
        "max_attempts",
        "on",
        "delay",
        "instruction",
        "kind",
        "config",
    ]
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=20,
)


def _check(text: str) -> None:
    from plait.spi import BuildContext
    from plait_steps import StepsLoader

    ctx = BuildContext(source="<fuzz>", executors=AGENTS, manager=plait.get_plugin_manager())
    try:
        StepsLoader().load(text, ctx)
    except LoadError as exc:
        assert exc.problems
        for problem in exc.problems:
            assert isinstance(problem, PlaitError)
            assert getattr(problem, "line", None) is not None, str(problem)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.just("workflow"), _values, min_size=1))
def test_fuzz_random_documents_load_or_fail_with_a_position(doc: dict[str, Any]) -> None:
    _check(json.dumps(doc))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(VALID) - 1), st.integers(0, 8), st.text(max_size=6))
def test_fuzz_mutated_valid_documents_load_or_fail_with_a_position(
    at: int, cut: int, insert: str
) -> None:
    _check(VALID[:at] + insert + VALID[at + cut :])


def test_registering_the_plugin_does_not_import_ruamel() -> None:
    code = (
        "import sys, plait\n"
        "m = plait.get_plugin_manager(); m.registry('loader'); m.registry('executor_kind')\n"
        "assert 'steps' in m.registry('loader').names()\n"
        "print(sorted(x for x in sys.modules if x.startswith('ruamel')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_executor_step_that_does_not_build_is_one_problem_naming_the_step() -> None:
    text = """
workflow:
  - id: fetch
    type: executor
    kind: python
    config: {ref: "no_such_module_here:run"}
"""
    with pytest.raises(PlaitError) as caught:
        plait.load(text, format="steps", allow_imports=True)
    message = str(caught.value)
    assert message.count("problem(s)") == 1, message
    # the step's line and column (``- id: fetch``), as well as the path in the spec
    assert (
        "<string>:3:5 at /nodes/0/config/config/ref: executor 'fetch': cannot import "
        "'no_such_module_here:run'"
    ) in message


@plait.executor(id="shout")
async def shout(text: str, ctx: plait.WorkflowContext[plait.Never, str]) -> None:
    await ctx.yield_output(text.upper())


def test_nested_workflows_load_in_linear_time() -> None:
    # 1.7 KB: an executor step holding ten nested workflow specs. Each level used to be
    # built twice per level above it (2**10 builds, seconds); now each is built once by the
    # loader's checks and once by the build
    from plait.spi import load_scope

    depth = 10
    spec: dict[str, Any] = {
        "name": "leaf",
        "start": "shout",
        "nodes": [{"id": "shout", "kind": "python", "config": {"ref": "test_loading:shout"}}],
        "edge_groups": [],
    }
    for level in range(depth):
        config = {"spec": spec, "allow_direct_output": True}
        node = {"id": "nest", "kind": "workflow", "config": config}
        spec = {"name": f"level{level}", "start": "nest", "nodes": [node], "edge_groups": []}
    step = {"id": "deep", "type": "executor", "kind": "workflow", "config": {"spec": spec}}
    text = "workflow:\n  - " + json.dumps(step) + "\n"
    assert 1500 < len(text) < 2000
    with load_scope() as scope:
        workflow = plait.load(text, format="steps", allow_imports=True)
    assert scope.builds <= 2 * depth + 5
    assert workflow.run_sync("hi").outputs == ["HI"]


# -- linear in the document (issue 24, finding 7) ----------------------------------------------


def test_thousands_of_unknown_step_references_list_the_ids_once_and_briefly() -> None:
    # Each problem used to list every step id and compare the reference with every id: a
    # 60 KB document took 49 s and 1.4 GB. The listing is now built once and capped, and
    # a did-you-mean is offered for as many references as a LoadError shows.
    steps = "".join(f"  - {{id: s{n}, type: agent, name: generator}}\n" for n in range(1500))
    refs = "".join(f"{{{{ $steps.x{n}.output }}}}" for n in range(1500))
    text = f'workflow:\n{steps}  - {{id: last, type: agent, name: generator, input: "{refs}"}}\n'
    found = _problems(text)
    assert len(found) == 1500
    assert all(len(p.reason) < 600 for p in found), max(len(p.reason) for p in found)
    assert "step ids: last, s0, s1, s10, s100" in found[0].reason
    assert f"… and {1501 - 20:,} more" in found[0].reason
    with_hint = [p for p in found if "did you mean" in p.reason]
    assert 0 < len(with_hint) <= LoadError.SHOWN


def test_a_quoted_step_reference_that_never_closes_is_read_in_linear_time() -> None:
    # STEP_REF's lazy ``(.*?)\2`` rescanned the rest of the text at every unclosed
    # ``$steps["``: 72 KB took 11 s, this 300 KB text minutes. A child process with a
    # hang guard runs it, so the quadratic version fails instead of stalling the suite.
    text = "workflow:\n  - {id: a, type: agent, name: generator, input: '" + '$steps["x' * 33_000
    code = (
        "import sys, plait\n"
        "from plait._errors import LoadError\n"
        "try:\n"
        "    plait.load(sys.stdin.read(), format='steps', executors={'generator': print})\n"
        "except LoadError as exc:\n"
        "    print(len(exc.problems))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=text + "'}\n",
        capture_output=True,
        text=True,
        timeout=60,  # a hang guard; it takes about a second
        check=True,
    )
    assert done.stdout.strip().isdigit(), done.stdout + done.stderr


HUGE_HEX = "0x" + "f" * 5000


@pytest.mark.parametrize(
    "text, line, column",
    [
        (f"workflow:\n  - {{id: a, type: agent, name: generator, timeout: {HUGE_HEX}}}\n", 2, 52),
        (
            "workflow:\n  - id: a\n    type: agent\n    name: generator\n"
            f"    retry: {{max_attempts: {HUGE_HEX}}}\n",
            5,
            27,
        ),
        (
            "workflow:\n  - {id: a, type: agent, name: generator}\n  - id: c\n"
            "    type: condition\n    condition: '{{ true }}'\n    true:\n"
            f"      - goto: {HUGE_HEX}\n",
            7,
            15,
        ),
        (f"workflow:\n  - {{id: a, type: agent, name: generator, timeout: {'9' * 5000}}}\n", 2, 52),
    ],
)
def test_a_huge_number_is_a_positioned_error(text: str, line: int, column: int) -> None:
    # Issue 24, finding 8: these escaped as a bare OverflowError (float() of a 20,000-bit
    # integer) or ValueError (Python's 4,300-digit limit on printing an integer).
    (problem,) = _problems(text)
    assert isinstance(problem, PlaitError)
    assert (problem.line, problem.column) == (line, column)
    assert "a number of 5,00" in problem.reason and "the limit is 100" in problem.reason
    assert len(str(problem)) < 1000


def test_an_expression_error_shows_the_text_as_written_with_its_dollars() -> None:
    # Issue 34, item 6: "$steps" was rewritten to " steps" before compiling, so errors
    # echoed "{{ size( steps.words.output) >  }}"; the text is now compiled as written
    # ("$steps" is the expression language's "steps"), and a string keeps its "$".
    text = VALID.replace(
        "condition: \"{{ $steps.gen.output == 'ok' }}\"",
        'condition: "{{ size($steps.gen.output) > }}"',
    )
    (problem,) = _problems(text)
    shown = str(problem)
    assert "size($steps.gen.output) > }}" in shown, shown
    assert "size( steps" not in shown
    assert (problem.line, problem.column) == (8, 46)  # the "}}" the expression ends at
    spec = load_spec(VALID.replace("== 'ok'", "== '$steps'"), format="steps", executors=AGENTS)
    conditions = [n.config.get("condition") for n in spec.nodes if "condition" in n.config]
    assert conditions == ["{{ $steps.gen.output == '$steps' }}"]


def test_dollar_variables_run_as_before() -> None:
    workflow = plait.load(VALID, format="steps", executors=AGENTS)
    assert workflow.run_sync("go").outputs == ["ok"]


def test_an_agent_that_cannot_take_the_steps_text_is_refused_at_its_step() -> None:
    async def count(text: str) -> int:
        return len(text)

    async def double(n: int) -> int:
        return n * 2

    async def anything(value):  # type: ignore[no-untyped-def]
        return value

    text = (
        "workflow:\n"
        "  - {id: first, type: agent, name: count}\n"
        "  - {id: second, type: agent, name: double}\n"
        "  - {id: third, type: agent, name: anything}\n"
        "  - {id: fourth, type: agent, name: double, input: '{{ $steps.first.output }}'}\n"
    )
    agents = {"count": count, "double": double, "anything": anything}
    (problem,) = _problems(text, executors=agents)
    assert (problem.line, problem.column) == (3, 37)  # the agent's name
    assert problem.reason == (
        "step 'second': agent 'double' takes int, but the step gives it str: the prior "
        "steps' outputs and the prompt as one text; give the step an 'input' template that "
        "makes what the agent takes"
    )


def test_a_kind_checks_every_config_with_its_schema_whatever_it_checked_before() -> None:
    from plait.spi import BuildContext
    from plait_steps._foreach import GatherKind

    kind = GatherKind()
    ctx = BuildContext(manager=plait.get_plugin_manager(), source="f.yaml", node_id="g")
    assert kind.check({"step": "each", "final": True}, ctx) == []
    assert kind.check({"step": "each", "final": False}, ctx) == []  # the same shape
    (problem,) = kind.check({"step": "each", "final": "yes"}, ctx)
    assert problem.path == "/config/final" and "'yes' is not of type" in str(problem)
    (problem,) = kind.check({"step": "each", "fnial": True}, ctx)
    assert problem.path == "/config/fnial" and "did you mean 'final'?" in str(problem)
    missing, unknown = kind.check({"stp": "each"}, ctx)
    assert "'step' is required" in str(missing) and "did you mean 'step'?" in str(unknown)
