"""The shell kind: an argument list, never a shell; bounded output; a timeout; a non-zero
exit carries its code and the tail of stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from executors_helpers import build, chain, paths
from plait import ExecutorFailedError
from plait.spi import BuildContext
from plait_executors import (
    ShellCommandError,
    ShellExecutor,
    ShellKind,
    ShellOutputError,
    ShellOutputLimitError,
    ShellTimeoutError,
)

pytestmark = pytest.mark.anyio
KIND = ShellKind()
PY = sys.executable


def python(code: str, *args: str, **config: Any) -> dict[str, Any]:
    return {"argv": [PY, "-c", code, *args], **config}


async def failure(node: ShellExecutor, message: Any = "") -> BaseException:
    """Run ``node`` in a workflow that must fail; return the executor's own error."""
    with pytest.raises(ExecutorFailedError) as info:
        await chain(node).run(message)
    assert info.value.executor_id == node.id
    assert info.value.__cause__ is not None
    return info.value.__cause__


async def test_the_message_goes_to_stdin_and_stdout_is_sent_on() -> None:
    node = build(KIND, python("import sys; print(sys.stdin.read().upper())"), "upper")
    assert (await chain(node).run("hello")).outputs == ["HELLO"]


async def test_json_in_and_out() -> None:
    code = "import json, sys; data = json.load(sys.stdin); print(json.dumps({'n': data['n'] + 1}))"
    node = build(KIND, python(code, output="json"), "inc")
    assert (await chain(node).run({"n": 1})).outputs == [{"n": 2}]


async def test_lines_output_and_no_input() -> None:
    code = "import sys; print('a'); print('b'); print(sys.stdin.read() == '')"
    node = build(KIND, python(code, input="none", output="lines"), "lines")
    assert (await chain(node).run("ignored")).outputs == [["a", "b", "True"]]


async def test_cwd_and_env_reach_the_program(tmp_path: Any) -> None:
    code = "import os; print(os.getcwd(), os.environ['PLAIT_TEST_VALUE'], 'PATH' in os.environ)"
    config = python(code, cwd=str(tmp_path), env={"PLAIT_TEST_VALUE": "v1"})
    (out,) = (await chain(build(KIND, config, "env")).run("")).outputs
    cwd, value, has_path = out.split(" ")
    assert (cwd, value, has_path) == (str(tmp_path.resolve()), "v1", "True")


async def test_shell_syntax_in_an_argument_is_passed_literally() -> None:
    hostile = "a; echo pwned $(id) | cat `whoami` && rm -rf ~ > /tmp/x *"
    node = build(KIND, python("import sys; print(sys.argv[1])", hostile), "echo")
    assert (await chain(node).run("")).outputs == [hostile]


async def test_a_program_name_with_shell_syntax_is_not_interpreted() -> None:
    node = build(KIND, {"argv": ["true; echo pwned"], "input": "none"}, "weird")
    error = await failure(node)
    assert isinstance(error, FileNotFoundError)  # no shell parsed it into `true`


async def test_a_non_zero_exit_carries_the_exit_code_and_the_stderr_tail() -> None:
    code = "import sys\nsys.stderr.write('x' * 20000 + '\\nthe last words')\nsys.exit(3)"
    node = build(KIND, python(code, input="none"), "failing")
    error = await failure(node)
    assert isinstance(error, ShellCommandError)
    assert error.exit_code == 3 and error.executor_id == "failing"
    assert error.stderr_tail.endswith("the last words")
    assert len(error.stderr_tail) <= 4096  # a tail, not all of it
    assert "exited with code 3" in str(error) and "the last words" in str(error)


async def test_output_past_max_output_kills_the_program_and_fails() -> None:
    code = "import sys\nwhile True: sys.stdout.write('y' * 1000); sys.stdout.flush()"
    node = build(KIND, python(code, input="none", max_output=5000), "chatty")
    error = await failure(node)
    assert isinstance(error, ShellOutputLimitError)
    assert error.max_output == 5000 and "max_output=5000" in str(error)


async def test_output_within_max_output_is_accepted() -> None:
    node = build(KIND, python("print('z' * 99, end='')", max_output=99), "exact")
    assert (await chain(node).run("")).outputs == ["z" * 99]


async def test_a_timeout_kills_the_program_and_names_the_executor_and_the_limit() -> None:
    code = "import time; time.sleep(30)"
    node = build(KIND, python(code, input="none", timeout=0.3), "sleeper")
    error = await failure(node)
    assert isinstance(error, ShellTimeoutError)
    assert error.timeout == 0.3
    assert "executor 'sleeper'" in str(error) and "timeout of 0.3 s" in str(error)


async def test_a_timeout_kills_the_children_too() -> None:
    # the child starts a grandchild that holds stdout open; both must go
    code = (
        "import subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        "print('started', flush=True)\n"
    )
    node = build(KIND, python(code, input="none", timeout=0.5), "parent")
    error = await failure(node)
    assert isinstance(error, ShellTimeoutError)


async def test_output_that_is_not_json_fails_naming_the_format() -> None:
    node = build(KIND, python("print('not json')", output="json"), "parser")
    error = await failure(node)
    assert isinstance(error, ShellOutputError) and "is not json" in str(error)


async def test_a_program_that_ignores_its_input_still_runs() -> None:
    node = build(KIND, python("print('ok')"), "deaf")
    assert (await chain(node).run("x" * 1_000_000)).outputs == ["ok"]


def test_the_process_limit_is_not_the_kernel_timeout_policy() -> None:
    node = KIND.create({"argv": ["x"], "timeout": 5}, BuildContext(node_id="n"))
    assert node.process_timeout == 5.0 and node.timeout is None


def test_the_declared_output_type_follows_the_config() -> None:
    ctx = BuildContext(node_id="n")
    assert KIND.create({"argv": ["x"]}, ctx).output_types == (str,)
    assert KIND.create({"argv": ["x"], "output": "lines"}, ctx).output_types == (list[str],)


def test_config_errors_carry_json_paths_all_at_once() -> None:
    config = {
        "argv": ["", 3],
        "timeout": 0,
        "max_output": 1.5,
        "input": "stdin",
        "output": "yaml",
        "env": {"A": 1},
        "shell": True,
    }
    errors = KIND.check(config, BuildContext(node_id="sh"))
    assert paths(errors) == [
        "/config/argv/0",
        "/config/argv/1",
        "/config/env/A",
        "/config/input",
        "/config/max_output",
        "/config/output",
        "/config/shell",
        "/config/timeout",
    ]
    assert all("executor 'sh'" in str(e) for e in errors)
    assert paths(KIND.check({"argv": "ls -l"}, BuildContext(node_id="sh"))) == ["/config/argv"]
    assert paths(KIND.check({"argv": []}, BuildContext(node_id="sh"))) == ["/config/argv"]


def test_a_string_argv_is_refused_by_the_executor_too() -> None:
    with pytest.raises(ValueError, match="non-empty list"):
        ShellExecutor("x", "ls -l")  # type: ignore[arg-type]


def test_json_module_is_used_for_non_string_input() -> None:
    # documented: a dict goes to stdin as JSON
    from plait_executors.shell import _encode_input

    assert json.loads(_encode_input({"a": [1]})) == {"a": [1]}
    assert _encode_input("é") == "é".encode()
