"""The conversation a team holds: :class:`Message` and :class:`Conversation`.

A :class:`Conversation` is an append-only tuple of messages: :meth:`Conversation.append`
gives a new conversation sharing the old one's messages. It is checkpointed as a JSON list
of its messages (the cattrs hooks registered through ``plait_register_type_hooks``,
:data:`MESSAGE_HOOKS` and :data:`CONVERSATION_HOOKS`), and plait-durable stores a long
list as a Merkle mountain range of content-addressed blobs whose trees over the first
``2**k`` items never change: a checkpoint after a new turn stores the new message and a
few small nodes, not the whole conversation again (measured in
``tests/benchmarks/bench_teams.py``).

Decoding a checkpoint is a trust boundary: :func:`structure_message` accepts exactly the
four fields with their types, and ``data`` only as JSON values.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

import attrs

if TYPE_CHECKING:
    from plait_converters import CattrsHooks

__all__ = [
    "CONVERSATION_HOOKS",
    "MESSAGE_HOOKS",
    "Conversation",
    "Message",
    "as_message",
]

_FIELDS = ("role", "author", "text", "data")
_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_ready(value: Any, path: str) -> None:
    """Raise ``TypeError`` naming ``path`` when ``value`` is not made of JSON values."""
    if isinstance(value, _JSON_SCALARS):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _json_ready(item, f"{path}[{i}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: a key must be a string, got {key!r}")
            _json_ready(item, f"{path}.{key}")
        return
    raise TypeError(
        f"{path} must be JSON data (str, number, bool, None, list, dict), got {value!r}"
    )


def _check_data(_inst: Any, _attribute: Any, value: Any) -> None:
    _json_ready(value, "Message.data")


@attrs.frozen
class Message:
    """One message of a conversation.

    :param role: ``"user"``, ``"assistant"``, ``"system"`` … (what a chat model calls it).
    :param author: who wrote it: a participant's name, or ``"user"`` for the task.
    :param text: what it says.
    :param data: optional JSON data beside the text (a structured answer, a tool call).
    """

    role: str = attrs.field(validator=attrs.validators.instance_of(str))
    author: str = attrs.field(validator=attrs.validators.instance_of(str))
    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    data: Any = attrs.field(default=None, validator=_check_data)

    def __str__(self) -> str:
        return f"{self.author}: {self.text}"


def as_message(value: Any, *, author: str, role: str = "assistant") -> Message:
    """``value`` as a :class:`Message`: a message as it is, a string as ``text`` by
    ``author`` in ``role``.

    :raises TypeError: ``value`` is neither, naming what it is.
    """
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return Message(role, author, value)
    raise TypeError(f"{author!r} answered {value!r}: expected a str or a plait_teams.Message")


def _as_tuple(messages: Iterable[Message]) -> tuple[Message, ...]:
    return messages if type(messages) is tuple else tuple(messages)


@attrs.frozen(eq=True)
class Conversation(Sequence[Message]):
    """An append-only sequence of :class:`Message`, oldest first.

    ``Conversation()`` is empty; ``Conversation.of("task")`` starts one with a user
    message. It is a :class:`~collections.abc.Sequence` (``len``, indexing, slicing gives a
    conversation, iteration); :meth:`append` returns a new conversation, so a conversation
    a participant was given never changes under it.
    """

    messages: tuple[Message, ...] = attrs.field(default=(), converter=_as_tuple)

    def __attrs_post_init__(self) -> None:
        for i, message in enumerate(self.messages):
            if not isinstance(message, Message):
                raise TypeError(
                    f"Conversation.messages[{i}] must be a plait_teams.Message, got {message!r}"
                )

    @classmethod
    def of(cls, *items: str | Message, author: str = "user") -> Conversation:
        """A conversation of ``items``: messages as they are, strings as ``user``
        messages by ``author``."""
        return cls(tuple(as_message(item, author=author, role="user") for item in items))

    def append(self, message: Message) -> Conversation:
        """A new conversation: this one and ``message`` after it (only the new message is
        checked: a turn costs what it adds, not the conversation again)."""
        if not isinstance(message, Message):
            raise TypeError(f"append a plait_teams.Message, got {message!r}")
        grown: Conversation = object.__new__(Conversation)
        object.__setattr__(grown, "messages", (*self.messages, message))
        return grown

    def extend(self, messages: Iterable[Message]) -> Conversation:
        """A new conversation: this one and ``messages`` after it."""
        return Conversation((*self.messages, *messages))

    @property
    def last(self) -> Message | None:
        """The newest message, or ``None`` for an empty conversation."""
        return self.messages[-1] if self.messages else None

    def by(self, author: str) -> Conversation:
        """The messages ``author`` wrote, in order."""
        return Conversation(tuple(m for m in self.messages if m.author == author))

    def transcript(self) -> str:
        """The conversation as text, one ``author: text`` line per message (what a
        participant that takes a prompt string is given)."""
        return "\n".join(str(m) for m in self.messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Conversation: ...
    def __getitem__(self, index: int | slice) -> Message | Conversation:
        if isinstance(index, slice):
            return Conversation(self.messages[index])
        return self.messages[index]

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __repr__(self) -> str:
        return f"<Conversation of {len(self.messages)} message(s)>"


# -- checkpoint encoding: a message as a dict, a conversation as a list of them ----------


def unstructure_message(message: Message) -> dict[str, Any]:
    """A message as JSON data: ``{"role", "author", "text"}``, and ``"data"`` when set."""
    out: dict[str, Any] = {"role": message.role, "author": message.author, "text": message.text}
    if message.data is not None:
        out["data"] = message.data
    return out


def structure_message(data: Any, _type: Any = Message) -> Message:
    """The message ``data`` encodes (from a store: untrusted, checked field by field).

    :raises ValueError: not a dict of the message's fields, naming what is wrong.
    """
    if not isinstance(data, dict):
        raise ValueError(f"a stored plait_teams.Message must be a dict, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise ValueError(f"a stored plait_teams.Message has unknown field(s) {unknown}")
    try:
        return Message(data["role"], data["author"], data["text"], data.get("data"))
    except KeyError as missing:
        raise ValueError(f"a stored plait_teams.Message lacks the field {missing}") from None
    except TypeError as exc:
        raise ValueError(f"a stored plait_teams.Message does not decode: {exc}") from None


def unstructure_conversation(conversation: Conversation) -> list[dict[str, Any]]:
    """A conversation as the JSON list of its messages: the list plait-durable's blob
    layer stores as a mountain range, so what a checkpoint adds is the new messages."""
    return [unstructure_message(m) for m in conversation.messages]


def structure_conversation(data: Any, _type: Any = Conversation) -> Conversation:
    """The conversation ``data`` encodes (untrusted, checked message by message).

    :raises ValueError: not a list of messages, naming the index of a bad one.
    """
    if not isinstance(data, list):
        raise ValueError(
            f"a stored plait_teams.Conversation must be a list, got {type(data).__name__}"
        )
    messages = []
    for i, item in enumerate(data):
        try:
            messages.append(structure_message(item))
        except ValueError as exc:
            raise ValueError(f"Conversation[{i}]: {exc}") from None
    return Conversation(tuple(messages))


def _hooks(cls: type, structure: Any, unstructure: Any) -> CattrsHooks:
    from plait_converters import CattrsHooks

    # requires this module, as its lazy registration says: a value exists only once it is
    # imported, so encoding never imports it for a run without a team
    return CattrsHooks(cls, structure=structure, unstructure=unstructure, requires=__name__)


#: the cattrs hooks of :class:`Message` (registered lazily by the plugin; they apply once
#: this module is imported, when a message can first exist)
MESSAGE_HOOKS = _hooks(Message, structure_message, unstructure_message)
#: the cattrs hooks of :class:`Conversation`
CONVERSATION_HOOKS = _hooks(Conversation, structure_conversation, unstructure_conversation)
