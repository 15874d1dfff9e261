"""Run bundles: one portable file (``run.plait``, a zip archive of JSON) holding a
recorded run — its checkpoints with their values inline, its record, its event journal
(where its store keeps one), how its workflow was named — optionally MAC-signed
(HMAC-SHA256) and redacted, to load into any store (:func:`export_bundle`,
:func:`import_bundle`; ``plait export`` and ``plait import``).

A bundle is untrusted input: reading it parses JSON, never imports or runs anything, and
bounds what it inflates to. A signed bundle is refused unless the key given verifies
it; an unsigned one is refused when a key is given.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ._errors import ReplayError
from ._record import SECTION
from ._recorder import request_key

__all__ = ["BUNDLE_FORMAT", "BundleError", "BundleInfo", "export_bundle", "import_bundle"]

#: what a bundle's manifest says it is
BUNDLE_FORMAT = "plait-run-bundle"
#: the version of the bundle layout this code writes and reads
BUNDLE_VERSION = 1
#: the members of a bundle, in the order the MAC covers them (the journal where there is one)
_MANIFEST, _CHECKPOINTS, _SIGNATURE = "manifest.json", "checkpoints.json", "signature.json"
_JOURNAL = "journal.json"
#: what a member may inflate to, at most (a zip bomb is refused, not read)
MAX_MEMBER = 512 << 20
#: the fields of a stored checkpoint a bundle carries, with the types they may have
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "checkpoint_id": str,
    "run_id": str,
    "superstep": int,
    "parent_id": (str, type(None)),
    "signature": str,
    "status": str,
    "created_at": (int, float),
    "state": dict,
    "format_version": int,
    "metadata": dict,
}


class BundleError(ReplayError):
    """A bundle cannot be written or read: not a bundle, damaged, signed with another key
    (or altered), unsigned where a key is given, or a redaction that does not apply."""


@attrs.frozen
class BundleInfo:
    """What a bundle holds (its manifest).

    :param run_id: the run.
    :param checkpoints: how many checkpoints.
    :param signed: whether it carries a MAC.
    :param redacted: per ``--redact`` path: the path, how many values it matched and
        the placeholders that replace them.
    :param target: how ``plait run`` named the workflow (shown, never loaded).
    :param journal: how many events of the run's journal it carries (``None``: the run
        wrote none, or its store keeps none).
    """

    run_id: str
    checkpoints: int
    signed: bool
    redacted: tuple[Mapping[str, Any], ...] = ()
    target: str | None = None
    journal: int | None = None


def _dumps(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _mac(key: bytes, manifest: bytes, checkpoints: bytes, journal: bytes | None = None) -> str:
    digest = hmac.new(key, digestmod=hashlib.sha256)
    for part in (manifest, checkpoints, *([journal] if journal is not None else [])):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


async def export_bundle(
    store: Any,
    run_id: str,
    path: str | Path,
    *,
    key: bytes | None = None,
    redact: Sequence[str] = (),
) -> BundleInfo:
    """Write run ``run_id`` of ``store`` (URL or store object) to the bundle ``path``.

    :param key: sign the bundle with HMAC-SHA256 under this key.
    :param redact: JSONPath expressions (``$..email``, ``$.shared.api_key``) evaluated on
        each checkpoint's state: every string or number they match is replaced, wherever
        it appears in the run (inside longer strings too), by a typed placeholder
        (``"[redacted:str:1]"``; ``0`` for a number), recorded requests are keyed again,
        and the manifest lists what was replaced — so the bundle replays with the
        placeholders.
    :raises BundleError: a path that does not parse, or matches a value that is not a
        string or a number.
    :raises ReplayError: the store holds no run ``run_id``.
    """
    from plait_durable import opened_store, resolve_state

    async with opened_store(store) as opened:
        infos = await opened.list(run_id)
        if not infos:
            raise ReplayError(f"the store holds no run {run_id!r} (plait runs lists its runs)")
        journal = await _read_journal(opened, run_id)
        checkpoints = []
        for info in infos:
            checkpoint = await opened.load(info.checkpoint_id)
            where = f"run {run_id!r}, checkpoint {info.checkpoint_id!r}"
            state = await resolve_state(
                dict(checkpoint.state), store=opened, run_id=run_id, where=where
            )
            data = {name: getattr(checkpoint, name) for name in _FIELDS}
            data["state"] = state
            checkpoints.append(data)
    redacted = _redact(checkpoints, redact, journal) if redact else []
    metadata = checkpoints[0]["metadata"]
    cli = metadata.get("cli") if isinstance(metadata.get("cli"), dict) else {}
    target = cli.get("target") if isinstance(cli.get("target"), str) else None
    manifest = {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "run_id": run_id,
        "checkpoints": len(checkpoints),
        "workflow": metadata.get("workflow"),
        "target": target,
        "redacted": redacted,
        "signed": key is not None,
        "created_at": time.time(),
        "journal": None if journal is None else len(journal),
    }
    manifest_bytes, checkpoint_bytes = _dumps(manifest), _dumps(checkpoints)
    journal_bytes = None if journal is None else _dumps(journal)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(_MANIFEST, manifest_bytes)
        bundle.writestr(_CHECKPOINTS, checkpoint_bytes)
        if journal_bytes is not None:
            bundle.writestr(_JOURNAL, journal_bytes)
        if key is not None:
            signature = {
                "algorithm": "HMAC-SHA256",
                "mac": _mac(key, manifest_bytes, checkpoint_bytes, journal_bytes),
            }
            bundle.writestr(_SIGNATURE, _dumps(signature))
    return BundleInfo(
        run_id=run_id,
        checkpoints=len(checkpoints),
        signed=key is not None,
        redacted=tuple(redacted),
        target=target,
        journal=None if journal is None else len(journal),
    )


async def _read_journal(store: Any, run_id: str) -> list[dict[str, Any]] | None:
    """Every event of the journal of ``run_id`` as JSON objects (without the store's
    sequence numbers), oldest first; ``None`` when there are none (the store keeps no
    journal, or the run wrote none: ``journal=True``)."""
    from plait_durable import MAX_JOURNAL_PAGE, read_journal

    events: list[dict[str, Any]] = []
    after = 0
    while True:
        page = await read_journal(store, run_id, after=after, limit=MAX_JOURNAL_PAGE)
        if page is None:
            return None
        events.extend(json.loads(event.to_json()) for event in page)
        if len(page) < MAX_JOURNAL_PAGE:
            return events or None
        after = page[-1].seq


def _redact(
    checkpoints: list[dict[str, Any]],
    paths: Sequence[str],
    journal: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Replace what ``paths`` match in the states, everywhere in the run (see
    :func:`export_bundle`; the journal's error messages too); what the manifest says was
    replaced."""
    from jsonpath_ng.exceptions import JsonPathParserError
    from jsonpath_ng.ext.parser import parse

    strings: dict[str, str] = {}
    said = []
    for text in paths:
        try:
            expression = parse(text)
        except (JsonPathParserError, Exception) as exc:  # the parser raises several kinds
            raise BundleError(f"--redact {text!r} is not a JSONPath: {exc}") from exc
        placeholders: list[Any] = []
        for checkpoint in checkpoints:
            for match in expression.find(checkpoint["state"]):
                value = match.value
                if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                    raise BundleError(
                        f"--redact {text!r} matches {match.full_path} in checkpoint "
                        f"{checkpoint['checkpoint_id']!r}, a {type(value).__name__}: only "
                        "strings and numbers are replaced (match the values inside it)"
                    )
                if isinstance(value, str):
                    if value not in strings:
                        strings[value] = f"[redacted:str:{len(strings) + 1}]"
                    placeholder: Any = strings[value]
                else:
                    placeholder = type(value)(0)
                    match.full_path.update(checkpoint["state"], placeholder)
                if placeholder not in placeholders:
                    placeholders.append(placeholder)
        said.append({"path": text, "matched": len(placeholders), "placeholders": placeholders})
    if strings:
        for checkpoint in checkpoints:
            checkpoint["state"] = _replace(checkpoint["state"], strings)
            checkpoint["metadata"] = _replace(checkpoint["metadata"], strings)
            _rekey(checkpoint["state"])
        for at, event in enumerate(journal or []):
            journal[at] = _replace(event, strings)  # type: ignore[index]
    return said


def _replace(value: Any, strings: Mapping[str, str]) -> Any:
    """``value`` with every string of ``strings`` replaced by its placeholder, inside
    longer strings too (the longest first)."""
    if isinstance(value, str):
        for secret in sorted(strings, key=len, reverse=True):
            if secret and secret in value:
                value = value.replace(secret, strings[secret])
        return value
    if isinstance(value, list):
        return [_replace(item, strings) for item in value]
    if isinstance(value, dict):
        return {key: _replace(item, strings) for key, item in value.items()}
    return value


def _rekey(state: dict[str, Any]) -> None:
    """Key each recorded request of ``state`` again (its request was redacted)."""
    observed = state.get("observed")
    section = observed.get(SECTION) if isinstance(observed, dict) else None
    for call in (section or {}).get("calls") or []:
        if isinstance(call, dict) and call.get("key"):
            call["key"] = request_key(call.get("request"))


def _member(bundle: zipfile.ZipFile, name: str, where: str) -> bytes:
    try:
        info = bundle.getinfo(name)
    except KeyError:
        raise BundleError(f"{where} is not a Plait run bundle: it has no {name}") from None
    if info.file_size > MAX_MEMBER:
        raise BundleError(f"{where}: {name} inflates to {info.file_size} bytes, over {MAX_MEMBER}")
    with bundle.open(info) as member:
        data = member.read(MAX_MEMBER + 1)
    if len(data) > MAX_MEMBER:
        raise BundleError(f"{where}: {name} inflates past {MAX_MEMBER} bytes")
    return data


def read_bundle(
    path: str | Path, *, key: bytes | None = None
) -> tuple[BundleInfo, list[Any], list[Any] | None]:
    """The manifest, the checkpoints and the journal events (as JSON; ``None``: the
    bundle has no journal) of the bundle ``path``, its signature checked.

    :raises BundleError: not a bundle, damaged, a format this code does not read, signed
        and ``key`` does not verify it (another key, or altered), signed and no key
        given, or unsigned and a key given.
    """
    where = f"bundle {str(path)!r}"
    try:
        bundle = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise BundleError(f"{where} cannot be read: {exc}") from exc
    with bundle:
        manifest_bytes = _member(bundle, _MANIFEST, where)
        checkpoint_bytes = _member(bundle, _CHECKPOINTS, where)
        names = bundle.namelist()
        journal_bytes = _member(bundle, _JOURNAL, where) if _JOURNAL in names else None
        signed = _SIGNATURE in names
        signature = json.loads(_member(bundle, _SIGNATURE, where)) if signed else None
    if signed and key is None:
        raise BundleError(f"{where} is signed: give its key to import it (--key-env VAR)")
    if key is not None:
        if not signed:
            raise BundleError(f"{where} is not signed, and a key was given: refused")
        mac = signature.get("mac") if isinstance(signature, dict) else None
        if not isinstance(mac, str) or not hmac.compare_digest(
            mac, _mac(key, manifest_bytes, checkpoint_bytes, journal_bytes)
        ):
            raise BundleError(
                f"{where} does not verify under this key: it was signed with another key, "
                "or altered since"
            )
    try:
        manifest = json.loads(manifest_bytes)
        checkpoints = json.loads(checkpoint_bytes)
        journal = None if journal_bytes is None else json.loads(journal_bytes)
    except ValueError as exc:
        raise BundleError(f"{where} is damaged: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{where} is not a Plait run bundle (its manifest's format)")
    if manifest.get("version") != BUNDLE_VERSION:
        raise BundleError(
            f"{where} has bundle version {manifest.get('version')!r}; this Plait reads "
            f"version {BUNDLE_VERSION}"
        )
    if not isinstance(checkpoints, list) or not checkpoints:
        raise BundleError(f"{where} holds no checkpoints")
    for index, data in enumerate(checkpoints):
        _check(data, f"{where}, checkpoints[{index}]")
    said = manifest.get("journal")
    held = None if journal is None else len(journal) if isinstance(journal, list) else "bad"
    if held != said:
        raise BundleError(
            f"{where} is damaged: its manifest says {said!r} journal events, and its "
            f"{_JOURNAL} holds {held!r}"
        )
    listed = manifest.get("redacted")
    redacted: list[Any] = listed if isinstance(listed, list) else []
    info = BundleInfo(
        run_id=str(manifest.get("run_id")),
        checkpoints=len(checkpoints),
        signed=signed,
        redacted=tuple(r for r in redacted if isinstance(r, dict)),
        target=manifest.get("target") if isinstance(manifest.get("target"), str) else None,
        journal=None if journal is None else len(journal),
    )
    events = None if journal is None else [_event(e, f"{where}, journal") for e in journal]
    return info, checkpoints, events


def _event(data: Any, where: str) -> Any:
    """One journal event of a bundle, checked as a store checks what it keeps."""
    from plait_durable import CorruptCheckpointError, JournalEvent

    try:
        return JournalEvent.from_json(json.dumps(data), seq=0, where=where)
    except CorruptCheckpointError as exc:
        raise BundleError(str(exc)) from exc


def _check(data: Any, where: str) -> None:
    if not isinstance(data, dict):
        raise BundleError(f"{where} is a {type(data).__name__}, expected an object")
    for name, kind in _FIELDS.items():
        value = data.get(name)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            raise BundleError(f"{where}.{name} is {value!r:.60}, not what a checkpoint holds")


async def import_bundle(
    path: str | Path, store: Any, *, key: bytes | None = None, run_id: str | None = None
) -> BundleInfo:
    """Load the bundle ``path`` into ``store`` (URL or store object) as run ``run_id``
    (default: the bundle's), its values content-addressed in the store's blobs, its
    journal events appended to the store's journal (where the store keeps one).

    :raises BundleError: as :func:`read_bundle`, or the store holds a run with that id.
    """
    from plait_durable import Checkpoint, opened_store

    info, checkpoints, journal = read_bundle(path, key=key)
    target_id = run_id or info.run_id
    async with opened_store(store) as opened:
        if await opened.list(target_id):
            raise BundleError(
                f"the store holds a run {target_id!r} already: import the bundle under "
                "another id (--as RUN_ID)"
            )
        read = [
            (Checkpoint(**{**data, "run_id": target_id}), data["state"]) for data in checkpoints
        ]
        await write_run(opened, target_id, read, {"imported_from": info.run_id})
        if journal:
            from plait_durable import EventJournal

            if isinstance(opened, EventJournal):  # a store without one keeps the run alone
                await opened.append_events(target_id, journal)
    return attrs.evolve(info, run_id=target_id)


async def write_run(
    store: Any,
    run_id: str,
    checkpoints: Iterable[tuple[Any, Mapping[str, Any]]],
    metadata: Mapping[str, Any] | None = None,
) -> int:
    """Save ``checkpoints`` (each with its state, values inline) to the open ``store`` as
    run ``run_id``, oldest first, with new checkpoint ids and their parents in order,
    the values content-addressed in the store's blobs when it keeps them; ``metadata`` is
    added to each checkpoint's. How many were saved."""
    import uuid

    from plait_durable import BlobWriter, externalize_state, has_blobs

    writer = BlobWriter() if has_blobs(store) else None
    parent: str | None = None
    count = 0
    for checkpoint, state in checkpoints:
        body = dict(state)
        blobs: dict[str, bytes] = {}
        if writer is not None:
            body = externalize_state(body, writer)
            blobs = writer.take_new()
            writer.settle()
        copied = attrs.evolve(
            checkpoint,
            checkpoint_id=uuid.uuid4().hex,
            run_id=run_id,
            parent_id=parent,
            state=body,
            metadata={**checkpoint.metadata, **(metadata or {})},
        )
        if blobs:
            await store.save(copied, blobs=blobs)
        else:
            await store.save(copied)
        parent = copied.checkpoint_id
        count += 1
    return count
