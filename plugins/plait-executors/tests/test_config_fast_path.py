"""check_config asks jsonschema-rs whether a config fits before it imports jsonschema
(issue 34, start-up): its answer must be jsonschema's own, for every config."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import plait_executors
from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped,unused-ignore]
from plait_documents import check_config

#: what draft 2020-12 asks of numbers, strings, arrays and objects, where two validators
#: could disagree (1 against 1.0 against true, lengths, uniqueness)
RICH = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 2**40},
        "x": {"type": "number", "exclusiveMaximum": 10, "exclusiveMinimum": -0.5},
        "e": {"enum": [1, "a", None, True, [1, 2], {"k": 0}]},
        "c": {"const": 0},
        "u": {"type": "array", "uniqueItems": True, "maxItems": 3},
        "o": {"type": "object", "minProperties": 1, "propertyNames": {"maxLength": 2}},
        "s": {"type": "string", "minLength": 2, "maxLength": 4},
        "t": {"type": ["string", "null"]},
        "b": {"not": {"type": "boolean"}},
        "a": {"anyOf": [{"type": "integer"}, {"type": "array", "prefixItems": [{"const": 1}]}]},
    },
    "dependentRequired": {"n": ["x"]},
    "additionalProperties": {"type": "boolean"},
}
KINDS: list[Any] = [
    plait_executors.ShellKind(),
    plait_executors.WorkflowKind(),
    plait_executors.PythonKind(),  # a pattern: jsonschema's alone
    plait_executors.HttpKind(),
]
SCHEMAS: list[Mapping[str, Any]] = [RICH, *(kind.config_schema for kind in KINDS)]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=12),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits too
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, 2.5, -0.0, 1e300]),
    st.text(max_size=5),
    st.sampled_from(["message", "none", "text", "json", "lines", "ls", "a", "", "https://x"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),  # not a JSON array to jsonschema
        st.dictionaries(st.text(max_size=3), inner, max_size=3),
    ),
    max_leaves=12,
)


def _typed(schema: Any) -> st.SearchStrategy[Any]:
    """Values of the type ``schema`` asks for, mostly (and the odd ones in between)."""
    if not isinstance(schema, Mapping):
        return values
    if "enum" in schema or "const" in schema:
        return st.sampled_from(schema.get("enum", [schema.get("const")])) | scalars
    kind = schema.get("type")
    if "prefixItems" in schema or kind == "array":
        items = st.one_of(
            *(_typed(s) for s in schema.get("prefixItems", [])), _typed(schema.get("items"))
        )
        arrays = st.lists(items, max_size=3)
        return arrays | arrays.map(tuple)
    if kind == "object":
        return _objects(schema)
    low = schema.get("minimum", schema.get("exclusiveMinimum", -1))  # the bounds too
    typed = {
        "string": st.text(min_size=schema.get("minLength", 0), max_size=4),
        "integer": st.integers(min_value=int(low), max_value=12),
        "number": st.floats(min_value=low, max_value=12)
        | st.integers(min_value=int(low), max_value=12),
    }
    return typed.get(kind, scalars) if isinstance(kind, str) else scalars


def _objects(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Objects with ``schema``'s properties (values mostly of their types), now and then
    without a required one or with one it does not allow."""
    properties = {
        key: st.one_of(*[_typed(value)] * 8, values)  # one in nine of any type
        for key, value in schema.get("properties", {}).items()
    }
    required = {key: properties[key] for key in schema.get("required", []) if key in properties}
    optional = {key: value for key, value in properties.items() if key not in required}
    extra = schema.get("additionalProperties", True)
    if not properties:
        return st.dictionaries(st.text(max_size=2), _typed(extra), max_size=3)
    complete = st.fixed_dictionaries(required, optional=optional)
    extras = st.dictionaries(st.sampled_from(["extra", "argv", "x"]), _typed(extra), max_size=1)
    some = st.fixed_dictionaries({}, optional=properties)
    return st.one_of(
        complete,
        complete,
        complete,
        some,
        st.tuples(complete, extras).map(lambda pair: {**pair[0], **pair[1]}),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[Mapping[str, Any], Any]:
    schema = draw(st.sampled_from(SCHEMAS))
    return schema, draw(_objects(schema) | _objects(schema) | values)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_check_config_accepts_exactly_what_jsonschema_accepts(
    case: tuple[Mapping[str, Any], Any],
) -> None:
    schema, config = case
    valid = not any(Draft202012Validator(schema).iter_errors(config))
    assert (check_config(schema, config, "n") == []) == valid, (schema, config)


def test_every_kind_config_that_fits_is_accepted_and_one_that_does_not_explained() -> None:
    shell = plait_executors.ShellKind().config_schema
    assert check_config(shell, {"argv": ["tr", "a-z", "A-Z"], "input": "message"}, "n") == []
    assert check_config(shell, {"argv": ["tr"], "timeout": 2.5, "max_output": 10}, "n") == []
    errors = check_config(shell, {"argv": [], "inptu": "message"}, "n")
    assert [e.path for e in errors] == ["/config/argv", "/config/inptu"]
    assert "did you mean 'input'?" in str(errors[1])
    assert check_config(shell, {"argv": ("tr",)}, "n") != []  # a tuple is not an array


def test_a_config_that_fits_imports_no_jsonschema() -> None:
    code = (
        "import sys, plait_executors\n"
        "from plait_documents import check_config\n"
        "schema = plait_executors.ShellKind().config_schema\n"
        "assert check_config(schema, {'argv': ['ls'], 'output': 'lines'}, 'n') == []\n"
        "print('jsonschema' in sys.modules)\n"
        "assert check_config(schema, {'argv': []}, 'n') != []\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["False", "True"]  # only to explain the one that does not
