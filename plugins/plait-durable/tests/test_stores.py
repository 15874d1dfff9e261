"""The helpers for store authors in ``plait_durable``: lifecycle, URLs, wording, listing
rows, prune's rule."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from plait import CheckpointError
from plait_durable import (
    INFO_FIELDS,
    CheckpointInfo,
    CheckpointStoreBase,
    StoreUnavailableError,
    check_keep_last,
    duplicate_error,
    info_fields,
    info_row,
    prune_plan,
    redact_url,
    where,
)
from plait_testing.stores import make_checkpoint


class NamedStore(CheckpointStoreBase):
    def __init__(self, url: str) -> None:
        self.url = url

    async def latest(self) -> None:
        self._check_open()


@pytest.mark.anyio
async def test_async_with_closes_the_store_and_a_closed_store_refuses_work() -> None:
    store = NamedStore("dict://x")
    await store.latest()
    async with store as entered:
        assert entered is store
    with pytest.raises(StoreUnavailableError, match=r"checkpoint store dict://x is closed"):
        await store.latest()


def test_repr_names_the_class_and_url() -> None:
    assert repr(NamedStore("dict://x")) == "<NamedStore 'dict://x'>"


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("redis://u:pw@h:1/0?x=1", "redis://u:***@h:1/0?x=1"),
        ("rediss://:pw@h:1/0", "rediss://:***@h:1/0"),
        ("postgres://u:pw@h/db", "postgres://u:***@h/db"),
        ("redis://h:1/0", "redis://h:1/0"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_a_duplicate_names_the_run_the_checkpoint_and_the_store() -> None:
    assert where("r1", "c7") == "run 'r1', checkpoint 'c7'"
    checkpoint = make_checkpoint("r1", checkpoint_id="c7")
    error = duplicate_error(checkpoint, "memory://x")
    assert type(error) is CheckpointError
    assert str(error).startswith("run 'r1', checkpoint 'c7' is already stored in memory://x ")
    assert "checkpoint ids must be unique" in str(error)


def test_info_rows_and_fields_follow_checkpoint_info() -> None:
    assert tuple(field.name for field in attrs.fields(CheckpointInfo)) == INFO_FIELDS
    checkpoint = make_checkpoint("r1", 3, parent_id="c0", base_id="c0")
    info = checkpoint.info
    assert info_row(checkpoint) == info_row(info) == attrs.astuple(info)
    assert CheckpointInfo(*info_row(checkpoint)) == info
    assert list(info_fields(checkpoint)) == list(INFO_FIELDS)
    assert CheckpointInfo(**info_fields(info)) == info


def info(checkpoint_id: str, base_id: str | None = None) -> CheckpointInfo:
    return CheckpointInfo(checkpoint_id, "run", 0, None, "running", 0.0, base_id)


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
