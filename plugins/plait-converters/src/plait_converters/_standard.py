"""Numbers, text and bytes, JSON text: converters on plain values."""

from __future__ import annotations

import json
import math
from typing import Any, NewType

from plait.spi import Converter

__all__ = [
    "JsonText",
    "bytes_to_str",
    "dict_to_json",
    "float_to_int",
    "int_to_float",
    "join_lines",
    "json_to_dict",
    "json_to_list",
    "list_to_json",
    "str_to_bytes",
]

#: A ``str`` that holds JSON. Declare it where a value *is* JSON text: a ``str`` consumer
#: takes it as it is, and only a ``JsonText`` converts to ``dict`` or ``list`` (not every
#: ``str`` parses). Make one with ``JsonText(text)``.
JsonText = NewType("JsonText", str)


def _int_to_float(value: int) -> float:
    result = float(value)  # OverflowError past the float range
    if int(result) != value:
        raise ValueError(f"{value} has no exact float (the nearest is {result!r})")
    return result


def _float_to_int(value: float) -> int:
    return int(value)  # truncates toward zero; nan and inf raise


def _str_to_bytes(value: str) -> bytes:
    return value.encode("utf-8")


def _bytes_to_str(value: bytes) -> str:
    return value.decode("utf-8", errors="replace")


def _check_json(value: Any, path: str) -> None:
    """Raise unless ``value`` has a JSON form that loads back equal (no tuples, no int keys)."""
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} has no JSON form")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: key {key!r} is not a str (JSON would turn it into one)")
            _check_json(item, f"{path}[{key!r}]")
        return
    raise TypeError(f"{path}: a {type(value).__name__} has no JSON form")


def _dumps(value: Any) -> JsonText:
    _check_json(value, "$")
    return JsonText(json.dumps(value, ensure_ascii=False, allow_nan=False))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: JsonText, kind: type) -> Any:
    value = json.loads(text, parse_constant=_reject_constant)
    if not isinstance(value, kind):
        wanted = "an object" if kind is dict else "an array"
        raise ValueError(f"the JSON text holds a {type(value).__name__}, not {wanted}")
    return value


def _json_to_dict(value: JsonText) -> dict[str, Any]:
    result: dict[str, Any] = _loads(value, dict)
    return result


def _json_to_list(value: JsonText) -> list[Any]:
    result: list[Any] = _loads(value, list)
    return result


def _join_lines(value: list[str]) -> str:
    return "\n".join(value)


int_to_float = Converter(int, float, _int_to_float, True, "int_to_float")
"""``int`` → ``float``; lossless: an int no float holds exactly raises instead of rounding."""
float_to_int = Converter(float, int, _float_to_int, False, "float_to_int")
"""``float`` → ``int``, truncating toward zero; lossy."""
str_to_bytes = Converter(str, bytes, _str_to_bytes, True, "str_to_bytes")
"""``str`` → ``bytes`` (UTF-8); lossless."""
bytes_to_str = Converter(bytes, str, _bytes_to_str, False, "bytes_to_str")
"""``bytes`` → ``str`` (UTF-8, invalid bytes become U+FFFD); lossy."""
dict_to_json = Converter(dict[str, Any], JsonText, _dumps, True, "dict_to_json")
"""``dict[str, Any]`` → :data:`JsonText`; lossless, and raises for values JSON cannot hold."""
list_to_json = Converter(list[Any], JsonText, _dumps, True, "list_to_json")
"""``list[Any]`` → :data:`JsonText`; lossless, and raises for values JSON cannot hold."""
json_to_dict = Converter(JsonText, dict[str, Any], _json_to_dict, True, "json_to_dict")
""":data:`JsonText` → ``dict[str, Any]``; raises unless the text holds an object."""
json_to_list = Converter(JsonText, list[Any], _json_to_list, True, "json_to_list")
""":data:`JsonText` → ``list[Any]``; raises unless the text holds an array."""
join_lines = Converter(list[str], str, _join_lines, False, "join_lines")
"""``list[str]`` → ``str``, one item per line; lossy (items may hold newlines)."""
