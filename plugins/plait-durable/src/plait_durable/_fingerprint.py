"""A workflow's fingerprint: what a checkpoint records of the workflow that took it, so
resuming it with another workflow is refused, naming what changed.

The topology signature (:meth:`plait.WorkflowSpec.signature`) covers node ids,
kinds and edges: enough to rebuild a run's state, not enough to know the same code runs.
The fingerprint covers, per node, its kind, its whole ``config``, the code it refers to
(each import path ``module:qualname`` in its ``ref`` or config, with a SHA-256 of that
object's source when the module is already imported and the source can be read —
nothing is imported to compute it), its policies (retry, timeout, visits, concurrency),
its declared types and, for an executor that wraps a workflow, that workflow's digest;
per edge group its router, ends and options (and their code);
the workflow's start and default policies; and the declared types of the whole graph.
Placement is left out: where an invocation runs is not what it runs.

It is JSON, versioned by ``format`` (:data:`FINGERPRINT_FORMAT`), and made to be
diffed: one overall ``digest``; per node and per edge group a ``digest`` and its fields
(a config value up to 120 characters of JSON as is; a longer one, or one under a key
that may name a secret — ``api_key``, ``headers``, ``token``, ``password`` … — as its
SHA-256); a ``types`` digest and names. Every checkpoint's ``metadata["fingerprint"]``
holds ``{"format", "digest"}``; the first checkpoint each process writes for a run holds
the details too, so a refused resume can say ``node 'a' config.kind: "python" →
"shell"``. A later "pin or migrate" choice reads the same record.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from plait import WorkflowSpec
from plait.spi import main_module_name, type_name

if TYPE_CHECKING:
    from plait.spi import CompiledGraph

__all__ = [
    "FINGERPRINT_FORMAT",
    "fingerprint_changes",
    "fingerprint_summary",
    "source_digest",
    "workflow_fingerprint",
]

#: Version of the fingerprint's layout; a checkpoint recording another is refused (with
#: the change named) unless the change is accepted.
FINGERPRINT_FORMAT = 1

_SHORT = 120  # characters of JSON a config value may have and still be recorded as is
_SHOWN = 80  # characters of a value an error quotes
#: config keys whose values (and everything under them) are recorded as digests only
_SECRET = re.compile(r"secret|token|passw|key|auth|credential|cookie|header|private|sign", re.I)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _sha256(value: Any) -> str:
    return hashlib.sha256(_canonical(value).encode("utf-8", "surrogatepass")).hexdigest()


def source_digest(ref: str) -> str | None:
    """``sha256:HEX`` of the source of the object ``ref`` (``module:qualname``) names, or
    ``None`` when it cannot be read without importing: its module is not imported yet,
    the name is not a plain attribute (a lambda, a closure), or no source file is there.

    An executor instance made by ``@executor`` is read as its function; any other
    instance as its class.
    """
    module_name, sep, qualname = ref.partition(":")
    if not sep:
        return None
    module = sys.modules.get(module_name)
    if module is None and module_name == main_module_name():
        module = sys.modules.get("__main__")  # a script names its code by its importable name
    if module is None:
        return None
    obj: Any = module
    for part in qualname.split("."):
        try:  # a static lookup: no __getattr__, no descriptor runs
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return None
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj)):
        wrapped = inspect.getattr_static(obj, "fn", None)
        obj = wrapped if inspect.isfunction(wrapped) else type(obj)
    try:
        source = inspect.getsource(obj)
    except Exception:  # no file, not Python (a notebook, a page), unparsable: unread
        return None
    return "sha256:" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def _refs(value: Any, found: set[str]) -> None:
    """Every import path a config or options value names (``{"ref": "module:attr"}``)."""
    if isinstance(value, Mapping):
        ref = value.get("ref")
        if isinstance(ref, str) and ":" in ref:
            found.add(ref)
        for item in value.values():
            _refs(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refs(item, found)


def _flat(
    value: Mapping[str, Any], prefix: str, out: dict[str, Any], secret: bool = False
) -> dict[str, Any]:
    """``{"config.argv": [...], ...}``: leaves by their dotted path, so a change names its
    field. A long leaf is recorded as its digest (the record stays small), and so is any
    leaf under a key that may hold a secret (``api_key``, ``headers``, ``token`` …): the
    store is not trusted with it."""
    for key in sorted(value, key=str):
        item, name = value[key], f"{prefix}{key}"
        hidden = secret or _SECRET.search(str(key)) is not None
        if isinstance(item, Mapping) and item:
            _flat(item, f"{name}.", out, hidden)
            continue
        text = _canonical(item)  # JSON whatever the value (a checkpoint holds it)
        shown = not hidden and len(text) <= _SHORT
        out[name] = json.loads(text) if shown else {"sha256": _sha256(item)}
    return out


def _code(refs: Iterable[str], cache: dict[str, str | None]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for ref in sorted(refs):
        if ref not in cache:
            cache[ref] = source_digest(ref)
        out[ref] = cache[ref]
    return out


def _executor_types(executor: Any) -> list[str]:
    """The types an executor declares beyond its handlers' (request payloads, state), by
    the names :func:`~plait.spi.type_name` gives (a script's classes by their module)."""
    kept = (*getattr(executor, "request_types", ()), *getattr(executor, "state_types", ()))
    return sorted({type_name(tp) for tp in kept})


def _nested(executor: Any) -> str | None:
    """The digest of the workflow an executor wraps (``workflow.as_executor()``, the
    ``workflow`` kind by fragment name): what runs inside it is part of what runs."""
    inner = getattr(executor, "workflow", None)
    spec, executors = getattr(inner, "spec", None), getattr(inner, "executors", None)
    if not isinstance(spec, WorkflowSpec) or not isinstance(executors, Mapping):
        return None  # (a Workflow: known by what it holds, so plait._workflow stays unloaded)
    digest = workflow_fingerprint(spec, executors).get("digest")
    return digest if isinstance(digest, str) else None


def fingerprint_of(graph: CompiledGraph) -> dict[str, Any]:
    """The fingerprint of a compiled workflow (:func:`workflow_fingerprint`), computed once
    per graph (in its cache, :meth:`~plait.spi.CompiledGraph.cached`): what its
    checkpoints record and a resume compares."""
    return graph.cached(_FINGERPRINT_KEY, _compute_fingerprint)


#: the key of a graph's fingerprint in the graph's cache
_FINGERPRINT_KEY = ("plait_durable", "fingerprint")


def _compute_fingerprint(graph: CompiledGraph) -> dict[str, Any]:
    return workflow_fingerprint(graph.spec, graph.executors)


def workflow_fingerprint(spec: WorkflowSpec, executors: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint of the workflow ``spec`` with its ``executors`` by node id
    (JSON-ready; see the module docstring)."""
    cache: dict[str, str | None] = {}
    nodes: dict[str, Any] = {}
    all_types: set[str] = set()
    for node in spec.nodes:
        refs: set[str] = set()
        if node.ref:
            refs.add(node.ref)
        _refs(node.config, refs)
        types = {
            "input": sorted(node.input_types),
            "output": sorted(node.output_types),
            "yields": sorted(node.workflow_output_types),
            "declared": _executor_types(executors.get(node.id)),
        }
        for names in types.values():
            all_types.update(names)
        whole: dict[str, Any] = {
            "kind": node.kind,
            "ref": node.ref,
            "config": node.config,
            "code": _code(refs, cache),
            "policies": {
                "retry": node.retry,
                "timeout": node.timeout,
                "max_visits": node.max_visits,
                "max_concurrency": node.max_concurrency,
                # only when set: the fingerprints of workflows that never set it stay as
                # they were
                **({"order": node.order} if node.order is not None else {}),
            },
            "types": types,
            "nested": _nested(executors.get(node.id)),
        }
        nodes[node.id] = {
            **whole,
            "config": _flat(node.config, "", {}),
            "digest": _sha256(whole),
        }
    edges: dict[str, Any] = {}
    for group in spec.edge_groups:
        refs = set()
        _refs(group.options, refs)
        whole = {
            "router": group.router,
            "sources": list(group.sources),
            "targets": list(group.targets),
            "options": group.options,
            "code": _code(refs, cache),
        }
        edges[group.id] = {
            **whole,
            "options": _flat(group.options, "", {}),
            "digest": _sha256(whole),
        }
    workflow = {"start": spec.start, "retry": spec.retry, "timeout": spec.timeout}
    names = sorted(all_types)
    declared: dict[str, Any] = {"names": names, "digest": _sha256(names)}
    digest = _sha256(
        {
            "format": FINGERPRINT_FORMAT,
            "workflow": workflow,
            "nodes": {nid: n["digest"] for nid, n in nodes.items()},
            "edges": {gid: e["digest"] for gid, e in edges.items()},
            "types": declared["digest"],
        }
    )
    return {
        "format": FINGERPRINT_FORMAT,
        "digest": digest,
        "workflow": workflow,
        "nodes": nodes,
        "edges": edges,
        "types": declared,
    }


def fingerprint_summary(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """What every checkpoint records: the format and the overall digest."""
    return {"format": fingerprint["format"], "digest": fingerprint["digest"]}


# -- comparing --------------------------------------------------------------------------------


def _show(value: Any) -> str:
    """A stored value as an error quotes it: JSON, ASCII only (no terminal escapes), cut."""
    if isinstance(value, Mapping) and set(value) == {"sha256"}:
        return f"(sha256 {str(value['sha256'])[:12]}…)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=True, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _name(text: Any) -> str:
    """A name as an error quotes it: ``'a'``, ASCII only (no terminal escapes), cut."""
    shown = ascii(str(text))
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"


def _path(text: Any) -> str:
    """A field's dotted path as an error shows it, unquoted (``config.argv``)."""
    return _name(text)[1:-1]


def _fields(what: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        if key not in new:
            changes.append(f"{what}.{_path(key)} removed (was {_show(old[key])})")
        elif key not in old:
            changes.append(f"{what}.{_path(key)} added: {_show(new[key])}")
        elif _canonical(old[key]) != _canonical(new[key]):
            changes.append(f"{what}.{_path(key)}: {_show(old[key])} → {_show(new[key])}")
    return changes


def _code_changes(what: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    changes = []
    for ref in sorted(set(old) | set(new), key=str):
        if ref not in new:
            changes.append(f"{what} no longer refers to {_path(ref)}")
        elif ref not in old:
            changes.append(f"{what} now refers to {_path(ref)}")
        elif old[ref] != new[ref]:
            how = "changed" if old[ref] and new[ref] else "could be read then or now, not both"
            changes.append(f"{what}: source of {_path(ref)} {how}")
    return changes


def _part(
    what: str, old: Mapping[str, Any], new: Mapping[str, Any], plain: tuple[str, ...], flat: str
) -> list[str]:
    changes: list[str] = []
    for key in plain:
        if _canonical(old.get(key)) != _canonical(new.get(key)):
            changes.append(f"{what} {key}: {_show(old.get(key))} → {_show(new.get(key))}")
    changes += _fields(f"{what} {flat}", _mapping(old.get(flat)), _mapping(new.get(flat)))
    changes += _code_changes(what, _mapping(old.get("code")), _mapping(new.get("code")))
    return changes


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def fingerprint_changes(old: Any, new: Mapping[str, Any]) -> list[str]:
    """What changed from fingerprint ``old`` (as a checkpoint recorded it: untrusted, any
    shape) to ``new``, one phrase per change (``node 'a' config.kind: "python" →
    "shell"``); empty when the digests are equal."""
    if not isinstance(old, Mapping):
        return ["the checkpoint records no workflow fingerprint"]
    if old.get("digest") == new["digest"] and old.get("format") == new["format"]:
        return []
    if old.get("format") != new["format"]:
        return [f"fingerprint format {_show(old.get('format'))} → {new['format']}"]
    if not isinstance(old.get("nodes"), Mapping):
        return [
            f"the workflow's fingerprint differs ({str(old.get('digest'))[:12]:.12}… → "
            f"{new['digest'][:12]}…)"
        ]
    changes = _fields("workflow", _mapping(old.get("workflow")), new["workflow"])
    for section, noun, plain, flat in (
        ("nodes", "node", ("kind", "ref", "policies", "types", "nested"), "config"),
        ("edges", "edge group", ("router", "sources", "targets"), "options"),
    ):
        before, after = _mapping(old.get(section)), new[section]
        for key in sorted(set(before) | set(after), key=str):
            what = f"{noun} {_name(key)}"
            if key not in after:
                changes.append(f"{what} removed")
            elif key not in before:
                changes.append(f"{what} added")
            elif _mapping(before[key]).get("digest") != after[key]["digest"]:
                found = _part(what, _mapping(before[key]), after[key], plain, flat)
                changes += found or [f"{what} changed"]
    old_types = _mapping(old.get("types"))
    if old_types.get("digest") != new["types"]["digest"]:
        names = old_types.get("names")
        before_names = {str(n) for n in names} if isinstance(names, list) else set()
        after_names = set(new["types"]["names"])
        added, removed = sorted(after_names - before_names), sorted(before_names - after_names)
        detail = [f"+{n}" for n in added] + [f"-{n}" for n in removed]
        changes.append(f"declared types changed: {_show(' '.join(detail))}")
    return changes or ["the workflow's fingerprint differs"]
