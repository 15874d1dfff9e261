"""Plait's ``agent`` executor kind, backed by the ``llm`` library.

``llm``'s own plugins provide the models (llm-anthropic, llm-ollama, llm-gguf, …); this
plugin adds no model client. The kind is registered lazily: importing this package (which
every ``plait`` command does, to load plugins) imports neither ``llm`` nor the kind's
module; ``llm`` is imported when an agent config is first checked.

- :class:`AgentKind`: the ``agent`` kind (config ``model``, ``system``, ``instruction``,
  ``options``, ``structured_output``);
- :class:`AgentExecutor`: the executor it builds;
- :class:`AgentError`: a model call that failed or answered something unusable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._agent import (
        MODEL_ENV as MODEL_ENV,
        AgentError as AgentError,
        AgentExecutor as AgentExecutor,
        AgentKind as AgentKind,
    )


@plait.hookimpl
def plait_register_executor_kinds(register: Register) -> None:
    """Register ``agent``."""
    register(
        "agent", lazy("plait_llm._agent:AgentKind", provides=("check", "create", "config_schema"))
    )


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
