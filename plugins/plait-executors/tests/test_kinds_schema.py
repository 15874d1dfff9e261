"""check_config: every schema problem at once, at its JSON path, naming the node."""

from __future__ import annotations

import subprocess
import sys

import plait_executors
from plait import ConfigError, PlaitError
from plait.spi import ExecutorKind, PluginManager
from plait_documents import check_config, json_pointer

SCHEMA = {
    "type": "object",
    "properties": {
        "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "timeout": {"type": "number", "exclusiveMinimum": 0},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["argv"],
    "additionalProperties": False,
}


def test_a_valid_config_has_no_errors() -> None:
    assert check_config(SCHEMA, {"argv": ["ls"], "timeout": 1}, "n") == []


def test_the_schema_module_names_the_documents_helpers() -> None:
    from plait_executors import schema

    assert schema.check_config is check_config and schema.json_pointer is json_pointer


def test_every_problem_is_reported_at_its_json_path_naming_the_node() -> None:
    errors = check_config(SCHEMA, {"argv": ["ls", 3], "timeout": -1, "env": {"A": 1}}, "lister")
    assert [e.path for e in errors] == ["/config/argv/1", "/config/env/A", "/config/timeout"]
    assert all(isinstance(e, ConfigError) and isinstance(e, PlaitError) for e in errors)
    assert all("executor 'lister'" in str(e) for e in errors)
    assert "3 is not of type 'string'" in str(errors[0])
    assert "at /config/argv/1" in str(errors[0])  # the position leads the message


def test_an_unknown_key_is_reported_at_its_own_path_with_the_closest_allowed_key() -> None:
    errors = check_config(SCHEMA, {"argz": ["ls"], "timeuot": 3}, "n")
    by_path = {e.path: str(e) for e in errors}
    assert set(by_path) == {"/config", "/config/argz", "/config/timeuot"}
    assert "did you mean 'argv'?" in by_path["/config/argz"]
    assert "did you mean 'timeout'?" in by_path["/config/timeuot"]
    assert "allowed: argv, env, timeout" in by_path["/config/argz"]
    assert "'argv' is required" in by_path["/config"]


def test_a_config_that_is_not_an_object_is_an_error_at_the_root() -> None:
    (error,) = check_config(SCHEMA, ["ls"], "n")
    assert error.path == "/config"
    assert "is not of type 'object'" in str(error)


def test_json_pointers_escape_slashes_and_tildes() -> None:
    assert json_pointer(["a/b", "c~d", 0]) == "/config/a~1b/c~0d/0"
    (error,) = check_config(SCHEMA, {"argv": ["x"], "env": {"a/b": 2}}, "n")
    assert error.path == "/config/env/a~1b"


def test_the_source_is_part_of_the_position() -> None:
    (error,) = check_config(SCHEMA, {}, "n", source="flow.json")
    assert error.position.source == "flow.json"
    assert str(error).startswith("flow.json at /config:")


def test_the_plugin_registers_four_kinds_that_fit_the_kernel_protocol() -> None:
    manager = PluginManager(entry_points=[], disabled=[])
    manager.register(plait_executors, "executors", distribution="plait-executors")
    registry = manager.registry("executor_kind")
    assert registry.names() == ["http", "python", "shell", "workflow"]
    for name in registry.names():
        kind = registry.get(name)
        assert isinstance(kind, ExecutorKind)
        assert kind.config_schema["$schema"].endswith("2020-12/schema")
        assert registry.entry(name).distribution == "plait-executors"


def test_every_kind_schema_is_a_valid_draft_2020_12_schema() -> None:
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]

    for kind in (
        plait_executors.PythonKind(),
        plait_executors.ShellKind(),
        plait_executors.HttpKind(),
        plait_executors.WorkflowKind(),
    ):
        Draft202012Validator.check_schema(kind.config_schema)


def test_importing_the_plugin_imports_neither_jsonschema_nor_httpx() -> None:
    code = (
        "import sys, plait_executors\n"
        "plait_executors.plait_register_executor_kinds(lambda *a, **k: None)\n"
        "print(sorted(m for m in ('jsonschema', 'httpx') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
