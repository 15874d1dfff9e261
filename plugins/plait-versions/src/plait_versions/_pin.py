"""Policy ``pin`` for a run started from a workflow document: run the version it stored.

A run started from a document keeps the document with its checkpoints
(:func:`plait_durable.stored_document`). When ``plait resume FILE RUN_ID --on-change pin``
is given a changed ``FILE``, the stored version runs instead, built here with the grants
typed for this resume and never more (what a checkpoint says never widens what runs).

What a checkpoint says is trusted only as far as its store:

- on a sealed store (plait-sealing: every checkpoint it loads is verified against its
  key, and the document's text against the hash the verified metadata records), the
  stored version runs;
- on an unsigned store, anyone who can write to it could have written the document (and
  its hash), so it runs only when it is byte-identical to a version the user names
  (``--pinned-document PATH``), or when the user passed ``--run-stored-document`` after
  seeing its diff against ``FILE``. Without either, :class:`PinnedRunError` shows the
  diff and the two ways on.
"""

from __future__ import annotations

import difflib
import hashlib
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ._errors import PinnedRunError

if TYPE_CHECKING:
    from plait import Workflow
    from plait_documents import SourceDocument
    from plait_durable import Checkpoint, CheckpointStore

__all__ = ["Pinned", "document_diff", "pinned_workflow", "sealed_store"]

#: At most this many lines of a diff are shown (the rest is counted).
MAX_DIFF_LINES = 400


@attrs.frozen
class Pinned:
    """The stored version a pinned run resumes on.

    :param workflow: built from the stored document with the typed grants (it carries
        that document: the resumed run's checkpoints record it).
    :param document: the stored document.
    :param note: what the person who resumes is told (the diff, when the store is unsigned).
    """

    workflow: Workflow
    document: SourceDocument
    note: str


def sealed_store(store: Any) -> bool:
    """Whether ``store`` verifies every checkpoint it loads (plait-sealing's
    ``SealedStore`` says so with ``verifies_checkpoints``)."""
    return getattr(type(store), "verifies_checkpoints", False) is True


def _shown(text: str) -> str:
    """``text`` with control characters escaped: a stored document is untrusted, and
    printing it must not drive the terminal."""
    return "".join(
        c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


def document_diff(on_disk: str, disk_name: str, stored: SourceDocument) -> str:
    """The unified diff from the file on disk to the stored document, control characters
    escaped, at most :data:`MAX_DIFF_LINES` lines."""
    lines = list(
        difflib.unified_diff(
            on_disk.splitlines(keepends=True),
            stored.text.splitlines(keepends=True),
            fromfile=f"{disk_name} (on disk)",
            tofile=f"{stored.name} (stored with the run, sha256 {stored.short})",
        )
    )
    if not lines:
        return "(no difference in their text)"
    shown = [_shown(line if line.endswith("\n") else line + "\n") for line in lines]
    if len(shown) > MAX_DIFF_LINES:
        more = len(shown) - MAX_DIFF_LINES
        shown = [*shown[:MAX_DIFF_LINES], f"... {more} more line(s)\n"]
    return "".join(shown).rstrip("\n")


def _plain_name(name: str) -> str:
    """``name`` as a file name in a folder of ours (no folder, no dots-only name)."""
    base = Path(name.replace("\\", "/")).name
    return base if base not in ("", ".", "..") and base.isprintable() else "workflow"


def build_stored(stored: SourceDocument, allow: Any) -> Workflow:
    """The workflow of ``stored``, loaded as the command line loads a file: with the
    grants ``allow`` (a :class:`plait_documents.Grants`) and never more.

    :raises PinnedRunError: it does not load, or needs a grant ``allow`` lacks.
    """
    import plait
    from plait import PlaitError
    from plait_documents import IMPORTS, CapabilityError, Grants, cli_wording

    grants = Grants.of(allow)
    with tempfile.TemporaryDirectory(prefix="plait-pinned-") as folder:
        path = Path(folder) / _plain_name(stored.name)
        path.write_text(stored.text, encoding="utf-8")
        try:
            with cli_wording():
                return plait.load(
                    path,
                    allow_imports=grants.covers(IMPORTS),
                    allow=grants,
                    format=stored.format,
                )
        except CapabilityError as exc:
            raise PinnedRunError(
                f"the stored document {_shown(stored.name)} (sha256 {stored.short}) was not "
                f"run: {_shown(str(exc.for_cli()))} (a pinned document gets the grants typed for "
                "this resume, never what its checkpoint records)"
            ) from exc
        except PlaitError as exc:
            raise PinnedRunError(
                f"the stored document {_shown(stored.name)} (sha256 {stored.short}) does not "
                f"load: {_shown(str(exc))}"
            ) from exc


async def pinned_workflow(
    store: CheckpointStore,
    checkpoint: Checkpoint,
    changes: Sequence[str],
    *,
    document: str,
    allow: Any,
    pinned_document: str | None = None,
    run_stored_document: bool = False,
) -> Pinned | None:
    """The stored version run ``checkpoint.run_id`` resumes on under policy ``pin``, when
    its checkpoint records one and the store's trust allows it (the module's rules), or
    ``None`` when it records none.

    :param document: the path of the workflow file given to resume the run (changed).
    :param allow: the grants typed for this resume.
    :param pinned_document: a file the user names as the run's version: the stored one
        runs when its bytes hash to the stored SHA-256.
    :param run_stored_document: the user saw the diff and runs the stored version.
    :raises PinnedRunError: on an unsigned store without either, showing the diff and
        the two ways on; a named version that is not the stored one; a stored document
        that does not load or needs a grant not typed.
    """
    from plait_durable import stored_document

    stored = await stored_document(store, checkpoint)
    if stored is None:
        return None
    run = f"run {checkpoint.run_id} (checkpoint {checkpoint.checkpoint_id})"
    name = _shown(stored.name)[:100]  # stored data: printed escaped
    try:
        on_disk = await anyio.Path(document).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        on_disk = f"(cannot read {document}: {exc})\n"
    diff = document_diff(on_disk, document, stored)
    note = f"{run} runs its stored document {name} (sha256 {stored.short})"
    if pinned_document is not None:
        try:
            named = await anyio.Path(pinned_document).read_bytes()
        except OSError as exc:
            raise PinnedRunError(
                f"--pinned-document {pinned_document}: cannot read it ({exc.strerror or exc})"
            ) from exc
        digest = hashlib.sha256(named).hexdigest()
        if digest != stored.sha256:
            raise PinnedRunError(
                f"{run} is pinned to {name} with sha256 {stored.sha256}, and "
                f"--pinned-document {pinned_document} has sha256 {digest}: it is not the "
                "version the run started on, so nothing ran",
                changes,
            )
        note += f", byte-identical to {pinned_document}"
    elif sealed_store(store):
        note += " (the store is sealed: its checkpoints are verified)"
    elif run_stored_document:
        note += f" (--run-stored-document; the store is not signed). What runs:\n{diff}"
    else:
        detail = "; ".join(changes) or "its fingerprint differs"
        raise PinnedRunError(
            f"{run} was taken on a different workflow ({detail}); policy pin: the run is "
            f"pinned to the document it stored, {name} (sha256 {stored.sha256}), "
            f"which differs from {document}:\n{diff}\n"
            "The store is not signed, so a stored document runs only when you vouch for "
            "it: name your copy of that version with --pinned-document PATH (its bytes "
            "must hash to the stored sha256), or pass --run-stored-document to run the "
            "stored version shown above",
            changes,
        )
    return Pinned(build_stored(stored, allow), stored, note)
