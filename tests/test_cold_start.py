"""Cold start: loading plugins, and ``plait --help``, import no heavy library (issue 9).

Each check runs in a fresh interpreter (``sys.executable``), since this process has
imported everything already. A plugin imports its client library when one of its things
is first used — a store when it is opened, click when the command line runs — never when
it registers. The times are in ``tests/benchmarks/bench_cold_start.py``; nothing here is
timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: Libraries a first-party plugin may import only when one of its things is used.
HEAVY = (
    "redis",
    "psycopg",
    "psycopg_pool",
    "click",
    "ray",
    "opentelemetry",
    "httpx",
    "jsonschema",
    "lark",
    "ruamel",
    "sqlite3",
    "llm",
    "rich",
)
#: Store client libraries; ``plait --help`` imports none.
STORE_CLIENTS = ("redis", "psycopg", "psycopg_pool", "sqlite3")

LOAD_EVERY_PLUGIN = textwrap.dedent(
    """
    import json, sys
    import plait

    manager = plait.get_plugin_manager()
    plugins = manager.describe()
    for kind in sorted({kind for info in plugins for kind in info.registered} - {"hook"}):
        manager.registry(kind)  # every registry that holds something, built
    manager.durability("the test"), manager.documents("the test")  # the one of each
    heavy = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))
    # the converter search (and the type check under it) is imported when a build needs it
    search = sorted(
        {"plait_converters._graph", "plait_converters._assignable"} & set(sys.modules)
    )

    from importlib.metadata import entry_points

    first_party = {
        ep.name: ep.dist.name for ep in entry_points(group="plait")
        if ep.dist is not None and ep.dist.name.startswith("plait-")
    }
    loaded = {info.name: info.status for info in plugins}
    # a store is opened (not connected): now its client library is imported
    from plait_durable import open_store

    open_store("redis://127.0.0.1:1/0")
    print(json.dumps({
        "heavy": heavy,
        "search": search,
        "first_party": first_party,
        "status": loaded,
        "redis_after_open": "redis" in sys.modules,
    }))
    """
)


def _python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


@pytest.fixture(scope="module")
def loaded() -> dict[str, object]:
    done = _python("-c", LOAD_EVERY_PLUGIN, *HEAVY)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_loading_every_first_party_plugin_imports_no_heavy_library(
    loaded: dict[str, object],
) -> None:
    assert loaded["heavy"] == [], (
        f"loading plugins imported {loaded['heavy']}; a plugin must import its client "
        "library when one of its things is first used (`-X importtime` does not show the "
        "plugin modules themselves: entry points are loaded through importlib)"
    )


def test_loading_plugins_does_not_import_the_converter_search(loaded: dict[str, object]) -> None:
    # plugins define converters, but nothing imports plait-converters' search
    assert loaded["search"] == []


def test_every_first_party_plugin_was_loaded(loaded: dict[str, object]) -> None:
    first_party = loaded["first_party"]
    status = loaded["status"]
    assert isinstance(first_party, dict) and isinstance(status, dict)
    assert {"redis", "postgres", "stores", "cli", "executors"} <= set(first_party)
    not_loaded = {name: status.get(name) for name in first_party if status.get(name) != "loaded"}
    assert not_loaded == {}


def test_a_store_imports_its_client_library_when_it_is_opened(loaded: dict[str, object]) -> None:
    assert loaded["redis_after_open"] is True


# ``python -m plait_cli ARGS``, then the modules it imported, as JSON on stderr's last line.
# (``-X importtime`` would miss modules imported through ``importlib.import_module``.)
RUN_PLAIT = textwrap.dedent(
    """
    import json, runpy, sys

    try:
        runpy.run_module("plait_cli", run_name="__main__", alter_sys=True)
    except SystemExit as exit:
        code = exit.code
    print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
    """
)


def _imported_by(
    *args: str, cwd: Path | None = None
) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules ``python -m plait_cli ARGS`` imported, and the finished process."""
    done = _python("-c", RUN_PLAIT, *args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stderr.splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return set(report["modules"]), done


def test_plait_help_imports_no_store_client_and_no_command_module() -> None:
    modules, done = _imported_by("--help")
    for command in ("plugins", "fragments", "run", "resume", "validate", "graph"):
        assert f"\n  {command} " in done.stdout
    assert "click" in modules  # the command line ran
    assert sorted({m.split(".")[0] for m in modules} & set(STORE_CLIENTS)) == []
    assert not {"plait_cli._run", "plait_cli._listing"} & modules
    assert not {"plait_cli._validate", "plait_cli._graph"} & modules


def test_a_command_s_module_is_imported_when_that_command_runs() -> None:
    modules, done = _imported_by("run", "--help")
    assert "plait_cli._run" in modules and "plait_cli._listing" not in modules
    assert "TARGET" in done.stdout


TWO_STEPS = """\
workflow:
  - id: shout
    type: executor
    kind: shell
    config: {argv: ["tr", "a-z", "A-Z"], input: message}
  - id: quiet
    type: executor
    kind: shell
    config: {argv: ["tr", "A-Z", "a-z"], input: message}
"""


def test_a_small_run_imports_only_what_it_uses(tmp_path: Path) -> None:
    # issue 34, item 10: a two-step YAML run (bench_cli.py's run_yaml2) checks its configs
    # without jsonschema (imported only to explain a config that does not fit), reads no
    # parser generator and, with no expression, not the expression language
    (tmp_path / "steps.yaml").write_text(TWO_STEPS)
    modules, done = _imported_by(
        "run", "steps.yaml", "hello plait", "--allow", "subprocess", cwd=tmp_path
    )
    assert done.stdout.strip().endswith("hello plait")
    top = {m.split(".")[0] for m in modules}
    assert sorted(top & {"jsonschema", "referencing", "lark"}) == []
    # the front-ends' shared run error for a failed expression (plait_expr._failed, which
    # imports only plait) may load; the language itself (lexer, parser, compiler) may not
    language = {m for m in modules if m.startswith("plait_expr.")} - {"plait_expr._failed"}
    assert sorted(language) == []
    # every edge sends what its target takes and no step has a Python agent, so the type
    # check is not imported; nothing waits for an answer, so neither are the prompts
    assert sorted(modules & {"plait_converters._assignable", "plait_cli._prompt"}) == []
    # no step reads a $steps path and none is a parallel block: the paths' shapes are not
    assert "plait_steps._paths" not in modules
    # the run only saves checkpoints, holds plain values, names no agent, has no loop
    # and every edge fits: the records of reading a checkpoint back, of listing runs and
    # checkpoints, of the journal and of the message converter are not imported (each
    # attrs class costs ~1 ms to create), nor those of agents, loops and mismatched edges
    records = {
        "plait_durable._typed",
        "plait_durable._runpages",
        "plait_durable._journalevents",
        "plait_durable._info",
        "plait_converters._messages",
        "plait_documents._definitions",
        "plait_documents._mismatch",
        "plait_steps._loops",
    }
    assert sorted(modules & records) == []
    assert "plait_durable._durable" in modules  # the run was checkpointed
    # plait run builds none of plait resume's options, nor imports its change policies
    assert sorted(modules & {"plait_cli._resume", "plait_cli._on_change"}) == []


# A typed two-step chain built with ``WorkflowBuilder``, then composed into another
# builder: the modules imported by then, as JSON.
BUILD_A_CHAIN = textwrap.dedent(
    """
    import json, sys
    from plait import WorkflowContext, executor
    from plait_builders import WorkflowBuilder

    @executor
    async def first(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)

    @executor
    async def second(x: int, ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(x + 1)

    chain = WorkflowBuilder("chain").add_edge(first, second).set_start(first)
    chain.build()
    built = sorted(sys.modules)
    WorkflowBuilder("outer").add_workflow(chain, prefix="inner")
    print(json.dumps({"built": built, "composed": sorted(sys.modules)}))
    """
)


def test_a_build_imports_no_composition_record_converter_node_or_run_record() -> None:
    # issue 35: a cold build makes only the attrs classes it uses (each costs about a
    # millisecond to make); composing, converting and running import their own
    done = _python("-c", BUILD_A_CHAIN)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    built, composed = set(report["built"]), set(report["composed"])
    later = {"plait_builders._connection", "plait_documents._converter_nodes", "plait._events"}
    assert "plait_builders._builder" in built
    assert sorted(built & later) == []
    assert "plait_builders._connection" in composed


def test_the_listed_short_help_is_each_built_in_command_s_own() -> None:
    from plait_cli import _app

    cli = _app.make_cli()
    for name, (_, short_help) in _app.BUILT_IN.items():
        command = cli.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.name == name
        assert not isinstance(command, _app._LazyCommand)
        assert command.short_help == short_help, name


def test_every_lazy_registration_is_what_it_declares() -> None:
    # a plugin that registers lazily is checked against the attributes it declares; the
    # object behind it must have them, and its static attributes must be the real ones
    import plait
    from plait._registry import SINGLETONS, Lazy, _has
    from plait_cli._on_change import policies

    manager = plait.get_plugin_manager()
    given = {
        "plait_durability": manager.durability("the test"),
        "plait_documents": manager.documents("the test"),
    }
    assert set(given) == set(SINGLETONS)
    # and the one plait-cli asks for (its own hook)
    given["plait_change_policies"] = policies("the test")
    SINGLETONS = {**SINGLETONS, "plait_change_policies": _has("names", "prepare")}
    found = [
        (kind, fits, registration.name, registration.obj)
        for kind, fits in manager.kinds.values()  # the kernel's, and plugins' (add_registry)
        for registration in manager.registry(kind).values()
    ] + [("hook", SINGLETONS[hook], hook, obj) for hook, obj in given.items()]
    checked = []
    for kind, fits, name, declared in found:
        if not isinstance(declared, Lazy):
            continue
        real = declared.resolve()
        where = f"{kind} {name!r} ({declared.ref})"
        assert fits(real) is None, f"{where}: {fits(real)}"
        assert [a for a in declared.provides if not hasattr(real, a)] == [], where
        static = {k: v for k, v in vars(declared).items() if k in declared.provides}
        assert static == {k: getattr(real, k) for k in static}, where
        checked.append(name)
    assert {"steps.agent", "steps.foreach", "flow.output", "steps"} <= set(checked)
    assert {"plait_durability", "plait_documents"} <= set(checked)
