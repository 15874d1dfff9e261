"""Sealing one checkpoint, and a store that seals what it saves and verifies what it loads.

A sealed checkpoint keeps its listing fields (run id, checkpoint id, superstep, parent,
base, status, signature, created at, format version) in the clear, because stores index
and prune by them, and moves ``state`` and ``metadata`` into a *payload*::

    state = {"kind": "sealed", "alg": "HS256" | "A256GCM+HS256", "key": KEY_ID,
             "nonce": BASE64 (encrypted only), "payload": TEXT | BASE64, "mac": HEX,
             "refs": [{"__plait__": "blob", "h": SHA256}, ...] (only with blobs)}
    metadata = {}

``mac`` is HMAC-SHA256 over the listing fields, the algorithm, the key id, the nonce, the
references and the payload's exact bytes, so changing any of them (or dropping the MAC,
or the seal) is refused with :class:`~plait_durable.CheckpointAuthError` naming the run and
checkpoint. Encrypted payloads are AES-256-GCM ciphertexts with the same header as
associated data.

Blobs (:class:`plait_durable.BlobStore`): when the wrapped store keeps blobs, so does the
sealed store. The payload holds the references, so the MAC covers them, and each blob is
checked against its SHA-256 when it is read; ``refs`` repeats the payload's references
in the clear so the wrapped store's prune can tell which blobs are still used. Signed
only, a blob is stored as it is, under its SHA-256. With encryption each blob is
encrypted too (AES-256-GCM, the run and the SHA-256 as associated data, so a blob moved
to another address or run does not decrypt), and it is stored under a keyed address
(:func:`blob_address`: an HMAC-SHA256 of its SHA-256 under a key derived from the
signing key), which ``refs`` lists instead of the hash: someone who reads the store but
has no key cannot confirm a guess of a value by hashing it (a 4-digit PIN's SHA-256 is
found in a moment). The address is the same for the same value under the same key, so a
value is still stored once, and prune works on addresses as it did on hashes. Blobs
encrypted before keyed addresses (stored under their SHA-256) are still read. What an
encrypted store still shows: sizes, counts and times, and which checkpoints share a
value (the same address), never what the value is.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

import attrs
from plait import CheckpointError
from plait_durable import (
    Checkpoint,
    CheckpointAuthError,
    CheckpointInfo,
    CheckpointStore,
    Lease,
    LeaseHolder,
    RunInfo,
    blob_refs,
    dump_json,
    has_blobs,
    load_json,
    open_store,
)

from ._keys import (
    CONTEXT,
    CRYPTO_HINT,
    KEY_VARIABLE,
    CheckpointKey,
    CheckpointKeyError,
    CheckpointKeys,
    resolve_keys,
)

__all__ = ["SCHEME", "SealedStore", "blob_address", "open_sealed", "seal", "unseal"]

#: The URL scheme of a sealed store: ``sealed:`` before any other store's URL.
SCHEME = "sealed"

_SIGNED = "HS256"
_ENCRYPTED = "A256GCM+HS256"
_ENVELOPE = frozenset({"kind", "alg", "key", "nonce", "payload", "mac", "refs"})
#: How an encrypted blob starts: then the key id, a newline, the nonce, the ciphertext.
_BLOB_MAGIC = b"PLAITSB1\n"


#: One encoder for every header (``json.dumps`` with options builds one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dumps(data: Any) -> bytes:
    """Compact UTF-8 JSON from the standard library: the same header bytes on every
    machine, whatever is installed (the MAC covers them)."""
    return _ENCODER.encode(data).encode("utf-8")


def _header(
    checkpoint: Checkpoint, alg: str, key_id: str, nonce: str, refs: Sequence[str] = ()
) -> bytes:
    fields = [alg, key_id, nonce, checkpoint.checkpoint_id, checkpoint.run_id,
              checkpoint.superstep, checkpoint.parent_id, checkpoint.signature,
              checkpoint.status, checkpoint.created_at, checkpoint.format_version,
              checkpoint.base_id]  # fmt: skip
    if refs:  # only then: checkpoints sealed before blobs keep their header
        fields.append(list(refs))
    return CONTEXT + b"\n" + _dumps(fields) + b"\n"


def _aesgcm(key: CheckpointKey) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise CheckpointError(
            f"encrypted checkpoints need the cryptography package; {CRYPTO_HINT}"
        ) from None
    return AESGCM(key.aes_key)


def seal(checkpoint: Checkpoint, keys: CheckpointKeys) -> Checkpoint:
    """``checkpoint`` with its state and metadata sealed by ``keys.signing``."""
    key = keys.signing
    payload = dump_json({"state": checkpoint.state, "metadata": checkpoint.metadata})
    # the blobs its metadata names too (a pinned document): a prune keeps them
    refs = sorted(blob_refs(checkpoint.state) | blob_refs(checkpoint.metadata))
    if keys.encrypt:  # listed in the clear: by keyed address, never by the value's hash
        refs = sorted(blob_address(key, digest) for digest in refs)
    envelope: dict[str, Any] = {"kind": "sealed", "key": key.key_id}
    if keys.encrypt:
        nonce = os.urandom(12)
        envelope["alg"] = alg = _ENCRYPTED
        envelope["nonce"] = nonce_text = base64.b64encode(nonce).decode("ascii")
        header = _header(checkpoint, alg, key.key_id, nonce_text, refs)
        payload = base64.b64encode(_aesgcm(key).encrypt(nonce, payload, header))
    else:
        envelope["alg"] = alg = _SIGNED
        header = _header(checkpoint, alg, key.key_id, "", refs)
    if refs:
        envelope["refs"] = [{"__plait__": "blob", "h": digest} for digest in refs]
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
            f"{where} carries no MAC; with a checkpoint key set, unsigned checkpoints are "
            "refused (it was written without a key, or by someone who has none)"
        )
    alg, key_id, nonce, payload, mac = _seal_fields(envelope, where)
    refs = _refs_field(envelope, where)
    key = keys.get(key_id)
    if key is None:
        known = ", ".join(k.key_id for k in keys.keys)
        raise CheckpointAuthError(
            f"{where} is signed with checkpoint key {key_id!r:.70}, which is not among the "
            f"configured keys ({known})"
        )
    header = _header(checkpoint, alg, key_id, nonce, refs)
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
        inner = load_json(body)
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
        or set(envelope) - _ENVELOPE
        or not all(isinstance(value, str) for value in fields)
        or not (key_id and mac)
        or (alg == _ENCRYPTED) != bool(nonce)
    ):
        raise CheckpointAuthError(f"{where} has a mis-shaped seal (its MAC cannot be checked)")
    return alg, key_id, nonce, payload, mac


def _refs_field(envelope: dict[str, Any], where: str) -> list[str]:
    """The hashes a sealed state lists in the clear (checked by the MAC)."""
    raw = envelope.get("refs", [])
    if not isinstance(raw, list) or not all(
        isinstance(ref, dict) and isinstance(ref.get("h"), str) for ref in raw
    ):
        raise CheckpointAuthError(f"{where} has a mis-shaped seal (its MAC cannot be checked)")
    return [ref["h"] for ref in raw]


def _blob_aad(run_id: str, digest: str) -> bytes:
    return CONTEXT + b"\nblob\n" + _dumps([run_id, digest])


def blob_address(key: CheckpointKey, digest: str) -> str:
    """Where an encrypted store keeps the blob whose SHA-256 is ``digest``: the
    HMAC-SHA256 of ``digest`` under ``key``'s blob key, in hex (the same shape as a hash,
    so every store keeps it as one). Without the key it says nothing about the value.

    .. versionadded:: 0.1
    """
    return hmac.new(key.blob_key, digest.encode("ascii"), hashlib.sha256).hexdigest()


def seal_blobs(run_id: str, blobs: Mapping[str, bytes], keys: CheckpointKeys) -> dict[str, bytes]:
    """``blobs`` (SHA-256 -> bytes) as the sealed store writes them: as they are when only
    signing (each is checked against its hash when read), else each encrypted with the
    signing key and keyed by its :func:`blob_address`."""
    if not keys.encrypt:
        return dict(blobs)
    key = keys.signing
    aesgcm = _aesgcm(key)
    sealed = {}
    for digest, data in blobs.items():
        nonce = os.urandom(12)
        cipher = aesgcm.encrypt(nonce, bytes(data), _blob_aad(run_id, digest))
        sealed[blob_address(key, digest)] = (
            _BLOB_MAGIC + key.key_id.encode("utf-8") + b"\n" + nonce + cipher
        )
    return sealed


def _addresses(hashes: Collection[str], keys: CheckpointKeys) -> dict[str, str]:
    """Address -> SHA-256 for every place a blob of ``hashes`` may be stored: under each
    key's :func:`blob_address` (encrypted), and under the hash itself (signed only, or
    encrypted before keyed addresses)."""
    places = {digest: digest for digest in hashes}
    for key in keys.keys:
        for digest in hashes:
            places[blob_address(key, digest)] = digest
    return places


def unseal_blob(run_id: str, digest: str, data: bytes, keys: CheckpointKeys) -> bytes:
    """A stored blob as it was before :func:`seal_blobs` (the caller checks its hash).

    :raises CheckpointAuthError: it is encrypted with a key not in ``keys``, or does not
        decrypt.
    """
    if not data.startswith(_BLOB_MAGIC):
        return data
    key_id, sep, rest = data[len(_BLOB_MAGIC) :].partition(b"\n")
    key = keys.get(key_id.decode("utf-8", "replace"))
    if key is None or not sep or len(rest) < 12:
        raise CheckpointAuthError(
            f"blob {digest} of run {run_id!r} is encrypted with a checkpoint key that is not "
            "configured, or is mis-shaped"
        )
    from cryptography.exceptions import InvalidTag

    try:
        plain: bytes = _aesgcm(key).decrypt(rest[:12], rest[12:], _blob_aad(run_id, digest))
    except (InvalidTag, ValueError):
        raise CheckpointAuthError(
            f"blob {digest} of run {run_id!r} does not decrypt with checkpoint key "
            f"{key.key_id!r}: it was altered or moved"
        ) from None
    return plain


def _decrypt(key: CheckpointKey, nonce: str, body: bytes, header: bytes, where: str) -> bytes:
    aesgcm = _aesgcm(key)  # checks that cryptography is installed
    from cryptography.exceptions import InvalidTag

    try:
        plain: bytes = aesgcm.decrypt(base64.b64decode(nonce), base64.b64decode(body), header)
    except (InvalidTag, binascii.Error, ValueError) as exc:
        raise CheckpointAuthError(
            f"{where} does not decrypt with checkpoint key {key.key_id!r} ({type(exc).__name__})"
        ) from None
    return plain


class SealedStore:
    """A checkpoint store that seals what it saves and verifies what it loads, around any
    other store (which never sees the key): the way Temporal's payload codecs sit between
    a worker and its server.

    :param store: the store to wrap, or its URL (opened here, and closed by :meth:`aclose`).
    :param keys: a key (``bytes``, ``"id:base64key"``, :class:`CheckpointKey`), a list of
        keys (the first signs, all verify) or a :class:`CheckpointKeys`; default
        ``PLAIT_CHECKPOINT_KEY``.
    :param encrypt: also encrypt (AES-256-GCM; needs ``plait-sealing[crypto]``); default
        ``PLAIT_CHECKPOINT_ENCRYPT``, or the signing key's own ``encrypt`` mark.
    :raises CheckpointKeyError: no key anywhere, or a key is malformed; ``store`` already
        seals.

    Leases, listings, deletes and prunes go to the wrapped store as they are (they read
    only listing fields, which the MAC covers and :meth:`load` verifies).
    """

    #: every checkpoint it loads is verified against its key (what plait-versions' policy
    #: ``pin`` asks before it runs a document a checkpoint stored)
    verifies_checkpoints = True

    def __init__(
        self, store: str | CheckpointStore, keys: Any = None, *, encrypt: bool | None = None
    ) -> None:
        resolved = resolve_keys(keys, encrypt)
        if resolved is None:
            raise CheckpointKeyError(
                f"SealedStore needs a key: pass keys= or set {KEY_VARIABLE} "
                "(plait_sealing.generate_key() makes one)"
            )
        inner = open_store(store) if isinstance(store, str) else store
        if isinstance(inner, SealedStore):
            raise CheckpointKeyError(f"{inner!r} already seals; wrap the store only once")
        self.store: CheckpointStore = inner
        self.keys = resolved

    @property
    def url(self) -> str:
        """``sealed:`` and the wrapped store's URL (when it has one)."""
        return f"{SCHEME}:{getattr(self.store, 'url', type(self.store).__name__)}"

    def __repr__(self) -> str:
        return f"SealedStore({self.store!r}, {self.keys!r})"

    async def __aenter__(self) -> SealedStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def supports_blobs(self) -> bool:
        """Whether the wrapped store keeps blobs (then this one does too)."""
        return has_blobs(self.store)

    async def save(
        self,
        checkpoint: Checkpoint,
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Seal ``checkpoint`` (and its new ``blobs``) and save it."""
        sealed = seal(checkpoint, self.keys)
        if blobs:
            stored = seal_blobs(checkpoint.run_id, blobs, self.keys)
            await self.store.save(sealed, lease=lease, blobs=stored)  # type: ignore[call-arg]
        else:
            await self.store.save(sealed, lease=lease)

    async def save_many(
        self,
        checkpoints: Iterable[Checkpoint],
        *,
        lease: Lease | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Seal and save ``checkpoints`` (of one run, with their new ``blobs``) in order,
        in one batch where the store can."""
        sealed = [seal(checkpoint, self.keys) for checkpoint in checkpoints]
        options: dict[str, Any] = {"lease": lease}
        if blobs and sealed:
            options["blobs"] = seal_blobs(sealed[0].run_id, blobs, self.keys)
        save_many = getattr(self.store, "save_many", None)
        if save_many is not None:
            await save_many(sealed, **options)
        else:
            for checkpoint in sealed:
                await self.store.save(checkpoint, **options)
                options.pop("blobs", None)  # written with the first, before the rest

    async def get_blobs(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The wrapped store's blobs (by SHA-256), decrypted if they were encrypted."""
        places = _addresses(hashes, self.keys)
        got = await self.store.get_blobs(run_id, list(places))  # type: ignore[attr-defined]
        return self._unsealed(run_id, places, got)

    async def get_blob_closure(self, run_id: str, hashes: Collection[str]) -> Mapping[str, bytes]:
        """The wrapped store's blobs and what they reach, where it can tell (signed
        blobs), decrypted if they were encrypted; else just the blobs asked for."""
        closure = getattr(self.store, "get_blob_closure", None)
        if closure is None:
            return await self.get_blobs(run_id, hashes)
        places = _addresses(hashes, self.keys)
        return self._unsealed(run_id, places, await closure(run_id, list(places)))

    def _unsealed(
        self, run_id: str, places: Mapping[str, str], got: Mapping[str, bytes]
    ) -> dict[str, bytes]:
        """What the wrapped store returned for ``places`` (address -> SHA-256), by
        SHA-256 and decrypted; a blob a signed store's closure added is under its hash."""
        out: dict[str, bytes] = {}
        for address, data in got.items():
            digest = places.get(address, address)
            if digest not in out or address != digest:  # a keyed address wins
                out[digest] = unseal_blob(run_id, digest, bytes(data), self.keys)
        return out

    async def blob_hashes(self, run_id: str) -> Collection[str]:
        """The wrapped store's blob addresses (keyed addresses of encrypted blobs, not
        their hashes: :func:`blob_address`)."""
        hashes: Collection[str] = await self.store.blob_hashes(run_id)  # type: ignore[attr-defined]
        return hashes

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

    async def runs(self, *, limit: int | None = None) -> Sequence[RunInfo]:
        """The store's run listing (sealed: without workflow, requests or error)."""
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
        """Close the wrapped store."""
        await self.store.aclose()


def open_sealed(url: str) -> SealedStore:
    """The store for ``sealed:URL``: the store ``URL`` names, sealed with the keys of
    ``PLAIT_CHECKPOINT_KEY`` (and ``PLAIT_CHECKPOINT_ENCRYPT``).

    :raises ValueError: nothing follows ``sealed:``.
    :raises CheckpointKeyError: ``PLAIT_CHECKPOINT_KEY`` is not set or malformed.
    """
    scheme, _, inner = url.partition(":")
    if scheme.lower() != SCHEME or not inner:
        raise ValueError(
            f"a sealed store's URL is sealed:URL, the URL of the store to seal "
            f"('sealed:sqlite:///runs.db'), got {url!r}"
        )
    if not os.environ.get(KEY_VARIABLE):
        raise CheckpointKeyError(
            f"the store {url!r} seals checkpoints with the keys of {KEY_VARIABLE}, which is "
            "not set (plait_sealing.generate_key() makes a key)"
        )
    return SealedStore(inner)
