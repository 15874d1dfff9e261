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
:class:`plait_durable.CheckpointAuthError` naming the run and the checkpoint. Several keys
make a ring for rotation: the first signs (and encrypts) new checkpoints; every key
verifies those that name it. Each key is stretched into separate MAC and encryption keys
(HKDF-SHA256). ``cryptography`` is needed for encryption only
(``pip install 'plait-sealing[crypto]'``) and imported when a checkpoint is first
encrypted or decrypted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import plait
from plait.spi import Register, lazy_exports

if TYPE_CHECKING:
    from ._keys import (
        ENCRYPT_VARIABLE as ENCRYPT_VARIABLE,
        KEY_VARIABLE as KEY_VARIABLE,
        CheckpointKey as CheckpointKey,
        CheckpointKeyError as CheckpointKeyError,
        CheckpointKeys as CheckpointKeys,
        generate_key as generate_key,
        resolve_keys as resolve_keys,
    )
    from ._store import (
        SealedStore as SealedStore,
        blob_address as blob_address,
        open_sealed as open_sealed,
        seal as seal,
        unseal as unseal,
    )


# Every process that loads Plait's plugins imports this module (entry point ``sealing``):
# hashing and key handling are imported when a sealed store is first used.


def _open_sealed(url: str) -> Any:
    """Open a ``sealed:URL`` store (see :func:`open_sealed`)."""
    from ._store import open_sealed

    return open_sealed(url)


@plait.hookimpl
def plait_register_checkpoint_stores(register: Register) -> None:
    """Register ``sealed``: ``sealed:URL`` seals the store ``URL`` names."""
    register("sealed", _open_sealed)


if not TYPE_CHECKING:  # type checkers read the block above: a misspelt name stays an error
    __getattr__, __dir__ = lazy_exports(__name__)
