"""What is not installed says how to get it (issue 34): an optional ``plait`` command and
an unknown name of any kind are looked up in one table, plait-catalog's, and the hint is
a command that works in a checkout, from it with pip, and from an index that has Plait."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import plait_catalog
import plait_cli
import plait_ui
import pytest
from click.testing import CliRunner, Result
from plait.spi import PluginManager, set_plugin_manager
from plait_cli import PlaitGroup, make_cli
from plait_testing import fake_entry_point, make_plugin_manager

UI_HINT = (
    "it comes with plait-ui (the plait[ui] extra: in a checkout of plait, bash .ci/uv sync "
    "--locked --extra ui; with pip, from that checkout's folder, pip install "
    "./plugins/plait-ui; from a package index that has plait, pip install 'plait[ui]')"
)


@pytest.fixture
def use_manager() -> Iterator[Callable[[PluginManager], PluginManager]]:
    """Install a plugin manager as the process-wide one (the CLI's) for the test."""
    previous: list[PluginManager | None] = []

    def install(manager: PluginManager) -> PluginManager:
        previous.append(set_plugin_manager(manager))
        return manager

    yield install
    if previous:
        set_plugin_manager(previous[0])


def plait(*args: str) -> Result:
    return CliRunner().invoke(make_cli(), list(args))


def test_plait_ui_without_plait_ui_says_how_to_install_it(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    # `plait ui` without plait-ui said "No such command 'ui'." and nothing more
    use_manager(make_plugin_manager(fake_entry_point("catalog", plait_catalog)))
    result = plait("ui")
    assert result.exit_code == 2
    assert "No such command 'ui'." in result.stderr
    assert f"plait ui: {UI_HINT}" in " ".join(result.stderr.split())
    unknown = plait("teleport")
    assert unknown.exit_code == 2 and "comes with" not in unknown.stderr


def test_with_plait_ui_the_command_is_there(
    use_manager: Callable[[PluginManager], PluginManager],
) -> None:
    use_manager(
        make_plugin_manager(
            fake_entry_point("catalog", plait_catalog),
            fake_entry_point("ui", plait_ui, distribution="plait-ui"),
        )
    )
    result = plait("ui", "--help")
    assert result.exit_code == 0 and "comes with" not in result.output


def test_the_command_table_names_the_commands_plait_ui_adds() -> None:
    # the catalog's "command" names are checked here, where plait-ui's commands can be listed
    manager = make_plugin_manager(
        fake_entry_point("cli", plait_cli, distribution="plait-cli"),
        fake_entry_point("ui", plait_ui, distribution="plait-ui"),
    )
    manager.load_entrypoints()
    cli = PlaitGroup(name="plait")
    manager.pm.hook.plait_register_commands(cli=cli)
    assert sorted(cli.commands) == sorted(plait_catalog.FIRST_PARTY["plait-ui"]["command"])


def test_the_hint_is_the_same_for_a_command_and_an_unknown_name() -> None:
    manager = make_plugin_manager(fake_entry_point("catalog", plait_catalog))
    assert manager.install_hint("command", "ui") == UI_HINT
    llm = manager.install_hint("executor_kind", "agent")
    # `pip install plait-llm` finds nothing on PyPI: never printed bare
    assert llm is not None and "pip install plait-llm" not in llm
    assert "bash .ci/uv sync --locked --extra llm" in llm
    assert "pip install ./plugins/plait-llm" in llm
