"""The bytes a checkpoint is stored as: a magic line, the SHA-256 of the body, the body.

Stores persist the bytes :func:`encode_checkpoint` produces; the bytes carry a SHA-256 of
their body, so a flipped byte or a truncated row is a :class:`~plait.CorruptCheckpointError`,
never a silently wrong resume.

Every field of the record (run id, base id, superstep, format version …) is inside the
checksummed body; a store's listing columns are only an index, and a store checks the
body it reads against the row that led to it (``expect_run``/``expect_id`` of
:func:`decode_checkpoint`). A body of the wrong shape is a
:class:`~plait.CorruptCheckpointError`; a body written by a newer format is refused.

.. versionadded:: 0.1
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import attrs
from plait import CheckpointError, CorruptCheckpointError
from plait.spi import FORMAT_VERSION, Checkpoint

__all__ = ["decode_checkpoint", "dump_json", "encode_checkpoint", "load_json"]

_MAGIC = b"PLAITCP1"

_orjson: Any
try:  # an optional speed-up, never required
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on what is installed
    _orjson = None


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


#: The body's fields and the types each may hold (``None`` allowed where listed).
_FIELDS: dict[str, tuple[type, ...]] = {
    "checkpoint_id": (str,),
    "run_id": (str,),
    "superstep": (int,),
    "parent_id": (str, type(None)),
    "signature": (str,),
    "status": (str,),
    "created_at": (int, float),
    "state": (dict,),
    "format_version": (int,),
    "metadata": (dict,),
    "base_id": (str, type(None)),
}


def _check_shape(raw: Any, where: str) -> None:
    if not isinstance(raw, dict):
        raise CorruptCheckpointError(f"{where} is corrupt: its body is not a JSON object")
    missing = sorted(set(_FIELDS) - set(raw))
    extra = sorted(set(raw) - set(_FIELDS))
    if missing or extra:
        raise CorruptCheckpointError(
            f"{where} is corrupt: its body lacks {', '.join(missing) or 'nothing'} and has "
            f"unknown fields {', '.join(extra) or 'none'}"
        )
    for name, types in _FIELDS.items():
        value = raw.get(name)
        if name in raw and (not isinstance(value, types) or isinstance(value, bool)):
            raise CorruptCheckpointError(
                f"{where} is corrupt: field {name!r} holds {type(value).__name__} "
                f"{value!r:.60}, expected {' or '.join(t.__name__ for t in types)}"
            )


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """Encode ``checkpoint`` as self-checking bytes (magic, SHA-256 of the body, JSON body)."""
    body = dump_json(attrs.asdict(checkpoint, recurse=False))
    digest = hashlib.sha256(body).hexdigest().encode("ascii")
    return _MAGIC + b"\n" + digest + b"\n" + body


def decode_checkpoint(
    data: bytes,
    *,
    where: str = "checkpoint",
    expect_run: str | None = None,
    expect_id: str | None = None,
) -> Checkpoint:
    """Decode bytes made by :func:`encode_checkpoint`, verifying their checksum and shape.

    :param where: names the checkpoint in errors (``"run r1, checkpoint c7"``).
    :param expect_run: the run id the store's row or key says the bytes belong to.
    :param expect_id: the checkpoint id the store's row or key says they are.
    :raises CorruptCheckpointError: the bytes are truncated, altered, mis-shaped, not a
        checkpoint, or their body disagrees with ``expect_run``/``expect_id``.
    :raises CheckpointError: the bytes were written by a newer format (a newer Plait);
        a format older than :data:`FORMAT_VERSION` is corrupt (no release wrote one).
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
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
        raise CheckpointError(
            f"{where} was written by a newer Plait (format {version}); this Plait reads "
            f"format {FORMAT_VERSION}: upgrade plait-core to resume it"
        )
    _check_shape(raw, where)
    if raw["format_version"] != FORMAT_VERSION:
        raise CorruptCheckpointError(
            f"{where} is corrupt: it claims format {raw['format_version']}, which no Plait "
            f"wrote; this Plait reads format {FORMAT_VERSION}"
        )
    checkpoint = Checkpoint(**raw)
    if (expect_run is not None and checkpoint.run_id != expect_run) or (
        expect_id is not None and checkpoint.checkpoint_id != expect_id
    ):
        raise CorruptCheckpointError(
            f"{where} is corrupt: the store lists it as run {expect_run!r}, checkpoint "
            f"{expect_id!r}, but its verified body is run {checkpoint.run_id!r}, checkpoint "
            f"{checkpoint.checkpoint_id!r}"
        )
    return checkpoint
