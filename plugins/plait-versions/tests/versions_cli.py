"""``plait …`` in-process for the tests of plait-versions' commands and columns."""

from __future__ import annotations

from click.testing import CliRunner, Result
from plait_cli import make_cli


def plait(*args: str) -> Result:
    """Run ``plait args…`` in this process; an error other than the command's own exit is
    raised, so a test sees its traceback."""
    result = CliRunner().invoke(make_cli(), list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result
