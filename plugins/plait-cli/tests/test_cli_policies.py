"""``plait resume --on-change POLICY`` asks the ``plait_change_policies`` hook: the
policies' names and what one does to a stored run come from the plugin that answers
(``plait-versions``), never from a list of this distribution's; without one, the option
is an error naming the distribution. So does ``plait runs --against TARGET``'s ``COMPAT``
column: each run's verdict is the plugin's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import plait
import pytest
from click.testing import CliRunner, Result
from plait import CheckpointError
from plait.spi import PluginManager, set_plugin_manager
from plait_cli import make_cli
from plait_testing import RegisterPlugin

ECHO = f"{__file__.rsplit('/', 1)[0]}/cli_workflows.py:echo"


def plait_cli(*args: str) -> Result:
    """``plait ARGS`` in-process; an exception other than an exit fails the test."""
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


@pytest.fixture
def without_versions() -> Iterator[None]:
    """The installed plugins, plait-versions (if installed) disabled."""
    previous = set_plugin_manager(PluginManager(disabled=["plait-versions"]))
    try:
        yield
    finally:
        set_plugin_manager(previous)


@pytest.mark.parametrize("policy", ["pin", "migrate"])
def test_on_change_without_a_plugin_names_the_distribution(
    without_versions: None, policy: str
) -> None:
    result = plait_cli("resume", ECHO, "some-run", "--on-change", policy)
    assert result.exit_code == 2
    assert f"--on-change {policy}: the policies for a changed workflow come with " in (
        result.stderr
    )
    assert "plait-versions (" in result.stderr and "--accept-changes" in result.stderr


def test_help_says_policy_without_a_plugin(without_versions: None) -> None:
    result = plait_cli("resume", "--help")
    assert result.exit_code == 0 and "--on-change POLICY" in result.stdout


@attrs.define
class Keeping:
    """A plugin's policies: one, ``keep``, that refuses every run it is asked about."""

    names: tuple[str, ...] = ("keep",)
    asked: list[tuple[Any, ...]] = attrs.Factory(list)
    judged: list[tuple[Any, ...]] = attrs.Factory(list)
    verdicts_given: dict[str, Any] = attrs.Factory(dict)

    async def prepare(
        self, workflow: Any, store: Any, run_id: str, policy: str, *, allow: Any = None
    ) -> Any:
        self.asked.append((workflow.name, store, run_id, policy, allow))
        raise CheckpointError(f"policy {policy} keeps run {run_id} where it is")

    async def verdicts(self, workflow: Any, store: Any, run_ids: Any, policy: str) -> Any:
        self.judged.append((workflow.name, store, list(run_ids), policy))
        return self.verdicts_given


class KeepingPlugin:
    def __init__(self) -> None:
        self.policies = Keeping()

    @plait.hookimpl(tryfirst=True)
    def plait_change_policies(self) -> Any:
        return self.policies


def test_the_policies_are_the_plugins(plait_register_plugin: RegisterPlugin) -> None:
    plugin = KeepingPlugin()
    plait_register_plugin(plugin, "keeping")
    listed = plait_cli("resume", "--help")
    assert "--on-change [keep]" in listed.stdout
    unknown = plait_cli("resume", ECHO, "run-1", "--on-change", "pin")
    assert unknown.exit_code == 2 and "'pin' is not one of 'keep'" in unknown.stderr
    assert plugin.policies.asked == []
    kept = plait_cli("resume", ECHO, "run-1", "--on-change", "keep", "--checkpoint",
                     "memory://", "--allow", "network")  # fmt: skip
    assert kept.exit_code == 1 and "policy keep keeps run run-1 where it is" in kept.stderr
    ((workflow, store, run_id, policy, allow),) = plugin.policies.asked
    assert (workflow, store, run_id, policy) == ("echo", "memory://", "run-1", "keep")
    assert "network" in str(allow)  # the grants typed on the command line, passed on


def test_against_without_a_plugin_names_the_distribution(
    without_versions: None, tmp_path: Any
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert plait_cli("run", ECHO, "hi", "--checkpoint", url).exit_code == 0
    result = plait_cli("runs", "--checkpoint", url, "--against", ECHO)
    assert result.exit_code == 2
    assert "--against: the policies for a changed workflow come with plait-versions (" in (
        result.stderr
    )


@attrs.frozen
class Verdict:
    outcome: str
    chain: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.outcome, "chain": list(self.chain)}


def test_the_compat_column_is_the_plugins_verdict(
    plait_register_plugin: RegisterPlugin, tmp_path: Any
) -> None:
    plugin = KeepingPlugin()
    plait_register_plugin(plugin, "keeping")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    assert plait_cli("run", ECHO, "hi", "--checkpoint", url).exit_code == 0
    assert plait_cli("run", ECHO, "ho", "--checkpoint", url).exit_code == 0
    listed = plait_cli("runs", "--checkpoint", url, "--json")
    first, second = sorted(r["run_id"] for r in json.loads(listed.stdout))
    plugin.policies.verdicts_given = {first: Verdict("migrate", ("echo@1", "echo@2"))}
    table = plait_cli("runs", "--checkpoint", url, "--against", ECHO, "--on-change", "keep")
    assert table.exit_code == 0, table.output
    assert "COMPAT" in table.stdout.splitlines()[0]
    assert "  migrate echo@1,echo@2  " in next(r for r in table.stdout.splitlines() if first in r)
    assert "  -  " in next(r for r in table.stdout.splitlines() if second in r)
    ((name, _store, run_ids, policy),) = plugin.policies.judged
    assert (name, sorted(run_ids), policy) == ("echo", [first, second], "keep")
