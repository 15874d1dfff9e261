"""Plait's standard message converters.

Installing ``plait-converters`` registers these through ``plait_register_converters``, and
the search that chains converters (:class:`ChainSearch`, through
``plait_register_converter_search``; :mod:`plait_converters.search` is that hook alone). The
workflow builder inserts a chain where an edge's types differ (lossless converters freely,
lossy ones where ``allow_lossy`` permits):

======================== ================================ ==========================
name                     from → to                        kind
======================== ================================ ==========================
``int_to_float``         ``int`` → ``float``              lossless (exact ints only)
``float_to_int``         ``float`` → ``int``              lossy (truncates)
``str_to_bytes``         ``str`` → ``bytes``              lossless (UTF-8)
``bytes_to_str``         ``bytes`` → ``str``              lossy (invalid bytes → U+FFFD)
``dict_to_json``         ``dict[str, Any]`` → ``JsonText`` lossless
``list_to_json``         ``list[Any]`` → ``JsonText``     lossless
``json_to_dict``         ``JsonText`` → ``dict[str, Any]`` lossless
``json_to_list``         ``JsonText`` → ``list[Any]``     lossless
``record_to_dict``       attrs class / dataclass → dict   lossless (cattrs)
``dict_to_record``       dict → attrs class / dataclass   lossless (cattrs, strict keys)
``join_lines``           ``list[str]`` → ``str``          lossy
``str_to_chat_message``  ``str`` → ``ChatMessage``        lossless (role ``user``)
``chat_message_to_str``  ``ChatMessage`` → ``str``        lossy (drops the role)
======================== ================================ ==========================

:func:`converter_graph` gives the :class:`ConverterGraph` of a plugin manager's converters,
to ask it for chains directly; it is imported on first use.

Loading plugins imports this package alone: each converter registers lazily
(:func:`plait.spi.lazy`), and its module is imported when the search first reads the
converters, so the registry holds a stand-in whose ``resolve()`` is the
:class:`~plait.spi.Converter` (its ``source``, ``target``, ``fn`` and ``lossless`` read
through). The public names here are imported on first use too.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

from .search import plait_register_converter_search

if TYPE_CHECKING:
    from ._catalog import CONVERTERS
    from ._graph import ChainSearch, ConverterGraph, converter_graph
    from ._records import (
        RECORDS,
        ChatMessage,
        chat_message_to_str,
        dict_to_record,
        record_to_dict,
        str_to_chat_message,
    )
    from ._standard import (
        JsonText,
        bytes_to_str,
        dict_to_json,
        float_to_int,
        int_to_float,
        join_lines,
        json_to_dict,
        json_to_list,
        list_to_json,
        str_to_bytes,
    )

__all__ = [
    "CONVERTERS",
    "ChainSearch",
    "ConverterGraph",
    "RECORDS",
    "ChatMessage",
    "JsonText",
    "bytes_to_str",
    "chat_message_to_str",
    "converter_graph",
    "dict_to_json",
    "dict_to_record",
    "float_to_int",
    "int_to_float",
    "join_lines",
    "json_to_dict",
    "json_to_list",
    "list_to_json",
    "plait_register_converter_search",
    "plait_register_converters",
    "record_to_dict",
    "str_to_bytes",
    "str_to_chat_message",
]

#: Each standard converter's name and the module it lives in, in name order.
_CONVERTERS = {
    "bytes_to_str": "_standard",
    "chat_message_to_str": "_records",
    "dict_to_json": "_standard",
    "dict_to_record": "_records",
    "float_to_int": "_standard",
    "int_to_float": "_standard",
    "join_lines": "_standard",
    "json_to_dict": "_standard",
    "json_to_list": "_standard",
    "list_to_json": "_standard",
    "record_to_dict": "_records",
    "str_to_bytes": "_standard",
    "str_to_chat_message": "_records",
}


@plait.hookimpl
def plait_register_converters(register: Register) -> None:
    """Register the standard converters (each module is imported when the converter search
    first reads its converters: when an edge first needs a conversion)."""
    for name, home in _CONVERTERS.items():
        converter = lazy(
            f"{__name__}.{home}:{name}", provides=("source", "target", "fn", "lossless")
        )
        register(name, converter)


# where each public name lives: every plait command imports this package to load plugins,
# so it imports none of them (nor plait._convert under them) until one is used
__getattr__ = lazy_exports(
    __name__,
    {
        **_CONVERTERS,
        "CONVERTERS": "_catalog",
        "RECORDS": "_records",
        "ChatMessage": "_records",
        "JsonText": "_standard",
        "ChainSearch": "_graph",
        "ConverterGraph": "_graph",
        "converter_graph": "_graph",
    },
)
