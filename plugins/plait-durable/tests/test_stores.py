"""The helpers for store authors in ``plait_durable``: lifecycle, URLs, wording, listing rows."""

from __future__ import annotations

import attrs
import pytest
from plait import CheckpointError, StoreUnavailableError
from plait.spi import CheckpointInfo
from plait_durable import (
    INFO_FIELDS,
    CheckpointStoreBase,
    duplicate_error,
    info_fields,
    info_row,
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
