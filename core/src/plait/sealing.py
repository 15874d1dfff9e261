"""Signed and encrypted checkpoints: an HMAC-SHA256 over every field, AES-GCM optionally.

Opt-in, with a key (the ``checkpoint_key=`` run/resume option, or the
``PLAIT_CHECKPOINT_KEY`` environment variable). Sealing is a codec between the runner and
any store, the way Temporal's payload codecs sit between a worker and its server: the
store saves and lists the checkpoint as usual, and never sees the key.

A sealed checkpoint keeps its listing fields (run id, checkpoint id, superstep, parent,
base, status, signature, created at, format version) in the clear, because stores index
and prune by them, and moves ``state`` and ``metadata`` into a *payload*::

    state = {"kind": "sealed", "alg": "HS256" | "A256GCM+HS256", "key": KEY_ID,
             "nonce": BASE64 (encrypted only), "payload": TEXT | BASE64, "mac": HEX}
    metadata = {}

``mac`` is HMAC-SHA256 over the listing fields, the algorithm, the key id, the nonce and
the payload's exact bytes, so changing any of them (or dropping the MAC, or the seal) is
refused with :class:`~plait.errors.CheckpointAuthError` naming the run and checkpoint.
Encrypted payloads are AES-256-GCM ciphertexts with the same header as associated data.
Each key is stretched into separate MAC and encryption keys (HKDF-SHA256).

Rotation: several keys make a ring. The first signs (and encrypts) new checkpoints; every
key verifies, chosen by the key id the checkpoint names.

``cryptography`` is needed for encryption only (``pip install 'plait-core[crypto]'``) and
is imported when a checkpoint is first encrypted or decrypted.

.. versionadded:: 0.1
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import importlib.util
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from .checkpoint import Checkpoint, CheckpointInfo, CheckpointStore, _dumps, _loads, open_store
from .errors import CheckpointAuthError, CheckpointError, RunOptionError
from .leases import Lease, LeaseHolder

__all__ = [
    "KEY_VARIABLE",
    "ENCRYPT_VARIABLE",
    "CheckpointKey",
    "CheckpointKeys",
    "SealedStore",
    "generate_key",
    "resolve_keys",
    "seal_store",
]

#: The environment variable read when ``checkpoint_key`` is not given:
#: ``id:base64key[,id:base64key…]`` (the first signs).
KEY_VARIABLE = "PLAIT_CHECKPOINT_KEY"
#: Set to ``1`` to encrypt checkpoints when ``checkpoint_encrypt`` is not given.
ENCRYPT_VARIABLE = "PLAIT_CHECKPOINT_ENCRYPT"

_SIGNED = "HS256"
_ENCRYPTED = "A256GCM+HS256"
_CONTEXT = b"plait checkpoint v1"
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_MIN_SECRET = 16
_CRYPTO_HINT = "install it with: pip install 'plait-core[crypto]'"


def _hkdf(secret: bytes, info: bytes) -> bytes:
    """HKDF-SHA256 (RFC 5869) for one 32-byte output block."""
    prk = hmac.new(_CONTEXT, secret, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


@attrs.frozen(repr=False)
class CheckpointKey:
    """One checkpoint key: an id (named in every checkpoint it signs) and a secret.

    :param key_id: letters, digits, ``.``, ``_``, ``-``; default: derived from the secret.
    :param secret: at least 16 random bytes (32 recommended: :func:`generate_key`).
    :param encrypt: checkpoints this key signs are also encrypted (AES-256-GCM).

    .. versionadded:: 0.1
    """

    secret: bytes = attrs.field(converter=bytes)
    key_id: str = ""
    encrypt: bool = False
    mac_key: bytes = attrs.field(init=False)
    aes_key: bytes = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        if len(self.secret) < _MIN_SECRET:
            raise RunOptionError(
                f"checkpoint key {self.key_id or '(unnamed)'!r} is {len(self.secret)} bytes; "
                f"a key needs at least {_MIN_SECRET} random bytes (generate_key() makes 32)"
            )
        if not self.key_id:
            object.__setattr__(self, "key_id", _hkdf(self.secret, b"key id").hex()[:12])
        elif not _KEY_ID.fullmatch(self.key_id):
            raise RunOptionError(
                f"checkpoint key id {self.key_id!r} may hold only letters, digits, '.', '_' "
                "and '-' (1 to 64 of them)"
            )
        object.__setattr__(self, "mac_key", _hkdf(self.secret, b"mac"))
        object.__setattr__(self, "aes_key", _hkdf(self.secret, b"aes-256-gcm"))

    def __repr__(self) -> str:
        return f"CheckpointKey(key_id={self.key_id!r}, encrypt={self.encrypt!r})"

    @classmethod
    def parse(cls, text: str) -> CheckpointKey:
        """``id:base64key`` or ``base64key`` (standard or URL-safe base64)."""
        key_id, _, encoded = text.strip().rpartition(":")
        try:
            secret = base64.b64decode(encoded + "=" * (-len(encoded) % 4), b"-_", validate=True)
        except (binascii.Error, ValueError) as exc:
            raise RunOptionError(
                f"checkpoint key {key_id or '(unnamed)'!r} is not base64: {exc}"
            ) from None
        return cls(secret, key_id)


def generate_key(key_id: str = "") -> str:
    """A new random 32-byte key in ``PLAIT_CHECKPOINT_KEY`` form (``id:base64key``)."""
    encoded = base64.b64encode(os.urandom(32)).decode("ascii")
    return f"{key_id}:{encoded}" if key_id else encoded


@attrs.frozen
class CheckpointKeys:
    """A key ring: ``keys[0]`` signs (and, with ``encrypt``, encrypts); every key verifies.

    .. versionadded:: 0.1
    """

    keys: tuple[CheckpointKey, ...]
    encrypt: bool = False

    def __attrs_post_init__(self) -> None:
        ids = [key.key_id for key in self.keys]
        if not ids:
            raise RunOptionError("checkpoint_key holds no key")
        if len(set(ids)) != len(ids):
            raise RunOptionError(f"checkpoint key ids repeat: {', '.join(ids)}")

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
    raise RunOptionError(
        f"{source} must be a key (bytes, 'id:base64key', CheckpointKey) or a list of keys, "
        f"got {type(value).__name__}"
    )


def resolve_keys(key: Any = None, encrypt: bool | None = None) -> CheckpointKeys | None:
    """The key ring for the ``checkpoint_key``/``checkpoint_encrypt`` options, falling back
    to ``PLAIT_CHECKPOINT_KEY`` / ``PLAIT_CHECKPOINT_ENCRYPT``; ``None`` without a key.

    :raises RunOptionError: a key is malformed or too short, ``encrypt`` is asked for
        without a key, or ``cryptography`` is not installed for it.
    """
    if isinstance(key, CheckpointKeys) and encrypt is None:
        return key
    source = "run option checkpoint_key"
    if key is None:
        key, source = os.environ.get(KEY_VARIABLE) or None, KEY_VARIABLE
    if encrypt is None:
        encrypt = os.environ.get(ENCRYPT_VARIABLE, "").strip().lower() in ("1", "true", "yes")
    if key is None:
        if encrypt:
            raise RunOptionError(
                "checkpoint_encrypt needs a key: pass checkpoint_key= or set "
                f"{KEY_VARIABLE} (plait.sealing.generate_key() makes one)"
            )
        return None
    try:
        items = list(key.keys) if isinstance(key, CheckpointKeys) else _key_items(key, source)
        keys = CheckpointKeys(tuple(items), encrypt=bool(encrypt) or items[:1][0].encrypt)
    except RunOptionError as exc:
        raise RunOptionError(f"{source}: {exc}") from None
    except IndexError:
        raise RunOptionError(f"{source} holds no key") from None
    if keys.encrypt and importlib.util.find_spec("cryptography") is None:
        raise RunOptionError(
            f"encrypting checkpoints needs the cryptography package; {_CRYPTO_HINT}"
        )
    return keys


# -- sealing one checkpoint ---------------------------------------------------------------


def _header(checkpoint: Checkpoint, alg: str, key_id: str, nonce: str) -> bytes:
    fields = [alg, key_id, nonce, checkpoint.checkpoint_id, checkpoint.run_id,
              checkpoint.superstep, checkpoint.parent_id, checkpoint.signature,
              checkpoint.status, checkpoint.created_at, checkpoint.format_version,
              checkpoint.base_id]  # fmt: skip
    return _CONTEXT + b"\n" + _dumps(fields) + b"\n"


def _aesgcm(key: CheckpointKey) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise CheckpointError(
            f"encrypted checkpoints need the cryptography package; {_CRYPTO_HINT}"
        ) from None
    return AESGCM(key.aes_key)


def seal(checkpoint: Checkpoint, keys: CheckpointKeys) -> Checkpoint:
    """``checkpoint`` with its state and metadata sealed by ``keys.signing``."""
    key = keys.signing
    payload = _dumps({"state": checkpoint.state, "metadata": checkpoint.metadata})
    envelope: dict[str, Any] = {"kind": "sealed", "key": key.key_id}
    if keys.encrypt:
        nonce = os.urandom(12)
        envelope["alg"] = alg = _ENCRYPTED
        envelope["nonce"] = nonce_text = base64.b64encode(nonce).decode("ascii")
        header = _header(checkpoint, alg, key.key_id, nonce_text)
        payload = base64.b64encode(_aesgcm(key).encrypt(nonce, payload, header))
    else:
        envelope["alg"] = alg = _SIGNED
        header = _header(checkpoint, alg, key.key_id, "")
    envelope["payload"] = payload.decode("utf-8")
    envelope["mac"] = hmac.new(key.mac_key, header + payload, hashlib.sha256).hexdigest()
    return attrs.evolve(checkpoint, state=envelope, metadata={})


def unseal(checkpoint: Checkpoint, keys: CheckpointKeys) -> Checkpoint:
    """Verify ``checkpoint``'s MAC with ``keys`` (decrypting it if it is encrypted) and
    return it with its state and metadata restored.

    :raises CheckpointAuthError: it carries no MAC, names a key not in ``keys``, its MAC
        does not verify (a field, the payload or the MAC was changed), or it does not
        decrypt; the message names the run and the checkpoint.
    """
    where = f"run {checkpoint.run_id!r}, checkpoint {checkpoint.checkpoint_id!r}"
    envelope = checkpoint.state
    if envelope.get("kind") != "sealed":
        raise CheckpointAuthError(
            f"{where} carries no MAC; with checkpoint_key set, unsigned checkpoints are "
            "refused (it was written without a key, or by someone who has none)"
        )
    alg, key_id, nonce, payload, mac = _seal_fields(envelope, where)
    key = keys.get(key_id)
    if key is None:
        known = ", ".join(k.key_id for k in keys.keys)
        raise CheckpointAuthError(
            f"{where} is signed with checkpoint key {key_id!r:.70}, which is not among the "
            f"configured keys ({known})"
        )
    header = _header(checkpoint, alg, key_id, nonce)
    body = payload.encode("utf-8", "surrogatepass")
    expected = hmac.new(key.mac_key, header + body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode("ascii"), mac.encode("utf-8", "surrogatepass")):
        raise CheckpointAuthError(
            f"{where} fails its MAC check with checkpoint key {key_id!r}: it was altered "
            "(its state, a listing field or the MAC itself) or forged"
        )
    if alg == _ENCRYPTED:
        body = _decrypt(key, nonce, body, header, where)
    try:
        inner = _loads(body)
    except (ValueError, TypeError, RecursionError) as exc:
        raise CheckpointAuthError(
            f"{where} has a signed payload that does not decode: {exc}"
        ) from None
    if not (
        isinstance(inner, dict)
        and isinstance(inner.get("state"), dict)
        and isinstance(inner.get("metadata"), dict)
    ):
        raise CheckpointAuthError(f"{where} has a signed payload of the wrong shape")
    return attrs.evolve(checkpoint, state=inner["state"], metadata=inner["metadata"])


def _seal_fields(envelope: dict[str, Any], where: str) -> tuple[str, str, str, str, str]:
    """``(alg, key id, nonce, payload, mac)`` of a sealed state, its shape checked."""
    fields = tuple(envelope.get(name, "") for name in ("alg", "key", "nonce", "payload", "mac"))
    alg, key_id, nonce, payload, mac = fields
    if (
        alg not in (_SIGNED, _ENCRYPTED)
        or set(envelope) - {"kind", "alg", "key", "nonce", "payload", "mac"}
        or not all(isinstance(value, str) for value in fields)
        or not (key_id and mac)
        or (alg == _ENCRYPTED) != bool(nonce)
    ):
        raise CheckpointAuthError(f"{where} has a mis-shaped seal (its MAC cannot be checked)")
    return alg, key_id, nonce, payload, mac


def _decrypt(key: CheckpointKey, nonce: str, body: bytes, header: bytes, where: str) -> bytes:
    from cryptography.exceptions import InvalidTag  # _aesgcm checks it is installed

    aesgcm = _aesgcm(key)
    try:
        plain: bytes = aesgcm.decrypt(base64.b64decode(nonce), base64.b64decode(body), header)
    except (InvalidTag, binascii.Error, ValueError) as exc:
        raise CheckpointAuthError(
            f"{where} does not decrypt with checkpoint key {key.key_id!r} ({type(exc).__name__})"
        ) from None
    return plain


# -- a store that seals ------------------------------------------------------------------


class SealedStore:
    """A :class:`~plait.checkpoint.CheckpointStore` that seals what it saves and verifies
    what it loads, around any other store (which never sees the key).

    .. versionadded:: 0.1
    """

    def __init__(self, store: CheckpointStore, keys: CheckpointKeys) -> None:
        self.store = store
        self.keys = keys

    def __repr__(self) -> str:
        return f"SealedStore({self.store!r}, {self.keys!r})"

    async def save(self, checkpoint: Checkpoint, *, lease: Lease | None = None) -> None:
        """Seal ``checkpoint`` and save it."""
        await self.store.save(seal(checkpoint, self.keys), lease=lease)

    async def save_many(
        self, checkpoints: Iterable[Checkpoint], *, lease: Lease | None = None
    ) -> None:
        """Seal and save ``checkpoints`` in order (in one batch where the store can)."""
        sealed = [seal(checkpoint, self.keys) for checkpoint in checkpoints]
        save_many = getattr(self.store, "save_many", None)
        if save_many is not None:
            await save_many(sealed, lease=lease)
        else:
            for checkpoint in sealed:
                await self.store.save(checkpoint, lease=lease)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Load and verify one checkpoint."""
        return unseal(await self.store.load(checkpoint_id), self.keys)

    async def latest(self, run_id: str) -> Checkpoint | None:
        """Load and verify the newest checkpoint of ``run_id``."""
        checkpoint = await self.store.latest(run_id)
        return None if checkpoint is None else unseal(checkpoint, self.keys)

    async def list(self, run_id: str) -> Sequence[CheckpointInfo]:
        """The store's listing (listing fields are verified when a checkpoint is loaded)."""
        return await self.store.list(run_id)

    async def runs(self, *, limit: int | None = None) -> Sequence[Any]:
        """The store's :class:`~plait.checkpoint.RunInfo` listing (sealed: no workflow)."""
        return await self.store.runs(limit=limit)

    async def acquire_lease(
        self, run_id: str, *, ttl: float, holder: LeaseHolder | None = None
    ) -> Lease:
        """The store's lease."""
        return await self.store.acquire_lease(run_id, ttl=ttl, holder=holder)

    async def renew_lease(self, lease: Lease, *, ttl: float) -> Lease:
        """The store's lease."""
        return await self.store.renew_lease(lease, ttl=ttl)

    async def release_lease(self, lease: Lease) -> None:
        """The store's lease."""
        await self.store.release_lease(lease)

    async def delete(self, checkpoint_id: str) -> None:
        """Delete in the store."""
        await self.store.delete(checkpoint_id)

    async def prune(self, run_id: str, *, keep_last: int) -> int:
        """Prune in the store."""
        return await self.store.prune(run_id, keep_last=keep_last)

    async def delete_run(self, run_id: str) -> int:
        """Delete a run in the store."""
        return await self.store.delete_run(run_id)

    async def aclose(self) -> None:
        """Close the store."""
        await self.store.aclose()


def open_sealed(store: str | CheckpointStore, options: Mapping[str, Any]) -> CheckpointStore:
    """The store for ``store`` (an object or a URL), sealing with the keys ``options``
    (``checkpoint_key``, ``checkpoint_encrypt``) or the environment give, if any."""
    keys = resolve_keys(options.get("checkpoint_key"), options.get("checkpoint_encrypt"))
    return seal_store(open_store(store) if isinstance(store, str) else store, keys)


def seal_store(store: CheckpointStore, keys: CheckpointKeys | None) -> CheckpointStore:
    """``store`` sealing with ``keys`` (as is without keys, or if it already seals)."""
    if keys is None or isinstance(store, SealedStore):
        return store
    return SealedStore(store, keys)
