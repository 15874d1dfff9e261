"""The ``shell`` executor kind: run a program from an argument list.

The program is started with :func:`anyio.open_process` and a *list* of arguments, never
through a shell: ``;``, ``|``, ``$(…)`` and globs in an argument reach the program as
they are written. Its standard output is bounded (``max_output`` bytes) and its run time
too (``timeout`` seconds); past either, its process group is killed and the executor fails.
A non-zero exit fails with :class:`~plait_executors.errors.ShellCommandError`, which
carries the exit code and the tail of standard error.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from plait import ConfigError, Executor, WorkflowContext
from plait.spi import BuildContext, Handler, outside_call
from plait_documents import SUBPROCESS

from .errors import ShellCommandError, ShellOutputError, ShellOutputLimitError, ShellTimeoutError
from .schema import check_config

__all__ = ["ShellExecutor", "ShellKind"]

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_OUTPUT = 1024 * 1024
#: how much of standard error a failure keeps (its end)
STDERR_TAIL = 4096
_OUTPUT_TYPES: dict[str, Any] = {"text": str, "lines": list[str], "json": Any}


class ShellExecutor(Executor):
    """Runs ``argv`` once per message; sends the program's standard output on.

    :param id: the executor id.
    :param argv: the program and its arguments (no shell is involved).
    :param cwd: the working directory (default: the current one).
    :param env: variables added to (or replacing some of) the current environment.
    :param timeout: seconds before the program is killed and the executor fails.
    :param max_output: bytes of standard output accepted before the program is killed and
        the executor fails.
    :param input: ``"message"`` writes the message to standard input (a string as UTF-8,
        bytes as they are, anything else as JSON); ``"none"`` gives it no input.
    :param output: ``"text"`` sends standard output as a string (one trailing newline
        removed), ``"lines"`` as a list of lines, ``"json"`` parsed as JSON.

    They are kept as ``argv``, ``cwd``, ``env``, ``process_timeout``, ``max_output``,
    ``input_mode`` and ``output_format``. ``timeout`` stays the kernel's per-invocation
    policy (``None`` unless set by the builder or the spec), which this limit does not touch.
    """

    def __init__(
        self,
        id: str,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_output: int = DEFAULT_MAX_OUTPUT,
        input: str = "message",
        output: str = "text",
    ) -> None:
        if isinstance(argv, str) or not argv:
            raise ValueError(f"executor {id!r}: argv must be a non-empty list of strings")
        if output not in _OUTPUT_TYPES:
            raise ValueError(f"executor {id!r}: output must be text, lines or json")
        if input not in ("message", "none"):
            raise ValueError(f"executor {id!r}: input must be message or none")
        self.argv = tuple(argv)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.process_timeout = timeout
        self.max_output = max_output
        self.input_mode = input
        self.output_format = output
        super().__init__(id)

    def declare_handlers(self) -> tuple[Handler, ...]:
        """One handler taking anything and sending what ``output`` promises."""
        sends = (_OUTPUT_TYPES[self.output_format],)
        return (Handler(f"shell:{self.argv[0]}", Any, sends, (), self._handle),)

    async def _handle(self, message: Any, ctx: WorkflowContext[Any, Any]) -> None:
        # through the outside-call seam: a recorded run keeps the output, a replay gives it
        # (the environment by name: its values may be credentials, never written to a record)
        env = sorted(self.env) if self.env is not None else None
        request = {"argv": list(self.argv), "cwd": self.cwd, "env": env}
        if self.input_mode == "message":
            request["input"] = message
        answer = await outside_call("shell", request, lambda _request: self.run(message))
        await ctx.send_message(answer)

    async def run(self, message: Any = None) -> Any:
        """Run the program once on ``message`` and return its decoded standard output.

        :raises ShellCommandError: it exited with a non-zero status.
        :raises ShellTimeoutError: it ran past ``timeout``.
        :raises ShellOutputLimitError: it wrote more than ``max_output`` bytes.
        :raises ShellOutputError: its output does not decode as ``output`` says.
        """
        stdin = _encode_input(message) if self.input_mode == "message" else None
        env = {**os.environ, **self.env} if self.env is not None else None
        process = await anyio.open_process(
            list(self.argv),
            stdin=-1 if stdin is not None else _DEVNULL,
            cwd=self.cwd,
            env=env,
            start_new_session=_POSIX,  # its own process group, killed as one
        )
        try:
            stdout, stderr = await self._communicate(process, stdin)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    _kill_group(process)
                await process.aclose()
        code = process.returncode
        assert code is not None
        if code != 0:
            raise self._exit_error(code, stderr)
        return self._decode(stdout)

    async def _communicate(self, process: Process, stdin: bytes | None) -> tuple[bytes, bytes]:
        out = bytearray()
        err = bytearray()
        over_limit = False

        async def feed() -> None:
            assert process.stdin is not None
            try:
                await process.stdin.send(stdin or b"")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the program does not read its input: not our failure
            finally:
                await process.stdin.aclose()

        async def read_stdout(stream: ByteReceiveStream) -> None:
            nonlocal over_limit
            async for chunk in stream:
                out.extend(chunk)
                if len(out) > self.max_output:
                    over_limit = True
                    _kill_group(process)
                    tasks.cancel_scope.cancel()
                    return

        async def read_stderr(stream: ByteReceiveStream) -> None:
            async for chunk in stream:
                err.extend(chunk)
                del err[:-STDERR_TAIL]

        try:
            with anyio.fail_after(self.process_timeout):
                async with anyio.create_task_group() as tasks:
                    if stdin is not None:
                        tasks.start_soon(feed)
                    assert process.stdout is not None and process.stderr is not None
                    tasks.start_soon(read_stdout, process.stdout)
                    tasks.start_soon(read_stderr, process.stderr)
                if not over_limit:
                    await process.wait()
        except TimeoutError:
            raise ShellTimeoutError(
                f"{self.argv[0]!r} ran longer than its timeout of {self.process_timeout:g} s "
                "and was killed",
                executor_id=self.id,
                timeout=self.process_timeout,
            ) from None
        if over_limit:
            raise ShellOutputLimitError(
                f"{self.argv[0]!r} wrote more than max_output={self.max_output} bytes to "
                "standard output and was killed",
                executor_id=self.id,
                max_output=self.max_output,
            )
        return bytes(out), bytes(err)

    def _exit_error(self, code: int, stderr: bytes) -> ShellCommandError:
        tail = stderr.decode("utf-8", errors="replace").rstrip()
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        message = f"{self.argv[0]!r} {how}"
        message += f"; stderr ends with:\n{tail}" if tail else " (no stderr)"
        return ShellCommandError(message, executor_id=self.id, exit_code=code, stderr_tail=tail)

    def _decode(self, stdout: bytes) -> Any:
        try:
            text = stdout.decode("utf-8")
            if self.output_format == "json":
                return json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            expected = "UTF-8" if self.output_format == "text" else self.output_format.upper()
            raise ShellOutputError(
                f"the standard output of {self.argv[0]!r} is not {self.output_format} "
                f"({expected}): {exc}",
                executor_id=self.id,
            ) from exc
        if self.output_format == "lines":
            return text.splitlines()
        return text[:-2] if text.endswith("\r\n") else text.removesuffix("\n")


_POSIX = os.name == "posix"
_DEVNULL = -3  # subprocess.DEVNULL, without importing subprocess


def _kill_group(process: Process) -> None:
    """Kill the program and everything it started (its process group, on POSIX)."""
    try:
        if _POSIX:
            os.killpg(process.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows has no process groups to kill
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def _encode_input(message: Any) -> bytes:
    if isinstance(message, str):
        return message.encode("utf-8")
    if isinstance(message, (bytes, bytearray)):
        return bytes(message)
    if message is None:
        return b""
    return json.dumps(message).encode("utf-8")


class ShellKind:
    """``shell``: ``{"argv": [...], "cwd"?, "env"?, "timeout"?, "max_output"?, "input"?,
    "output"?}`` — see :class:`ShellExecutor`.
    """

    config_schema: Mapping[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "shell executor",
        "type": "object",
        "properties": {
            "argv": {
                "type": "array",
                "description": "the program and its arguments; never run through a shell",
                "minItems": 1,
                "prefixItems": [{"type": "string", "minLength": 1}],
                "items": {"type": "string"},
            },
            "cwd": {"type": "string", "minLength": 1},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": DEFAULT_TIMEOUT},
            "max_output": {"type": "integer", "minimum": 1, "default": DEFAULT_MAX_OUTPUT},
            "input": {"enum": ["message", "none"], "default": "message"},
            "output": {"enum": ["text", "json", "lines"], "default": "text"},
        },
        "required": ["argv"],
        "additionalProperties": False,
    }
    #: it starts a program: whatever its user may do, a node of it may
    capabilities = (SUBPROCESS,)

    def check(self, config: Mapping[str, Any], ctx: BuildContext) -> list[ConfigError]:
        """Every way ``config`` breaks :attr:`config_schema`."""
        return check_config(self.config_schema, config, ctx.node_id, source=ctx.source)

    def create(self, config: Mapping[str, Any], ctx: BuildContext) -> ShellExecutor:
        """A :class:`ShellExecutor` with id ``ctx.node_id``."""
        return ShellExecutor(
            ctx.node_id,
            list(config["argv"]),
            cwd=config.get("cwd"),
            env=config.get("env"),
            timeout=float(config.get("timeout", DEFAULT_TIMEOUT)),
            max_output=int(config.get("max_output", DEFAULT_MAX_OUTPUT)),
            input=config.get("input", "message"),
            output=config.get("output", "text"),
        )
