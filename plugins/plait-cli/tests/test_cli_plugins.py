"""``plait plugins``, ``plait fragments`` and commands added by plugins — broken ones too.

Plugin sets are simulated with ``plait.testing``'s fake entry points and installed as the
process-wide plugin manager, which is the one the CLI uses.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import plait
import plait_builders
import plait_cli
import plait_merge
import pytest
from click.testing import CliRunner, Result
from plait.spi import PluginManager, set_plugin_manager
from plait_builders import Fragment, WorkflowBuilder
from plait_cli import CommandConflictError, PlaitGroup, make_cli
from plait_testing import (
    FakeEntryPoint,
    RegisterPlugin,
    broken_entry_point,
    fake_entry_point,
    make_plugin_manager,
)

NLTK = ImportError("No module named 'nltk'")


def plait_cli_run(*args: str) -> Result:
    """Run ``plait ARGS`` in-process; an exception other than an exit fails the test."""
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def use_manager() -> Iterator[Callable[[PluginManager], PluginManager]]:
    """Install a plugin manager as the process-wide one for the test."""
    previous: list[PluginManager | None] = []

    def install(manager: PluginManager) -> PluginManager:
        previous.append(set_plugin_manager(manager))
        return manager

    yield install
    if previous:
        set_plugin_manager(previous[0])


def plait_cli_entry_point() -> FakeEntryPoint:
    """plait-cli itself, which declares ``plait_register_commands`` (``plait_addhooks``)."""
    return fake_entry_point("cli", plait_cli, distribution="plait-cli")


@click.command()
@click.argument("name")
def greet(name: str) -> None:
    """Say hello."""
    click.echo(f"hello {name}")


class GreetPlugin:
    """Adds ``plait greet NAME``."""

    @plait.hookimpl
    def plait_register_commands(self, cli: click.Group) -> None:
        cli.add_command(greet)


class DecoratorPlugin:
    """Adds ``plait shout TEXT`` with the group's decorator."""

    @plait.hookimpl
    def plait_register_commands(self, cli: click.Group) -> None:
        @cli.command()
        @click.argument("text")
        def shout(text: str) -> None:
            """Shout."""
            click.echo(text.upper())


class ClashingPlugin:
    """Tries to take the built-in ``run``."""

    @plait.hookimpl
    def plait_register_commands(self, cli: click.Group) -> None:
        @cli.command("run")
        def run() -> None:
            """Not the real run."""


# -- plait plugins ------------------------------------------------------------------------------


def test_plugins_lists_the_installed_plugins_including_the_cli(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(PluginManager())
    result = plait_cli_run("plugins")
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["NAME", "DISTRIBUTION", "VERSION", "STATUS", "ENTRY", "POINT"]
    cli_row = next(line for line in lines if line.startswith("cli "))
    assert cli_row.split() == [
        "cli",
        "plait-cli",
        plait_cli.__version__,
        "loaded",
        "cli",
        "=",
        "plait_cli",
    ]
    merge_at = next(i for i, line in enumerate(lines) if line.startswith("merge "))
    assert lines[merge_at + 1].strip() == (
        "merge_strategy: concat, concat_newline, first, keyed, last, list"
    )


def test_plugins_json_has_stable_keys(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(make_plugin_manager(fake_entry_point("merge", plait_merge, version="0.3.0")))
    result = plait_cli_run("plugins", "--json")
    assert result.exit_code == 0 and result.stderr == ""
    assert json.loads(result.stdout) == [
        {
            "name": "merge",
            "distribution": "plait-merge",
            "version": "0.3.0",
            "entry_point": "merge = plait_merge",
            "status": "loaded",
            "error": None,
            "registered": {
                "merge_strategy": ["concat", "concat_newline", "first", "keyed", "last", "list"]
            },
        }
    ]


def test_a_broken_plugin_is_listed_failed_with_its_error_and_exits_1(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            fake_entry_point("merge", plait_merge),
            broken_entry_point("textkit", NLTK, version="1.4.0"),
        )
    )
    result = plait_cli_run("plugins", "--json")
    assert result.exit_code == 1
    by_name = {p["name"]: p for p in json.loads(result.stdout)}
    assert by_name["merge"]["status"] == "loaded"
    textkit = by_name["textkit"]
    assert (textkit["distribution"], textkit["version"], textkit["status"]) == (
        "plait-textkit",
        "1.4.0",
        "failed",
    )
    assert "phase 'import': ImportError: No module named 'nltk'" in textkit["error"]
    assert textkit["registered"] == {}
    assert "1 plugin(s) failed to load: textkit (plait-textkit 1.4.0)" in result.stderr
    assert "No module named 'nltk'" in result.stderr
    assert "PLAIT_DISABLE_PLUGINS=textkit" in result.stderr


def test_the_table_shows_the_broken_plugin_and_its_error(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(make_plugin_manager(broken_entry_point("textkit", NLTK)))
    result = plait_cli_run("plugins")
    assert result.exit_code == 1
    row, error = result.stdout.splitlines()[1:3]
    assert row.split()[:4] == ["textkit", "plait-textkit", "0.1.0", "failed"]
    assert error.strip().startswith("error: plugin 'textkit = plait_textkit' from distribution")


def test_a_blocked_plugin_is_listed_and_is_no_failure(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(make_plugin_manager(fake_entry_point("merge", plait_merge), disabled=["merge"]))
    result = plait_cli_run("plugins")
    assert result.exit_code == 0
    assert "blocked" in result.stdout and "disabled by PLAIT_DISABLE_PLUGINS" in result.stdout


# -- commands from plugins ------------------------------------------------------------------------


def test_a_plugin_adds_commands(use_manager: Callable[[PluginManager], PluginManager]) -> None:
    use_manager(
        make_plugin_manager(
            plait_cli_entry_point(),
            fake_entry_point("greet", GreetPlugin()),
            fake_entry_point("shout", DecoratorPlugin()),
        )
    )
    assert plait_cli_run("greet", "Ada").stdout == "hello Ada\n"
    assert plait_cli_run("shout", "hey").stdout == "HEY\n"
    listing = plait_cli_run("--help").stdout
    assert "greet" in listing and "Say hello." in listing and "plugins" in listing


class LazyPlugin:
    """Adds ``plait later NAME`` without importing its module until it runs."""

    @plait.hookimpl
    def plait_register_commands(self, cli: click.Group) -> None:
        cli.add_command(
            plait_cli.lazy_command("later", "plait_lazy_greeting:greet_later", "Greet, later.")
        )


def test_a_plugin_command_added_lazily_is_imported_only_when_it_runs(
    use_manager: Callable[[PluginManager], PluginManager],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "plait_lazy_greeting.py").write_text(
        "import click\n\n\n@click.command()\n@click.argument('name')\n"
        "def greet_later(name):\n    click.echo(f'later, {name}')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plait_lazy_greeting", raising=False)
    use_manager(
        make_plugin_manager(plait_cli_entry_point(), fake_entry_point("later", LazyPlugin()))
    )
    listing = plait_cli_run("--help").stdout
    assert "later" in listing and "Greet, later." in listing
    assert "plait_lazy_greeting" not in sys.modules
    assert plait_cli_run("later", "Ada").stdout == "later, Ada\n"
    assert "plait_lazy_greeting" in sys.modules
    clash = make_plugin_manager(
        plait_cli_entry_point(),
        fake_entry_point("later", LazyPlugin()),
        fake_entry_point("again", LazyPlugin()),
    )
    use_manager(clash)
    error = make_cli().load_plugin_commands()
    assert isinstance(error, CommandConflictError)
    assert "command 'later' (from plait_lazy_greeting) clashes" in str(error)


def test_an_in_process_plugin_adds_a_command(register_plugin: RegisterPlugin) -> None:
    register_plugin(GreetPlugin(), "greet-in-process")
    assert plait_cli_run("greet", "Bo").stdout == "hello Bo\n"


def test_a_broken_plugin_leaves_the_built_in_commands_working(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            plait_cli_entry_point(),
            fake_entry_point("greet", GreetPlugin()),
            broken_entry_point("textkit", NLTK),
        )
    )
    help_text = plait_cli_run("--help")
    assert help_text.exit_code == 0 and "plugins" in help_text.stdout
    assert help_text.stderr.startswith("warning: plugin commands are not available:")
    assert "No module named 'nltk'" in help_text.stderr

    missing = plait_cli_run("greet", "Ada")
    assert missing.exit_code == 2
    assert "No such command 'greet'" in missing.stderr
    assert "plugin commands are not available" in missing.stderr
    assert "`plait plugins` lists every plugin" in missing.stderr

    assert plait_cli_run("plugins").exit_code == 1


def test_building_the_group_loads_no_plugin() -> None:
    manager = make_plugin_manager(broken_entry_point("textkit", NLTK))
    previous = set_plugin_manager(manager)
    try:
        cli = make_cli()
        assert isinstance(cli, PlaitGroup) and cli.plugin_error is None
        assert sorted(cli.commands) == [
            "fragments",
            "graph",
            "plugins",
            "resume",
            "run",
            "runs",
            "validate",
        ]
        assert isinstance(cli.load_plugin_commands(), plait.errors.PluginLoadErrors)
    finally:
        set_plugin_manager(previous)


def test_a_command_name_that_is_taken_is_an_error_and_adds_nothing(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            plait_cli_entry_point(),
            fake_entry_point("greet", GreetPlugin()),
            fake_entry_point("clash", ClashingPlugin()),
        )
    )
    cli = make_cli()
    error = cli.load_plugin_commands()
    assert isinstance(error, CommandConflictError)
    assert "command 'run' (from test_cli_plugins) clashes with the built-in command 'run'" in str(
        error
    )
    assert sorted(cli.commands) == [
        "fragments",
        "graph",
        "plugins",
        "resume",
        "run",
        "runs",
        "validate",
    ]
    result = plait_cli_run("greet", "Ada")
    assert result.exit_code == 2 and "CommandConflictError" in result.stderr


def test_the_version() -> None:
    result = plait_cli_run("--version")
    assert result.stdout == f"plait-cli {plait_cli.__version__} (plait-core {plait.__version__})\n"


def test_the_version_constant_is_the_installed_distribution_s() -> None:
    from importlib import metadata
    from pathlib import Path

    assert plait_cli.__version__ == metadata.version("plait-cli")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    assert f'version = "{plait_cli.__version__}"' in pyproject.read_text(encoding="utf-8")


# -- plait fragments ------------------------------------------------------------------------------


def _upper_fragment() -> Any:
    @plait.executor(id="up")
    async def up(text: str, ctx: plait.WorkflowContext[plait.Never, str]) -> None:
        await ctx.yield_output(text.upper())

    return WorkflowBuilder("up").add_executor(up).set_start(up).add_port("upper", up, "in")


class FragmentPlugin:
    """Publishes ``demo.upper``."""

    @plait.hookimpl
    def plait_register_fragments(self, register: Any) -> None:
        fragment = Fragment(
            "demo.upper",
            _upper_fragment,
            version="2.0.0",
            input_types=(str,),
            output_types=(str, bytes),
            description="upper-case a text",
            output_semantics=("shout",),
        )
        register(fragment.name, fragment)


def test_fragments_lists_published_fragments(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            fake_entry_point("builders", plait_builders),
            fake_entry_point("demo", FragmentPlugin(), distribution="plait-demo"),
        )
    )
    result = plait_cli_run("fragments")
    assert result.exit_code == 0, result.output
    header, row, description, port = result.stdout.splitlines()
    assert header.split() == ["NAME", "VERSION", "DISTRIBUTION", "INPUT", "OUTPUT", "SEMANTICS"]
    assert row.split() == ["demo.upper", "2.0.0", "plait-demo", "str", "str,", "bytes", "shout"]
    assert description.strip() == "upper-case a text"
    assert port.strip() == "port upper (in, up): str"

    as_json = plait_cli_run("fragments", "--json")
    assert json.loads(as_json.stdout) == [
        {
            "name": "demo.upper",
            "version": "2.0.0",
            "distribution": "plait-demo",
            "plugin": "demo",
            "input_types": ["str"],
            "output_types": ["str", "bytes"],
            "description": "upper-case a text",
            "output_semantics": ["shout"],
            "ports": [
                {
                    "name": "upper",
                    "executor": "up",
                    "direction": "in",
                    "types": ["str"],
                    "semantics": None,
                }
            ],
        }
    ]


def test_no_fragments(use_manager: Callable[[PluginManager], PluginManager]) -> None:
    use_manager(make_plugin_manager(fake_entry_point("builders", plait_builders)))
    result = plait_cli_run("fragments")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "no installed plugin publishes a fragment" in result.stderr
    assert plait_cli_run("fragments", "--json").stdout == "[]\n"


def test_fragments_without_plait_builders_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, use_manager: Callable[[PluginManager], PluginManager]
) -> None:
    use_manager(make_plugin_manager())  # (the process-wide one keeps plait_builders loadable)
    monkeypatch.setitem(sys.modules, "plait_builders", None)
    result = plait_cli_run("fragments")
    assert result.exit_code == 1
    assert "plait-builders plugin, which is not installed" in result.stderr
    # never a bare `pip install plait-builders`, which finds nothing on PyPI
    assert "(install the distribution plait-builders)" in " ".join(result.stderr.split())


def test_fragments_with_a_broken_plugin_is_an_error_pointing_to_plugins(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            fake_entry_point("builders", plait_builders), broken_entry_point("textkit", NLTK)
        )
    )
    result = plait_cli_run("fragments")
    assert result.exit_code == 1
    assert "cannot list fragments" in result.stderr and "No module named 'nltk'" in result.stderr
    assert "`plait plugins` shows every plugin" in result.stderr
