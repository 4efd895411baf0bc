"""meta.json's deferred fsync: renamed at once, fsynced in one batch per file and per folder."""

import os
from unittest import mock

from compozy.store.flusher import Flusher
from compozy.store.meta import read_meta, write_meta


def test_a_meta_write_is_visible_at_once_and_fsynced_by_the_next_flush(tmp_path):
    path = tmp_path / "meta.json"
    flusher = Flusher(interval=3600)
    with mock.patch("compozy.store.meta.FLUSHER", flusher), mock.patch("os.fsync") as fsync:
        write_meta(path, {"id": "sess_1", "state": "active"})
        assert read_meta(path)["state"] == "active"  # renamed: whole before any fsync
        assert fsync.call_count == 0
        write_meta(path, {"id": "sess_1", "state": "stopped"})
        flusher.flush()
        assert fsync.call_count == 2  # the file once for both writes, then its folder
        flusher.flush()
        assert fsync.call_count == 2  # nothing pending
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_a_file_removed_before_its_flush_needs_none(tmp_path):
    flusher = Flusher(interval=3600)
    flusher.defer(tmp_path / "gone" / "meta.json")
    flusher.flush()  # neither the file nor its folder exists: no error
