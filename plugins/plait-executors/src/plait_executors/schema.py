"""Validate an executor kind's config against its JSON Schema, reporting every problem.

:func:`check_config` is what every kind of this plugin calls from ``check``; other plugins
may reuse it for their own kinds. ``jsonschema`` is imported on first use, never when the
plugin is registered, so a ``plait`` command that only loads plugins does not pay for it.

.. versionadded:: 0.1
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from plait import ConfigError, SourcePosition

__all__ = ["check_config", "config_error", "json_pointer"]

#: compiled validators by ``id(schema)``; the schema is kept so its id is never reused
_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}


def json_pointer(parts: Iterable[str | int], *, root: str = "/config") -> str:
    """The JSON pointer (RFC 6901) of ``parts`` under ``root``: ``/config/argv/0``."""
    escaped = (str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return root + "".join(f"/{p}" for p in escaped)


def config_error(
    node_id: str, message: str, path: str = "/config", *, source: str | None = None
) -> ConfigError:
    """A :class:`~plait.ConfigError` for executor ``node_id`` at JSON ``path``."""
    return ConfigError(f"executor {node_id!r}: {message}", SourcePosition(source=source, path=path))


def check_config(
    schema: Mapping[str, Any],
    config: Any,
    node_id: str,
    *,
    source: str | None = None,
    root: str = "/config",
) -> list[ConfigError]:
    """Every way ``config`` breaks ``schema`` (JSON Schema draft 2020-12), sorted by path.

    Each error names ``node_id`` and carries the JSON pointer of the offending value
    (``/config/argv/0``) as its position's ``path``. An unknown key is reported at its own
    path, with the closest allowed key as a suggestion. An empty list means valid.

    :param schema: the kind's ``config_schema``.
    :param config: the node's config, as loaded (any JSON value).
    :param node_id: the node being checked, named in every message.
    :param source: the document the node came from, for the error position.
    :param root: the pointer of ``config`` within its document.
    """
    errors: list[ConfigError] = []
    for error in _validator(schema).iter_errors(config):
        errors.extend(_convert(error, node_id, source, root))
    errors.sort(key=lambda e: (e.path or "", str(e)))
    return errors


def _validator(schema: Mapping[str, Any]) -> Any:
    """A compiled ``jsonschema.Draft202012Validator`` (untyped: jsonschema ships no types)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    validator = Draft202012Validator(schema)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def _convert(error: Any, node_id: str, source: str | None, root: str) -> list[ConfigError]:
    """ConfigErrors for one ``jsonschema.ValidationError``."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        from jsonschema.exceptions import best_match  # type: ignore[import-untyped,unused-ignore]

        error = best_match(error.context)
    path = json_pointer(error.absolute_path, root=root)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        unknown = _unknown_keys(error.instance, error.schema)
        if unknown:
            return [_unknown_key(node_id, key, error.schema, path, source) for key in unknown]
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [k for k in error.validator_value if k not in error.instance]
        if missing:
            return [
                config_error(node_id, f"{key!r} is required", path, source=source)
                for key in missing
            ]
    where = f"config value {path.removeprefix(root) or '(whole config)'}"
    return [config_error(node_id, f"{where}: {error.message}", path, source=source)]


def _unknown_keys(instance: Mapping[str, Any], schema: Any) -> list[str]:
    if not isinstance(schema, Mapping):
        return []
    known = set(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    return [
        key
        for key in instance
        if key not in known and not any(re.search(p, str(key)) for p in patterns)
    ]


def _unknown_key(
    node_id: str, key: str, schema: Mapping[str, Any], path: str, source: str | None
) -> ConfigError:
    import difflib  # only when a config is wrong: keep plugin loading cheap

    allowed = sorted(schema.get("properties", {}))
    message = f"unknown config key {key!r}"
    close = difflib.get_close_matches(str(key), allowed, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    if allowed:
        message += f" (allowed: {', '.join(allowed)})"
    return config_error(node_id, message, json_pointer([key], root=path), source=source)
