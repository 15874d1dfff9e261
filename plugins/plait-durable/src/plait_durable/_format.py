"""The bytes a checkpoint is stored as, and the typed body inside them.

Stores persist the bytes :func:`encode_checkpoint` produces: a magic line, the SHA-256 of
the body, and the body, compact JSON. The checksum makes a flipped byte or a truncated row
a :class:`~plait_durable.CorruptCheckpointError`, never a silently wrong resume.

The body is :class:`~plait_durable._typed.CheckpointBody`, structured and unstructured
through this distribution's cattrs converter (:func:`checkpoint_converter`), never read key
by key: every field of the record (run id, base id, superstep, format version …) is inside
the checksummed body, with the type it must have. A body of the wrong shape is a
:class:`~plait_durable.CorruptCheckpointError` naming the checkpoint and the path of every field
that is wrong (``state.requests[2].superstep holds str '3', expected int``); a body written
by a newer format is refused. A store's listing columns are only an index, and a store
checks the body it reads against the row that led to it (``expect_run``/``expect_id`` of
:func:`decode_checkpoint`). Writing never builds the body's class (:func:`checkpoint_fields`
writes its JSON): it is imported when a checkpoint is first read.

Structuring is strict and builds nothing the body names: ``str``, ``int`` and ``float``
fields take only those JSON types (no ``"3"`` for ``3``, no ``true`` for ``1``), and the
values a run keeps (:data:`~plait_durable._typed.Json`: messages, executor and shared
state …) stay the JSON they are until resuming decodes them into the types the workflow
declares (:func:`plait_durable.decode_value`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from plait import CheckpointError

from ._errors import CorruptCheckpointError
from .checkpoint import FORMAT_VERSION, Checkpoint

if TYPE_CHECKING:
    import cattrs  # importing it costs ~40 ms: done when a checkpoint is first read

__all__ = [
    "checkpoint_converter",
    "checkpoint_fields",
    "corrupt",
    "decode_checkpoint",
    "dump_json",
    "encode_checkpoint",
    "load_json",
]

_MAGIC = b"PLAITCP1"

_orjson: Any
try:  # an optional speed-up, never required
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on what is installed
    _orjson = None

#: Errors a message lists at most (a forged body can be wrong in every field).
_SHOWN = 5


def dump_json(data: Any) -> bytes:
    """Compact UTF-8 JSON, for store authors too: orjson when it is installed (20x faster
    on checkpoints; the ``plait-stores`` plugin installs it), else the standard library."""
    if _orjson is not None:
        try:
            encoded: bytes = _orjson.dumps(data)
            return encoded
        except TypeError:  # e.g. an int beyond 64 bits: the standard library handles it
            pass
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (non-finite floats are encoded as tagged text)")


def load_json(body: bytes) -> Any:
    """JSON bytes to values: orjson when it is installed, the standard library when orjson
    refuses (it decides, and words the error); ``NaN`` and ``Infinity`` are refused."""
    if _orjson is not None:
        try:
            return _orjson.loads(body)
        except ValueError:
            pass  # the standard library decides, and words the error
    return json.loads(body, parse_constant=_no_constant)


class _WrongType(TypeError):
    """A field holds a JSON value of another type; the message says which."""


def _strict(*kinds: type) -> Any:
    expected = " or ".join(kind.__name__ for kind in kinds)

    def structure(value: Any, _: Any) -> Any:
        if type(value) not in kinds:  # JSON gives exact types; bool is not an int here
            raise _WrongType(f"holds {type(value).__name__} {value!r:.60}, expected {expected}")
        return value

    return structure


def _same(value: Any, *_: Any) -> Any:
    return value


def _json_object(value: Any, _: Any) -> Any:
    if type(value) is not dict:
        raise _WrongType(f"holds {type(value).__name__} {value!r:.60}, expected a JSON object")
    return value


def _as_stored(type_: Any) -> Callable[[Any], bool] | None:
    """For a collection of JSON values or of one JSON type (``list[Json]``,
    ``dict[str, int]``, ``dict[str, list[Json]]`` …): whether a value, already known to be
    the right collection, holds only what it may, so it can be taken as it is. ``None`` for
    collections of classes, which cattrs builds item by item. (Keys are not checked: a
    JSON object's keys are strings.)"""
    from ._typed import Json

    item = type_.__args__[-1]
    if item is Json:
        return lambda value: True
    if getattr(item, "__origin__", None) is list and item.__args__[0] is Json:
        return lambda value: all(type(x) is list for x in value.values())
    if item in (str, int):
        items = (lambda value: value) if type_.__origin__ is list else dict.values
        return lambda value: all(type(x) is item for x in items(value))
    return None


def _exactly(kind: type, make: Any) -> Any:
    """A structure hook factory for a collection type: a JSON ``kind`` only (a string is no
    list, a list no map), taken as it is when it holds what it may (:func:`_as_stored`:
    the common case, at the cost of one pass), else through cattrs' own hook (``make``),
    which builds it item by item or raises naming each item that is wrong."""

    def factory(type_: Any, converter: cattrs.Converter) -> Any:
        inner = make(type_, converter)
        fits = _as_stored(type_)
        expected = "a JSON array" if kind is list else "a JSON object"

        def structure(value: Any, _: Any) -> Any:
            if type(value) is not kind:
                raise _WrongType(f"holds {type(value).__name__} {value!r:.60}, expected {expected}")
            if fits is not None and fits(value):
                return value
            return inner(value, type_)

        return structure

    return factory


@functools.cache
def checkpoint_converter() -> cattrs.Converter:
    """The converter of checkpoint bodies (this distribution's own, never
    ``cattrs.global_converter``), built on first use: strict about JSON types, no unknown
    keys, every error with its path (``detailed_validation``), and the unstructure hook of
    the checkpoint record.

    Built when a checkpoint is first read, not written: writing goes through
    :func:`checkpoint_fields`, so a run that only writes checkpoints never pays for
    importing cattrs.
    """
    import cattrs
    from cattrs.cols import list_structure_factory
    from cattrs.gen import make_mapping_structure_fn

    from ._typed import Json

    converter = cattrs.Converter(detailed_validation=True, forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str))
    converter.register_structure_hook(int, _strict(int))
    converter.register_structure_hook(float, _strict(float, int))  # 1.0 may come back as 1
    converter.register_structure_hook(Json, _same)
    converter.register_structure_hook_factory(
        lambda t: getattr(t, "__origin__", None) is list, _exactly(list, list_structure_factory)
    )
    converter.register_structure_hook_factory(
        lambda t: getattr(t, "__origin__", None) is dict, _exactly(dict, make_mapping_structure_fn)
    )
    converter.register_unstructure_hook(Json, _same)
    # a map of JSON values is taken as it is, not copied key by key (state, metadata;
    # the record types them ``dict[str, Any]``, the body ``dict[str, Json]``)
    maps = (dict[str, Json], dict[str, Any])
    converter.register_structure_hook_func(lambda t: t in maps, _json_object)
    converter.register_unstructure_hook_func(lambda t: t in maps, _same)
    # the record's own hook (the checkpointer writes the states of the layout,
    # plait_durable._layout, as JSON itself)
    converter.register_unstructure_hook(Checkpoint, checkpoint_fields)
    return converter


def checkpoint_fields(checkpoint: Checkpoint) -> dict[str, Any]:
    """The body of ``checkpoint`` as JSON (its fields hold JSON already): every field of
    the record, in its order (:class:`~plait_durable._typed.CheckpointBody`'s), the key
    order of every checkpoint ever written. The record's unstructure hook; it runs for
    every checkpoint a run writes, so it names the fields rather than looping over them."""
    return {
        "checkpoint_id": checkpoint.checkpoint_id,
        "run_id": checkpoint.run_id,
        "superstep": checkpoint.superstep,
        "parent_id": checkpoint.parent_id,
        "signature": checkpoint.signature,
        "status": checkpoint.status,
        "created_at": checkpoint.created_at,
        "state": checkpoint.state,
        "format_version": checkpoint.format_version,
        "metadata": checkpoint.metadata,
        "base_id": checkpoint.base_id,
    }


def _explain(exc: BaseException, type_: Any) -> str:
    from cattrs.errors import ForbiddenExtraKeysError

    if isinstance(exc, _WrongType):
        return str(exc)
    if isinstance(exc, KeyError):
        return "is missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"has unknown fields {', '.join(sorted(exc.extra_fields))}"
    if isinstance(exc, ValueError) and "literal" in str(exc):
        return f"is {str(exc).split(' not in ')[0]!r:.40}, not one this format writes"
    return f"does not structure ({type(exc).__name__}: {exc})"


def corrupt(where: str, what: str, exc: Exception) -> CorruptCheckpointError:
    """The error for a body (``what``: ``"body"``, ``"state"``) that cattrs could not
    structure: ``where`` (naming the checkpoint) and each field's path and fault, from
    cattrs' validation details."""
    from cattrs import transform_error

    found = []
    for line in transform_error(exc, path="$", format_exception=_explain):
        fault, _, path = line.rpartition(" @ ")
        field = path.removeprefix("$").removeprefix(".")
        found.append(f"{what}.{field} {fault}" if field else f"its {what} {fault}")
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return CorruptCheckpointError(f"{where} is corrupt: {'; '.join(found[:_SHOWN])}{more}")


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """Encode ``checkpoint`` as self-checking bytes (magic, SHA-256 of the body, JSON body)."""
    body = dump_json(checkpoint_fields(checkpoint))
    digest = hashlib.sha256(body).hexdigest().encode("ascii")
    return b"\n".join((_MAGIC, digest, body))  # one copy of the body, not three


def decode_checkpoint(
    data: bytes,
    *,
    where: str = "checkpoint",
    expect_run: str | None = None,
    expect_id: str | None = None,
) -> Checkpoint:
    """Decode bytes made by :func:`encode_checkpoint`, verifying their checksum and shape.

    :param where: names the checkpoint in errors (``"run r1, checkpoint c7"``); left out,
        errors name the checkpoint id its body holds.
    :param expect_run: the run id the store's row or key says the bytes belong to.
    :param expect_id: the checkpoint id the store's row or key says they are.
    :raises CorruptCheckpointError: the bytes are truncated, altered, mis-shaped (naming
        each field that is wrong), not a checkpoint, or their body disagrees with
        ``expect_run``/``expect_id``.
    :raises CheckpointError: the bytes were written by a newer format (a newer Plait);
        a format older than :data:`~plait_durable.FORMAT_VERSION` is corrupt (no release
        wrote one).
    """
    magic, sep1, rest = bytes(data).partition(b"\n")
    digest, sep2, body = rest.partition(b"\n")
    if magic != _MAGIC or not sep1 or not sep2:
        raise CorruptCheckpointError(f"{where} is not a Plait checkpoint (bad header)")
    if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its checksum does not match its contents "
            f"({len(body)} bytes of body); the store's other checkpoints are unaffected"
        )
    try:
        raw = load_json(body)
    except (ValueError, TypeError, RecursionError) as exc:
        raise CorruptCheckpointError(f"{where} does not decode: {exc}") from exc
    if type(raw) is not dict:
        raise CorruptCheckpointError(f"{where} is corrupt: its body is not a JSON object")
    named = raw.get("checkpoint_id")
    if where == "checkpoint" and type(named) is str:
        where = f"checkpoint {named!r:.80}"
    version = raw.get("format_version")
    if type(version) is int and version > FORMAT_VERSION:
        raise CheckpointError(
            f"{where} was written by a newer Plait (format {version}); this Plait reads "
            f"format {FORMAT_VERSION}: upgrade plait-core to resume it"
        )
    from ._typed import CheckpointBody

    try:
        stored = checkpoint_converter().structure(raw, CheckpointBody)
    except Exception as exc:  # cattrs' validation errors, each with its path
        raise corrupt(where, "body", exc) from exc
    if stored.format_version != FORMAT_VERSION:
        raise CorruptCheckpointError(
            f"{where} is corrupt: it claims format {stored.format_version}, which no Plait "
            f"wrote; this Plait reads format {FORMAT_VERSION}"
        )
    if (expect_run is not None and stored.run_id != expect_run) or (
        expect_id is not None and stored.checkpoint_id != expect_id
    ):
        raise CorruptCheckpointError(
            f"{where} is corrupt: the store lists it as run {expect_run!r}, checkpoint "
            f"{expect_id!r}, but its verified body is run {stored.run_id!r}, checkpoint "
            f"{stored.checkpoint_id!r}"
        )
    return Checkpoint(
        checkpoint_id=stored.checkpoint_id,
        run_id=stored.run_id,
        superstep=stored.superstep,
        parent_id=stored.parent_id,
        signature=stored.signature,
        status=stored.status,
        created_at=stored.created_at,
        state=stored.state,
        format_version=stored.format_version,
        metadata=stored.metadata,
        base_id=stored.base_id,
    )
