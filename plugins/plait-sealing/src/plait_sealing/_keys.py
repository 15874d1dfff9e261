"""Checkpoint keys: one key, a ring of them for rotation, and where they come from.

A key is at least 16 random bytes with an id (``id:base64key`` as text); a ring's first
key signs (and encrypts) new checkpoints and every key verifies the checkpoints that
name it. Keys come from the ``keys=`` argument of :class:`~plait_sealing.SealedStore`,
else from ``PLAIT_CHECKPOINT_KEY``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import importlib.util
import os
import re
from collections.abc import Sequence
from typing import Any

import attrs
from plait import PlaitError

__all__ = [
    "CRYPTO_HINT",
    "ENCRYPT_VARIABLE",
    "KEY_VARIABLE",
    "CheckpointKey",
    "CheckpointKeyError",
    "CheckpointKeys",
    "generate_key",
    "resolve_keys",
]

#: The environment variable read when no key is passed:
#: ``id:base64key[,id:base64key…]`` (the first signs).
KEY_VARIABLE = "PLAIT_CHECKPOINT_KEY"
#: Set to ``1`` to encrypt checkpoints when ``encrypt`` is not passed.
ENCRYPT_VARIABLE = "PLAIT_CHECKPOINT_ENCRYPT"
#: What to do when encryption is asked for without the ``cryptography`` package.
CRYPTO_HINT = "install it with: pip install 'plait-sealing[crypto]'"

#: The HKDF salt, also the first line of every MAC'd header.
CONTEXT = b"plait checkpoint v1"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MIN_SECRET = 16


class CheckpointKeyError(PlaitError, ValueError):
    """A checkpoint key is malformed, too short or missing, or encryption is asked for
    without a key or without the ``cryptography`` package. Raised before anything is
    written.
    """


def _hkdf(secret: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) for one 32-byte output block."""
    prk = hmac.new(CONTEXT, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


@attrs.frozen(repr=False)
class CheckpointKey:
    """One checkpoint key: an id (named in every checkpoint it signs) and a secret.

    :param secret: at least 16 random bytes (32 recommended: :func:`generate_key`).
    :param key_id: letters, digits, ``.``, ``_``, ``-``; default: derived from the secret.
    :param encrypt: checkpoints this key signs are also encrypted (AES-256-GCM).
    """

    secret: bytes = attrs.field(converter=bytes)
    key_id: str = ""
    encrypt: bool = False
    mac_key: bytes = attrs.field(init=False)
    aes_key: bytes = attrs.field(init=False)
    #: keys the address of an encrypted blob (HMAC of its SHA-256): see
    #: :func:`plait_sealing._store.blob_address`
    blob_key: bytes = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if len(self.secret) < _MIN_SECRET:
            raise CheckpointKeyError(
                f"checkpoint key {self.key_id or '(unnamed)'!r} is {len(self.secret)} bytes; "
                f"a key needs at least {_MIN_SECRET} random bytes (generate_key() makes 32)"
            )
        if not self.key_id:
            object.__setattr__(self, "key_id", _hkdf(self.secret, b"key id").hex()[:12])
        elif not _KEY_ID.fullmatch(self.key_id):
            raise CheckpointKeyError(
                f"checkpoint key id {self.key_id!r} may hold only letters, digits, '.', '_' "
                "and '-' (1 to 64 of them)"
            )
        object.__setattr__(self, "mac_key", _hkdf(self.secret, b"mac"))
        object.__setattr__(self, "aes_key", _hkdf(self.secret, b"aes-256-gcm"))
        object.__setattr__(self, "blob_key", _hkdf(self.secret, b"blob address"))

    def __repr__(self) -> str:
        return f"CheckpointKey(key_id={self.key_id!r}, encrypt={self.encrypt!r})"

    @classmethod
    def parse(cls, text: str) -> CheckpointKey:
        """``id:base64key`` or ``base64key`` (standard or URL-safe base64)."""
        key_id, _, encoded = text.strip().rpartition(":")
        try:
            secret = base64.b64decode(encoded + "=" * (-len(encoded) % 4), b"-_", validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CheckpointKeyError(
                f"checkpoint key {key_id or '(unnamed)'!r} is not base64: {exc}"
            ) from None
        return cls(secret, key_id)


def generate_key(key_id: str = "") -> str:
    """A new random 32-byte key in ``PLAIT_CHECKPOINT_KEY`` form (``id:base64key``)."""
    encoded = base64.b64encode(os.urandom(32)).decode("ascii")
    return f"{key_id}:{encoded}" if key_id else encoded


@attrs.frozen
class CheckpointKeys:
    """A key ring: ``keys[0]`` signs (and, with ``encrypt``, encrypts); every key verifies."""

    keys: tuple[CheckpointKey, ...]
    encrypt: bool = False

    def __attrs_post_init__(self) -> None:
        ids = [key.key_id for key in self.keys]
        if not ids:
            raise CheckpointKeyError("the checkpoint key ring holds no key")
        if len(set(ids)) != len(ids):
            raise CheckpointKeyError(f"checkpoint key ids repeat: {', '.join(ids)}")

    @property
    def signing(self) -> CheckpointKey:
        """The key that signs new checkpoints."""
        return self.keys[0]

    def get(self, key_id: str) -> CheckpointKey | None:
        """The key with id ``key_id``, if it is in the ring."""
        return next((key for key in self.keys if key.key_id == key_id), None)


def _key_items(value: Any, source: str) -> list[CheckpointKey]:
    if isinstance(value, CheckpointKey):
        return [value]
    if isinstance(value, (bytes, bytearray)):
        return [CheckpointKey(bytes(value))]
    if isinstance(value, str):
        return [CheckpointKey.parse(part) for part in value.split(",") if part.strip()]
    if isinstance(value, Sequence):
        return [key for item in value for key in _key_items(item, source)]
    raise CheckpointKeyError(
        f"{source} must be a key (bytes, 'id:base64key', CheckpointKey) or a list of keys, "
        f"got {type(value).__name__}"
    )


def resolve_keys(key: Any = None, encrypt: bool | None = None) -> CheckpointKeys | None:
    """The key ring for ``key`` and ``encrypt``, falling back to ``PLAIT_CHECKPOINT_KEY``
    and ``PLAIT_CHECKPOINT_ENCRYPT``; ``None`` without a key anywhere.

    :param key: a key (``bytes``, ``"id:base64key"``, :class:`CheckpointKey`), a list of
        them (the first signs), a :class:`CheckpointKeys`, or ``None``.
    :param encrypt: also encrypt; ``None``: the environment, or the signing key's mark.
    :raises CheckpointKeyError: a key is malformed or too short, ``encrypt`` is asked for
        without a key, or ``cryptography`` is not installed for it.
    """
    if isinstance(key, CheckpointKeys) and encrypt is None:
        return key
    if encrypt is not None and not isinstance(encrypt, bool):
        raise CheckpointKeyError(f"encrypt must be True or False, got {encrypt!r}")
    source = "checkpoint key"
    if key is None:
        key, source = os.environ.get(KEY_VARIABLE) or None, KEY_VARIABLE
    if encrypt is None:
        encrypt = os.environ.get(ENCRYPT_VARIABLE, "").strip().lower() in ("1", "true", "yes")
    if key is None:
        if encrypt:
            raise CheckpointKeyError(
                f"encrypting checkpoints needs a key: pass keys= or set {KEY_VARIABLE} "
                "(plait_sealing.generate_key() makes one)"
            )
        return None
    try:
        items = list(key.keys) if isinstance(key, CheckpointKeys) else _key_items(key, source)
        keys = CheckpointKeys(tuple(items), encrypt=bool(encrypt) or items[:1][0].encrypt)
    except CheckpointKeyError as exc:
        raise CheckpointKeyError(f"{source}: {exc}") from None
    except IndexError:
        raise CheckpointKeyError(f"{source} holds no key") from None
    if keys.encrypt and importlib.util.find_spec("cryptography") is None:
        raise CheckpointKeyError(
            f"encrypting checkpoints needs the cryptography package; {CRYPTO_HINT}"
        )
    return keys
