"""Grants: the capabilities a caller gives a workflow document, and the refusal of one that
needs more (see :mod:`plait.capabilities` for what a document needs).

:func:`plait.load` takes ``allow=`` (:data:`AllowSpec`) and ``allow_imports=``, makes them a
:class:`Grants`, and calls :func:`check_granted` before any node is built: a document that
needs a capability not granted is a :class:`CapabilityError` naming each node, its
position, the capability and the flag (``--allow …``) or argument (``allow=[…]``) that
grants it.

.. versionadded:: 0.1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Union

import attrs

from ._capabilities import IMPORTS, Capability, Need, needs
from ._errors import DocumentError, LoadError, PlaitError

__all__ = ["AllowSpec", "CapabilityError", "Grants", "check_granted", "grant_text"]

#: What ``allow=`` accepts: ``None`` (nothing), ``"all"`` or ``True`` (everything), a
#: comma-separated string (``"subprocess,network=api.example.com"``), capabilities or their
#: strings, or :class:`Grants`.
AllowSpec = Union[None, bool, str, Iterable[str | Capability], "Grants"]


@attrs.frozen
class Grants:
    """What the caller grants a document: some capabilities, or ``everything`` but the
    capabilities named in ``withheld``.

    .. versionadded:: 0.1
    """

    capabilities: frozenset[Capability] = frozenset()
    everything: bool = False
    withheld: frozenset[str] = frozenset()

    @classmethod
    def to_build(cls, *, allow_imports: bool = False) -> Grants:
        """What building a workflow without running it needs (``plait validate``, ``plait
        graph``): every capability but ``imports`` (an import runs code), unless
        ``allow_imports``."""
        return cls(
            everything=True, withheld=frozenset() if allow_imports else frozenset({"imports"})
        )

    @classmethod
    def of(cls, allow: AllowSpec, *, allow_imports: bool = False) -> Grants:
        """The grants ``allow`` (see :data:`AllowSpec`) names, plus ``imports`` when
        ``allow_imports``.

        :raises ValueError: naming a capability that does not exist.
        """
        if isinstance(allow, Grants):
            grants = allow
        elif allow is None or allow is False:
            grants = cls()
        elif allow is True or (isinstance(allow, str) and allow.strip() == "all"):
            grants = cls(everything=True)
        else:
            given = allow.split(",") if isinstance(allow, str) else allow
            items = [i for i in given if not (isinstance(i, str) and not i.strip())]
            for item in items:
                if not isinstance(item, (str, Capability)):
                    raise TypeError(f"allow= takes capability names or Capabilities: {item!r}")
            found = {c if isinstance(c, Capability) else Capability.parse(c) for c in items}
            grants = cls(frozenset(found))
        if allow_imports and not grants.covers(IMPORTS):
            grants = attrs.evolve(grants, capabilities=grants.capabilities | {IMPORTS})
        return grants

    def covers(self, needed: Capability) -> bool:
        """Whether ``needed`` is granted."""
        if self.everything and needed.name not in self.withheld:
            return True
        return any(g.covers(needed) for g in self.capabilities)

    def __str__(self) -> str:
        if self.everything:
            return "all" + "".join(f" but {name}" for name in sorted(self.withheld))
        return ",".join(str(c) for c in sorted(self.capabilities)) or "none"


Flags = Literal["python", "cli"]


def grant_text(capabilities: Iterable[Capability], flags: Flags) -> str:
    """How to grant ``capabilities``: ``--allow-imports --allow subprocess`` on the command
    line, ``allow=['imports', 'subprocess']`` in Python."""
    wanted = sorted(set(capabilities))
    if flags == "python":
        return f"allow={[str(c) for c in wanted]!r}"
    words = ["--allow-imports"] if IMPORTS in wanted else []
    rest = [str(c) for c in wanted if c != IMPORTS]
    if rest:
        words.append(f"--allow {','.join(rest)}")
    return " ".join(words)


class CapabilityError(LoadError):
    """A document needs capabilities its caller did not grant. ``missing`` holds each
    :class:`Need` not granted; each problem names the node, its kind, its position, the
    capability and the flag (or ``allow=``) that grants it.

    .. versionadded:: 0.1
    """

    def __init__(
        self,
        missing: Sequence[Need],
        *,
        source: str | None = None,
        flags: Flags = "python",
        granted: Grants | None = None,
    ) -> None:
        self.missing = list(missing)
        self.flags: Flags = flags
        self.granted = granted if granted is not None else Grants()
        problems: list[PlaitError] = []
        for need in self.missing:
            problems.append(
                DocumentError(
                    f"{need} needs {need.capability}, which is not granted; "
                    f"grant it with {grant_text([need.capability], flags)}",
                    need.position,
                )
            )
        super().__init__(problems, source=source)
        everything = "--trust" if flags == "cli" else "allow='all'"
        hint = (
            f"\nGranted: {self.granted}. If you trust this document, grant what it needs: "
            f"{grant_text([n.capability for n in self.missing], flags)} "
            f"(or {everything} for every capability)"
        )
        PlaitError.__init__(self, f"{self.args[0]}{hint}")

    def for_cli(self) -> CapabilityError:
        """The same error, naming the command line's flags."""
        return CapabilityError(self.missing, source=self.source, flags="cli", granted=self.granted)


def check_granted(
    spec: Any,
    grants: Grants,
    *,
    executors: Mapping[str, Any] | None = None,
    manager: Any = None,
    source: str | None = None,
) -> list[Need]:
    """Every :class:`Need` of ``spec`` (see :func:`needs`), once all are granted.

    :raises CapabilityError: listing each one ``grants`` does not cover.

    .. versionadded:: 0.1
    """
    found = needs(spec, executors=executors, manager=manager, source=source)
    missing = [n for n in found if not grants.covers(n.capability)]
    if missing:
        raise CapabilityError(missing, source=source, granted=grants)
    return found
