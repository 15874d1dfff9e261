"""The checkpoint kernel: ``base_id`` in records and encodings, and ``prune_plan``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from plait import CheckpointError, CorruptCheckpointError
from plait.spi import (
    Checkpoint,
    CheckpointInfo,
    check_keep_last,
    decode_checkpoint,
    encode_checkpoint,
    prune_plan,
)


def info(checkpoint_id: str, base_id: str | None = None) -> CheckpointInfo:
    return CheckpointInfo(checkpoint_id, "run", 0, None, "running", 0.0, base_id)


def checkpoint(**changes: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "checkpoint_id": "c2",
        "run_id": "run",
        "superstep": 2,
        "parent_id": "c1",
        "signature": "sig",
        "status": "running",
        "created_at": 1.5,
        "state": {"kind": "delta", "base": "c1", "pending": {}},
        "metadata": {"workflow": "w"},
        "base_id": "c1",
    }
    return Checkpoint(**{**fields, **changes})


# -- base_id ---------------------------------------------------------------------------


def test_base_id_defaults_to_none_and_is_keyword_compatible() -> None:
    full = Checkpoint("c1", "run", 0, None, "sig", "running", 0.0)
    assert full.base_id is None and full.info.base_id is None
    assert CheckpointInfo("c1", "run", 0, None, "running", 0.0).base_id is None


def test_info_carries_base_id() -> None:
    delta = checkpoint()
    assert delta.info == CheckpointInfo("c2", "run", 2, "c1", "running", 1.5, "c1")


def test_base_id_round_trips_through_the_encoding() -> None:
    for value in (checkpoint(), checkpoint(base_id=None, state={"kind": "full"})):
        assert decode_checkpoint(encode_checkpoint(value)) == value


def _encoded(fields: dict[str, Any]) -> bytes:
    body = json.dumps(fields).encode()
    return b"PLAITCP1\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def test_a_body_without_base_id_is_corrupt() -> None:
    """Only the current format is read: no release wrote a body without ``base_id``."""
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    del fields["base_id"]
    with pytest.raises(CorruptCheckpointError, match="its body lacks base_id"):
        decode_checkpoint(_encoded(fields))


@pytest.mark.parametrize("version", [0, -1])
def test_a_format_older_than_the_current_one_is_corrupt(version: int) -> None:
    fields = json.loads(encode_checkpoint(checkpoint()).split(b"\n", 2)[2])
    fields["format_version"] = version
    with pytest.raises(CorruptCheckpointError, match=f"claims format {version}, which no Plait"):
        decode_checkpoint(_encoded(fields), where="run r, checkpoint c")
    fields["format_version"] = 2
    with pytest.raises(CheckpointError, match=r"newer Plait \(format 2\); this Plait reads"):
        decode_checkpoint(_encoded(fields))


def test_an_explicit_base_id_is_not_overridden_by_the_state() -> None:
    value = checkpoint(base_id=None)  # inconsistent, but the field is what was written
    assert decode_checkpoint(encode_checkpoint(value)).base_id is None


def test_unknown_fields_are_still_corrupt() -> None:
    body = json.dumps({"checkpoint_id": "c", "bogus": 1}).encode()
    data = b"PLAITCP1\n" + hashlib.sha256(body).hexdigest().encode() + b"\n" + body
    with pytest.raises(CorruptCheckpointError, match="unknown fields bogus"):
        decode_checkpoint(data)


# -- prune_plan ------------------------------------------------------------------------


def test_prune_plan_deletes_all_but_the_newest() -> None:
    infos = [info(f"c{i}") for i in range(5)]
    assert prune_plan(infos, 2) == ["c1", "c2"]  # the first stays: it holds the topology
    assert prune_plan(infos, 5) == []
    assert prune_plan(infos, 50) == []
    assert prune_plan(infos, 0) == ["c0", "c1", "c2", "c3", "c4"]
    assert prune_plan([], 0) == [] and prune_plan([], 3) == []


def test_prune_plan_keeps_the_bases_of_kept_deltas() -> None:
    c1, c2, c3 = info("c1"), info("c2", "c1"), info("c3", "c1")
    assert prune_plan([c1, c2, c3], 1) == ["c2"]
    assert prune_plan([c1, c2, c3], 2) == []
    c4 = info("c4")
    assert prune_plan([c1, c3, c4], 1) == ["c3"]
    assert prune_plan([c1, c2, c3], 0) == ["c1", "c2", "c3"]


def test_prune_plan_keeps_only_bases_kept_checkpoints_name() -> None:
    infos = [info("f1"), info("d1", "f1"), info("f2"), info("d2", "f2"), info("d3", "f2")]
    assert prune_plan(infos, 1) == ["d1", "d2"]
    assert prune_plan(infos, 3) == ["d1"]
    assert prune_plan(infos, 4) == []  # d1 is kept, so is its base f1
    # a base that is not in the list (pruned earlier, another run) changes nothing
    assert prune_plan([info("y"), info("x"), info("d", "elsewhere")], 1) == ["x"]


@pytest.mark.parametrize("bad", [-1, -10, True, False, 1.0, "2", None])
def test_keep_last_must_be_a_non_negative_integer(bad: Any) -> None:
    with pytest.raises(ValueError, match=r"prune\(keep_last=\.\.\.\) needs an integer >= 0"):
        prune_plan([info("c1")], bad)
    with pytest.raises(ValueError, match="keep_last"):
        check_keep_last(bad)


def test_check_keep_last_returns_a_valid_value() -> None:
    assert check_keep_last(0) == 0 and check_keep_last(3) == 3


@pytest.mark.parametrize("fast", [True, False])
def test_encoding_works_with_and_without_orjson(
    fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import plait._checkpoint as module

    if not fast:
        monkeypatch.setattr(module, "_orjson", None)
    checkpoint = Checkpoint(
        checkpoint_id="c1",
        run_id="r1",
        superstep=3,
        parent_id=None,
        signature="s",
        status="running",
        created_at=1.5,
        state={"big": 2**80, "text": "žluťoučký", "nested": [1, {"a": None}]},
    )
    data = module.encode_checkpoint(checkpoint)
    assert module.decode_checkpoint(data) == checkpoint


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1, (2, 3)], "c": {"d": {1, 2}}},
        {"__plait__": "dict", "v": {"looks": "like a tag"}},
        [{"__plait__": "tuple"}, b"\x00bytes", float("inf")],
        {},
    ],
)
def test_codec_round_trips_values_that_look_like_its_own_tags(value: Any) -> None:
    from plait.spi import decode_value, encode_value

    encoded = encode_value(value)
    assert json.loads(json.dumps(encoded)) == encoded
    assert decode_value(encoded) == value


def test_plain_dicts_are_not_wrapped() -> None:
    from plait.spi import encode_value

    assert encode_value({"n": 1, "m": [2]}) == {"n": 1, "m": [2]}
