"""Plait's standard message converters.

Installing ``plait-converters`` registers these through ``plait_register_converters``.
Where an edge's types differ, the workflow builder (``plait-builders``, which depends on
this distribution) asks :func:`find_chain` for the cheapest chain of registered converters
and inserts it (lossless converters freely, lossy ones where ``allow_lossy`` permits):

========================== ================================= ===============================
name                       from → to                         kind
========================== ================================= ===============================
``int_to_float``           ``int`` → ``float``               lossless (exact ints only)
``float_to_int``           ``float`` → ``int``               lossy (truncates)
``str_to_bytes``           ``str`` → ``bytes``               lossless (UTF-8)
``bytes_to_str``           ``bytes`` → ``str``               lossy (invalid bytes → U+FFFD)
``dict_to_json``           ``dict[str, Any]`` → ``JsonText`` lossless
``list_to_json``           ``list[Any]`` → ``JsonText``      lossless
``json_to_dict``           ``JsonText`` → ``dict[str, Any]`` lossless
``json_to_list``           ``JsonText`` → ``list[Any]``      lossless
``record_to_dict``         attrs class / dataclass → dict    lossless (cattrs)
``dict_to_record``         dict → attrs class / dataclass    lossless (cattrs, strict keys)
``join_lines``             ``list[str]`` → ``str``           lossy
``str_to_chat_message``    ``str`` → ``ChatMessage``         lossless (role ``user``)
``chat_message_to_str``    ``ChatMessage`` → ``str``         lossy (drops the role)
``conversation_to_text``   ``list[ChatMessage]`` → ``str``   lossy (``role: content`` lines)
``messages_to_structured`` ``list[ChatMessage]`` → record    lossy (the last message's JSON)
========================== ================================= ===============================

``text_to_conversation`` (``str`` → ``list[ChatMessage]``, one ``user`` message) is a
converter record for an explicit ``connect(..., adapter=text_to_conversation)``, not
registered for the search: a lossless way from every ``str`` to a list would open chains
through ``list_to_json`` (``str`` → JSON text) that nobody asked for.

The search and what it needs are public here too:

* :func:`is_assignable` — may a value statically typed A go where B is declared? (the
  builder's edge check; ``plait.spi.is_instance`` is the kernel's run-time check);
* :func:`find_chain` and :func:`nearest_converters` — the cheapest :class:`Chain` of
  :class:`Step` records between two types, and what an error lists when there is none;
* :func:`converter_graph` — the :class:`ConverterGraph` of a plugin manager's converters,
  to ask it for chains directly.

Defining converters and message types is here too: :class:`TypeFamily` (many types as a
converter's source or target), :func:`converter` (an annotated function registered from a
script), and Plait's cattrs converter for messages, :func:`message_converter`, with the
hooks a plugin registers for its own types (:class:`CattrsHooks`, through
``plait_register_type_hooks``; :func:`register_type_hooks` from a script).

Loading plugins imports this package alone: each converter registers lazily
(:func:`plait.spi.lazy`), and its module is imported when the search first reads the
converters, so the registry holds a stand-in whose ``resolve()`` is the
:class:`~plait.spi.Converter` (its ``source``, ``target``, ``fn`` and ``lossless`` read
through). The public names here are imported on first use too: a build whose edges need
no conversion imports :func:`is_assignable` and the records, never the search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plait
from plait.spi import Register, lazy, lazy_exports

if TYPE_CHECKING:
    from ._assignable import is_assignable as is_assignable
    from ._catalog import CONVERTERS as CONVERTERS
    from ._chain import Chain as Chain, Step as Step
    from ._conversation import (
        STRUCTURED as STRUCTURED,
        Conversation as Conversation,
        MessagesToStructured as MessagesToStructured,
        conversation_to_text as conversation_to_text,
        messages_to_structured as messages_to_structured,
        text_to_conversation as text_to_conversation,
    )
    from ._define import TypeFamily as TypeFamily, converter as converter
    from ._graph import (
        ConverterGraph as ConverterGraph,
        converter_graph as converter_graph,
        find_chain as find_chain,
        nearest_converters as nearest_converters,
    )
    from ._messages import (
        CattrsHooks as CattrsHooks,
        hooks_key as hooks_key,
        message_converter as message_converter,
        register_type_hooks as register_type_hooks,
        type_hooks as type_hooks,
    )
    from ._records import (
        RECORDS as RECORDS,
        ChatMessage as ChatMessage,
        chat_message_to_str as chat_message_to_str,
        dict_to_record as dict_to_record,
        record_to_dict as record_to_dict,
        str_to_chat_message as str_to_chat_message,
    )
    from ._standard import (
        JsonText as JsonText,
        bytes_to_str as bytes_to_str,
        dict_to_json as dict_to_json,
        float_to_int as float_to_int,
        int_to_float as int_to_float,
        join_lines as join_lines,
        json_to_dict as json_to_dict,
        json_to_list as json_to_list,
        list_to_json as list_to_json,
        str_to_bytes as str_to_bytes,
    )


#: Each standard converter's name and the module it lives in, in name order.
_CONVERTERS = {
    "bytes_to_str": "_standard",
    "chat_message_to_str": "_records",
    "conversation_to_text": "_conversation",
    "dict_to_json": "_standard",
    "dict_to_record": "_records",
    "float_to_int": "_standard",
    "int_to_float": "_standard",
    "join_lines": "_standard",
    "json_to_dict": "_standard",
    "json_to_list": "_standard",
    "list_to_json": "_standard",
    "messages_to_structured": "_conversation",
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


# every plait command imports this package to load plugins, so it imports none of its names
# (nor the search) until one is used
if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
