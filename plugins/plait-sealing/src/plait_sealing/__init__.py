"""Signed and encrypted Plait checkpoints: an HMAC-SHA256 over every field, AES-GCM optionally.

Sealing is a store wrapper: :class:`SealedStore` sits between a run and any checkpoint
store, seals every checkpoint it saves and verifies every checkpoint it loads; the store
keeps and lists sealed checkpoints as usual and never sees the key::

    from plait_sealing import SealedStore, generate_key

    key = generate_key("2026-11")  # keep it in your secret store
    store = SealedStore("sqlite:///runs.db", keys=key)
    result = await workflow.run(message, checkpoint=store)
    again = await workflow.resume(result.run_id, store)

With the keys in ``PLAIT_CHECKPOINT_KEY`` (``id:base64key[,…]``, the first signs), a store
URL seals too: ``checkpoint="sealed:sqlite:///runs.db"``; ``plait run`` and
``plait resume`` seal whatever store they use while the variable is set.

A changed, forged, unsigned or wrongly-keyed checkpoint is refused with
:class:`plait.CheckpointAuthError` naming the run and the checkpoint. Several keys
make a ring for rotation: the first signs (and encrypts) new checkpoints; every key
verifies those that name it. Each key is stretched into separate MAC and encryption keys
(HKDF-SHA256). ``cryptography`` is needed for encryption only
(``pip install 'plait-sealing[crypto]'``) and imported when a checkpoint is first
encrypted or decrypted.

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register

if TYPE_CHECKING:
    from ._keys import (
        ENCRYPT_VARIABLE,
        KEY_VARIABLE,
        CheckpointKey,
        CheckpointKeyError,
        CheckpointKeys,
        generate_key,
        resolve_keys,
    )
    from ._store import SealedStore, blob_address, open_sealed, seal, unseal

__all__ = [
    "ENCRYPT_VARIABLE",
    "KEY_VARIABLE",
    "CheckpointKey",
    "CheckpointKeyError",
    "CheckpointKeys",
    "SealedStore",
    "blob_address",
    "generate_key",
    "open_sealed",
    "plait_register_checkpoint_stores",
    "resolve_keys",
    "seal",
    "unseal",
]

# Every process that loads Plait's plugins imports this module (entry point ``sealing``):
# hashing and key handling are imported when a sealed store is first used.
_KEYS = frozenset(
    {"ENCRYPT_VARIABLE", "KEY_VARIABLE", "CheckpointKey", "CheckpointKeyError",
     "CheckpointKeys", "generate_key", "resolve_keys"}
)  # fmt: skip
_STORE = frozenset({"SealedStore", "blob_address", "open_sealed", "seal", "unseal"})


def _open_sealed(url: str) -> Any:
    """Open a ``sealed:URL`` store (see :func:`open_sealed`)."""
    from ._store import open_sealed

    return open_sealed(url)


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``sealed``: ``sealed:URL`` seals the store ``URL`` names."""
    register("sealed", _open_sealed)


def __getattr__(name: str) -> Any:
    if name in _KEYS:
        from . import _keys

        return getattr(_keys, name)
    if name in _STORE:
        from . import _store

        return getattr(_store, name)
    raise AttributeError(f"module 'plait_sealing' has no attribute {name!r}")
