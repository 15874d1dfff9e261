"""The checkpoint records (``base_id`` in them), the value codec, and where their names
went when they left the kernel; the byte format and ``prune_plan`` are in
``test_format.py``."""

from __future__ import annotations

import json
from typing import Any

import plait_durable
import pytest
from plait_durable import Checkpoint, CheckpointInfo


def info(checkpoint_id: str, base_id: str | None = None) -> CheckpointInfo:
    return CheckpointInfo(checkpoint_id, "run", 0, None, "running", 0.0, base_id)


# -- base_id ---------------------------------------------------------------------------


def test_base_id_defaults_to_none_and_is_keyword_compatible() -> None:
    full = Checkpoint("c1", "run", 0, None, "sig", "running", 0.0)
    assert full.base_id is None and full.info.base_id is None
    assert CheckpointInfo("c1", "run", 0, None, "running", 0.0).base_id is None


def test_info_carries_base_id() -> None:
    delta = Checkpoint("c2", "run", 2, "c1", "sig", "running", 1.5, base_id="c1")
    assert delta.info == CheckpointInfo("c2", "run", 2, "c1", "running", 1.5, "c1")


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
    from plait_durable import decode_value, encode_value

    encoded = encode_value(value)
    assert json.loads(json.dumps(encoded)) == encoded
    assert decode_value(encoded) == value


def test_plain_dicts_are_not_wrapped() -> None:
    from plait_durable import encode_value

    assert encode_value({"n": 1, "m": [2]}) == {"n": 1, "m": [2]}


# -- the public modules ---------------------------------------------------------------


def test_the_public_modules_hold_what_the_package_exports() -> None:
    from plait_durable import checkpoint, codec

    assert plait_durable.CheckpointStore is checkpoint.CheckpointStore
    assert plait_durable.open_store is checkpoint.open_store
    assert plait_durable.DecodeError is codec.DecodeError
    assert set(checkpoint.__all__) | set(codec.__all__) <= set(plait_durable.__all__)
