"""Boot reconciliation against real session directories: the catalog is an index rebuilt from them."""

import json
import logging
import os

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home


def _manager(home):
    return SessionManager(Home(home), from_document({})).start()


def _create(home, workspace, **body):
    manager = _manager(home)
    try:
        return manager.create_session({"workspace_path": str(workspace), **body})["session"]
    finally:
        manager.shutdown()


def test_a_lost_catalog_is_rebuilt_from_the_directories(home, workspace):
    first = _create(home, workspace, name="one")
    second = _create(home, workspace, name="two")
    for suffix in ("", "-wal", "-shm"):
        path = home / f"compozy.db{suffix}"
        if path.exists():
            path.unlink()
    manager = _manager(home)
    try:
        listed = {s["id"]: s["name"] for s in manager.list_sessions()["sessions"]}
    finally:
        manager.shutdown()
    assert listed == {first["id"]: "one", second["id"]: "two"}


def _rewrite_meta(home, session_id, **changes):
    path = home / "sessions" / session_id / "meta.json"
    document = json.loads(path.read_text())
    document.update(changes)
    path.write_text(json.dumps(document))
    return path


def test_unknown_types_and_retired_roles_are_skipped_not_touched(home, workspace, caplog):
    dream = _create(home, workspace)
    retired = _create(home, workspace)
    kept = _create(home, workspace)
    dream_meta = _rewrite_meta(home, dream["id"], type="dream")
    lineage = dict(retired["lineage"], spawn_role="memory-extractor")
    retired_meta = _rewrite_meta(home, retired["id"], lineage=lineage)
    before = {p: p.read_bytes() for p in (dream_meta, retired_meta)}
    with caplog.at_level(logging.WARNING, logger="compozy.boot"):
        manager = _manager(home)
    try:
        listed = [s["id"] for s in manager.list_sessions({"archive": "include"})["sessions"]]
        warnings = [r.getMessage() for r in caplog.records if "observe.session_recovery_skipped" in r.getMessage()]
    finally:
        manager.shutdown()
    assert listed == [kept["id"]]
    assert any(f"session_id={dream['id']}" in w and "reason=unknown_session_type" in w for w in warnings)
    assert any(f"session_id={retired['id']}" in w and "reason=retired_spawn_role" in w
               and "spawn_role=memory-extractor" in w for w in warnings)
    assert len(warnings) == 2  # one warning per skipped directory per daemon run
    assert {p: p.read_bytes() for p in before} == before  # never rewritten, moved or deleted


def test_an_older_metadata_file_reads_upgraded_but_is_not_rewritten(home, workspace):
    parent = _create(home, workspace)
    child = _create(home, workspace, parent_session_id=parent["id"])
    lineage = {k: v for k, v in child["lineage"].items() if k != "kind"}
    meta = _rewrite_meta(home, child["id"], lineage=lineage)
    stored = meta.read_bytes()
    manager = _manager(home)
    try:
        read = manager.get_session(child["id"])["session"]
        assert read["lineage"]["kind"] == "provenance"
        assert meta.read_bytes() == stored
        manager.archive_session(child["id"], None, {"stop": True})  # a lifecycle change saves the kind
        assert json.loads(meta.read_text())["lineage"]["kind"] == "provenance"
    finally:
        manager.shutdown()


def test_a_row_without_its_directory_is_orphaned_and_hidden(home, workspace):
    gone = _create(home, workspace)
    os.rename(home / "sessions" / gone["id"], home / "elsewhere")
    manager = _manager(home)
    try:
        assert manager.list_sessions()["sessions"] == []
    finally:
        manager.shutdown()


def test_removal_keeps_catalog_truth_when_the_directory_cannot_move(home, workspace, monkeypatch):
    session = _create(home, workspace)
    manager = _manager(home)
    try:
        def refuse(*args):
            raise PermissionError("read-only file system")
        monkeypatch.setattr(os, "rename", refuse)
        try:
            manager.remove_session(session["id"])
        except Exception as exc:  # noqa: BLE001
            assert getattr(exc, "code", None) == "internal_error"
        monkeypatch.undo()
        assert manager.get_session(session["id"])["session"]["id"] == session["id"]
        assert (home / "sessions" / session["id"] / "events.db").exists()
    finally:
        manager.shutdown()


def _drop_catalog(home):
    for suffix in ("", "-wal", "-shm"):
        (home / f"compozy.db{suffix}").unlink(missing_ok=True)


CORRUPTIONS = {
    "not JSON": lambda document: "{not json",
    "no agent_name": lambda document: json.dumps({k: v for k, v in document.items() if k != "agent_name"}),
    "a null agent_name": lambda document: json.dumps(dict(document, agent_name=None)),
    "a name that is an object": lambda document: json.dumps(dict(document, name={"first": "x"})),
    "a lineage that is a string": lambda document: json.dumps(dict(document, lineage="root")),
    "a runtime that is a number": lambda document: json.dumps(dict(document, runtime=7)),
}


def test_a_rebuild_indexes_the_good_folders_among_corrupt_ones(home, workspace, caplog):
    """Every good folder is indexed in the same batch as the corrupt ones, which are reported, left
    out and never rewritten; with the catalog in step a folder corrupted since orphans its row."""
    sessions = [_create(home, workspace, name=f"s{n}") for n in range(len(CORRUPTIONS) + 3)]
    bad, good = sessions[:len(CORRUPTIONS)], sessions[len(CORRUPTIONS):]
    files = {}
    for session, corrupt in zip(bad, CORRUPTIONS.values()):
        path = home / "sessions" / session["id"] / "meta.json"
        path.write_text(corrupt(json.loads(path.read_text())))
        files[path] = path.read_bytes()
    for in_step in (False, True):
        if not in_step:
            _drop_catalog(home)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="compozy.boot"):
            manager = _manager(home)
        try:
            listed = {s["id"] for s in manager.list_sessions({"archive": "include"})["sessions"]}
        finally:
            manager.shutdown()
        assert listed == {s["id"] for s in good}
        reported = [r.getMessage() for r in caplog.records if "cannot recover session" in r.getMessage()]
        assert sorted(m.split()[3].rstrip(":") for m in reported) == sorted(s["id"] for s in bad)
        assert {p: p.read_bytes() for p in files} == files
